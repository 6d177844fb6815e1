"""One job in its forked process: the environment it runs in (temporary directory, memory limit,
`sys.path`), its entrypoint, and the result message the zygote sends on."""

from __future__ import annotations

import os
import sys
import tempfile
import time

from . import stalled
from .budget import set_job_deadline
from .dependencies import DependencyRecorder, environment_files
from .dim_declarations import mark_declarations
from .entrypoint import EntrypointError, load_entrypoint
from .export import export_program
from .fake_kernels import record_operator_definitions
from .lowering import lower_job_targets
from .shapes import traced_shapes
from .trace import trace
from .workspace import Workspace


def run_job(job: dict, job_dir: str, progress=None) -> dict:
    """Runs one entrypoint; returns the result message (without id and output). A job with
    `export` writes the exported program (see `export_program`). A trace's result lists the files
    it depended on (`dependencies`, for the binary's trace cache)."""
    recorder = DependencyRecorder(job_dir)
    result = _run(job, job_dir, progress)
    if not job.get("export"):
        result["dependencies"] = recorder.files(job["file"]) + environment_files()
    return result


def _run(job: dict, job_dir: str, progress) -> dict:
    begun = time.monotonic()
    _set_limits(job)
    stalled.arm(job_dir, float(job.get("timeout") or 60))
    # The optional checks after an export (draft_export, the PT601 comparison) end in time for
    # the job to report what it found: a model that exports is never a timeout because of them.
    set_job_deadline(begun + float(job.get("timeout") or 60) - stalled.MARGIN_SECONDS)
    os.environ["TMPDIR"] = job_dir
    # draft_export writes its structured trace under TORCH_DTRACE, else under the temp dir.
    os.environ["TORCH_DTRACE"] = job_dir
    tempfile.tempdir = job_dir
    cwd = job.get("cwd")
    if cwd and os.path.isdir(cwd):
        os.chdir(cwd)
    entry_file = os.path.abspath(job["file"])
    roots = list(job.get("roots") or [])
    workspace = Workspace(entry_file, roots + [os.path.dirname(entry_file)])
    for path in reversed(roots + [os.path.dirname(entry_file)]):
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    definitions = record_operator_definitions(workspace)
    started = time.monotonic()
    try:
        try:
            target = load_entrypoint(job, workspace)
        except EntrypointError as exc:
            return {"status": "entrypoint", "diagnostics": [exc.finding.to_json()]}
        if job.get("export"):
            return export_program(target, workspace, definitions, job["export"], progress or (lambda *_: None))
        programs: list = []
        passed: list = []
        findings = trace(target, workspace, definitions, programs, passed)
    except MemoryError:
        return _out_of_memory(job)
    except RecursionError as exc:
        return {"status": "crashed", "detail": f"the trace recursed too deeply: {exc}"}
    mark_declarations(findings, target.dynamic_shapes, workspace, target.spec_binding, target.table_spec)
    status = "failed" if findings else "ok"
    if any(finding.code == "PT502" for finding in findings):
        status = "oom"
    diagnostics = [finding.to_json() for finding in findings]
    lowered = []
    if programs and target.targets:
        deadline = begun + float(job.get("timeout") or 60) - stalled.MARGIN_SECONDS
        lowered = lower_job_targets(programs[0], target, workspace, job_dir, deadline)
        diagnostics += [finding for lowering in lowered for finding in lowering.findings]
        if status == "ok" and any(lowering.findings for lowering in lowered):
            status = "failed"
    result = {"status": status, "diagnostics": diagnostics, "trace_seconds": round(time.monotonic() - started, 3)}
    if passed:
        result["passed_lines"] = passed
    if lowered:
        result["targets"] = [lowering.to_json() for lowering in lowered]
    if programs:
        try:
            result["shapes"] = traced_shapes(programs[0], target, workspace)
        except Exception:  # noqa: BLE001 - the shapes are a courtesy of a trace that worked
            pass
    return result


def _set_limits(job: dict) -> None:
    limit_mb = job.get("memory_limit_mb")
    if not limit_mb:
        return
    try:
        import resource

        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[0])
        current = pages * os.sysconf("SC_PAGE_SIZE")
        limit = current + int(limit_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except Exception:
        pass


def _out_of_memory(job: dict) -> dict:
    limit = job.get("memory_limit_mb")
    detail = "the trace ran out of memory"
    if limit:
        detail += f" (limit: {limit} MiB of address space beyond the worker's own; raise it with --memory-limit)"
    return {"status": "oom", "detail": detail}
