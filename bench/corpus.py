#!/usr/bin/env python3
"""Times `pt2lsp check` against `ruff check` on pinned real model code, side by side.

Fetches the corpus (transformers and timm wheels from PyPI, their .py files unzipped) and a
pinned ruff into bench/.cache, builds pt2lsp in release mode, then alternates runs of the two
tools and reports medians, the ratio and lines per second. Writes bench/RESULTS.md unless
--fast is given (CI runs --fast so the harness cannot rot; it asserts nothing about time).

    python3 bench/corpus.py            # full corpus, 7 alternating runs each
    python3 bench/corpus.py --fast     # 200 files, 1 run each
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
WHEELS = {"transformers": "5.23.0", "timm": "1.0.31"}
RUFF = "0.17.6"


RESULTS = ROOT / "bench" / "RESULTS.md"


def write_section(heading: str, section: str) -> None:
    """Replaces the `heading` section of RESULTS.md (or appends it), keeping every other one."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip("\n") + "\n\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text.rstrip("\n") + "\n")


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=True, **kwargs)


def corpus() -> Path:
    target = CACHE / "corpus"
    marker = target / ".complete"
    if marker.exists():
        return target
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(wheels)]
    run(pip + [f"{name}=={version}" for name, version in WHEELS.items()])
    for wheel in wheels.glob("*.whl"):
        if not any(wheel.name.startswith(f"{name}-{version}") for name, version in WHEELS.items()):
            continue
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.endswith(".py"):
                    archive.extract(member, target)
    marker.touch()
    return target


def ruff() -> Path:
    env = CACHE / "ruff-venv"
    binary = env / "bin" / "ruff"
    if binary.exists():
        return binary
    venv.create(env, with_pip=True)
    run([str(env / "bin" / "pip"), "install", "--quiet", f"ruff=={RUFF}"])
    return binary


def pt2lsp() -> Path:
    run(["cargo", "build", "--release", "--quiet", "-p", "pt2lsp"], cwd=ROOT)
    return ROOT / "target" / "release" / "pt2lsp"


def timed(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="a 200-file subset, one run each, no RESULTS.md")
    parser.add_argument("--runs", type=int, default=7, help="alternating runs per tool (default 7)")
    args = parser.parse_args()

    tree = corpus()
    files = sorted(tree.rglob("*.py"))
    if args.fast:
        subset = CACHE / "subset"
        subset.mkdir(exist_ok=True)
        for path in files[:200]:
            destination = subset / path.relative_to(tree)
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(path.read_bytes())
        tree, files = subset, sorted(subset.rglob("*.py"))
    lines = sum(path.read_bytes().count(b"\n") for path in files)
    runs = 1 if args.fast else args.runs
    ruff_binary, pt2lsp_binary = ruff(), pt2lsp()
    commands = {
        "pt2lsp check": [str(pt2lsp_binary), "check", "--isolated", "--exit-zero", "--quiet", "."],
        f"ruff check {RUFF} (default rules, no cache)": [str(ruff_binary), "check", "--isolated", "--no-cache", "--exit-zero", "--quiet", "."],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for name, command in commands.items():  # warm the page cache once
        timed(command, tree)
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(timed(command, tree))
    medians = {name: statistics.median(values) for name, values in times.items()}
    ours, theirs = list(medians.values())
    rows = [
        f"| {name} | {median:.3f} s | {lines / median / 1e6:.2f} M lines/s | {', '.join(f'{t:.3f}' for t in times[name])} |"
        for name, median in medians.items()
    ]
    table = "\n".join(
        [
            "| tool | median wall time | throughput | runs |",
            "|---|---|---|---|",
            *rows,
        ]
    )
    summary = f"pt2lsp / ruff wall-time ratio: {ours / theirs:.2f} ({len(files)} files, {lines:,} lines)"
    print(table)
    print(summary)
    if not args.fast:
        version = subprocess.run([str(pt2lsp_binary), "--version"], capture_output=True, text=True).stdout.strip()
        heading = "## Static check of the whole corpus"
        write_section(
            heading,
            f"{heading}\n\n"
            f"Written by `python3 bench/corpus.py` on {datetime.date.today()}. "
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}. "
            f"Versions: {version}; ruff {RUFF}; corpus transformers {WHEELS['transformers']} + timm {WHEELS['timm']} "
            f"({len(files)} files, {lines:,} lines).\n\n"
            f"{table}\n\n{summary}. Runs alternate between the tools; the page cache is warm.\n",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
