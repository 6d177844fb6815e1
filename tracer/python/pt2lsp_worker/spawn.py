"""Spawn mode: a pool of warm job processes started fresh, never forked, one job each.

Where `fork` after importing torch is unsafe or absent (macOS, Windows), the worker does not
fork: it keeps `size` processes started with multiprocessing's `spawn` method, each of which
imports torch, runs the warm-up export, says it is ready, then runs exactly one job and exits;
a new one is started in its place at once. Jobs therefore start as warm as forked ones once the
pool is full, and each still runs in a clean process that can be killed on timeout or cancel.

The manager side of the protocol is the zygote's (`zygote.py`): the same `started`, `progress`
and `result` events, the same statuses. A job process talks to this one over a multiprocessing
pipe; what the traced code prints goes to a file in the job's directory, of which the first
`OUTPUT_LIMIT` bytes come back with the result.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sys
import time
from multiprocessing.connection import wait

from . import outcomes
from .channel import Channel
from .protocol import OUTPUT_LIMIT

START_FAILURES = 3


class Member:
    """One pooled process: warming up, ready, or running one job."""

    def __init__(self, context, run_dir: str, index: int) -> None:
        parent, child = context.Pipe()
        self.conn = parent
        self.process = context.Process(
            target=member_main, args=(child, run_dir, os.getpid()), name=f"pt2lsp-job-{index}", daemon=True
        )
        self.process.start()
        child.close()
        self.ready = False
        self.job_id: int | None = None
        self.job: dict = {}
        self.job_dir = ""
        self.started = 0.0
        self.deadline = float("inf")
        self.killed_for: str | None = None
        self.result: dict | None = None

    def assign(self, job_id: int, job: dict, job_dir: str) -> None:
        self.job_id, self.job, self.job_dir = job_id, job, job_dir
        self.started = time.monotonic()
        self.deadline = self.started + float(job.get("timeout") or 60)
        self.conn.send((job, job_dir))

    def kill(self, reason: str) -> None:
        if self.killed_for is None:
            self.killed_for = reason
        _kill_group(self.process.pid)
        self.process.kill()


class SpawnPool:
    """Serves the manager's jobs on a pool of spawned processes."""

    def __init__(self, channel: Channel, run_dir: str, size: int) -> None:
        self.channel = channel
        self.run_dir = run_dir
        self.size = max(1, size)
        self.context = multiprocessing.get_context("spawn")
        self.members: list[Member] = []
        self.queue: list[tuple[int, dict]] = []
        self.started = 0
        # Processes in a row that ended before they were ready; past `START_FAILURES` the pool
        # stops starting them and fails the jobs, rather than retry forever.
        self.failed_starts = 0
        self.broken: str | None = None

    def serve(self) -> None:
        # As the zygote: the manager decides when the worker ends.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self.channel.sock.setblocking(False)
        self.fill()
        try:
            while True:
                waitables = [self.channel.sock]
                for member in self.members:
                    waitables += [member.conn, member.process.sentinel]
                busy = [member.deadline for member in self.members if member.job_id is not None]
                timeout = max(0.0, min(busy) - time.monotonic()) if busy else None
                for ready in wait(waitables, timeout):
                    if ready is self.channel.sock:
                        messages = self.channel.feed()
                        if messages is None:
                            return
                        for message in messages:
                            if self.handle(message) == "shutdown":
                                return
                    else:
                        self.on_member(ready)
                self.enforce_deadlines()
                self.dispatch()
                self.fill()
        finally:
            for member in self.members:
                member.kill("cancelled")
            for member in self.members:
                member.process.join(1)
                if member.job_dir:
                    shutil.rmtree(member.job_dir, ignore_errors=True)

    def handle(self, message: dict) -> str | None:
        op = message.get("op")
        if op == "job":
            job = message["job"]
            if message.get("export"):
                job = dict(job, export=message["export"])
            self.queue.append((message["id"], job))
            self.dispatch()
        elif op == "cancel":
            job_id = message.get("id")
            queued = [entry for entry in self.queue if entry[0] == job_id]
            if queued:
                self.queue.remove(queued[0])
                self.send({"event": "result", "id": job_id, "status": "cancelled", "elapsed": 0.0})
            for member in self.members:
                if member.job_id == job_id:
                    member.kill("cancelled")
        elif op == "shutdown":
            return "shutdown"
        else:
            self.send({"event": "error", "message": f"unknown message {message!r}"[:300]})
        return None

    def fill(self) -> None:
        """Starts processes until `size` are warming up, ready or running."""
        if self.broken is not None:
            for job_id, _ in self.queue:
                self.send({"event": "result", "id": job_id, "status": "crashed", "detail": self.broken, "elapsed": 0.0})
            self.queue.clear()
            return
        while len(self.members) < self.size:
            self.started += 1
            self.members.append(Member(self.context, self.run_dir, self.started))

    def dispatch(self) -> None:
        for member in self.members:
            if not self.queue:
                return
            if member.ready and member.job_id is None:
                job_id, job = self.queue.pop(0)
                job_dir = os.path.join(self.run_dir, f"job-{job_id}")
                shutil.rmtree(job_dir, ignore_errors=True)
                os.mkdir(job_dir, 0o700)
                member.assign(job_id, job, job_dir)
                self.send({"event": "started", "id": job_id, "pid": member.process.pid})

    def on_member(self, ready) -> None:
        for member in list(self.members):
            if ready is member.conn:
                try:
                    message = member.conn.recv()
                except (EOFError, OSError):
                    # The process ended: its sentinel says so too, and `finish` follows.
                    self.finish(member)
                    return
                kind = message[0]
                if kind == "ready":
                    member.ready = True
                    self.failed_starts = 0
                elif kind == "progress" and member.job_id is not None:
                    self.send({"event": "progress", "id": member.job_id, "stage": message[1], "message": message[2]})
                elif kind == "result":
                    member.result = message[1]
                return
            if ready == member.process.sentinel:
                self.finish(member)
                return

    def finish(self, member: Member) -> None:
        """A pooled process ended: report its job, if it had one, and forget it."""
        if member not in self.members:
            return
        member.process.join(5)
        self.members.remove(member)
        if member.job_id is None:
            if not member.ready:
                # It could not warm up (torch broken since the hello?).
                self.failed_starts += 1
                if self.failed_starts >= START_FAILURES:
                    code = member.process.exitcode
                    self.broken = f"{START_FAILURES} tracer processes in a row exited while starting (exit status {code})"
                    self.send({"event": "error", "message": self.broken})
            return
        # Drain a result sent just before the end.
        try:
            while member.result is None and member.conn.poll():
                message = member.conn.recv()
                if message[0] == "result":
                    member.result = message[1]
        except (EOFError, OSError):
            pass
        message = {"event": "result", "id": member.job_id, "elapsed": round(time.monotonic() - member.started, 3)}
        code = member.process.exitcode
        message.update(
            outcomes.ended(
                member.job,
                member.job_dir,
                killed_for=member.killed_for,
                result=member.result,
                signal_number=-code if code is not None and code < 0 else None,
                exit_status=code,
            )
        )
        output, truncated = _read_output(member.job_dir)
        message["output"] = output
        message["output_truncated"] = truncated
        shutil.rmtree(member.job_dir, ignore_errors=True)
        self.send(message)

    def enforce_deadlines(self) -> None:
        now = time.monotonic()
        for member in self.members:
            if member.job_id is not None and now >= member.deadline:
                member.kill(member.killed_for or "timeout")
                member.deadline = now + 1.0

    def send(self, message: dict) -> None:
        self.channel.sock.setblocking(True)
        try:
            self.channel.send(message)
        finally:
            self.channel.sock.setblocking(False)


