"""The core ATen target: `run_decompositions()` with torch's default table; every ATen op left
that is not in the core set (torch tags those ops `core`) is PT701 on the user's line that
called it. Backends that take core ATen (ExecuTorch, most compilers) need a kernel of their own
for such an op."""

from __future__ import annotations

from .findings import Finding
from .lowering import CODES, finding_at, group_by_line, op_name, ops_phrase
from .workspace import Workspace

# ATen ops that are graph bookkeeping rather than computation (size reads, run-time asserts):
# not tagged core, yet every backend that takes core ATen accepts them.
BOOKKEEPING_PREFIXES = ("sym_", "_assert_", "sym_constrain_range", "_local_scalar_dense")


def non_core_nodes(program) -> list:
    """The call nodes of `program` whose op is an ATen op outside the core set."""
    import torch

    out = []
    for node in program.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        op = node.target
        if op.namespace != "aten" or torch.Tag.core in op.tags:
            continue
        if op._schema.name.removeprefix("aten::").startswith(BOOKKEEPING_PREFIXES):
            continue
        out.append(node)
    return out


def lower(program, target, workspace: Workspace, scratch: str) -> list[Finding]:
    """PT701 per user line with ops that do not decompose to core ATen."""
    decomposed = program.run_decompositions()
    findings = []
    for use in group_by_line(non_core_nodes(decomposed), workspace, op_name):
        message = (
            f"core ATen: {ops_phrase(use.ops)} {'is' if len(use.ops) == 1 else 'are'} not in the core ATen "
            "opset and run_decompositions() has no decomposition to it; a backend that takes core ATen "
            "(ExecuTorch, AOTInductor's consumers, custom compilers) needs its own kernel for it"
        )
        findings.append(finding_at(CODES["core-aten"], use, message, target, "core-aten"))
    return findings
