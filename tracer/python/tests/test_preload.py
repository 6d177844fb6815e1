"""What the zygote preloads for a job: the fork-safe libraries that the entry file and the
workspace modules it reaches import, read from their import statements; never a workspace
module, never another library. A preloaded library's modules stay the job's dependencies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from pt2lsp_worker.preload import Preloader, library_imports

WORKER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_libraries_a_job_imports_through_its_package_are_found(tmp_path):
    (tmp_path / "zoo").mkdir()
    (tmp_path / "zoo" / "__init__.py").write_text("from .nets import Net\n")
    (tmp_path / "zoo" / "nets.py").write_text("import torchvision.ops\nfrom . import layers\n")
    (tmp_path / "zoo" / "layers.py").write_text("from timm.layers import DropPath\nimport numpy\n")
    (tmp_path / "scripts").mkdir()
    entry = tmp_path / "scripts" / "export.py"
    entry.write_text(
        "import os\nimport transformers as tf\nfrom transformers import BertConfig\nfrom zoo import Net\n"
        "model = tf.BertModel(BertConfig())\nos.path.join\n"
    )
    found = library_imports(str(entry), [str(tmp_path)])
    assert found == {
        "transformers": {"BertConfig", "BertModel"},
        "torchvision.ops": set(),
        "timm.layers": {"DropPath"},
    }


def test_a_workspace_package_named_like_a_library_is_not_a_library(tmp_path):
    (tmp_path / "timm").mkdir()
    (tmp_path / "timm" / "__init__.py").write_text("import torchvision\n")
    entry = tmp_path / "entry.py"
    entry.write_text("import timm\n")
    # The workspace's `timm` is read as a workspace module: its own imports count, it does not.
    assert library_imports(str(entry), [str(tmp_path)]) == {"torchvision": set()}


def test_preloaded_library_modules_are_dependencies_of_the_jobs_that_import_them(tmp_path):
    site = tmp_path / "site"
    (site / "timm").mkdir(parents=True)
    (site / "timm" / "__init__.py").write_text("VALUE = 1\n")
    project = tmp_path / "project"
    project.mkdir()
    entry = project / "entry.py"
    entry.write_text("import timm\n")
    other = project / "other.py"
    other.write_text("import os\n")
    scratch = tmp_path / "job"
    scratch.mkdir()
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path[:0] = [{WORKER!r}, {str(site)!r}]
        from pt2lsp_worker import preload
        from pt2lsp_worker.dependencies import DependencyRecorder
        preloader = preload.Preloader()
        found = {{}}
        for entry in ({str(entry)!r}, {str(other)!r}):
            preload.for_this_job = preloader.load_for(entry, [{str(project)!r}])
            recorder = DependencyRecorder({str(scratch)!r})  # as the forked job does
            found[entry] = recorder.files(entry)
        print(json.dumps(found))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    library = str(site / "timm" / "__init__.py")
    assert found[str(entry)] == sorted([str(entry), library])
    assert found[str(other)] == [str(other)]


def test_preloading_is_off_when_the_environment_says_so(tmp_path, monkeypatch):
    entry = tmp_path / "entry.py"
    entry.write_text("import timm\n")
    monkeypatch.setenv("PT2LSP_NO_PRELOAD", "1")
    preloader = Preloader()
    assert preloader.load_for(str(entry), [str(tmp_path)]) == frozenset()
    assert preloader.attempted == set()


def test_an_edited_file_is_read_again(tmp_path):
    entry = tmp_path / "entry.py"
    entry.write_text("import timm\n")
    assert library_imports(str(entry), [str(tmp_path)]) == {"timm": set()}
    entry.write_text("from transformers import BertModel\n")
    assert library_imports(str(entry), [str(tmp_path)]) == {"transformers": {"BertModel"}}
