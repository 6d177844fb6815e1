"""The exported program's tensor shapes on the user's lines, in the user's `Dim` names: what the
editor shows after a trace in place of the shapes the static analysis inferred."""

from __future__ import annotations

import os
import re

from .entrypoint import Target
from .locations import user_place
from .program_info import dim_names
from .workspace import Workspace

# The most lines reported: a huge model's graph says nothing more useful beyond.
MOST_LINES = 5000

_SYMBOL = re.compile(r"\b[su]\d+\b")


def render_size(expression: str, names: dict[str, str]) -> str:
    """A size as the editor writes it: `s77 + s12` → `dx + dy` with the user's names; `?` when a
    symbol has no name (a `Dim.AUTO`, an unbacked size)."""
    if any(symbol not in names for symbol in _SYMBOL.findall(expression)):
        return "?"
    text = _SYMBOL.sub(lambda match: names[match.group(0)], expression)
    # sympy writes a floor division in parentheses of its own: `((s0 + 1)//2)`.
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1]
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def traced_shapes(program, target: Target, workspace: Workspace) -> list[dict]:
    """[{"file", "line", "shapes"}]: for each line of the user's files, the shapes of the tensors
    the graph's nodes made there, in graph order (`[batch, 8, 16]`)."""
    import torch

    names = dim_names(program, target)
    by_line: dict[tuple[str, int], list[str]] = {}
    for node in program.graph.nodes:
        value = node.meta.get("val")
        if node.op != "call_function" or not isinstance(value, torch.Tensor):
            continue
        place = user_place(node, workspace.contains)
        if place is None:
            continue
        key = (os.path.abspath(place.file), place.line)
        if key not in by_line and len(by_line) >= MOST_LINES:
            continue
        sizes = ", ".join(render_size(str(size), names) for size in value.shape)
        by_line.setdefault(key, []).append(f"[{sizes}]")
    return [{"file": file, "line": line, "shapes": shapes} for (file, line), shapes in by_line.items()]
