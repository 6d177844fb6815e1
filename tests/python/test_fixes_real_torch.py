"""A fix counts only when the real exporter accepts the fixed file.

For every fix fixture (`fixtures/fixes/<kind>/<name>.py`, a model whose export fails before the
fix; convention in fixtures/README.md), in a temporary copy:

1. `pt2lsp check --fix` applies the fixes (`--unsafe-fixes` unless the file says
   `fix_applicability = "safe"`; `--trace` when it says `fix_needs_trace = True`), and the text
   must change;
2. a re-check (`--trace` too, for those) must report no error;
3. `run_fixed.py` exports the fixed file with real torch in the file's mode, in its own process
   (forked from a server that imported torch once), and on every `fix_inputs` tuple
   eager(original) == eager(fixed) == exported(fixed).module().

A fixture with `fix_applicability = "safe"` is also checked to be fixed by `--fix` alone (that
is what the run does); an "unsafe" one must not be: its fix must wait for `--unsafe-fixes`.

The binary is target/debug/pt2lsp (built by `cargo test`, which scripts/test.sh runs first), or
$PT2LSP_BIN. Nothing is skipped: no fixtures, no binary or no torch is a failure.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXES = Path(os.environ.get("PT2LSP_FIX_FIXTURES_DIR") or ROOT / "fixtures" / "fixes").resolve()
RUNNER = Path(__file__).resolve().parent / "run_fixed.py"
BINARY = Path(os.environ.get("PT2LSP_BIN") or ROOT / "target" / "debug" / "pt2lsp")
PYTHON = os.environ.get("PT2LSP_PYTHON") or (
    str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
)
TIMEOUT = int(os.environ.get("PT2LSP_FIXTURE_TIMEOUT", "300"))

FIXTURES = sorted(FIXES.rglob("*.py")) if FIXES.is_dir() else []


def module_settings(path: Path) -> dict:
    """The fixture's module-level literal assignments that steer the harness."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: dict = {"has_fix_inputs": False}
    for statement in tree.body:
        if not isinstance(statement, ast.Assign):
            continue
        for target in statement.targets:
            if not isinstance(target, ast.Name):
                continue
            if target.id == "fix_inputs":
                found["has_fix_inputs"] = True
            elif target.id in ("fix_needs_trace", "fix_applicability", "strict"):
                found[target.id] = ast.literal_eval(statement.value)
    return found


def pt2lsp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    assert BINARY.exists(), f"{BINARY} is missing: build it with `cargo build -p pt2lsp` (or set PT2LSP_BIN)"
    return subprocess.run(
        [str(BINARY), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "NO_COLOR": "1"},
    )


def errors_in(report: subprocess.CompletedProcess) -> list[dict]:
    diagnostics = json.loads(report.stdout)
    return [d for d in diagnostics if d["severity"] == "error"]


def describe(diagnostics: list[dict]) -> str:
    return "\n".join(f"  {d['line']}:{d['column']} {d['code']} {d['message']}" for d in diagnostics)


