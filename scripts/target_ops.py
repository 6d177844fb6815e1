"""Generates analyzer/data/target_ops.tsv: the torch calls that a deployment target cannot run in
any configuration, which the static pass warns about as you type (PT707) when the file's
entrypoint names the target.

Every row comes from the target packages' own op lists and is then measured:

- candidates: each public ATen op with a Python entry of the same name (`torch.searchsorted`, the
  method `Tensor.histc`) all of whose functional overloads are
  - for `core-aten`: not tagged `core` by torch, not in torch's default decomposition table
    (`torch.export.default_decompositions()`, what `run_decompositions()` uses) and without a
    CompositeImplicitAutograd kernel (which export decomposes on its own);
  - for `executorch`: the same (its edge dialect takes core ATen only) and without a kernel in
    ExecuTorch's portable library (`kernels/portable/functions.yaml` of the installed package),
    so that stock ExecuTorch has no way to run it;
  - for `onnx`: without a function in torch.onnx's registry (`ONNXRegistry.from_torchlib()`), nor
    a decomposition, nor a CompositeImplicitAutograd kernel;
- measured: a module calling the op's first functional overload, with arguments made from its
  schema, is exported, decomposed as the target's lowering does it (`run_decompositions()`;
  the ONNX exporter's own preparation) and the op must still be there (and, for ONNX, have no
  function; for ExecuTorch, `to_edge` must refuse it). A candidate whose call cannot be made or
  exported is left out: the table claims only what was seen.

    .venv/bin/python scripts/target_ops.py            # writes the table
    .venv/bin/python scripts/target_ops.py --check    # fails when the table is not current
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "analyzer", "data", "target_ops.tsv")
TARGETS = ("core-aten", "executorch", "onnx")


def functional_overloads(torch, packet) -> list:
    """The overloads of `packet` a Python call without `out=` reaches: not `out`, not mutating,
    and known to the dispatcher (TorchScript-only overloads are not)."""
    found = []
    for name in packet.overloads():
        op = getattr(packet, name)
        schema = op._schema
        if name == "out" or name.endswith("_out") or schema.is_mutable:
            continue
        if any(argument.is_out for argument in schema.arguments):
            continue
        try:
            torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")
        except RuntimeError:
            continue
        found.append(op)
    return found


def python_entries(torch, name: str) -> tuple[bool, bool]:
    """Whether `torch.<name>` and `Tensor.<name>` are torch's generated bindings of the ATen op
    (not a Python function of the same name that may call something else)."""
    function = getattr(torch, name, None)
    method = getattr(torch.Tensor, name, None)
    is_function = function is not None and function is getattr(torch._C._VariableFunctions, name, None)
    is_method = method is not None and method is getattr(torch._C.TensorBase, name, None)
    return is_function, is_method


def portable_kernels() -> set[str]:
    """The packet names of ExecuTorch's portable kernels (`cumsum` of `cumsum.out`)."""
    from executorch.kernels import portable

    path = os.path.join(os.path.dirname(portable.__file__), "functions.yaml")
    names = set()
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            if line.startswith("- op:"):
                names.add(line.split(":", 1)[1].strip().split(".")[0])
    return names


def sample_arguments(torch, op):
    """Positional arguments for `op` made from its schema (defaults where it has them), and the
    tensors among them, which become the exported module's inputs; None when a type is not one
    this script makes."""
    arguments, tensors = [], []
    for argument in op._schema.arguments:
        if argument.kwarg_only:
            if argument.has_default_value():
                continue
            return None
        if argument.has_default_value():
            break
        kind = str(argument.type)
        if kind == "Tensor":
            tensor = torch.rand(4, 6)
            tensors.append(tensor)
            arguments.append(("tensor", len(tensors) - 1))
        elif kind in ("int", "SymInt"):
            arguments.append(("value", 1))
        elif kind in ("float", "Scalar"):
            arguments.append(("value", 0.5))
        elif kind == "bool":
            arguments.append(("value", False))
        elif kind in ("int[]", "SymInt[]") or kind.startswith(("int[", "SymInt[")):
            arguments.append(("value", [4, 6]))
        elif kind.endswith("?"):
            arguments.append(("value", None))
        else:
            return None
    return arguments, tensors


def exported_with(torch, op):
    """The program of a module that calls `op` on sample arguments, or None."""
    made = sample_arguments(torch, op)
    if made is None:
        return None
    arguments, tensors = made

    class Call(torch.nn.Module):
        def forward(self, *inputs):
            values = [inputs[index] if kind == "tensor" else index for kind, index in arguments]
            return op(*values)

    if not tensors:
        return None
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            op(*[tensors[index] if kind == "tensor" else index for kind, index in arguments])
            return torch.export.export(Call(), tuple(tensors), strict=False)
    except Exception:  # noqa: BLE001 - a call this script cannot make is no claim
        return None


