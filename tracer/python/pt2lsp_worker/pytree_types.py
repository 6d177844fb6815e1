"""Inputs and outputs of a type pytree cannot flatten (PT404), placed on the example input that
holds one or on the `return` of `forward` that builds one."""

from __future__ import annotations

import ast
import inspect
import os
import re
import textwrap
from collections.abc import Callable

from .entrypoint import Target
from .examples import place_on_examples
from .findings import Finding, Location
from .text import clip
from .workspace import Workspace

_UNREGISTERED = (
    ("input", re.compile(r"Unsupported input type <class '([^']+)'>")),
    ("output", re.compile(r"Found <class '([^']+)'> in output, which is not a known type")),
    ("any", re.compile(r"<class '([^']+)'>[^\n]*? is not a known type")),
)


def unregistered_type(text: str) -> tuple[str, str] | None:
    """("input" | "output" | "any", qualified class name) of an exporter error about a type
    pytree cannot flatten (pytorch #147400), else None."""
    for side, pattern in _UNREGISTERED:
        match = pattern.search(text)
        if match is not None:
            return side, match.group(1)
    return None


def _holds_type(value, name: str, depth: int = 0) -> bool:
    if depth > 8:
        return False
    cls = type(value)
    if f"{cls.__module__}.{cls.__qualname__}" == name or cls.__qualname__ == name:
        return True
    if isinstance(value, dict):
        return any(_holds_type(v, name, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_type(v, name, depth + 1) for v in value)
    return False


def _return_location(target: Target, name: str, workspace: Workspace) -> Location | None:
    """The `return` of the model's forward that most likely builds an instance of `name`."""
    try:
        function = inspect.unwrap(type(target.model).forward)
        file = inspect.getsourcefile(function)
        lines, start = inspect.getsourcelines(function)
    except (TypeError, OSError, AttributeError):
        return None
    if not file or not workspace.contains(file):
        return None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    returns = [node for node in ast.walk(tree) if isinstance(node, ast.Return) and node.value is not None]
    if not returns:
        return None
    short = name.rsplit(".", 1)[-1]
    chosen = next(
        (node for node in returns if any(getattr(n, "id", getattr(n, "attr", None)) == short for n in ast.walk(node))),
        returns[-1],
    )
    return Location(os.path.abspath(file), start + chosen.lineno - 1)


def _is_transformers_cache(name: str) -> bool:
    """A transformers key/value cache (`transformers.cache_utils.DynamicCache` and its kin)."""
    return name.startswith("transformers.") and name.endswith("Cache")


def unregistered_finding(finding: Callable[..., Finding], side: str, name: str, target: Target, workspace: Workspace) -> Finding:
    """PT404 for the type `name` (\"input\", \"output\" or \"any\" `side`), made by `finding(code, message, where)`."""
    short = name.rsplit(".", 1)[-1]
    if side != "input" and _is_transformers_cache(name):
        # Registering a library's cache is not the user's fix: not asking for it is.
        message = (
            f"forward returns the model's key/value cache (a transformers {short}), which torch.export cannot "
            "flatten: pass use_cache=False (in example_kwargs, or set config.use_cache = False) so that forward "
            "returns no cache"
        )
        out = finding("PT404", clip(message), None)
        if isinstance(target.kwargs, dict) and "use_cache" in target.kwargs:
            place_on_examples(out, target, [("kwarg", "use_cache")])
        return out
    register = (
        f"register it with torch.export.register_dataclass({short}) (a dataclass) or "
        f"torch.utils._pytree.register_pytree_node({short}, ...)"
    )
    inputs: list[tuple[str, object]] = [("arg", i) for i, value in enumerate(target.args) if _holds_type(value, name)]
    if isinstance(target.kwargs, dict):
        inputs += [("kwarg", key) for key, value in target.kwargs.items() if _holds_type(value, name)]
    if side == "output" or (side == "any" and not inputs):
        where = _return_location(target, name, workspace)
        message = f"forward returns a {short}, a type torch.export cannot flatten (not a registered pytree node): {register}"
        if where is not None or side == "output":
            return finding("PT404", clip(message), where)
    out = finding(
        "PT404",
        clip(f"the example input's type {short} is one torch.export cannot flatten (not a registered pytree node): {register}"),
        None,
    )
    place_on_examples(out, target, inputs)
    return out
