"""The Python API (`pt2lsp.check`, `pt2lsp.check_paths`) against the installed command's
`--format json`: the same diagnostics, field for field, for every fixture."""

from __future__ import annotations

import json
import shutil
import threading
from collections import defaultdict
from pathlib import Path

import pytest

import pt2lsp
from conftest import FIXTURES, ROOT, run

FIXTURE_FILES = sorted(FIXTURES.rglob("*.py"))
# `check()` analyses one source on its own; the files of a multi-file fixture take facts from
# each other (an entrypoint in one, the failure in another), which `check_paths` covers below.
# So does the whole tree: in it, a fixture that no entrypoint imports is warned about as code
# nothing exports, which a source on its own cannot know.
SINGLE_FILE_FIXTURES = [path for path in FIXTURE_FILES if "projects" not in path.relative_to(FIXTURES).parts[:1]]


def cli_json(pt2lsp_bin: Path, *args: str | Path, cwd: Path = ROOT) -> list[dict]:
    result = run([pt2lsp_bin, "check", "--format", "json", *args], cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def fixtures_by_file(pt2lsp_bin: Path) -> dict[str, list[dict]]:
    """The command's JSON for all fixtures, by file."""
    by_file: dict[str, list[dict]] = defaultdict(list)
    for diagnostic in cli_json(pt2lsp_bin, "--isolated", "fixtures"):
        by_file[diagnostic["file"]].append(diagnostic)
    return by_file


def test_there_are_fixtures_with_and_without_fixes(fixtures_by_file: dict[str, list[dict]]) -> None:
    diagnostics = [d for found in fixtures_by_file.values() for d in found]
    assert len(FIXTURE_FILES) > 50
    assert any("fix" in d for d in diagnostics) and any("fix" not in d for d in diagnostics)


@pytest.mark.parametrize("path", SINGLE_FILE_FIXTURES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_check_equals_the_command_for_each_fixture(path: Path, pt2lsp_bin: Path, tmp_path: Path) -> None:
    """`check(text)` is the command on that file alone, at the same path."""
    shown = path.relative_to(ROOT).as_posix()
    alone = tmp_path / shown
    alone.parent.mkdir(parents=True)
    shutil.copyfile(path, alone)
    expected = cli_json(pt2lsp_bin, "--isolated", shown, cwd=tmp_path)
    found = pt2lsp.check(path.read_text(encoding="utf-8"), shown)
    assert [d.to_dict() for d in found] == expected


def test_check_paths_equals_the_command_on_the_whole_tree(pt2lsp_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    expected = cli_json(pt2lsp_bin, "fixtures")
    assert expected
    assert [d.to_dict() for d in pt2lsp.check_paths(["fixtures"])] == expected
    # One path as str or PathLike, absolute or relative, is the same request.
    assert pt2lsp.check_paths(Path("fixtures")) == pt2lsp.check_paths("fixtures")


@pytest.mark.parametrize(
    ("flags", "options"),
    [
        (["--strict"], {"strict": True}),
        (["--select", "PT1"], {"select": ["PT1"]}),
        (["--select", "PT1,PT2", "--ignore", "PT101"], {"select": "PT1,PT2", "ignore": ["PT101"]}),
        (["--exclude", "rules"], {"exclude": "rules"}),
    ],
)
def test_options_mean_what_the_flags_mean(
    pt2lsp_bin: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str], options: dict
) -> None:
    monkeypatch.chdir(ROOT)
    expected = cli_json(pt2lsp_bin, *flags, "fixtures")
    assert [d.to_dict() for d in pt2lsp.check_paths("fixtures", **options)] == expected
    if "exclude" not in options:
        source = (FIXTURES / "examples" / "transformer_block.py").read_text(encoding="utf-8")
        shown = "fixtures/examples/transformer_block.py"
        single = cli_json(pt2lsp_bin, "--isolated", *flags, shown)
        assert [d.to_dict() for d in pt2lsp.check(source, shown, **options)] == single


def test_check_paths_reads_the_nearest_pyproject(tmp_path: Path, pt2lsp_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pt2lsp]\nignore = ["PT101"]\n')
    model = tmp_path / "model.py"
    model.write_text((FIXTURES / "examples" / "transformer_block.py").read_text(encoding="utf-8"))
    monkeypatch.chdir(tmp_path)
    found = pt2lsp.check_paths(".")
    assert found and "PT101" not in {d.code for d in found}
    assert [d.to_dict() for d in found] == cli_json(pt2lsp_bin, ".", cwd=tmp_path)
    assert "PT101" in {d.code for d in pt2lsp.check_paths(".", isolated=True)}
    assert "PT101" in {d.code for d in pt2lsp.check_paths(".", select="PT")}


def test_diagnostics_are_typed_frozen_values() -> None:
    source = (FIXTURES / "rules" / "PT101" / "if_sum.py").read_text(encoding="utf-8")
    [diagnostic] = pt2lsp.check(source, "if_sum.py")
    assert isinstance(diagnostic, pt2lsp.Diagnostic)
    assert (diagnostic.file, diagnostic.line, diagnostic.code, diagnostic.name) == (
        "if_sum.py",
        8,
        "PT101",
        "data-dependent-branch",
    )
    assert (diagnostic.severity, diagnostic.source) == ("error", "static")
    assert (diagnostic.column, diagnostic.end_line) == (12, 8) and diagnostic.end_column > diagnostic.column
    assert repr(diagnostic).startswith("Diagnostic(code='PT101', file='if_sum.py', line=8, column=12, severity='error'")
    assert str(diagnostic).startswith("if_sum.py:8:12: PT101 [error] ")
    with pytest.raises(AttributeError):
        diagnostic.line = 3  # type: ignore[misc]
    again = pt2lsp.check(source, "if_sum.py")[0]
    assert again == diagnostic and hash(again) == hash(diagnostic) and len({again, diagnostic}) == 1
    assert pt2lsp.check(source, "other.py")[0] != diagnostic


def test_fixes_are_objects_with_edits() -> None:
    diagnostics = [d for path in FIXTURE_FILES for d in pt2lsp.check(path.read_text(encoding="utf-8"))]
    fixed = [d for d in diagnostics if d.fix is not None]
    assert fixed
    fix = fixed[0].fix
    assert isinstance(fix, pt2lsp.Fix) and fix.applicability in {"safe", "unsafe", "display-only"}
    assert fix.edits and all(isinstance(edit, pt2lsp.Edit) for edit in fix.edits)
    assert fix.to_dict()["edits"] == [edit.to_dict() for edit in fix.edits]
    assert repr(fix).startswith("Fix(title=")


def test_columns_count_characters_not_bytes() -> None:
    source = "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        é = 'ü'; y = x.sum()\n        if y > 0:\n            return x\n        return x\n"
    [diagnostic] = pt2lsp.check(source)
    assert (diagnostic.file, diagnostic.line, diagnostic.column) == ("<string>", 5, 12)


def test_a_syntax_error_is_a_diagnostic() -> None:
    found = pt2lsp.check("def f(:\n")
    assert found and {diagnostic.code for diagnostic in found} == {"PT001"}


def test_deep_nesting_does_not_crash_the_interpreter() -> None:
    # Deep enough to overflow the 8 MiB main-thread stack if analysed on it.
    source = "x = " + " + ".join(["a"] * 100_000) + "\n"
    assert pt2lsp.check(source) == []
    nested = "x = " + "(" * 50_000 + "1" + ")" * 50_000 + "\n"
    assert isinstance(pt2lsp.check(nested), list)


def test_checks_run_in_parallel_threads() -> None:
    sources = [path.read_text(encoding="utf-8") for path in FIXTURE_FILES[:40]]
    expected = [pt2lsp.check(source) for source in sources]
    results: list[list[pt2lsp.Diagnostic] | None] = [None] * len(sources)

    def work(index: int) -> None:
        results[index] = pt2lsp.check(sources[index])

    threads = [threading.Thread(target=work, args=(index,)) for index in range(len(sources))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == expected


def test_an_unknown_selector_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="PT9Z"):
        pt2lsp.check("x = 1\n", select=["PT9Z"])
    with pytest.raises(ValueError, match="nope"):
        pt2lsp.check("x = 1\n", ignore="PT1,nope")
    with pytest.raises(ValueError, match="PT9Z"):
        pt2lsp.check_paths(str(FIXTURES / "ok"), select="PT9Z")
    assert pt2lsp.check("def f(:\n", select=[]) == []


def test_wrong_types_are_type_errors() -> None:
    with pytest.raises(TypeError):
        pt2lsp.check(b"x = 1\n")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="select must be a string or an iterable of strings, not int"):
        pt2lsp.check("x = 1\n", select=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not int"):
        pt2lsp.check("x = 1\n", ignore=["PT1", 5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="paths must be a path"):
        pt2lsp.check_paths(3)  # type: ignore[arg-type]


def test_missing_paths_are_os_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no_such_model.py"):
        pt2lsp.check_paths([tmp_path / "no_such_model.py"])
    with pytest.raises(FileNotFoundError, match="missing.toml"):
        pt2lsp.check_paths(tmp_path, config=tmp_path / "missing.toml")
    with pytest.raises(ValueError, match="isolated"):
        pt2lsp.check_paths(tmp_path, config=tmp_path / "missing.toml", isolated=True)


def test_a_broken_configuration_is_a_value_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.pt2lsp\nselect = \n")
    (tmp_path / "m.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="pyproject.toml"):
        pt2lsp.check_paths(tmp_path)


def test_an_unreadable_file_is_an_os_error(tmp_path: Path) -> None:
    # Reading /proc/self/mem from offset 0 fails with EIO for every user, root included
    # (a file without read permission would not fail for root).
    model = tmp_path / "m.py"
    model.symlink_to("/proc/self/mem")
    with pytest.raises(OSError, match="m.py"):
        pt2lsp.check_paths(model)


def test_the_version_is_the_commands(pt2lsp_bin: Path) -> None:
    result = run([pt2lsp_bin, "--version"])
    assert result.returncode == 0 and result.stdout.split() == ["pt2lsp", pt2lsp.__version__]


PROJECTS = sorted(path for path in (FIXTURES / "projects").iterdir() if path.is_dir())


@pytest.mark.parametrize("project", PROJECTS, ids=lambda path: path.name)
def test_check_paths_gives_each_project_file_what_the_command_gives_the_whole_project(
    project: Path, tmp_path: Path, pt2lsp_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same answer however asked: `check_paths` on one file of a project (copied to a root of
    its own) is what the command reports for that file when it checks the whole project."""

    root = tmp_path / project.name
    shutil.copytree(project, root)
    (root / "pyproject.toml").write_text('[project]\nname = "fixture"\n')
    monkeypatch.chdir(root)
    whole: dict[str, list[dict]] = defaultdict(list)
    for diagnostic in cli_json(pt2lsp_bin, ".", cwd=root):
        whole[diagnostic["file"]].append(diagnostic)
    files = sorted(path.relative_to(root).as_posix() for path in root.rglob("*.py") if "venv" not in path.parts)
    assert files
    for file in files:
        assert [d.to_dict() for d in pt2lsp.check_paths(file)] == whole.get(file, []), file
