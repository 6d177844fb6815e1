"""Ground truth for the fixtures: does the real torch.export agree with the inline marks?

For every fixture under fixtures/ that defines module-level `model` and `example_args`
(files with a PT001 mark are skipped: they are not valid Python), export it with real torch
in a fresh subprocess, in the file's own mode (`strict = True` in the file, else non-strict):

- a file with any `# error[PTxxx]` mark must fail to export; a file without one must export;
- when the failure carries a user line (traceback frame in the fixture in non-strict,
  `exc.real_stack` in strict), that line must carry an `error[...]` mark. Exceptions: PT301
  (the mark is on the op's definition, torch fails at the call) and constraint violations
  (PT401/PT403/PT405 carry no line);
- the failure must be of the kind the marked codes describe (e.g. PT401 -> constraint violation).

A second test checks the strict-only claims: a non-strict file with `warning[PT202]` or
`warning[PT203]` must FAIL under strict=True at a line with that mark, and a strict file with
`warning[PT201]` must fail under strict=False at a line with that mark.

Run: .venv/bin/python -m pytest tests/python (add `-n 2` when pytest-xdist is installed).
Each export runs in its own process: by default forked from a per-worker parent that has only
imported torch (PT2LSP_FIXTURE_ISOLATION=spawn starts a new interpreter per fixture instead).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("PT2LSP_FIXTURES_DIR") or ROOT / "fixtures").resolve()
RUNNER = Path(__file__).resolve().parent / "export_fixture.py"
PYTHON = os.environ.get("PT2LSP_PYTHON") or (
    str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
)
TIMEOUT = int(os.environ.get("PT2LSP_FIXTURE_TIMEOUT", "300"))

MARK = re.compile(r"\b(error|warning|info)\[(PT\d{3})\]")
COMMENT_MARKS = re.compile(r"#\s*((?:(?:error|warning|info)\[PT\d{3}\]\s*)+)$")


def parse_marks(path: Path) -> dict[int, list[tuple[str, str]]]:
    """{line (1-based): [(severity, code), ...]} from trailing `# error[PT101]` comments."""
    marks: dict[int, list[tuple[str, str]]] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = COMMENT_MARKS.search(line.rstrip())
        if m:
            marks[i] = MARK.findall(m.group(1))
    return marks


def _is_exportable(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return bool(re.search(r"^model\s*=", text, re.M) and re.search(r"^example_args\s*=", text, re.M))


def _file_is_strict(path: Path) -> bool:
    return bool(re.search(r"^strict\s*=\s*True\b", path.read_text(encoding="utf-8"), re.M))


def _collect() -> list[Path]:
    out = []
    for p in sorted(FIXTURES.rglob("*.py")):
        marks = parse_marks(p)
        if any(code == "PT001" for ms in marks.values() for _, code in ms):
            continue
        if not _is_exportable(p):
            continue
        out.append(p)
    return out


ALL = _collect()


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES))


class _ForkServer:
    """One `export_fixture.py --serve` process per pytest (xdist) worker: it imports torch once and
    forks a fresh child for every export, so no export state is shared between fixtures."""

    def __init__(self) -> None:
        self.errlog = tempfile.NamedTemporaryFile(prefix="pt2lsp-fx-server-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [PYTHON, str(RUNNER), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errlog,
            text=True,
            bufsize=1,
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
        )
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"fork server did not start: {self._err_tail()}")

    def _err_tail(self) -> str:
        try:
            return Path(self.errlog.name).read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def run(self, path: Path, out: Path, tmp: str, strict: bool | None) -> str:
        req = {"fixture": str(path), "out": str(out), "tmpdir": tmp, "strict": strict, "timeout": TIMEOUT}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"fork server died: {self._err_tail()}")
        return f"child wait status {json.loads(line)['status']}; server stderr tail:\n{self._err_tail()}"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.errlog.close()
        os.unlink(self.errlog.name)


# PT2LSP_FIXTURE_ISOLATION=spawn runs `python export_fixture.py` per fixture (slower: every
# process imports torch); the default `fork` forks each export from a parent that only imported torch.
ISOLATION = os.environ.get("PT2LSP_FIXTURE_ISOLATION", "fork" if hasattr(os, "fork") else "spawn")
_server: _ForkServer | None = None


@pytest.fixture(scope="session", autouse=True)
def _close_fork_server():
    yield
    if _server is not None:
        _server.close()


def run_export(path: Path, strict_override: bool | None = None) -> dict:
    global _server
    with tempfile.TemporaryDirectory(prefix="pt2lsp-fx-") as tmp:
        out = Path(tmp) / "result.json"
        if ISOLATION == "fork":
            if _server is None or _server.proc.poll() is not None:
                _server = _ForkServer()
            detail = _server.run(path, out, tmp, strict_override)
        else:
            cmd = [PYTHON, str(RUNNER), str(path), str(out)]
            if strict_override is not None:
                cmd.append(f"--strict={int(strict_override)}")
            env = dict(os.environ, TMPDIR=tmp, PYTHONDONTWRITEBYTECODE="1")
            proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=TIMEOUT)
            detail = f"rc={proc.returncode}:\n{proc.stderr[-4000:]}"
        if not out.exists():
            pytest.fail(f"runner crashed on {path}: {detail}")
        return json.loads(out.read_text())


def _describe(res: dict) -> str:
    return (
        f"{res.get('exc_type')} (error_type={res.get('error_type')}), user lines {res.get('user_lines')}\n"
        f"{(res.get('message') or '')[:1500]}"
    )


_SIZE_MISMATCH = re.compile(
    r"The size of tensor a \((?:\d+|s\d+)\) must match the size of tensor b \((?:\d+|s\d+)\)"
    r"|Sizes of tensors must match except in dimension \d+\. Expected (?:\d+|s\d+) in dimension \d+ but got (?:\d+|s\d+)"
    r"|expand: attempting to expand a dimension of length (?:\d+|s\d+) -> (?:\d+|s\d+)!"
)


def _dynamic_size_mismatch(msg: str) -> bool:
    """torch's raw mismatch between two sizes of which one is an input's symbol (`s77`)."""
    return any(re.search(r"\bs\d+\b", match.group(0)) for match in _SIZE_MISMATCH.finditer(msg))


# What a failure caused by each code looks like. Checked only when every error mark in the
# file has the same code, so a mixed file is not over-constrained.
def _reason_ok(code: str, res: dict) -> bool:
    exc, et, msg = res.get("exc_type") or "", res.get("error_type"), res.get("message") or ""
    if code == "PT401":
        # Or a fixed size against a dynamic dimension's symbol when the example's size is not
        # the fixed one: torch's raw mismatch (`The size of tensor a (s77) must match the size of
        # tensor b (4)`), which the tracer reports as PT401 (pt2lsp_worker/fixed_state.py).
        return (et == "CONSTRAINT_VIOLATION" and "Constraints violated" in msg) or _dynamic_size_mismatch(msg)
    if code == "PT403":
        # spec errors are UserError(INVALID_INPUT); a dim index >= rank is a bare IndexError
        # (non-strict); `@dynamic_spec` with `dynamic_shapes=` too is a ValueError
        return (
            ("UserError" in exc and et == "INVALID_INPUT")
            or exc == "builtins.IndexError"
            or (exc == "builtins.ValueError" and "@dynamic_spec" in msg)
        )
    if code == "PT404":
        # inputs: ValueError "Unsupported input type"; outputs: "... in output, which is not a known type"
        return "Unsupported input type" in msg or "not a known type" in msg
    if code == "PT405":
        # a 0/1 example on a `Dim`: constraint violation; on `Dim.DYNAMIC`: ValueError "0/1 specialized";
        # outside the `Dim`'s range: ConstraintViolationError "N not in range [lo, hi]"
        return (
            "specialized it to be a constant" in msg
            or "0/1 specialized" in msg
            or bool(re.search(r"\d+ not in range \[", msg))
        )
    if code == "PT301":
        return "fake" in msg.lower() or "UnsupportedOperatorException" in exc
    if code in ("PT101", "PT102", "PT103"):
        return "Constraints violated" not in msg and "fake impl" not in msg
    if code == "PT604":
        return "on the same device" in msg
    if code == "PT605":
        return exc == "builtins.TypeError" and "tuple of ints" in msg and "float" in msg
    if code == "PT201":
        # A NumPy function of a `SymInt`: "loop of ufunc does not support argument 0 of type SymInt".
        return "numpy" in msg.lower() or "tensor subclasses" in msg or "ufunc" in msg
    return True


def _project_of(path: Path) -> Path | None:
    """The multi-file fixture `path` belongs to (`fixtures/projects/<name>/`), if any."""
    parts = path.relative_to(FIXTURES).parts
    return FIXTURES / parts[0] / parts[1] if len(parts) > 2 and parts[0] == "projects" else None


# Deployment targets' codes (PT7xx, `fixtures/targets/`): the export succeeds and a target's
# lowering fails; the tracer's tests (server/tests/tracer.rs) check those marks.
LOWERING_CODE = re.compile(r"PT7\d\d")


def _error_codes(path: Path) -> dict[int, list[str]]:
    marks = parse_marks(path)
    errors = {ln: [c for s, c in ms if s == "error" and not LOWERING_CODE.fullmatch(c)] for ln, ms in marks.items()}
    return {ln: cs for ln, cs in errors.items() if cs}


def _exports_beside_failing_entries(path: Path) -> bool:
    """An entry of a project whose other entries fail may export: its first line says so
    (`# exports: ...`), as `projects/dynamic_and_static/export_at_batch_4.py` does."""
    first = path.read_text(encoding="utf-8").split("\n", 1)[0]
    return first.startswith("# exports:")


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_fixture_matches_real_torch(path: Path) -> None:
    errors = _error_codes(path)
    # A multi-file fixture's marks may stand in any of its files: the entry fails when any
    # does. Where in those files it fails is checked by the tracer's tests (server/tests).
    project = _project_of(path)
    project_errors = (
        {(f, ln): cs for f in sorted(project.rglob("*.py")) for ln, cs in _error_codes(f).items()}
        if project
        else {}
    )
    res = run_export(path)
    assert res.get("phase") == "export", f"fixture failed at import:\n{res.get('traceback')}"

    if not errors and not project_errors:
        assert res["ok"], f"{_id(path)} has no error mark but torch.export failed:\n{_describe(res)}"
        # PT406: the program keeps no dynamic input dimension where the mark says the code
        # fixes one; its near-misses keep theirs.
        if path.parent.name == "PT406":
            fixed = any(c == "PT406" for ms in parse_marks(path).values() for _, c in ms)
            assert (res["free_dims"] == 0) == fixed, (
                f"{_id(path)}: the exported program keeps {res['free_dims']} dynamic input dimensions"
            )
        return
    if project and not errors and _exports_beside_failing_entries(path):
        assert res["ok"], f"{_id(path)} says it exports but torch.export failed:\n{_describe(res)}"
        return
    if project and not errors:
        assert not res["ok"], f"{_id(path)}: its project marks {sorted(project_errors)} but torch.export succeeded"
        return

    assert not res["ok"], f"{_id(path)} marks errors on lines {sorted(errors)} but torch.export succeeded"

    codes = {c for cs in errors.values() for c in cs}
    if len(codes) == 1:
        (code,) = codes
        assert _reason_ok(code, res), f"{_id(path)}: failure does not look like {code}:\n{_describe(res)}"

    lines = res.get("user_lines") or []
    if not lines:
        return  # constraint violations (PT401) and spec errors (PT403) carry no user line
    line = lines[-1]  # innermost frame in the fixture
    if line in errors:
        return
    if "PT301" in codes:
        return  # mark on the op definition, failure at its call
    pytest.fail(
        f"{_id(path)}: torch fails at line {line} "
        f"({path.read_text().splitlines()[line - 1].strip()!r}) which has no error mark; "
        f"marked: {sorted(errors)}\n{_describe(res)}"
    )


def _strict_only_cases() -> list[tuple[Path, bool, tuple[str, ...]]]:
    cases = []
    for p in ALL:
        marks = parse_marks(p)
        warned = {c for ms in marks.values() for s, c in ms if s == "warning"}
        has_error = any(s == "error" for ms in marks.values() for s, _ in ms)
        if has_error:
            continue
        if _file_is_strict(p):
            if "PT201" in warned:
                cases.append((p, False, ("PT201",)))
        else:
            wanted = tuple(sorted(warned & {"PT202", "PT203"}))
            if wanted:
                cases.append((p, True, wanted))
    return cases


@pytest.mark.parametrize(
    "path,other_strict,codes",
    _strict_only_cases(),
    ids=lambda v: _id(v) if isinstance(v, Path) else str(v),
)
def test_strict_only_warning_fails_in_other_mode(path: Path, other_strict: bool, codes: tuple[str, ...]) -> None:
    """A warning that stands for 'fails only in the other mode' must really fail there, at its line."""
    marks = parse_marks(path)
    res = run_export(path, strict_override=other_strict)
    assert res.get("phase") == "export", f"fixture failed at import:\n{res.get('traceback')}"
    mode = "strict=True" if other_strict else "strict=False"
    assert not res["ok"], f"{_id(path)}: expected {codes} to fail under {mode}, but export succeeded"
    lines = res.get("user_lines") or []
    if lines:
        line = lines[-1]
        got = {c for s, c in marks.get(line, []) if s == "warning"}
        assert got & set(codes), (
            f"{_id(path)}: under {mode} torch fails at line {line}, which has no warning{list(codes)} mark\n"
            f"{_describe(res)}"
        )
