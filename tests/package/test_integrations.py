"""pt2lsp where CI runs it: the pre-commit hook (.pre-commit-hooks.yaml, installed by pre-commit
from the repository root) and the GitHub Action's check step (action.yml,
scripts/github-action.sh)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import FIXTURES, ROOT, clean_env, run

FAILING = FIXTURES / "examples" / "transformer_block.py"


def test_the_pre_commit_hook_installs_from_the_repository_and_reports(tmp_path: Path) -> None:
    # `pre-commit try-repo` installs the hook the way a user's `rev:` does: pip builds the
    # repository root's pyproject.toml in an isolated environment. The build reuses this
    # checkout's compiled dependencies (CARGO_TARGET_DIR) and the dev profile, for time only.
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(FAILING, project / "model.py")
    (project / "clean.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    env = clean_env(
        CARGO_TARGET_DIR=str(ROOT / "target"),
        MATURIN_PEP517_ARGS="--profile dev",
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    result = run(
        [sys.executable, "-m", "pre_commit", "try-repo", ROOT, "pt2lsp", "--files", "model.py", "clean.py"],
        cwd=project,
        env=env,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "model.py:" in result.stdout and ": PT101 [error] " in result.stdout, result.stdout
    clean = run(
        [sys.executable, "-m", "pre_commit", "try-repo", ROOT, "pt2lsp", "--files", "clean.py"],
        cwd=project,
        env=env,
    )
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_the_hooks_file_names_the_command_and_its_options() -> None:
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"pt2lsp", "pt2lsp-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["require_serial"] is True
        command = hook["entry"].split()
        assert command[:2] == ["pt2lsp", "check"]
        assert run([sys.executable, "-m", "pt2lsp", *command[1:], "--help"]).returncode == 0


def test_the_github_action_annotates_and_writes_sarif(tmp_path: Path) -> None:
    outputs = tmp_path / "github_output"
    sarif = tmp_path / "report.sarif"
    env = clean_env(
        PT2LSP_PATHS=f"{FAILING.relative_to(ROOT)} fixtures/ok",
        PT2LSP_ARGS="--select PT1,PT4",
        PT2LSP_TRACE="false",
        PT2LSP_SARIF=str(sarif),
        GITHUB_OUTPUT=str(outputs),
    )
    result = run([ROOT / "scripts" / "github-action.sh", sys.executable], env=env)
    assert result.returncode == 1, result.stderr
    annotations = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert annotations and all("file=fixtures/examples/transformer_block.py" in line for line in annotations)
    report = json.loads(sarif.read_text())
    results = report["runs"][0]["results"]
    assert len(results) == len(annotations)
    assert {r["ruleId"][:3] for r in results} <= {"PT1", "PT4"}
    assert outputs.read_text() == f"sarif={sarif}\n"


def test_the_github_action_stops_on_a_bad_input(tmp_path: Path) -> None:
    env = clean_env(PT2LSP_TRACE="yes", PT2LSP_SARIF=str(tmp_path / "report.sarif"))
    result = run([ROOT / "scripts" / "github-action.sh", sys.executable], env=env)
    assert result.returncode == 2 and "trace input must be true or false" in result.stderr
    assert not (tmp_path / "report.sarif").exists()


def test_the_action_runs_the_check_script_with_its_inputs() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = {step["name"]: step for step in action["runs"]["steps"]}
    check = steps["Check"]
    assert "scripts/github-action.sh" in check["run"]
    assert set(check["env"]) == {"PT2LSP_PATHS", "PT2LSP_ARGS", "PT2LSP_TRACE", "PT2LSP_SARIF"}
    for name in ("paths", "args", "trace", "python"):
        assert f"inputs.{name}" in json.dumps(action["runs"]["steps"])
    assert steps["Upload SARIF"]["uses"].startswith("github/codeql-action/upload-sarif@")
