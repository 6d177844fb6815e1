"""`pt2lsp export --target`: the deployment artefact of an exported program (the `.onnx`, the
AOTInductor package, the ExecuTorch `.pte`), made by the target's own lowering, moved to the
temporary path the caller chose, loaded back by the target's runtime (onnxruntime, AOTInductor's
loader, ExecuTorch's runtime) and run against the eager model on the example inputs, then renamed
over the output. A lowering that fails reports its findings on the user's lines instead."""

from __future__ import annotations

import os
import shutil
import time

from .findings import Finding
from .lowering import TargetUnavailable, place_on_entrypoint
from .outputs import compare_outputs
from .program_info import describe_inputs, range_constraints
from .text import trim

# What `lower` leaves in the scratch directory, per target.
ARTEFACTS = {"onnx": "model.onnx", "aoti": "model.pt2", "executorch": "model.pte"}

# Tolerances of the artefact's outputs against eager (torch.allclose): compiled kernels and other
# runtimes reorder floating-point sums.
VERIFY_RTOL = 1e-3
VERIFY_ATOL = 1e-4


def write_artefact(program, target, workspace, request: dict, scratch: str, progress, started: float) -> dict:
    """The job's result: the report of the written artefact, or the lowering's findings."""
    from . import lower_aoti, lower_executorch, lower_onnx

    name = request["target"]
    modules = {"onnx": lower_onnx, "aoti": lower_aoti, "executorch": lower_executorch}
    output = os.path.abspath(request["output"])
    temporary = os.path.abspath(request["temporary"])
    directory = os.path.join(scratch, f"artefact-{name}")
    os.makedirs(directory, exist_ok=True)
    progress("lowering", f"lowering for {name}")
    try:
        findings = modules[name].lower(program, target, workspace, directory)
    except TargetUnavailable as exc:
        finding = Finding("PT503", f"cannot write the {name} artefact: {exc}", origin="entrypoint")
        place_on_entrypoint(finding, target)
        return {"status": "entrypoint", "diagnostics": [finding.to_json()]}
    built = os.path.join(directory, ARTEFACTS[name])
    if any(finding.code != "PT706" for finding in findings) or not os.path.exists(built):
        return {"status": "failed", "diagnostics": [finding.to_json() for finding in findings]}
    os.makedirs(os.path.dirname(output), exist_ok=True)
    shutil.move(built, temporary)
    progress("verifying", f"loading the {name} artefact back and running it against eager")
    verification = verify(name, temporary, target)
    report = {
        "path": output,
        "size": os.path.getsize(temporary),
        "nodes": len(program.graph.nodes),
        "inputs": describe_inputs(program),
        "range_constraints": range_constraints(program, target),
        "verification": verification,
        "strict": bool(target.strict),
        "target": name,
    }
    os.replace(temporary, output)
    return {
        "status": "ok",
        "diagnostics": [finding.to_json() for finding in findings],
        "export": report,
        "trace_seconds": round(time.monotonic() - started, 3),
    }


def verify(name: str, path: str, target) -> dict:
    """The artefact at `path` run by its runtime on the example inputs, against eager."""
    import torch
    from torch.utils import _pytree as pytree

    out = {"matches": False, "max_abs_diff": None, "rtol": VERIFY_RTOL, "atol": VERIFY_ATOL, "detail": None}
    kwargs = target.kwargs or {}
    inputs = [leaf for leaf in pytree.tree_leaves((target.args, kwargs)) if isinstance(leaf, torch.Tensor)]
    try:
        actual = _run(name, path, target, inputs)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - the runtime's error is the verification's answer
        out["detail"] = f"running the {name} artefact failed: {type(exc).__name__}: {trim(str(exc))}"
        return out
    with torch.no_grad():
        torch.manual_seed(0)
        expected = target.model(*target.args, **kwargs)
    expected = [leaf for leaf in pytree.tree_leaves(expected) if isinstance(leaf, torch.Tensor)]
    comparison = compare_outputs(expected, list(actual), lambda _dtype: (VERIFY_RTOL, VERIFY_ATOL))
    out.update(matches=comparison.matches, max_abs_diff=comparison.max_abs_diff, detail=comparison.detail)
    return out


def _run(name: str, path: str, target, inputs: list) -> list:
    """The artefact's outputs (tensors, flattened) on `inputs`."""
    import torch
    from torch.utils import _pytree as pytree

    if name == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {spec.name: tensor.detach().cpu().numpy() for spec, tensor in zip(session.get_inputs(), inputs, strict=False)}
        return [torch.from_numpy(array) for array in session.run(None, feeds)]
    if name == "aoti":
        runner = torch._inductor.aoti_load_package(path)
        with torch.no_grad():
            result = runner(*target.args, **(target.kwargs or {}))
        return [leaf for leaf in pytree.tree_leaves(result) if isinstance(leaf, torch.Tensor)]
    from executorch.runtime import Runtime

    method = Runtime.get().load_program(path).load_method("forward")
    return [leaf for leaf in method.execute(inputs) if isinstance(leaf, torch.Tensor)]
