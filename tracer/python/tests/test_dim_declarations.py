"""Where the `Dim`s of a `dynamic_shapes` are declared: the module-level binding in the user's
files that holds the very object, found by identity, whatever the variable is called; a `Dim`
bound in no user module (made inside a function, or only in a library) has no place."""

from __future__ import annotations

import sys
import types

from pt2lsp_worker.dim_declarations import declared_dims, mark_declarations
from pt2lsp_worker.findings import Finding, SuggestedFix
from pt2lsp_worker.workspace import Workspace


class _Dim:  # torch.export.Dim's objects, as far as the search reads them
    def __init__(self, name: str) -> None:
        self.__name__ = name


def _module(name: str, path, source: str, **values) -> types.ModuleType:
    path.write_text(source)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__.update(values)
    sys.modules[name] = module
    return module


def test_a_dim_is_found_where_a_user_module_binds_it(tmp_path):
    batch, seq, local = _Dim("batch"), _Dim("seq"), _Dim("local")
    _module(
        "pkg_dims_under_test",
        tmp_path / "dims.py",
        "from torch.export import Dim\n\nMAX = 64\nBATCH = Dim('batch', max=MAX)\nSEQ_LEN = Dim('seq')\n",
        MAX=64,
        BATCH=batch,
        SEQ_LEN=seq,
    )
    workspace = Workspace(str(tmp_path / "export.py"), [str(tmp_path)])
    try:
        spec = {"x": {0: batch, 1: seq}, "mask": (local, None)}
        declared = declared_dims(spec, workspace)
        assert declared == {
            "batch": (str(tmp_path / "dims.py"), 4),
            "seq": (str(tmp_path / "dims.py"), 5),
        }
        finding = Finding("PT401", "guard", fixes=[SuggestedFix("batch", "batch = Dim('batch', max=16)", "range", max=16)])
        mark_declarations([finding], spec, workspace)
        assert finding.fixes[0].to_json()["declared_file"] == str(tmp_path / "dims.py")
        assert finding.fixes[0].to_json()["declared_line"] == 4
    finally:
        del sys.modules["pkg_dims_under_test"]


def test_a_module_outside_the_workspace_declares_nothing(tmp_path):
    outside = tmp_path / "site"
    outside.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    batch = _Dim("batch")
    _module("lib_dims_under_test", outside / "dims.py", "BATCH = None\n", BATCH=batch)
    try:
        workspace = Workspace(str(project / "export.py"), [str(project)])
        assert declared_dims({"x": {0: batch}}, workspace) == {}
    finally:
        del sys.modules["lib_dims_under_test"]


def test_a_dim_written_inside_a_module_level_spec_is_declared_at_the_spec(tmp_path):
    batch = _Dim("batch")
    spec = {"x": {0: batch}}
    source = "from torch.export import Dim\n\nMODEL = None\nDYNAMIC_SHAPES = {'x': {0: Dim('batch', max=64)}}\n"
    _module("pkg_spec_under_test", tmp_path / "export_spec.py", source, DYNAMIC_SHAPES=spec)
    workspace = Workspace(str(tmp_path / "export_spec.py"), [str(tmp_path)])
    try:
        assert declared_dims(spec, workspace) == {}
        finding = Finding("PT401", "guard", fixes=[SuggestedFix("batch", "batch = Dim('batch', max=16)", "range", max=16)])
        mark_declarations([finding], spec, workspace, (str(tmp_path / "export_spec.py"), "DYNAMIC_SHAPES"))
        assert finding.fixes[0].to_json()["declared_file"] == str(tmp_path / "export_spec.py")
        assert finding.fixes[0].to_json()["declared_line"] == 4
        assert finding.fixes[0].to_json()["declared_spec"] == "DYNAMIC_SHAPES"
        # A spec read through a call, or written at an export call, names no binding.
        other = Finding("PT401", "guard", fixes=[SuggestedFix("batch", "batch = Dim('batch', max=16)", "range", max=16)])
        mark_declarations([other], spec, workspace, (str(tmp_path / "export_spec.py"), "make_spec.x"))
        assert "declared_spec" not in other.fixes[0].to_json()
    finally:
        del sys.modules["pkg_spec_under_test"]
