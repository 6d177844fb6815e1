"""The language server under save bursts keeps every trace result and publishes none stale.

`bench/lsp_load.py` at its small size (about 60 files, 12 entrypoints; the benchmark runs 500 and
100): the shared module every model imports is edited and saved in two bursts, each save
re-planning every entrypoint's trace. The run fails when an entrypoint's last trace ended
without a result, a failure is reported on a line of an older text, the open module's last
publication is not of its final version, or the open entry files were not traced first.

Needs the debug binary (`cargo test` builds it; PT2LSP_BIN names another) and torch.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from lsp_load import OPEN_ENTRIES, run_load  # noqa: E402

BINARY = Path(os.environ.get("PT2LSP_BIN") or ROOT / "target" / "debug" / "pt2lsp")
PYTHON = Path(os.environ.get("PT2LSP_PYTHON") or ROOT / ".venv" / "bin" / "python")


def test_save_bursts_lose_no_trace_and_publish_none_stale():
    assert BINARY.exists(), f"{BINARY} is missing: run `cargo build -p pt2lsp` (or set PT2LSP_BIN)"
    try:
        result = run_load(BINARY, PYTHON, entrypoints=12, bursts=2, saves_per_burst=3)
    except SystemExit as problem:
        pytest.fail(str(problem))
    assert result["entrypoints"] == 12
    # First but for the traces that had a free slot before the open files' were planned (the
    # worker runs two at a time here).
    assert max(result["ranks"]) < OPEN_ENTRIES + 2, result