class _ForkServer:
    """`run_fixed.py --serve`: imports torch once and forks a fresh child per case, so no state
    is shared between cases and the 3-5 s `import torch` is paid once."""

    def __init__(self) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="pt2lsp-fix-server-", suffix=".log", delete=False)
        self.process = subprocess.Popen(
            [PYTHON, str(RUNNER), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            bufsize=1,
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
        )
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the fork server did not start: {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            return Path(self.log.name).read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def run(self, original: Path, fixed: Path, out: Path, cwd: Path) -> str:
        request = {"original": str(original), "fixed": str(fixed), "out": str(out), "cwd": str(cwd), "timeout": TIMEOUT}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server died: {self.log_tail()}")
        return f"child wait status {json.loads(line)['status']}; server stderr tail:\n{self.log_tail()}"

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()
        os.unlink(self.log.name)


# PT2LSP_FIXTURE_ISOLATION=spawn starts `python run_fixed.py` per case instead of forking it.
ISOLATION = os.environ.get("PT2LSP_FIXTURE_ISOLATION", "fork" if hasattr(os, "fork") else "spawn")
_server: _ForkServer | None = None


@pytest.fixture(scope="module", autouse=True)
def _close_fork_server():
    yield
    global _server
    if _server is not None:
        _server.close()
        _server = None


def run_fixed(original: Path, fixed: Path, out: Path, cwd: Path) -> str:
    """Runs run_fixed.py on one case in its own process; returns what to say if it wrote nothing."""
    global _server
    if ISOLATION == "fork":
        if _server is None or _server.process.poll() is not None:
            _server = _ForkServer()
        return _server.run(original, fixed, out, cwd)
    process = subprocess.run(
        [PYTHON, str(RUNNER), str(original), str(fixed), str(out)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return f"exit {process.returncode}:\n{process.stderr[-4000:]}"


def test_there_are_fix_fixtures():
    assert FIXTURES, f"no fix fixtures under {FIXES}: this harness would prove nothing"


@pytest.mark.parametrize("fixture", FIXTURES, ids=[str(p.relative_to(FIXES)) for p in FIXTURES])
def test_fix_is_accepted_by_the_real_exporter(fixture: Path, tmp_path: Path):
    settings = module_settings(fixture)
    assert settings["has_fix_inputs"], (
        f"{fixture.relative_to(FIXES)} has no module-level `fix_inputs`: a list of argument tuples "
        "exercising every branch of the fix"
    )
    applicability = settings.get("fix_applicability", "unsafe")
    assert applicability in ("safe", "unsafe"), f"fix_applicability must be 'safe' or 'unsafe', not {applicability!r}"
    trace = ["--trace", "--python", PYTHON] if settings.get("fix_needs_trace") else []

    original = tmp_path / "original" / fixture.name
    fixed = tmp_path / "fixed" / fixture.name
    original.parent.mkdir()
    fixed.parent.mkdir()
    shutil.copyfile(fixture, original)
    shutil.copyfile(fixture, fixed)
    before = fixed.read_text(encoding="utf-8")

    if applicability == "unsafe":
        # An unsafe fix must wait for --unsafe-fixes.
        safe_only = pt2lsp("check", "--isolated", "--fix", *trace, fixed.name, cwd=fixed.parent)
        assert fixed.read_text(encoding="utf-8") == before, (
            f"--fix without --unsafe-fixes changed a file whose fix is unsafe:\n{safe_only.stdout}{safe_only.stderr}"
        )
    flags = ["--fix"] + (["--unsafe-fixes"] if applicability == "unsafe" else [])
    run = pt2lsp("check", "--isolated", "--format", "json", *flags, *trace, fixed.name, cwd=fixed.parent)
    assert run.returncode in (0, 1), f"pt2lsp check --fix failed:\n{run.stderr}"
    after = fixed.read_text(encoding="utf-8")
    assert after != before, (
        f"pt2lsp check {' '.join(flags + trace)} did not change {fixture.relative_to(FIXES)}; it reported:\n"
        f"{describe(json.loads(run.stdout))}\n{run.stderr}"
    )

    recheck = pt2lsp("check", "--isolated", "--format", "json", *trace, fixed.name, cwd=fixed.parent)
    assert recheck.returncode in (0, 1), f"the re-check failed:\n{recheck.stderr}"
    remaining = errors_in(recheck)
    assert not remaining, f"errors remain after the fix:\n{describe(remaining)}\n--- fixed file ---\n{after}"

    out = tmp_path / "result.json"
    detail = run_fixed(original, fixed, out, tmp_path)
    assert out.exists(), f"run_fixed.py wrote no result ({detail})"
    result = json.loads(out.read_text())
    if result["phase"] != "compare":
        pytest.fail(
            f"the fixed file fails at {result['phase']}:\n{result.get('message')}\n--- fixed file ---\n{after}",
            pytrace=False,
        )
    differences = [
        f"  fix_inputs[{case['input']}]: {problem}"
        for case in result["cases"]
        for problem in (case["eager"], case["exported"])
        if problem
    ]
    assert result["ok"], (
        "the fixed model computes something else:\n" + "\n".join(differences) + f"\n--- fixed file ---\n{after}"
    )
