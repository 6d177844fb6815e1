"""Example inputs the exporter rejects: sizes 0 or 1 (or outside a `Dim`'s range) on a dimension
declared dynamic; which inputs a spec's `Dim`s are on, and where those inputs are written."""

from __future__ import annotations

import ast
import inspect
import os
import re

from .entrypoint import Target
from .findings import Finding, Location, binding_statement
from .text import clip

_SPECIALIZED = re.compile(r"You marked ([A-Za-z_]\w*) as dynamic but your code specialized it to be a constant \((-?\d+)\)")


def example_size_specializations(text: str) -> dict[str, int]:
    """{dim name: size} when every violation of a `Constraints violated` error is a dimension
    declared dynamic and specialized to 0 or 1. The exporter specializes every example size 0
    or 1, and a trace can only specialize a dimension to the size its example has: so the
    example is the cause, whatever the model does. Empty when anything else is violated."""
    bullets = [line.strip()[2:] for line in text.splitlines() if line.strip().startswith("- ")]
    found: dict[str, int] = {}
    for bullet in bullets:
        match = _SPECIALIZED.search(bullet)
        if match is None or int(match.group(2)) not in (0, 1):
            return {}
        found.setdefault(match.group(1), int(match.group(2)))
    return found


def example_size_message(specialized: dict[str, int]) -> str:
    named = ", ".join(f"`{name}`" for name in specialized)
    sizes = ", ".join(f"{size} on `{name}`" for name, size in specialized.items())
    return clip(
        f"Constraints violated: {named} is declared dynamic, but the example input's size ({sizes}) is one the "
        "exporter always specializes to a constant (0 or 1): give the example a size of 2 or more and keep the Dim "
        "(torch suggests the constant, which makes the dimension static)"
    )


_OUT_OF_RANGE = re.compile(r"\b(-?\d+) not in range \[(-?\d+), ([^\]]+)\]")


_HINT_SPECIALIZED = re.compile(r"0/1 specialized due to hint of ([01]) for dimension inputs\['([^']+)'\]")


def example_size_conflict(text: str) -> tuple[str, str | None] | None:
    """(message, input name or None) when the exporter rejects an example's size for a dynamic
    dimension: outside the `Dim`'s range ("16 not in range [2, 8]"), or 0/1 under `Dim.DYNAMIC`
    ("0/1 specialized due to hint of 1 for dimension inputs['x'].shape[1]")."""
    match = _HINT_SPECIALIZED.search(text)
    if match is not None:
        return (
            f"the example input `{match.group(2)}` has size {match.group(1)} in a dimension declared Dim.DYNAMIC, "
            "which the exporter specializes to a constant: give the example a size of 2 or more",
            match.group(2),
        )
    match = _OUT_OF_RANGE.search(text)
    if match is not None:
        size, low, high = match.groups()
        return (
            f"an example input's size {size} is outside the range [{low}, {high}] its dynamic dimension declares: "
            "give the example a size inside the range (the exporter traces with the example's sizes)",
            None,
        )
    return None


def all_dims(target: Target) -> set[str]:
    spec = target.dynamic_shapes
    values = spec.values() if isinstance(spec, dict) else spec if isinstance(spec, (list, tuple)) else []
    return set().union(set(), *(_spec_dim_names(value) for value in values))


def inputs_named(target: Target, key: str) -> list[tuple[str, object]]:
    if isinstance(target.kwargs, dict) and key in target.kwargs:
        return [("kwarg", key)]
    parameters = _forward_parameters(target)
    if key in parameters and parameters.index(key) < len(target.args):
        return [("arg", parameters.index(key))]
    return []


def _spec_dim_names(spec) -> set[str]:
    """Names of the `Dim`s in one input's dynamic_shapes entry, at any depth."""
    if isinstance(spec, dict):
        return set().union(set(), *(_spec_dim_names(value) for value in spec.values()))
    if isinstance(spec, (list, tuple)):
        return set().union(set(), *(_spec_dim_names(value) for value in spec))
    name = getattr(spec, "__name__", None)
    return {name} if isinstance(name, str) else set()


def _forward_parameters(target: Target) -> list[str]:
    try:
        return [
            p.name
            for p in inspect.signature(target.model.forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError, AttributeError):
        return []


def inputs_with_dims(target: Target, names: set[str]) -> list[tuple[str, object]]:
    """The example inputs (("arg", position) or ("kwarg", key)) whose dynamic_shapes entry
    declares one of the `Dim`s `names`."""
    spec = target.dynamic_shapes
    kwargs = target.kwargs if isinstance(target.kwargs, dict) else {}
    inputs: list[tuple[str, object]] = []
    if isinstance(spec, dict):
        parameters = _forward_parameters(target)
        for key, value in spec.items():
            if not _spec_dim_names(value) & names:
                continue
            if key in kwargs:
                inputs.append(("kwarg", key))
            elif key in parameters and parameters.index(key) < len(target.args):
                inputs.append(("arg", parameters.index(key)))
    elif isinstance(spec, (list, tuple)):
        for position, value in enumerate(spec):
            if _spec_dim_names(value) & names:
                inputs.append(("arg", position) if position < len(target.args) else ("kwarg", None))
    return inputs


def place_on_examples(finding: Finding, target: Target, inputs: list[tuple[str, object]]) -> None:
    """Puts a finding about example inputs on the first of `inputs`: its element of a literal
    `example_args` tuple or its key of a literal `example_kwargs` dict, else the binding's line;
    without inputs, on `example_args`."""
    side, which = inputs[0] if inputs else ("arg", None)
    binding = target.kwargs_binding if side == "kwarg" and target.kwargs_binding else target.args_binding
    node = binding_statement(finding, binding)
    if node is None:
        return
    file = binding[0]
    value = getattr(node, "value", None)
    place = node
    if side == "arg" and isinstance(which, int) and isinstance(value, (ast.Tuple, ast.List)):
        if which < len(value.elts) and not any(isinstance(e, ast.Starred) for e in value.elts[: which + 1]):
            place = value.elts[which]
    elif side == "kwarg" and isinstance(value, ast.Dict):
        for key_node, value_node in zip(value.keys, value.values, strict=True):
            if isinstance(key_node, ast.Constant) and key_node.value == which:
                place = value_node
    if place is node:
        finding.place(Location(os.path.abspath(file), node.lineno))
    else:
        finding.place(Location.of_node(file, place))
