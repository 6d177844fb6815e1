#!/usr/bin/env python3
"""Measures the tracer in the language server: save -> trace diagnostics, warm and cold.

Starts `pt2lsp serve` (release build) over stdio on a temporary project holding one
ExportDB-style entrypoint (by default fixtures/rules/PT101/if_sum.py, a small model that fails,
and fixtures/examples/transformer_block.py, whose failure needs draft_export's full run), with the
tracer's interpreter set to the test environment's (.venv, or --python). Opening the file starts the worker
(cold: importing torch, one warm-up export); then each save is timed from `didSave` to the
`publishDiagnostics` that follows the end of that trace's progress. Replaces its section of
bench/RESULTS.md unless --no-write or --fast; `bench/run.py` runs this as one of its stages.

    python3 bench/trace_latency.py [--saves 10] [--python PY] [--model FILE]...
    python3 bench/trace_latency.py --fast    # the small model only, 2 saves, nothing written
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, VENV_PYTHON, Section, build, write_section
from lsp_latency import Client, file_uri

HEADING = "## Tracer in the language server: save to trace diagnostics"
SMALL = ROOT / "fixtures" / "rules" / "PT101" / "if_sum.py"
MODELS = (SMALL, ROOT / "fixtures" / "examples" / "transformer_block.py")


def is_trace_end(message: dict) -> bool:
    if message.get("method") != "$/progress":
        return False
    params = message["params"]
    return str(params.get("token", "")).startswith("pt2lsp/trace") and params["value"].get("kind") == "end"


def measure(binary: Path, python: Path, models: list[Path], saves: int) -> Section:
    results = [measure_model(binary, model.resolve(), python, saves) for model in models]
    rows = [
        f"| {source.relative_to(ROOT)} | {cold:.2f} s | {statistics.median(warm):.0f} ms | "
        f"{percentile(warm, 90):.0f} ms | {max(warm):.0f} ms | {len(warm)} |"
        for source, cold, warm in results
    ]
    table = "\n".join(
        [
            "| model | open -> first trace (cold worker) | save -> trace diagnostics p50 | p90 | max | saves |",
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    body = (
        "`pt2lsp serve` on a project holding one model file, the tracer on. Opening the file starts the "
        "worker, which imports torch and runs one warm-up export (cold); each save then forks a child "
        "that exports the model and, on failure, runs draft_export; the time is from `didSave` to the "
        "`publishDiagnostics` carrying the trace's diagnostics. Target: warm save ≤ 0.5 s.\n\n"
        f"{table}\n"
    )
    _, cold, warm = results[0]
    return Section(HEADING, body, {"cold open s": cold, "warm save p50 ms": statistics.median(warm)})


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * p / 100)) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="the small model only, 2 saves, nothing written")
    parser.add_argument("--saves", type=int, help="timed saves per model (default 10, 2 with --fast)")
    parser.add_argument("--python", type=Path, default=VENV_PYTHON, help="the tracer's interpreter")
    parser.add_argument("--binary", type=Path, help="use this pt2lsp instead of building target/release/pt2lsp")
    parser.add_argument(
        "--model",
        type=Path,
        action="append",
        help="an entrypoint file to trace (repeatable; default: a small failing model and a transformer block)",
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = parser.parse_args()
    models = args.model or ([SMALL] if args.fast else list(MODELS))
    binary = args.binary.resolve() if args.binary else build()
    section = measure(binary, args.python.absolute(), models, args.saves or (2 if args.fast else 10))
    print(section.markdown())
    if not args.fast and not args.no_write:
        write_section(section)
    return 0


def measure_model(binary: Path, source: Path, python: Path, saves: int) -> tuple[Path, float, list[float]]:
    """One server on a temporary project holding `source`: the cold open, then timed saves."""
    project = Path(tempfile.mkdtemp(prefix="pt2lsp-trace-bench-"))
    model = project / source.name
    shutil.copy(source, model)
    uri, root = file_uri(model), file_uri(project)
    # Each save traces for real: the file does not change between saves, so the trace cache
    # would replay them (that is measured by trace_cache.py).
    client = Client([str(binary), "serve"], project / "server.stderr", {**os.environ, "PT2LSP_NO_CACHE": "1"})
    try:
        client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root,
                "workspaceFolders": [{"uri": root, "name": project.name}],
                "capabilities": {"window": {"workDoneProgress": True}},
                "initializationOptions": {"python": str(python), "trace": "on-open-and-save"},
            },
        )
        client.notify("initialized", {})
        opened = client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 0, "text": model.read_text()}},
        )
        cold_end, _ = client.wait(is_trace_end, timeout=300)
        cold = cold_end - opened
        client.drain()
        warm: list[float] = []
        for _ in range(saves):
            saved = client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
            client.wait(is_trace_end, timeout=120)
            published, _ = client.wait(
                lambda m: (
                    m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == uri
                    and any(d.get("data", {}).get("source", "").endswith("trace") for d in m["params"]["diagnostics"])
                ),
                timeout=120,
            )
            warm.append((published - saved) * 1000)
            client.drain()
    finally:
        client.close()
        shutil.rmtree(project, ignore_errors=True)
    return source, cold, warm


if __name__ == "__main__":
    sys.exit(main())
