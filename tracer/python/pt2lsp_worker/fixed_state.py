"""Fixed-size state against a dynamic dimension: a buffer, parameter or tensor attribute that
`__init__` built with a size from the configuration (`torch.zeros(cfg.max_batch, ...)`), combined
on a line of `forward` with an input whose dimension is declared dynamic.

torch says only that two sizes differ ("The size of tensor a (s77) must match the size of tensor
b (4) at non-singleton dimension 0", when the example's size is not the state's) or that the
dimension was specialised to a constant (when it is). Neither names the state. Here the state is
found on the failing line (the `self.<name>` chains it reads, resolved on the model's modules of
the line's class) with the size torch names, and where it was built (its `register_buffer`,
`register_parameter`, `setattr` or assignment in the class's source)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
import sys

from .findings import Location
from .spec import declared_sources
from .text import clip
from .workspace import parsed

# torch 2.15's words for two sizes that must be equal (measured: an elementwise op, `torch.cat`,
# an assignment into a slice), in strict export inside Dynamo's "Dynamo failed to run FX node"
# text, with the symbol written `s6: hint = 2` there.
_BROADCAST = re.compile(
    r"The size of tensor a \(([^()]+)\) must match the size of tensor b \(([^()]+)\) at non-singleton dimension (\d+)"
)
_CONCATENATION = re.compile(
    r"Sizes of tensors must match except in dimension \d+\. "
    r"Expected (\S+) in dimension (\d+) but got (\S+) for tensor number \d+ in the list"
)
_EXPAND = re.compile(r"expand: attempting to expand a dimension of length (\S+) -> (\S+?)!")
_SIDE = re.compile(r"^(?:(\d+)|(s\d+)(?::\s*hint\s*=\s*(\d+))?)$")


@dataclasses.dataclass
class SizeMismatch:
    """Two sizes torch required equal: a fixed `size` and a dynamic input's `symbol` (with its
    example's size, `hint`, when torch prints it); `dim` the dimension torch names, if any;
    `sentence` torch's words."""

    size: int
    symbol: str
    hint: int | None
    dim: int | None
    sentence: str


def size_mismatch(text: str) -> SizeMismatch | None:
    """The first mismatch in `text` between a number and a backed symbol (a dimension of an
    input); None for two numbers (a plain shape error) or a data-dependent size (`u0`)."""
    candidates = []
    for match in _BROADCAST.finditer(text):
        candidates.append((match.group(1), match.group(2), int(match.group(3)), match.group(0)))
    for match in _CONCATENATION.finditer(text):
        candidates.append((match.group(1), match.group(3), int(match.group(2)), match.group(0)))
    for match in _EXPAND.finditer(text):
        candidates.append((match.group(1), match.group(2), None, match.group(0)))
    for one, other, dim, sentence in candidates:
        sides = [_SIDE.match(side.strip()) for side in (one, other)]
        if None in sides:
            continue
        numbers = [side for side in sides if side.group(1) is not None]
        symbols = [side for side in sides if side.group(2) is not None]
        if len(numbers) == 1 and len(symbols) == 1:
            symbol = symbols[0]
            hint = int(symbol.group(3)) if symbol.group(3) else None
            # The symbol as torch printed it outside Dynamo (`s6`, without the hint).
            sentence = re.sub(r"\b(s\d+):\s*hint\s*=\s*\d+", r"\1", sentence)
            return SizeMismatch(int(numbers[0].group(1)), symbol.group(2), hint, dim, sentence)
    return None


@dataclasses.dataclass
class State:
    """A tensor the module keeps, read on the failing line: `expression` as written there
    (`self.k_cache`), its `kind`, shape, the dimension of the fixed size, and where it was built."""

    expression: str
    kind: str
    shape: tuple[int, ...]
    dim: int
    built: Location | None

    def described(self) -> str:
        """`self.k_cache` (size 4 at dim 0, built at model.py:9)."""
        where = f", built at {os.path.basename(self.built.file)}:{self.built.line}" if self.built else ""
        return f"`{self.expression}` (size {self.shape[self.dim]} at dim {self.dim}{where})"


def state_on_line(model, file: str, line: int, size: int, dim: int | None = None) -> State | None:
    """The state of size `size` (at `dim` when torch names one that fits) that the statement at
    `file:line` reads as `self.<name>` (or `self.<a>.<name>`), on a module of `model` whose class
    defines the method holding the line."""
    tree = parsed(os.path.abspath(file))
    if tree is None:
        return None
    found = _enclosing(tree, line)
    if found is None:
        return None
    classdef, function, statement = found
    if not function.args.args:
        return None
    receiver = function.args.args[0].arg
    chains = _attribute_chains(statement, receiver) + _aliased_chains(function, statement, receiver)
    if not chains:
        return None
    path = os.path.realpath(file)
    for module in _modules_of_class(model, classdef.name, path):
        for chain in chains:
            state = _resolve(module, chain, size, dim)
            if state is not None:
                state.expression = ".".join([receiver, *chain])
                return state
    return None


