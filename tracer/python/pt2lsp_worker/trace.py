"""One trace: torch.export.export on the entrypoint; when it fails, the failure classified and, when
draft_export can find more, its report merged in; when it succeeds, the PT601 check. Findings
come out placed in the user's files, each once."""

from __future__ import annotations

import inspect
import os
import re
import sys
import traceback

from .budget import DRAFT_BUDGET_SECONDS, time_budget
from .classify import classify
from .constraints import (
    capture_constraint_messages,
    guard_clause,
    guard_message,
    in_user_terms,
    on_dimensions,
    restricts,
    symbol_names,
)
from .divergence import divergence_findings
from .draft import draft_findings
from .entrypoint import Target
from .expressions import as_python
from .findings import Finding, Location, Related, frame_location
from .fixed_state import name_fixed_state
from .leaked_constants import leak_findings
from .library_conditions import user_choice
from .locations import deepest_user_frame, installed_package, installed_path, library_path, user_stack_location
from .made_static import made_static_findings
from .passed import passed_lines
from .patching import patched
from .spec import declared_sources, place_on_spec, with_declared_sources
from .text import clip
from .workspace import Workspace, binding_line

_DATA_DEPENDENT = ("PT101", "PT102", "PT103")


def trace(
    target: Target,
    workspace: Workspace,
    definitions: dict[str, Location],
    programs: list | None = None,
    passed: list | None = None,
) -> list[Finding]:
    """The export's problems as findings; an empty list when it exported (the program is then
    appended to `programs`, and the user's lines it ran to `passed` (see `passed.passed_lines`),
    when given)."""
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
        if passed is not None:
            passed.extend(passed_lines(program, guards, workspace))
        # A program holding a tensor of the trace cannot compute what eager does: that finding
        # names the line and the cause, which the comparison with eager cannot.
        return (
            leak_findings(program, workspace)
            or divergence_findings(program, target, workspace)
            or made_static_findings(
                program, target, guards, lambda event: _guard_site(event, _interned_filenames() or {}, workspace)
            )
        )
    if first.constraint:
        first.guards = guards
        recorded = None if first.example_size else _recorded_guard_findings(first, target, workspace)
        if recorded:
            return _finalize(recorded, target)
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
        _place_on_guard(first, target, workspace)
        place_on_spec(first, target)
    return _finalize([first], target)


def _capture_guards(events: list[dict]):
    """Records the export's own `guard_added` structured-trace events (expression, user frames,
    symbol sources) and the Python frames that added each. draft_export cannot always say where
    a guard comes from (a `torch._check` in a `torch.cond` branch, pytorch #147991); the export
    that failed saw the guard being added."""
    import torch

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep

    def wrap(original):
        def dtrace_structured(name, *args, **kwargs):
            if name == "guard_added":
                metadata_fn = kwargs.get("metadata_fn") or (args[0] if args else None)
                try:
                    metadata = metadata_fn() if metadata_fn is not None else None
                except Exception:  # noqa: BLE001 - a record we cannot read is no record
                    metadata = None
                if isinstance(metadata, dict) and len(events) < 1000:
                    event = {key: metadata.get(key) for key in ("expr", "user_stack", "symbol_to_sources")}
                    event["python_stack"] = _python_stack(torch_dir)
                    event["hints"] = _example_sizes(sys._getframe(1), event["symbol_to_sources"])
                    events.append(event)
            return original(name, *args, **kwargs)

        return dtrace_structured

    return patched("torch.fx.experimental.symbolic_shapes", "dtrace_structured", wrap)


def _example_sizes(caller, symbols) -> dict[str, int]:
    """{symbol: the example's size} for a guard's symbols, from the shape environment adding it
    (the caller of `dtrace_structured` is a `ShapeEnv` method); empty where it is not one."""
    shape_env = caller.f_locals.get("self") if caller is not None else None
    values = getattr(shape_env, "var_to_val", None)
    if not isinstance(values, dict) or not symbols:
        return {}
    sizes = {}
    for symbol, value in values.items():
        if str(symbol) in symbols:
            try:
                sizes[str(symbol)] = int(value)
            except (TypeError, ValueError):
                continue
    return sizes


def _python_stack(torch_dir: str) -> list[traceback.FrameSummary] | None:
    """The Python frames running when a guard is added, outermost first, without torch's own;
    None when Dynamo is interpreting code at that point (strict export, a `torch.cond` branch):
    the user's code then runs symbolically and its lines are not on the Python stack.

    Non-strict export runs `forward` for real, and torch's `user_stack` for the guard then
    holds torch's frames only: a guard added by an installed library (timm's `patch_embed`
    asserting the image size) is found here. Source lines are not read: a guard costs a walk
    of the stack."""
    frames = []
    frame = sys._getframe(2)
    interpreter = os.path.join(torch_dir, "_dynamo", "symbolic_convert.py")
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == interpreter:
            return None
        if not filename.startswith(torch_dir):
            frames.append(traceback.FrameSummary(filename, frame.f_lineno, frame.f_code.co_name, lookup_line=False))
        frame = frame.f_back
    frames.reverse()
    return frames


