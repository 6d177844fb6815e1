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
