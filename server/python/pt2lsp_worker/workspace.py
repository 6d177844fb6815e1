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


def binding_node(file: str, name: str):
    """The last module-level statement binding `name` (assignment, def, class or import)."""
    tree = _parse(file)
    if tree is None:
        return None
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