def _place_on_guard(finding: Finding, target: Target, workspace: Workspace) -> None:
    """Puts a constraint violation without a place on the user's line that added a guard on a
    violated dimension, from the events `_capture_guards` recorded; the first such guard, as
    the exporter checks guards in the order they were added."""
    filenames = _interned_filenames()
    if finding.placed or not finding.guards or filenames is None:
        return
    finding.dims = with_declared_sources(finding.dims, target)
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
    in_library = None
    # torch's own user stack first: in a `torch.cond` branch the Python stack stops at the
    # `torch.cond` call, where a "near" event's user stack has the branch's line.
    candidates = exact + near
    candidates.sort(key=lambda event: user_stack_location(event.get("user_stack"), filenames, workspace) is None)
    for event in candidates:
        on = set(_sources_of(event).values())
        if not on:
            continue
        named = on_dimensions(sorted(names) or sorted(on))
        guard = as_python(in_user_terms(str(event.get("expr")), symbol_names(_sources_of(event), finding.dims)))
        site = _guard_site(event, filenames, workspace)
        if isinstance(site, Location):
            finding.place(site)
            finding.message = clip(f"this code adds the guard {guard} {named}: " + finding.message)
            return
        if in_library is None and site:
            in_library = (site, guard, named)
    if in_library is not None:
        # Installed code that the user cannot edit: the finding stays on their declaration of
        # the dimension (place_on_spec) and says which library line forces it.
        related, guard, named = in_library
        finding.related.extend(related)
        who, choice = _installed_code(related[-1]), _library_choice(related, target)
        said = f"{who} adds the guard {guard} {named}" + (f"; {choice}" if choice else "")
        finding.message = clip(f"{said}: {finding.message}")


def _guard_site(event: dict, filenames: dict, workspace: Workspace) -> Location | list[Related]:
    """Where a recorded guard was added: the user's line (torch's user stack, else the Python
    stack), or, when only installed code added it, that code's frames as related locations."""
    where = user_stack_location(event.get("user_stack"), filenames, workspace)
    python_stack = event.get("python_stack") or []
    if where is None or where.line is None:
        frame = deepest_user_frame(python_stack, workspace)
        where = frame_location(frame) if frame is not None else None
    if where is not None and where.line is not None:
        return Location(where.file, where.line)
    return library_path(python_stack, workspace, "this line adds the guard")


def _recorded_guard_findings(first: Finding, target: Target, workspace: Workspace) -> list[Finding] | None:
    """A constraint violation's findings from the guards the failed export recorded, without
    running draft_export: each guard on a violated dimension, on the line that added it. The
    export traced the whole model before checking the constraints, so there is nothing further
    for draft_export to find; on models with dynamic height and width it spent 10-20 s saying
    the same. None when a violated dimension has no recorded guard with a known place (a guard
    in a `torch.cond` branch is on the branch's inputs; strict export names sources otherwise):
    draft_export is asked then."""
    filenames = _interned_filenames()
    dims = with_declared_sources(first.dims, target)
    violated = set(dims)
    if filenames is None or not violated or any(source.startswith("?") for source in violated):
        return None
    if any(event.get("python_stack") is None for event in first.guards):
        # Some code ran symbolically (a `torch.cond` branch): its guards surface again on the
        # outer input at the call (`torch.cond(...)`), where the Python stack points, not at
        # the line in the branch that adds them.
        return None
    covered: set[str] = set()
    sited: list[tuple[Finding, Location | list[Related]]] = []
    # The sources declared with a violated `Dim` (`x_enc` and `x_mark_enc` both `enc_len`) are
    # one size: a guard that they are equal is the declaration itself.
    violated_names = set(dims.values())
    together = violated | {source for source, name in declared_sources(target).items() if name in violated_names}
    for event in first.guards:
        on = set(_sources_of(event).values()) & violated
        # torch lists a dimension as violated for the guards that cut its range, not for a
        # relation its example's other sizes satisfy whatever its size.
        if on and not restricts(str(event.get("expr")), _sources_of(event), together, event.get("hints") or {}):
            continue
        parts = guard_clause(str(event.get("expr")), _sources_of(event), dims, first.fixes) if on else None
        if parts is None:
            continue
        site = _guard_site(event, filenames, workspace)
        if not site:
            return None
        clause, relevant = parts
        message = guard_message("Constraints violated: this code adds", [clause], relevant)
        sited.append((Finding("PT401", message, added_guard=clause, fixes=relevant, guards=[event]), site))
        covered |= on
    if covered != violated:
        return None
    return _by_site(sited, target)


