"""draft_export's report: every failure of the model, not only the first, as findings (its
data-dependent errors, the guards it added on dynamic dimensions, its fake-kernel problems)."""

from __future__ import annotations

import re

from .constraints import guard_clause, guard_message, parse_constraint_violation
from .data_dependent import HINTS, draft_data_dependent_code
from .entrypoint import Target
from .fake_kernels import normalize_op
from .findings import Finding, Location, located
from .locations import graph_node_location, user_stack_location
from .spec import in_input_names, with_declared_sources
from .text import clip
from .workspace import Workspace


def draft_findings(
    program,
    target: Target,
    workspace: Workspace,
    definitions: dict[str, Location],
    first: Finding,
    constraint_messages: list[str],
) -> list[Finding]:
    """The failures of `program._report` beside `first`, the export's own failure."""
    report = getattr(program, "_report", None)
    if report is None:
        return []
    from torch._logging.structured import INTERN_TABLE

    filenames = {index: name for name, index in INTERN_TABLE.items()}
    filenames.update(getattr(report, "str_to_filename", {}) or {})
    violation = first.violation or (constraint_messages[0] if constraint_messages else "")
    _, fixes, dims = parse_constraint_violation(violation) if violation else ("", [], {})
    dims = with_declared_sources(in_input_names(dims, target), target)
    findings = []
    # Operators whose fake kernel is missing or wrong: draft_export gives their outputs unbacked
    # sizes of its own making, so a guard on those sizes follows from the kernel and is not a
    # problem of its own (real torch fails on the kernel alone).
    broken_ops = {
        normalize_op(str((failure.data or {}).get("op", "")))
        for failure in report.failures
        if getattr(failure.failure_type, "name", "") in ("MISSING_FAKE_KERNEL", "MISMATCHED_FAKE_KERNEL")
    }
    if first.code in ("PT301", "PT302") and first.op:
        broken_ops.add(first.op)
    for failure in report.failures:
        kind = getattr(failure.failure_type, "name", str(failure.failure_type))
        data = failure.data or {}
        if kind == "DATA_DEPENDENT_ERROR":
            if broken_ops and _symbol_producers(program, str(data.get("expr") or "")) & broken_ops:
                continue
            where = user_stack_location(data.get("user_stack"), filenames, workspace)
            code = draft_data_dependent_code(data, program, filenames)
            expr = data.get("expr")
            message = f"Could not guard on data-dependent expression {expr}: {HINTS[code]}"
            findings.append(located(code, where, message, origin="draft_export"))
        elif kind == "GUARD_ADDED":
            where = user_stack_location(data.get("user_stack"), filenames, workspace)
            sources = in_input_names(data.get("symbol_to_sources") or {}, target)
            parts = guard_clause(str(data.get("expr")), sources, dims, fixes)
            if parts is None:
                continue
            clause, relevant = parts
            message = guard_message("Constraints violated: this code adds", [clause], relevant)
            findings.append(
                located("PT401", where, message, origin="draft_export", added_guard=clause, fixes=relevant, guards=[data])
            )
        elif kind in ("MISSING_FAKE_KERNEL", "MISMATCHED_FAKE_KERNEL"):
            op = normalize_op(str(data.get("op", "")))
            where = definitions.get(op) or graph_node_location(program, str(data.get("op", "")), workspace)
            if kind == "MISSING_FAKE_KERNEL":
                code = "PT301"
                message = (
                    f"operator {op.replace('::', '.')} has no fake (meta) kernel, so export cannot propagate shapes "
                    f'through it: register one with @torch.library.register_fake("{op}")'
                )
            else:
                code = "PT302"
                message = (
                    f"the fake kernel of {op.replace('::', '.')} disagrees with the real one: {data.get('reason', '')}".rstrip(
                        ": "
                    )
                )
            findings.append(located(code, where, clip(message), origin="draft_export"))
    return findings


def _symbol_producers(program, expr: str) -> set[str]:
    """The operators (`ns::op`) whose outputs bind the unbacked symbols of `expr`."""
    symbols = set(re.findall(r"\b(?:zuf|zf|u)\d+\b", expr))
    producers = set()
    try:
        for node in program.graph.nodes:
            bindings = node.meta.get("unbacked_bindings") or {}
            if any(str(symbol) in symbols for symbol in bindings):
                producers.add(normalize_op(str(node.target)))
    except Exception:  # noqa: BLE001 - a graph without the metadata drops nothing
        pass
    return producers
