#!/usr/bin/env python3
"""Real models from torchvision, timm and transformers, traced in one `pt2lsp check --trace` run.

Issue 19's benchmark, grown to issue 28's 60 real models (small configs, no weights; a third or
more failing, some with dynamic dims), each an entry file in the ExportDB convention in one project,
checked by one `pt2lsp check --trace --format json` run. It reports the wall time, each model's
outcome, where each failure landed (file:line, and the related locations that lead into the
library), and which models hit the tracer's timeout (PT502).

    python3 bench/real_models.py --binary target/release/pt2lsp --python .venv/bin/python
    python3 bench/real_models.py ... --truth    # also export each model directly, for the truth
    python3 bench/real_models.py ... --static   # the static check only, following the installed
                                                # libraries, against the same check without them

The libraries must be installed in the interpreter's environment (`pip install
transformers==5.23.0 timm==1.0.31`); a model whose library is missing is reported and skipped.
Nothing is downloaded at run time: every model is built from a config with random weights.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

# name -> (library, entry source). Each source defines `model`, `example_args` (or
# `example_kwargs`) and optionally `dynamic_shapes`, as a user's export script would.
TV = "torchvision"
TIMM = "timm"
HF = "transformers"


def tv(builder: str, shape: str = "2, 3, 64, 64", dynamic: bool = False, extra: str = "") -> str:
    spec = '\ndynamic_shapes = {"x": {0: Dim("batch")}}' if dynamic else ""
    return f"""
import torch
import torchvision
from torch.export import Dim

model = torchvision.models.{builder}(weights=None{extra}).eval()
example_args = (torch.randn({shape}),){spec}
"""


def detection(builder: str) -> str:
    return f"""
import torch
import torchvision

model = torchvision.models.detection.{builder}(weights=None, weights_backbone=None).eval()
example_args = ([torch.rand(3, 128, 128)],)
"""


def timm_model(name: str, shape: str = "2, 3, 224, 224", dynamic: str = "") -> str:
    spec = f"\ndynamic_shapes = {{'x': {dynamic}}}" if dynamic else ""
    return f"""
import timm
import torch
from torch.export import Dim

model = timm.create_model("{name}", pretrained=False).eval()
example_args = (torch.randn({shape}),){spec}
"""


def hf_causal(config: str, model_class: str, kwargs: str, dynamic: bool = True) -> str:
    spec = (
        '\ndynamic_shapes = {"input_ids": {0: Dim("batch"), 1: Dim("seq", max=64)}, "use_cache": None}'
        if dynamic
        else ""
    )
    return f"""
import torch
import transformers
from torch.export import Dim

config = transformers.{config}({kwargs})
model = transformers.{model_class}(config).eval()
example_args = ()
example_kwargs = {{"input_ids": torch.randint(0, 100, (2, 16)), "use_cache": False}}{spec}
"""


SMALL_LM = (
    "vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, "
    "num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128"
)
SMALL_MOE = SMALL_LM + ", num_local_experts=4, num_experts_per_tok=2"

MODELS: dict[str, tuple[str, str]] = {
    "tv_resnet18": (TV, tv("resnet18", dynamic=True)),
    "tv_mobilenet_v3_small": (TV, tv("mobilenet_v3_small", dynamic=True)),
    "tv_efficientnet_b0": (TV, tv("efficientnet_b0")),
    "tv_squeezenet": (TV, tv("squeezenet1_0")),
    "tv_shufflenet": (TV, tv("shufflenet_v2_x0_5", dynamic=True)),
    "tv_regnet": (TV, tv("regnet_y_400mf")),
    "tv_convnext_tiny": (TV, tv("convnext_tiny")),
    "tv_swin_t": (TV, tv("swin_t")),
    "tv_vit_b_16": (TV, tv("vit_b_16", shape="1, 3, 224, 224")),
    "tv_vit_b_16_batch": (TV, tv("vit_b_16", shape="1, 3, 224, 224", dynamic=True)),
    "tv_resnet18_batch_one": (TV, tv("resnet18", shape="1, 3, 64, 64", dynamic=True)),
    "tv_deeplabv3": (TV, tv("segmentation.deeplabv3_mobilenet_v3_large", extra=", weights_backbone=None")),
    "tv_lraspp": (TV, tv("segmentation.lraspp_mobilenet_v3_large", extra=", weights_backbone=None")),
    "tv_r3d_18": (TV, tv("video.r3d_18", shape="1, 3, 4, 32, 32")),
    "tv_raft_small": (
        TV,
        """
