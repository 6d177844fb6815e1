#!/usr/bin/env python3
"""Times `pt2lsp check` against its peers on pinned real model code, side by side.

Two comparisons, each alternating runs of the tools in one loop (so a busy moment of the machine
hits every tool alike) and reporting medians, ratios and lines per second:

  corpus     pt2lsp against `ruff check` (default rules, no cache) on the whole corpus, the
             `.py` files of the transformers and timm wheels (harness.corpus())
  torchfix   pt2lsp, ruff and TorchFix on timm's `layers/` package: TorchFix (libcst) checks
             about 500 lines/s here and does not finish the whole corpus in 10 minutes

    python3 bench/corpus.py            # both, 7 and 5 runs; replaces their RESULTS.md sections
    python3 bench/corpus.py --fast     # 200 files and 5 files, 1 run each, nothing written

`bench/run.py` runs these as two of its stages.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    CACHE,
    RUFF,
    TORCHFIX,
    WHEELS,
    Section,
    build,
    corpus,
    lines_of,
    own_project,
    ruff,
    timed,
    torchfix,
    write_section,
)

CORPUS_HEADING = "## Static check: pt2lsp and ruff on the whole corpus"
TORCHFIX_HEADING = "## Static check: pt2lsp, ruff and TorchFix on a subset"
# The TorchFix subset: a whole package of model building blocks, 69 files, 14 k lines.
TORCHFIX_SUBSET = "timm/layers"


def subset(tree: Path, files: list[Path], name: str) -> Path:
    """A directory holding copies of `files` (paths under `tree`), so every tool walks the same."""
    target = CACHE / f"subset-{name}"
    shutil.rmtree(target, ignore_errors=True)
    for path in files:
        destination = target / path.relative_to(tree)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(path.read_bytes())
    return own_project(target)


def alternate(commands: dict[str, list[str]], cwd: Path, runs: int) -> dict[str, list[float]]:
    """Wall times of `runs` rounds, each running every command once, after one unmeasured round
    that warms the page cache."""
    for command in commands.values():
        timed(command, cwd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(timed(command, cwd))
    return times


def commands(binary: Path, tools: tuple[str, ...], python: Path | None = None) -> dict[str, list[str]]:
    """The command line of each of `tools`, checking the current directory with its defaults."""
    every = {
        "pt2lsp": lambda: ("pt2lsp check", [str(binary), "check", "--isolated", "--exit-zero", "--quiet", "."]),
        # The same check following the libraries installed for `python` that the corpus imports
        # (torchvision, huggingface_hub, safetensors; its own transformers and timm shadow the
        # installed ones), their summaries read from the cache the warm-up round wrote.
        "pt2lsp-libraries": lambda: (
            "pt2lsp check --python (installed libraries followed)",
            [str(binary), "check", "--isolated", "--exit-zero", "--quiet", "--python", str(python), "."],
        ),
        "ruff": lambda: (
            f"ruff check {RUFF} (default rules, no cache)",
            [str(ruff()), "check", "--isolated", "--no-cache", "--exit-zero", "--quiet", "."],
        ),
        "torchfix": lambda: (f"torchfix {TORCHFIX} (default rules)", [str(torchfix()), "."]),
    }
    return dict(every[name]() for name in tools)


def table(times: dict[str, list[float]], lines: int) -> tuple[str, dict[str, float]]:
    medians = {name: statistics.median(values) for name, values in times.items()}
    rows = [
        f"| {name} | {median:.3f} s | {lines / median:,.0f} | {medians['pt2lsp check'] / median:.3f} | "
        f"{', '.join(f'{t:.3f}' for t in times[name])} |"
        for name, median in medians.items()
    ]
    header = ["| tool | median wall time | lines/s | pt2lsp / tool | runs (s) |", "|---|---|---|---|---|"]
    return "\n".join(header + rows), medians


def measure_corpus(binary: Path, runs: int, fast: bool, python: Path | None = None) -> Section:
    tree = corpus()
    files = sorted(tree.rglob("*.py"))
    if fast:
        files = files[:200]
        tree = subset(tree, files, "corpus")
        files = sorted(tree.rglob("*.py"))
    lines = lines_of(files)
    tools = ("pt2lsp", "pt2lsp-libraries", "ruff") if python else ("pt2lsp", "ruff")
    times = alternate(commands(binary, tools, python), tree, runs)
    rendered, medians = table(times, lines)
    ours, theirs = medians["pt2lsp check"], list(medians.values())[-1]
    with_libraries = next((m for name, m in medians.items() if "libraries" in name), None)
    what = (
        "The first 200 files of the corpus"
        if fast
        else (f"Transformers {WHEELS['transformers']} + timm {WHEELS['timm']}, every `.py` file of both wheels")
    )
    body = (
        f"{what}: {len(files):,} files, {lines:,} lines. {runs} alternating run{'s' if runs > 1 else ''} per tool "
        "after one warm-up round (the page cache is warm); both tools use every core.\n\n"
        f"{rendered}\n\n**pt2lsp / ruff wall time: {ours / theirs:.2f}** (target ≤ 0.6)"
        + (
            f"; **{with_libraries / theirs:.2f}** following the installed libraries.\n"
            if with_libraries
            else ".\n"
        )
    )
    figures = {"pt2lsp seconds": ours, "ruff seconds": theirs, "lines": lines}
    if with_libraries:
        figures["pt2lsp with libraries seconds"] = with_libraries
    return Section(CORPUS_HEADING, body, figures)


def measure_torchfix(binary: Path, runs: int, fast: bool) -> Section:
    tree = corpus()
    files = sorted((tree / TORCHFIX_SUBSET).rglob("*.py"))
    if fast:
        files = files[:5]
    directory = subset(tree, files, "torchfix")
    lines = lines_of(files)
    times = alternate(commands(binary, ("pt2lsp", "ruff", "torchfix")), directory, runs)
    rendered, medians = table(times, lines)
    ours, _, slowest = medians.values()
    body = (
        f"`{TORCHFIX_SUBSET}/` of timm {WHEELS['timm']}{' (its first 5 files)' if fast else ''}: {len(files)} files, "
        f"{lines:,} lines, the same copy for every tool. {runs} alternating run{'s' if runs > 1 else ''} per "
        "tool after one warm-up round. TorchFix runs one job per core (its default). It is measured on this subset "
        "because on the whole corpus it did not finish in 10 minutes.\n\n"
        f"{rendered}\n\n**pt2lsp / TorchFix wall time: {ours / slowest:.4f}** "
        f"(TorchFix takes {slowest / ours:,.0f}× as long).\n"
    )
    return Section(TORCHFIX_HEADING, body, {"pt2lsp seconds": ours, "torchfix seconds": slowest, "lines": lines})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="small subsets, one run each, nothing written")
    parser.add_argument("--runs", type=int, help="alternating runs per tool (default 7 on the corpus, 5 with TorchFix)")
    parser.add_argument("--binary", type=Path, help="use this pt2lsp instead of building target/release/pt2lsp")
    parser.add_argument("--only", choices=("corpus", "torchfix"), help="run one of the two comparisons")
    parser.add_argument("--python", type=Path, help="also time the check following this interpreter's libraries")
    args = parser.parse_args()
    binary = args.binary.resolve() if args.binary else build()
    sections = []
    if args.only in (None, "corpus"):
        sections.append(measure_corpus(binary, 1 if args.fast else args.runs or 7, args.fast, args.python))
    if args.only in (None, "torchfix"):
        sections.append(measure_torchfix(binary, 1 if args.fast else args.runs or 5, args.fast))
    for section in sections:
        print(section.markdown())
        if not args.fast:
            write_section(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
