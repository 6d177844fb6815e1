"""The `.pt2` round trip: `torch.export.save` to the job's scratch directory, `torch.export.load`
back, and a run of the loaded program against the eager model on the example inputs. A tensor
the serializer cannot write (a sparse buffer, a dtype it has no code for) is PT702 on the line
that made it: the `register_buffer` / `self.x = ...` line of the module's `__init__` for state,
the line in `forward` for a constant made there."""

from __future__ import annotations

import ast
import inspect
import os
import textwrap

from .findings import Finding, Location
from .lowering import CODES, exception_text, node_place, place_on_entrypoint, raise_if_out_of_memory
from .outputs import compare_outputs
from .workspace import Workspace

CODE = CODES["pt2"]


def lower(program, target, workspace: Workspace, scratch: str) -> list[Finding]:
    import torch

    path = os.path.join(scratch, "program.pt2")
    try:
        torch.export.save(program, path)
    except Exception as exc:  # noqa: BLE001 - the serializer's error is the finding
        raise_if_out_of_memory(exc)
        findings = unsaveable_tensors(program, target, workspace, exc)
        if findings:
            return findings
        return [_on_entrypoint(f"torch.export.save cannot write the program: {exception_text(exc)}", target)]
    try:
        loaded = torch.export.load(path)
    except Exception as exc:  # noqa: BLE001
        raise_if_out_of_memory(exc)
        return [_on_entrypoint(f"torch.export.load cannot read back the saved program: {exception_text(exc)}", target)]
    try:
        with torch.no_grad():
            torch.manual_seed(0)
            actual = loaded.module()(*target.args, **(target.kwargs or {}))
            torch.manual_seed(0)
            expected = target.model(*target.args, **(target.kwargs or {}))
    except Exception as exc:  # noqa: BLE001
        raise_if_out_of_memory(exc)
        return [_on_entrypoint(f"the program loaded from its .pt2 fails to run: {exception_text(exc)}", target)]
    comparison = compare_outputs(expected, actual)
    if not comparison.matches:
        return [_on_entrypoint(f"the program loaded from its .pt2 disagrees with eager: {comparison.detail}", target)]
    return []


def _on_entrypoint(message: str, target) -> Finding:
    finding = Finding(CODE, f".pt2 round trip: {message}", origin="target:pt2")
    place_on_entrypoint(finding, target)
    return finding


def unsaveable_tensors(program, target, workspace: Workspace, exc: BaseException) -> list[Finding]:
    """PT702 per state or constant tensor the serializer cannot write, on the line that made it."""
    signature = program.graph_signature
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    named = {}
    for placeholder, fqn in {**signature.inputs_to_parameters, **signature.inputs_to_buffers}.items():
        named[fqn] = ("state", placeholder)
    for placeholder, name in signature.inputs_to_lifted_tensor_constants.items():
        named[name] = ("constant", placeholder)
    tensors = {**program.state_dict, **program.constants}
    findings = []
    for name, tensor in tensors.items():
        why = unsaveable_reason(tensor)
        if why is None:
            continue
        kind, placeholder = named.get(name, ("state", None))
        message = f".pt2 round trip: torch.export.save cannot write `{name}`: {why} ({exception_text(exc)})"
        finding = Finding(CODE, message, origin="target:pt2")
        where = None
        if kind == "constant" and placeholder in placeholders:
            for user in placeholders[placeholder].users:
                where, finding.related = node_place(user, workspace)
                if where is not None:
                    break
        else:
            where = attribute_site(target.model, name, workspace)
        if where is not None:
            finding.place(where)
        else:
            place_on_entrypoint(finding, target)
        findings.append(finding)
    return findings


def unsaveable_reason(tensor) -> str | None:
    """Why the `.pt2` serializer cannot write `tensor` (its storage is not a plain buffer, or its
    dtype has no code in the format), None when it can."""
    import torch

    if not isinstance(tensor, torch.Tensor):
        return None
    if tensor.layout != torch.strided:
        return f"a {str(tensor.layout).removeprefix('torch.')} tensor has no plain storage to write; store it dense"
    try:
        from torch._export.serde.serialize import _TORCH_TO_SERIALIZE_DTYPE
    except ImportError:
        return None
    if tensor.dtype not in _TORCH_TO_SERIALIZE_DTYPE:
        return f"the .pt2 format has no code for dtype {tensor.dtype}"
    return None


def attribute_site(model, fqn: str, workspace: Workspace) -> Location | None:
    """Where the user's `__init__` makes the parameter or buffer `fqn` (`encoder.table`): a
    `self.table = ...` assignment or a `register_buffer("table", ...)` /
    `register_parameter("table", ...)` call in a class of the user's files."""
    owner_path, _, attribute = fqn.rpartition(".")
    try:
        owner = model.get_submodule(owner_path) if owner_path else model
    except AttributeError:
        return None
    for cls in type(owner).__mro__:
        try:
            file = inspect.getsourcefile(cls)
            lines, first = inspect.getsourcelines(cls)
        except (TypeError, OSError):
            continue
        if not workspace.contains(file):
            continue
        try:
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if _makes(node, attribute):
                return Location(os.path.abspath(file), first + node.lineno - 1)
    return None


def _makes(node, attribute: str) -> bool:
    """`self.<attribute> = ...` or `self.register_buffer("<attribute>", ...)`."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(
            isinstance(t, ast.Attribute) and t.attr == attribute and isinstance(t.value, ast.Name) and t.value.id == "self"
            for t in targets
        )
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        name = call.func.attr if isinstance(call.func, ast.Attribute) else None
        if name in ("register_buffer", "register_parameter") and call.args:
            first = call.args[0]
            return isinstance(first, ast.Constant) and first.value == attribute
    return False
