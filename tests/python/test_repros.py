"""Ground truth for the reproduction set in tests/repros/: do the real exporter and the marks agree?

Every case is a user's code from a torch.export issue on GitHub (provenance URL on its first
line), in the ExportDB convention: module-level `model`, `example_args`, optional
`example_kwargs`, `dynamic_shapes`, `strict`. A case is one file, or a directory whose entry file
is the one that defines `model` (the directory is put on `sys.path`, as when the user runs it).

For every case, export it with real torch in its own mode (`strict = True` in the file, else
non-strict), in a fresh forked process:

- a case with an `# error[PTxxx]` mark must fail to export; a case without one must export;
- the failure's user line (the deepest frame in a case file: the traceback in non-strict,
  `exc.real_stack` in strict) must carry an error mark; a constraint violation has no frame, so
  its `guard_added` events (the structured trace draft_export reads, captured during the same
  export) stand in: at least one guard's line is marked, and every mark is on a guard's line;
- a failure with no user line at all (an input type torch cannot flatten, an example size that
  specialises a dynamic dim, an invalid `dynamic_shapes`) must be marked at module level, on the
  `model` / `example_args` / `example_kwargs` / `dynamic_shapes` statement of the entry file;
- the failure must be of the kind the marked code describes (PT401 is a constraint violation,
  PT102 is not, ...).

Run: `PT2LSP_PYTHON=/work/main/.venv/bin/python python -m pytest -q tests/python/test_repros.py`.
The file is also its own fork server (`python test_repros.py --serve`): it imports torch and
warms the exporter up once (`export_fixture.warm_up`) and forks a child per case, so torch.library namespaces and dynamo caches never leak between
cases, and the whole set takes well under a minute.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPROS = Path(os.environ.get("PT2LSP_REPROS_DIR") or ROOT / "tests" / "repros").resolve()
PYTHON = os.environ.get("PT2LSP_PYTHON") or (
    str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
)
TIMEOUT = int(os.environ.get("PT2LSP_REPRO_TIMEOUT", "240"))

MARK = re.compile(r"\b(error|warning|info)\[(PT\d{3})\]")
COMMENT_MARKS = re.compile(r"#\s*((?:(?:error|warning|info)\[PT\d{3}\]\s*)+)$")
ENTRY_NAMES = ("model", "example_args", "example_kwargs", "dynamic_shapes")


# ---------------------------------------------------------------------------------------------
# The set: cases, their entry files and their marks (no torch needed).


def parse_marks(path: Path) -> dict[int, list[tuple[str, str]]]:
    """{line (1-based): [(severity, code), ...]} from trailing `# error[PT101]` comments."""
    marks: dict[int, list[tuple[str, str]]] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = COMMENT_MARKS.search(line.rstrip())
        if m:
            marks[i] = MARK.findall(m.group(1))
    return marks


def is_entry(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return bool(re.search(r"^model\s*=", text, re.M) and re.search(r"^example_args\s*=", text, re.M))


def cases() -> list[Path]:
    """Case paths: every `*.py` directly under tests/repros, and every directory there."""
    if not REPROS.is_dir():
        return []
    out = []
    for p in sorted(REPROS.iterdir()):
        if p.name.startswith(("_", ".")):
            continue
        if p.is_file() and p.suffix == ".py":
            out.append(p)
        elif p.is_dir() and p.name != "__pycache__":
            out.append(p)
    return out


def entry_of(case: Path) -> Path:
    if case.is_file():
        return case
    entries = [p for p in sorted(case.rglob("*.py")) if is_entry(p)]
    if len(entries) != 1:
        raise ValueError(f"{case}: expected exactly one entry file (module-level model and example_args), got {entries}")
    return entries[0]


def case_files(case: Path) -> list[Path]:
    return [case] if case.is_file() else sorted(p for p in case.rglob("*.py") if "__pycache__" not in p.parts)


def error_marks(case: Path) -> dict[tuple[str, int], list[str]]:
    """{(absolute file, line): [codes]} for every `error[...]` mark in the case's files."""
    out: dict[tuple[str, int], list[str]] = {}
    for f in case_files(case):
        for line, ms in parse_marks(f).items():
            codes = [c for s, c in ms if s == "error"]
            if codes:
                out[(str(f.resolve()), line)] = codes
    return out