def member_main(conn, run_dir: str, pool_pid: int) -> None:
    """A pooled process: warm up, wait for one job, run it, send its result, exit."""
    from .main import _warm_up
    from .zygote import set_parent_death_signal

    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != pool_pid:
        # The pool died while this process was starting: nothing would ever read it, and it
        # would write into a run directory the manager has removed.
        os._exit(1)
    if hasattr(os, "setpgid"):
        try:
            os.setpgid(0, 0)  # its own group, so a kill takes what the job started too
        except OSError:
            pass
    import tempfile

    tempfile.tempdir = run_dir
    _warm_up(run_dir)
    conn.send(("ready", os.getpid()))
    try:
        job, job_dir = conn.recv()
    except (EOFError, OSError):
        return
    _redirect_output(os.path.join(job_dir, "output"))
    from .job import run_job

    try:
        result = run_job(job, job_dir, lambda stage, message=None: conn.send(("progress", stage, message)))
    except BaseException as exc:  # noqa: BLE001 - reported as a crash of the job
        import traceback

        result = {
            "status": "crashed",
            "detail": f"the tracer failed: {type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc()[-4000:],
        }
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    conn.send(("result", result))
    conn.close()
    os._exit(0)


def _redirect_output(path: str) -> None:
    """The job's stdout and stderr (Python's and the C library's) into one file."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _read_output(job_dir: str) -> tuple[str, bool]:
    try:
        with open(os.path.join(job_dir, "output"), "rb") as output:
            data = output.read(OUTPUT_LIMIT + 1)
    except OSError:
        return "", False
    return data[:OUTPUT_LIMIT].decode("utf-8", "replace"), len(data) > OUTPUT_LIMIT


def _kill_group(pid: int | None) -> None:
    if pid is None or not hasattr(os, "killpg"):
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