def _aliased_chains(function, statement: ast.stmt, receiver: str) -> list[list[str]]:
    """The chains the statement reads through a local name bound to one earlier in the method
    (`k_cache = self.k_cache` above `return k + k_cache`)."""
    read = {node.id for node in ast.walk(statement) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    chains: list[list[str]] = []
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign) or node.lineno >= statement.lineno or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name) or target.id not in read or not isinstance(node.value, ast.Attribute):
            continue
        bound = _attribute_chains(ast.Expr(node.value), receiver)
        if bound and bound[0] not in chains:
            chains.append(bound[0])
    return chains


def _enclosing(tree: ast.Module, line: int):
    """(class, method, innermost statement) around `line`: the method directly in the class."""
    for classdef in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for function in classdef.body:
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if not function.lineno <= line <= (function.end_lineno or function.lineno):
                continue
            statements = [
                node
                for node in ast.walk(function)
                if isinstance(node, ast.stmt)
                and node is not function
                and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.lineno <= line <= (node.end_lineno or node.lineno)
            ]
            if not statements:
                return None
            innermost = min(statements, key=lambda node: (node.end_lineno or node.lineno) - node.lineno)
            return classdef, function, innermost
    return None


def _attribute_chains(statement: ast.stmt, receiver: str) -> list[list[str]]:
    """The attribute chains on `receiver` the statement reads (`self.cache.k` is ["cache", "k"]),
    longest first; the statement's own compound bodies are left out."""
    roots = [statement]
    if isinstance(statement, (ast.If, ast.While)):
        roots = [statement.test]
    elif isinstance(statement, (ast.For, ast.AsyncFor)):
        roots = [statement.iter]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        roots = [item.context_expr for item in statement.items]
    chains: list[list[str]] = []
    for root in roots:
        for node in ast.walk(root):
            if not isinstance(node, ast.Attribute):
                continue
            chain = []
            current = node
            while isinstance(current, ast.Attribute):
                chain.append(current.attr)
                current = current.value
            if isinstance(current, ast.Name) and current.id == receiver:
                chain.reverse()
                if chain not in chains:
                    chains.append(chain)
    chains.sort(key=len, reverse=True)
    return chains


def _modules_of_class(model, class_name: str, path: str) -> list:
    """The modules of `model` (itself included) an instance of the class `class_name` defined in
    `path`, or of a subclass of it."""
    modules = getattr(model, "modules", None)
    if modules is None:
        return []
    found = []
    try:
        for module in modules():
            if any(cls.__name__ == class_name and _defined_in(cls) == path for cls in type(module).__mro__):
                found.append(module)
    except Exception:  # noqa: BLE001 - a model whose modules cannot be listed names no state
        return []
    return found


def _defined_in(cls) -> str | None:
    """The file that defines `cls`: its methods' code says it, whatever name its module was
    loaded under (an entry file is run as a script, outside `sys.modules`)."""
    for value in vars(cls).values():
        code = getattr(getattr(value, "__func__", value), "__code__", None)
        if code is not None and not code.co_filename.startswith("<"):
            return os.path.realpath(code.co_filename)
    module = sys.modules.get(getattr(cls, "__module__", ""), None)
    file = getattr(module, "__file__", None)
    return os.path.realpath(file) if file else None


def _resolve(module, chain: list[str], size: int, dim: int | None) -> State | None:
    """The tensor `chain` names on `module`, when one of its dimensions has `size`."""
    owner = module
    for name in chain[:-1]:
        owner = getattr(owner, name, None)
        if owner is None:
            return None
    name = chain[-1]
    value = getattr(owner, name, None)
    shape = getattr(value, "shape", None)
    if value is None or shape is None or not hasattr(value, "dim"):
        return None
    try:
        shape = tuple(int(extent) for extent in shape)
    except (TypeError, ValueError):
        return None
    matching = [index for index, extent in enumerate(shape) if extent == size]
    if not matching:
        return None
    at = dim if dim in matching else matching[0]
    if name in (getattr(owner, "_buffers", None) or {}):
        kind = "buffer"
    elif name in (getattr(owner, "_parameters", None) or {}):
        kind = "parameter"
    else:
        kind = "tensor attribute"
    return State("", kind, shape, at, built_at(type(owner), name))


