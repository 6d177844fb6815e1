"""The package is typed: the stub of `pt2lsp._native` matches the module pip installed
(mypy's stubtest), and mypy checks code that uses the API against it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pt2lsp

USES_THE_API = """
from pathlib import Path

import pt2lsp

found: list[pt2lsp.Diagnostic] = pt2lsp.check("x = 1\\n", "m.py", strict=True, select=["PT1"])
found += pt2lsp.check_paths([Path("models"), "train.py"], ignore="PT402", config=None)
for diagnostic in found:
    line: int = diagnostic.line
    code: str = diagnostic.code
    if diagnostic.fix is not None:
        edits: list[pt2lsp.Edit] = diagnostic.fix.edits
        applicability: str = diagnostic.fix.applicability
    message: str = diagnostic.to_dict()["message"]
binary: str = pt2lsp.find_pt2lsp_bin()
"""

MISUSES_THE_API = """
import pt2lsp

pt2lsp.check(b"x = 1\\n")
line: str = pt2lsp.check("x = 1\\n")[0].line
pt2lsp.check_paths("models", strict="yes")
"""


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=600, check=False
    )


def test_the_stub_matches_the_installed_module() -> None:
    result = mypy("mypy.stubtest", "pt2lsp._native")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_accepts_uses_and_rejects_misuses(tmp_path: Path) -> None:
    # py.typed is what makes mypy read the installed package instead of ignoring it.
    assert (Path(pt2lsp.__file__).parent / "py.typed").is_file()
    good = tmp_path / "good.py"
    good.write_text(USES_THE_API)
    result = mypy("mypy", "--strict", "--no-incremental", str(good))
    assert result.returncode == 0, result.stdout
    bad = tmp_path / "bad.py"
    bad.write_text(MISUSES_THE_API)
    result = mypy("mypy", "--no-incremental", str(bad))
    assert result.returncode == 1
    assert [line.split(":")[1] for line in result.stdout.splitlines() if ": error:" in line] == ["4", "5", "6"]