import torch
import torchvision

model = torchvision.models.optical_flow.raft_small(weights=None).eval()
example_args = (torch.randn(1, 3, 128, 128), torch.randn(1, 3, 128, 128))
""",
    ),
    "tv_fasterrcnn": (TV, detection("fasterrcnn_mobilenet_v3_large_320_fpn")),
    "tv_ssdlite": (TV, detection("ssdlite320_mobilenet_v3_large")),
    "tv_fcos": (TV, detection("fcos_resnet50_fpn")),
    "tv_maskrcnn": (TV, detection("maskrcnn_resnet50_fpn")),
    "tv_retinanet": (TV, detection("retinanet_resnet50_fpn")),
    "tv_inception_batch_one": (
        TV,
        tv("inception_v3", shape="1, 3, 299, 299", dynamic=True, extra=", init_weights=False"),
    ),
    "tv_mobilenet_v2": (TV, tv("mobilenet_v2", dynamic=True)),
    "tv_googlenet": (TV, tv("googlenet", extra=", init_weights=False")),
    "tv_mnasnet": (TV, tv("mnasnet0_5", dynamic=True)),
    "tv_alexnet": (TV, tv("alexnet", shape="2, 3, 96, 96")),
    "tv_vgg11": (TV, tv("vgg11", dynamic=True)),
    "timm_resnet18": (TIMM, timm_model("resnet18", shape="2, 3, 64, 64", dynamic='{0: Dim("batch")}')),
    "timm_efficientnet_b0": (TIMM, timm_model("efficientnet_b0", shape="2, 3, 64, 64", dynamic='{0: Dim("batch")}')),
    "timm_convnext_atto": (TIMM, timm_model("convnext_atto", shape="2, 3, 64, 64")),
    "timm_vit_tiny": (TIMM, timm_model("vit_tiny_patch16_224", dynamic='{0: Dim("batch")}')),
    "timm_vit_tiny_hw": (
        TIMM,
        timm_model("vit_tiny_patch16_224", dynamic='{2: Dim("height", min=32, max=512), 3: Dim("width", min=32, max=512)}'),
    ),
    "timm_deit_tiny": (TIMM, timm_model("deit_tiny_patch16_224")),
    "timm_efficientnet_hw": (
        TIMM,
        timm_model(
            "efficientnet_b0",
            shape="2, 3, 64, 64",
            dynamic='{2: Dim("height", min=32, max=512), 3: Dim("width", min=32, max=512)}',
        ),
    ),
    "timm_levit_hw": (TIMM, timm_model("levit_128s", dynamic='{2: Dim("height", min=64, max=448)}')),
    "timm_mobilevitv2": (TIMM, timm_model("mobilevitv2_050", shape="2, 3, 256, 256")),
    "timm_swin_hw": (
        TIMM,
        timm_model("swin_tiny_patch4_window7_224", dynamic='{2: Dim("height", min=64, max=448)}'),
    ),
    "timm_mobilenetv3_small": (
        TIMM,
        timm_model("mobilenetv3_small_050", shape="2, 3, 64, 64", dynamic='{0: Dim("batch")}'),
    ),
    "timm_regnetx_002": (TIMM, timm_model("regnetx_002", shape="2, 3, 64, 64")),
    "timm_ghostnet": (TIMM, timm_model("ghostnet_100", shape="2, 3, 64, 64", dynamic='{0: Dim("batch")}')),
    "timm_lcnet": (TIMM, timm_model("lcnet_050", shape="2, 3, 64, 64")),
    "timm_repvgg_a0": (TIMM, timm_model("repvgg_a0", shape="2, 3, 64, 64", dynamic='{0: Dim("batch")}')),
    "hf_llama": (HF, hf_causal("LlamaConfig", "LlamaForCausalLM", SMALL_LM)),
    "hf_phi3": (HF, hf_causal("Phi3Config", "Phi3ForCausalLM", SMALL_LM + ", pad_token_id=0")),
    "hf_gemma": (HF, hf_causal("GemmaConfig", "GemmaForCausalLM", SMALL_LM + ", pad_token_id=0")),
    "hf_qwen3": (HF, hf_causal("Qwen3Config", "Qwen3ForCausalLM", SMALL_LM)),
    "hf_olmo": (HF, hf_causal("OlmoConfig", "OlmoForCausalLM", SMALL_LM + ", pad_token_id=0")),
    "hf_granite": (HF, hf_causal("GraniteConfig", "GraniteForCausalLM", SMALL_LM + ", pad_token_id=0")),
    "hf_stablelm": (HF, hf_causal("StableLmConfig", "StableLmForCausalLM", SMALL_LM + ", pad_token_id=0")),
    "hf_mistral": (HF, hf_causal("MistralConfig", "MistralForCausalLM", SMALL_LM)),
    "hf_qwen2": (HF, hf_causal("Qwen2Config", "Qwen2ForCausalLM", SMALL_LM)),
    "hf_mixtral": (HF, hf_causal("MixtralConfig", "MixtralForCausalLM", SMALL_MOE)),
    "hf_gpt2": (
        HF,
        hf_causal("GPT2Config", "GPT2LMHeadModel", "vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=128"),
    ),
    "hf_gpt2_batch_one": (
        HF,
        """
