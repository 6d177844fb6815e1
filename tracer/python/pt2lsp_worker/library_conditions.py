"""When installed code adds a guard only under a condition (`if self.strict_img_size:`, `else` of
`if interpolate_pos_encoding:`), that condition is often a choice of the user's: a parameter of
the model's `forward`, or an attribute set when the model is built. Said in the finding, it is
what the user can do from their side, where the library line itself is not theirs to edit."""

from __future__ import annotations

import ast
import functools
import linecache


def enclosing_conditions(filename: str, line: int) -> list[tuple[ast.expr, bool, str]]:
    """The `if` tests around `line` inside its function, outermost first: (test, whether the
    line runs when it is true, its source text)."""
    source = "".join(linecache.getlines(filename))
    tree = _parsed(filename, source)
    if tree is None:
        return []
    function = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _spans(node, line):
            if function is None or node.lineno >= function.lineno:
                function = node
    if function is None:
        return []
    found: list[tuple[ast.expr, bool, str]] = []
    body: list[ast.stmt] = function.body
    while True:
        statement = next((node for node in body if _spans(node, line)), None)
        if statement is None:
            return found
        if isinstance(statement, ast.If):
            in_body = any(_spans(node, line) for node in statement.body)
            if in_body or any(_spans(node, line) for node in statement.orelse):
                found.append((statement.test, in_body, ast.get_source_segment(source, statement.test) or ""))
            body = statement.body if in_body else statement.orelse
        elif isinstance(statement, (ast.For, ast.While, ast.With, ast.Try)):
            body = [node for block in _blocks(statement) for node in block]
        else:
            return found


def user_choice(filename: str, line: int, forward_parameters: set[str]) -> str:
    """What the user can choose so that the guard at `filename:line` is not added: the
    innermost condition around it that is a parameter of the model's `forward` (passed in
    `example_kwargs`) or an attribute of the module (set when the model is built); empty when
    no such condition is found."""
    for test, in_body, text in reversed(enclosing_conditions(filename, line)):
        runs_when = in_body
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, runs_when = test.operand, not runs_when
        if isinstance(test, ast.Name) and test.id in forward_parameters:
            return (
                f"that line runs only when {_when(text, in_body)}, a parameter of the model's forward: with "
                f"`{test.id}={not runs_when}` in `example_kwargs` it does not (other code may still guard the dimension)"
            )
        if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self":
            return (
                f"that line runs only when {_when(text, in_body)}: an option of the model's constructor may set "
                f"`{test.attr}` to {not runs_when}, and then it does not"
            )
    return ""


def _when(text: str, in_body: bool) -> str:
    return f"`{text}`" if in_body else f"`{text}` is false"


def _spans(node: ast.AST, line: int) -> bool:
    start = getattr(node, "lineno", None)
    end = getattr(node, "end_lineno", None)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
        start = min(decorator.lineno for decorator in node.decorator_list)
    return start is not None and end is not None and start <= line <= end


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    blocks = [getattr(statement, "body", []), getattr(statement, "orelse", []), getattr(statement, "finalbody", [])]
    blocks += [handler.body for handler in getattr(statement, "handlers", [])]
    return blocks


@functools.lru_cache(maxsize=64)
def _parsed(filename: str, source: str) -> ast.Module | None:
    if not source:
        return None
    try:
        return ast.parse(source, filename)
    except (SyntaxError, ValueError):
        return None
