#!/usr/bin/env python3
"""`pt2lsp check --trace` of the fixtures with an empty trace cache, then again with it warm.

The first run traces every entrypoint (the worker imports torch, then a fork per entrypoint) and
keeps each result with the hashes of the files it followed from; the second finds every file
unchanged and replays the results without starting Python. Both reports must be the same; the
goal is a warm run within 10% of the cold one's wall time.

    python3 bench/trace_cache.py            # replaces its section of RESULTS.md
    python3 bench/trace_cache.py --fast     # fixtures/examples only, nothing written
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, Section, tracer_stage_main

HEADING = "## Tracer: `check --trace` with a warm trace cache against an empty one"


def entrypoint_files(fast: bool) -> list[Path]:
    """Every fixture with module-level `model` and `example_args` (fixtures/examples alone with
    --fast)."""
    base = ROOT / "fixtures" / ("examples" if fast else "")
    found = []
    for path in sorted(base.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if re.search(r"^model\s*=", text, re.MULTILINE) and re.search(r"^example_args\s*=", text, re.MULTILINE):
            found.append(path)
    return found


def check(binary: Path, python: Path, files: list[Path], cache: Path) -> tuple[float, str, str]:
    command = [
        str(binary),
        "check",
        "--trace",
        "--python",
        str(python),
        "--isolated",
        "--exit-zero",
        "--cache-dir",
        str(cache),
        "--format",
        "json",
        *(str(path) for path in files),
    ]
    began = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"pt2lsp check --trace failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, done.stdout, done.stderr


def measure(binary: Path, python: Path, fast: bool) -> Section:
    files = entrypoint_files(fast)
    with tempfile.TemporaryDirectory(prefix="pt2lsp-trace-cache-") as scratch:
        cache = Path(scratch) / "cache"
        cold, cold_report, _ = check(binary, python, files, cache)
        warm, warm_report, warm_stderr = check(binary, python, files, cache)
        entries = len(list((cache / "trace-v1").glob("*.json")))
    if warm_report != cold_report:
        raise SystemExit("the warm run's report differs from the cold run's")
    replayed = re.search(r"Replayed (\d+) of (\d+) traces", warm_stderr)
    replayed_text = f"{replayed.group(1)} of {replayed.group(2)}" if replayed else "none"
    ratio = warm / cold
    body = (
        f"{len(files)} entrypoint files of `fixtures/{'examples/' if fast else ''}` (module-level `model` and "
        "`example_args`), one `pt2lsp check --trace` each run, release build, a fresh cache directory. "
        "Cold: the cache is empty, every entrypoint is traced and kept. Warm: the same command again; "
        "entrypoints whose files are all unchanged are replayed without starting Python (results that "
        "are not kept: timeouts, crashes, entrypoints that could not be built, run again). The two "
        "reports are byte for byte the same.\n\n"
        "| run | wall time | traces replayed |\n|---|---|---|\n"
        f"| cold (empty cache) | {cold:.2f} s | 0 |\n"
        f"| warm (unchanged files) | {warm:.3f} s | {replayed_text} ({entries} entries kept) |\n\n"
        f"**warm / cold: {ratio:.3f}** (goal ≤ 0.10)."
    )
    return Section(HEADING, body, {"cold seconds": cold, "warm seconds": warm, "files": len(files)})


def main() -> int:
    return tracer_stage_main(__doc__, measure, "fixtures/examples only")


if __name__ == "__main__":
    sys.exit(main())
