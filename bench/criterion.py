#!/usr/bin/env python3
"""Parse + analyse one file: runs the criterion micro-benchmark `analyzer/benches/check.rs` and
reports its estimates.

The benchmark reads the corpus's largest modeling file when the corpus is fetched, else the
bundled example models. `--fast` builds it in the dev profile with short measurements: it
proves the benchmark still builds and runs, and its numbers mean nothing.

    python3 bench/criterion.py            # replaces its section of RESULTS.md
    python3 bench/criterion.py --fast     # dev profile, short, nothing written
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, Section, corpus, write_section

HEADING = "## Parse + analyse one file (criterion)"
# Criterion's summary of one benchmark: its name on a line, then `time: [low estimate high]`.
ESTIMATE = re.compile(r"^(\S.*?)\s*\n?\s+time:\s+\[(\S+ \S+) (\S+ \S+) (\S+ \S+)\]", re.MULTILINE)
UNITS = {"ps": 1e-9, "ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}


def milliseconds(estimate: str) -> float:
    value, unit = estimate.split()
    return float(value) * UNITS[unit]


def measure(fast: bool) -> Section:
    corpus()  # the benchmark's input
    command = ["cargo", "bench", "--quiet", "-p", "pt2lsp_analyzer", "--bench", "check"]
    if fast:
        command += ["--profile", "dev", "--", "--warm-up-time", "0.2", "--measurement-time", "1", "--sample-size", "10"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    estimates = ESTIMATE.findall(done.stdout)
    if not estimates:
        raise SystemExit(f"no criterion estimate in the output of {' '.join(command)}:\n{done.stdout[-2000:]}")
    rows = [f"| `{name}` | {low} | **{mid}** | {high} |" for name, low, mid, high in estimates]
    table = "\n".join(["| benchmark | lower bound | estimate | upper bound |", "|---|---|---|---|", *rows])
    body = (
        f"`{' '.join(command)}`: `pt2lsp_analyzer::check` (parse, semantic pass, every rule) on one "
        "file, the work of one keystroke in the editor; criterion's 95% confidence interval of the "
        "mean time per call, one thread.\n\n"
        f"{table}\n"
    )
    return Section(HEADING, body, {f"{name} ms": milliseconds(mid) for name, _, mid, _ in estimates})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="dev profile, short measurements, nothing written")
    args = parser.parse_args()
    section = measure(args.fast)
    print(section.markdown())
    if not args.fast:
        write_section(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
