"""pt2lsp tracer worker: runs the real torch.export on the user's models, in the user's interpreter.

The pt2lsp binary embeds this file, writes it into a private temporary directory and starts it
(server/src/tracer/worker.rs); nobody runs it by hand:

    python worker.py --socket PATH --token TOKEN --dir DIR

It is a zygote. It connects to the Unix socket PATH (the dedicated protocol channel: user code's
`print` writes to stdout during non-strict export, so stdout is never the channel), imports torch,
runs one tiny export to warm the exporter up, says hello, and then forks one child per job, so
every job starts from a clean, already-warm process (no dynamo caches, no `torch.library`
namespaces or interned file names left over from another job) that can be killed on timeout or
cancellation without losing the warm parent.

Protocol 1: one JSON object per line, both ways.

    worker -> manager  {"hello": "pt2lsp-worker", "protocol": 1, "token": ..., "torch": "2.15.0",
                        "python": ..., "python_version": ..., "pid": ...}
                       (on failure "torch": null and "error": a sentence; then the worker exits)
    manager -> worker  {"op": "job", "id": 7, "job": {...}}   start a job (see `run_job`)
                       {"op": "cancel", "id": 7}              kill the job's process
                       {"op": "shutdown"}                     kill every job and exit
    worker -> manager  {"event": "started", "id": 7, "pid": 1234}
                       {"event": "result", "id": 7, "status": ..., "diagnostics": [...], ...}

`status` is "ok" (exported), "failed" (export problems in `diagnostics`), "entrypoint" (the model
or its inputs could not be built), "oom", "timeout", "cancelled" or "crashed" (with `detail`).
A diagnostic is {"code", "file", "line", "column", "end_line", "end_column", "message",
"fixes"?, "origin"}: 1-based lines, 0-based columns in UTF-8 bytes (null when only the line is
known), always in a file of the user's workspace, never in torch.

The directory DIR belongs to this worker: each job gets DIR/job-<id> as its temporary directory
(draft_export writes a trace file there), removed when the job ends; the whole of DIR is removed
when the worker exits, whichever way it exits short of SIGKILL (the manager removes it then).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import dataclasses
import importlib
import importlib.util
import inspect
import json
import linecache
import os
import re
import selectors
import shutil
import signal
import socket
import sys
import tempfile
import textwrap
import threading
import time
import traceback
from collections.abc import Callable

PROTOCOL = 1

# Every rule code this worker reports, with the rule's name: the one list of them. A Rust test
# (server/src/tracer/worker.rs) checks it against the analyzer's `Rule` table, and a Python test
# (server/python/tests) checks that the worker names no code outside it.
RULES = {
    "PT101": "data-dependent-branch",
    "PT102": "data-dependent-scalar",
    "PT103": "data-dependent-shape",
    "PT201": "tensor-to-numpy",
    "PT202": "untraceable-call",
    "PT203": "explicit-graph-break",
    "PT301": "missing-fake-kernel",
    "PT302": "mismatched-fake-kernel",
    "PT401": "dynamic-dim-guard",
    "PT403": "invalid-dynamic-shapes",
    "PT404": "unregistered-input-type",
    "PT405": "specializing-example-size",
    "PT501": "export-failed",
    "PT502": "worker-crash",
    "PT503": "entrypoint-error",
    "PT601": "baked-in-value",
}

# Captured output kept per job (stdout and stderr of the child, merged).
OUTPUT_LIMIT = 64 * 1024
# Characters of an exporter message kept in a diagnostic.
MESSAGE_LIMIT = 600


# --------------------------------------------------------------------------------------------
# The channel
# --------------------------------------------------------------------------------------------


class Channel:
    """JSON lines over the connected Unix socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def send(self, message: dict) -> None:
        data = (json.dumps(message, default=str) + "\n").encode("utf-8")
        self.sock.sendall(data)

    def feed(self) -> list[dict] | None:
        """Reads what is available; None at end of stream."""
        try:
            chunk = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            return None
        if not chunk:
            return None
        self.buffer += chunk
        messages = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line.strip():
                try:
                    messages.append(json.loads(line))
                except ValueError:
                    messages.append({"op": "invalid", "line": line[:200].decode("utf-8", "replace")})
        return messages


# --------------------------------------------------------------------------------------------
# Start-up
# --------------------------------------------------------------------------------------------


def _set_parent_death_signal(signum: int) -> None:
    """Linux: deliver `signum` to this process when its parent dies (best effort)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except Exception:
        pass


def _warm_up(directory: str) -> None:
    """One tiny export, so that forked jobs start with the exporter's lazy imports done."""
    import torch
    import torch._dynamo  # noqa: F401
    import torch.export
    import torch.export._draft_export  # noqa: F401
    import torch.fx.experimental.symbolic_shapes  # noqa: F401

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.relu(self.linear(x)) + x.shape[0]

    batch = torch.export.Dim("batch")
    torch.export.export(Tiny(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: batch}})


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pt2lsp-worker")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--dir", required=True)
    options = parser.parse_args(argv)
    run_dir = os.path.abspath(options.dir)

    _set_parent_death_signal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(options.socket)
        channel = Channel(sock)
        hello = {
            "hello": "pt2lsp-worker",
            "protocol": PROTOCOL,
            "token": options.token,
            "python": sys.executable,
            "python_version": sys.version.split()[0],
            "pid": os.getpid(),
        }
        try:
            import torch

            tempfile.tempdir = run_dir
            _warm_up(run_dir)
        except BaseException as exc:  # noqa: BLE001 - any failure is reported, then we exit
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            hello["torch"] = None
            hello["error"] = f"{type(exc).__name__}: {exc}".strip()
            channel.send(hello)
            return 3
        hello["torch"] = torch.__version__.split("+")[0]
        channel.send(hello)
        Zygote(channel, run_dir).serve()
        return 0
    finally:
        # The server's exit sends SIGTERM (the parent-death signal), often while this clean-up
        # runs: the handler's SystemExit would cut it short and leave the directory behind.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        shutil.rmtree(run_dir, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# The zygote: forks a child per job, watches it, reports its end
# --------------------------------------------------------------------------------------------


class Child:
    def __init__(self, job_id, pid, job, result_fd, output_fd, job_dir) -> None:
        self.id = job_id
        self.pid = pid
        self.job = job
        self.result_fd = result_fd
        self.output_fd = output_fd
        self.job_dir = job_dir
        self.result = b""
        self.output = b""
        self.output_truncated = False
        self.started = time.monotonic()
        timeout = job.get("timeout") or 60
        self.deadline = self.started + float(timeout)
        self.killed_for: str | None = None
        self.wait_status: int | None = None


