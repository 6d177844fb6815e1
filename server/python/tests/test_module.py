"""The worker module itself: one definition per top-level name.

A second `def` of a name silently replaces the first for every caller (ruff's F811 only flags a
redefinition of an unused name); that once broke `pt2lsp export` while the tracer's own tests
passed.
"""

import ast
import collections
from pathlib import Path

WORKER = Path(__file__).resolve().parent.parent / "worker.py"


def test_every_top_level_function_and_class_is_defined_once():
    tree = ast.parse(WORKER.read_text(encoding="utf-8"))
    names = collections.Counter(
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    )
    assert [name for name, count in names.items() if count > 1] == []
