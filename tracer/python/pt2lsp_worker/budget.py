"""Time budgets for the optional steps of a trace (draft_export, the PT601 check)."""

from __future__ import annotations

import contextlib
import signal
import threading

# draft_export re-runs the export with real tensors to collect every failure; on large models
# that costs minutes (LeViT with a dynamic height: 110 s against 4 s for the export that
# failed). Past this budget the first failure, already placed, stands alone.
DRAFT_BUDGET_SECONDS = 15.0


# The PT601 check runs the model a few times more; past this it gives up, saying nothing.
DIVERGENCE_BUDGET_SECONDS = 20.0


class _OverBudget(Exception):
    """Raised into the job when a budgeted step runs out of time."""


@contextlib.contextmanager
def time_budget(seconds: float):
    """Interrupts the body with _OverBudget after `seconds` (SIGALRM, main thread only; where
    there is none, the body runs unbounded)."""
    with raise_after(seconds, _OverBudget):
        yield


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
