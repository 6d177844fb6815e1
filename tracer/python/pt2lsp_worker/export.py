"""Export jobs: the program written to a `.pt2` (saved beside the output, loaded back, run against
the eager model on the example inputs, then renamed over the output) and its report."""

from __future__ import annotations

import os
import tempfile
import time

from .artefacts import write_artefact
from .entrypoint import Target
from .findings import binding_finding
from .outputs import compare_outputs
from .program_info import describe_inputs, range_constraints
from .text import trim
from .trace import trace
from .workspace import Workspace

# Tolerances of the check of the saved program against the eager model (torch.allclose).
VERIFY_RTOL = 1e-4


VERIFY_ATOL = 1e-5


def export_program(target: Target, workspace: Workspace, definitions: dict, request: dict, progress) -> dict:
    """Exports the entrypoint, saves the program to the temporary path the caller chose (in the
    output's directory), renames it over the output, loads it back and runs it on the example
    inputs against the eager model. A model that does not export gets the trace's findings."""
    import torch

    output = os.path.abspath(request["output"])
    temporary = os.path.abspath(request["temporary"])
    started = time.monotonic()
    progress("exporting", "running torch.export.export" + (" (strict)" if target.strict else ""))
    if target.fake_weights:
        file, name = target.model_binding or (workspace.entry_file, "model")
        finding = binding_finding(
            file,
            name,
            "PT503",
            f"the model is built with fake weights ({target.fake_reason}): its parameters have shapes but "
            "no values, so a .pt2 of it would hold no weights and could not be checked against eager; build "
            "it with real weights (fake weights off, on a machine with the memory) to write the file",
        )
        return {"status": "entrypoint", "diagnostics": [finding.to_json()]}
    programs: list = []
    findings = trace(target, workspace, definitions, programs)
    # A program that exported but disagrees with eager (PT601 alone) is written when asked.
    divergent = bool(programs) and bool(findings) and all(finding.code == "PT601" for finding in findings)
    if (findings and not (divergent and request.get("allow_divergence"))) or not programs:
        status = "oom" if any(finding.code == "PT502" for finding in findings) else "failed"
        return {"status": status, "diagnostics": [finding.to_json() for finding in findings]}
    program = programs[0]
    if request.get("target"):
        # `--target`: the deployment artefact instead of the .pt2, in the job's directory first.
        return write_artefact(program, target, workspace, request, tempfile.gettempdir(), progress, started)

    progress("saving", output)
    # The program is saved to the temporary path, loaded back from there and checked; only a
    # complete report renames it onto the output, so a job that fails or dies on the way leaves
    # nothing at the output (the caller removes the temporary file whatever happened).
    try:
        os.makedirs(os.path.dirname(output), exist_ok=True)
        torch.export.save(program, temporary)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - an unpicklable constant, a full disk, ...
        _unlink_quietly(temporary)
        file, name = target.model_binding or (workspace.entry_file, "model")
        finding = binding_finding(
            file, name, "PT501", f"the model exported but could not be saved to {output}: {type(exc).__name__}: {trim(str(exc))}"
        )
        finding.origin = "export"
        return {"status": "failed", "diagnostics": [finding.to_json()]}

    progress("verifying", "loading the file back with torch.export.load and running it")
    verification = _verify(temporary, target)
    report = {
        "path": output,
        "size": os.path.getsize(temporary),
        "nodes": len(program.graph.nodes),
        "inputs": describe_inputs(program),
        "range_constraints": range_constraints(program, target),
        "verification": verification,
        "strict": bool(target.strict),
    }
    os.replace(temporary, output)
    diagnostics = [finding.to_json() for finding in findings]
    return {"status": "ok", "diagnostics": diagnostics, "export": report, "trace_seconds": round(time.monotonic() - started, 3)}


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _verify(path: str, target: Target) -> dict:
    import torch

    out = {"matches": False, "max_abs_diff": None, "rtol": VERIFY_RTOL, "atol": VERIFY_ATOL, "detail": None}
    kwargs = target.kwargs or {}
    try:
        module = torch.export.load(path).module()
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001
        out["detail"] = f"torch.export.load failed: {type(exc).__name__}: {trim(str(exc))}"
        return out
    try:
        with torch.no_grad():
            # The same seed for both runs, so random ops (dropout in training mode) agree.
            torch.manual_seed(0)
            actual = module(*target.args, **kwargs)
            torch.manual_seed(0)
            expected = target.model(*target.args, **kwargs)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001
        out["detail"] = f"running the loaded program failed: {type(exc).__name__}: {trim(str(exc))}"
        return out
    comparison = compare_outputs(expected, actual, lambda _dtype: (VERIFY_RTOL, VERIFY_ATOL))
    out.update(matches=comparison.matches, max_abs_diff=comparison.max_abs_diff, detail=comparison.detail)
    return out