class Zygote:
    def __init__(self, channel: Channel, run_dir: str) -> None:
        self.channel = channel
        self.run_dir = run_dir
        self.children: dict[int, Child] = {}
        self.by_id: dict[int, Child] = {}
        self.selector = selectors.DefaultSelector()
        self.pid = os.getpid()

    # -- the loop ---------------------------------------------------------------------------

    def serve(self) -> None:
        # The manager decides when the worker ends (shutdown or end of the socket); a Ctrl-C
        # in the terminal reaches the manager, whose exit closes the socket.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        self.wake = (wake_r, wake_w)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.channel.sock.setblocking(False)
        self.selector.register(self.channel.sock, selectors.EVENT_READ, "socket")
        self.selector.register(wake_r, selectors.EVENT_READ, "wake")
        try:
            while True:
                timeout = None
                if self.by_id:
                    nearest = min(child.deadline for child in self.by_id.values())
                    timeout = max(0.0, nearest - time.monotonic())
                for key, _ in self.selector.select(timeout):
                    if key.data == "socket":
                        messages = self.channel.feed()
                        if messages is None:
                            return
                        for message in messages:
                            if self.handle(message) == "shutdown":
                                return
                    elif key.data == "wake":
                        try:
                            while os.read(wake_r, 4096):
                                pass
                        except (BlockingIOError, InterruptedError):
                            pass
                    else:
                        self.drain(key.data)
                self.reap()
                self.enforce_deadlines()
        finally:
            # As in `main`: a SIGTERM must not cut the killing of the jobs short.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.kill_all()

    def handle(self, message: dict) -> str | None:
        op = message.get("op")
        if op == "job":
            job = message["job"]
            if message.get("export"):
                job = dict(job, export=message["export"])
            self.start(message["id"], job)
        elif op == "cancel":
            child = self.by_id.get(message.get("id"))
            if child is not None:
                self.kill(child, "cancelled")
        elif op == "shutdown":
            return "shutdown"
        else:
            self.send({"event": "error", "message": f"unknown message {message!r}"[:300]})
        return None

    def send(self, message: dict) -> None:
        self.channel.sock.setblocking(True)
        try:
            self.channel.send(message)
        finally:
            self.channel.sock.setblocking(False)

    # -- jobs -------------------------------------------------------------------------------

    def start(self, job_id: int, job: dict) -> None:
        job_dir = os.path.join(self.run_dir, f"job-{job_id}")
        shutil.rmtree(job_dir, ignore_errors=True)
        os.mkdir(job_dir, 0o700)
        result_r, result_w = os.pipe()
        output_r, output_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child
            code = 0
            try:
                os.close(result_r)
                os.close(output_r)
                self.become_child(output_w)
                result = run_job(job, job_dir, _progress_writer(result_w))
            except BaseException as exc:  # noqa: BLE001 - reported as a crash of the job
                result = {
                    "status": "crashed",
                    "detail": f"the tracer failed: {type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc()[-4000:],
                }
                code = 1
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except Exception:
                pass
            try:
                data = json.dumps(result, default=str).encode("utf-8")
                view = memoryview(data)
                while view:
                    written = os.write(result_w, view)
                    view = view[written:]
            except BaseException:
                code = 2
            os._exit(code)
        os.close(result_w)
        os.close(output_w)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        os.set_blocking(result_r, False)
        os.set_blocking(output_r, False)
        child = Child(job_id, pid, job, result_r, output_r, job_dir)
        self.children[pid] = child
        self.by_id[job_id] = child
        self.selector.register(result_r, selectors.EVENT_READ, (child, "result"))
        self.selector.register(output_r, selectors.EVENT_READ, (child, "output"))
        self.send({"event": "started", "id": job_id, "pid": pid})

    def become_child(self, output_w: int) -> None:
        """Turns the forked process into a job process: own group, own output, own limits."""
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        _set_parent_death_signal(signal.SIGKILL)
        if os.getppid() != self.pid:  # the zygote died between fork and prctl
            os._exit(1)
        # Nothing of the zygote's may stay open here: the manager must see the socket close
        # when the zygote dies, whatever the children do.
        self.selector.close()
        self.channel.sock.close()
        for fd in self.wake:
            os.close(fd)
        for other in self.children.values():
            for fd in (other.result_fd, other.output_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(output_w, 1)
        os.dup2(output_w, 2)
        os.close(output_w)
        try:
            import faulthandler

            faulthandler.enable(file=sys.stderr)
        except Exception:
            pass

    def drain(self, data) -> None:
        child, which = data
        fd = child.result_fd if which == "result" else child.output_fd
        while True:
            try:
                chunk = os.read(fd, 65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.selector.unregister(fd)
                os.close(fd)
                if which == "result":
                    child.result_fd = -1
                else:
                    child.output_fd = -1
                return
            if which == "result":
                child.result += chunk
                self.forward_progress(child)
            elif len(child.output) < OUTPUT_LIMIT:
                child.output += chunk[: OUTPUT_LIMIT - len(child.output)]
                child.output_truncated |= len(chunk) > OUTPUT_LIMIT - len(child.output)
            else:
                child.output_truncated = True

    def forward_progress(self, child: Child) -> None:
        """An export job writes `{"progress": ...}` lines on its result pipe before its result
        (a single line without a newline): each complete one is sent on as a progress event."""
        while child.result.startswith(b'{"progress"') and b"\n" in child.result:
            line, child.result = child.result.split(b"\n", 1)
            try:
                stage = json.loads(line)
            except ValueError:
                continue
            self.send({"event": "progress", "id": child.id, "stage": stage.get("progress"), "message": stage.get("message")})

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == 0:
                return
            child = self.children.pop(pid, None)
            if child is not None:
                child.wait_status = status
                self.finish(child)

    def finish(self, child: Child) -> None:
        # Whatever the job left running in its process group goes with it.
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
        for which in ("result", "output"):
            fd = child.result_fd if which == "result" else child.output_fd
            if fd >= 0:
                self.drain((child, which))
                fd = child.result_fd if which == "result" else child.output_fd
                if fd >= 0:  # a grandchild still holds the pipe: take what we have
                    self.selector.unregister(fd)
                    os.close(fd)
        self.by_id.pop(child.id, None)
        message = {"event": "result", "id": child.id, "elapsed": round(time.monotonic() - child.started, 3)}
        status = child.wait_status or 0
        result = None
        if child.result:
            try:
                result = json.loads(child.result)
            except ValueError:
                result = None
        if child.killed_for is not None:
            message["status"] = child.killed_for
            if child.killed_for == "timeout":
                message["detail"] = f"the trace did not finish within {float(child.job.get('timeout') or 60):g} s"
        elif result is not None:
            message.update(result)
        elif os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            try:
                name = signal.Signals(signum).name
            except ValueError:
                name = f"signal {signum}"
            message["status"] = "crashed"
            if signum == signal.SIGKILL:
                message["detail"] = "the trace was killed (SIGKILL), most likely for using too much memory"
            else:
                message["detail"] = f"the trace crashed with {name}"
        else:
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
            message["status"] = "crashed"
            message["detail"] = f"the traced code ended the process (exit status {code})"
        message["output"] = child.output.decode("utf-8", "replace")
        message["output_truncated"] = child.output_truncated
        shutil.rmtree(child.job_dir, ignore_errors=True)
        self.send(message)

    def kill(self, child: Child, reason: str) -> None:
        if child.killed_for is None:
            child.killed_for = reason
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            try:
                os.kill(child.pid, signal.SIGKILL)
            except OSError:
                pass

    def enforce_deadlines(self) -> None:
        now = time.monotonic()
        for child in list(self.by_id.values()):
            if now >= child.deadline:
                self.kill(child, child.killed_for or "timeout")
                # SIGCHLD wakes the loop once it is dead; kill it again if it is not reaped soon.
                child.deadline = now + 1.0

    def kill_all(self) -> None:
        for child in list(self.children.values()):
            self.kill(child, "cancelled")
        for child in list(self.children.values()):
            try:
                os.waitpid(child.pid, 0)
            except OSError:
                pass
            shutil.rmtree(child.job_dir, ignore_errors=True)
        self.children.clear()


# --------------------------------------------------------------------------------------------
# A job, in the forked child
# --------------------------------------------------------------------------------------------


class EntrypointError(Exception):
    """The model or its example inputs could not be built; carries the diagnostic."""

    def __init__(self, diagnostic: dict) -> None:
        super().__init__(diagnostic.get("message"))
        self.diagnostic = diagnostic


class Workspace:
    """Which files are the user's: frames there are where diagnostics go."""

    def __init__(self, entry_file: str, roots: list[str]) -> None:
        self.entry_file = os.path.realpath(entry_file)
        self.roots = [os.path.realpath(root) for root in roots if root]
        excluded = {sys.prefix, sys.base_prefix, sys.exec_prefix, getattr(sys, "base_exec_prefix", sys.prefix)}
        try:
            import site

            excluded.update(site.getsitepackages())
            excluded.add(site.getusersitepackages())
        except Exception:
            pass
        try:
            import torch

            excluded.add(os.path.dirname(torch.__file__))
        except Exception:
            pass
        excluded.add(os.path.dirname(os.path.realpath(__file__)))
        self.excluded = [os.path.realpath(path) for path in excluded if path]
        self.cache: dict[str, bool] = {}

    def contains(self, filename: str | None) -> bool:
        if not filename or filename.startswith("<"):
            return False
        known = self.cache.get(filename)
        if known is not None:
            return known
        path = os.path.realpath(filename)
        if path == self.entry_file:
            answer = True
        elif any(_under(path, root) for root in self.excluded) or re.search(r"[/\\](site|dist)-packages[/\\]", path):
            answer = False
        else:
            answer = any(_under(path, root) for root in self.roots)
        self.cache[filename] = answer
        return answer


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _progress_writer(fd: int):
    """How a job reports a stage: one `{"progress": stage}` line on its result pipe."""

    def progress(stage: str, message: str | None = None) -> None:
        data = (json.dumps({"progress": stage, "message": message}, default=str) + "\n").encode("utf-8")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            pass

    return progress


def run_job(job: dict, job_dir: str, progress=None) -> dict:
    """Runs one entrypoint; returns the result message (without id and output). A job with
    `export` writes the exported program (see `export_program`)."""
    _set_limits(job)
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
    definitions = _record_operator_definitions(workspace)
    started = time.monotonic()
    try:
        try:
            target = load_entrypoint(job, workspace)
        except EntrypointError as exc:
            return {"status": "entrypoint", "diagnostics": [exc.diagnostic]}
        if job.get("export"):
            return export_program(target, workspace, definitions, job["export"], progress or (lambda *_: None))
        diagnostics = trace(target, workspace, definitions)
    except MemoryError:
        return _out_of_memory(job)
    except RecursionError as exc:
        return {"status": "crashed", "detail": f"the trace recursed too deeply: {exc}"}
    status = "failed" if diagnostics else "ok"
    if any(diagnostic.get("code") == "PT502" for diagnostic in diagnostics):
        status = "oom"
    return {"status": status, "diagnostics": diagnostics, "trace_seconds": round(time.monotonic() - started, 3)}


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


# -- loading the entrypoint ---------------------------------------------------------------------


class Target:
    def __init__(self) -> None:
        self.model = None
        self.args: tuple = ()
        self.kwargs: dict | None = None
        self.dynamic_shapes = None
        self.strict = False
        # (file, name) of the module-level binding of dynamic_shapes, for PT403/PT401 locations.
        self.spec_binding: tuple[str, str] | None = None
        self.model_binding: tuple[str, str] | None = None
        # (file, name) of example_args and example_kwargs, for PT404/PT405 locations.
        self.args_binding: tuple[str, str] | None = None
        self.kwargs_binding: tuple[str, str] | None = None
        # Built under FakeTensorMode: parameters and inputs have shapes and no storage.
        self.fake_weights = False


def _fake_weights_requested(job: dict, workspace: Workspace) -> bool:
    """`fake-weights = true` of the entrypoint (or the job), else, for the file convention, a
    module-level `fake_weights = True` in the file, read from its syntax tree: the model is
    built when the module is imported, so the mode must be chosen before that."""
    entry = job.get("entrypoint") or {}
    if entry.get("fake_weights") is not None:
        return bool(entry["fake_weights"])
    if job.get("fake_weights"):
        return True
    if job.get("entrypoint") is not None:
        return False
    node = _binding_node(workspace.entry_file, "fake_weights")
    value = getattr(node, "value", None)
    return isinstance(value, ast.Constant) and value.value is True


def load_entrypoint(job: dict, workspace: Workspace) -> Target:
    """The model and its inputs; under FakeTensorMode when fake weights are asked for, so that
    a model of any size is checked without allocating its parameters."""
    if not _fake_weights_requested(job, workspace):
        return _load_entrypoint(job, workspace)
    from torch._subclasses.fake_tensor import FakeTensorMode

    # Real tensors made before the mode (module-level constants of a library) stay usable.
    with FakeTensorMode(allow_non_fake_inputs=True):
        target = _load_entrypoint(job, workspace)
    target.fake_weights = True
    return target


def _load_entrypoint(job: dict, workspace: Workspace) -> Target:
    entry = job.get("entrypoint")
    target = Target()
    if entry is None:
        path = workspace.entry_file
        module = _import_file(path, workspace)
        target.model_binding = (path, "model")
        if not hasattr(module, "model"):
            raise EntrypointError(_binding_diagnostic(path, None, "PT503", "the file defines no module-level `model` to export"))
        if not hasattr(module, "example_args"):
            raise EntrypointError(
                _binding_diagnostic(
                    path,
                    "model",
                    "PT503",
                    "`model` is defined but `example_args` is not: define `example_args = (...)`, "
                    "a tuple of example inputs for `model`",
                )
            )
        target.model = module.model
        target.args = _as_args(module.example_args, path, "example_args")
        target.args_binding = (path, "example_args")
        target.kwargs = getattr(module, "example_kwargs", None)
        if hasattr(module, "example_kwargs"):
            target.kwargs_binding = (path, "example_kwargs")
        target.dynamic_shapes = getattr(module, "dynamic_shapes", None)
        if hasattr(module, "dynamic_shapes"):
            target.spec_binding = (path, "dynamic_shapes")
        target.strict = bool(getattr(module, "strict", False)) or bool(job.get("strict"))
    else:
        target.model, where = _resolve(entry["model"], "model", workspace)
        target.model_binding = where
        args_spec = entry.get("example_args")
        if not args_spec:
            raise EntrypointError(
                _binding_diagnostic(
                    where[0], where[1], "PT503", f"the entrypoint {entry.get('name') or entry['model']!r} has no `example_args`"
                )
            )
        args, args_where = _resolve(args_spec, "example_args", workspace)
        target.args = _as_args(args, args_where[0], args_where[1])
        target.args_binding = args_where
        if entry.get("example_kwargs"):
            target.kwargs, target.kwargs_binding = _resolve(entry["example_kwargs"], "example_kwargs", workspace)
        if entry.get("dynamic_shapes"):
            target.dynamic_shapes, target.spec_binding = _resolve(entry["dynamic_shapes"], "dynamic_shapes", workspace)
        strict = entry.get("strict")
        target.strict = bool(job.get("strict")) if strict is None else bool(strict)
    import torch

    if not isinstance(target.model, torch.nn.Module):
        file, name = target.model_binding or (workspace.entry_file, "model")
        raise EntrypointError(
            _binding_diagnostic(
                file, name, "PT503", f"`{name}` must be a torch.nn.Module to export, not {type(target.model).__name__}"
            )
        )
    if target.kwargs is not None and not isinstance(target.kwargs, dict):
        raise EntrypointError(
            _binding_diagnostic(workspace.entry_file, "example_kwargs", "PT503", "`example_kwargs` must be a dict")
        )
    return target


def _as_args(value, file: str, name: str) -> tuple:
    if isinstance(value, (tuple, list)):
        return tuple(value)
    raise EntrypointError(
        _binding_diagnostic(file, name, "PT503", f"`{name}` must be a tuple of example inputs, not {type(value).__name__}")
    )


def _module_name(path: str) -> tuple[str | None, str]:
    """The dotted name `import` would know the file by, and the directory it is found from."""
    directory, filename = os.path.split(path)
    stem = os.path.splitext(filename)[0]
    parts = [] if stem == "__init__" else [stem]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parent, name = os.path.split(directory)
        parts.append(name)
        if parent == directory:
            break
        directory = parent
    if not parts or not all(part.isidentifier() for part in parts):
        return None, os.path.dirname(path)
    return ".".join(reversed(parts)), directory


def _import_file(path: str, workspace: Workspace):
    dotted, package_root = _module_name(path)
    if package_root not in sys.path:
        sys.path.insert(0, package_root)
    try:
        if dotted and dotted not in sys.modules and dotted not in sys.builtin_module_names:
            module = importlib.import_module(dotted)
            if os.path.realpath(getattr(module, "__file__", "") or "") == os.path.realpath(path):
                return module
            sys.modules.pop(dotted, None)
        name = "__pt2lsp_entry__"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    except EntrypointError:
        raise
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, even SystemExit
        if _out_of_memory_error(exc):
            raise MemoryError(str(exc)) from None
        raise EntrypointError(_exception_diagnostic(exc, workspace, path, None, "importing")) from None


def _out_of_memory_error(exc: BaseException) -> bool:
    """torch's allocator reports exhaustion as a RuntimeError."""
    return isinstance(exc, MemoryError) or "can't allocate memory" in str(exc)


def _resolve(spec: str, role: str, workspace: Workspace):
    """`module:attr`, `module:attr.sub` or `module:function()`; returns (value, (file, name))."""
    text = (spec or "").strip()
    module_name, _, attribute = text.partition(":")
    call = attribute.endswith("()")
    if call:
        attribute = attribute[:-2]
    if not module_name or not attribute:
        raise EntrypointError(
            _binding_diagnostic(
                workspace.entry_file,
                None,
                "PT503",
                f"{role} = {spec!r} in [[tool.pt2lsp.entrypoints]] must read `module:attribute` or `module:function()`",
            )
        )
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # noqa: BLE001
        if _out_of_memory_error(exc):
            raise MemoryError(str(exc)) from None
        raise EntrypointError(
            _exception_diagnostic(exc, workspace, workspace.entry_file, None, f"importing {module_name}")
        ) from None
    file = os.path.abspath(getattr(module, "__file__", "") or workspace.entry_file)
    head = attribute.split(".")[0]
    value = module
    try:
        for part in attribute.split("."):
            value = getattr(value, part)
    except AttributeError:
        raise EntrypointError(
            _binding_diagnostic(file, None, "PT503", f"{module_name} has no attribute `{attribute}` ({role} of the entrypoint)")
        ) from None
    if call:
        try:
            value = value()
        except BaseException as exc:  # noqa: BLE001
            if _out_of_memory_error(exc):
                raise MemoryError(str(exc)) from None
            raise EntrypointError(_exception_diagnostic(exc, workspace, file, head, f"calling {attribute}()")) from None
    return value, (file, head)


def _binding_diagnostic(file: str, name: str | None, code: str, message: str) -> dict:
    line = _binding_line(file, name) if name else None
    return {
        "code": code,
        "file": file,
        "line": line or 1,
        "column": None,
        "end_line": None,
        "end_column": None,
        "message": message,
        "origin": "entrypoint",
    }


_AST_CACHE: dict[str, ast.Module | None] = {}


def _parse(file: str):
    if file not in _AST_CACHE:
        try:
            with open(file, "rb") as source:
                _AST_CACHE[file] = ast.parse(source.read(), file)
        except (OSError, SyntaxError, ValueError):
            _AST_CACHE[file] = None
    return _AST_CACHE[file]


def _binding_node(file: str, name: str):
    """The last module-level statement binding `name` (assignment, def, class or import)."""
    tree = _parse(file)
    if tree is None:
        return None
    found = None
    for stmt in tree.body:
        targets = []
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                targets.extend(t.id for t in ast.walk(target) if isinstance(t, ast.Name))
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.target, ast.Name):
            targets.append(stmt.target.id)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            targets.append(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            targets.extend((alias.asname or alias.name).split(".")[0] for alias in stmt.names)
        if name in targets:
            found = stmt
    return found


def _binding_line(file: str, name: str) -> int | None:
    node = _binding_node(file, name)
    return None if node is None else node.lineno


def _exception_diagnostic(exc: BaseException, workspace: Workspace, file: str, name: str | None, doing: str) -> dict:
    """PT503 at the deepest frame of the user's workspace in the exception's traceback."""
    message = f"{type(exc).__name__} while {doing}: {_first_lines(str(exc), 3)}".rstrip(": ")
    if isinstance(exc, SyntaxError) and exc.filename and workspace.contains(exc.filename):
        column = None
        if exc.offset:
            column = len((exc.text or "")[: exc.offset - 1].encode("utf-8"))
        return {
            "code": "PT503",
            "file": os.path.abspath(exc.filename),
            "line": exc.lineno or 1,
            "column": column,
            "end_line": None,
            "end_column": None,
            "message": f"SyntaxError while {doing}: {exc.msg}",
            "origin": "entrypoint",
        }
    frame = _deepest_user_frame(traceback.extract_tb(exc.__traceback__), workspace)
    if frame is None:
        return _binding_diagnostic(file, name, "PT503", message)
    diagnostic = _frame_diagnostic("PT503", frame, message)
    diagnostic["origin"] = "entrypoint"
    return diagnostic


# -- exporting ------------------------------------------------------------------------------


def trace(target: Target, workspace: Workspace, definitions: dict, programs: list | None = None) -> list[dict]:
    """The export's problems as findings; an empty list when it exported (the program is then
    appended to `programs`, when given)."""
    import torch

    guards: list[dict] = []
    try:
        with _capture_guards(guards):
            program = torch.export.export(
                target.model,
                target.args,
                target.kwargs,
                dynamic_shapes=target.dynamic_shapes,
                strict=target.strict,
            )
        if programs is not None:
            programs.append(program)
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - anything the user's forward raises is a finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        first = classify(exc, target, workspace, definitions)
    else:
        return _divergence_findings(program, target, workspace)
    if first.get("_constraint"):
        first["_guards"] = guards
    if first.get("_collectable"):
        draft_messages: list[str] = []
        try:
            _skip_expression_provenance()
            with _capture_constraint_messages(draft_messages), _time_budget(DRAFT_BUDGET_SECONDS):
                program = torch.export.draft_export(
                    target.model,
                    target.args,
                    target.kwargs,
                    dynamic_shapes=target.dynamic_shapes,
                    strict=target.strict,
                )
            drafted = draft_findings(program, target, workspace, definitions, first, draft_messages)
        except MemoryError:
            raise
        except BaseException:  # noqa: BLE001 - draft_export raises for some errors: the first stands alone
            drafted = None
        if drafted is not None:
            return _merge(first, drafted, target, workspace)
    if first.get("_constraint"):
        _place_on_guard(first, workspace)
        _place_on_spec(first, target)
    return _finalize([first], target)


# --------------------------------------------------------------------------------------------
# PT601: an export that succeeded but computes something else than eager
#
# torch.export runs `forward` once and keeps every Python value it met as a constant: a counter
# on the module, `random.random()`, the clock. After a successful export the program and the
# eager model run side by side on fresh inputs (the example inputs re-drawn at sizes across each
# dynamic dimension's range), eager twice to expose state that changes between calls. When they
# disagree, a second export of the same model is compared with the first, node by node: the
# constants that changed between the two exports are the frozen values, and their nodes'
# `stack_trace` names the user's line.

# Ops whose results are random by design: a program holding one is compared under one seed,
# and a disagreement is not blamed on frozen state.
RANDOM_OPS = frozenset(
    {
        "bernoulli",
        "dropout",
        "native_dropout",
        "multinomial",
        "normal",
        "poisson",
        "rand",
        "rand_like",
        "randint",
        "randint_like",
        "randn",
        "randn_like",
        "randperm",
        "uniform",
        "exponential",
        "geometric",
        "cauchy",
        "log_normal",
    }
)

# Tolerances by dtype: float16 and bfloat16 keep about three significant digits.
TOLERANCES = {
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-7, 1e-9),
}

# The most sample sets tried, and the largest size a dynamic dimension is given (the check must
# stay cheap beside the export).
SAMPLES = 3
SIZE_CAP = 64


@dataclasses.dataclass
class Place:
    file: str
    line: int


@dataclasses.dataclass
class Divergence:
    """The exported program disagrees with eager."""

    message: str
    place: Place | None
    # The places a second export froze differently, after the first (the blamed one).
    more: list[Place] = dataclasses.field(default_factory=list)


def check_divergence(
    model,
    program,
    args: tuple,
    kwargs: dict,
    export_again: Callable[[], object],
    is_user_file: Callable[[str], bool],
) -> Divergence | None:
    """Runs `program` and `model` on fresh inputs; a disagreement is a Divergence placed on the
    user's line that froze a value (`export_again` exports the model once more for that)."""
    import torch

    if _has_random_ops(program):
        return None
    # The program's module shares the model's buffer tensors: a copy of its own, so that each
    # side's in-place updates stay its own.
    module = copy.deepcopy(program.module())
    _align_buffers(module, model)
    for sample_args, sample_kwargs, sizes in sample_inputs(program, args, kwargs):
        try:
            with torch.no_grad():
                # Program and eager in lockstep, twice: state both keep (a buffer updated in
                # place) moves on both sides, while a Python value the export froze does not.
                # Each run gets its own copy of the inputs: a model may mutate them.
                runs = []
                for _ in range(2):
                    torch.manual_seed(0)
                    exported = module(*_copied(sample_args), **_copied(sample_kwargs))
                    torch.manual_seed(0)
                    eager = model(*_copied(sample_args), **_copied(sample_kwargs))
                    runs.append(difference(eager, exported))
        except Exception:  # noqa: BLE001 - a sample outside what the model accepts proves nothing
            continue
        first, second = runs
        if first is None and second is None:
            continue
        where = f" (input shapes {sizes})" if sizes else ""
        if first is None:
            what = f"on a second call{where} the exported program and eager disagree ({second})"
        else:
            what = f"on fresh inputs{where} the exported program and eager disagree ({first})"
        places = frozen_places(program, _safely(export_again), is_user_file)
        if places:
            place, value = places[0]
            message = (
                f"the export succeeded but is wrong: {what}; torch.export ran `forward` once and kept "
                f"{value} here as a constant. Keep changing state in a buffer (`register_buffer`) "
                "updated in place, pass the value as an input, or draw it with a torch op (`torch.rand`)"
            )
            return Divergence(message, place, [more for more, _ in places[1:]])
        message = (
            f"the export succeeded but is wrong: {what}; torch.export ran `forward` once and kept the Python "
            "values it read (a counter on the module, `random`, the clock, a global) as constants"
        )
        return Divergence(message, None)
    return None


def _align_buffers(module, model) -> None:
    """Gives eager's buffers the program's values: exporting may have run `forward` on the
    model's own buffers, and a buffer both sides update (a step count) must start equal."""
    import torch

    eager = dict(model.named_buffers())
    with torch.no_grad():
        for name, value in module.named_buffers():
            target = eager.get(name)
            if target is not None and target.shape == value.shape and target.dtype == value.dtype:
                target.copy_(value)


def _copied(value):
    """`value` with every tensor in it cloned."""
    import torch
    from torch.utils import _pytree as pytree

    return pytree.tree_map(lambda leaf: leaf.clone() if isinstance(leaf, torch.Tensor) else leaf, value)


def _safely(export: Callable[[], object]):
    try:
        return export()
    except Exception:  # noqa: BLE001 - the second export only helps to place the finding
        return None


def _has_random_ops(program) -> bool:
    for node in program.graph.nodes:
        if node.op == "call_function" and _op_name(node.target) in RANDOM_OPS:
            return True
    return False


def _op_name(target) -> str:
    """`aten.native_dropout.default` → `native_dropout`."""
    name = getattr(target, "__name__", None) or str(target)
    overload = getattr(target, "_overloadpacket", None)
    if overload is not None:
        name = getattr(overload, "__name__", name)
    return name.split(".")[0].rstrip("_")


def sample_inputs(program, args: tuple, kwargs: dict):
    """Fresh inputs like the examples, at up to SAMPLES sets of sizes for the program's dynamic
    dimensions (each symbol at the bottom of its range, one past its example, and near the top,
    capped), and at the example sizes when nothing is dynamic: (args, kwargs, sizes) each."""
    import torch
    from torch.utils import _pytree as pytree

    leaves, spec = pytree.tree_flatten((args, kwargs))
    placeholders = [node for node in program.graph.nodes if node.op == "placeholder"]
    user_inputs = [
        spec_.arg.name
        for spec_ in program.graph_signature.input_specs
        if spec_.kind.name == "USER_INPUT" and hasattr(spec_.arg, "name")
    ]
    by_name = {node.name: node for node in placeholders}
    fake_shapes = [getattr(by_name[name].meta.get("val"), "shape", None) if name in by_name else None for name in user_inputs]
    tensor_leaves = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    if len(fake_shapes) != len(tensor_leaves):
        # Inputs the program flattened differently (non-tensor leaves among them): only the
        # example sizes, redrawn.
        fake_shapes = [None] * len(tensor_leaves)
    symbols = _symbol_examples(fake_shapes, tensor_leaves)
    choices = _size_choices(program, symbols)
    tried = set()
    for values in choices:
        sizes = tuple(sorted((str(symbol), size) for symbol, size in values.items()))
        if sizes in tried:
            continue
        tried.add(sizes)
        new_leaves = []
        shapes = iter(fake_shapes)
        for leaf in leaves:
            if not isinstance(leaf, torch.Tensor):
                new_leaves.append(leaf)
                continue
            shape = next(shapes)
            size = list(leaf.shape) if shape is None else [_evaluate(dim, values) for dim in shape]
            if any(s is None for s in size):
                size = list(leaf.shape)
            new_leaves.append(_redraw(leaf, size))
        sample_args, sample_kwargs = pytree.tree_unflatten(new_leaves, spec)
        shapes = [tuple(leaf.shape) for leaf in new_leaves if isinstance(leaf, torch.Tensor)]
        described = ", ".join(str(list(shape)) for shape in shapes) if values else ""
        yield tuple(sample_args), dict(sample_kwargs), described


def _symbol_examples(fake_shapes, tensor_leaves) -> dict:
    """Each plain symbol of the program's input shapes with its example size."""
    found = {}
    for shape, leaf in zip(fake_shapes, tensor_leaves, strict=False):
        if shape is None:
            continue
        for dim, example in zip(shape, leaf.shape, strict=False):
            node = getattr(dim, "node", None)
            expr = getattr(node, "expr", None)
            if expr is not None and getattr(expr, "is_Symbol", False):
                found.setdefault(expr, int(example))
    return found


def _size_choices(program, symbols: dict) -> list[dict]:
    if not symbols:
        return [{}]
    ranges = getattr(program, "range_constraints", {}) or {}
    per_symbol = {}
    for symbol, example in symbols.items():
        bounds = ranges.get(symbol)
        low = _finite(getattr(bounds, "lower", None)) or 2
        high = _finite(getattr(bounds, "upper", None))
        low = max(low, 2)
        top = min(high if high is not None else max(example * 2, low + 2), max(SIZE_CAP, example))
        middle = example + 1 if high is None or example + 1 <= high else example
        per_symbol[symbol] = [low, middle, top]
    return [{symbol: sizes[i] for symbol, sizes in per_symbol.items()} for i in range(SAMPLES)]


def _evaluate(dim, values: dict) -> int | None:
    node = getattr(dim, "node", None)
    expr = getattr(node, "expr", None)
    if expr is None:
        return int(dim)
    try:
        return int(expr.subs(values))
    except (TypeError, ValueError):
        return None


def _redraw(example, size: list[int]):
    """A tensor of `size` drawn like `example`: floats uniform over its range, integers among its
    values' range (indices stay valid), booleans at random."""
    import torch

    if example.dtype == torch.bool:
        return torch.rand(size) > 0.5
    if example.is_floating_point():
        low, high = (float(example.min()), float(example.max())) if example.numel() else (-1.0, 1.0)
        if low == high:
            return torch.full(size, low, dtype=example.dtype)
        return torch.empty(size, dtype=example.dtype).uniform_(low, high)
    if example.is_complex():
        return torch.randn(size, dtype=example.dtype)
    low, high = (int(example.min()), int(example.max())) if example.numel() else (0, 1)
    return torch.randint(low, high + 1, size, dtype=example.dtype)


def difference(expected, actual) -> str | None:
    """What differs between two output pytrees, with dtype-aware tolerances; None when they agree."""
    import torch
    from torch.utils import _pytree as pytree

    want_leaves, _ = pytree.tree_flatten(expected)
    got_leaves, _ = pytree.tree_flatten(actual)
    if len(want_leaves) != len(got_leaves):
        return f"{len(want_leaves)} outputs against {len(got_leaves)}"
    for index, (want, got) in enumerate(zip(want_leaves, got_leaves, strict=False)):
        if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
            if want.shape != got.shape:
                return f"output {index}: shape {tuple(got.shape)} against {tuple(want.shape)}"
            if want.is_floating_point() or want.is_complex():
                rtol, atol = TOLERANCES.get(str(want.dtype).removeprefix("torch."), (1e-4, 1e-5))
                if not torch.allclose(want, got.to(want.dtype), rtol=rtol, atol=atol, equal_nan=True):
                    largest = float(torch.nan_to_num((want - got.to(want.dtype)).abs(), nan=0.0).max())
                    return f"output {index} differs by up to {largest:.3g}"
            elif not torch.equal(want, got):
                return f"output {index} differs"
        elif isinstance(want, torch.Tensor) != isinstance(got, torch.Tensor):
            return f"output {index}: {type(got).__name__} against {type(want).__name__}"
        else:
            try:
                same = bool(want == got)
            except Exception:  # noqa: BLE001 - an output type without a usable ==
                same = want is got
            if not same:
                return f"output {index}: {got!r} against {want!r}"[:200]
    return None


def frozen_places(first, second, is_user_file: Callable[[str], bool]) -> list[tuple[Place, str]]:
    """The user lines whose frozen values differ between two exports of one model, each with the
    value the first froze (in words), first node first."""
    if second is None:
        return []
    import torch

    found: list[tuple[Place, str]] = []
    seen = set()

    def add(node, what: str) -> None:
        place = user_place(node, is_user_file)
        if place is not None and (place.file, place.line) not in seen:
            seen.add((place.file, place.line))
            found.append((place, what))

    nodes_a = [node for node in first.graph.nodes if node.op == "call_function"]
    nodes_b = [node for node in second.graph.nodes if node.op == "call_function"]
    for a, b in zip(nodes_a, nodes_b, strict=False):
        if a.target != b.target:
            # The graphs part ways: a branch on a frozen value went the other way.
            add(a, "the branch it took")
            break
        literals_a, literals_b = _literals(a.args, a.kwargs), _literals(b.args, b.kwargs)
        if literals_a != literals_b:
            changed = [x for x, y in zip(literals_a, literals_b, strict=False) if x != y]
            add(a, f"`{changed[0] if changed else literals_a}`")
    constants_a = getattr(first, "constants", {}) or {}
    constants_b = getattr(second, "constants", {}) or {}
    for name, value in constants_a.items():
        other = constants_b.get(name)
        if isinstance(value, torch.Tensor) and isinstance(other, torch.Tensor):
            if value.shape != other.shape or not torch.equal(value, other):
                for node in first.graph.nodes:
                    if node.op == "placeholder" and _lifted_name(first, node.name) == name:
                        for user in node.users:
                            add(user, f"the tensor `{name}`")
                            break
    return found


def _lifted_name(program, placeholder: str) -> str | None:
    for spec in program.graph_signature.input_specs:
        if getattr(spec.arg, "name", None) == placeholder:
            return spec.target
    return None


def _literals(args, kwargs) -> list:
    """The Python numbers and booleans among a node's arguments, in order."""
    out = []

    def walk(value) -> None:
        if isinstance(value, bool | int | float):
            out.append(value)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    walk(args)
    walk(kwargs)
    return out


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def user_place(node, is_user_file: Callable[[str], bool]) -> Place | None:
    """The innermost user frame of a node's stack trace."""
    trace = node.meta.get("stack_trace") or ""
    found = None
    for match in _FRAME.finditer(trace):
        if is_user_file(match.group(1)):
            found = Place(match.group(1), int(match.group(2)))
    return found


def _divergence_findings(program, target: Target, workspace: Workspace) -> list[dict]:
    """PT601 when the exported program disagrees with eager on fresh inputs; none otherwise,
    and none when the check cannot run (fake weights, a model that fails on the new inputs)."""
    import torch

    if target.fake_weights:
        return []

    def export_again():
        return torch.export.export(
            target.model, target.args, target.kwargs, dynamic_shapes=target.dynamic_shapes, strict=target.strict
        )

    try:
        with _time_budget(DIVERGENCE_BUDGET_SECONDS):
            found = check_divergence(
                target.model, program, tuple(target.args), dict(target.kwargs or {}), export_again, workspace.contains
            )
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - the check only adds to a successful export
        if isinstance(exc, KeyboardInterrupt):
            raise
        return []
    if found is None:
        return []
    if found.place is not None:
        finding = _located("PT601", {"file": os.path.abspath(found.place.file), "line": found.place.line}, found.message)
    else:
        file, name = target.model_binding or (workspace.entry_file, "model")
        finding = _binding_diagnostic(file, name, "PT601", found.message)
    finding["related"] = [
        {"file": os.path.abspath(place.file), "line": place.line, "message": "another value frozen by the export"}
        for place in found.more
    ]
    return [finding]


# draft_export re-runs the export with real tensors to collect every failure; on large models
# that costs minutes (LeViT with a dynamic height: 110 s against 4 s for the export that
# failed). Past this budget the first failure, already placed, stands alone.
DRAFT_BUDGET_SECONDS = 15.0
# The PT601 check runs the model a few times more; past this it gives up, saying nothing.
DIVERGENCE_BUDGET_SECONDS = 20.0


class _OverBudget(Exception):
    """Raised into the job when a budgeted step runs out of time."""


@contextlib.contextmanager
def _time_budget(seconds: float):
    """Interrupts the body with _OverBudget after `seconds` (SIGALRM, main thread only; where
    there is none, the body runs unbounded)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):  # noqa: ANN001, ARG001 - a signal handler's signature
        raise _OverBudget

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _capture_guards(events: list[dict]):
    """Records the export's own `guard_added` structured-trace events (expression, user frames,
    symbol sources). draft_export cannot always say where a guard comes from (a `torch._check`
    in a `torch.cond` branch, pytorch #147991); the export that failed saw the guard being added."""
    import contextlib

    @contextlib.contextmanager
    def patch():
        try:
            import torch.fx.experimental.symbolic_shapes as symbolic_shapes
        except Exception:
            yield
            return
        original = getattr(symbolic_shapes, "dtrace_structured", None)
        if original is None:
            yield
            return

        def dtrace_structured(name, *args, **kwargs):
            if name == "guard_added":
                metadata_fn = kwargs.get("metadata_fn") or (args[0] if args else None)
                try:
                    metadata = metadata_fn() if metadata_fn is not None else None
                except Exception:  # noqa: BLE001 - a record we cannot read is no record
                    metadata = None
                if isinstance(metadata, dict) and len(events) < 1000:
                    events.append({key: metadata.get(key) for key in ("expr", "user_stack", "symbol_to_sources")})
            return original(name, *args, **kwargs)

        symbolic_shapes.dtrace_structured = dtrace_structured
        try:
            yield
        finally:
            symbolic_shapes.dtrace_structured = original

    return patch()


def _place_on_guard(finding: dict, workspace: Workspace) -> None:
    """Puts a constraint violation without a place on the user's line that added a guard on a
    violated dimension, from the events `_capture_guards` recorded; the first such guard, as
    the exporter checks guards in the order they were added."""
    if finding.get("line") is not None or not finding.get("_guards"):
        return
    try:
        from torch._logging.structured import INTERN_TABLE
    except Exception:
        return
    filenames = {index: name for name, index in INTERN_TABLE.items()}
    sources = {source for source in finding.get("_dims") or {} if not source.startswith("?")}
    names = set((finding.get("_dims") or {}).values())

    def dimension(source: str) -> str | None:
        match = re.search(r"\.size\(\)\[\d+\]$", source)
        return match.group(0) if match else None

    # A guard in a `torch.cond` branch is on the branch's own inputs (L['args'][3][0]): when no
    # guard names the violated source, one on the same dimension of a branch input stands in.
    exact = [e for e in finding["_guards"] if not sources or set((e.get("symbol_to_sources") or {}).values()) & sources]
    dims = {dimension(source) for source in sources} - {None}
    near = [
        e
        for e in finding["_guards"]
        if e not in exact and {dimension(v) for v in (e.get("symbol_to_sources") or {}).values()} & dims
    ]
    for event in exact + near:
        on = set((event.get("symbol_to_sources") or {}).values())
        if not on:
            continue
        where = _user_stack_location(event.get("user_stack"), filenames, workspace)
        if where is None or where.get("line") is None:
            continue
        finding.update(file=where["file"], line=where["line"], column=None, end_line=None, end_column=None)
        named = ", ".join(f"`{name}`" for name in sorted(names)) or ", ".join(sorted(on))
        finding["message"] = _clip(
            f"this code adds the guard {event.get('expr')} on dynamic dimension {named}: " + finding["message"]
        )
        return


def _skip_expression_provenance() -> None:
    """Stops draft_export's structured trace from recording `expression_created` events.

    Each symbolic-int operation logs one, with a Python and a C++ stack captured: on
    transformer_block.py 3,220 of them were 80% of draft_export's time (3.9 s of draft_export,
    0.97 s without them; bench/README.md). They only feed provenance in the trace file written
    for tlparse; the report this worker reads (`ep._report`) does not use them. Each job is its
    own fork, so the patch dies with the job.
    """
    import torch.fx.experimental.sym_node as sym_node

    original = sym_node.dtrace_structured
    if getattr(original, "_pt2lsp_skips_expressions", False):
        return

    def dtrace_structured(name, *args, **kwargs):
        if name == "expression_created":
            return None
        return original(name, *args, **kwargs)

    dtrace_structured._pt2lsp_skips_expressions = True
    sym_node.dtrace_structured = dtrace_structured


def _merge(first: dict, drafted: list[dict], target: Target, workspace: Workspace) -> list[dict]:
    """The export's own error and draft_export's findings, without saying one thing twice."""
    if first.get("_constraint"):
        # The violation carries no line; draft_export's added guards say where it comes from.
        guards = [d for d in drafted if d.get("_guard")]
        if guards:
            return _finalize(guards + [d for d in drafted if not d.get("_guard")], target)
        _place_on_guard(first, workspace)
        _place_on_spec(first, target)
    if first.get("_example_size"):
        # draft_export retries with Dim.AUTO and reports the specialization again as added
        # guards; the example's size is the one cause.
        drafted = [d for d in drafted if not d.get("_guard")]
    where = (first.get("file"), first.get("line"))
    # On the line of the export's error, its own classification wins over draft_export's.
    rest = [d for d in drafted if (d.get("file"), d.get("line")) != where]
    # draft_export reports the export's own error again; without a place of its own it would
    # land on the `model` line as a second copy of the same failure.
    rest = [
        d
        for d in rest
        if not (d.get("line") is None and (d.get("code"), d.get("message")) == (first.get("code"), first.get("message")))
    ]
    return _finalize([first] + rest, target)


def _finalize(findings: list[dict], target: Target) -> list[dict]:
    """Drops private keys and duplicates by (code, file, line); a finding torch gave no place in
    the user's files goes on the `model` binding, the entrypoint it is about."""
    seen = set()
    out = []
    for finding in findings:
        if finding.get("line") is None:
            file, name = target.model_binding or (None, None)
            if file is None:
                continue
            finding.update(
                file=os.path.abspath(file), line=_binding_line(file, name) or 1, column=None, end_line=None, end_column=None
            )
        key = (finding["code"], finding["file"], finding["line"])
        if key in seen:
            continue
        seen.add(key)
        _relate_entrypoint(finding, target)
        out.append({k: v for k, v in finding.items() if not k.startswith("_")})
    return out


def _relate_entrypoint(finding: dict, target: Target) -> None:
    """The entrypoint's `model =` line as a related location of a finding placed elsewhere:
    the export that reaches the problem starts there."""
    file, name = target.model_binding or (None, None)
    line = _binding_line(file, name) if file else None
    if line is None:
        return
    file = os.path.abspath(file)
    if (finding.get("file"), finding.get("line")) == (file, line):
        return
    related = finding.setdefault("related", [])
    if any((entry["file"], entry["line"]) == (file, line) for entry in related):
        return
    related.append({"file": file, "line": line, "column": 1, "message": f"the entrypoint `{name}` that is exported"})


# -- writing the .pt2 (export jobs) --------------------------------------------------------------

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
        diagnostic = _binding_diagnostic(
            file,
            name,
            "PT503",
            "the model is built with fake weights (fake-weights / fake_weights = True): its parameters have "
            "shapes but no values, so a .pt2 of it would hold no weights and could not be checked against "
            "eager; turn fake weights off to write the file",
        )
        return {"status": "entrypoint", "diagnostics": [diagnostic]}
    programs: list = []
    diagnostics = trace(target, workspace, definitions, programs)
    if diagnostics or not programs:
        status = "oom" if any(d.get("code") == "PT502" for d in diagnostics) else "failed"
        return {"status": status, "diagnostics": diagnostics}
    program = programs[0]

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
        diagnostic = _binding_diagnostic(
            file, name, "PT501", f"the model exported but could not be saved to {output}: {type(exc).__name__}: {_trim(str(exc))}"
        )
        diagnostic["origin"] = "export"
        return {"status": "failed", "diagnostics": [diagnostic]}

    progress("verifying", "loading the file back with torch.export.load and running it")
    verification = _verify(temporary, target)
    report = {
        "path": output,
        "size": os.path.getsize(temporary),
        "nodes": len(program.graph.nodes),
        "inputs": _describe_inputs(program),
        "range_constraints": _range_constraints(program, target),
        "verification": verification,
        "strict": bool(target.strict),
    }
    os.replace(temporary, output)
    return {"status": "ok", "diagnostics": [], "export": report, "trace_seconds": round(time.monotonic() - started, 3)}


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
        out["detail"] = f"torch.export.load failed: {type(exc).__name__}: {_trim(str(exc))}"
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
        out["detail"] = f"running the loaded program failed: {type(exc).__name__}: {_trim(str(exc))}"
        return out
    out.update(_compare(expected, actual))
    return out


def _compare(expected, actual) -> dict:
    """Whether two output pytrees agree: tensors with torch.allclose (exact for integers and
    booleans), everything else with ==."""
    import torch
    from torch.utils import _pytree as pytree

    expected_leaves, _ = pytree.tree_flatten(expected)
    actual_leaves, _ = pytree.tree_flatten(actual)
    if len(expected_leaves) != len(actual_leaves):
        return {
            "matches": False,
            "detail": f"eager returns {len(expected_leaves)} values, the saved program {len(actual_leaves)}",
        }
    largest = None
    for index, (want, got) in enumerate(zip(expected_leaves, actual_leaves, strict=False)):
        if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
            if want.shape != got.shape:
                return {"matches": False, "detail": f"output {index}: shape {tuple(got.shape)}, eager {tuple(want.shape)}"}
            if want.dtype != got.dtype:
                return {"matches": False, "detail": f"output {index}: dtype {got.dtype}, eager {want.dtype}"}
            if want.is_floating_point() or want.is_complex():
                if want.numel():
                    # NaN where both are NaN counts as equal (equal_nan); JSON has no infinity.
                    diff = float(torch.nan_to_num((want.detach() - got.detach()).abs(), nan=0.0).max())
                    if diff == diff and diff != float("inf"):
                        largest = diff if largest is None else max(largest, diff)
                if not torch.allclose(want, got, rtol=VERIFY_RTOL, atol=VERIFY_ATOL, equal_nan=True):
                    return {
                        "matches": False,
                        "max_abs_diff": largest,
                        "detail": f"output {index} differs from eager (rtol {VERIFY_RTOL:g}, atol {VERIFY_ATOL:g})",
                    }
            elif not torch.equal(want, got):
                return {"matches": False, "detail": f"output {index} differs from eager"}
        elif isinstance(want, torch.Tensor) or isinstance(got, torch.Tensor):
            return {"matches": False, "detail": f"output {index}: {type(got).__name__}, eager {type(want).__name__}"}
        else:
            try:
                same = bool(want == got)
            except Exception:  # noqa: BLE001 - an output type without a usable ==
                same = want is got
            if not same:
                return {"matches": False, "detail": f"output {index}: {got!r}, eager {want!r}"[:MESSAGE_LIMIT]}
    return {"matches": True, "max_abs_diff": largest if largest is not None else 0.0, "detail": None}


_DTYPES = {
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "b8",
    "complex64": "c64",
    "complex128": "c128",
}


def _describe_inputs(program) -> list[str]:
    """`x: f32[s77, 64]` for each user input of the program."""
    described = []
    try:
        user_inputs = set(program.graph_signature.user_inputs)
        for node in program.graph.nodes:
            if node.op != "placeholder" or node.name not in user_inputs:
                continue
            value = node.meta.get("val")
            shape = getattr(value, "shape", None)
            if shape is None:
                described.append(f"{node.name}: {value!r}"[:200])
                continue
            dtype = str(getattr(value, "dtype", "")).replace("torch.", "")
            dims = ", ".join(str(size) for size in shape)
            described.append(f"{node.name}: {_DTYPES.get(dtype, dtype)}[{dims}]")
    except Exception:  # noqa: BLE001 - a description, never a reason to fail the export
        pass
    return described


def _range_constraints(program, target: Target) -> list[dict]:
    names = _dim_names(program, target)
    constraints = []
    for symbol, bounds in (getattr(program, "range_constraints", None) or {}).items():
        constraints.append(
            {"symbol": str(symbol), "dim": names.get(str(symbol)), "min": _finite(bounds.lower), "max": _finite(bounds.upper)}
        )
    constraints.sort(key=lambda c: c["symbol"])
    return constraints


def _finite(value) -> int | None:
    """An integer bound, or None for an unbounded one. Torch's `int_oo` (the upper bound of
    every `Dim` without a max, and of `Dim.AUTO` and `Dim.DYNAMIC`) says it is finite and
    cannot be converted with int(), so infinities are recognised by their type first."""
    try:
        import sympy

        if isinstance(value, sympy.Basic) and (not value.is_number or value.is_infinite or "Infinity" in type(value).__name__):
            return None
    except ImportError:
        pass
    try:
        if getattr(value, "is_finite", True) is False:
            return None
        number = int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    # Any bound this large is an infinity in another guise.
    return number if abs(number) < 2**62 else None


def _dim_names(program, target: Target) -> dict[str, str]:
    """{symbol: the user's Dim name} for the dims the program's inputs were declared with."""
    spec = target.dynamic_shapes
    names: dict[str, str] = {}
    if spec is None:
        return names
    try:
        placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
        user_inputs = list(program.graph_signature.user_inputs)
        if isinstance(spec, dict):
            pairs = [(key, dims) for key, dims in spec.items()]
        else:
            pairs = list(zip(user_inputs, spec, strict=False))
        for key, dims in pairs:
            node = placeholders.get(key)
            shape = getattr(node.meta.get("val") if node is not None else None, "shape", None)
            if shape is None or dims is None:
                continue
            items = dims.items() if isinstance(dims, dict) else enumerate(dims) if isinstance(dims, (list, tuple)) else ()
            for index, dim in items:
                name = getattr(dim, "__name__", None)
                if isinstance(name, str) and isinstance(index, int) and index < len(shape):
                    symbol = str(shape[index])
                    if symbol.isidentifier():
                        names.setdefault(symbol, name)
    except Exception:  # noqa: BLE001 - names are a courtesy
        pass
    return names


# -- classifying one exception ------------------------------------------------------------------


def _chain(exc: BaseException) -> list[BaseException]:
    chain = []
    seen = set()
    current = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _qualified(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"


def _is(exc: BaseException, name: str) -> bool:
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def classify(exc: BaseException, target: Target, workspace: Workspace, definitions: dict) -> dict:
    chain = _chain(exc)
    guard = next((e for e in chain if _is(e, "GuardOnDataDependentSymNode")), None)
    user_error = next((e for e in chain if _is(e, "UserError")), None)
    error_type = getattr(getattr(user_error, "error_type", None), "name", None)
    unsupported = next((e for e in chain if _is(e, "Unsupported")), None)
    messages = "\n".join(str(e) for e in chain)
    location = _exception_location(chain, workspace)
    library = _library_frames(chain, workspace)

    def finding(code: str, message: str, where=location, **extra) -> dict:
        out = _located(code, where, message)
        out["exception"] = _qualified(exc)
        if library:
            out["related"] = list(library)
        out.update(extra)
        return out

    if guard is not None:
        code = _data_dependent_code(guard, chain, workspace, str(getattr(guard, "partial_fx_graph", "") or ""))
        return finding(code, _data_dependent_message(guard, code), _collectable=True)
    if user_error is not None and error_type == "CONSTRAINT_VIOLATION":
        message, fixes, dims = parse_constraint_violation(str(user_error))
        specialized = example_size_specializations(str(user_error))
        if specialized:
            # The example's size 0 or 1 is the cause, not the model: the static PT405 says the
            # same on the same line, and the fix changes the example (the server's `dim_fix`).
            out = finding("PT405", _example_size_message(specialized), None, _collectable=True, _example_size=specialized)
            if fixes:
                out["fixes"] = fixes
            _place_on_examples(out, target, _inputs_with_dims(target, set(specialized)))
            return out
        out = finding(
            "PT401",
            message,
            location if _user_stack_in_message(str(user_error)) else None,
            _collectable=True,
            _constraint=True,
            _dims=dims,
            _violation=str(user_error),
        )
        if fixes:
            out["fixes"] = fixes
        return out
    if user_error is not None and error_type == "INVALID_INPUT":
        out = finding("PT403", _trim(str(user_error)), None)
        _place_on_spec(out, target, _blamed_spec_keys(str(user_error)))
        return out
    example_size = example_size_conflict(messages)
    if example_size is not None and (example_size[1] or any(_is(e, "ConstraintViolationError") for e in chain)):
        message, key = example_size
        out = finding("PT405", message, None)
        _place_on_examples(out, target, _inputs_named(target, key) if key else _inputs_with_dims(target, _all_dims(target)))
        return out
    if _raised_in_dynamic_shapes(chain, target, workspace):
        out = finding("PT403", f"dynamic_shapes does not fit the inputs: {type(exc).__name__}: {_trim(str(exc))}", None)
        _place_on_spec(out, target, _keys_past_rank(target))
        return out
    fake = _missing_fake_kernel(chain, messages)
    if fake is not None:
        where = definitions.get(fake) or location
        op = fake.replace("::", ".")
        return finding(
            "PT301",
            f"operator {op} has no fake (meta) kernel, so export cannot propagate shapes through it: "
            f'register one with @torch.library.register_fake("{fake}")',
            where,
            _collectable=True,
            _op=fake,
        )
    if unsupported is not None:
        return finding(_graph_break_code(unsupported), _unsupported_message(unsupported))
    if any(_is(e, "DataDependentOutputException") for e in chain):
        op = _first_lines(str(exc), 1)
        return finding("PT101", f"the result of {op} depends on the tensor's values, which export cannot branch on")
    if ".numpy() is not supported" in messages:
        return finding(
            "PT201", "`.numpy()` (or a NumPy call on a tensor) is not supported while exporting: " + _first_lines(messages, 1)
        )
    if "Cannot access data pointer of Tensor" in messages:
        return finding("PT202", "data_ptr() cannot be called while exporting: " + _first_sentence(messages))
    if any(_is(e, "MemoryError") for e in chain) or "can't allocate memory" in messages:
        return finding("PT502", "the trace ran out of memory: " + _first_lines(messages, 1))
    unflattened = unregistered_type(messages)
    if unflattened is not None:
        side, name = unflattened
        return _unregistered_finding(finding, side, name, target, workspace)
    return finding("PT501", f"{type(exc).__name__}: {_trim(str(exc))}".rstrip(": "))


def _located(code: str, where, message: str) -> dict:
    out = {
        "code": code,
        "file": None,
        "line": None,
        "column": None,
        "end_line": None,
        "end_column": None,
        "message": message,
        "origin": "export",
    }
    if where is not None:
        out.update(where)
    return out


def _frame_location(frame) -> dict:
    column = getattr(frame, "colno", None)
    end_column = getattr(frame, "end_colno", None)
    return {
        "file": os.path.abspath(frame.filename),
        "line": frame.lineno,
        "column": column,
        "end_line": getattr(frame, "end_lineno", None),
        "end_column": end_column,
    }


def _frame_diagnostic(code: str, frame, message: str) -> dict:
    out = _located(code, _frame_location(frame), message)
    return out


def _deepest_user_frame(frames, workspace: Workspace):
    found = None
    for frame in frames or []:
        filename = getattr(frame, "filename", None)
        if workspace.contains(filename) and getattr(frame, "lineno", None):
            found = frame
    return found


def _exception_location(chain: list[BaseException], workspace: Workspace) -> dict | None:
    # Strict export (and torch.cond branches) interpret the user's bytecode: the frames are in
    # `real_stack`, deeper than anything in the Python traceback.
    for exc in chain:
        frame = _deepest_user_frame(getattr(exc, "real_stack", None), workspace)
        if frame is None:
            summary = getattr(exc, "innermost_user_frame_summary", None)
            if summary is not None and workspace.contains(getattr(summary, "filename", None)):
                frame = summary
        if frame is not None:
            return _frame_location(frame)
    # Non-strict export runs forward for real: the user's frames are in the traceback.
    for exc in chain:
        frame = _deepest_user_frame(traceback.extract_tb(exc.__traceback__), workspace)
        if frame is not None:
            return _frame_location(frame)
    # Last resort: the message's own `File "…", line N` or `(path:N in fn)`.
    for exc in chain:
        text = str(exc)
        found = None
        for match in re.finditer(r'File "([^"]+)", line (\d+)', text):
            if workspace.contains(match.group(1)):
                found = {"file": os.path.abspath(match.group(1)), "line": int(match.group(2))}
        if found is not None:
            return found  # the innermost frame of the user's files the message names
        for match in re.finditer(r"\(([^():\s]+\.py):(\d+) in [^)]*\)", text):
            path = _resolve_relative(match.group(1), workspace)
            if path is not None:
                return {"file": path, "line": int(match.group(2))}
    return None


# Top-level packages of the exporter itself and of what it runs on: their frames are how torch
# works, never where a user's model failed.
_EXPORTER_PACKAGES = frozenset({"torch", "functorch", "sympy", "mpmath", "typing_extensions", "_pytest", "pt2lsp"})

# Library frames kept as related locations, the deepest ones (where the failure happened).
RELATED_FRAMES_LIMIT = 6


def _installed_package(filename: str | None) -> str | None:
    """The top-level package of a file in site-packages (or dist-packages), None elsewhere."""
    if not filename:
        return None
    parts = os.path.abspath(filename).split(os.sep)
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] in ("site-packages", "dist-packages"):
            top = parts[index + 1]
            return top[:-3] if top.endswith(".py") else top
    return None


def _column_in_characters(filename: str, line: int, column: int | None) -> int:
    """A 1-based column in characters from a 0-based column in UTF-8 bytes (1 when unknown)."""
    if column is None:
        return 1
    text = linecache.getline(filename, line)
    return len(text.encode("utf-8")[:column].decode("utf-8", errors="ignore")) + 1


def _library_frames(chain: list[BaseException], workspace: Workspace) -> list[dict]:
    """The frames of installed code (site-packages, outside torch) between the deepest frame of
    the user's workspace and the failure, deepest last, as related locations: a failure inside
    torchvision's `ops/boxes.py` is reported on the user's line that calls into it, and these
    say which library lines it went through."""
    for exc in reversed(chain):
        frames = traceback.extract_tb(exc.__traceback__)
        if not frames:
            continue
        deepest_user = max((i for i, frame in enumerate(frames) if workspace.contains(frame.filename)), default=-1)
        library = []
        for frame in frames[deepest_user + 1 :]:
            package = _installed_package(frame.filename)
            if package is None or package in _EXPORTER_PACKAGES or workspace.contains(frame.filename):
                continue
            if not frame.lineno:
                continue
            library.append(frame)
        if not library:
            continue
        library = library[-RELATED_FRAMES_LIMIT:]
        related = []
        for index, frame in enumerate(library):
            filename = os.path.abspath(frame.filename)
            deepest = index == len(library) - 1
            what = "the export failed here" if deepest else "called through here"
            related.append(
                {
                    "file": filename,
                    "line": frame.lineno,
                    "column": _column_in_characters(filename, frame.lineno, getattr(frame, "colno", None)),
                    "message": f"{what}, in {frame.name} ({_installed_package(frame.filename)}, installed code)",
                }
            )
        return related
    return []


def _resolve_relative(fragment: str, workspace: Workspace) -> str | None:
    """Torch prints `fixtures/x.py:8`: a path made relative to something; find the user file."""
    candidates = [workspace.entry_file] + [os.path.join(root, fragment) for root in workspace.roots]
    for candidate in candidates:
        if candidate.endswith(fragment.lstrip("./")) and workspace.contains(candidate) and os.path.exists(candidate):
            return os.path.abspath(candidate)
    return None


def _user_stack_in_message(text: str) -> bool:
    return "User stack:" in text or "User Stack" in text


# -- data-dependent errors --------------------------------------------------------------------


_ANNOTATED = re.compile(r'^\s*(\w+): "([^"]*)" = (.*)$')


def symbol_origin(symbol: str, graph_text: str) -> str | None:
    """How an unbacked symbol came to be, from the partial FX graph torch attaches to the error:
    "size" (an output size of nonzero/unique/masked_select/...), "bool" (the value of a boolean
    tensor: `if tensor:`), "scalar" (`.item()`, `int(t)`, `.tolist()`), or None."""
    dtypes: dict[str, str] = {}
    word = re.compile(rf"\b{re.escape(symbol)}\b")
    for line in graph_text.splitlines():
        match = _ANNOTATED.match(line)
        if not match:
            continue
        name, annotation, rhs = match.groups()
        dtype = annotation.split("[", 1)[0]
        dtypes[name] = dtype
        if not word.search(annotation):
            continue
        if annotation.startswith("Sym("):
            if re.search(r"\bitem\b|_local_scalar_dense|tolist", rhs):
                argument = re.search(r"\((\w+)", rhs)
                if argument and dtypes.get(argument.group(1)) == "b8":
                    return "bool"
                return "scalar"
            continue
        return "size"
    return None


def _data_dependent_code(guard: BaseException, chain, workspace: Workspace, graph_text: str) -> str:
    condition = getattr(guard, "cond", None)
    symbols = sorted(str(s) for s in getattr(condition, "free_symbols", ()) or ())
    if not symbols:
        symbols = re.findall(r"\b(?:zuf|zf|u)\d+\b", _first_lines(str(guard), 1))
    if any(s.startswith(("zuf", "zf")) for s in symbols):
        return "PT102"
    origins = {symbol_origin(s, graph_text) for s in symbols}
    if "size" in origins:
        return "PT103"
    if "scalar" in origins:
        return "PT102"
    if "bool" in origins:
        return "PT101"
    # Strict export attaches no graph; the message still says which symbols are sizes.
    size_like = re.search(r"\(Size-like symbols: ([^)]*)\)", str(guard))
    if size_like and any(s in re.findall(r"\w+", size_like.group(1)) for s in symbols):
        return "PT103"
    # No graph to read: a guard evaluated by a Python number's dunder (SymInt/SymBool in
    # torch/__init__.py) means the user turned data into a number first.
    for exc in chain:
        frames = traceback.extract_tb(exc.__traceback__)
        for index, frame in enumerate(frames):
            if workspace.contains(frame.filename) and index + 1 < len(frames):
                following = frames[index + 1]
                if following.filename.endswith(os.path.join("torch", "__init__.py")) and not any(
                    workspace.contains(f.filename) for f in frames[index + 1 :]
                ):
                    return "PT102"
    return "PT101"


_HINTS = {
    "PT101": "export cannot branch on a tensor's value; use torch.cond or torch.where",
    "PT102": "a Python number taken from a tensor's value drives control flow; use torch._check or keep it a tensor",
    "PT103": "a data-dependent size is used as a Python number; bound it with torch._check",
}


def _data_dependent_message(guard: BaseException, code: str) -> str:
    head = _first_lines(str(guard), 1).split(" (unhinted:")[0]
    head = re.sub(r"\s*\(Size-like symbols: [^)]*\)", "", head).strip().rstrip(".")
    return f"{head}: {_HINTS[code]}"


# -- constraint violations ----------------------------------------------------------------------


_BULLET_DIM = re.compile(r"\b([A-Za-z_]\w*) = (L\[[^\]]+\](?:\.size\(\)\[\d+\])?)")


def parse_suggested_fixes(text: str) -> list[dict]:
    """The `Suggested fixes:` block of a constraint violation, as data for a later code action."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Suggested fixes:")
    except StopIteration:
        return []
    fixes = []
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if not stripped or not line.startswith(" "):
            break
        match = re.match(r"^([A-Za-z_]\w*)\s*=\s*(.+)$", stripped)
        if not match:
            continue
        dim, value = match.group(1), match.group(2).strip()
        fix: dict = {"dim": dim, "text": stripped}
        call = re.match(r"^Dim\(\s*['\"]([^'\"]+)['\"]\s*(?:,(.*))?\)$", value)
        if call:
            fix["kind"] = "range"
            for key, number in re.findall(r"\b(min|max)\s*=\s*(-?\d+|oo|-oo|int_oo)", call.group(2) or ""):
                if number.lstrip("-").isdigit():
                    fix[key] = int(number)
        elif re.match(r"^-?\d+$", value):
            fix["kind"] = "constant"
            fix["value"] = int(value)
        elif re.match(r"^[A-Za-z_]\w*$", value):
            fix["kind"] = "equal"
            fix["to"] = value
        else:
            fix["kind"] = "derived"
            fix["expr"] = value
            roots = sorted(set(re.findall(r"[A-Za-z_]\w*", value)))
            if roots:
                fix["root"] = roots[0]
        fixes.append(fix)
    return fixes


def parse_constraint_violation(text: str) -> tuple[str, list[dict], dict[str, str]]:
    """(message, suggested fixes, {source: dim name}) of a `Constraints violated` error."""
    lines = [line for line in text.splitlines()]
    header = next((line.strip() for line in lines if line.strip().startswith("Constraints violated")), None)
    bullets = [line.strip()[2:] for line in lines if line.strip().startswith("- ")]
    dims: dict[str, str] = {}
    for bullet in bullets:
        for name, source in _BULLET_DIM.findall(bullet):
            dims.setdefault(source, name)
        # "You marked b as dynamic but your code specialized it to be a constant (8)" names no
        # source; the header's list of dims still says which dim it is.
        for name in re.findall(r"You marked ([A-Za-z_]\w*) as dynamic", bullet):
            dims.setdefault(f"?{name}", name)
    fixes = parse_suggested_fixes(text)
    if header:
        header = re.sub(r"\s*For more information, run with TORCH_LOGS=\S+", "", header)
    parts = [header or _first_lines(text, 1)]
    if bullets:
        parts.append(bullets[0] + (f" (and {len(bullets) - 1} more)" if len(bullets) > 1 else ""))
    if fixes:
        parts.append("suggested fix: " + "; ".join(fix["text"] for fix in fixes))
    return _clip(" ".join(parts)), fixes, dims


def _capture_constraint_messages(messages: list[str]):
    """draft_export retries a constraint violation with Dim.AUTO and forgets the message (and its
    `Suggested fixes`); keep a copy by wrapping the `_export` it calls."""
    import contextlib

    @contextlib.contextmanager
    def patch():
        try:
            import torch.export._draft_export as draft
        except Exception:
            yield
            return
        original = getattr(draft, "_export", None)
        if original is None:
            yield
            return

        def wrapped(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            except Exception as exc:
                if getattr(getattr(exc, "error_type", None), "name", None) == "CONSTRAINT_VIOLATION":
                    messages.append(str(exc))
                raise

        draft._export = wrapped
        try:
            yield
        finally:
            draft._export = original

    return patch()


# -- dynamic_shapes problems -------------------------------------------------------------------


_SPEC_FUNCTIONS = ("fakify", "symbolic_context", "dynamic_shapes", "make_fake_inputs", "_process_constraints")


def _raised_in_dynamic_shapes(chain, target: Target, workspace: Workspace) -> bool:
    """A bare error raised while torch read `dynamic_shapes`, before the model ran (a dim index
    past the input's rank is an IndexError in non-strict export)."""
    if target.dynamic_shapes is None:
        return False
    for exc in chain:
        if not isinstance(exc, (IndexError, KeyError, ValueError, TypeError, AssertionError)):
            continue
        frames = traceback.extract_tb(exc.__traceback__)
        if any(workspace.contains(frame.filename) for frame in frames):
            continue
        for frame in frames:
            path = frame.filename.replace("\\", "/")
            if path.endswith("torch/export/dynamic_shapes.py") or any(part in frame.name for part in _SPEC_FUNCTIONS):
                return True
    return False


def _blamed_spec_keys(text: str) -> list[str]:
    keys = re.findall(r"dynamic_shapes\[['\"]([^'\"]+)['\"]\]", text)
    if keys:
        return keys
    match = re.search(r"arg names (\[[^\]]*\]).*?but here they are (\[[^\]]*\])", text, re.S)
    if match:
        try:
            expected = set(ast.literal_eval(match.group(1)))
            given = ast.literal_eval(match.group(2))
            return [key for key in given if key not in expected]
        except (ValueError, SyntaxError):
            return []
    return []


def _keys_past_rank(target: Target) -> list[str]:
    """Keys of a dict spec naming a dimension the input does not have."""
    spec = target.dynamic_shapes
    if not isinstance(spec, dict):
        return []
    try:
        bound = inspect.signature(target.model.forward).bind(*target.args, **(target.kwargs or {}))
    except (TypeError, ValueError):
        return []
    blamed = []
    for key, dims in spec.items():
        value = bound.arguments.get(key)
        rank = getattr(value, "ndim", None)
        if rank is None:
            continue
        indices = list(dims.keys()) if isinstance(dims, dict) else range(len(dims)) if isinstance(dims, (list, tuple)) else []
        if any(isinstance(i, int) and i >= rank for i in indices) or (isinstance(dims, (list, tuple)) and len(dims) != rank):
            blamed.append(key)
    return blamed


def _place_on_spec(finding: dict, target: Target, keys=()) -> None:
    """Puts a finding about dynamic_shapes on the spec: the key it names, else the binding."""
    if finding.get("line") is not None:
        return
    binding = target.spec_binding or target.model_binding
    if binding is None:
        return
    file, name = binding
    node = _binding_node(file, name)
    finding["file"] = os.path.abspath(file)
    if node is None:
        finding["line"] = 1
        return
    value = getattr(node, "value", None)
    if not keys and finding.get("_dims"):
        keys = [
            re.match(r"L\['([^']+)'\]", source).group(1) for source in finding["_dims"] if re.match(r"L\['([^']+)'\]", source)
        ]
    if isinstance(value, ast.Dict):
        for key in keys:
            for key_node in value.keys:
                if isinstance(key_node, ast.Constant) and key_node.value == key:
                    finding.update(
                        line=key_node.lineno,
                        column=key_node.col_offset,
                        end_line=key_node.end_lineno,
                        end_column=key_node.end_col_offset,
                    )
                    return
    finding.update(line=node.lineno, column=node.col_offset, end_line=None, end_column=None)


# -- example inputs: sizes the exporter specializes, types it cannot flatten -------------------


_SPECIALIZED = re.compile(r"You marked ([A-Za-z_]\w*) as dynamic but your code specialized it to be a constant \((-?\d+)\)")


def example_size_specializations(text: str) -> dict[str, int]:
    """{dim name: size} when every violation of a `Constraints violated` error is a dimension
    declared dynamic and specialized to 0 or 1. The exporter specializes every example size 0
    or 1, and a trace can only specialize a dimension to the size its example has: so the
    example is the cause, whatever the model does. Empty when anything else is violated."""
    bullets = [line.strip()[2:] for line in text.splitlines() if line.strip().startswith("- ")]
    found: dict[str, int] = {}
    for bullet in bullets:
        match = _SPECIALIZED.search(bullet)
        if match is None or int(match.group(2)) not in (0, 1):
            return {}
        found.setdefault(match.group(1), int(match.group(2)))
    return found


def _example_size_message(specialized: dict[str, int]) -> str:
    named = ", ".join(f"`{name}`" for name in specialized)
    sizes = ", ".join(f"{size} on `{name}`" for name, size in specialized.items())
    return _clip(
        f"Constraints violated: {named} is declared dynamic, but the example input's size ({sizes}) is one the "
        "exporter always specializes to a constant (0 or 1): give the example a size of 2 or more and keep the Dim "
        "(torch suggests the constant, which makes the dimension static)"
    )


_OUT_OF_RANGE = re.compile(r"\b(-?\d+) not in range \[(-?\d+), ([^\]]+)\]")
_HINT_SPECIALIZED = re.compile(r"0/1 specialized due to hint of ([01]) for dimension inputs\['([^']+)'\]")


def example_size_conflict(text: str) -> tuple[str, str | None] | None:
    """(message, input name or None) when the exporter rejects an example's size for a dynamic
    dimension: outside the `Dim`'s range ("16 not in range [2, 8]"), or 0/1 under `Dim.DYNAMIC`
    ("0/1 specialized due to hint of 1 for dimension inputs['x'].shape[1]")."""
    match = _HINT_SPECIALIZED.search(text)
    if match is not None:
        return (
            f"the example input `{match.group(2)}` has size {match.group(1)} in a dimension declared Dim.DYNAMIC, "
            "which the exporter specializes to a constant: give the example a size of 2 or more",
            match.group(2),
        )
    match = _OUT_OF_RANGE.search(text)
    if match is not None:
        size, low, high = match.groups()
        return (
            f"an example input's size {size} is outside the range [{low}, {high}] its dynamic dimension declares: "
            "give the example a size inside the range (the exporter traces with the example's sizes)",
            None,
        )
    return None


def _all_dims(target: Target) -> set[str]:
    spec = target.dynamic_shapes
    values = spec.values() if isinstance(spec, dict) else spec if isinstance(spec, (list, tuple)) else []
    return set().union(set(), *(_spec_dim_names(value) for value in values))


def _inputs_named(target: Target, key: str) -> list[tuple[str, object]]:
    if isinstance(target.kwargs, dict) and key in target.kwargs:
        return [("kwarg", key)]
    parameters = _forward_parameters(target)
    if key in parameters and parameters.index(key) < len(target.args):
        return [("arg", parameters.index(key))]
    return []


def _spec_dim_names(spec) -> set[str]:
    """Names of the `Dim`s in one input's dynamic_shapes entry, at any depth."""
    if isinstance(spec, dict):
        return set().union(set(), *(_spec_dim_names(value) for value in spec.values()))
    if isinstance(spec, (list, tuple)):
        return set().union(set(), *(_spec_dim_names(value) for value in spec))
    name = getattr(spec, "__name__", None)
    return {name} if isinstance(name, str) else set()


def _forward_parameters(target: Target) -> list[str]:
    try:
        return [
            p.name
            for p in inspect.signature(target.model.forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError, AttributeError):
        return []


def _inputs_with_dims(target: Target, names: set[str]) -> list[tuple[str, object]]:
    """The example inputs (("arg", position) or ("kwarg", key)) whose dynamic_shapes entry
    declares one of the `Dim`s `names`."""
    spec = target.dynamic_shapes
    kwargs = target.kwargs if isinstance(target.kwargs, dict) else {}
    inputs: list[tuple[str, object]] = []
    if isinstance(spec, dict):
        parameters = _forward_parameters(target)
        for key, value in spec.items():
            if not _spec_dim_names(value) & names:
                continue
            if key in kwargs:
                inputs.append(("kwarg", key))
            elif key in parameters and parameters.index(key) < len(target.args):
                inputs.append(("arg", parameters.index(key)))
    elif isinstance(spec, (list, tuple)):
        for position, value in enumerate(spec):
            if _spec_dim_names(value) & names:
                inputs.append(("arg", position) if position < len(target.args) else ("kwarg", None))
    return inputs


def _place_on_examples(finding: dict, target: Target, inputs: list[tuple[str, object]]) -> None:
    """Puts a finding about example inputs on the first of `inputs`: its element of a literal
    `example_args` tuple or its key of a literal `example_kwargs` dict, else the binding's line;
    without inputs, on `example_args`."""
    side, which = inputs[0] if inputs else ("arg", None)
    binding = target.kwargs_binding if side == "kwarg" and target.kwargs_binding else target.args_binding
    if binding is None:
        return
    file, name = binding
    node = _binding_node(file, name)
    finding["file"] = os.path.abspath(file)
    if node is None:
        finding["line"] = 1
        return
    value = getattr(node, "value", None)
    place = node
    if side == "arg" and isinstance(which, int) and isinstance(value, (ast.Tuple, ast.List)):
        if which < len(value.elts) and not any(isinstance(e, ast.Starred) for e in value.elts[: which + 1]):
            place = value.elts[which]
    elif side == "kwarg" and isinstance(value, ast.Dict):
        for key_node, value_node in zip(value.keys, value.values, strict=True):
            if isinstance(key_node, ast.Constant) and key_node.value == which:
                place = value_node
    if place is node:
        finding.update(line=node.lineno, column=None, end_line=None, end_column=None)
    else:
        finding.update(line=place.lineno, column=place.col_offset, end_line=place.end_lineno, end_column=place.end_col_offset)


_UNREGISTERED = (
    ("input", re.compile(r"Unsupported input type <class '([^']+)'>")),
    ("output", re.compile(r"Found <class '([^']+)'> in output, which is not a known type")),
    ("any", re.compile(r"<class '([^']+)'>[^\n]*? is not a known type")),
)


def unregistered_type(text: str) -> tuple[str, str] | None:
    """("input" | "output" | "any", qualified class name) of an exporter error about a type
    pytree cannot flatten (pytorch #147400), else None."""
    for side, pattern in _UNREGISTERED:
        match = pattern.search(text)
        if match is not None:
            return side, match.group(1)
    return None


def _holds_type(value, name: str, depth: int = 0) -> bool:
    if depth > 8:
        return False
    cls = type(value)
    if f"{cls.__module__}.{cls.__qualname__}" == name or cls.__qualname__ == name:
        return True
    if isinstance(value, dict):
        return any(_holds_type(v, name, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_type(v, name, depth + 1) for v in value)
    return False


def _return_location(target: Target, name: str, workspace: Workspace) -> dict | None:
    """The `return` of the model's forward that most likely builds an instance of `name`."""
    try:
        function = inspect.unwrap(type(target.model).forward)
        file = inspect.getsourcefile(function)
        lines, start = inspect.getsourcelines(function)
    except (TypeError, OSError, AttributeError):
        return None
    if not file or not workspace.contains(file):
        return None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None
    returns = [node for node in ast.walk(tree) if isinstance(node, ast.Return) and node.value is not None]
    if not returns:
        return None
    short = name.rsplit(".", 1)[-1]
    chosen = next(
        (node for node in returns if any(getattr(n, "id", getattr(n, "attr", None)) == short for n in ast.walk(node))),
        returns[-1],
    )
    return {"file": os.path.abspath(file), "line": start + chosen.lineno - 1}


def _unregistered_finding(finding, side: str, name: str, target: Target, workspace: Workspace) -> dict:
    short = name.rsplit(".", 1)[-1]
    register = (
        f"register it with torch.export.register_dataclass({short}) (a dataclass) or "
        f"torch.utils._pytree.register_pytree_node({short}, ...)"
    )
    inputs: list[tuple[str, object]] = [("arg", i) for i, value in enumerate(target.args) if _holds_type(value, name)]
    if isinstance(target.kwargs, dict):
        inputs += [("kwarg", key) for key, value in target.kwargs.items() if _holds_type(value, name)]
    if side == "output" or (side == "any" and not inputs):
        where = _return_location(target, name, workspace)
        message = f"forward returns a {short}, a type torch.export cannot flatten (not a registered pytree node): {register}"
        if where is not None or side == "output":
            return finding("PT404", _clip(message), where)
    out = finding(
        "PT404",
        _clip(f"the example input's type {short} is one torch.export cannot flatten (not a registered pytree node): {register}"),
        None,
    )
    _place_on_examples(out, target, inputs)
    return out


# -- fake kernels ---------------------------------------------------------------------------


def _normalize_op(name: str) -> str:
    """`ns.op.default`, `ns::op`, `<CustomOpDef(ns::op)>` -> `ns::op`."""
    name = name.strip()
    match = re.search(r"CustomOpDef\(([^)]+)\)", name)
    if match:
        name = match.group(1)
    if "::" in name:
        namespace, rest = name.split("::", 1)
        return f"{namespace}::{rest.split('.')[0]}"
    parts = name.split(".")
    if len(parts) >= 2:
        return f"{parts[0]}::{parts[1]}"
    return name


def _missing_fake_kernel(chain, messages: str) -> str | None:
    for exc in chain:
        if _is(exc, "UnsupportedOperatorException"):
            func = getattr(exc, "func", None)
            return _normalize_op(str(func) if func is not None else _first_lines(str(exc), 1))
    match = re.search(r"no fake impl registered for (<CustomOpDef\([^)]*\)>|[\w:.]+)", messages)
    if match:
        return _normalize_op(match.group(1))
    match = re.search(r"Operator does not support running with fake tensors.*?(?:operator|op):?\s*`?([\w:.]+)", messages, re.S)
    if match:
        return _normalize_op(match.group(1))
    return None


def _record_operator_definitions(workspace: Workspace) -> dict:
    """Where each custom operator is defined in the user's files: PT301 goes on the definition
    (`@custom_op` or `lib.define`), since that is where the fake kernel is missing."""
    definitions: dict[str, dict] = {}

    def user_frame():
        frame = sys._getframe(2)
        while frame is not None:
            if workspace.contains(frame.f_code.co_filename):
                return frame
            frame = frame.f_back
        return None

    def remember(qualname: str) -> None:
        frame = user_frame()
        if frame is not None and qualname not in definitions:
            definitions[qualname] = {"file": os.path.abspath(frame.f_code.co_filename), "line": frame.f_lineno}

    try:
        import torch.library as library

        original_define = library.Library.define

        def define(self, schema, *args, **kwargs):
            result = original_define(self, schema, *args, **kwargs)
            try:
                remember(f"{self.ns}::{str(schema).split('(')[0].split('.')[0].strip()}")
            except Exception:
                pass
            return result

        library.Library.define = define
    except Exception:
        pass
    try:
        from torch._library import custom_ops

        original_init = custom_ops.CustomOpDef.__init__

        def init(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            try:
                remember(f"{self._namespace}::{self._name}")
            except Exception:
                pass

        custom_ops.CustomOpDef.__init__ = init
    except Exception:
        pass
    return definitions


# -- graph breaks -------------------------------------------------------------------------------


def _graph_break_code(exc: BaseException) -> str:
    kind = str(getattr(exc, "gb_type", "") or _first_lines(str(exc), 1))
    if "Data-dependent branching" in kind or "generic_jump" in kind:
        return "PT101"
    if "item()" in kind or "tolist()" in kind or "scalar" in kind.lower():
        return "PT102"
    if "Dynamic shape operator" in kind:
        return "PT103"
    if "graph_break()" in kind:
        return "PT203"
    if "fake tensors" in kind or "fake impl" in kind:
        return "PT301"
    if "marked as skipped" in kind or "Unsupported function call" in kind or "builtin" in kind.lower():
        return "PT202"
    if "numpy" in kind.lower():
        return "PT201"
    return "PT202"


def _unsupported_message(exc: BaseException) -> str:
    kind = str(getattr(exc, "gb_type", "") or "").strip()
    text = str(exc)
    explanation = None
    for line in text.splitlines():
        if line.strip().startswith("Explanation:"):
            explanation = line.strip()[len("Explanation:") :].strip()
            break
    if not kind:
        return _trim(text)
    return _clip(f"{kind}: {explanation}" if explanation else kind)


# -- draft_export's report ------------------------------------------------------------------


def draft_findings(program, target, workspace, definitions, first, constraint_messages) -> list[dict]:
    report = getattr(program, "_report", None)
    if report is None:
        return []
    from torch._logging.structured import INTERN_TABLE

    filenames = {index: name for name, index in INTERN_TABLE.items()}
    filenames.update(getattr(report, "str_to_filename", {}) or {})
    violation = first.get("_violation") or (constraint_messages[0] if constraint_messages else "")
    _, fixes, dims = parse_constraint_violation(violation) if violation else ("", [], {})
    findings = []
    # Operators whose fake kernel is missing or wrong: draft_export gives their outputs unbacked
    # sizes of its own making, so a guard on those sizes follows from the kernel and is not a
    # problem of its own (real torch fails on the kernel alone).
    broken_ops = {
        _normalize_op(str((failure.data or {}).get("op", "")))
        for failure in report.failures
        if getattr(failure.failure_type, "name", "") in ("MISSING_FAKE_KERNEL", "MISMATCHED_FAKE_KERNEL")
    }
    if first.get("code") in ("PT301", "PT302") and first.get("_op"):
        broken_ops.add(first["_op"])
    for failure in report.failures:
        kind = getattr(failure.failure_type, "name", str(failure.failure_type))
        data = failure.data or {}
        if kind == "DATA_DEPENDENT_ERROR":
            if broken_ops and _symbol_producers(program, str(data.get("expr") or "")) & broken_ops:
                continue
            where = _user_stack_location(data.get("user_stack"), filenames, workspace)
            code = _draft_data_dependent_code(data, program, filenames, workspace)
            expr = data.get("expr")
            finding = _located(code, where, f"Could not guard on data-dependent expression {expr}: {_HINTS[code]}")
            finding["origin"] = "draft_export"
            findings.append(finding)
        elif kind == "GUARD_ADDED":
            where = _user_stack_location(data.get("user_stack"), filenames, workspace)
            sources = data.get("symbol_to_sources") or {}
            names = sorted({dims[s] for s in sources.values() if s in dims})
            if dims and not names and len(set(dims.values())) == 1:
                # One dim violated: strict export names sources differently (L['flat_args'][0]).
                names = sorted(set(dims.values()))
            if dims and not names:
                continue  # a guard on a dimension the violation is not about (Dim.AUTO)
            named = ", ".join(f"`{name}`" for name in names) or ", ".join(sorted(set(sources.values())))
            message = f"Constraints violated: this code adds the guard {data.get('expr')} on dynamic dimension {named}"
            relevant = [fix for fix in fixes if fix["dim"] in names or fix.get("root") in names or not names]
            # A derived fix (`b = 2*_b`) comes with its root's definition (`_b = Dim(...)`).
            roots = {fix.get("root") for fix in relevant if fix.get("kind") == "derived"}
            relevant += [fix for fix in fixes if fix["dim"] in roots and fix not in relevant]
            if relevant:
                message += "; suggested fix: " + "; ".join(fix["text"] for fix in relevant)
            finding = _located("PT401", where, _clip(message))
            finding["origin"] = "draft_export"
            finding["_guard"] = True
            if relevant:
                finding["fixes"] = relevant
            findings.append(finding)
        elif kind in ("MISSING_FAKE_KERNEL", "MISMATCHED_FAKE_KERNEL"):
            op = _normalize_op(str(data.get("op", "")))
            where = definitions.get(op) or _graph_node_location(program, str(data.get("op", "")), workspace)
            if kind == "MISSING_FAKE_KERNEL":
                code = "PT301"
                message = (
                    f"operator {op.replace('::', '.')} has no fake (meta) kernel, so export cannot propagate shapes "
                    f'through it: register one with @torch.library.register_fake("{op}")'
                )
            else:
                code = "PT302"
                message = (
                    f"the fake kernel of {op.replace('::', '.')} disagrees with the real one: {data.get('reason', '')}".rstrip(
                        ": "
                    )
                )
            finding = _located(code, where, _clip(message))
            finding["origin"] = "draft_export"
            findings.append(finding)
    return findings


def _symbol_producers(program, expr: str) -> set[str]:
    """The operators (`ns::op`) whose outputs bind the unbacked symbols of `expr`."""
    symbols = set(re.findall(r"\b(?:zuf|zf|u)\d+\b", expr))
    producers = set()
    try:
        for node in program.graph.nodes:
            bindings = node.meta.get("unbacked_bindings") or {}
            if any(str(symbol) in symbols for symbol in bindings):
                producers.add(_normalize_op(str(node.target)))
    except Exception:  # noqa: BLE001 - a graph without the metadata drops nothing
        pass
    return producers


def _user_stack_location(stack, filenames, workspace: Workspace) -> dict | None:
    found = None
    for frame in stack or []:
        name = frame.get("filename")
        filename = filenames.get(name, name) if isinstance(name, int) else name
        if isinstance(filename, str) and workspace.contains(filename):
            found = {"file": os.path.abspath(filename), "line": frame.get("line")}
    return found


def _draft_data_dependent_code(data, program, filenames, workspace: Workspace) -> str:
    expr = str(data.get("expr") or "")
    symbols = re.findall(r"\b(?:zuf|zf|u)\d+\b", expr)
    if any(s.startswith(("zuf", "zf")) for s in symbols):
        return "PT102"
    origins = set()
    try:
        for node in program.graph.nodes:
            bindings = node.meta.get("unbacked_bindings") or {}
            if not any(str(symbol) in symbols for symbol in bindings):
                continue
            target = str(node.target)
            if "item" in target or "_local_scalar_dense" in target:
                argument = node.args[0] if node.args else None
                value = getattr(argument, "meta", {}).get("val") if argument is not None else None
                origins.add("bool" if str(getattr(value, "dtype", "")) == "torch.bool" else "scalar")
            else:
                origins.add("size")
    except Exception:
        pass
    if "size" in origins:
        return "PT103"
    if "scalar" in origins:
        return "PT102"
    if "bool" in origins:
        return "PT101"
    stack = data.get("stack") or []
    if stack:
        name = stack[0].get("filename")
        filename = filenames.get(name, name) if isinstance(name, int) else name
        if isinstance(filename, str) and filename.replace("\\", "/").endswith("torch/__init__.py"):
            return "PT102"
    return "PT101"


def _graph_node_location(program, op: str, workspace: Workspace) -> dict | None:
    try:
        for node in program.graph.nodes:
            if str(node.target) != op:
                continue
            stack_trace = node.meta.get("stack_trace") or ""
            found = None
            for match in re.finditer(r'File "([^"]+)", line (\d+)', stack_trace):
                if workspace.contains(match.group(1)):
                    found = {"file": os.path.abspath(match.group(1)), "line": int(match.group(2))}
            if found:
                return found
    except Exception:
        pass
    return None


# -- messages -----------------------------------------------------------------------------------


_BOILERPLATE = (
    "The error above occurred when calling torch.export",
    "For more information",
    "consider using data-dependent friendly",
    "Caused by:",
    "For extended logs",
    "If you suspect",
    "For more debugging help",
    "For C++ stack trace",
    "from user code:",
    "Set TORCHDYNAMO_VERBOSE",
    "User Stack",
    "User stack",
    "The following call raised this error",
    "Hint:",
    "For more details about this graph break",
    "Developer debug context",
)


def _trim(text: str, max_lines: int = 3) -> str:
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            if kept:
                break
            continue
        if stripped.startswith(_BOILERPLATE):
            break
        kept.append(stripped)
        if len(kept) >= max_lines:
            break
    out = " ".join(kept)
    out = re.sub(r"\s*For more information about this error, see: \S+", "", out)
    return _clip(out)


def _first_sentence(text: str) -> str:
    line = _first_lines(text, 1)
    match = re.match(r"(.+?[.!?])(\s|$)", line)
    return match.group(1) if match else line


def _first_lines(text: str, count: int) -> str:
    return _trim(text, count)


def _clip(text: str) -> str:
    text = text.strip()
    if len(text) > MESSAGE_LIMIT:
        text = text[: MESSAGE_LIMIT - 1].rstrip() + "…"
    return text


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
