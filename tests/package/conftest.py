"""Tests of the installed `pt2lsp` wheel: run by scripts/test-package.sh with the Python of a
fresh virtualenv the wheel was installed into, so `import pt2lsp` and the `pt2lsp` command are
the installed ones, never the source tree's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    import pt2lsp

    # A pt2lsp importable from the source tree (python/python/) would test nothing installed.
    installed = Path(pt2lsp.__file__).resolve()
    if ROOT / "python" in installed.parents:
        raise pytest.UsageError(f"pt2lsp is imported from the source tree ({installed}), not from a wheel")


@pytest.fixture(scope="session")
def venv_bin() -> Path:
    """The scripts directory of the environment under test (not resolved: the venv's
    `python` is a symlink out of it)."""
    return Path(sys.executable).parent


@pytest.fixture(scope="session")
def pt2lsp_bin(venv_bin: Path) -> Path:
    binary = venv_bin / "pt2lsp"
    assert binary.is_file(), f"pip did not install the pt2lsp command in {venv_bin}"
    return binary


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that names an interpreter for the tracer, so the
    command has to find the one it was installed with by itself."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"VIRTUAL_ENV", "PT2LSP_PYTHON", "PT2LSP_DEFAULT_PYTHON", "PYTHONPATH", "PYTHONHOME"}
    }
    env.update(extra)
    return env


def run(args: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("cwd", ROOT)
    kwargs.setdefault("env", clean_env())
    return subprocess.run(
        [str(arg) for arg in args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )
