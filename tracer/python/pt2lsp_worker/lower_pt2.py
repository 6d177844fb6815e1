"""The `.pt2` round trip: `torch.export.save` to the job's scratch directory, `torch.export.load`
back, and a run of the loaded program against the eager model on the example inputs. A tensor
the serializer cannot write (a sparse buffer, a dtype it has no code for) is PT702 on the line
that made it: the `register_buffer` / `self.x = ...` line of the module's `__init__` for state,
the line in `forward` for a constant made there."""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
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
    return fresh_load_findings(program, path, target, workspace)


# Op namespaces that `import torch` registers: a program of these alone loads anywhere torch does.
_TORCH_NAMESPACES = {"aten", "prims", "higher_order"}


def registered_elsewhere(program) -> list:
    """The graph nodes whose ops only the code that ran the export registered (a custom op of the
    user's, `torchvision::nms`): a process that loads the `.pt2` must register them first."""
    nodes = []
    for node in program.graph.nodes:
        namespace = getattr(node.target, "namespace", None) if node.op == "call_function" else None
        if isinstance(namespace, str) and namespace not in _TORCH_NAMESPACES:
            nodes.append(node)
    return nodes


_FRESH_LOAD = "import sys, torch\ntorch.export.load(sys.argv[1])\n"

# Seconds a fresh interpreter gets to import torch and load the program.
_FRESH_LOAD_SECONDS = 120


def fresh_load_findings(program, path: str, target, workspace: Workspace) -> list[Finding]:
    """`torch.export.load` in a fresh interpreter, as a server that deploys the `.pt2` runs it,
    when the program calls ops that only the exporting process registered: the load fails there
    unless the module that registers them is imported first. Measured with torch 2.15: a
    `torch.library.custom_op` of the user's makes `torch.export.load` raise "We failed to resolve
    torch.ops.<ns>.<op>.default to an operator" in a new process, while the load in the
    exporting process succeeds. One finding per line that calls such an op."""
    nodes = registered_elsewhere(program)
    if not nodes:
        return []
    try:
        done = subprocess.run(
            [sys.executable, "-c", _FRESH_LOAD, path],
            capture_output=True,
            text=True,
            timeout=_FRESH_LOAD_SECONDS,
            cwd=os.path.dirname(path),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode == 0:
        return []
    unresolved = set(re.findall(r"failed to resolve torch\.ops\.(\w+)\.(\w+)", done.stderr))
    said = re.search(r"We failed to resolve \S+ to an operator", done.stderr)
    torch_words = said.group(0) if said else _last_line(done.stderr)
    findings = []
    by_line: set[tuple[str, int]] = set()
    for node in nodes:
        namespace, _, rest = node.target.name().partition("::")
        op = (namespace, rest.split(".")[0])
        if unresolved and op not in unresolved:
            continue
        where, related = node_place(node, workspace)
        if where is not None and (where.file, where.line) in by_line:
            continue
        finding = Finding(
            CODE,
            f".pt2 round trip: a new process cannot load the saved program: it calls `{op[0]}::{op[1]}`, "
            f"which only the exporting process registered; `torch.export.load` finds it once the module "
            f"that registers it is imported first (torch: {torch_words})",
            origin="target:pt2",
        )
        if where is None:
            place_on_entrypoint(finding, target)
        else:
            finding.place(where)
            finding.related = related
            by_line.add((where.file, where.line))
        findings.append(finding)
    if not findings:
        findings.append(_on_entrypoint(f"a new process cannot load the saved program: {_last_line(done.stderr)}", target))
    return findings


def _last_line(text: str) -> str:
    """The error's own line: the last non-empty line of the interpreter's stderr."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "it exited with an error"


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
