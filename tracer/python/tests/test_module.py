"""The worker package itself: one definition per top-level name in each module, and its launcher.

A second `def` of a name silently replaces the first for every caller (ruff's F811 only flags a
redefinition of an unused name); that once broke `pt2lsp export` while the tracer's own tests
passed.
"""

import ast
import collections
import importlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pt2lsp_worker"
MODULES = sorted(PACKAGE.glob("*.py"))


def test_every_top_level_function_and_class_is_defined_once():
    twice = []
    for module in MODULES:
        tree = ast.parse(module.read_text(encoding="utf-8"))
        names = collections.Counter(
            node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        )
        twice += [f"{module.name}: {name}" for name, count in names.items() if count > 1]
    assert twice == []


def test_every_module_says_what_it_is_and_imports_without_torch():
    assert len(MODULES) > 10
    for module in MODULES:
        tree = ast.parse(module.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), module.name
        # torch is imported inside functions only: the worker starts, and these tests run,
        # before (or without) it.
        top_level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        named = [alias.name for node in top_level for alias in node.names] + [
            node.module or "" for node in top_level if isinstance(node, ast.ImportFrom)
        ]
        assert not [name for name in named if name.split(".")[0] == "torch"], module.name
        importlib.import_module(f"pt2lsp_worker.{module.stem}")
