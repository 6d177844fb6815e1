"""Findings as the manager receives them: the protocol's fields, never the trace's own facts."""

from __future__ import annotations

import ast

from pt2lsp_worker.findings import Finding, Location, Related, SuggestedFix, binding_finding, located


def test_a_finding_sends_the_protocols_fields_and_keeps_the_traces_facts_to_itself():
    finding = located(
        "PT401",
        Location("/w/model.py", 7, 4, 7, 12),
        "Constraints violated",
        collectable=True,
        constraint=True,
        violation="the whole text",
        dims={"L['x'].size()[0]": "batch"},
        fixes=[SuggestedFix("batch", "batch = Dim('batch', max=8)", "range", max=8)],
    )
    finding.related.append(Related("/w/model.py", 20, 1, "the entrypoint `model` that is exported"))
    assert finding.to_json() == {
        "code": "PT401",
        "file": "/w/model.py",
        "line": 7,
        "column": 4,
        "end_line": 7,
        "end_column": 12,
        "message": "Constraints violated",
        "origin": "export",
        "exception": None,
        "fixes": [{"dim": "batch", "text": "batch = Dim('batch', max=8)", "kind": "range", "max": 8}],
        "related": [{"file": "/w/model.py", "line": 20, "column": 1, "message": "the entrypoint `model` that is exported"}],
    }


def test_placing_a_finding_replaces_its_whole_span():
    finding = located("PT101", Location("/w/a.py", 3, 8, 3, 20), "branch")
    assert finding.placed
    finding.place(Location("/w/b.py", 9))
    assert (finding.file, finding.line, finding.column, finding.end_line, finding.end_column) == ("/w/b.py", 9, None, None, None)
    finding.place(None)
    assert finding.file == "/w/b.py"
    assert not Finding("PT501", "failed").placed


def test_an_entrypoint_finding_goes_on_the_binding_of_its_name(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import torch\n\nmodel = M()\nexample_args = (\n    torch.randn(2),\n)\n")
    assert binding_finding(str(path), "example_args", "PT503", "bad").line == 4
    assert binding_finding(str(path), "missing", "PT503", "bad").line == 1
    assert binding_finding(str(path), "model", "PT503", "bad").origin == "entrypoint"
    node = ast.parse(path.read_text()).body[2].value
    assert Location.of_node(str(path), node) == Location(str(path), 4, 15, 6, 1)
