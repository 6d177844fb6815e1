"""What the PT601 check costs beside the export it follows (issue 15: at most 30%).

The check runs after every successful trace: the exported program and the eager model on fresh
inputs at up to three sets of sizes, twice each, then (only on a disagreement) a second export.
This measures, in one warmed-up process, the median of `torch.export.export` and of the check
(`pt2lsp_worker.divergence.divergence_findings`) on `fixtures/examples/transformer_block.py`
with its three export problems fixed (`torch.where`, `torch.std`, `Dim("seq", max=256)`), and on
any other exporting files given.

    .venv/bin/python bench/divergence_cost.py [--runs N] [FILES...]
"""

from __future__ import annotations

import argparse
import os
import runpy
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server" / "python"))

BLOCK = ROOT / "fixtures" / "examples" / "transformer_block.py"
FIXES = (
    (
        "        if scores.max() > 50.0:  # error[PT101]\n            scores = scores / scores.max()\n",
        "        scores = torch.where(scores.max() > 50.0, scores / scores.max(), scores)\n",
    ),
    ("        spread = x.detach().numpy().std()  # error[PT201]\n", "        spread = x.detach().std()\n"),
    (
        "        if x.shape[1] > 256:  # error[PT401]\n            x = x[:, -256:]\n",
        "",
    ),
    ('Dim("seq", max=512)', 'Dim("seq", max=256)'),
)


def fixed_block(directory: str) -> Path:
    text = BLOCK.read_text()
    for before, after in FIXES:
        if before not in text:
            raise SystemExit(f"{BLOCK} changed: {before.strip()!r} is gone; update FIXES")
        text = text.replace(before, after)
    path = Path(directory) / "transformer_block_fixed.py"
    path.write_text(text)
    return path


def measure(path: Path, runs: int) -> tuple[float, float]:
    """(export seconds, check seconds), medians over `runs` after one warm-up of each."""
    import torch

    from pt2lsp_worker.divergence import divergence_findings
    from pt2lsp_worker.entrypoint import Target
    from pt2lsp_worker.workspace import Workspace

    namespace = runpy.run_path(str(path))
    target = Target()
    target.model = namespace["model"]
    target.args = tuple(namespace["example_args"])
    target.kwargs = namespace.get("example_kwargs")
    target.dynamic_shapes = namespace.get("dynamic_shapes")
    target.model_binding = (str(path), "model")
    workspace = Workspace(str(path), [str(path.parent)])
    exports, checks = [], []
    for run in range(runs + 1):
        started = time.perf_counter()
        program = target.export_with(torch.export.export)
        exported = time.perf_counter()
        found = divergence_findings(program, target, workspace)
        checked = time.perf_counter()
        if found:
            raise SystemExit(f"{path}: the check found a divergence: {found[0].message}")
        if run:
            exports.append(exported - started)
            checks.append(checked - exported)
    return statistics.median(exports), statistics.median(checks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("files", nargs="*", type=Path)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        files = [fixed_block(directory), *options.files]
        print(f"{'file':40} {'export':>10} {'check':>10} {'check/export':>13}")
        for path in files:
            export, check = measure(path.resolve(), options.runs)
            print(f"{path.name:40} {export * 1000:8.1f}ms {check * 1000:8.1f}ms {check / export:12.0%}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
