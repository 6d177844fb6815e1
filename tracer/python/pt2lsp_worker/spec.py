"""Failures about `dynamic_shapes` itself (a key or a dimension the inputs do not have), placed on
the spec's binding or on the key they are about."""

from __future__ import annotations

import ast
import inspect
import os
import re
import traceback

from .entrypoint import Target
from .findings import Finding, Location, binding_statement
from .workspace import Workspace

_SPEC_FUNCTIONS = ("fakify", "symbolic_context", "dynamic_shapes", "make_fake_inputs", "_process_constraints")


def raised_in_dynamic_shapes(chain, target: Target, workspace: Workspace) -> bool:
    """A bare error raised while torch read `dynamic_shapes`, before the model ran (a dim index
    past the input's rank is an IndexError in non-strict export)."""
    if target.dynamic_shapes is None:
        return False
    for exc in chain:
        if not isinstance(exc, (IndexError, KeyError, ValueError, TypeError, AssertionError)):
            continue
        frames = traceback.extract_tb(exc.__traceback__)
        if any(workspace.contains(frame.filename) for frame in frames):
            continue
        for frame in frames:
            path = frame.filename.replace("\\", "/")
            if path.endswith("torch/export/dynamic_shapes.py") or any(part in frame.name for part in _SPEC_FUNCTIONS):
                return True
    return False


def blamed_spec_keys(text: str) -> list[str]:
    keys = re.findall(r"dynamic_shapes\[['\"]([^'\"]+)['\"]\]", text)
    if keys:
        return keys
    match = re.search(r"arg names (\[[^\]]*\]).*?but here they are (\[[^\]]*\])", text, re.S)
    if match:
        try:
            expected = set(ast.literal_eval(match.group(1)))
            given = ast.literal_eval(match.group(2))
            return [key for key in given if key not in expected]
        except (ValueError, SyntaxError):
            return []
    return []


def keys_past_rank(target: Target) -> list[str]:
    """Keys of a dict spec naming a dimension the input does not have."""
    spec = target.dynamic_shapes
    if not isinstance(spec, dict):
        return []
    try:
        bound = inspect.signature(target.model.forward).bind(*target.args, **(target.kwargs or {}))
    except (TypeError, ValueError):
        return []
    blamed = []
    for key, dims in spec.items():
        value = bound.arguments.get(key)
        rank = getattr(value, "ndim", None)
        if rank is None:
            continue
        indices = list(dims.keys()) if isinstance(dims, dict) else range(len(dims)) if isinstance(dims, (list, tuple)) else []
        if any(isinstance(i, int) and i >= rank for i in indices) or (isinstance(dims, (list, tuple)) and len(dims) != rank):
            blamed.append(key)
    return blamed


def declared_sources(target: Target) -> dict[str, str]:
    """{source: Dim name} of every named `Dim` in `dynamic_shapes`, in the exporter's source
    names (`L['x'].size()[2]`; `L['x'][0].size()[1]` inside a tuple input), so that a guard on
    a source can be told apart from another dimension's. Dim.AUTO and Dim.DYNAMIC have no name
    of the user's and are left out."""
    spec = target.dynamic_shapes
    if spec is None:
        return {}
    try:
        bound = inspect.signature(target.model.forward).bind(*target.args, **(target.kwargs or {}))
    except (TypeError, ValueError):
        return {}
    names = list(bound.arguments)
    if isinstance(spec, dict):
        pairs = list(spec.items())
    elif isinstance(spec, (list, tuple)):
        pairs = list(zip(names, spec, strict=False))
    else:
        return {}
    found: dict[str, str] = {}
    for key, inner in pairs:
        if key in bound.arguments:
            _walk_spec(f"L[{key!r}]", bound.arguments[key], inner, found)
    return found


def with_declared_sources(dims: dict[str, str], target: Target) -> dict[str, str]:
    """A violation's {source: Dim name} with the dims it named without a source (`?height`,
    from "You marked height as dynamic but your code specialized it") given theirs."""
    if not any(source.startswith("?") for source in dims):
        return dims
    resolved = dict(dims)
    for source, name in declared_sources(target).items():
        if resolved.pop(f"?{name}", None) is not None:
            resolved[source] = name
    return resolved


