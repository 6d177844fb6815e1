"""One trace: torch.export.export on the entrypoint; when it fails, the failure classified and, when
draft_export can find more, its report merged in; when it succeeds, the PT601 check. Findings
come out placed in the user's files, each once."""

from __future__ import annotations

import os
import re

from .budget import DRAFT_BUDGET_SECONDS, time_budget
from .classify import classify
from .constraints import capture_constraint_messages, in_user_terms, symbol_names
from .divergence import divergence_findings
from .draft import draft_findings
from .entrypoint import Target
from .findings import Finding, Location, Related
from .locations import user_stack_location
from .patching import patched
from .spec import place_on_spec
from .text import clip
from .workspace import Workspace, binding_line

_DATA_DEPENDENT = ("PT101", "PT102", "PT103")


def trace(target: Target, workspace: Workspace, definitions: dict[str, Location], programs: list | None = None) -> list[Finding]:
    """The export's problems as findings; an empty list when it exported (the program is then
    appended to `programs`, when given)."""
    import torch

    guards: list[dict] = []
    try:
        with _capture_guards(guards):
            program = target.export_with(torch.export.export)
        if programs is not None:
            programs.append(program)
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - anything the user's forward raises is a finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        first = classify(exc, target, workspace, definitions)
    else:
        return divergence_findings(program, target, workspace)
    if first.constraint:
        first.guards = guards
    # A data-dependent failure raised inside installed code (torchvision's box ops under a
    # detection head) lands on the user's line that calls in; draft_export would spend its whole
    # budget re-running the library to find more failures there, on that same line.
    if first.collectable and not (first.related and first.code in _DATA_DEPENDENT):
        draft_messages: list[str] = []
        try:
            _skip_expression_provenance()
            with capture_constraint_messages(draft_messages), time_budget(DRAFT_BUDGET_SECONDS):
                program = target.export_with(torch.export.draft_export)
            drafted = draft_findings(program, target, workspace, definitions, first, draft_messages)
        except MemoryError:
            raise
        except BaseException:  # noqa: BLE001 - draft_export raises for some errors: the first stands alone
            drafted = None
        if drafted is not None:
            return _merge(first, drafted, target, workspace)
    if first.constraint:
        _place_on_guard(first, workspace)
        place_on_spec(first, target)
    return _finalize([first], target)


def _capture_guards(events: list[dict]):
    """Records the export's own `guard_added` structured-trace events (expression, user frames,
    symbol sources). draft_export cannot always say where a guard comes from (a `torch._check`
    in a `torch.cond` branch, pytorch #147991); the export that failed saw the guard being added."""

    def wrap(original):
        def dtrace_structured(name, *args, **kwargs):
            if name == "guard_added":
                metadata_fn = kwargs.get("metadata_fn") or (args[0] if args else None)
                try:
                    metadata = metadata_fn() if metadata_fn is not None else None
                except Exception:  # noqa: BLE001 - a record we cannot read is no record
                    metadata = None
                if isinstance(metadata, dict) and len(events) < 1000:
                    events.append({key: metadata.get(key) for key in ("expr", "user_stack", "symbol_to_sources")})
            return original(name, *args, **kwargs)

        return dtrace_structured

    return patched("torch.fx.experimental.symbolic_shapes", "dtrace_structured", wrap)


def _place_on_guard(finding: Finding, workspace: Workspace) -> None:
    """Puts a constraint violation without a place on the user's line that added a guard on a
    violated dimension, from the events `_capture_guards` recorded; the first such guard, as
    the exporter checks guards in the order they were added."""
    if finding.placed or not finding.guards:
        return
    try:
        from torch._logging.structured import INTERN_TABLE
    except Exception:
        return
    filenames = {index: name for name, index in INTERN_TABLE.items()}
    sources = {source for source in finding.dims if not source.startswith("?")}
    names = set(finding.dims.values())

    def dimension(source: str) -> str | None:
        match = re.search(r"\.size\(\)\[\d+\]$", source)
        return match.group(0) if match else None

    # A guard in a `torch.cond` branch is on the branch's own inputs (L['args'][3][0]): when no
    # guard names the violated source, one on the same dimension of a branch input stands in.
    exact = [e for e in finding.guards if not sources or set(_sources_of(e).values()) & sources]
    dims = {dimension(source) for source in sources} - {None}
    near = [e for e in finding.guards if e not in exact and {dimension(v) for v in _sources_of(e).values()} & dims]
    for event in exact + near:
        on = set(_sources_of(event).values())
        if not on:
            continue
        where = user_stack_location(event.get("user_stack"), filenames, workspace)
        if where is None or where.line is None:
            continue
        finding.place(Location(where.file, where.line))
        named = ", ".join(f"`{name}`" for name in sorted(names)) or ", ".join(sorted(on))
        guard = in_user_terms(str(event.get("expr")), symbol_names(_sources_of(event), finding.dims))
        finding.message = clip(f"this code adds the guard {guard} on dynamic dimension {named}: " + finding.message)
        return


