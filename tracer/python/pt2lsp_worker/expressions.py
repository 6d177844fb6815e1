"""Guards as Python, the language the user writes: sympy's `Eq(Mod(height, 16), 0)` becomes
`height % 16 == 0`, and the doubled parentheses sympy prints around floor divisions go."""

from __future__ import annotations

# sympy (and torch's own sympy functions) printed as Python operators: (operator, precedence).
_BINARY = {
    "Eq": ("==", 1),
    "Ne": ("!=", 1),
    "Mod": ("%", 3),
    "PythonMod": ("%", 3),
    "FloorDiv": ("//", 3),
}
# Printed as Python's builtins.
_CALLS = {"Max": "max", "Min": "min", "Abs": "abs"}


def as_python(expression: str) -> str:
    """`expression` with the functions above written as Python; anything it cannot read is
    returned as it was."""
    try:
        text, end = _convert(expression, 0)
    except ValueError:
        return expression
    if end != len(expression):
        return expression
    return _drop_doubled_parentheses(text)


def _convert(text: str, start: int) -> tuple[str, int]:
    """Converts from `start` up to a top-level `,` or an unmatched `)`; returns the text and
    where it stopped."""
    out: list[str] = []
    index = start
    while index < len(text):
        char = text[index]
        if char in ",)":
            break
        if char == "(":
            inner, index = _convert(text, index + 1)
            if index >= len(text) or text[index] != ")":
                raise ValueError("unbalanced")
            out.append(f"({inner})")
            index += 1
            continue
        if char.isalpha() or char == "_":
            end = index
            while end < len(text) and (text[end].isalnum() or text[end] == "_"):
                end += 1
            name = text[index:end]
            if end < len(text) and text[end] == "(" and (name in _BINARY or name in _CALLS):
                arguments, index = _arguments(text, end + 1)
                out.append(_written(name, arguments))
                continue
            out.append(name)
            index = end
            continue
        out.append(char)
        index += 1
    return "".join(out), index


def _arguments(text: str, start: int) -> tuple[list[str], int]:
    """The converted arguments of a call whose `(` ends before `start`, and the index past its `)`."""
    arguments = []
    index = start
    while True:
        argument, index = _convert(text, index)
        arguments.append(argument.strip())
        if index >= len(text):
            raise ValueError("unbalanced")
        if text[index] == ")":
            return arguments, index + 1
        index += 1  # past the comma


def _written(name: str, arguments: list[str]) -> str:
    if name in _CALLS:
        return f"{_CALLS[name]}({', '.join(arguments)})"
    if len(arguments) != 2:
        raise ValueError("not binary")
    operator, precedence = _BINARY[name]
    left, right = (_operand(argument, precedence) for argument in arguments)
    written = f"{left} {operator} {right}"
    # A comparison inside another expression keeps its parentheses.
    return written if precedence == 1 else f"({written})"


def _operand(argument: str, precedence: int) -> str:
    """`argument` parenthesised unless it binds at least as tightly as the operator. Every
    arithmetic operator binds more tightly than a comparison: there, parentheses around a whole
    operand go."""
    if precedence == 1:
        whole = argument.startswith("(") and _matching(argument, 0) == len(argument) - 1
        return argument[1:-1] if whole else argument
    if _is_atom(argument):
        return argument
    return f"({argument})"


def _is_atom(text: str) -> bool:
    if text.replace("_", "").replace(".", "").isalnum():
        return True
    return text.startswith("(") and _matching(text, 0) == len(text) - 1


def _matching(text: str, open_index: int) -> int:
    depth = 0
    for index in range(open_index, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return -1


def _drop_doubled_parentheses(text: str) -> str:
    """`((width//16))` as `(width//16)`; a whole expression in parentheses loses them too."""
    changed = True
    while changed:
        changed = False
        for index, char in enumerate(text):
            if char == "(" and index + 1 < len(text) and text[index + 1] == "(":
                outer = _matching(text, index)
                if outer > 0 and _matching(text, index + 1) == outer - 1:
                    text = text[:index] + text[index + 1 : outer] + text[outer + 1 :]
                    changed = True
                    break
    if text.startswith("(") and _matching(text, 0) == len(text) - 1:
        text = text[1:-1]
    return text
