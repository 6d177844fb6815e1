"""The zygote: forks one warm child per job, watches its pipes and deadline, reports its end."""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import sys
import time
import traceback

from . import outcomes, preload
from .channel import Channel
from .job import run_job
from .protocol import OUTPUT_LIMIT


def set_parent_death_signal(signum: int) -> None:
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
        self.preloader = preload.Preloader()

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
        # Imported here, the job's libraries are imported once for every later job.
        preload.for_this_job = self.preloader.load_for(job["file"], list(job.get("roots") or []))
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
        set_parent_death_signal(signal.SIGKILL)
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
        signal_number = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        exit_status = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        message.update(
            outcomes.ended(
                child.job,
                child.job_dir,
                killed_for=child.killed_for,
                result=result,
                signal_number=signal_number,
                exit_status=exit_status,
            )
        )
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