def kept(program, packet_name: str, keep) -> bool:
    """Whether a call node of the ATen op `packet_name` that `keep(node)` accepts is in
    `program`'s graph."""
    import torch

    for node in program.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        if target.namespace == "aten" and target._schema.name == f"aten::{packet_name}" and keep(target):
            return True
    return False


def edge_refuses(program, packet_name: str) -> bool:
    """Whether ExecuTorch's `to_edge` (its default configuration) refuses `program` for the op."""
    from executorch.exir import to_edge

    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            to_edge(program)
    except Exception as exc:  # noqa: BLE001 - its verifier's error is the measurement
        return f"aten.{packet_name}." in str(exc) and "not in Core ATen" in str(exc)
    return False


def measure() -> tuple[list[str], list[tuple[str, str, list[str], list[str]]]]:
    """The header lines (what the table was made from) and the rows."""
    import torch
    from torch.onnx._internal.exporter import _core, _registration

    decompositions = set(torch.export.default_decompositions().keys())
    registry = _registration.ONNXRegistry.from_torchlib()
    portable = portable_kernels()
    from importlib.metadata import version

    def implicit(op) -> bool:
        return torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")

    def not_core(op) -> bool:
        return torch.Tag.core not in op.tags and op not in decompositions and not implicit(op)

    def not_onnx(op) -> bool:
        return not registry.is_registered(op) and op not in decompositions and not implicit(op)

    rows = []
    for name in sorted(dir(torch.ops.aten)):
        if name.startswith("_"):
            continue
        packet = getattr(torch.ops.aten, name, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        is_function, is_method = python_entries(torch, name)
        if not (is_function or is_method):
            continue
        overloads = functional_overloads(torch, packet)
        if not overloads:
            continue
        candidates = []
        if all(not_core(op) for op in overloads):
            candidates.append("core-aten")
            if name not in portable:
                candidates.append("executorch")
        if all(not_onnx(op) for op in overloads):
            candidates.append("onnx")
        if not candidates:
            continue
        program = exported_with(torch, overloads[0])
        if program is None:
            continue
        confirmed = []
        try:
            decomposed = program.run_decompositions()
        except Exception:  # noqa: BLE001 - not measured, no claim
            decomposed = None
        if decomposed is not None and kept(decomposed, name, lambda op: torch.Tag.core not in op.tags):
            confirmed.append("core-aten")
            if "executorch" in candidates and edge_refuses(program, name):
                confirmed.append("executorch")
        if "onnx" in candidates:
            try:
                with (
                    contextlib.redirect_stdout(io.StringIO()),
                    contextlib.redirect_stderr(io.StringIO()),
                ):
                    prepared = _core._prepare_exported_program_for_export(program, registry=registry)
            except Exception:  # noqa: BLE001
                prepared = None
            if prepared is not None and kept(prepared, name, lambda op: not registry.is_registered(op)):
                confirmed.append("onnx")
        if not confirmed:
            continue
        entries = (["function"] if is_function else []) + (["method"] if is_method else [])
        rows.append(
            (
                name,
                ",".join(entries),
                confirmed,
                [str(op).removeprefix("aten.") for op in overloads],
            )
        )
    header = [
        "# Generated by scripts/target_ops.py; do not edit. The torch calls a deployment target cannot run",
        "# in any configuration (not core ATen and no decomposition to it; no ExecuTorch portable kernel;",
        "# no ONNX function), each measured: a call exported and lowered keeps the op.",
        f"# torch {torch.__version__.split('+')[0]}, executorch {version('executorch')}, onnxscript {version('onnxscript')}",
        "# name\tentries\ttargets\toverloads",
    ]
    return header, rows


def render(header: list[str], rows) -> str:
    lines = list(header)
    for name, entries, targets, overloads in rows:
        lines.append("\t".join((name, entries, ",".join(targets), ",".join(overloads))))
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when the table is not current")
    args = parser.parse_args(argv)
    text = render(*measure())
    if args.check:
        with open(TABLE, encoding="utf-8") as stream:
            current = stream.read()
        if current != text:
            sys.stderr.write(f"{TABLE} is not current: run .venv/bin/python scripts/target_ops.py\n")
            return 1
        return 0
    os.makedirs(os.path.dirname(TABLE), exist_ok=True)
    with open(TABLE, "w", encoding="utf-8") as stream:
        stream.write(text)
    sys.stderr.write(f"wrote {TABLE}: {text.count(chr(10)) - 5} rows\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