import torch
import transformers
from torch.export import Dim

config = transformers.GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=128)
model = transformers.GPT2LMHeadModel(config).eval()
example_args = ()
example_kwargs = {"input_ids": torch.randint(0, 100, (1, 16)), "use_cache": False}
dynamic_shapes = {"input_ids": {0: Dim("batch"), 1: Dim("seq", max=64)}, "use_cache": None}
""",
    ),
    "hf_t5_encoder": (
        HF,
        """
import torch
import transformers
from torch.export import Dim

config = transformers.T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)
model = transformers.T5EncoderModel(config).eval()
example_args = (torch.randint(0, 100, (2, 16)),)
dynamic_shapes = {"input_ids": {0: Dim("batch"), 1: Dim("seq", max=64)}}
""",
    ),
    "hf_bert_unbounded_seq": (
        HF,
        """
import torch
import transformers
from torch.export import Dim

config = transformers.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=64, max_position_embeddings=64)
model = transformers.BertModel(config).eval()
example_args = (torch.randint(0, 100, (2, 16)),)
dynamic_shapes = {"input_ids": {0: Dim("batch"), 1: Dim("seq")}}
""",
    ),
    "hf_resnet_batch_one": (
        HF,
        """
import torch
import transformers
from torch.export import Dim

config = transformers.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic")
model = transformers.ResNetModel(config).eval()
example_args = (torch.randn(1, 3, 64, 64),)
dynamic_shapes = {"pixel_values": {0: Dim("batch")}}
""",
    ),
    "hf_wav2vec2_samples": (
        HF,
        """
import torch
import transformers
from torch.export import Dim

config = transformers.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, conv_dim=(32, 32), conv_stride=(5, 2),
                                     conv_kernel=(10, 3), num_feat_extract_layers=2,
                                     num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
model = transformers.Wav2Vec2Model(config).eval()
example_args = (torch.randn(2, 4000),)
dynamic_shapes = {"input_values": {1: Dim("samples", min=1000, max=16000)}}
""",
    ),
    "hf_bert": (
        HF,
        """
import torch
import transformers
from torch.export import Dim

config = transformers.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=64)
model = transformers.BertModel(config).eval()
example_args = (torch.randint(0, 100, (2, 16)),)
dynamic_shapes = {"input_ids": {0: Dim("batch"), 1: Dim("seq", max=64)}}
""",
    ),
    "hf_llama_with_cache": (
        HF,
        """
import torch
import transformers

config = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64,
                                  num_hidden_layers=2, num_attention_heads=4,
                                  num_key_value_heads=2, max_position_embeddings=128)
