"""Tensors of the trace kept as constants of the exported program.

Measured with torch 2.15 (`docs/measured/torch-2.15-failure-kinds.md`): a differentiating
function transform in `forward` (`torch.func.grad(f)(x)`, `jacrev`, ...) and a write through
`.data` (`self.weight.data = ...`, `self.weight.data.add_(...)`) leave a `FakeTensor` of the
trace among the program's constants (`lifted_tensor_0`). Non-strict export refuses a `.data`
write with "We found a fake tensor in the exported program constant's list", naming the
constant and no line; every other case exports a program that returns fake tensors or updates
a copy of the parameter. Either way the constant's users in the graph carry the user's line in
their `stack_trace`, and that line says which it is: PT603 for a transform, PT602 for `.data`,
PT601 (the program computes something else than eager) for anything else.
"""

from __future__ import annotations

import linecache
import os
import re

from .findings import Finding, Location, located
from .workspace import Workspace

# torch.func's transforms that differentiate (vmap is not one: it traces, measured).
TRANSFORMS = ("grad", "grad_and_value", "jacrev", "jacfwd", "hessian", "vjp", "jvp", "linearize")
_TRANSFORM_CALL = re.compile(rf"\b(?:torch\.func\.|functorch\.|func\.)?({'|'.join(TRANSFORMS)})\s*\(")
_DATA_WRITE = re.compile(r"\.data\b")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')

# The constant torch names in its refusal: `… following model attribute: lifted_tensor_0.`
_REFUSED = re.compile(r"We found a fake tensor in the exported program constant's list.*?model attribute: (\w+)", re.S)

MESSAGES = {
    "PT602": (
        "`.data` is written here: export traces the update on a copy it keeps as a constant of the "
        "program (a tensor of the trace, not the parameter), so non-strict export refuses it and strict "
        "export builds a program that does not update the parameter. Update it in place under "
        "`torch.no_grad()` instead (`with torch.no_grad(): self.weight.copy_(...)`), which exports"
    ),
    "PT603": (
        "`{transform}` in traced code: export lifts the input it differentiates as a constant of the trace, "
        "so the exported program cannot run (it returns fake tensors). Compute the derivative with "
        "`torch.autograd.grad` under `torch.enable_grad()` on `x.detach().requires_grad_(True)` "
        "(non-strict export traces it), or in closed form"
    ),
    "PT601": (
        "the exported program keeps a tensor of the trace as a constant here (`{constant}`), so it does not "
        "compute what eager computes"
    ),
}


def fake_constants(program) -> list[str]:
    """The names of the program's constants that are tensors of the trace (a FakeTensor,
    possibly inside functorch's wrappers)."""
    from torch._subclasses.fake_tensor import is_fake

    names = []
    for name, value in getattr(program, "constants", {}).items():
        try:
            if is_fake(value):
                names.append(name)
        except Exception:  # noqa: BLE001 - a constant torch cannot inspect is no tensor of the trace
            continue
    return names


def leak_findings(program, workspace: Workspace) -> list[Finding]:
    """A successful export's constants that are tensors of the trace, each a finding on the
    user's line that uses it."""
    try:
        names = fake_constants(program)
        return _findings(program.graph, program.graph_signature.input_specs, names, workspace)
    except Exception:  # noqa: BLE001 - the check only adds to a successful export
        return []


def refused_leak(chain: list[BaseException], workspace: Workspace) -> Finding | None:
    """Non-strict export's refusal of a constant that is a tensor of the trace, placed on the
    user's line from the graph torch had built (found in the frame that raised it); None for
    any other failure."""
    for exc in chain:
        match = _REFUSED.search(str(exc))
        if match is None:
            continue
        constant = match.group(1)
        graph, specs = _traced_artifact(exc)
        found = _findings(graph, specs, [constant], workspace) if graph is not None else []
        if found:
            return found[0]
        return located("PT602", None, MESSAGES["PT602"] + f" (torch names the constant `{constant}`)")
    return None


def _traced_artifact(exc: BaseException):
    """The graph and input specs torch's export had built when it raised `exc` (the
    `export_artifact` of `torch/export/_trace.py`), or (None, None)."""
    tb = exc.__traceback__
    while tb is not None:
        artifact = tb.tb_frame.f_locals.get("export_artifact")
        aten = getattr(artifact, "aten", None)
        if aten is not None and getattr(aten, "gm", None) is not None:
            return aten.gm.graph, getattr(getattr(aten, "sig", None), "input_specs", None)
        tb = tb.tb_next
    return None, None


def _findings(graph, input_specs, constants: list[str], workspace: Workspace) -> list[Finding]:
    """One finding per constant, on the user's line of the first graph node that uses it."""
    placeholders = {}
    for spec in input_specs or []:
        if getattr(spec, "target", None) in constants:
            placeholders[getattr(spec.arg, "name", None)] = spec.target
    found: list[Finding] = []
    seen: set[tuple[str, int]] = set()
    for node in graph.nodes:
        if node.op != "placeholder" or node.name not in placeholders:
            continue
        for user in node.users:
            finding = _classified(user.meta.get("stack_trace") or "", placeholders[node.name], workspace)
            if finding is None:
                continue
            key = (finding.file or "", finding.line or 0)
            if key not in seen:
                seen.add(key)
                found.append(finding)
            break
    return found


def _classified(stack_trace: str, constant: str, workspace: Workspace) -> Finding | None:
    """The finding a user of a leaked constant stands for, from its stack's user lines: the
    outermost line that calls a transform (PT603), else the innermost that writes `.data`
    (PT602), else the innermost user line (PT601)."""
    frames = []
    for match in _FRAME.finditer(stack_trace):
        if workspace.contains(match.group(1)):
            path = os.path.abspath(match.group(1))
            line = int(match.group(2))
            frames.append((path, line, linecache.getline(path, line)))
    if not frames:
        return None
    for path, line, code in frames:
        transform = _TRANSFORM_CALL.search(code)
        if transform:
            message = MESSAGES["PT603"].format(transform=transform.group(0).rstrip(" ("))
            return located("PT603", Location(path, line), message)
    for path, line, code in reversed(frames):
        if _DATA_WRITE.search(code):
            return located("PT602", Location(path, line), MESSAGES["PT602"])
    path, line, _ = frames[-1]
    return located("PT601", Location(path, line), MESSAGES["PT601"].format(constant=constant))
