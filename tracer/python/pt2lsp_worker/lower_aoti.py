"""The AOTInductor target: `torch._inductor.aoti_compile_and_package` of the exported program in
the job's scratch directory (Inductor's own caches go there too). It needs a C++ compiler; without
one the target is unavailable, not failed. A build that fails is PT704 where the cause is: the
state tensor Inductor cannot hold (a sparse buffer), the `return` of a `forward` that returns a
Python number, the node of the op Inductor could not lower, else the entrypoint."""

from __future__ import annotations

import ast
import inspect
import os
import re
import shutil
import textwrap

from .findings import Finding, Location
from .lower_pt2 import attribute_site
from .lowering import (
    CODES,
    TargetUnavailable,
    exception_text,
    node_place,
    op_name,
    place_on_entrypoint,
    raise_if_out_of_memory,
    traceback_place,
)
from .workspace import Workspace

CODE = CODES["aoti"]

# Inductor's lowering errors name the op: "target: aten.foo.default".
_TARGET = re.compile(r"target: ([\w.]+)")
_NUMBER_OUTPUT = re.compile(r"Unexpected output types: \[<class '(float|int|bool|complex)'>")


def compiler() -> str | None:
    """The C++ compiler Inductor would use: `$CXX`, else c++, g++ or clang++ on PATH."""
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def require() -> None:
    if compiler() is None:
        raise TargetUnavailable(
            "the aoti target needs a C++ compiler (AOTInductor compiles the program to a shared library): "
            "install g++ or clang++, or name one in $CXX"
        )


def build(program, scratch: str) -> str:
    """The AOTInductor package of `program`, written under `scratch`; its path."""
    import torch

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(scratch, "inductor-cache")
    return torch._inductor.aoti_compile_and_package(program, package_path=os.path.join(scratch, "model.pt2"))


def lower(program, target, workspace: Workspace, scratch: str) -> list[Finding]:
    require()
    try:
        build(program, scratch)
    except Exception as exc:  # noqa: BLE001 - Inductor's error is the finding
        raise_if_out_of_memory(exc)
        return [build_failure(program, target, workspace, exc)]
    return []


def build_failure(program, target, workspace: Workspace, exc: BaseException) -> Finding:
    reason = exception_text(exc)
    text = "\n".join(_chain_texts(exc))
    finding = Finding(CODE, f"AOTInductor: the build failed: {reason}", origin="target:aoti")
    for name, tensor in program.state_dict.items():
        import torch

        if isinstance(tensor, torch.Tensor) and tensor.layout != torch.strided:
            finding.message = (
                f"AOTInductor: the build failed on `{name}`, a {str(tensor.layout).removeprefix('torch.')} "
                f"tensor Inductor cannot hold as a constant; store it dense ({reason})"
            )
            where = attribute_site(target.model, name, workspace)
            if where is not None:
                finding.place(where)
                return finding
    number = _NUMBER_OUTPUT.search(text)
    if number:
        finding.message = (
            f"AOTInductor: the build failed: `forward` returns a Python {number.group(1)}, and a compiled "
            "program returns tensors only; return a tensor (torch.tensor(value)) or drop the value"
        )
        where = _return_site(target.model, workspace)
        if where is not None:
            finding.place(where)
            return finding
    op = _TARGET.search(text)
    if op:
        for node in program.graph.nodes:
            if node.op == "call_function" and op_name(node) == op.group(1):
                where, finding.related = node_place(node, workspace)
                if where is not None:
                    finding.message = f"AOTInductor: the build failed on `{op.group(1)}`: {reason}"
                    finding.place(where)
                    return finding
    where = traceback_place(exc, workspace)
    if where is not None:
        finding.place(where)
    else:
        place_on_entrypoint(finding, target)
    return finding


def _chain_texts(exc: BaseException) -> list[str]:
    out = []
    while exc is not None and len(out) < 20:
        out.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return out


def _return_site(model, workspace: Workspace) -> Location | None:
    """The last `return` of the model's `forward`, when the user wrote it."""
    forward = getattr(type(model), "forward", None)
    try:
        file = inspect.getsourcefile(forward)
        lines, first = inspect.getsourcelines(forward)
    except (TypeError, OSError):
        return None
    if not workspace.contains(file):
        return None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    returns = [node for node in ast.walk(tree) if isinstance(node, ast.Return)]
    if not returns:
        return None
    last = max(returns, key=lambda node: node.lineno)
    return Location(os.path.abspath(file), first + last.lineno - 1)
