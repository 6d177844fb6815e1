#!/usr/bin/env python3
"""Every benchmark of pt2lsp, in one command; rewrites bench/RESULTS.md whole.

Builds target/release/pt2lsp, fetches what is pinned (the transformers and timm wheels' `.py`
files, ruff and TorchFix, each from PyPI into bench/.cache), then runs the stages in order:

  corpus     pt2lsp check against ruff check on the whole corpus        (corpus.py)
  torchfix   pt2lsp, ruff and TorchFix on timm's layers/ package        (corpus.py)
  criterion  parse + analyse one file, the criterion micro-benchmark    (criterion.py)
  lsp        didChange -> publishDiagnostics p50/p99, peak memory       (lsp_latency.py)
  trace      warm save -> trace diagnostics in the language server     (trace_latency.py)
  cold       cold `python` export per file against pt2lsp check --trace (cold_export.py)
  cache      check --trace with a warm trace cache against an empty one  (trace_cache.py)
  load       the server under save bursts: 500 files, 100 entrypoints      (lsp_load.py)
  big        a 70B-parameter Llama with fake weights against a plain script (big_model.py)

RESULTS.md gets the machine, the date, every version, a summary against the targets, and each
stage's section with when it was measured and the load average then. The tracer stages need .venv/bin/python with torch (made by
scripts/test.sh), or --python.

    python3 bench/run.py                  # ~10 minutes; rewrites bench/RESULTS.md
    python3 bench/run.py --fast           # ~1-2 minutes: small subsets, one run each, results
                                          # in a temporary file; fails only when a stage
                                          # produced no numbers (it never judges them)
    python3 bench/run.py --stage lsp      # some stages only (repeatable); RESULTS.md keeps the
                                          # other stages' sections and rebuilds its summary
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import big_model
import cold_export
import corpus as corpus_stage
import criterion
import harness
import lsp_latency
import lsp_load
import trace_cache
import trace_latency
from harness import RESULTS, ROOT, RUFF, TORCHFIX, VENV_PYTHON, WHEELS, Section

STAGES = ("corpus", "torchfix", "criterion", "lsp", "trace", "cold", "cache", "load", "big")
STAGE_HEADINGS = {
    corpus_stage.CORPUS_HEADING: "corpus",
    corpus_stage.TORCHFIX_HEADING: "torchfix",
    criterion.HEADING: "criterion",
    lsp_latency.HEADING: "lsp",
    trace_latency.HEADING: "trace",
    cold_export.HEADING: "cold",
    trace_cache.HEADING: "cache",
    lsp_load.HEADING: "load",
    big_model.HEADING: "big",
}


def stage(name: str, binary: Path, python: Path, fast: bool) -> Section:
    if name == "corpus":
        return corpus_stage.measure_corpus(binary, 1 if fast else 7, fast, python)
    if name == "torchfix":
        return corpus_stage.measure_torchfix(binary, 1 if fast else 5, fast)
    if name == "criterion":
        return criterion.measure(fast)
    if name == "lsp":
        return lsp_latency.measure(binary, 20 if fast else 200, 7, fast, python)
    if name == "trace":
        models = [trace_latency.SMALL] if fast else list(trace_latency.MODELS)
        return trace_latency.measure(binary, python, models, 2 if fast else 10)
    if name == "cold":
        return cold_export.measure(binary, python, 1 if fast else 3, fast)
    if name == "cache":
        return trace_cache.measure(binary, python, fast)
    if name == "load":
        return lsp_load.measure(binary, python, fast)
    if name == "big":
        return big_model.measure(binary, python, fast)
    raise ValueError(name)


def versions(binary: Path, python: Path) -> str:
    out = harness.output_of
    torch = out([str(python), "-c", "import torch; print(torch.__version__)"])
    return (
        f"{out([str(binary), '--version'])} at git {harness.pt2lsp_revision()} ({out(['rustc', '--version'])}); "
        f"ruff {RUFF}; TorchFix {TORCHFIX}; torch {torch} with {out([str(python), '--version'])} (the tracer's "
        f"interpreter); harness on Python {platform.python_version()}; corpus transformers {WHEELS['transformers']} "
        f"+ timm {WHEELS['timm']}"
    )


def summary(sections: dict[str, Section]) -> str:
    """The targets of the benchmark issue against what this run measured."""
    rows = []

    def add(name: str, measure: str, target: str, value: str) -> None:
        if name in numbers:
            rows.append(f"| {measure} | {target} | {value} |")

    numbers = {name: section.numbers for name, section in sections.items() if section.numbers}
    if "corpus" in numbers:
        ratio = numbers["corpus"]["pt2lsp seconds"] / numbers["corpus"]["ruff seconds"]
        add("corpus", "static check, pt2lsp / ruff wall time on the corpus", "≤ 0.6", f"{ratio:.2f}")
    if "torchfix" in numbers:
        ratio = numbers["torchfix"]["pt2lsp seconds"] / numbers["torchfix"]["torchfix seconds"]
        add("torchfix", "static check, pt2lsp / TorchFix wall time on the subset", "–", f"{ratio:.4f}")
    if "criterion" in numbers:
        for key, value in numbers["criterion"].items():
            add("criterion", f"parse + analyse one file, one thread: {key.removesuffix(' ms')}", "–", f"{value:.2f} ms")
    if "lsp" in numbers:
        add(
            "lsp",
            "language server, didChange → publishDiagnostics p99",
            "≤ 20 ms",
            f"{numbers['lsp']['p99 ms']:.1f} ms",
        )
        add("lsp", "language server, peak RSS", "–", f"{numbers['lsp']['peak RSS MB']:.0f} MB")
    if "trace" in numbers:
        warm = numbers["trace"]["warm save p50 ms"]
        add("trace", "tracer, warm save → diagnostics p50 (small model)", "≤ 0.5 s", f"{warm / 1000:.2f} s")
    if "cold" in numbers:
        ratio = numbers["cold"]["trace seconds"] / numbers["cold"]["cold seconds"]
        add("cold", "tracer, `check --trace` / cold `python` exports of the same files", "–", f"{ratio:.2f}")
    if "cache" in numbers:
        ratio = numbers["cache"]["warm seconds"] / numbers["cache"]["cold seconds"]
        add("cache", "tracer, `check --trace` of the fixtures, warm cache / empty cache", "≤ 0.10", f"{ratio:.3f}")
    if "load" in numbers:
        load = numbers["load"]
        add("load", "server under save bursts (100 entrypoints): last save → open files' traces", "–", f"{load['open seconds']:.2f} s")
        add("load", "server under save bursts: peak RSS of the server / of the worker (PSS)", "–", f"{load['server peak MB']:.0f} MB / {load['worker peak MB']:.0f} MB")
    if "big" in numbers:
        big = numbers["big"]
        ratio = big["fake seconds"] / big["plain seconds"]
        add("big", "tracer, 70B Llama with fake weights / plain FakeTensorMode script, wall time", "≤ 1.5", f"{ratio:.2f}")
        add("big", "tracer, 70B Llama with fake weights, worker peak memory", "< 1.5 GB", f"{big['fake peak MB']:.0f} MB")
    return "\n".join(["| measure | target | this run |", "|---|---|---|", *rows])


def check_numbers(sections: dict[str, Section]) -> list[str]:
    """What `--fast` verifies: every stage produced every one of its numbers."""
    problems = []
    for name, section in sections.items():
        if not section.numbers:
            problems.append(f"{name}: no numbers")
        for key, value in section.numbers.items():
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                problems.append(f"{name}: {key} = {value!r}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="small subsets, one run each, a temporary results file")
    parser.add_argument("--stage", action="append", choices=STAGES, help="run only this stage (repeatable)")
    parser.add_argument("--binary", type=Path, help="use this pt2lsp instead of building target/release/pt2lsp")
    parser.add_argument("--python", type=Path, default=VENV_PYTHON, help="the tracer's interpreter, with torch")
    parser.add_argument("--results", type=Path, help="write here instead of bench/RESULTS.md (--fast: a temp file)")
    args = parser.parse_args()

    began = time.monotonic()
    binary = args.binary.resolve() if args.binary else harness.build()
    harness.corpus()
    harness.ruff()
    harness.torchfix()
    names = [name for name in STAGES if not args.stage or name in args.stage]
    sections: dict[str, Section] = {}
    for name in names:
        print(f"==> bench stage {name}", file=sys.stderr, flush=True)
        started, load = time.monotonic(), os.getloadavg()
        section = stage(name, binary, args.python.absolute(), args.fast)
        section.measured = (
            f"Measured {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC in {time.monotonic() - started:.0f} s; "
            f"load average (1, 5, 15 min) at the start: {', '.join(f'{v:.2f}' for v in load)}."
        )
        sections[name] = section
        print(section.markdown(), flush=True)
        print(f"    ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    minutes = (time.monotonic() - began) / 60

    if args.results:
        results = args.results
    elif args.fast:
        results = Path(tempfile.mkdtemp(prefix="pt2lsp-bench-fast-")) / "RESULTS.md"
    else:
        results = RESULTS
    measured = dict(sections)
    if args.stage and not args.fast:
        # Some stages only: the other stages keep their sections from the existing file.
        headings = {section.heading: name for name, section in sections.items()}
        kept = {
            STAGE_HEADINGS[old.heading]: old
            for old in harness.sections_of(results)
            if old.heading in STAGE_HEADINGS and old.heading not in headings
        }
        sections = {name: sections.get(name) or kept[name] for name in STAGES if name in sections or name in kept}
    command = "python3 bench/run.py" + (" --fast" if args.fast else "")
    stages = "every stage" if not args.stage else "stages " + ", ".join(measured) + " (the others kept)"
    header = (
        "# Benchmark results\n\n"
        f"Written by `{command}` on {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC: {stages}, "
        f"in {minutes:.1f} minutes{' (--fast: subsets, single runs: these numbers mean nothing)' if args.fast else ''}. "
        "Rerun it to refresh this file; `bench/README.md` says what each stage measures. Each section "
        "says when it was measured and the machine's load average then: on a busy machine the times "
        "grow, most of all p99s and maxima.\n\n"
        f"- Machine: {harness.machine()}.\n"
        f"- Versions: {versions(binary, args.python.absolute())}.\n\n"
        f"## Against the targets\n\n{summary(sections)}\n"
    )
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(header + "".join(f"\n{section.markdown()}" for section in sections.values()))
    print(f"bench: wrote {results.relative_to(ROOT) if results.is_relative_to(ROOT) else results}", file=sys.stderr)

    if args.fast:
        problems = check_numbers(measured)
        if problems:
            print("bench --fast: a stage produced no usable numbers:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 1
        print(f"bench --fast: {len(measured)} stages produced numbers: {', '.join(measured)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