def _sources_of(event: dict) -> dict[str, str]:
    """{symbol: source} of a recorded `guard_added` event."""
    return event.get("symbol_to_sources") or {}


def _skip_expression_provenance() -> None:
    """Stops draft_export's structured trace from recording `expression_created` events.

    Each symbolic-int operation logs one, with a Python and a C++ stack captured: on
    transformer_block.py 3,220 of them were 80% of draft_export's time (3.9 s of draft_export,
    0.97 s without them; bench/README.md). They only feed provenance in the trace file written
    for tlparse; the report this worker reads (`ep._report`) does not use them. Each job is its
    own fork, so the patch dies with the job.
    """
    import torch.fx.experimental.sym_node as sym_node

    original = sym_node.dtrace_structured
    if getattr(original, "_pt2lsp_skips_expressions", False):
        return

    def dtrace_structured(name, *args, **kwargs):
        if name == "expression_created":
            return None
        return original(name, *args, **kwargs)

    dtrace_structured._pt2lsp_skips_expressions = True
    sym_node.dtrace_structured = dtrace_structured


def _merge(first: Finding, drafted: list[Finding], target: Target, workspace: Workspace) -> list[Finding]:
    """The export's own error and draft_export's findings, without saying one thing twice."""
    if first.constraint:
        # The violation carries no line; draft_export's added guards say where it comes from.
        guards = [d for d in drafted if d.added_guard]
        if guards:
            return _finalize(guards + [d for d in drafted if not d.added_guard], target)
        _place_on_guard(first, workspace)
        place_on_spec(first, target)
    if first.example_size:
        # draft_export retries with Dim.AUTO and reports the specialization again as added
        # guards; the example's size is the one cause.
        drafted = [d for d in drafted if not d.added_guard]
    where = (first.file, first.line)
    # On the line of the export's error, its own classification wins over draft_export's.
    rest = [d for d in drafted if (d.file, d.line) != where]
    # draft_export reports the export's own error again; without a place of its own it would
    # land on the `model` line as a second copy of the same failure.
    rest = [d for d in rest if not (not d.placed and (d.code, d.message) == (first.code, first.message))]
    return _finalize([first] + rest, target)


def _finalize(findings: list[Finding], target: Target) -> list[Finding]:
    """Drops duplicates by (code, file, line); a finding torch gave no place in
    the user's files goes on the `model` binding, the entrypoint it is about."""
    seen = set()
    out = []
    for finding in findings:
        if not finding.placed:
            file, name = target.model_binding or (None, None)
            if file is None:
                continue
            finding.place(Location(os.path.abspath(file), binding_line(file, name) or 1))
        key = (finding.code, finding.file, finding.line)
        if key in seen:
            continue
        seen.add(key)
        _relate_entrypoint(finding, target)
        out.append(finding)
    return out


def _relate_entrypoint(finding: Finding, target: Target) -> None:
    """The entrypoint's `model =` line as a related location of a finding placed elsewhere:
    the export that reaches the problem starts there."""
    file, name = target.model_binding or (None, None)
    line = binding_line(file, name) if file else None
    if line is None:
        return
    file = os.path.abspath(file)
    if (finding.file, finding.line) == (file, line):
        return
    if any((entry.file, entry.line) == (file, line) for entry in finding.related):
        return
    finding.related.append(Related(file, line, 1, f"the entrypoint `{name}` that is exported"))
