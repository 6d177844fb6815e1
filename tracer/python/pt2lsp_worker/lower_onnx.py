"""The ONNX target: `torch.onnx.export` of the exported program (the dynamo exporter). The
exporter stops at the first op it cannot translate; before reporting, every op of its own
decomposed program that its registry has no ONNX function for is found too, so all of them land
on their lines at once (PT703)."""

from __future__ import annotations

import os
import re

from .findings import Finding
from .lowering import (
    CODES,
    OpUse,
    TargetUnavailable,
    exception_text,
    finding_at,
    group_by_line,
    node_place,
    op_name,
    ops_phrase,
    place_on_entrypoint,
    raise_if_out_of_memory,
)
from .workspace import Workspace

CODE = CODES["onnx"]

# The ConversionError's text names the node it failed on:
# "Error when translating node %histc : [num_users=1] = call_function[target=torch.ops.aten.histc.default](...)".
_FAILED_NODE = re.compile(r"Error when translating node %(\w+)\b.*?target=([\w.:]+)", re.S)


def require() -> None:
    """The packages the dynamo ONNX exporter imports."""
    missing = []
    for package in ("onnx", "onnxscript"):
        try:
            __import__(package)
        except ImportError:
            missing.append(package)
    if missing:
        raise TargetUnavailable(
            f"the onnx target needs {' and '.join(missing)} in the traced interpreter (pip install {' '.join(missing)})"
        )


def export_onnx(program, target, path: str | None):
    """`torch.onnx.export` of `program` (written to `path` when given), its output quiet; the
    weights inside the one file (a model over ONNX's 2 GB limit fails here, and says so)."""
    import torch

    return torch.onnx.export(
        program,
        tuple(target.args),
        path,
        kwargs=target.kwargs or None,
        dynamo=True,
        verbose=False,
        report=False,
        external_data=False,
    )


def lower(program, target, workspace: Workspace, scratch: str) -> list[Finding]:
    require()
    try:
        export_onnx(program, target, os.path.join(scratch, "model.onnx"))
    except Exception as exc:  # noqa: BLE001 - the exporter's error is the finding
        raise_if_out_of_memory(exc)
        return conversion_findings(program, target, workspace, exc)
    return []


def conversion_findings(program, target, workspace: Workspace, exc: BaseException) -> list[Finding]:
    """The failed node's finding (with the exporter's innermost reason), then one per other user
    line holding ops the ONNX registry cannot translate."""
    text = "\n".join(str(error) for error in _chain(exc))
    failed = _FAILED_NODE.search(text)
    reason = exception_text(exc)
    findings: list[Finding] = []
    seen: set[tuple] = set()
    if failed:
        node = _node_of(program, failed.group(1), failed.group(2))
        place, related = node_place(node, workspace) if node is not None else (None, [])
        op = failed.group(2).removeprefix("torch.ops.")
        use = OpUse(place, related, [op], 1)
        findings.append(finding_at(CODE, use, f"ONNX: `{op}` cannot be converted: {reason}", target, "onnx"))
        if place is not None:
            seen.add((place.file, place.line))
    for use in _unregistered_ops(program, workspace):
        key = (use.place.file, use.place.line) if use.place else None
        if key in seen:
            continue
        seen.add(key)
        message = f"ONNX: no ONNX function is registered for {ops_phrase(use.ops)} (torch.onnx.export, dynamo exporter)"
        findings.append(finding_at(CODE, use, message, target, "onnx"))
    if not findings:
        finding = Finding(CODE, f"ONNX: torch.onnx.export failed: {reason}", origin="target:onnx")
        place_on_entrypoint(finding, target)
        findings.append(finding)
    return findings


def _chain(exc: BaseException) -> list[BaseException]:
    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 20:
        chain.append(chain[-1].__cause__)
    return chain


def _node_of(program, name: str, op: str):
    """The node of `program` the exporter failed on: by the op it calls (the exporter's own
    decomposed graph renames nodes), else by name."""
    by_name = None
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        if f"torch.ops.{op_name(node)}" == op or op_name(node) == op.removeprefix("torch.ops."):
            return node
        if node.name == name:
            by_name = node
    return by_name


def _unregistered_ops(program, workspace: Workspace) -> list[OpUse]:
    """The ops of the exporter's decomposed program that its registry has no function for,
    grouped by user line; empty when torch's private exporter API is not what this expects."""
    try:
        import torch
        from torch.onnx._internal.exporter import _core, _registration

        registry = _registration.ONNXRegistry.from_torchlib()
        decomposed = _core._prepare_exported_program_for_export(program, registry=registry)
        nodes = [
            node
            for node in decomposed.graph.nodes
            if node.op == "call_function"
            and isinstance(node.target, torch._ops.OpOverload)
            and not registry.is_registered(node.target)
        ]
    except Exception:  # noqa: BLE001 - the extra search is a courtesy; the failure is reported anyway
        return []
    return group_by_line(nodes, workspace, op_name)
