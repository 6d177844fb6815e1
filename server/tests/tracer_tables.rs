//! `[[tool.pt2lsp.entrypoints]]` strings are Python expressions over their module, with real
//! torch: `check --trace` traces `"tablepkg:build_model(ModelConfig(hidden=8)).eval()"` and finds
//! the model's own failure on the model's line; a string that cannot be evaluated is PT503 on
//! its line in `pyproject.toml`, quoting it, related to the user's line that raised; `pt2lsp
//! export` writes the program of a table's expression.
//!
//! The interpreter is `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`.
//! Without torch the tests fail when `CI` is set and are skipped, with a note, otherwise.

use std::path::Path;

use serde_json::Value;

#[path = "support/torch.rs"]
mod torch_support;

use torch_support::{repository, turn};

fn torch_python() -> Option<&'static Path> {
    torch_support::torch_python("tracer_tables")
}

#[path = "support/run.rs"]
mod support;

#[path = "support/trace_run.rs"]
mod trace_run;

use trace_run::{pt2lsp, traced};

#[path = "support/tree.rs"]
mod tree;

/// A copy of `server/tests/data/table_expressions`: a package whose model is built from a
/// config dataclass, and four entrypoint tables (see its `pyproject.toml`).
fn project() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    tree::copy_tree(
        &repository().join("server/tests/data/table_expressions"),
        project.path(),
    );
    project
}

