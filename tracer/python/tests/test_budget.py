"""The optional checks' budgets end before the job's deadline (no torch needed)."""

from __future__ import annotations

import time

import pytest

from pt2lsp_worker import budget


@pytest.fixture(autouse=True)
def no_deadline():
    budget.set_job_deadline(None)
    yield
    budget.set_job_deadline(None)


def test_a_step_keeps_its_own_budget_without_a_job_deadline():
    assert budget.seconds_left(20.0) == 20.0


def test_the_job_deadline_less_the_reserve_shortens_a_budget():
    now = time.monotonic()
    budget.set_job_deadline(now + 12.0)
    left = budget.seconds_left(20.0, now=now)
    assert left == pytest.approx(12.0 - budget.RESERVE_SECONDS)
    assert budget.seconds_left(1.0, now=now) == 1.0


def test_a_step_with_no_time_left_does_not_run():
    budget.set_job_deadline(time.monotonic() + budget.RESERVE_SECONDS - 1.0)
    ran = []
    with pytest.raises(budget._OverBudget), budget.time_budget(20.0):
        ran.append(True)
    assert ran == []


def test_the_stopwatch_starts_no_step_that_would_end_past_its_deadline():
    stopwatch = budget.Stopwatch(time.monotonic() + 0.15)

    def slow():
        time.sleep(0.1)
        return "done"

    # The first step's length is unknown: it runs, and sets what the next would cost.
    assert stopwatch.step(slow) == "done"
    with pytest.raises(budget._OverBudget):
        stopwatch.step(slow)


def test_the_stopwatch_runs_quick_steps_while_they_fit():
    stopwatch = budget.Stopwatch(time.monotonic() + 10.0)
    done = []
    for _ in range(3):
        done.append(stopwatch.step(lambda: len(done)))
    assert done == [0, 1, 2]
