"""PT204: the module exported is a `torch.compile` wrapper (`OptimizedModule`), whose `forward`
is `(*args, **kwargs)`. What tells it, and the user's `torch.compile(...)` call that made it."""

from __future__ import annotations

import ast

from .findings import Location
from .workspace import Workspace, binding_node


def compiled_wrapper(model) -> bool:
    """Whether `model` is what `torch.compile(module)` returns."""
    return type(model).__name__ == "OptimizedModule" and hasattr(model, "_orig_mod")


def _is_compile(call: ast.AST) -> bool:
    return isinstance(call, ast.Call) and ast.unparse(call.func) in ("torch.compile", "compile")


def compiled_binding(target, workspace: Workspace) -> Location | None:
    """The `torch.compile(...)` call that made the exported module: inside the statement that
    binds the entrypoint's model (`model = torch.compile(Net())`), or, when the export call is
    given a name, the last `<name> = torch.compile(...)` before it in the same function (or at
    module level); else the binding itself; None without one."""
    if target.model_binding is None:
        return None
    file, name = target.model_binding
    node = binding_node(file, name)
    if node is None:
        return None
    call = next((sub for sub in ast.walk(node) if _is_compile(sub)), None)
    if call is None and isinstance(node, ast.Name):
        call = _assigned_before(_parsed(file), node)
    return Location.of_node(file, call if call is not None else node)


def _parsed(file: str):
    try:
        with open(file, "rb") as source:
            return ast.parse(source.read(), file)
    except (OSError, SyntaxError, ValueError):
        return None


def _assigned_before(tree, name: ast.Name):
    """The last `<name> = torch.compile(...)` before `name`'s line, in the innermost function
    around it, else at module level."""
    if tree is None:
        return None
    scope = tree
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.lineno <= name.lineno <= (node.end_lineno or node.lineno)
            and node.lineno > getattr(scope, "lineno", 0)
        ):
            scope = node
    found = None
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.Assign)
            and node.lineno < name.lineno
            and any(isinstance(t, ast.Name) and t.id == name.id for t in node.targets)
            and _is_compile(node.value)
            and (found is None or node.lineno > found.lineno)
        ):
            found = node
    return found.value if found is not None else None