def module_level_entry_lines(entry: Path) -> set[int]:
    """Lines spanned by the entry file's module-level `model = ...`, `example_args = ...`, etc."""
    tree = ast.parse(entry.read_text(encoding="utf-8"))
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in ENTRY_NAMES for t in targets):
                lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def is_strict(entry: Path) -> bool:
    return bool(re.search(r"^strict\s*=\s*True\b", entry.read_text(encoding="utf-8"), re.M))


# ---------------------------------------------------------------------------------------------
# The worker side: runs inside a child forked from a process that imported torch.


def _user_lines(exc: BaseException, files: set[str]) -> list[tuple[str, int]]:
    """(file, line) of the case's frames on the failure's stack, outermost first."""
    seen: set[int] = set()
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:
        lines: list[tuple[str, int]] = []
        # Non-strict: the user's forward really runs, its frames are in the traceback.
        for fs in traceback.extract_tb(e.__traceback__):
            f = os.path.realpath(fs.filename)
            if f in files:
                lines.append((f, fs.lineno))
        # Strict: dynamo interprets the bytecode; the user frames are in real_stack.
        for fs in getattr(e, "real_stack", None) or []:
            fname = getattr(fs, "filename", None)
            if fname and os.path.realpath(fname) in files:
                lines.append((os.path.realpath(fname), fs.lineno))
        if lines:
            return lines
    # Last resort: a `File "...", line N` in the message that names a case file.
    out = []
    for m in re.finditer(r'File "([^"]+)", line (\d+)', str(exc)):
        f = os.path.realpath(m.group(1))
        if f in files:
            out.append((f, int(m.group(2))))
    return out


def _guard_lines(events: list, files: set[str]) -> list[dict]:
    """The `guard_added` events on input dims seen while exporting, each with its case-file frames.

    A constraint violation carries no location in the exception; the structured trace that
    draft_export reads has the user stack of every guard on a dimension named in `dynamic_shapes`.
    """
    from torch._logging import structured

    names = {v: k for k, v in structured.INTERN_TABLE.items()}
    out = []
    for key, data in events:
        if key != "guard_added" or not data.get("symbol_to_sources") or data.get("prefix") == "runtime_assert":
            continue
        lines = []
        for frame in data.get("user_stack") or []:
            fname = frame.get("filename")
            fname = names.get(fname, fname) if isinstance(fname, int) else fname
            if isinstance(fname, str) and os.path.realpath(fname) in files:
                lines.append((os.path.realpath(fname), frame.get("line")))
        out.append({"expr": str(data.get("expr", "")), "lines": lines})
    return out


def run_one(case: str, out: str) -> None:
    import contextlib
    import importlib.util

    casep = Path(case)
    entry = entry_of(casep)
    files = {str(p.resolve()) for p in case_files(casep)}
    result: dict = {"case": case, "entry": str(entry)}
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1)
    os.dup2(devnull, 1)  # user prints (non-strict runs forward for real) go nowhere
    try:
        with contextlib.redirect_stdout(open(os.devnull, "w")):
            import torch

            sys.path.insert(0, str(entry.parent if casep.is_file() else casep))
            spec = importlib.util.spec_from_file_location("pt2lsp_repro", entry)
            mod = importlib.util.module_from_spec(spec)
            sys.modules["pt2lsp_repro"] = mod
            try:
                spec.loader.exec_module(mod)
            except BaseException as exc:
                result.update(phase="import", ok=False, traceback="".join(traceback.format_exception(exc))[-6000:])
                return
            strict = bool(getattr(mod, "strict", False))
            result.update(phase="export", strict=strict)
            from torch.export._draft_export import CaptureStructuredTrace

            capture = CaptureStructuredTrace()
            try:
                with capture:
                    events = capture.log_record.logs
                    torch.export.export(
                        mod.model,
                        tuple(mod.example_args),
                        getattr(mod, "example_kwargs", None),
                        dynamic_shapes=getattr(mod, "dynamic_shapes", None),
                        strict=strict,
                    )
                result["ok"] = True
            except Exception as exc:
                error_type = getattr(exc, "error_type", None)
                result.update(
                    ok=False,
                    exc_type=f"{type(exc).__module__}.{type(exc).__qualname__}",
                    error_type=None if error_type is None else getattr(error_type, "name", str(error_type)),
                    message=str(exc)[:4000],
                    user_lines=_user_lines(exc, files),
                    traceback="".join(traceback.format_exception(exc))[-6000:],
                )
                if result["error_type"] == "CONSTRAINT_VIOLATION":
                    result["guards"] = _guard_lines(events, files)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
        with open(out, "w") as f:
            json.dump(result, f)