def _place_drafted_guards(drafted: list[Finding], first: Finding, target: Target, workspace: Workspace) -> list[Finding]:
    """draft_export's added guards that its report could not place (installed code added them:
    its user stack holds torch's frames only) found among the guards the failed export recorded,
    by expression over the same sources, and placed from their Python frames."""
    filenames = _interned_filenames()
    if filenames is None:
        return drafted
    recorded = {_over_sources(event): event for event in reversed(first.guards)}
    out: list[Finding] = []
    sited: list[tuple[Finding, Location | list[Related]]] = []
    for finding in drafted:
        if finding.placed or not finding.added_guard:
            out.append(finding)
            continue
        event = recorded.get(_over_sources(finding.guards[0])) if finding.guards else None
        site = _guard_site(event, filenames, workspace) if event is not None else []
        if site:
            sited.append((finding, site))
        else:
            place_on_spec(finding, target)
            out.append(finding)
    return _by_site(sited, target) + out


def _by_site(sited: list[tuple[Finding, Location | list[Related]]], target: Target) -> list[Finding]:
    """Added-guard findings, one per place: those at the same user line as one finding naming
    each guard; those that only installed code adds as one finding on the `dynamic_shapes`
    declaration they are about (not on the `model` line), naming the library line that adds
    them, with the library frames as related locations."""
    at_line: dict[tuple[str, int], list[Finding]] = {}
    in_library: list[tuple[Finding, list[Related]]] = []
    for finding, site in sited:
        if isinstance(site, Location):
            finding.place(site)
            at_line.setdefault((site.file, site.line), []).append(finding)
        else:
            in_library.append((finding, site))
    out = []
    for group in at_line.values():
        kept = group[0]
        if len(group) > 1:
            kept.fixes = _distinct(fix for finding in group for fix in finding.fixes)
            clauses = _distinct(finding.added_guard for finding in group)
            kept.message = guard_message("Constraints violated: this code adds", clauses, kept.fixes)
        out.append(kept)
    if in_library:
        kept, related = in_library[0]
        for _, more in in_library:
            kept.related.extend(entry for entry in more if entry not in kept.related)
        kept.fixes = _distinct(fix for finding, _ in in_library for fix in finding.fixes)
        clauses = _distinct(finding.added_guard for finding, _ in in_library)
        # The deepest frame of the first guard names the code; any frame may hold the choice.
        who, choice = _installed_code(related[-1]), _library_choice(kept.related, target)
        kept.message = guard_message(f"Constraints violated: {who} adds", clauses, kept.fixes, choice)
        # On the key of the input whose dimension is guarded (`"x": {2: height}`).
        sources = [source for finding, _ in in_library for source in _sources_of(finding.guards[0]).values()]
        keys = {match.group(1) for match in (re.match(r"L\['([^']+)'\]", source) for source in sources) if match}
        place_on_spec(kept, target, keys=sorted(keys))
        out.insert(0, kept)
    return out


def _installed_code(deepest: Related) -> str:
    """How a message names the installed code that adds a guard, by the frame that adds it:
    `installed code (timm/layers/patch_embed.py:124)`."""
    return f"installed code ({installed_path(deepest.file)}:{deepest.line})"


def _library_choice(related: list[Related], target: Target) -> str:
    """What the user can choose so that installed code does not add its guard: a condition
    around the guard's line, or around a call on the way to it, that is a parameter of the
    model's `forward` or an attribute of a module (library_conditions)."""
    try:
        parameters = set(inspect.signature(target.model.forward).parameters)
    except (TypeError, ValueError, AttributeError):
        parameters = set()
    for entry in reversed(related):
        if installed_package(entry.file) is None:
            continue
        choice = user_choice(entry.file, entry.line, parameters)
        if choice:
            return choice
    return ""


def _distinct(items) -> list:
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def _interned_filenames() -> dict | None:
    """{index: file name} of the structured trace's interned file names (stacks name files by
    index); None without torch's structured logging."""
    try:
        from torch._logging.structured import INTERN_TABLE
    except Exception:
        return None
    return {index: name for name, index in INTERN_TABLE.items()}


def _over_sources(event: dict) -> str:
    """A guard's expression over its sources (`Eq(L['x'].size()[2], 224)`): symbols are
    numbered afresh by each export, sources are not."""
    return in_user_terms(str(event.get("expr")), _sources_of(event))


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
            guards = _place_drafted_guards(guards, first, target, workspace)
            return _finalize(guards + [d for d in drafted if not d.added_guard], target)
        _place_on_guard(first, target, workspace)
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
        name_fixed_state(finding, target)
        _relate_entrypoint(finding, target)
        out.append(finding)
    return out


def _relate_entrypoint(finding: Finding, target: Target) -> None:
    """The entrypoint's `model =` line as a related location of a finding placed elsewhere:
    the export that reaches the problem starts there. For an entrypoint table that is its
    `model` line in `pyproject.toml`, as the static pass names it, not the line that binds the
    name its expression starts from."""
    if target.table_model is not None:
        file, line, table = target.table_model
        message = f"the entrypoint `{table}` that is exported"
    else:
        file, name = target.model_binding or (None, None)
        line = binding_line(file, name) if file else None
        message = f"the entrypoint `{name}` that is exported"
    if line is None:
        return
    file = os.path.abspath(file)
    if (finding.file, finding.line) == (file, line):
        return
    if any((entry.file, entry.line) == (file, line) for entry in finding.related):
        return
    finding.related.append(Related(file, line, 1, message))
