"""Data-dependent errors: which rule a guard on an unbacked symbol is (PT101 branch, PT102
scalar, PT103 shape), told apart by where the symbol came from."""

from __future__ import annotations

import os
import re
import traceback

from .guard_forms import condition_of, failing_code, friendly_forms, suggests_friendly_apis
from .text import first_lines
from .workspace import Workspace

_ANNOTATED = re.compile(r'^\s*(\w+): "([^"]*)" = (.*)$')


def symbol_origin(symbol: str, graph_text: str) -> str | None:
    """How an unbacked symbol came to be, from the partial FX graph torch attaches to the error:
    "size" (an output size of nonzero/unique/masked_select/...), "bool" (the value of a boolean
    tensor: `if tensor:`), "scalar" (`.item()`, `int(t)`, `.tolist()`), or None."""
    dtypes: dict[str, str] = {}
    word = re.compile(rf"\b{re.escape(symbol)}\b")
    for line in graph_text.splitlines():
        match = _ANNOTATED.match(line)
        if not match:
            continue
        name, annotation, rhs = match.groups()
        dtype = annotation.split("[", 1)[0]
        dtypes[name] = dtype
        if not word.search(annotation):
            continue
        if annotation.startswith("Sym("):
            if re.search(r"\bitem\b|_local_scalar_dense|tolist", rhs):
                argument = re.search(r"\((\w+)", rhs)
                if argument and dtypes.get(argument.group(1)) == "b8":
                    return "bool"
                return "scalar"
            continue
        return "size"
    return None


def _code_of(symbols: list[str], origins: set[str | None]) -> str | None:
    """The rule of a guard on unbacked `symbols` whose origins are known: a float (`zf…`, `zuf…`)
    or a value read with `.item()` is PT102, a data-dependent size PT103, a boolean's value PT101."""
    if any(s.startswith(("zuf", "zf")) for s in symbols):
        return "PT102"
    for origin, code in (("size", "PT103"), ("scalar", "PT102"), ("bool", "PT101")):
        if origin in origins:
            return code
    return None


def data_dependent_code(guard: BaseException, chain, workspace: Workspace, graph_text: str) -> str:
    """The rule of torch's GuardOnDataDependentSymNode `guard`, from its symbols' origins in the
    partial graph torch attaches, else from its message and the frames that raised it."""
    condition = getattr(guard, "cond", None)
    symbols = sorted(str(s) for s in getattr(condition, "free_symbols", ()) or ())
    if not symbols:
        symbols = re.findall(r"\b(?:zuf|zf|u)\d+\b", first_lines(str(guard), 1))
    code = _code_of(symbols, {symbol_origin(s, graph_text) for s in symbols})
    if code is not None:
        return code
    # Strict export attaches no graph; the message still says which symbols are sizes.
    size_like = re.search(r"\(Size-like symbols: ([^)]*)\)", str(guard))
    if size_like and any(s in re.findall(r"\w+", size_like.group(1)) for s in symbols):
        return "PT103"
    # No graph to read: a guard evaluated by a Python number's dunder (SymInt/SymBool in
    # torch/__init__.py) means the user turned data into a number first.
    for exc in chain:
        frames = traceback.extract_tb(exc.__traceback__)
        for index, frame in enumerate(frames):
            if workspace.contains(frame.filename) and index + 1 < len(frames):
                following = frames[index + 1]
                if following.filename.endswith(os.path.join("torch", "__init__.py")) and not any(
                    workspace.contains(f.filename) for f in frames[index + 1 :]
                ):
                    return "PT102"
    return "PT101"


HINTS = {
    "PT101": "export cannot branch on a tensor's value; use torch.cond or torch.where",
    "PT102": "a Python number taken from a tensor's value drives control flow; use torch._check or keep it a tensor",
    "PT103": "a data-dependent size is used as a Python number; bound it with torch._check",
}


# `# File: /p/m.py:12 in forward, code: idx = x.nonzero()`: the source of the nodes below it.
_SOURCE = re.compile(r"^\s*# File: (.+):(\d+) in \w+, code: (.*)$")


def symbol_producer(symbol: str, graph_text: str) -> str | None:
    """The op whose result binds an unbacked symbol in the partial FX graph (`nonzero` for `u0`
    in `nonzero: "i64[u0, 1]" = torch.ops.aten.nonzero.default(x)`), or None."""
    source = symbol_source(symbol, graph_text)
    return source[0] if source else None


