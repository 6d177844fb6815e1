"""Time budgets for the optional steps of a trace (draft_export, the PT601 check)."""

from __future__ import annotations

import contextlib
import signal
import threading
import time

# draft_export re-runs the export with real tensors to collect every failure; on large models
# that costs minutes (LeViT with a dynamic height: 110 s against 4 s for the export that
# failed). Past this budget the first failure, already placed, stands alone.
DRAFT_BUDGET_SECONDS = 15.0


# The PT601 check runs the model a few times more; past this it gives up, saying nothing.
DIVERGENCE_BUDGET_SECONDS = 20.0


# What a job still does after a budgeted step (the other checks, the shapes, the result): a
# budgeted step ends this long before the job's deadline at the latest.
RESERVE_SECONDS = 5.0

# The job's deadline (time.monotonic()), when the job set one: an export that succeeded is never
# turned into a timeout by a check that only adds to it.
_job_deadline: list[float] = []


class _OverBudget(Exception):
    """Raised into the job when a budgeted step runs out of time."""


def set_job_deadline(deadline: float | None) -> None:
    """Bounds every later budgeted step by `deadline` (monotonic seconds) less the reserve."""
    _job_deadline.clear()
    if deadline is not None:
        _job_deadline.append(deadline)


def seconds_left(seconds: float, now: float | None = None) -> float:
    """`seconds`, or less when the job's deadline less the reserve comes sooner; at most 0 when
    there is no time left for the step."""
    if not _job_deadline:
        return seconds
    now = time.monotonic() if now is None else now
    return min(seconds, _job_deadline[0] - RESERVE_SECONDS - now)


@contextlib.contextmanager
def time_budget(seconds: float):
    """Interrupts the body with _OverBudget after `seconds`, or before the job's deadline less
    the reserve when that comes sooner (SIGALRM, main thread only; where there is none, the body
    runs unbounded); with no time left, the body does not run."""
    seconds = seconds_left(seconds)
    if seconds <= 0:
        raise _OverBudget
    with raise_after(seconds, _OverBudget):
        yield


class Stopwatch:
    """Says whether one more step like the slowest so far still ends by `deadline`: a step in
    torch's C++ is not interrupted by a signal, so a budget is kept by not starting one that would
    overrun it."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.slowest = 0.0

    def step(self, run):
        """Runs `run()` and times it; raises _OverBudget instead when it would end past the
        deadline."""
        started = time.monotonic()
        if started + self.slowest > self.deadline:
            raise _OverBudget
        result = run()
        self.slowest = max(self.slowest, time.monotonic() - started)
        return result


@contextlib.contextmanager
def raise_after(seconds: float | None, exception: type[BaseException]):
    """Raises `exception` into the body after `seconds` (SIGALRM, main thread only); no limit
    without seconds, or where there is no such timer."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    if not seconds or seconds <= 0 or not hasattr(signal, "setitimer") or not in_main_thread:
        yield
        return

    def expire(signum, frame):  # noqa: ANN001, ARG001 - a signal handler's signature
        raise exception

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