def serve() -> int:
    import signal

    from export_fixture import warm_up

    warm_up()  # the shared, expensive part, as in export_fixture.py

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nothing but protocol lines reach the pipe
    proto.write("ready\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                tmp = req["tmpdir"]
                os.environ["TMPDIR"] = tmp
                tempfile.tempdir = tmp
                os.chdir(tmp)
                signal.alarm(int(req.get("timeout") or 240))
                run_one(req["case"], req["out"])
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        proto.write(json.dumps({"status": status}) + "\n")
    return 0


# ---------------------------------------------------------------------------------------------
# The pytest side.


class _Server:
    """One `test_repros.py --serve` process per pytest session."""

    def __init__(self) -> None:
        self.errlog = tempfile.NamedTemporaryFile(prefix="pt2lsp-repro-server-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [PYTHON, str(Path(__file__).resolve()), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errlog,
            text=True,
            bufsize=1,
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
        )
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"repro server did not start: {self.tail()}")

    def tail(self) -> str:
        try:
            return Path(self.errlog.name).read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def run(self, case: Path) -> dict:
        with tempfile.TemporaryDirectory(prefix="pt2lsp-repro-") as tmp:
            out = Path(tmp) / "result.json"
            req = {"case": str(case), "out": str(out), "tmpdir": tmp, "timeout": TIMEOUT}
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"repro server died: {self.tail()}")
            if not out.exists():
                raise RuntimeError(f"no result for {case} (wait status {json.loads(line)['status']}):\n{self.tail()}")
            return json.loads(out.read_text())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.errlog.close()
        os.unlink(self.errlog.name)


# What a failure caused by each code looks like (checked when the case's marks share one code).
def reason_ok(code: str, res: dict) -> bool:
    exc, et, msg = res.get("exc_type") or "", res.get("error_type"), res.get("message") or ""
    if code == "PT401":
        return et == "CONSTRAINT_VIOLATION" and "specialized it to be a constant" not in msg
    if code == "PT405":
        return et == "CONSTRAINT_VIOLATION" and "specialized it to be a constant" in msg
    if code == "PT403":
        return ("UserError" in exc and et == "INVALID_INPUT") or exc == "builtins.IndexError"
    if code == "PT404":
        return "pytree" in msg.lower() or "Unsupported input type" in msg or "unsupported object of type" in msg
    if code == "PT301":
        return "fake" in msg.lower() or "UnsupportedOperatorException" in exc
    if code in ("PT101", "PT102", "PT103"):
        return et != "CONSTRAINT_VIOLATION" and "fake impl" not in msg
    if code == "PT201":
        return "numpy" in msg.lower() or "ufunc" in msg
    return True


def describe(res: dict) -> str:
    return (
        f"{res.get('exc_type')} (error_type={res.get('error_type')}), user lines {res.get('user_lines')}, "
        f"guards {res.get('guards')}\n{(res.get('message') or '')[:1500]}"
    )