def symbol_source(symbol: str, graph_text: str) -> tuple[str | None, str | None, int | None, str | None] | None:
    """(op, file, line, code) of the graph node that binds an unbacked symbol: the op, and the
    source line the graph notes above the node (None for what it does not say); None when no
    node binds it."""
    word = re.compile(rf"\b{re.escape(symbol)}\b")
    where: tuple[str, int, str] | None = None
    for line in graph_text.splitlines():
        noted = _SOURCE.match(line)
        if noted:
            where = (noted.group(1), int(noted.group(2)), noted.group(3).strip())
            continue
        match = _ANNOTATED.match(line)
        if match and word.search(match.group(2)):
            op = re.search(r"torch\.ops\.\w+\.(\w+)", match.group(3))
            file, number, code = where if where else (None, None, None)
            return (op.group(1) if op else None, file, number, code)
    return None


def _named_symbols(
    symbols: list[str],
    graph_text: str,
    workspace: Workspace | None,
    declared: dict[str, str],
    tested_at: tuple[str, int, str] | None = None,
) -> str:
    """`, where u0 is a size of what `nonzero` returns at m.py:4 (`idx = x.nonzero()`), ...`
    for the symbols the graph says made, with the user's line that made each, and for those an
    input's spec declares (`declared`, see `shape_vars`), the declaration.

    A tensor's truth value is made where the tensor is tested, which is where the guard stopped
    the trace: `tested_at` (file, line, code), the finding's own line. torch's graph notes name
    the module's `forward` frame for every node, so a comparison in a helper function is noted
    at the call in `forward` (net.py:8, not helpers.py:3; measured with torch 2.15)."""
    said = []
    for symbol in symbols:
        if symbol in declared:
            said.append(f"{symbol} is {declared[symbol]}")
            continue
        source = symbol_source(symbol, graph_text)
        if source is None or source[0] is None:
            continue
        op, file, number, code = source
        at = ""
        if file and number and (workspace is None or workspace.contains(file)):
            at = f" at {os.path.basename(file)}:{number}" + (f" (`{code}`)" if code else "")
        origin = symbol_origin(symbol, graph_text)
        if origin == "size":
            said.append(f"{symbol} is a size of what `{op}` returns{at}, which depends on the data")
        elif origin == "scalar":
            said.append(f"{symbol} is a number read from a tensor's data{at}")
        elif origin == "bool":
            if tested_at is not None:
                file, number, code = tested_at
                at = f" at {os.path.basename(file)}:{number}" + (f" (`{code}`)" if code else "")
            said.append(f"{symbol} is the truth value of a tensor{at}")
    return f", where {'; '.join(said)}" if said else ""


def data_dependent_message(
    guard: BaseException,
    code: str,
    graph_text: str = "",
    workspace: Workspace | None = None,
    source_line: str | None = None,
    declared: dict[str, str] | None = None,
    tested_at: tuple[str, int] | None = None,
) -> str:
    """torch's guard in a sentence, its symbols named, the rule's hint, and, where torch suggests
    its data-dependent friendly APIs for a number or a size (PT102, PT103), those forms written
    with the user's condition (from the partial graph, else `source_line`, the user's line)."""
    head = first_lines(str(guard), 1).split(" (unhinted:")[0]
    head = re.sub(r"\s*\(Size-like symbols: [^)]*\)", "", head).strip().rstrip(".")
    symbols = sorted(set(re.findall(r"\b(?:zuf|zf|u)\d+\b", head)))
    tested = (*tested_at, (source_line or "").strip()) if tested_at else None
    message = f"{head}{_named_symbols(symbols, graph_text, workspace, declared or {}, tested)}: {HINTS[code]}"
    if code in ("PT102", "PT103") and suggests_friendly_apis(str(guard)):
        condition = condition_of(failing_code(graph_text) or source_line)
        if condition is not None:
            message += "; " + friendly_forms(condition)
    return message


def draft_data_dependent_code(data, program, filenames) -> str:
    """The rule of one DATA_DEPENDENT_ERROR of draft_export's report, from the graph nodes that
    bind its symbols, else from the frame that raised it."""
    expr = str(data.get("expr") or "")
    symbols = re.findall(r"\b(?:zuf|zf|u)\d+\b", expr)
    origins = set()
    try:
        for node in program.graph.nodes:
            bindings = node.meta.get("unbacked_bindings") or {}
            if not any(str(symbol) in symbols for symbol in bindings):
                continue
            target = str(node.target)
            if "item" in target or "_local_scalar_dense" in target:
                argument = node.args[0] if node.args else None
                value = getattr(argument, "meta", {}).get("val") if argument is not None else None
                origins.add("bool" if str(getattr(value, "dtype", "")) == "torch.bool" else "scalar")
            else:
                origins.add("size")
    except Exception:  # noqa: BLE001 - a graph without the metadata tells no origin
        pass
    code = _code_of(symbols, origins)
    if code is not None:
        return code
    stack = data.get("stack") or []
    if stack:
        name = stack[0].get("filename")
        filename = filenames.get(name, name) if isinstance(name, int) else name
        if isinstance(filename, str) and filename.replace("\\", "/").endswith("torch/__init__.py"):
            return "PT102"
    return "PT101"
