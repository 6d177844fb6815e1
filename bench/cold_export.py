#!/usr/bin/env python3
"""Cold `python` export per file against one `pt2lsp check --trace` over the same small models.

The small models are the bundled ExportDB-style fixtures that define `model` and `example_args`:
`fixtures/ok/` (they export) and `fixtures/examples/` (realistic models that fail). The cold
side is what a user does without pt2lsp: one fresh interpreter per file that imports torch,
imports the file and calls `torch.export.export` once in the file's own mode, reporting only the
first error. The pt2lsp side is one `pt2lsp check --trace` over all of them: one worker imports
torch once, then forks a child per entrypoint, which exports it and, when that fails, runs
draft_export to collect every problem.

    python3 bench/cold_export.py            # replaces its section of RESULTS.md
    python3 bench/cold_export.py --fast     # 2 files, no RESULTS.md

    python bench/cold_export.py --one FILE --out RESULT.json   # one cold export (internal)
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, VENV_PYTHON, Section, build, timed, write_section

HEADING = "## Tracer: cold `python` export per file against `pt2lsp check --trace`"
SETS = ("fixtures/ok", "fixtures/examples")


def models(fast: bool) -> list[Path]:
    """The entrypoint files of the sets: module-level `model` and `example_args`."""
    found = []
    for directory in SETS:
        for path in sorted((ROOT / directory).glob("*.py")):
            text = path.read_text(encoding="utf-8")
            if re.search(r"^model\s*=", text, re.MULTILINE) and re.search(r"^example_args\s*=", text, re.MULTILINE):
                found.append(path)
    if fast:
        ok = [path for path in found if path.parent.name == "ok"][:1]
        failing = [path for path in found if path.parent.name != "ok"][:1]
        return ok + failing
    return found


def export_one(path: Path, out: Path) -> None:
    """In this fresh interpreter: import torch, import `path`, export its model once."""
    began = time.perf_counter()
    import importlib.util

    import torch

    imported = time.perf_counter()
    result: dict = {"import_torch": imported - began}
    try:
        spec = importlib.util.spec_from_file_location("cold_export_model", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        torch.export.export(
            module.model,
            tuple(module.example_args),
            kwargs=getattr(module, "example_kwargs", None),
            dynamic_shapes=getattr(module, "dynamic_shapes", None),
            strict=bool(getattr(module, "strict", False)),
        )
        result["error"] = None
    except Exception as error:  # noqa: BLE001 - the first error is the outcome being measured
        result["error"] = type(error).__name__
    result["export"] = time.perf_counter() - imported
    out.write_text(json.dumps(result))


def cold(python: Path, path: Path, scratch: Path) -> dict:
    """One fresh interpreter exporting `path`: its wall time, import and export times, error."""
    out = scratch / f"{path.stem}.json"
    command = [str(python), str(Path(__file__).resolve()), "--one", str(path), "--out", str(out)]
    wall = timed(command, cwd=path.parent)
    if not out.exists():
        raise SystemExit(f"cold export of {path} wrote no result: run {' '.join(command)}")
    return {**json.loads(out.read_text()), "wall": wall}


def trace(binary: Path, python: Path, files: list[Path]) -> tuple[float, list[dict]]:
    """One `pt2lsp check --trace` over `files`: wall time and its diagnostics."""
    command = [
        str(binary),
        "check",
        "--trace",
        "--python",
        str(python),
        "--isolated",
        "--exit-zero",
        # Every run traces: the runs are of the same files, which the cache would replay.
        "--no-cache",
        "--format",
        "json",
        *(str(path) for path in files),
    ]
    began = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"pt2lsp check --trace failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)


def measure(binary: Path, python: Path, runs: int, fast: bool) -> Section:
    files = models(fast)
    with tempfile.TemporaryDirectory(prefix="pt2lsp-cold-export-") as scratch:
        # One unmeasured run first, so the page cache is as warm for the cold side as for pt2lsp.
        cold(python, files[0], Path(scratch))
        colds = [cold(python, path, Path(scratch)) for path in files]
    traces = [trace(binary, python, files) for _ in range(runs)]
    trace_walls = [wall for wall, _ in traces]
    diagnostics = traces[0][1]
    traced = [d for d in diagnostics if d.get("source", "").endswith("trace")]
    failing_cold = sum(1 for result in colds if result["error"])
    failing_traced = len({d["file"] for d in traced if d["severity"] == "error"})

    walls = [result["wall"] for result in colds]
    imports = [result["import_torch"] for result in colds]
    exports = [result["export"] for result in colds]
    trace_median = statistics.median(trace_walls)
    table = "\n".join(
        [
            "| | wall time, all files | per file (median) | export failures found |",
            "|---|---|---|---|",
            (
                f"| cold: `python` per file, `torch.export.export` once | {sum(walls):.1f} s | {statistics.median(walls):.2f} s "
                f"(import torch {statistics.median(imports):.2f} s, export {statistics.median(exports):.2f} s) | "
                f"{failing_cold} file{'s' if failing_cold != 1 else ''}, the first error of each |"
            ),
            (
                f"| `pt2lsp check --trace` (one worker, a fork per file) | {trace_median:.1f} s "
                f"(runs: {', '.join(f'{t:.1f}' for t in trace_walls)}) | {trace_median / len(files):.2f} s (amortised) | "
                f"{failing_traced} file{'s' if failing_traced != 1 else ''}, {len(traced)} trace diagnostics |"
            ),
        ]
    )
    per_file = "\n".join(
        [
            "| file | cold wall | import torch | export | outcome |",
            "|---|---|---|---|---|",
            *(
                f"| {path.relative_to(ROOT)} | {result['wall']:.2f} s | {result['import_torch']:.2f} s | "
                f"{result['export']:.2f} s | {result['error'] or 'exported'} |"
                for path, result in zip(files, colds)
            ),
        ]
    )
    body = (
        f"{len(files)} small models: the entrypoint files of {', '.join(f'`{s}/`' for s in SETS)}"
        f"{' (2 of them)' if fast else ''}, each exported in its own mode (`strict = True` in the file, "
        "else non-strict). Cold: a fresh interpreter per file imports torch, imports the file and "
        "exports once, reporting the first error only, as an export script does. pt2lsp: one `pt2lsp "
        "check --trace` over the same files; its worker imports torch and runs one warm-up export once, "
        "then forks a child per file that exports and, on failure, runs draft_export to collect every "
        f"problem; its wall time includes the worker's start. Median of {runs} run{'s' if runs > 1 else ''}.\n\n"
        f"{table}\n\n**pt2lsp / cold wall time for the set: {trace_median / sum(walls):.2f}.**\n\n"
        f"<details><summary>Cold export per file</summary>\n\n{per_file}\n\n</details>\n"
    )
    return Section(
        HEADING,
        body,
        {"cold seconds": sum(walls), "trace seconds": trace_median, "files": len(files)},
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="2 files, one run, nothing written")
    parser.add_argument("--runs", type=int, default=3, help="runs of pt2lsp check --trace (default 3)")
    parser.add_argument("--python", type=Path, default=VENV_PYTHON, help="the interpreter with torch")
    parser.add_argument("--binary", type=Path, help="use this pt2lsp instead of building target/release/pt2lsp")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        export_one(args.one.resolve(), args.out)
        return 0
    binary = args.binary.resolve() if args.binary else build()
    section = measure(binary, args.python.absolute(), 1 if args.fast else args.runs, args.fast)
    print(section.markdown())
    if not args.fast:
        write_section(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