def _where(f: str, line: int) -> str:
    text = Path(f).read_text(encoding="utf-8").splitlines()[line - 1].strip()
    return f"{Path(f).name}:{line} ({text!r})"


def check_case(case: Path, res: dict) -> list[str]:
    """Every way the real outcome disagrees with the case's marks (empty when they agree)."""
    if res.get("phase") != "export":
        return [f"the case does not import:\n{res.get('traceback')}"]
    marks = error_marks(case)
    if not marks:
        return [] if res["ok"] else [f"no error mark, but torch.export failed:\n{describe(res)}"]
    if res["ok"]:
        return [f"error marks on {sorted(marks)} but torch.export succeeded"]
    problems = []
    codes = {c for cs in marks.values() for c in cs}
    if len(codes) == 1 and not reason_ok(next(iter(codes)), res):
        problems.append(f"the failure does not look like {next(iter(codes))}:\n{describe(res)}")
    if res.get("user_lines"):
        f, line = res["user_lines"][-1]  # the deepest frame in a case file
        if (f, line) not in marks:
            problems.append(f"torch fails at {_where(f, line)}, which has no error mark\n{describe(res)}")
    elif any(g["lines"] for g in res.get("guards") or []):
        guarded = {tuple(g["lines"][-1]) for g in res["guards"] if g["lines"]}
        if not guarded & set(marks):
            where = ", ".join(_where(f, line) for f, line in sorted(guarded))
            problems.append(f"the violated guards come from {where}; none is marked\n{describe(res)}")
        for f, line in sorted(set(marks) - guarded):
            problems.append(f"{_where(f, line)} is marked but no guard comes from it\n{describe(res)}")
    else:
        entry = entry_of(case)
        allowed = module_level_entry_lines(entry)
        if not any(f == str(entry.resolve()) and line in allowed for f, line in marks):
            problems.append(
                "the failure has no user line, so its mark belongs on the entry's model / example_args / "
                f"dynamic_shapes statement; marked: {sorted(marks)}\n{describe(res)}"
            )
    return problems


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:
        return serve()
    # `python test_repros.py [CASE...]`: print each case's outcome (for labelling a new case).
    server = _Server()
    try:
        for arg in sys.argv[1:] or [str(c) for c in cases()]:
            case = Path(arg).resolve()
            res = server.run(case)
            problems = check_case(case, res)
            status = "ok" if res.get("ok") else "FAIL"
            print(f"{case.name}: {status} {res.get('exc_type') or ''} {res.get('error_type') or ''}")
            print(f"    user_lines={res.get('user_lines')} guards={res.get('guards')}")
            if not res.get("ok"):
                print("    " + (res.get("message") or res.get("traceback") or "")[:600].replace("\n", "\n    "))
            for p in problems:
                print("    MISMATCH: " + p.splitlines()[0])
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())


import pytest  # noqa: E402  (the server side above must not need pytest)

_server: _Server | None = None


@pytest.fixture(scope="session")
def server():
    global _server
    _server = _Server()
    yield _server
    _server.close()


def test_the_set_is_large_and_balanced() -> None:
    """At least 32 cases; failing and exporting cases each at least a third of the set."""
    all_cases = cases()
    failing = [c for c in all_cases if error_marks(c)]
    assert len(all_cases) >= 32, f"only {len(all_cases)} cases"
    assert len(failing) >= len(all_cases) / 3, f"{len(failing)} failing of {len(all_cases)}"
    assert len(all_cases) - len(failing) >= len(all_cases) / 3, f"{len(failing)} failing of {len(all_cases)}"


def test_every_case_names_its_issue() -> None:
    for case in cases():
        first = entry_of(case).read_text(encoding="utf-8").splitlines()[0]
        assert re.match(r"# https://github\.com/\S+/(issues|pull)/\d+", first), f"{case.name}: first line {first!r}"


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_case_matches_real_torch(case: Path, server: _Server) -> None:
    problems = check_case(case, server.run(case))
    assert not problems, f"{case.name}:\n" + "\n".join(problems)
