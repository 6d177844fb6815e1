"""Export calls as entrypoints, without torch: where a call's arguments are written, and how the
user's program is stopped where it cannot reach the call."""

import textwrap

import pytest

from pt2lsp_worker import script
from pt2lsp_worker.script import CallArgument, EntrypointStopped
from pt2lsp_worker.workspace import Workspace, binding_line, binding_node

SCRIPT = textwrap.dedent(
    """\
    import argparse
    import torch
    from torch.export import Dim


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--width", type=int, default=16)
        args = parser.parse_args()
        model = build(args.width).eval()
        shapes = {"x": {0: Dim("batch")}}
        ep = torch.export.export(
            model,
            (torch.randn(8, 3),),
            dynamic_shapes=shapes,
        )
        torch.export.save(ep, "m.pt2")


    if __name__ == "__main__":
        main()
    """
)


def _write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_call_arguments_are_found_where_the_user_wrote_them(tmp_path):
    path = _write(tmp_path, "export_script.py", SCRIPT)
    model = CallArgument(12, 16, 0, "mod", "model")
    # A name passed to the call: the assignment that binds it in the function.
    assert binding_line(path, model) == 10
    spec = binding_node(path, CallArgument(12, 16, None, "dynamic_shapes", "dynamic_shapes"))
    assert spec.lineno == 11
    assert type(spec.value).__name__ == "Dict"
    # A literal at the call: the expression itself, with its own position.
    args = binding_node(path, CallArgument(12, 16, 1, "args", "args"))
    assert (args.lineno, type(args.value).__name__) == (14, "Tuple")
    # An argument left to its default: the call.
    assert binding_line(path, CallArgument(12, 16, 2, "kwargs", "kwargs")) == 12
    assert str(model) == "model"


def test_a_program_that_cannot_reach_its_export_call_is_stopped_on_the_line_that_stopped_it(tmp_path, monkeypatch):
    # No export function is patched: these programs never call one (and the tests run without torch).
    monkeypatch.setattr(script.Interceptor, "__enter__", lambda self: self)
    monkeypatch.setattr(script.Interceptor, "__exit__", lambda self, *exc: None)

    def reach(text: str, timeout: float = 30):
        path = _write(tmp_path, "prog.py", text)
        job = {"call": {"line": 99, "end_line": 99, "reach": "script"}, "timeout": timeout}
        with pytest.raises(EntrypointStopped) as stopped:
            script.reach_export_call(job, Workspace(path, [str(tmp_path)]), None)
        finding = stopped.value.finding
        return finding.code, finding.line, finding.message

    needs_argument = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--ckpt", required=True)\np.parse_args()\n'
    code, line, message = reach(needs_argument)
    assert (code, line) == ("PT503", 4)
    assert "--ckpt" in message
    assert reach("import sys\nsys.exit(3)\n")[:2] == ("PT503", 2)
    code, line, message = reach("x = 1\nname = input('model? ')\n")
    assert (code, line) == ("PT503", 2)
    assert "standard input" in message
    code, line, message = reach("while True:\n    pass\n", timeout=2.5)
    assert code == "PT502"
    assert line in (1, 2)
    code, line, message = reach("x = 1\n")
    assert (code, line) == ("PT503", 99)
    assert "without reaching" in message


def test_a_function_or_a_test_method_is_called_with_no_arguments(tmp_path):
    calls = []

    class Module:
        @staticmethod
        def export_all():
            calls.append("function")

        class TestExport:
            def test_it(self):
                calls.append("method")

    script._call_function(Module, "export_all")
    script._call_function(Module, "TestExport.test_it")
    assert calls == ["function", "method"]


def test_a_timed_out_job_is_reported_on_the_user_line_that_was_running(tmp_path):
    from pt2lsp_worker import stalled

    model = _write(tmp_path, "hang.py", "while True:\n    pass\n")
    dump = (
        "Timeout (0:00:04)!\n"
        "Thread 0x00007f (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
        f'  File "{model}", line 2 in <module>\n'
        '  File "<frozen runpy>", line 88 in _run_code\n'
        "\n"
        "Thread 0x00008f (most recent call first):\n"
        f'  File "{model}", line 1 in <module>\n'
    )
    job = {"file": model, "roots": [str(tmp_path)], "timeout": 5}
    found = stalled.finding_from_text(dump, job)
    assert found is not None
    assert (found["code"], found["line"]) == ("PT502", 2)
    assert "within 5 s" in found["message"]
    assert stalled.finding_from_text("Timeout (0:00:04)!\n", job) is None
