"""Deployment targets: after an export succeeds, each target the entrypoint names lowers the
exported program with the target's own tools (core ATen decompositions, the `.pt2` round trip,
ONNX, AOTInductor, ExecuTorch). Each lowering runs in a child forked from the job's process, under
what is left of the job's time and its memory limit, so a lowering that hangs, crashes or runs
out of memory is PT502 for that target alone and the export's own findings stand. Failures land
on the user's line that made the graph node (its `stack_trace`), library frames as related
places; a target whose package is missing or does not pair with the installed torch is a note
of the job (`unavailable`), never a finding."""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import time
import traceback

from .findings import Finding, Location, Related
from .locations import installed_package, stack_frames
from .text import clip
from .workspace import Workspace, binding_line

# The targets, in the order they run (cheapest first), and the rule code of each one's failures.
TARGETS = ("core-aten", "pt2", "onnx", "aoti", "executorch")
CODES = {
    "core-aten": "PT701",
    "pt2": "PT702",
    "onnx": "PT703",
    "aoti": "PT704",
    "executorch": "PT705",
}
# Ops a target runs, only slowly (left to ExecuTorch's portable kernels by the partitioner).
SLOW_CODE = "PT706"

# Seconds the job keeps for itself after the last lowering: reading the child's answer and
# sending the result before the manager's deadline.
RESERVE_SECONDS = 2.0


class TargetUnavailable(Exception):
    """The target cannot run in this interpreter (its package is missing, pairs with another
    torch, or a tool it needs is absent); the message says what to install."""


@dataclasses.dataclass
class Lowering:
    """What one target's lowering found."""

    target: str
    findings: list[dict] = dataclasses.field(default_factory=list)
    # Why the target could not run here, when it could not.
    unavailable: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict:
        out = {"target": self.target, "seconds": round(self.seconds, 3)}
        if self.unavailable:
            out["unavailable"] = self.unavailable
        return out


def requested_targets(job: dict, declared) -> list[str]:
    """The targets of a job: the job's (`--target`, `targets` of the configuration) and those the
    file or the entrypoint declares, in `TARGETS` order; unknown names are the binary's to refuse
    and are skipped here."""
    names = set(job.get("targets") or [])
    if isinstance(declared, str):
        declared = [declared]
    if isinstance(declared, (list, tuple)):
        names.update(name for name in declared if isinstance(name, str))
    return [name for name in TARGETS if name in names]


def lower_job_targets(program, target, workspace: Workspace, scratch: str, deadline: float) -> list[Lowering]:
    """The job's lowerings; none of a model built with fake weights, whose program holds shapes
    without values (each target says so instead)."""
    if target.fake_weights:
        why = f"the model is built with fake weights ({target.fake_reason}): its program has no weights to lower"
        return [Lowering(name, unavailable=why) for name in target.targets]
    return lower_targets(program, target, workspace, scratch, deadline)


def lower_targets(program, target, workspace: Workspace, scratch: str, deadline: float) -> list[Lowering]:
    """Runs every target of `target.targets` on `program`, each in its own child, in order."""
    from . import lower_aoti, lower_core, lower_executorch, lower_onnx, lower_pt2

    modules = {
        "core-aten": lower_core,
        "pt2": lower_pt2,
        "onnx": lower_onnx,
        "aoti": lower_aoti,
        "executorch": lower_executorch,
    }
    out = []
    for name in target.targets:
        started = time.monotonic()
        directory = os.path.join(scratch, f"target-{name}")
        os.makedirs(directory, exist_ok=True)

        def run(name=name, directory=directory) -> dict:
            try:
                findings = modules[name].lower(program, target, workspace, directory)
            except TargetUnavailable as exc:
                return {"unavailable": str(exc)}
            return {"findings": [finding.to_json() for finding in findings]}

        answer = run_isolated(run, deadline - RESERVE_SECONDS - time.monotonic())
        lowering = Lowering(name, seconds=time.monotonic() - started)
        if "unavailable" in answer:
            lowering.unavailable = answer["unavailable"]
        elif "findings" in answer:
            lowering.findings = answer["findings"]
        else:
            lowering.findings = [_failed_lowering(name, answer, target).to_json()]
        out.append(lowering)
    return out