# Strict export names an input by its place among the leaves of `(args, kwargs)`.
_FLAT_ARG = re.compile(r"L\['flat_args'\]\[(\d+)\]")


def in_input_names(sources: dict[str, str], target: Target) -> dict[str, str]:
    """`sources` ({key: source}) with strict export's `L['flat_args'][i]` written as the input it
    is (`L['x']`, `L['pair'][1]`), as the violation's message and `dynamic_shapes` name it, so a
    guard on another input's dimension is not taken for the violated one's. Unchanged where the
    inputs cannot be numbered as strict export numbers them."""
    if not any(_FLAT_ARG.search(source) for source in sources.values()):
        return sources
    names = flat_input_names(target)
    if names is None:
        return sources

    def rename(match: re.Match) -> str:
        index = int(match.group(1))
        return names[index] if index < len(names) else match.group(0)

    return {key: _FLAT_ARG.sub(rename, source) for key, source in sources.items()}


def flat_input_names(target: Target) -> list[str] | None:
    """The source name of each input leaf, in strict export's `flat_args` order: the leaves of
    `(args, kwargs)` as torch's pytree flattens plain tuples, lists and dicts (a `None` has no
    leaf). None for inputs it cannot number (a `*args` parameter, a namedtuple or another
    registered container)."""
    try:
        parameters = list(inspect.signature(target.model.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names: list[str] = []
    for position, value in enumerate(target.args):
        if position >= len(parameters) or parameters[position].kind not in positional:
            return None
        if not _leaf_names(f"L[{parameters[position].name!r}]", value, names):
            return None
    for key, value in (target.kwargs or {}).items():
        if not _leaf_names(f"L[{key!r}]", value, names):
            return None
    return names


def _leaf_names(source: str, value, out: list[str]) -> bool:
    if value is None:
        return True
    if type(value) in (tuple, list):
        return all(_leaf_names(f"{source}[{index}]", item, out) for index, item in enumerate(value))
    if type(value) is dict:
        return all(_leaf_names(f"{source}[{key!r}]", item, out) for key, item in value.items())
    if isinstance(value, (tuple, list, dict)):
        return False
    out.append(source)
    return True


def _walk_spec(source: str, value, spec, found: dict[str, str]) -> None:
    if hasattr(value, "ndim") and hasattr(value, "shape"):
        dims = spec.items() if isinstance(spec, dict) else enumerate(spec) if isinstance(spec, (list, tuple)) else ()
        for index, dim in dims:
            name = getattr(dim, "__name__", None)
            if isinstance(index, int) and isinstance(name, str) and name.isidentifier():
                found[f"{source}.size()[{index}]"] = name
        return
    if isinstance(value, dict) and isinstance(spec, dict):
        for key, inner in spec.items():
            if key in value:
                _walk_spec(f"{source}[{key!r}]", value[key], inner, found)
    elif isinstance(value, (list, tuple)) and isinstance(spec, (list, tuple)):
        for index, (item, inner) in enumerate(zip(value, spec, strict=False)):
            _walk_spec(f"{source}[{index}]", item, inner, found)


def place_on_spec(finding: Finding, target: Target, keys=()) -> None:
    """Puts a finding about dynamic_shapes on the spec: the key it names, else the binding."""
    if finding.placed:
        return
    binding = target.spec_binding or target.model_binding
    node = binding_statement(finding, binding)
    if node is None:
        return
    file = binding[0]
    value = getattr(node, "value", None)
    if not keys and finding.dims:
        keys = [match.group(1) for match in (re.match(r"L\['([^']+)'\]", source) for source in finding.dims) if match]
    if isinstance(value, ast.Dict):
        for key in keys:
            for key_node in value.keys:
                if isinstance(key_node, ast.Constant) and key_node.value == key:
                    finding.place(Location.of_node(file, key_node))
                    return
    finding.place(Location(os.path.abspath(file), node.lineno, node.col_offset))
