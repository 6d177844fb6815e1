"""draft_export's report: every failure of the model, not only the first, as findings (its
data-dependent errors, the guards it added on dynamic dimensions, its fake-kernel problems)."""

from __future__ import annotations

import re

from .constraints import in_user_terms, parse_constraint_violation, symbol_names
from .data_dependent import HINTS, draft_data_dependent_code
from .entrypoint import Target
from .fake_kernels import normalize_op
from .findings import Finding, Location, located
from .locations import graph_node_location, user_stack_location
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
            sources = data.get("symbol_to_sources") or {}
            names = sorted({dims[s] for s in sources.values() if s in dims})
            if dims and not names and len(set(dims.values())) == 1:
                # One dim violated: strict export names sources differently (L['flat_args'][0]).
                names = sorted(set(dims.values()))
            if dims and not names:
                continue  # a guard on a dimension the violation is not about (Dim.AUTO)
            named = ", ".join(f"`{name}`" for name in names) or ", ".join(sorted(set(sources.values())))
            # The guard in the user's `Dim` names (`Ne(16*seq, 32)`, not `Ne(16*s27, 32)`).
            guard = in_user_terms(str(data.get("expr")), symbol_names(sources, dims))
            message = f"Constraints violated: this code adds the guard {guard} on dynamic dimension {named}"
            relevant = [fix for fix in fixes if fix.dim in names or fix.root in names or not names]
            # A derived fix (`b = 2*_b`) comes with its root's definition (`_b = Dim(...)`).
            roots = {fix.root for fix in relevant if fix.kind == "derived"}
            relevant += [fix for fix in fixes if fix.dim in roots and fix not in relevant]
            if relevant:
                message += "; suggested fix: " + "; ".join(fix.text for fix in relevant)
            findings.append(located("PT401", where, clip(message), origin="draft_export", added_guard=True, fixes=relevant))
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
