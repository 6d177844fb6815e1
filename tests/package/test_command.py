"""The installed `pt2lsp` command: on PATH beside the interpreter, `python -m pt2lsp`, the
tracer defaulting to the interpreter it was installed with, and `serve` over stdio."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pt2lsp
from conftest import FIXTURES, ROOT, clean_env, run

TRACED_FIXTURE = FIXTURES / "rules" / "PT101" / "if_sum.py"


def test_the_command_is_installed_beside_the_interpreter(venv_bin: Path, pt2lsp_bin: Path) -> None:
    assert Path(pt2lsp.find_pt2lsp_bin()) == pt2lsp_bin
    assert pt2lsp_bin.parent == venv_bin
    result = run([pt2lsp_bin, "--help"])
    assert result.returncode == 0
    for subcommand in ("check", "rule", "serve"):
        assert subcommand in result.stdout


def test_check_from_the_scripts_directory(pt2lsp_bin: Path) -> None:
    result = run([pt2lsp_bin, "check", "fixtures/examples"])
    assert result.returncode == 1, result.stderr
    assert "fixtures/examples/transformer_block.py:" in result.stdout
    assert ": PT101 [error] " in result.stdout
    assert run([pt2lsp_bin, "check", "fixtures/ok"]).returncode == 0
    rule = run([pt2lsp_bin, "rule", "PT101"])
    assert rule.returncode == 0 and "(PT101)" in rule.stdout.splitlines()[0]


def test_python_dash_m_runs_the_same_command(pt2lsp_bin: Path) -> None:
    direct = run([pt2lsp_bin, "check", "--format", "json", "fixtures/examples"])
    via_module = run([sys.executable, "-m", "pt2lsp", "check", "--format", "json", "fixtures/examples"])
    assert (via_module.returncode, via_module.stdout) == (direct.returncode, direct.stdout)
    assert json.loads(via_module.stdout)
    usage = run([sys.executable, "-m", "pt2lsp", "check", "--no-such-flag"])
    assert usage.returncode == 2 and "--no-such-flag" in usage.stderr


def traced(result: subprocess.CompletedProcess[str]) -> list[dict]:
    assert result.returncode == 1, result.stderr
    return [d for d in json.loads(result.stdout) if d["source"].endswith("trace")]


def test_trace_defaults_to_the_interpreter_it_was_installed_with(pt2lsp_bin: Path, tmp_path: Path) -> None:
    # No --python, no VIRTUAL_ENV, no pyproject.toml, and a working directory outside the
    # repository: only the venv the command sits in has torch.
    model = tmp_path / "if_sum.py"
    shutil.copy(TRACED_FIXTURE, model)
    result = run([pt2lsp_bin, "check", "--trace", "--format", "json", "if_sum.py"], cwd=tmp_path)
    [diagnostic] = traced(result)
    assert (diagnostic["code"], diagnostic["line"]) == ("PT101", 8)


def test_the_command_passes_its_interpreter_to_the_tracer_wherever_it_is_called_from(pt2lsp_bin: Path, tmp_path: Path) -> None:
    # A link to the command in a directory with no interpreter (as ~/.local/bin is for
    # `pipx` and `uv tool`), and `python -m pt2lsp`: both give the tracer the interpreter the
    # package runs in, through PT2LSP_DEFAULT_PYTHON, with nothing in the environment to say it.
    elsewhere = tmp_path / "bin"
    elsewhere.mkdir()
    (elsewhere / "pt2lsp").symlink_to(pt2lsp_bin)
    shutil.copy(TRACED_FIXTURE, tmp_path / "if_sum.py")
    args = ["check", "--trace", "--format", "json", "if_sum.py"]
    [diagnostic] = traced(run([elsewhere / "pt2lsp", *args], cwd=tmp_path))
    assert diagnostic["code"] == "PT101"
    [diagnostic] = traced(run([sys.executable, "-m", "pt2lsp", *args], cwd=tmp_path))
    assert diagnostic["code"] == "PT101"


def test_help_and_usage_errors_return_their_codes_without_a_traceback(pt2lsp_bin: Path) -> None:
    # The command runs inside Python: clap's exits become return codes, never a SystemExit
    # traceback or a lost line of output.
    help_text = run([pt2lsp_bin, "check", "--help"])
    assert help_text.returncode == 0 and "--fix" in help_text.stdout
    assert "Traceback" not in help_text.stderr
    usage = run([pt2lsp_bin, "no-such-command"])
    assert usage.returncode == 2 and "no-such-command" in usage.stderr
    assert "Traceback" not in usage.stderr


def message(body: dict) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def read_message(stream) -> dict:  # noqa: ANN001
    length = None
    while True:
        line = stream.readline()
        assert line, "the server closed stdout"
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    assert length is not None
    return json.loads(stream.read(length))


def test_serve_answers_initialize_over_stdio(pt2lsp_bin: Path) -> None:
    server = subprocess.Popen(
        [str(pt2lsp_bin), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=clean_env(),
    )
    try:
        assert server.stdin and server.stdout
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": ROOT.as_uri(), "capabilities": {}},
        }
        server.stdin.write(message(initialize))
        server.stdin.flush()
        response = read_message(server.stdout)
        while "id" not in response:  # notifications (log messages) may come first
            response = read_message(server.stdout)
        assert response["id"] == 1
        assert response["result"]["serverInfo"]["name"] == "pt2lsp"
        assert "textDocumentSync" in response["result"]["capabilities"]
        server.stdin.write(message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.write(message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        server.stdin.flush()
        response = read_message(server.stdout)
        while response.get("id") != 2:
            response = read_message(server.stdout)
        server.stdin.write(message({"jsonrpc": "2.0", "method": "exit"}))
        server.stdin.close()
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
