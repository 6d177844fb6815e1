"""PT406 from the exported program: a dimension declared `Dim.AUTO` that export made static.

`Dim.AUTO` lets the exporter choose, and where the code needs one size it chooses a static
dimension without a word (measured, torch 2.15: `x.reshape(2, 16)` on an AUTO batch exports
with `range_constraints == {}`). The program says what it chose: the input's size there is a
number, or a symbol whose range holds one value. The finding lands on the `dynamic_shapes` key
of the input, where the user declared the dimension; the static pass names the line that
fixes it.
"""

from __future__ import annotations

import inspect
import re

from .entrypoint import Target
from .examples import inputs_named, place_on_examples
from .findings import Finding
from .shape_vars import named_args
from .spec import place_on_spec


def is_auto(value) -> bool:
    """`Dim.AUTO` (a `_DimHint` of type AUTO), not `Dim.DYNAMIC` or a named `Dim`."""
    return type(value).__name__ == "_DimHint" and str(getattr(value, "type", "")).endswith("AUTO")


def declared_auto(spec, parameters: list[str]) -> list[tuple[str, int]]:
    """(parameter, dimension) of every `Dim.AUTO` in a `dynamic_shapes` given per parameter:
    a dict keyed by name or a tuple in `parameters`' order, each entry a `{index: dim}` dict or
    a sequence of dims. Nested inputs (a tuple of tensors) are left out."""
    if isinstance(spec, dict):
        entries = list(spec.items())
    elif isinstance(spec, (list, tuple)):
        entries = list(zip(parameters, spec, strict=False))
    else:
        return []
    found = []
    for name, entry in entries:
        if isinstance(entry, dict):
            dims = [(index, dim) for index, dim in entry.items() if isinstance(index, int)]
        elif isinstance(entry, (list, tuple)):
            dims = list(enumerate(entry))
        else:
            continue
        found.extend((name, index) for index, dim in dims if is_auto(dim))
    return found


def declared_shape_vars(spec) -> list[tuple[str, int, str]]:
    """(parameter, dimension, name) of every `ShapeVar` a `@dynamic_spec` spec declares (a
    `ShapesSpec`, a `ParamsSpec` or a dict of `TensorSpec`s; see `shape_vars`)."""
    found = []
    for parameter, tensor_spec in named_args(spec).items():
        try:
            dims = list(tensor_spec or [])
        except TypeError:
            continue
        for index, dim in enumerate(dims):
            name = getattr(dim, "name", None)
            if type(dim).__name__ == "ShapeVar" and isinstance(name, str):
                found.append((parameter, index, name))
    return found


def made_static_findings(program, target: Target, guards: list[dict], site_of) -> list[Finding]:
    """A PT406 finding for each `Dim.AUTO` input dimension the program holds at one size, on the
    line whose guard fixed it (`site_of(event)`, the export's recorded `guard_added` events),
    else on the dimension's `dynamic_shapes` key; and for each `ShapeVar` of `@dynamic_spec`
    whose range the program narrowed to one size (`shape_var_findings`)."""
    try:
        parameters = list(inspect.signature(target.model.forward).parameters)
        bound = inspect.signature(target.model.forward).bind(*target.args, **(target.kwargs or {}))
    except (TypeError, ValueError, AttributeError):
        return []
    declared = declared_auto(target.dynamic_shapes, parameters)
    sizes = _input_sizes(program, list(bound.arguments)) if declared or _spec_of(target) is not None else {}
    findings = shape_var_findings(program, target, sizes, guards, site_of)
    for name, index in declared:
        shape = sizes.get(name)
        if shape is None or index >= len(shape):
            continue
        size = _one_value(program, shape[index])
        if size is None:
            continue
        label = f"dimension {index} of `{name}`, declared `Dim.AUTO`,"
        outcome = f"the exported program accepts only size {size} there (`range_constraints` has no range for it)"
        example = getattr(bound.arguments.get(name), "shape", None)
        if example is not None and index < len(example) and example[index] <= 1:
            # The exporter specializes an example of size 0 or 1: the example is the cause.
            finding = Finding(
                "PT406",
                f"the example for `{name}` has size {example[index]} in {label} which the exporter "
                f"specializes: {outcome}; give the example a size of at least 2",
            )
            place_on_examples(finding, target, inputs_named(target, name))
            findings.append(finding)
            continue
        site = _fixing_site(guards, f"L['{name}'].size()[{index}]", site_of)
        if site is not None:
            finding = Finding(
                "PT406",
                f"this line fixes {label} to {size}, and export made it static: {outcome}; take "
                "the sizes from the input (`-1`, `x.shape[0]`), or declare the dimension static (`None`)",
            )
            finding.place(site)
        else:
            finding = Finding(
                "PT406",
                f"export made {label} static: {outcome}; a line of `forward` needs that one size "
                "(pt2lsp's static check names it where it can), or declare the dimension static (`None`)",
            )
            place_on_spec(finding, target, keys=[name])
        findings.append(finding)
    return findings


