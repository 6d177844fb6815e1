"""How a job ended, in one vocabulary for both start methods (`zygote.py` forks a child per job,
`spawn.py` hands it to a spawned process): the manager's kill (a deadline or a cancel), the
result the job sent, a signal, or an exit before any result. Each is the `status` and `detail`
of the `result` event, which the Rust manager turns into PT502 or the job's own findings."""

from __future__ import annotations

import signal

from . import stalled

#: The memory limit's kill: the kernel's OOM killer and `RLIMIT_AS` failures end in SIGKILL.
_KILLED_DETAIL = "the trace was killed (SIGKILL), most likely for using too much memory"


def ended(
    job: dict,
    job_dir: str | None,
    *,
    killed_for: str | None,
    result: dict | None,
    signal_number: int | None,
    exit_status: int | None,
) -> dict:
    """The fields of the `result` event for a job that ended this way.

    `killed_for` is why the worker killed it (`timeout`, `cancelled`), which wins over anything
    the job managed to send; then the job's own `result`; then the signal that ended it; else
    its exit status (the traced code called `sys.exit` or `os._exit`)."""
    if killed_for is not None:
        fields: dict = {"status": killed_for}
        if killed_for == "timeout":
            fields["detail"] = f"the trace did not finish within {float(job.get('timeout') or 60):g} s"
            where = stalled.finding(job_dir, job) if job_dir else None
            if where is not None:
                fields["diagnostics"] = [where]
        return fields
    if result is not None:
        return dict(result)
    if signal_number is not None:
        if signal_number == signal.SIGKILL:
            return {"status": "crashed", "detail": _KILLED_DETAIL}
        try:
            name = signal.Signals(signal_number).name
        except ValueError:
            name = f"signal {signal_number}"
        return {"status": "crashed", "detail": f"the trace crashed with {name}"}
    return {"status": "crashed", "detail": f"the traced code ended the process (exit status {exit_status})"}
