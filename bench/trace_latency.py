#!/usr/bin/env python3
"""Measures the tracer in the language server: save -> trace diagnostics, warm and cold.

Starts `pt2lsp serve` (release build) over stdio on a temporary project holding
fixtures/examples/transformer_block.py (an ExportDB-style entrypoint), with the tracer's
interpreter set to the test environment's (.venv, or --python). Opening the file starts the worker
(cold: importing torch, one warm-up export); then each save is timed from `didSave` to the
`publishDiagnostics` that follows the end of that trace's progress. Replaces the
"## Tracer in the language server" section of bench/RESULTS.md unless --no-write.

    python3 bench/trace_latency.py [--saves 10] [--python PY]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpus_bench  # noqa: E402
from lsp_latency import Client, build, file_uri  # noqa: E402

ROOT = corpus_bench.ROOT
SECTION = "## Tracer in the language server"
MODEL = ROOT / "fixtures" / "examples" / "transformer_block.py"


def is_trace_end(message: dict) -> bool:
    if message.get("method") != "$/progress":
        return False
    params = message["params"]
    return str(params.get("token", "")).startswith("pt2lsp/trace") and params["value"].get("kind") == "end"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--saves", type=int, default=10, help="timed saves (default 10)")
    parser.add_argument("--python", type=Path, default=ROOT / ".venv" / "bin" / "python", help="the tracer's interpreter")
    parser.add_argument(
        "--model",
        type=Path,
        action="append",
        help="an entrypoint file to trace (repeatable; default: a small failing model and a transformer block)",
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = parser.parse_args()
    models = args.model or [ROOT / "fixtures" / "rules" / "PT101" / "if_sum.py", MODEL]
    binary = build()
    rows = [measure(binary, model.resolve(), args.python, args.saves) for model in models]
    table = "\n".join(
        ["| model | open -> first trace (cold worker) | save -> trace diagnostics p50 | p90 | max | saves |",
         "|---|---|---|---|---|---|", *rows]
    )
    print(table)
    if not args.no_write:
        corpus_bench.write_section(
            SECTION,
            f"{SECTION}\n\nWritten by `python3 bench/trace_latency.py` on {datetime.date.today()} "
            f"({platform.machine()}, {os.cpu_count()} cores). The worker imports torch and runs one warm-up export "
            "once (cold); each save then forks a child that exports the model and, on failure, runs draft_export.\n\n"
            f"{table}\n",
        )
    return 0


def measure(binary: Path, source: Path, python: Path, saves: int) -> str:
    """One server on a temporary project holding `source`: the cold open, then timed saves."""
    project = Path(tempfile.mkdtemp(prefix="pt2lsp-trace-bench-"))
    model = project / source.name
    shutil.copy(source, model)
    uri, root = file_uri(model), file_uri(project)
    client = Client([str(binary), "serve"], project / "server.stderr")
    try:
        client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root,
                "workspaceFolders": [{"uri": root, "name": project.name}],
                "capabilities": {"window": {"workDoneProgress": True}},
                "initializationOptions": {"python": str(python), "trace": "on-save"},
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
                lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                and any(d.get("data", {}).get("source") == "trace" for d in m["params"]["diagnostics"]),
                timeout=120,
            )
            warm.append((published - saved) * 1000)
            client.drain()
    finally:
        client.close()
        shutil.rmtree(project, ignore_errors=True)
    warm.sort()
    p90 = warm[max(0, int(round(0.9 * len(warm))) - 1)]
    return (
        f"| {source.relative_to(ROOT)} | {cold:.2f} s | {statistics.median(warm):.0f} ms | {p90:.0f} ms | "
        f"{max(warm):.0f} ms | {len(warm)} |"
    )


if __name__ == "__main__":
    sys.exit(main())