def _spec_of(target: Target):
    """The `@dynamic_spec` spec of the export: the one torch keeps on `forward`, or a
    `ShapesSpec` / `ParamsSpec` given as `dynamic_shapes`."""
    spec = getattr(getattr(target.model, "forward", None), "_dynamic_spec", None)
    if spec is None and type(target.dynamic_shapes).__name__ in ("ShapesSpec", "ParamsSpec"):
        spec = target.dynamic_shapes
    return spec


def shape_var_findings(program, target: Target, sizes: dict[str, tuple], guards: list[dict], site_of) -> list[Finding]:
    """PT406 for each `ShapeVar` the program narrowed to one size: torch gives it an unbacked
    symbol, and an operation that needs one size (a reshape to literals) adds a runtime assert
    (`Eq(4*u0, 32)`) that narrows its range to `VR[8, 8]`, where the input's size becomes that
    number (measured, torch 2.15). The finding lands on the line of the first such assert, the
    line the static check names; else on nothing (it is not said)."""
    spec = _spec_of(target)
    if spec is None:
        return []
    findings = []
    for name, index, var in declared_shape_vars(spec):
        shape = sizes.get(name)
        if shape is None or index >= len(shape):
            continue
        size = _one_value(program, shape[index])
        if size is None:
            continue
        narrowed = [
            str(symbol)
            for symbol, bounds in program.range_constraints.items()
            if str(symbol).startswith("u") and bounds.lower == bounds.upper == size
        ]
        site = _asserting_site(guards, narrowed, site_of)
        if site is None:
            continue
        finding = Finding(
            "PT406",
            f'this line fixes dimension {index} of `{name}`, `ShapeVar("{var}")` of `@dynamic_spec`, to '
            f"{size}: export narrowed its range to that one size (`range_constraints` holds `VR[{size}, {size}]`), "
            "so the program accepts no other; take the sizes from the input (`-1`, `x.shape[0]`), or declare "
            "the dimension static",
        )
        finding.place(site)
        findings.append(finding)
    return findings


def _asserting_site(guards: list[dict], symbols: list[str], site_of):
    """Where the first recorded equality on one of `symbols` (`Eq(4*u0, 32)`, a runtime assert
    on an unbacked symbol) was added, when torch says where."""
    for event in guards:
        expr = str(event.get("expr") or "")
        if not expr.startswith("Eq(") or not any(re.search(rf"\b{symbol}\b", expr) for symbol in symbols):
            continue
        site = site_of(event)
        if site is not None and not isinstance(site, list):
            return site
    return None


def _fixing_site(guards: list[dict], source: str, site_of):
    """Where the guard that fixed the dimension at `source` was added: the first recorded guard
    that equates its symbol with a number (`Eq(s77, 8)`), when torch says where."""
    for event in guards:
        sources = event.get("symbol_to_sources") or {}
        symbols = [symbol for symbol, named in sources.items() if source in (named if isinstance(named, list) else [named])]
        expr = str(event.get("expr") or "")
        if not symbols or not expr.startswith("Eq("):
            continue
        site = site_of(event)
        if site is not None and not isinstance(site, list):
            return site
    return None


def _input_sizes(program, names: list[str]) -> dict[str, tuple]:
    """The shapes of the program's user inputs that are tensors, by the parameter each feeds,
    when the inputs are one tensor per parameter (the program's placeholders in order)."""
    user_inputs = list(program.graph_signature.user_inputs)
    values = {node.name: node.meta.get("val") for node in program.graph.nodes if node.op == "placeholder"}
    shapes = [getattr(values.get(name), "shape", None) for name in user_inputs]
    if len(shapes) != len(names) or any(shape is None for shape in shapes):
        return {}
    return dict(zip(names, (tuple(shape) for shape in shapes), strict=True))


def _one_value(program, size) -> int | None:
    """The one size `size` can be in the program, or None when it can take several."""
    node = getattr(size, "node", None)
    if node is None:
        return int(size)
    expr = node.expr
    if not expr.free_symbols:
        return int(expr)
    bounds = program.range_constraints.get(expr)
    if bounds is not None and bounds.lower == bounds.upper:
        return int(bounds.lower)
    return None
