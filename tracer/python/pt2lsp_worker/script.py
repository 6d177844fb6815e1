"""Entrypoints that are export calls in the user's own code: the program runs along its own path
(the file as a script, or the function around the call) with the export functions intercepted.
The call at the entrypoint's line gives the target its model, inputs and `dynamic_shapes` exactly
as the program built them, and the program stops there: nothing after the call runs (no saving,
no training). Where the program cannot get to the call, PT503 lands on the line that stopped it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import inspect
import io
import os
import runpy
import sys
import traceback

from .budget import raise_after
from .findings import Finding, Location, frame_location, located
from .locations import deepest_user_frame
from .text import first_lines
from .workspace import Workspace

# How long before the job's own deadline the program is interrupted to say where it was.
_DEADLINE_MARGIN_SECONDS = 1.5


class EntrypointStopped(Exception):
    """The program did not reach the export call; carries the finding that says where it stopped."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


@dataclasses.dataclass(frozen=True)
class CallArgument:
    """Where an export call's argument is written: the call at `line` of the entry file, its
    `position`-th positional argument or its `keyword`. Bindings of a call entrypoint are these
    instead of module-level names (see `workspace.binding_node`)."""

    line: int
    end_line: int
    position: int | None
    keyword: str
    # What messages call it: the role it plays (`model`, `args`), not torch's parameter name.
    label: str

    def __str__(self) -> str:
        return self.label


@dataclasses.dataclass
class ExportArguments:
    """What the intercepted call received, named as `torch.export.export` names them."""

    model: object
    args: tuple
    kwargs: dict | None
    dynamic_shapes: object
    strict: bool
    # The parameter names the called function gives the model and the inputs.
    model_parameter: str
    kwargs_position: int | None
    # The module-level `targets` of the file that makes the call (`targets = ["executorch"]`),
    # as a convention file declares them: the static pass reads the same assignment.
    declared_targets: object = None


class _ExportReached(BaseException):
    """Unwinds the user's program once the export call was intercepted (a BaseException, so that
    the program's own `except Exception:` does not swallow it)."""


class _DeadlineReached(BaseException):
    """Raised into the program shortly before the job's deadline, to say where it was."""


class _ArgumentsRejected(BaseException):
    """argparse rejected the command line (it would print usage and exit)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Interceptor:
    """Replaces the export functions while the program runs; the call written at the job's
    line is captured and stops the program, any other export call runs as usual."""

    def __init__(self, file: str, line: int, end_line: int) -> None:
        self.file = os.path.realpath(file)
        self.line = line
        self.end_line = end_line
        self.captured: ExportArguments | None = None
        self.calls_seen = 0
        self._restore: list[tuple[object, str, object]] = []

    def __enter__(self) -> Interceptor:
        import torch
        import torch.export

        targets = [(torch.export, "export"), (torch.export, "draft_export")]
        try:
            import torch.onnx

            targets.append((torch.onnx, "export"))
        except Exception:  # noqa: BLE001 - an interpreter without the ONNX exporter
            pass
        for owner, name in targets:
            original = getattr(owner, name, None)
            if original is None:
                continue
            self._restore.append((owner, name, original))
            setattr(owner, name, self._wrap(original, onnx=owner is not torch.export))
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, original in reversed(self._restore):
            setattr(owner, name, original)
        self._restore.clear()

    def _at_entry(self, frame) -> bool:
        code = frame.f_code
        return os.path.realpath(code.co_filename) == self.file and self.line <= frame.f_lineno <= self.end_line

    def _wrap(self, original, onnx: bool):
        signature = inspect.signature(original)

        @functools.wraps(original)
        def intercepted(*args, **kwargs):
            caller = sys._getframe(1)
            if self.captured is not None or not self._at_entry(caller):
                return original(*args, **kwargs)
            self.calls_seen += 1
            bound = signature.bind(*args, **kwargs)
            arguments = bound.arguments
            names = list(signature.parameters)
            inputs = arguments.get("args", ())
            self.captured = ExportArguments(
                model=arguments.get(names[0]),
                args=tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,),
                kwargs=arguments.get("kwargs"),
                dynamic_shapes=arguments.get("dynamic_shapes"),
                strict=bool(arguments.get("strict", False)) and not onnx,
                model_parameter=names[0],
                kwargs_position=None if onnx else names.index("kwargs") if "kwargs" in names else None,
                declared_targets=caller.f_globals.get("targets"),
            )
            raise _ExportReached

        return intercepted


@contextlib.contextmanager
def _argparse_raises():
    """argparse's `error` (usage on stderr, then exit 2) raises instead, with its message."""
    original = argparse.ArgumentParser.error

    def error(self, message):  # noqa: ANN001 - argparse's signature
        raise _ArgumentsRejected(message)

    argparse.ArgumentParser.error = error
    try:
        yield
    finally:
        argparse.ArgumentParser.error = original