def built_at(cls, name: str) -> Location | None:
    """Where a class (or a base of it) builds its attribute `name`: `self.register_buffer("name",
    ...)`, `self.register_parameter("name", ...)`, `setattr(self, "name", ...)` or `self.name = ...`,
    in `__init__` first, else in another method."""
    for base in getattr(cls, "__mro__", ()):
        file = _defined_in(base)
        tree = parsed(file) if file else None
        if tree is None:
            continue
        for classdef in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == base.__name__):
            methods = [node for node in classdef.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
            methods.sort(key=lambda method: method.name != "__init__")
            for method in methods:
                if not method.args.args:
                    continue
                node = _building(method, method.args.args[0].arg, name)
                if node is not None:
                    return Location(file, node.lineno)
    return None


def _building(method, receiver: str, name: str):
    """The first statement of `method` that builds `receiver.<name>`."""

    def is_receiver(node) -> bool:
        return isinstance(node, ast.Name) and node.id == receiver

    def names_it(node) -> bool:
        return isinstance(node, ast.Constant) and node.value == name

    found = []
    for node in ast.walk(method):
        if isinstance(node, ast.Call):
            func = node.func
            registers = (
                isinstance(func, ast.Attribute)
                and func.attr in ("register_buffer", "register_parameter")
                and is_receiver(func.value)
                and node.args
                and names_it(node.args[0])
            )
            sets = (
                isinstance(func, ast.Name)
                and func.id == "setattr"
                and len(node.args) >= 2
                and is_receiver(node.args[0])
                and names_it(node.args[1])
            )
            if registers or sets:
                found.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Attribute) and part.attr == name and is_receiver(part.value):
                        found.append(node)
    return min(found, key=lambda node: node.lineno) if found else None


def mismatch_message(text: str, where: Location | None, target) -> str | None:
    """PT401's message for a raw size mismatch (`text`, torch's messages) at `where` between a
    dynamic input's size and state the module keeps; None when no state on the line has the
    fixed size."""
    mismatch = size_mismatch(text)
    if mismatch is None or where is None or where.line is None:
        return None
    state = state_on_line(target.model, where.file, where.line, mismatch.size, mismatch.dim)
    if state is None:
        return None
    named = dynamic_dims(target, mismatch)
    dimension = f"dynamic dimension `{named[0][0]}`" if len(named) == 1 else "a dynamic dimension"
    example = f"; the example's `{named[0][0]}` is {named[0][1]}, so eager fails on it too" if len(named) == 1 else ""
    return clip(
        f"{state.described()} meets {dimension} here, which its fixed size cannot follow (torch: "
        f"{mismatch.sentence}{example}): build the {state.kind} from the input's size in `forward` "
        "(or slice it to that size), or declare the dimension static"
    )


def dynamic_dims(target, mismatch: SizeMismatch) -> list[tuple[str, int]]:
    """(Dim name, example size) of the declared dimensions the mismatch's symbol can be: those
    whose example has the size torch printed (`s6: hint = 2`), else any whose example size is
    not the fixed one (with that size, torch would have specialised the dimension instead)."""
    sizes: dict[str, int] = {}
    for source, name in declared_sources(target).items():
        size = example_size(target, source)
        if size is None or size == mismatch.size or (mismatch.hint is not None and size != mismatch.hint):
            continue
        sizes.setdefault(name, size)
    return sorted(sizes.items())


_SOURCE = re.compile(r"^L\['([^']+)'\]((?:\[\d+\])*)\.size\(\)\[(\d+)\]$")


def example_size(target, source: str) -> int | None:
    """The example input's size at `source` (`L['x'].size()[0]`, `L['pair'][1].size()[0]`)."""
    match = _SOURCE.match(source)
    if match is None:
        return None
    try:
        bound = inspect.signature(target.model.forward).bind(*target.args, **(target.kwargs or {}))
    except (TypeError, ValueError, AttributeError):
        return None
    value = bound.arguments.get(match.group(1))
    for index in re.findall(r"\[(\d+)\]", match.group(2)):
        try:
            value = value[int(index)]
        except (TypeError, IndexError, KeyError):
            return None
    shape = getattr(value, "shape", None)
    dim = int(match.group(3))
    if shape is None or dim >= len(shape):
        return None
    return int(shape[dim])


def name_fixed_state(finding, target) -> None:
    """Says, on a PT401 whose suggested fix makes a dimension a constant, which state the line
    reads has that size (`self.k_cache` built for 4): the state, not the input, is the cause."""
    if finding.code != "PT401" or not finding.placed or finding.file is None:
        return
    for fix in finding.fixes:
        if fix.kind != "constant" or fix.value is None or fix.value < 2:
            continue
        state = state_on_line(target.model, finding.file, finding.line, fix.value)
        if state is None or f"`{state.expression}`" in finding.message:
            continue
        finding.message = clip(
            f"{state.described()} is read here with dynamic dimension `{fix.dim}`, and its fixed size makes "
            f"`{fix.dim}` the constant {fix.value}; build the {state.kind} from the input's size in `forward` "
            f"(or slice it to that size): {finding.message}"
        )
        return
