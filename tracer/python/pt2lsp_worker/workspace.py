"""Which files are the user's (frames there are where findings go), and their syntax trees."""

from __future__ import annotations

import ast
import os
import re
import sys


class Workspace:
    """Which files are the user's: frames there are where diagnostics go."""

    def __init__(self, entry_file: str, roots: list[str]) -> None:
        self.entry_file = os.path.realpath(entry_file)
        self.roots = [os.path.realpath(root) for root in roots if root]
        excluded = {sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.prefix)}
        try:
            import site

            excluded.update(site.getsitepackages())
            excluded.add(site.getusersitepackages())
        except Exception:
            pass
        try:
            import torch

            excluded.add(os.path.dirname(torch.__file__))
        except Exception:
            pass
        # The directory the worker runs from (the package and its launcher).
        excluded.add(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
        self.excluded = [os.path.realpath(path) for path in excluded if path]
        self.cache: dict[str, bool] = {}

    def contains(self, filename: str | None) -> bool:
        if not filename or filename.startswith("<"):
            return False
        known = self.cache.get(filename)
        if known is not None:
            return known
        path = os.path.realpath(filename)
        if path == self.entry_file:
            answer = True
        elif any(_under(path, root) for root in self.excluded) or re.search(r"[/\\](site|dist)-packages[/\\]", path):
            answer = False
        else:
            answer = any(_under(path, root) for root in self.roots)
        self.cache[filename] = answer
        return answer


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


_AST_CACHE: dict[str, ast.Module | None] = {}


def _parse(file: str):
    if file not in _AST_CACHE:
        try:
            with open(file, "rb") as source:
                _AST_CACHE[file] = ast.parse(source.read(), file)
        except (OSError, SyntaxError, ValueError):
            _AST_CACHE[file] = None
    return _AST_CACHE[file]


def parsed(file: str) -> ast.Module | None:
    """The syntax tree of `file`, parsed once; None when it cannot be read or parsed."""
    return _parse(file)


def binding_node(file: str, name):
    """The last module-level statement binding `name` (assignment, def, class or import); for an
    export call's argument (`script.CallArgument`), where that argument is written."""
    tree = _parse(file)
    if tree is None:
        return None
    if not isinstance(name, str):
        return _call_argument_node(tree, name)
    found = None
    for stmt in tree.body:
        targets = []
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                targets.extend(t.id for t in ast.walk(target) if isinstance(t, ast.Name))
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.target, ast.Name):
            targets.append(stmt.target.id)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            targets.append(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            targets.extend((alias.asname or alias.name).split(".")[0] for alias in stmt.names)
        if name in targets:
            found = stmt
    return found


def binding_line(file: str, name: str) -> int | None:
    node = binding_node(file, name)
    return None if node is None else node.lineno


# The names an export call's function goes by (`torch.export.export`, `export`, `draft_export`).
_EXPORT_NAMES = frozenset({"export", "draft_export", "_export"})


class _Spot:
    """A statement-like view of an expression: where it is, and `value`, the expression itself."""

    def __init__(self, node, value) -> None:
        self.lineno = node.lineno
        self.col_offset = node.col_offset
        self.end_lineno = node.end_lineno
        self.end_col_offset = node.end_col_offset
        self.value = value


def _call_argument_node(tree: ast.Module, argument):
    """Where an export call's argument is written: the statement that binds the name passed (the
    last assignment before the call, in the function that makes it), else the expression itself,
    else the call (an argument left to its default)."""
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and argument.line <= node.lineno <= argument.end_line
        and _callee_name(node.func) in _EXPORT_NAMES
    ]
    if not calls:
        return None
    call = min(calls, key=lambda node: (node.lineno != argument.line, node.end_lineno != argument.end_line))
    expr = next((keyword.value for keyword in call.keywords if keyword.arg == argument.keyword), None)
    if expr is None and argument.position is not None and argument.position < len(call.args):
        expr = call.args[argument.position]
        if any(isinstance(earlier, ast.Starred) for earlier in call.args[: argument.position + 1]):
            expr = None
    if expr is None:
        return _Spot(call, None)
    if isinstance(expr, ast.Name):
        binding = _assignment_before(tree, call, expr.id)
        if binding is not None:
            return binding
    return _Spot(expr, expr)


def _callee_name(func) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _assignment_before(tree: ast.Module, call: ast.Call, name: str):
    """The last `name = ...` before `call`, in the innermost function around it (else at module
    level)."""
    scope = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= call.lineno <= (node.end_lineno or 0):
            if scope is tree or node.lineno > scope.lineno:
                scope = node
    found = None
    for node in ast.walk(scope):
        if node is not scope and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.lineno >= call.lineno:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            if found is None or node.lineno > found.lineno:
                found = node
    return found
