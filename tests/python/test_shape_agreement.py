"""The shapes the editor shows agree with the exported program's, on every fixture that exports.

The inlay hints of `pt2lsp serve` (a shape after each assignment that changes one, in the
user's `Dim` names) are evaluated at the example inputs and compared, dimension by dimension,
with the tensor the exported graph places on the same line (`bench/shape_agreement.py`).
Unknown dimensions (`_`, `?`) are allowed; a disagreement is a wrong shape shown to the user.

Needs the debug binary (`cargo test` builds it; PT2LSP_BIN names another) and torch.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from shape_agreement import agreement  # noqa: E402

BINARY = Path(os.environ.get("PT2LSP_BIN") or ROOT / "target" / "debug" / "pt2lsp")
PYTHON = os.environ.get("PT2LSP_PYTHON") or str(ROOT / ".venv" / "bin" / "python")
ENTRY = re.compile(r"^example_args\s*=", re.M)
ERROR_MARK = re.compile(r"#.*\berror\[PT\d{3}\]")


def exporting_fixtures() -> list[Path]:
    """Fixture entry files (module-level `example_args`) without an error mark: they export."""
    files = []
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if ENTRY.search(text) and not ERROR_MARK.search(text):
            files.append(path)
    return files


def test_inferred_shapes_agree_with_the_exported_programs():
    assert BINARY.exists(), f"{BINARY} is missing: run `cargo build -p pt2lsp` (or set PT2LSP_BIN)"
    files = exporting_fixtures()
    assert len(files) > 50
    counts = agreement(str(BINARY), PYTHON, files)
    print(f"{counts.exported} files exported: {counts.agree} dimensions agree, {counts.unknown} unknown")
    assert counts.disagreements == []
    # Most fixtures export; a run where few do, or few shapes compare, proves nothing.
    assert counts.exported > 40
    assert counts.agree >= 20
