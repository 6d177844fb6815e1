"""What a job depended on: the modules it imported and the files it read, not the standard
library, not what it wrote, not its scratch directory. Run in a child interpreter, since an audit
hook cannot be removed once added."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

WORKER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_job_depends_on_what_it_imported_and_read(tmp_path):
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "net.py").write_text("WIDTH = 3\n")
    (project / "config.json").write_text('{"width": 3}')
    (project / "entry.py").write_text("")
    scratch = tmp_path / "job"
    scratch.mkdir()
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path[:0] = [{WORKER!r}, {str(project)!r}]
        from pt2lsp_worker.dependencies import DependencyRecorder
        recorder = DependencyRecorder({str(scratch)!r})
        import colorsys  # the standard library: the interpreter's, not a dependency
        import pkg.net
        with open({str(project / "config.json")!r}) as config:
            config.read()
        with open({str(project / "written.txt")!r}, "w") as out:
            out.write("x")
        with open({str(scratch / "draft.log")!r}, "w") as out:
            out.write("x")
        open({str(scratch / "draft.log")!r}).close()
        print(json.dumps(recorder.files({str(project / "entry.py")!r})))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    files = json.loads(done.stdout)
    assert files == sorted(str(project / name) for name in ("entry.py", "pkg/__init__.py", "pkg/net.py", "config.json")), files


def test_the_environment_is_named_by_the_interpreter_binary():
    script = (
        f"import sys; sys.path.insert(0, {WORKER!r})\n"
        "from pt2lsp_worker.dependencies import environment_files\n"
        "print(environment_files())"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert os.path.realpath(sys.executable) in done.stdout
