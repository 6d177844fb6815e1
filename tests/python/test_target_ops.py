"""The static pass's table of torch calls a deployment target cannot run
(analyzer/data/target_ops.tsv, read by PT707) is what scripts/target_ops.py measures with the
installed torch, ExecuTorch and ONNX exporter: a new torch that adds a decomposition or a
converter must not leave a stale warning in the table.

Run: `.venv/bin/python -m pytest -q tests/python/test_target_ops.py` (about a minute: each row
is exported and lowered again)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _packages_present() -> bool:
    try:
        import executorch  # noqa: F401
        import onnxscript  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def test_the_target_op_table_is_current():
    if not _packages_present():
        if os.environ.get("CI"):
            pytest.fail("torch, executorch and onnxscript are needed to check analyzer/data/target_ops.tsv")
        pytest.skip("torch, executorch or onnxscript missing: the table is not checked")
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "target_ops.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