def out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` (or an exception it was raised from) is memory running out: Python's
    MemoryError, or torch's CPU allocator, which says so in a RuntimeError
    ("DefaultCPUAllocator: can't allocate memory") that exporters wrap in their own errors."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, MemoryError) or "can't allocate memory" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def raise_if_out_of_memory(exc: BaseException) -> None:
    """Raises MemoryError when `exc` is memory running out: a lowering that could not allocate
    failed for want of memory (PT502 for its target), not for a reason of the program's."""
    if out_of_memory(exc):
        raise MemoryError(str(exc)) from exc


def _failed_lowering(name: str, answer: dict, target) -> Finding:
    """PT502 for a lowering that did not answer: it ran out of time or memory, or its process
    died; on the entrypoint, as the lowering of the whole program failed."""
    if answer.get("timeout"):
        why = "ran out of the job's time (raise `timeout`)"
    elif answer.get("oom"):
        why = "ran out of memory (raise `memory-limit`)"
    else:
        why = f"crashed: {answer.get('crashed') or 'the process died'}"
    finding = Finding("PT502", f"the {name} lowering {why}; the export itself succeeded", origin=f"target:{name}")
    place_on_entrypoint(finding, target)
    return finding


def run_isolated(function, seconds: float) -> dict:
    """`function()` (which returns a JSON-able dict) in a forked child, given `seconds`: its
    answer, or {"timeout": True}, {"oom": True} or {"crashed": why}. Without fork, in this
    process under a timer."""
    if seconds <= 0:
        return {"timeout": True}
    if not hasattr(os, "fork"):
        from .budget import raise_after

        try:
            with raise_after(seconds, TimeoutError):
                return function()
        except TimeoutError:
            return {"timeout": True}
        except Exception as exc:  # noqa: BLE001 - a lowering's own bug is the target's crash
            return {"oom": True} if out_of_memory(exc) else {"crashed": _describe(exc)}
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            _one_thread()
            answer = function()
        except BaseException as exc:  # noqa: BLE001 - anything is an answer
            answer = {"oom": True} if out_of_memory(exc) else {"crashed": _describe(exc)}
        try:
            data = json.dumps(answer).encode()
        except (TypeError, ValueError) as exc:
            data = json.dumps({"crashed": f"unreadable answer: {exc}"}).encode()
        with os.fdopen(write_end, "wb") as stream:
            stream.write(data)
        os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    end = time.monotonic() + seconds
    timed_out = False
    with os.fdopen(read_end, "rb", buffering=0) as stream:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([stream], [], [], left)
            if not ready:
                continue
            chunk = stream.read(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    if timed_out:
        # What the lowering started (a compiler) goes with it: it shares the job's process
        # group, which only the job's own end kills.
        for process in [*descendants(pid), pid]:
            try:
                os.kill(process, signal.SIGKILL)
            except OSError:
                pass
        os.waitpid(pid, 0)
        return {"timeout": True}
    _, status = os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks).decode())
    except ValueError:
        pass
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        return {"crashed": f"killed by {name}"}
    return {"crashed": f"exit status {os.WEXITSTATUS(status) if os.WIFEXITED(status) else status}"}


def _one_thread() -> None:
    """OpenMP's thread pool does not survive fork: a parallel region the job's process already
    ran would wait for threads the forked child does not have, so the child runs on one."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


def descendants(pid: int) -> list[int]:
    """The processes under `pid` (children, theirs, ...), deepest last, from /proc; none where
    there is no /proc."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stream:
                stat = stream.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces; the parent follows the state.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(entry))
    out = []
    queue = list(children.get(pid, []))
    while queue:
        process = queue.pop(0)
        out.append(process)
        queue.extend(children.get(process, []))
    return out


def _describe(exc: BaseException) -> str:
    return clip(f"{type(exc).__name__}: {exc}")


def place_on_entrypoint(finding: Finding, target) -> None:
    """`finding` on the entrypoint's `model` binding (a failure of the whole program)."""
    file, name = target.model_binding or (None, None)
    if file is None:
        return
    finding.place(Location(os.path.abspath(file), binding_line(file, name) or 1))


def node_place(node, workspace: Workspace) -> tuple[Location | None, list[Related]]:
    """The user's line that made graph node `node` (the innermost workspace frame of its
    `stack_trace`), and the installed-library frames below it as related places."""
    frames = stack_frames(node.meta.get("stack_trace") or "")
    deepest = max((i for i, (file, _) in enumerate(frames) if workspace.contains(file)), default=-1)
    if deepest < 0:
        return None, []
    file, line = frames[deepest]
    related = []
    for library_file, library_line in frames[deepest + 1 :]:
        package = installed_package(library_file)
        if package is None or package in ("torch", "functorch"):
            continue
        related.append(
            Related(os.path.abspath(library_file), library_line, None, f"called through here ({package}, installed code)")
        )
    return Location(os.path.abspath(file), line), related


@dataclasses.dataclass
class OpUse:
    """The nodes of one op (or one kind of problem) on one user line."""

    place: Location | None
    related: list[Related]
    ops: list[str] = dataclasses.field(default_factory=list)
    nodes: int = 0


def group_by_line(nodes, workspace: Workspace, label) -> list[OpUse]:
    """`nodes` grouped by the user line that made them, in graph order; `label(node)` names each
    node's op (`aten.searchsorted.Tensor`)."""
    groups: dict[tuple, OpUse] = {}
    for node in nodes:
        place, related = node_place(node, workspace)
        key = (place.file, place.line) if place else None
        use = groups.get(key)
        if use is None:
            use = groups[key] = OpUse(place, related)
        op = label(node)
        if op not in use.ops:
            use.ops.append(op)
        use.nodes += 1
    return list(groups.values())


def finding_at(code: str, use: OpUse, message: str, target, name: str) -> Finding:
    """A finding of target `name` on `use`'s line (the entrypoint when the nodes have no user
    line: torch made them on its own)."""
    finding = Finding(code, clip(message), origin=f"target:{name}", related=list(use.related))
    if use.place is not None:
        finding.place(use.place)
    else:
        place_on_entrypoint(finding, target)
    return finding


def op_name(node) -> str:
    """`aten.searchsorted.Tensor` for an OpOverload target, else the target's string."""
    target = node.target
    name = getattr(target, "name", None)
    if callable(name):
        try:
            return str(name()).replace("::", ".")
        except Exception:  # noqa: BLE001 - a name is a courtesy
            pass
    return str(target)


def ops_phrase(ops: list[str]) -> str:
    """`aten.a` / `aten.a and aten.b` / `aten.a, aten.b and 2 more`."""
    shown = [f"`{op}`" for op in ops[:3]]
    if len(ops) > 3:
        return ", ".join(shown) + f" and {len(ops) - 3} more"
    if len(shown) > 1:
        return ", ".join(shown[:-1]) + " and " + shown[-1]
    return shown[0] if shown else "an op"


def exception_text(exc: BaseException) -> str:
    """The innermost cause's type and first lines: what a lowering's chain of wrapped errors
    is about."""
    chain = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 20:
        chain.append(chain[-1].__cause__)
    innermost = chain[-1]
    text = str(innermost).strip().splitlines()
    return clip(f"{type(innermost).__name__}: {text[0] if text else ''}")


def traceback_place(exc: BaseException, workspace: Workspace) -> Location | None:
    """The deepest frame of the user's files in `exc`'s chain of tracebacks (a lowering that
    calls back into user code), else None."""
    found = None
    seen = 0
    while exc is not None and seen < 20:
        for frame in traceback.extract_tb(exc.__traceback__):
            if workspace.contains(frame.filename) and frame.lineno:
                found = Location(os.path.abspath(frame.filename), frame.lineno)
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return found
