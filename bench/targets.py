#!/usr/bin/env python3
"""What each deployment target adds to a trace (issue 31): the seconds of each target's lowering
(`core-aten`, `pt2`, `onnx`, `aoti`, `executorch`) after the export, on `fixtures/examples`,
`fixtures/targets` and three real models (torchvision's ResNet-18 and MobileNetV3-small, a
small transformers BERT), each target in its own job so that one target's caches do not warm
another's.

    python3 bench/targets.py --python .venv/bin/python [--only real] [--targets onnx,aoti]

Each (file, target) is one job of the tracer worker (`pt2lsp_worker.job.run_job`, the code
`check --trace --target T` runs) in a fresh interpreter: the lowering's seconds are the worker's
own measurement (`targets[].seconds` of the result), the job's beside them (import, export, the
PT601 check, the lowering). A file that does not export lowers nothing: its targets cost nothing.
Nothing is downloaded: models are built from configs with random weights.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("core-aten", "pt2", "onnx", "aoti", "executorch")

REAL_MODELS = {
    "resnet18": "import torch\nimport torchvision\n\nmodel = torchvision.models.resnet18().eval()\n"
    "example_args = (torch.randn(1, 3, 224, 224),)\n",
    "mobilenet_v3_small": "import torch\nimport torchvision\n\nmodel = torchvision.models.mobilenet_v3_small().eval()\n"
    "example_args = (torch.randn(1, 3, 224, 224),)\n",
    "bert_small": "import torch\nfrom transformers import BertConfig, BertModel\n\n"
    "config = BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256)\n"
    "model = BertModel(config).eval()\nexample_args = (torch.randint(0, 1000, (1, 32)),)\n",
}


# One job run by the worker's own code, in a fresh interpreter: the target's seconds are the
# worker's measurement of its lowering (`targets[].seconds` of the job's result).
DRIVER = """
import json, os, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from pt2lsp_worker.job import run_job
path, target, timeout = sys.argv[2], sys.argv[3], float(sys.argv[4])
started = time.monotonic()
result = run_job({"file": path, "roots": [os.path.dirname(path)], "cwd": os.path.dirname(path),
                  "timeout": timeout, "targets": [target]}, tempfile.mkdtemp())
result["job_seconds"] = time.monotonic() - started
print("RESULT " + json.dumps({key: result.get(key) for key in ("status", "targets", "diagnostics", "job_seconds")}))
"""


def lowering_seconds(python: str, file: Path, target: str, timeout: int) -> tuple[float | None, float, list, str]:
    """(the target's lowering seconds, None when the file did not export; the whole job's
    seconds; the codes found; why the target could not run, if it could not)."""
    run = subprocess.run(
        [python, "-c", DRIVER, str(ROOT / "server" / "python"), str(file), target, str(timeout)],
        cwd=file.parent,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
        capture_output=True,
        text=True,
    )
    line = next((line for line in run.stdout.splitlines() if line.startswith("RESULT ")), None)
    if line is None:
        return None, 0.0, ["crashed"], run.stderr[-300:]
    result = json.loads(line.removeprefix("RESULT "))
    lowering = next((entry for entry in result.get("targets") or [] if entry["target"] == target), None)
    codes = sorted({finding["code"] for finding in result.get("diagnostics") or []})
    unavailable = (lowering or {}).get("unavailable") or ""
    return (lowering or {}).get("seconds"), result["job_seconds"], codes, unavailable


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--only", choices=("examples", "targets", "real"), action="append")
    args = parser.parse_args()
    # Each job runs in the file's directory: the interpreter is named by its absolute path.
    args.python = os.path.abspath(args.python)
    groups = args.only or ["examples", "targets", "real"]
    files: list[tuple[str, Path]] = []
    if "examples" in groups:
        files += [("examples", path) for path in sorted((ROOT / "fixtures" / "examples").glob("*.py"))]
    if "targets" in groups:
        files += [("targets", path) for path in sorted((ROOT / "fixtures" / "targets").rglob("*.py"))]
    real_dir = Path(tempfile.mkdtemp(prefix="pt2lsp-real-"))
    if "real" in groups:
        for name, source in REAL_MODELS.items():
            path = real_dir / f"{name}.py"
            path.write_text(source)
            files.append(("real", path))
    print(f"{'group':9} {'file':38} {'target':11} {'lowering s':>10} {'job s':>7}  codes found")
    for group, path in files:
        for target in args.targets.split(","):
            seconds, job, codes, unavailable = lowering_seconds(args.python, path, target, args.timeout)
            shown = "-" if seconds is None else f"{seconds:.2f}"
            note = f"  (not run: {unavailable[:60]})" if unavailable else ""
            print(f"{group:9} {path.name:38} {target:11} {shown:>10} {job:7.1f}  {' '.join(codes)}{note}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
