"""The ExecuTorch target: `to_edge_transform_and_lower` with the XNNPACK partitioner, then
`to_executorch()`. An op outside core ATen stops the edge dialect (each one is PT705 on its line,
all at once); an op of the final program with no kernel in ExecuTorch's portable library
(`kernels/portable/functions.yaml` of the installed package) is PT705 too; what XNNPACK does not
take runs on portable kernels, slower: PT706, a warning with the share of the graph it holds.

ExecuTorch does not declare the torch it was built with; an import that fails (a compiled
extension built against another torch) makes the target unavailable, with both versions named and
the release that pairs with the installed torch: the one the package requires, should a release
declare it, else the one measured (`MEASURED_PAIRS`)."""

from __future__ import annotations

import os
import re

from .findings import Finding
from .lower_core import non_core_nodes
from .lowering import (
    CODES,
    SLOW_CODE,
    TargetUnavailable,
    exception_text,
    finding_at,
    group_by_line,
    op_name,
    ops_phrase,
    place_on_entrypoint,
    raise_if_out_of_memory,
)
from .workspace import Workspace

CODE = CODES["executorch"]

# Each ExecuTorch release and the torch release (major.minor) it was measured to lower and run
# with, oldest first: the package declares no torch requirement, and each release is built against
# one torch. Measured: executorch 1.5.1 with torch 2.15.0 (the fixtures of fixtures/targets/ and
# bench/targets.py; scripts/test.sh installs that pair). A new pair is a new row.
MEASURED_PAIRS: tuple[tuple[str, str], ...] = (("1.5.1", "2.15"),)

# Call targets that are the program's plumbing, not ops a kernel runs.
_PLUMBING = ("getitem", "executorch_call_delegate", "sym_size", "_assert", "alloc", "memory.", "run_decompositions")


def require():
    """The ExecuTorch modules this target uses; unavailable when they do not import."""
    import torch

    try:
        import executorch
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
        from executorch.exir import to_edge_transform_and_lower
    except ImportError as exc:
        import importlib.metadata as metadata

        try:
            distribution = metadata.distribution("executorch")
        except Exception:  # noqa: BLE001 - not installed at all
            raise TargetUnavailable(
                "the executorch target needs the executorch package in the traced interpreter: "
                + pairing(None, torch.__version__, None)
            ) from None
        version = distribution.version
        raise TargetUnavailable(
            f"executorch {version} does not import with torch {torch.__version__} ({exception_text(exc)}): "
            + pairing(version, torch.__version__, distribution.requires)
        ) from None
    del executorch
    return to_edge_transform_and_lower, XnnpackPartitioner


def pairing(installed: str | None, torch_version: str, requires: list[str] | None) -> str:
    """Which executorch to install for `torch_version`: the torch requirement the installed
    release declares, if it declares one; else the release measured with that torch
    (`MEASURED_PAIRS`), or, with none measured, the pairs that are."""
    for requirement in requires or []:
        # `torch==2.15.*`, `torch (>=2.15,<2.16)`; not one under a marker (an extra's).
        if ";" not in requirement and re.fullmatch(r"\s*torch\s*(\(?\s*[<>=!~].*)?", requirement):
            return (
                f"executorch {installed} requires {requirement.strip()}; install that torch, "
                f"or the executorch that requires torch {torch_version}"
            )
    release = torch_version.split("+")[0]
    minor = ".".join(release.split(".")[:2])
    measured = [release for release, paired in MEASURED_PAIRS if paired == minor]
    if measured:
        return (
            f"executorch {measured[-1]} pairs with torch {minor} (measured; executorch declares no torch "
            f"requirement): pip install --no-deps executorch=={measured[-1]}, so that pip keeps your torch"
        )
    known = ", ".join(f"executorch {release} with torch {paired}" for release, paired in MEASURED_PAIRS)
    return (
        f"no executorch release is measured with torch {minor} (measured: {known}; executorch declares no torch "
        f"requirement): install the executorch built against torch {minor}, or a measured pair in a second environment"
    )