#[test]
fn table_strings_are_expressions_and_a_bad_one_is_pt503_on_its_pyproject_line() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = project();
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &[
            "check",
            "--trace",
            "--python",
            python.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(run.code, 1, "stderr:\n{}", run.stderr);
    let report = run.json();
    let found = traced(&report);
    let at = |file: &str, line: u32, code: &str| {
        found
            .iter()
            .find(|(f, l, c, _)| f == file && *l == line && c == code)
            .unwrap_or_else(|| {
                panic!(
                    "no {code} traced at {file}:{line}: {found:#?}\nstderr:\n{}",
                    run.stderr
                )
            })
            .3
            .clone()
    };
    // `capped` is built by its expression and traced: the guard on the batch in the model.
    at("tablepkg/model.py", 14, "PT401");
    // `typo`: the expression, quoted, on its `model` line.
    let typo = at("pyproject.toml", 25, "PT503");
    assert!(
        typo.contains("tablepkg:build_model(ModelConfg(hidden=8))")
            && typo.contains("NameError")
            && typo.contains("ModelConfg"),
        "{typo}"
    );
    // `negative`: the user's build_model raised; its `raise` is the related place.
    let negative = at("pyproject.toml", 31, "PT503");
    assert!(
        negative.contains("build_model(ModelConfig(hidden=-1))")
            && negative.contains("ValueError")
            && negative.contains("hidden must be positive, not -1"),
        "{negative}"
    );
    let related: Vec<(String, u64)> = report
        .iter()
        .filter(|item| item["file"] == "pyproject.toml" && item["line"] == 31)
        .flat_map(|item| item["related"].as_array().cloned().unwrap_or_default())
        .map(|place: Value| {
            (
                place["file"].as_str().unwrap_or_default().to_owned(),
                place["line"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        related,
        [("tablepkg/model.py".to_owned(), 21)],
        "{report:#?}"
    );
    // `small` exports, and nothing is reported anywhere else on its account.
    let entrypoint_errors: Vec<_> = found
        .iter()
        .filter(|(_, _, code, _)| code == "PT503")
        .map(|(file, line, _, _)| (file.as_str(), *line))
        .collect();
    assert_eq!(
        entrypoint_errors,
        [("pyproject.toml", 25), ("pyproject.toml", 31)],
        "{found:#?}"
    );
}

#[test]
fn export_writes_the_program_of_a_table_expression() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = project();
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &[
            "export",
            "tablepkg/__init__.py",
            "--entry",
            "small",
            "--python",
            python.to_str().unwrap(),
        ],
    );
    assert_eq!(
        run.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let written = project.path().join("tablepkg/small.pt2");
    assert!(
        written.is_file(),
        "no {}:\n{}\n{}",
        written.display(),
        run.stdout,
        run.stderr
    );
    assert!(run.stdout.contains("batch"), "{}", run.stdout);
    // A table whose expression cannot be evaluated is its diagnostic, not a program.
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &[
            "export",
            "tablepkg/__init__.py",
            "--entry",
            "typo",
            "--python",
            python.to_str().unwrap(),
        ],
    );
    assert_eq!(
        run.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(
        said.contains("pyproject.toml:25") && said.contains("ModelConfg"),
        "{said}"
    );
    assert!(!project.path().join("tablepkg/typo.pt2").exists());
}

/// The static pass reads a table as the entry it stands for (`table_programs`): the `Dim`s of
/// `tablepkg.spec:DYNAMIC_SHAPES` reach the model that `capped`'s expression builds, so its
/// guard on the batch is PT401 (the exporter's own finding), with the table's line as the
/// entrypoint; with only `small`, whose `max_batch` the declared range never exceeds, the same
/// `if` is no "static shape" warning: nothing is reported. No torch needed.
#[test]
fn the_static_pass_reads_the_dims_a_table_declares() {
    let tmp = tempfile::tempdir().unwrap();
    let project = project();
    let run = pt2lsp(project.path(), tmp.path(), &["check", "--format", "json"]);
    assert_eq!(run.code, 1, "stderr:\n{}", run.stderr);
    let report = run.json();
    let guard = report
        .iter()
        .find(|item| item["code"] == "PT401" && item["file"] == "tablepkg/model.py")
        .unwrap_or_else(|| panic!("no PT401 in the model: {report:#?}"));
    assert_eq!(
        (guard["line"].as_u64(), guard["severity"].as_str()),
        (Some(14), Some("error"))
    );
    let notes: Vec<(String, u64)> = guard["related"]
        .as_array()
        .unwrap()
        .iter()
        .map(|place| {
            (
                place["file"].as_str().unwrap_or_default().to_owned(),
                place["line"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        notes.contains(&("pyproject.toml".to_owned(), 18)),
        "{guard:#}"
    );
    // Only the table that exports: nothing to say.
    let pyproject = project.path().join("pyproject.toml");
    let text = std::fs::read_to_string(&pyproject).unwrap();
    let only_small = &text[..text.find("# The model's guard").unwrap()];
    std::fs::write(&pyproject, only_small).unwrap();
    let run = pt2lsp(project.path(), tmp.path(), &["check", "--format", "json"]);
    assert_eq!(
        (run.code, run.json()),
        (0, Vec::new()),
        "stderr:\n{}",
        run.stderr
    );
}

/// One table whose `Dim` is written inside its `dynamic-shapes` string, as `string` quotes it.
fn inline_dim_table(string: &str) -> String {
    format!(
        "[project]\nname = \"inline-dims\"\nversion = \"0.1.0\"\n\n[tool.pt2lsp]\ntimeout = 60\n\n\
         # The model's guard on the batch cuts the range written in the table's own string.\n\
         [[tool.pt2lsp.entrypoints]]\nname = \"capped\"\n\
         model = \"tablepkg:build_model(ModelConfig(hidden=8, max_batch=4))\"\n\
         example-args = \"tablepkg:(torch.randn(8, 8),)\"\n\
         dynamic-shapes = {string}\n"
    )
}

/// A `Dim(...)` written inside a table string is fixed where it is written: the static
/// companion of the model's guard edits the string in `pyproject.toml` (the generated module
/// keeps the string's lines and columns), in `--diff` and `--fix`, and the fixed table
/// exports. A basic string's escape before the `Dim` shifts the columns: no edit is offered
/// rather than a wrong one. No torch needed.
#[test]
fn a_dim_in_a_table_string_is_fixed_in_pyproject() {
    let tmp = tempfile::tempdir().unwrap();
    let project = project();
    let pyproject = project.path().join("pyproject.toml");
    std::fs::write(
        &pyproject,
        inline_dim_table(r#""tablepkg.spec:{'x': {0: Dim('batch', min=2, max=64)}}""#),
    )
    .unwrap();
    let diff = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--diff", "--unsafe-fixes"],
    );
    assert_eq!(diff.code, 1, "stderr:\n{}", diff.stderr);
    insta::assert_snapshot!(diff.stdout, @r#"
    --- pyproject.toml
    +++ pyproject.toml
    @@ -10,4 +10,4 @@
     name = "capped"
     model = "tablepkg:build_model(ModelConfig(hidden=8, max_batch=4))"
     example-args = "tablepkg:(torch.randn(8, 8),)"
    -dynamic-shapes = "tablepkg.spec:{'x': {0: Dim('batch', min=2, max=64)}}"
    +dynamic-shapes = "tablepkg.spec:{'x': {0: Dim('batch', min=5, max=64)}}"
    "#);
    let fixed = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--fix", "--unsafe-fixes"],
    );
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    let text = std::fs::read_to_string(&pyproject).unwrap();
    assert!(text.contains("Dim('batch', min=5, max=64)"), "{text}");

    // An escaped quote before the `Dim` (`\"x\"`): the columns differ, no edit.
    std::fs::write(
        &pyproject,
        inline_dim_table(r#""tablepkg.spec:{\"x\": {0: Dim('batch', min=2, max=64)}}""#),
    )
    .unwrap();
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--diff", "--unsafe-fixes"],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("No fixes to apply"), "{}", run.stderr);
}

/// A model whose guard only the trace finds (the call goes through `globals()`, which the
/// static pass does not follow), exported by a table whose `Dim` is written in its string.
const GUARD_ONLY_THE_TRACE_SEES: &str = r#"import torch.nn as nn

from .config import ModelConfig


def _cap(y, x):
    if x.shape[0] > 4:
        y = y * 0.5
    return y


class Net(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x):
        return globals()["_cap"](self.proj(x), x)


def build_model(cfg: ModelConfig) -> Net:
    return Net(cfg)
"#;

/// torch's own `Dim` fix for a `Dim` written inside a table string edits the string in
/// `pyproject.toml`: `check --trace --diff` shows it, `--trace --fix` writes it, traces the
/// rewritten table again and finds nothing left.
#[test]
fn torch_s_fix_of_a_dim_in_a_table_string_edits_the_string() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = project();
    std::fs::write(
        project.path().join("tablepkg/model.py"),
        GUARD_ONLY_THE_TRACE_SEES,
    )
    .unwrap();
    let pyproject = project.path().join("pyproject.toml");
    std::fs::write(
        &pyproject,
        inline_dim_table(r#""tablepkg.spec:{'x': {0: Dim('batch', min=2, max=64)}}""#),
    )
    .unwrap();
    let python = python.to_str().unwrap();
    let diff = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--trace", "--python", python, "--diff"],
    );
    assert_eq!(diff.code, 1, "stderr:\n{}", diff.stderr);
    insta::assert_snapshot!(diff.stdout, @r#"
    --- pyproject.toml
    +++ pyproject.toml
    @@ -10,4 +10,4 @@
     name = "capped"
     model = "tablepkg:build_model(ModelConfig(hidden=8, max_batch=4))"
     example-args = "tablepkg:(torch.randn(8, 8),)"
    -dynamic-shapes = "tablepkg.spec:{'x': {0: Dim('batch', min=2, max=64)}}"
    +dynamic-shapes = "tablepkg.spec:{'x': {0: Dim('batch', min=5, max=64)}}"
    "#);
    let fixed = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--trace", "--python", python, "--fix"],
    );
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    assert!(
        fixed.stdout.contains("Fixed 1 info (0 remaining)"),
        "{}",
        fixed.stdout
    );
    let text = std::fs::read_to_string(&pyproject).unwrap();
    assert!(text.contains("Dim('batch', min=5, max=64)"), "{text}");
}
