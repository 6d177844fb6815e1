"""Export one fixture file with real torch and write the outcome as JSON.

Usage:
    python export_fixture.py FIXTURE.py OUT.json [--strict=0|1]
    python export_fixture.py --serve

The first form exports one fixture in this (fresh) process. The fixture follows the ExportDB
convention: module-level `model`, `example_args`, optional `example_kwargs`, `dynamic_shapes`,
`strict`. `--strict=0|1` overrides the fixture's own `strict` (used to check that a construct
marked as a strict-only problem really is one).

`--serve` is a fork server: it imports torch once and warms the exporter up with one tiny export
of its own (`warm_up`, what pt2lsp's tracer worker does before forking its jobs), then reads one
JSON request per line on stdin, {"fixture", "out", "strict", "tmpdir", "timeout"}, and runs each
in a freshly forked child, answering one line per request on stdout. Every export still gets its
own process (torch.library namespaces, dynamo caches and other global state must not leak
between fixtures); only `import torch` and the exporter's lazy imports (together about 1.5 s of
every cold export) are shared.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import json
import os
import signal
import sys
import tempfile
import traceback


def _free_input_dims(program) -> int:
    """How many dimensions of the exported program's user inputs can still take more than one
    size: symbolic, with a range wider than one value (`Dim.AUTO` made static, or a `ShapeVar`
    narrowed to `VR[8, 8]`, is not)."""
    import torch

    inputs = set(program.graph_signature.user_inputs)
    free = 0
    for node in program.graph.nodes:
        if node.op != "placeholder" or node.name not in inputs:
            continue
        for size in getattr(node.meta.get("val"), "shape", ()):
            # A made-static dimension may still be a SymInt, of a constant expression.
            if not isinstance(size, torch.SymInt) or not size.node.expr.free_symbols:
                continue
            bounds = program.range_constraints.get(size.node.expr)
            if bounds is None or bounds.lower != bounds.upper:
                free += 1
    return free


def _frames_in(exc: BaseException, path: str) -> list[int]:
    """Lines of `path` on the failure's user stack, outermost first."""
    lines: list[int] = []
    seen: set[int] = set()
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:
        # Non-strict: the user's forward really runs, its frame is in the traceback.
        for fs in traceback.extract_tb(e.__traceback__):
            if os.path.abspath(fs.filename) == path:
                lines.append(fs.lineno)
        # Strict: dynamo interprets the bytecode; the user frames are in real_stack.
        for fs in getattr(e, "real_stack", None) or []:
            fname = getattr(fs, "filename", None)
            if fname and os.path.abspath(fname) == path:
                lines.append(fs.lineno)
        if lines:
            break
    return lines


def run_one(path: str, out: str, override: bool | None) -> None:
    """Import the fixture, export it, write the result JSON to `out`."""
    path = os.path.abspath(path)
    result: dict = {"fixture": path}
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1)
    os.dup2(devnull, 1)  # user prints (non-strict runs forward for real) go nowhere
    try:
        with contextlib.redirect_stdout(open(os.devnull, "w")):
            import torch

            # As `python fixture.py` would: its directory is on the path, so a multi-file
            # fixture (fixtures/projects/<case>/) imports its sibling modules.
            sys.path.insert(0, os.path.dirname(path))
            # A project's `venv/` holds libraries installed for it (fixtures/projects/
            # installed_library): importable, as from the environment's site-packages.
            sys.path[1:1] = sorted(glob.glob(os.path.join(os.path.dirname(path), "venv", "lib", "python*", "site-packages")))
            spec = importlib.util.spec_from_file_location("pt2lsp_fixture", path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules["pt2lsp_fixture"] = mod
            # As `python fixture.py` would, with no arguments: a `parse_args()` at module level
            # reads its defaults, not this runner's command line.
            sys.argv = [path]
            try:
                spec.loader.exec_module(mod)
            except BaseException as exc:  # the fixture itself is broken
                result.update(
                    phase="import",
                    ok=False,
                    exc_type=f"{type(exc).__module__}.{type(exc).__qualname__}",
                    message=str(exc)[:4000],
                    traceback="".join(traceback.format_exception(exc))[-6000:],
                )
                return

            strict = bool(getattr(mod, "strict", False)) if override is None else override
            result["strict"] = strict
            result["phase"] = "export"
            try:
                program = torch.export.export(
                    mod.model,
                    tuple(mod.example_args),
                    getattr(mod, "example_kwargs", None),
                    dynamic_shapes=getattr(mod, "dynamic_shapes", None),
                    strict=strict,
                )
                result["ok"] = True
                result["free_dims"] = _free_input_dims(program)
            except Exception as exc:
                error_type = getattr(exc, "error_type", None)
                result.update(
                    ok=False,
                    exc_type=f"{type(exc).__module__}.{type(exc).__qualname__}",
                    error_type=None if error_type is None else getattr(error_type, "name", str(error_type)),
                    message=str(exc)[:4000],
                    user_lines=_frames_in(exc, path),
                    traceback="".join(traceback.format_exception(exc))[-6000:],
                )
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
        with open(out, "w") as f:
            json.dump(result, f)


def warm_up() -> None:
    """One tiny export, so that forked children start with the exporter's lazy imports done."""
    import torch
    import torch._dynamo  # noqa: F401
    import torch.export

    class Tiny(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) + x.shape[0]

    torch.export.export(Tiny(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: torch.export.Dim("b")}})


def serve() -> int:
    warm_up()  # the shared, expensive part

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    # Nothing but protocol lines may reach the pipe.
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    proto.write("ready\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # child: a fresh process for this one export
            code = 0
            try:
                tmp = req.get("tmpdir") or tempfile.mkdtemp()
                os.environ["TMPDIR"] = tmp
                tempfile.tempdir = tmp
                os.chdir(tmp)
                signal.alarm(int(req.get("timeout") or 300))
                s = req.get("strict")
                run_one(req["fixture"], req["out"], None if s is None else bool(s))
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        proto.write(json.dumps({"status": status}) + "\n")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:
        return serve()
    override = None
    for a in sys.argv[3:]:
        if a.startswith("--strict="):
            v = a.split("=", 1)[1]
            if v in ("0", "1"):
                override = v == "1"
    run_one(sys.argv[1], sys.argv[2], override)
    return 0


if __name__ == "__main__":
    sys.exit(main())