def portable_ops() -> set[str] | None:
    """The ops of ExecuTorch's portable kernel library (`cumsum.out`), from the installed
    package's own `functions.yaml`; None when it is not there."""
    try:
        import executorch.kernels.portable as portable
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(portable.__file__), "functions.yaml")
    try:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
    except OSError:
        return None
    ops = set()
    for line in text.splitlines():
        if line.startswith("- op:"):
            ops.add(line.split(":", 1)[1].strip())
    return ops


def lower(program, target, workspace: Workspace, scratch: str) -> list[Finding]:
    to_edge_transform_and_lower, partitioner = require()
    non_core = non_core_nodes(program.run_decompositions())
    if non_core:
        return [
            finding_at(
                CODE,
                use,
                f"ExecuTorch: {ops_phrase(use.ops)} {'is' if len(use.ops) == 1 else 'are'} not in core ATen, "
                "so the edge dialect refuses the program (to_edge); ExecuTorch has no kernel for it",
                target,
                "executorch",
            )
            for use in group_by_line(non_core, workspace, op_name)
        ]
    try:
        edge = to_edge_transform_and_lower(program, partitioner=[partitioner()])
    except Exception as exc:  # noqa: BLE001 - the lowering's error is the finding
        raise_if_out_of_memory(exc)
        return [_whole(f"ExecuTorch: to_edge_transform_and_lower failed: {exception_text(exc)}", target)]
    findings = not_delegated(edge, target, workspace)
    try:
        final = edge.to_executorch()
    except Exception as exc:  # noqa: BLE001
        raise_if_out_of_memory(exc)
        return findings + [_whole(f"ExecuTorch: to_executorch failed: {exception_text(exc)}", target)]
    with open(os.path.join(scratch, "model.pte"), "wb") as stream:
        final.write_to_file(stream)
    missing = without_portable_kernel(final, target, workspace)
    # An op with no kernel at all is that line's problem; being slow is not.
    places = {(finding.file, finding.line) for finding in missing}
    return missing + [finding for finding in findings if (finding.file, finding.line) not in places]


def _whole(message: str, target) -> Finding:
    finding = Finding(CODE, message, origin="target:executorch")
    place_on_entrypoint(finding, target)
    return finding


def _is_op(node) -> bool:
    return node.op == "call_function" and not any(part in str(node.target) for part in _PLUMBING)


def not_delegated(edge, target, workspace: Workspace) -> list[Finding]:
    """PT706 per user line whose ops XNNPACK did not take, with their share of the graph."""
    program = edge.exported_program()
    left = [node for node in program.graph.nodes if _is_op(node)]
    delegated = 0
    for module in program.graph_module.modules():
        original = getattr(module, "original_module", None)
        if original is not None:
            delegated += sum(1 for node in original.graph.nodes if _is_op(node))
    total = delegated + len(left)
    if not left or not total:
        return []
    findings = []
    for use in group_by_line(left, workspace, op_name):
        share = 100.0 * use.nodes / total
        message = (
            f"ExecuTorch: XNNPACK does not take {ops_phrase(use.ops)}: {use.nodes} of the graph's {total} ops "
            f"({share:.0f}%) run on portable kernels instead, which are slower"
        )
        if use.nodes < len(left):
            message += f"; {len(left)} of {total} ops ({100.0 * len(left) / total:.0f}%) are not delegated in all"
        findings.append(finding_at(SLOW_CODE, use, message, target, "executorch"))
    return findings


def without_portable_kernel(final, target, workspace: Workspace) -> list[Finding]:
    """PT705 per user line calling an op that has no kernel in the portable library."""
    known = portable_ops()
    if known is None:
        return []
    missing = []
    for node in final.exported_program().graph.nodes:
        if not _is_op(node):
            continue
        name = op_name(node)
        if not name.startswith("aten."):
            continue
        if name.removeprefix("aten.") not in known:
            missing.append(node)
    return [
        finding_at(
            CODE,
            use,
            f"ExecuTorch: {ops_phrase(use.ops)} {'has' if len(use.ops) == 1 else 'have'} no kernel in ExecuTorch's "
            "portable library: the program loads only in a runtime built with a kernel of your own for it",
            target,
            "executorch",
        )
        for use in group_by_line(missing, workspace, op_name)
    ]
