"""torch's advice for a data-dependent guard, in the user's terms.

torch 2.15's data-dependent errors say "consider using data-dependent friendly APIs such as
guard_or_false, guard_or_true and statically_known_true". Said that way it names no line and no
condition; here it becomes the user's own condition in the two forms that export accepts:
`guard_or_false(<condition>)`, which decides the branch without the data (the exported program
always runs the side it chose), and `torch._check(<condition>)`, which makes the program require
the condition, so that the branch after it is decided.
"""

from __future__ import annotations

import ast
import re

# `# File: /p/m.py:25 in forward, code: if n > 2:`: the source of the graph nodes below it.
_SOURCE = re.compile(r"^\s*# File: .+:\d+ in \w+, code: (.*)$")


def failing_code(graph_text: str) -> str | None:
    """The source line torch was tracing when the guard failed: the last one its partial graph
    notes (the node being evaluated comes last)."""
    code = None
    for line in graph_text.splitlines():
        match = _SOURCE.match(line)
        if match:
            code = match.group(1).strip()
    return code


def condition_of(code: str | None) -> str | None:
    """The condition an `if` / `elif` / `while` / `assert` line tests (`n > 2` of `if n > 2:`),
    as the user wrote it; None for any other line."""
    if not code:
        return None
    text = code.strip()
    if text.startswith("elif "):
        text = text[2:]
    statement = None
    # A block's header parses once it has a body; `assert` parses alone.
    for candidate in (text, text + "\n    pass"):
        try:
            statement = ast.parse(candidate).body[0]
            break
        except (SyntaxError, IndexError):
            continue
    if isinstance(statement, (ast.If, ast.While, ast.Assert)):
        return ast.unparse(statement.test)
    return None


def suggests_friendly_apis(torch_message: str) -> bool:
    return "guard_or_false" in torch_message


def friendly_forms(condition: str) -> str:
    """The two forms, for `condition`."""
    return (
        f"torch suggests its data-dependent friendly forms: `guard_or_false({condition})` (from "
        "torch.fx.experimental.symbolic_shapes) decides the branch without the data, so the exported "
        f"program always runs the side it picks when it cannot tell; or `torch._check({condition})` "
        "before the branch makes the program require it"
    )
