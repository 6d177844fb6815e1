//! Jupyter notebooks through `pt2lsp check`, as the real binary: the code cells checked as one
//! module (IPython syntax masked), positions by cell in every output format, and `--fix`
//! writing into the right cell while the notebook's outputs and layout stay.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

const NOTEBOOK: &str = "gated.ipynb";

fn fixture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/notebooks/gated.ipynb");
    fs::read_to_string(path).expect("the fixture notebook")
}

/// A temporary directory holding the fixture notebook.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(NOTEBOOK), fixture()).unwrap();
    dir
}

fn pt2lsp(dir: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1"))
}

#[test]
fn text_names_the_cell_and_the_line_in_it() {
    let dir = project();
    let found = pt2lsp(dir.path(), &["check", "--isolated", NOTEBOOK]);
    assert_eq!(found.code, 1, "{found:?}");
    let first = found.stdout.lines().next().unwrap();
    // The `if` is on line 4 of the third cell (the markdown cell counts).
    assert!(
        first.starts_with("gated.ipynb:cell 3:4:12: PT101 [error] "),
        "{}",
        found.stdout
    );
    // Magics, shell escapes and help lines are not Python, and not problems.
    assert!(!found.stdout.contains("PT001"), "{}", found.stdout);
}

#[test]
fn a_directory_walk_finds_notebooks() {
    let dir = project();
    let found = pt2lsp(dir.path(), &["check", "--isolated", "."]);
    assert!(
        found.stdout.contains("gated.ipynb:cell 3:4:12: PT101"),
        "{found:?}"
    );
}

#[test]
fn json_and_sarif_carry_the_cell() {
    let dir = project();
    let json = pt2lsp(
        dir.path(),
        &["check", "--isolated", "--format", "json", NOTEBOOK],
    );
    let items: Value = serde_json::from_str(&json.stdout).unwrap();
    let item = &items[0];
    assert_eq!(
        (&item["cell"], &item["line"], &item["column"]),
        (&Value::from(3), &Value::from(4), &Value::from(12)),
        "{item}"
    );
    // The fix's edit is in the same cell, ending past the cell's last line.
    let edit = &item["fix"]["edits"][0];
    assert_eq!(
        (&edit["cell"], &edit["line"]),
        (&Value::from(3), &Value::from(4)),
        "{edit}"
    );
    assert_eq!(
        (&edit["end_line"], &edit["end_column"]),
        (&Value::from(7), &Value::from(1))
    );

    let sarif = pt2lsp(
        dir.path(),
        &["check", "--isolated", "--format", "sarif", NOTEBOOK],
    );
    let log: Value = serde_json::from_str(&sarif.stdout).unwrap();
    let region = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startLine"], 4, "{region}");
    assert_eq!(region["properties"]["cell"], 3, "{region}");

    let github = pt2lsp(
        dir.path(),
        &["check", "--isolated", "--format", "github", NOTEBOOK],
    );
    assert!(
        github
            .stdout
            .starts_with("::error file=gated.ipynb,title=PT101 (cell 3%2C line 4)::"),
        "{}",
        github.stdout
    );
}

#[test]
fn fix_rewrites_the_cell_and_keeps_everything_else() {
    let dir = project();
    let fixed = pt2lsp(
        dir.path(),
        &["check", "--isolated", "--fix", "--unsafe-fixes", NOTEBOOK],
    );
    assert_eq!(fixed.code, 0, "{fixed:?}");
    let before: Value = serde_json::from_str(&fixture()).unwrap();
    let text = fs::read_to_string(dir.path().join(NOTEBOOK)).unwrap();
    let after: Value = serde_json::from_str(&text).unwrap();
    let source = |notebook: &Value, cell: usize| -> String {
        notebook["cells"][cell]["source"]
            .as_array()
            .unwrap()
            .iter()
            .map(|line| line.as_str().unwrap())
            .collect()
    };
    assert!(
        source(&after, 2).contains("return torch.where(x.sum() > 0, x * 2, x)"),
        "{}",
        source(&after, 2)
    );
    // The magic in the cell, the other cells, the outputs and the metadata are as they were.
    assert!(source(&after, 2).contains("%time y = x * 2"));
    for cell in [0, 1, 3] {
        assert_eq!(after["cells"][cell], before["cells"][cell]);
    }
    assert_eq!(after["cells"][2]["outputs"], before["cells"][2]["outputs"]);
    assert_eq!(after["metadata"], before["metadata"]);
    // Written in the notebook's own layout: one line of JSON per source line, indent 1.
    assert!(
        text.contains("\n    \"        return torch.where(x.sum() > 0, x * 2, x)\\n\",\n"),
        "{text}"
    );
    let again = pt2lsp(dir.path(), &["check", "--isolated", NOTEBOOK]);
    assert_eq!(again.code, 0, "{again:?}");
}

#[test]
fn a_broken_notebook_is_an_error_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("broken.ipynb"), "{\"cells\": 3}").unwrap();
    let found = pt2lsp(dir.path(), &["check", "--isolated", "broken.ipynb"]);
    assert_eq!(found.code, 2, "{found:?}");
    assert!(
        found
            .stderr
            .contains("cannot check broken.ipynb: not a notebook"),
        "{}",
        found.stderr
    );
}
