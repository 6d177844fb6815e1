"""PT601 on hooks, against real torch: what a hook does besides its outputs.

For each hook fixture of PT601 (`fixtures/rules/PT601/hook_*.py` and `forward_hooks_ok.py`),
`hook_effects.py` exports it in its mode and calls the eager model and the exported program on
the same inputs, recording what each did besides returning (printing, logging, writing a file,
setting a module attribute, changing a module-level container):

- a fixture marked `warning[PT601]` must show an effect that eager has and the exported program
  lacks: the claim the rule makes;
- a near-miss (no mark) must show the same effects on both sides, with outputs and buffers
  that agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULE = ROOT / "fixtures" / "rules" / "PT601"
RUNNER = Path(__file__).resolve().parent / "hook_effects.py"
PYTHON = os.environ.get("PT2LSP_PYTHON") or (
    str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
)

FIXTURES = sorted([*RULE.glob("hook_*.py"), RULE / "forward_hooks_ok.py"])


def effects(path: Path) -> dict:
    run = subprocess.run(
        [PYTHON, str(RUNNER), str(path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=path.parent,
    )
    assert run.returncode == 0, f"{path.name} did not run:\n{run.stderr[-3000:]}"
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_there_are_hook_fixtures():
    assert len(FIXTURES) >= 4, FIXTURES


@pytest.mark.parametrize("path", FIXTURES, ids=[path.name for path in FIXTURES])
def test_hook_effects_match_the_marks(path: Path):
    found = effects(path)
    if "warning[PT601]" in path.read_text(encoding="utf-8"):
        dropped = set(found["eager"]) - set(found["exported"])
        assert dropped or not found["outputs_agree"], (
            f"{path.name} is marked PT601, but the exported program does what eager does: {found}"
        )
    else:
        assert found["eager"] == found["exported"], found
        assert found["outputs_agree"] and found["buffers_agree"], found
