"""Where a job was when its time ran out: the job arms faulthandler to write its Python stack to a
file in its directory shortly before the deadline; the process that kills it reads the file and
puts the timeout (PT502) on the deepest line of the user's files that was running (a loop, a
wait), instead of on the entrypoint."""

from __future__ import annotations

import faulthandler
import os
import re

from .workspace import Workspace

# The file in the job's directory, and how long before the deadline the stack is written.
STACK_FILE = "stalled-stack.txt"
MARGIN_SECONDS = 1.0

_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.M)

# Kept open for faulthandler, which writes to its file descriptor from a watchdog thread.
_armed = []


def arm(job_dir: str, timeout: float) -> None:
    """Has the stack written to the job's directory `MARGIN_SECONDS` before `timeout`."""
    if timeout <= 2 * MARGIN_SECONDS:
        return
    try:
        stream = open(os.path.join(job_dir, STACK_FILE), "w")  # noqa: SIM115 - kept open for faulthandler
        faulthandler.dump_traceback_later(timeout - MARGIN_SECONDS, repeat=False, file=stream)
        _armed.append(stream)
    except (OSError, RuntimeError, ValueError):
        pass


def disarm() -> None:
    """Cancels the dump: the job ended in time."""
    try:
        faulthandler.cancel_dump_traceback_later()
    except (RuntimeError, ValueError):
        pass


def finding(job_dir: str, job: dict) -> dict | None:
    """The PT502 finding of a job killed for its time, on the deepest user line of the stack it
    wrote; None when it wrote none or was in no user file."""
    try:
        with open(os.path.join(job_dir, STACK_FILE), encoding="utf-8", errors="replace") as stream:
            text = stream.read()
    except OSError:
        return None
    return finding_from_text(text, job)


def finding_from_text(text: str, job: dict) -> dict | None:
    """`finding` on the text faulthandler wrote (the main thread's frames, most recent first)."""
    entry_file = job.get("file") or ""
    roots = list(job.get("roots") or []) + [os.path.dirname(os.path.abspath(entry_file))]
    workspace = Workspace(entry_file, roots)
    # The current thread's frames come first; other threads' after a blank line.
    current = text.split("\n\n")[0]
    for match in _FRAME.finditer(current):
        path, line = match.group(1), int(match.group(2))
        if workspace.contains(path):
            timeout = float(job.get("timeout") or 60)
            return {
                "code": "PT502",
                "file": os.path.abspath(path),
                "line": line,
                "column": None,
                "end_line": None,
                "end_column": None,
                "message": f"the trace did not finish within {timeout:g} s: it was running this line when it was "
                "stopped (a loop, a wait, a large model?); raise `timeout` or make the entrypoint faster",
                "origin": "export",
                "exception": None,
                "fixes": [],
                "related": [],
            }
    return None
