"""How a job ended, the same words whichever start method ran it (no torch needed)."""

import signal

from pt2lsp_worker import outcomes

JOB = {"file": "/nonexistent/net.py", "timeout": 5}


def test_the_workers_kill_wins_over_what_the_job_sent():
    fields = outcomes.ended(JOB, None, killed_for="timeout", result={"status": "ok"}, signal_number=9, exit_status=None)
    assert fields == {"status": "timeout", "detail": "the trace did not finish within 5 s"}
    assert outcomes.ended(JOB, None, killed_for="cancelled", result=None, signal_number=None, exit_status=0) == {
        "status": "cancelled"
    }


def test_the_jobs_result_is_kept_as_sent():
    result = {"status": "failed", "diagnostics": [{"code": "PT101"}]}
    fields = outcomes.ended(JOB, None, killed_for=None, result=result, signal_number=None, exit_status=0)
    assert fields == result
    assert fields is not result


def test_a_sigkill_is_the_memory_limit_and_other_signals_are_named():
    killed = outcomes.ended(JOB, None, killed_for=None, result=None, signal_number=signal.SIGKILL, exit_status=None)
    assert killed == {"status": "crashed", "detail": outcomes._KILLED_DETAIL}
    segv = outcomes.ended(JOB, None, killed_for=None, result=None, signal_number=signal.SIGSEGV, exit_status=None)
    assert segv == {"status": "crashed", "detail": "the trace crashed with SIGSEGV"}
    unknown = outcomes.ended(JOB, None, killed_for=None, result=None, signal_number=200, exit_status=None)
    assert unknown["detail"] == "the trace crashed with signal 200"


def test_an_exit_before_any_result_says_its_status():
    fields = outcomes.ended(JOB, None, killed_for=None, result=None, signal_number=None, exit_status=3)
    assert fields == {"status": "crashed", "detail": "the traced code ended the process (exit status 3)"}