@contextlib.contextmanager
def program_environment(path: str, argv: list[str]):
    """The process state a script expects: its argv, an empty stdin, no display to open."""
    saved_argv = sys.argv
    saved_stdin = sys.stdin
    sys.argv = [path, *argv]
    sys.stdin = io.StringIO("")
    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        os.environ.pop(name, None)
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.stdin = saved_stdin


def reach_export_call(job: dict, workspace: Workspace, import_file) -> ExportArguments:
    """Runs the user's program until it calls the export function at the job's line; returns what
    that call received. Raises EntrypointStopped (PT503 or PT502) where the program stopped
    before it. `import_file(path, workspace)` imports the entry file as a module."""
    call = job["call"]
    path = workspace.entry_file
    line = int(call["line"])
    interceptor = Interceptor(path, line, int(call.get("end_line") or line))
    budget = float(job.get("timeout") or 60) - _DEADLINE_MARGIN_SECONDS
    where = f"the export call at line {line}"
    stopped: Finding | None = None
    with program_environment(path, list(call.get("argv") or [])), interceptor, _argparse_raises():
        try:
            with raise_after(budget, _DeadlineReached):
                if call.get("reach") == "call":
                    _call_function(import_file(path, workspace), call["name"])
                else:
                    runpy.run_path(path, run_name="__main__")
        except _ExportReached:
            pass
        except _ArgumentsRejected as exc:
            stopped = _stopped_at(
                exc,
                workspace,
                path,
                line,
                f"the command line was rejected before {where} ({exc.message}): give the script the arguments "
                "it needs with `args = [...]` in a [[tool.pt2lsp.entrypoints]] table whose `script` is this file",
            )
        except SystemExit as exc:
            stopped = _stopped_at(exc, workspace, path, line, f"the program exited (sys.exit({exc.code!r})) before {where}")
        except _DeadlineReached as exc:
            stopped = _stopped_at(
                exc,
                workspace,
                path,
                line,
                f"the program was still running here when the trace's time ran out, before {where} "
                "(a loop, a server or a wait for input?); raise `timeout` or make the export reachable sooner",
                code="PT502",
            )
        except EOFError as exc:
            stopped = _stopped_at(
                exc,
                workspace,
                path,
                line,
                f"the program reads standard input before {where}, and a trace has none to give: "
                "read the value from a command-line argument or the environment instead",
            )
        except MemoryError:
            raise
        except KeyboardInterrupt:
            raise
        except EntrypointStopped:
            raise
        except BaseException as exc:  # noqa: BLE001 - user code may raise anything
            stopped = _stopped_at(
                exc,
                workspace,
                path,
                line,
                f"{type(exc).__name__} before {where} was reached: {first_lines(str(exc), 3)}".rstrip(": "),
            )
    if interceptor.captured is not None:
        return interceptor.captured
    if stopped is None:
        stopped = located(
            "PT503",
            Location(os.path.abspath(path), line),
            "the program ran to its end without reaching this export call"
            + ("" if call.get("reach") == "call" else " (is it behind a condition the script does not meet?)"),
            origin="entrypoint",
        )
    raise EntrypointStopped(stopped)


def _call_function(module, name: str) -> None:
    """Calls `name` of `module` with no arguments: a function, or `Class.method` on an instance
    built with no arguments (a `unittest.TestCase` gets the method's name, as its runner does)."""
    head, _, method = name.partition(".")
    value = getattr(module, head)
    if not method:
        value()
        return
    import unittest

    instance = value(method) if isinstance(value, type) and issubclass(value, unittest.TestCase) else value()
    if isinstance(instance, unittest.TestCase):
        instance.setUp()
    getattr(instance, method)()


def _stopped_at(exc: BaseException, workspace: Workspace, path: str, line: int, message: str, code: str = "PT503") -> Finding:
    """The finding for a program stopped by `exc`: on the deepest line of the user's files it
    was running, else on the export call."""
    frame = deepest_user_frame(traceback.extract_tb(exc.__traceback__), workspace)
    where = frame_location(frame) if frame is not None else Location(os.path.abspath(path), line)
    return located(code, where, message, origin="entrypoint")