model = transformers.LlamaForCausalLM(config).eval()
example_args = (torch.randint(0, 100, (2, 16)),)
""",
    ),
    "hf_vit_hw": (
        HF,
        """
import torch
import transformers
from torch.export import Dim

config = transformers.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=64, image_size=64, patch_size=16)
model = transformers.ViTModel(config).eval()
example_args = (torch.randn(2, 3, 64, 64),)
dynamic_shapes = {"pixel_values": {2: Dim("height", min=32, max=256), 3: Dim("width", min=32, max=256)}}
""",
    ),
}


def write_project(root: Path, names: list[str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "real-models"\n')
    for name in names:
        (root / f"{name}.py").write_text(textwrap.dedent(MODELS[name][1]).lstrip())


def available(python: str, library: str) -> bool:
    probe = subprocess.run([python, "-c", f"import {library}"], capture_output=True)
    return probe.returncode == 0


TRUTH = """
import importlib.util, sys, traceback, torch
spec = importlib.util.spec_from_file_location("entry", sys.argv[1])
entry = importlib.util.module_from_spec(spec)
spec.loader.exec_module(entry)
try:
    torch.export.export(entry.model, tuple(entry.example_args), getattr(entry, "example_kwargs", None),
                        dynamic_shapes=getattr(entry, "dynamic_shapes", None))
    print("exports")
except Exception as exc:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/torch/" not in f.filename]
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
    print(f"fails: {type(exc).__name__} at {where}: {str(exc).splitlines()[0][:120]}")
