"""`[[tool.pt2lsp.entrypoints]]` strings: `module:EXPRESSION`, evaluated over the module's
namespace; what cannot be resolved is PT503 on the table's line in `pyproject.toml`, with the
user's line that raised as a related place."""

import textwrap

import pytest

from pt2lsp_worker.entrypoint import EntrypointError, _resolve
from pt2lsp_worker.workspace import Workspace

PACKAGE = """\
    from dataclasses import dataclass


    @dataclass
    class ModelConfig:
        hidden: int = 4


    class Model:
        def __init__(self, cfg):
            self.hidden = cfg.hidden
            self.training = True

        def eval(self):
            self.training = False
            return self


    def build_model(cfg):
        if cfg.hidden < 0:
            raise ValueError("hidden must be positive")
        return Model(cfg)


    def example_inputs():
        return (1, 2)


    SHAPES = {"x": {0: "batch"}}
    """


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A package `tablepkg` on `sys.path`, forgotten again after the test."""
    package = tmp_path / "tablepkg"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(PACKAGE))
    (tmp_path / "broken.py").write_text("import os\n\nvalue = 1 / 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("tablepkg", "broken"):
        monkeypatch.delitem(__import__("sys").modules, name, raising=False)
    return tmp_path


def _entry(project, role, text):
    """An entrypoint whose `role` string is written on line 9 of the project's pyproject.toml."""
    return {role: text, "declared": {"file": str(project / "pyproject.toml"), "lines": {role: 9, "table": 6}}}


def _failure(project, role, text, declared=True):
    entry = _entry(project, role, text) if declared else {role: text}
    with pytest.raises(EntrypointError) as raised:
        _resolve(entry, role, Workspace(str(project / "tablepkg" / "__init__.py"), [str(project)]))
    return raised.value.finding


def test_a_string_is_any_expression_over_the_module(project):
    workspace = Workspace(str(project / "tablepkg" / "__init__.py"), [str(project)])
    entry = _entry(project, "model", "tablepkg:build_model(ModelConfig(hidden=8)).eval()")
    model, (file, name) = _resolve(entry, "model", workspace)
    assert (type(model).__name__, model.hidden, model.training) == ("Model", 8, False)
    # The value is declared where the name it starts from is bound.
    assert (file, name) == (str(project / "tablepkg" / "__init__.py"), "build_model")
    # `module:attribute` and `module:function()` are expressions too.
    assert _resolve({"dynamic_shapes": " tablepkg : SHAPES"}, "dynamic_shapes", workspace)[0] == {"x": {0: "batch"}}
    assert _resolve({"example_args": "tablepkg:example_inputs()"}, "example_args", workspace)[0] == (1, 2)
    assert _resolve({"example_args": "tablepkg:(ModelConfig().hidden,)"}, "example_args", workspace) == ((4,), (file, None))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("tablepkg:build_model(ModelConfig(hidden=8).eval()", "is not a Python expression"),
        ("tablepkg:build_model(ModelConfg(hidden=8))", "NameError while evaluating it: name 'ModelConfg' is not defined"),
        ("tablepkg:build_modl", "NameError"),
        ("tablepkg.missing:build_model()", "ModuleNotFoundError while importing tablepkg.missing"),
        ("tablepkg", "must read `module:expression`"),
        ("table pkg:build_model()", "must read `module:expression`"),
    ],
)
def test_a_bad_string_is_pt503_on_its_line_in_pyproject_quoting_it(project, text, words):
    finding = _failure(project, "model", text)
    assert (finding.code, finding.file, finding.line) == ("PT503", str(project / "pyproject.toml"), 9)
    assert words in finding.message, finding.message
    assert text.strip() in finding.message
    assert finding.related == []


def test_an_exception_in_user_code_is_related_to_the_line_that_raised_it(project):
    finding = _failure(project, "model", "tablepkg:build_model(ModelConfig(hidden=-1))")
    assert (finding.file, finding.line) == (str(project / "pyproject.toml"), 9)
    assert "ValueError while evaluating it: hidden must be positive" in finding.message
    [related] = finding.related
    assert (related.file, related.line) == (str(project / "tablepkg" / "__init__.py"), 21)
    assert "ValueError raised here" in related.message
    # A module that fails to import: the same, related to the module's own line.
    finding = _failure(project, "example_args", "broken:(value,)")
    assert (finding.line, "ZeroDivisionError while importing broken" in finding.message) == (9, True)
    assert [(entry.file, entry.line) for entry in finding.related] == [(str(project / "broken.py"), 3)]


def test_without_the_table_s_place_the_finding_is_on_the_user_line(project):
    finding = _failure(project, "model", "tablepkg:build_model(ModelConfig(hidden=-1))", declared=False)
    assert (finding.file, finding.line, finding.related) == (str(project / "tablepkg" / "__init__.py"), 21, [])


def test_a_finding_elsewhere_names_the_table_s_model_line_as_its_entrypoint(project):
    """The note that names the entrypoint points at the table's `model` line in pyproject.toml,
    where the static pass points too, not at the module's `build_model`."""
    from pt2lsp_worker.entrypoint import Target, table_model_of
    from pt2lsp_worker.findings import Finding, Location
    from pt2lsp_worker.trace import _relate_entrypoint

    entry = _entry(project, "model", "tablepkg:build_model(ModelConfig(hidden=8))")
    entry["name"] = "small"
    target = Target()
    target.model_binding = (str(project / "tablepkg" / "__init__.py"), "build_model")
    target.table_model = table_model_of(entry)
    finding = Finding("PT401", "guard")
    finding.place(Location(str(project / "tablepkg" / "model.py"), 14))
    _relate_entrypoint(finding, target)
    assert [(r.file, r.line, r.message) for r in finding.related] == [
        (str(project / "pyproject.toml"), 9, "the entrypoint `small` that is exported")
    ]
