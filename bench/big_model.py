#!/usr/bin/env python3
"""A 70B-parameter Llama checked without its weights: `pt2lsp check --trace` against a plain script.

transformers' `LlamaForCausalLM` with a Llama-70B-shaped config (80 layers, hidden 8192, 64 heads,
8 KV heads, 70.6 B parameters: 282 GB in float32) cannot be built for real on this machine. The
plain script builds it under `FakeTensorMode` and exports it (`use_cache=False`), as a user would
by hand; pt2lsp traces an entry file that says `fake_weights = True`, and, as a second row, one
that says nothing (the automatic switch: a real build that stops at 1 GiB of parameters, a count
of them all on the meta device, then a fake build). Wall time and peak memory of each, the worker's measured
as the proportional set sizes of pt2lsp's process tree, sampled.

    python3 bench/big_model.py            # replaces its section of RESULTS.md
    python3 bench/big_model.py --fast     # a 2-layer model of the same width, nothing written

Needs transformers in the tracer's interpreter (`pip install transformers==5.23.0` into .venv).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Section, tracer_stage_main
from lsp_load import WorkerMemory

HEADING = "## Tracer: a 70B-parameter Llama with fake weights"

CONFIG = """config = transformers.LlamaConfig(
    vocab_size=128256, hidden_size=8192, intermediate_size=28672, num_hidden_layers={layers},
    num_attention_heads=64, num_key_value_heads=8, max_position_embeddings=8192,
)
"""

ENTRY = """import torch
import transformers

{fake}
{config}
model = transformers.LlamaForCausalLM(config).eval()
example_args = (torch.randint(0, 128256, (1, 16)),)
example_kwargs = {{"use_cache": False}}
"""

PLAIN = """import json, resource, sys, time
began = time.perf_counter()
import torch
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode

{config}
with FakeTensorMode(allow_non_fake_inputs=True):
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 128256, (1, 16))
    program = torch.export.export(model, (ids,), kwargs={{"use_cache": False}})
parameters = sum(p.numel() for p in model.parameters())
print(json.dumps({{
    "seconds": time.perf_counter() - began,
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "nodes": len(program.graph.nodes),
    "parameters": parameters,
}}))
"""


def plain(python: Path, layers: int) -> dict:
    began = time.perf_counter()
    done = subprocess.run(
        [str(python), "-c", PLAIN.format(config=CONFIG.format(layers=layers))], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"the plain script failed: {done.stderr[-3000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": wall}


def traced(binary: Path, python: Path, layers: int, fake: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="pt2lsp-big-model-") as project:
        entry = Path(project) / "llama70b.py"
        entry.write_text(
            ENTRY.format(fake="fake_weights = True\n" if fake else "", config=CONFIG.format(layers=layers))
        )
        command = [str(binary), "check", "--trace", "--no-cache", "--python", str(python), "--format", "json", "--exit-zero"]
        process = subprocess.Popen([*command, str(entry)], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        memory = WorkerMemory(process.pid)
        sampler = threading.Thread(target=memory.run, daemon=True)
        began = time.perf_counter()
        sampler.start()
        stdout, stderr = process.communicate()
        wall = time.perf_counter() - began
        memory.stop.set()
    if process.returncode != 0:
        raise SystemExit(f"pt2lsp check --trace failed: {stderr[-3000:]}")
    report = json.loads(stdout)
    traced_findings = [d for d in report if d.get("source", "").endswith("trace")]
    return {"wall": wall, "peak_mb": memory.peak_kib / 1024, "findings": traced_findings}


def measure(binary: Path, python: Path, fast: bool) -> Section:
    layers = 2 if fast else 80
    script = plain(python, layers)
    asked = traced(binary, python, layers, fake=True)
    automatic = traced(binary, python, layers, fake=False)
    for name, run in (("fake_weights = True", asked), ("automatic", automatic)):
        if run["findings"]:
            raise SystemExit(f"{name}: the model exports, yet the trace reported {run['findings']}")
    ratio = asked["wall"] / script["wall"]
    body = (
        f"transformers' `LlamaForCausalLM`, {layers} layers of a Llama-70B-shaped config (hidden 8192, 64 heads, "
        f"8 KV heads): {script['parameters'] / 1e9:.1f} B parameters, {script['parameters'] * 4 / 1e9:.0f} GB in float32. "
        f"The exported graph has {script['nodes']} nodes. Each row is one run.\n\n"
        "| run | wall time | peak memory |\n|---|---|---|\n"
        f"| plain script: build under `FakeTensorMode`, `torch.export.export` | {script['wall']:.1f} s | "
        f"{script['peak_mb']:.0f} MB (max RSS) |\n"
        f"| `pt2lsp check --trace`, `fake_weights = True` | {asked['wall']:.1f} s | {asked['peak_mb']:.0f} MB "
        "(PSS of the worker's processes, sampled) |\n"
        f"| `pt2lsp check --trace`, nothing said (automatic fake weights) | {automatic['wall']:.1f} s | "
        f"{automatic['peak_mb']:.0f} MB |\n\n"
        f"**pt2lsp / plain script wall time: {ratio:.2f}** (goal ≤ 1.5; memory goal < 1.5 GB). The pt2lsp runs "
        "include starting the worker (importing torch, one warm-up export) and the check against eager that a "
        "fake model skips; the automatic row also builds 1 GiB of real parameters, then counts them all on the "
        "meta device, before the fake build."
    )
    return Section(
        HEADING,
        body,
        {
            "plain seconds": script["wall"],
            "fake seconds": asked["wall"],
            "fake peak MB": asked["peak_mb"],
            "automatic seconds": automatic["wall"],
        },
    )


def main() -> int:
    return tracer_stage_main(__doc__, measure, "2 layers")


if __name__ == "__main__":
    sys.exit(main())