"""


def truth_of(args: argparse.Namespace, root: Path, names: list[str]) -> dict[str, str]:
    """Each model exported directly: `exports`, or `fails: <error> at <file:line>: <message>`."""
    script = root / "_truth.py"
    script.write_text(TRUTH)
    truth = {}
    for name in names:
        result = subprocess.run([args.python, str(script), str(root / f"{name}.py")],
                                capture_output=True, text=True, cwd=root, timeout=600)
        lines = (result.stdout.strip() or result.stderr.strip() or "?").splitlines()
        truth[name] = lines[-1].replace(str(root) + "/", "")
    return truth


def static(args: argparse.Namespace, names: list[str]) -> int:
    """Issue 17 item 6: the static check of the models' entry files following the installed
    libraries (a first run that summarises them, a second that reads the cache), against the
    same check without them; with --truth, how many failures it points at and how many errors
    it puts on models that export."""
    with tempfile.TemporaryDirectory(prefix="pt2lsp-real-models-") as tmp:
        root = Path(tmp)
        write_project(root, names)
        base = [args.binary, "check", "--format", "json", "--exit-zero", "--python", args.python, str(root)]
        runs = {}
        for label, extra in (("libraries, first run", []), ("libraries, cached", []),
                             ("without libraries", ["--no-follow-libraries"])):
            start = time.perf_counter()
            run = subprocess.run(base[:2] + extra + base[2:], capture_output=True, text=True)
            runs[label] = (time.perf_counter() - start, json.loads(run.stdout or "[]"))
        truth = truth_of(args, root, names) if args.truth else {}
    if args.truth_file:
        lines = Path(args.truth_file).read_text().splitlines()
        truth = {name: result for name, _, result in (line.partition(": ") for line in lines) if name in names}
    print(f"{len(names)} models, the static check of their entry files:")
    for label, (wall, _) in runs.items():
        print(f"  {label:22} {wall:.2f} s")
    _, found = runs["libraries, cached"]
    _, alone = runs["without libraries"]
    by_model = {n: [d for d in found if Path(d["file"]).stem == n] for n in names}
    alone_by_model = {n: [d for d in alone if Path(d["file"]).stem == n] for n in names}
    print()
    print(f"{'model':26} {'static, libraries followed':70} truth")
    for name in names:
        shown = []
        for d in by_model[name]:
            where = f"{d['code']} {d['severity'][0]}"
            library = [r for r in d.get("related", []) if "site-packages" in r["file"]]
            if library:
                where += f" <- {library[-1]['file'].split('site-packages/')[-1]}:{library[-1]['line']}"
            shown.append(where)
        print(f"{name:26} {'; '.join(shown)[:70] or '-':70} {truth.get(name, '')[:70]}")
    if truth:
        fails = [n for n in names if truth[n].startswith("fails")]
        exports = [n for n in names if truth[n] == "exports"]

        def located(models: dict[str, list[dict]], severity: tuple[str, ...]) -> int:
            return sum(1 for n in fails if any(d["severity"] in severity for d in models[n]))

        def alarms(models: dict[str, list[dict]]) -> int:
            return sum(1 for n in exports if any(d["severity"] == "error" for d in models[n]))

        print()
        print(f"{len(fails)} fail, {len(exports)} export.")
        for label, models in (("libraries followed", by_model), ("without libraries", alone_by_model)):
            print(f"  {label}: an error on {located(models, ('error',))} failing entry files, a diagnostic on "
                  f"{located(models, ('error', 'warning'))}; an error on {alarms(models)} that export")
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": {k: v[0] for k, v in runs.items()},
                                               "models": by_model, "truth": truth}, indent=1))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default="target/release/pt2lsp")
    parser.add_argument("--python", default=".venv/bin/python")
    parser.add_argument("--only", nargs="*", help="model names (default: all)")
    parser.add_argument("--truth", action="store_true", help="also export each model directly")
    parser.add_argument("--timeout", type=int, default=60, help="pt2lsp's per-entrypoint timeout")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--truth-file",
        help="read the truth from this file (`name: exports` or `name: fails: ...` lines) instead of exporting",
    )
    parser.add_argument(
        "--static",
        action="store_true",
        help="run the static check (no trace) with the installed libraries followed, and without",
    )
    args = parser.parse_args()
    args.binary = str(Path(args.binary).resolve())
    args.python = str(Path(args.python).absolute())

    names = args.only or list(MODELS)
    missing = {lib for lib in {MODELS[n][0] for n in names} if not available(args.python, lib)}
    if missing:
        print(f"not installed in {args.python}: {', '.join(sorted(missing))}; their models are skipped")
    names = [n for n in names if MODELS[n][0] not in missing]

    if args.static:
        return static(args, names)

    with tempfile.TemporaryDirectory(prefix="pt2lsp-real-models-") as tmp:
        root = Path(tmp)
        write_project(root, names)
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        command = [args.binary, "check", "--trace", "--format", "json", "--python", args.python,
                   "--timeout", str(args.timeout), str(root)]
        start = time.perf_counter()
        run = subprocess.run(command, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - start
        if run.returncode == 2:
            print(run.stderr, file=sys.stderr)
            return 2
        diagnostics = json.loads(run.stdout or "[]")
        if isinstance(diagnostics, dict):
            diagnostics = diagnostics.get("diagnostics", [])
        by_model: dict[str, list[dict]] = {n: [] for n in names}
        for diagnostic in diagnostics:
            if diagnostic.get("severity") != "error":
                continue
            stem = Path(diagnostic["file"]).stem
            if stem in by_model:
                by_model[stem].append(diagnostic)

        truth = truth_of(args, root, names) if args.truth else {}

    failing = [n for n in names if by_model[n]]
    timeouts = [n for n in names if any(d["code"] == "PT502" for d in by_model[n])]
    print(f"{len(names)} models, one `check --trace` run: {wall:.1f} s wall; "
          f"{len(failing)} with errors; {len(timeouts)} over the timeout (PT502)")
    print()
    print(f"{'model':26} {'pt2lsp':60} truth")
    for name in names:
        found = by_model[name]
        if found:
            first = found[0]
            related = [f"{Path(r['file']).name}:{r['line']}" for r in first.get("related", [])]
            where = f"{first['code']} {Path(first['file']).name}:{first['line']}"
            if related:
                where += " <- " + ", ".join(related[:3])
            if len(found) > 1:
                where += f" (+{len(found) - 1})"
        else:
            where = "exports"
        print(f"{name:26} {where[:60]:60} {truth.get(name, '')[:90]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"wall_seconds": wall, "models": by_model, "truth": truth}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
