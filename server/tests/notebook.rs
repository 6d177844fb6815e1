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
fn concise_points_into_the_notebook_file() {
    let dir = project();
    let found = pt2lsp(
        dir.path(),
        &["check", "--isolated", "--format", "concise", NOTEBOOK],
    );
    assert_eq!(found.code, 1, "{found:?}");
    let first = found.stdout.lines().next().unwrap();
    // The position an editor jumps to is the condition's, in the line of the JSON file that
    // holds the cell's line.
    let (line, column) = first
        .strip_prefix("gated.ipynb:")
        .and_then(|rest| rest.split_once(": PT101 [error] "))
        .and_then(|(position, _)| position.split_once(':'))
        .unwrap_or_else(|| panic!("{}", found.stdout));
    let (line, column): (usize, usize) = (line.parse().unwrap(), column.parse().unwrap());
    let written = fixture().lines().nth(line - 1).unwrap().to_owned();
    assert!(
        written[column - 1..].starts_with("x.sum() > 0:"),
        "{first} points at {written:?}"
    );
    assert_eq!(
        found.stdout.lines().count(),
        1,
        "no summary: {}",
        found.stdout
    );
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

#[path = "support/torch.rs"]
mod torch_support;

/// A notebook whose gate the static analysis cannot see through (a lambda in a dict), in a
/// directory of its own beside a module it imports, as Jupyter runs it.
fn opaque_gate_notebook(dir: &Path) {
    let notebooks = dir.join("nbs");
    fs::create_dir_all(&notebooks).unwrap();
    fs::write(notebooks.join("scale.py"), "FACTOR = 2\n").unwrap();
    let code = |source: &str| {
        serde_json::json!({"cell_type": "code", "metadata": {}, "execution_count": null,
            "outputs": [], "source": source})
    };
    let notebook = serde_json::json!({
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# A gate\n"},
            code("%load_ext autoreload\nimport torch\nfrom scale import FACTOR\n\nGATES = {\"positive\": lambda t: t.sum() > 0}\n"),
            code("class Gate(torch.nn.Module):\n    def forward(self, x):\n        if GATES[\"positive\"](x):\n            return x * FACTOR\n        return x\n"),
            code("model = Gate()\nexample_args = (torch.randn(3),)\n"),
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5
    });
    fs::write(
        notebooks.join("demo.ipynb"),
        serde_json::to_string_pretty(&notebook).unwrap(),
    )
    .unwrap();
}

#[test]
fn a_notebook_is_traced_in_its_directory_and_its_failures_land_in_their_cells() {
    let Some(python) = torch_support::torch_python("notebook trace") else {
        return;
    };
    let _turn = torch_support::turn();
    let dir = tempfile::tempdir().unwrap();
    opaque_gate_notebook(dir.path());
    let statically = pt2lsp(dir.path(), &["check", "--isolated", "nbs/demo.ipynb"]);
    assert_eq!(
        statically.code, 0,
        "nothing seen statically: {statically:?}"
    );

    let python = python.to_str().unwrap();
    let args = [
        "check",
        "--isolated",
        "--trace",
        "--python",
        python,
        "--format",
        "json",
        "nbs/demo.ipynb",
    ];
    let traced = pt2lsp(dir.path(), &args);
    assert_eq!(traced.code, 1, "{traced:?}");
    let report: Value = serde_json::from_str(&traced.stdout).unwrap();
    let found: Vec<(String, u64, u64, String)> = report
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_owned(),
                d["cell"].as_u64().unwrap(),
                d["line"].as_u64().unwrap(),
                d["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // The `if` is line 3 of cell 3 (the markdown cell counts); `from scale import FACTOR`
    // worked, so the notebook ran in its own directory.
    assert_eq!(
        found,
        [("nbs/demo.ipynb".to_owned(), 3, 3, "PT101".to_owned())],
        "{traced:?}"
    );
    let text = pt2lsp(
        dir.path(),
        &[
            "check",
            "--isolated",
            "--trace",
            "--python",
            python,
            "nbs/demo.ipynb",
        ],
    );
    assert!(
        text.stdout.starts_with("nbs/demo.ipynb:cell 3:3:"),
        "{text:?}"
    );
}

/// A notebook of code cells (`sources`), as Jupyter writes one.
fn notebook_of(sources: &[&str]) -> String {
    let cells: Vec<Value> = sources
        .iter()
        .map(|source| {
            serde_json::json!({"cell_type": "code", "metadata": {}, "execution_count": null,
                "outputs": [], "source": source})
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5
    }))
    .unwrap()
}

#[test]
fn what_a_fix_leaves_is_still_reported_in_its_cell() {
    let dir = tempfile::tempdir().unwrap();
    // The fix of cell 2 takes three lines down to one: cell 3's problem moves up two lines of
    // the joined module, and must still be line 5 of cell 3.
    let notebook = notebook_of(&[
        "import torch\n",
        "class Gated(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x * 2\n        return x\n",
        "class Other(torch.nn.Module):\n    def forward(self, x):\n        n = x.shape[0]\n        y = x * n\n        return y.numpy()\n",
        "model = Gated().eval()\nexample_args = (torch.randn(2, 4),)\n",
    ]);
    for (name, format) in [("text.ipynb", "text"), ("json.ipynb", "json")] {
        fs::write(dir.path().join(name), &notebook).unwrap();
        let fixed = pt2lsp(
            dir.path(),
            &[
                "check",
                "--isolated",
                "--fix",
                "--unsafe-fixes",
                "--format",
                format,
                name,
            ],
        );
        assert_eq!(fixed.code, 1, "{fixed:?}");
        if format == "text" {
            assert!(
                fixed
                    .stdout
                    .starts_with("text.ipynb:cell 3:5:16: PT201 [error]"),
                "{fixed:?}"
            );
        } else {
            let report: Value = serde_json::from_str(&fixed.stdout).unwrap();
            let found = &report.as_array().unwrap()[0];
            assert_eq!(
                (&found["code"], &found["cell"], &found["line"]),
                (&Value::from("PT201"), &Value::from(3), &Value::from(5)),
                "{fixed:?}"
            );
        }
    }
}

#[test]
fn export_writes_what_the_notebooks_export_call_exports_and_names_cells_when_it_fails() {
    let Some(python) = torch_support::torch_python("notebook export") else {
        return;
    };
    let _turn = torch_support::turn();
    let dir = tempfile::tempdir().unwrap();
    let python = python.to_str().unwrap();
    // The export call is in the last cell, as people write it, and saves where it says.
    fs::write(
        dir.path().join("net.ipynb"),
        notebook_of(&[
            "import torch\nfrom torch.export import Dim\n",
            "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x.relu() * 2\n",
            "model = Net().eval()\nx = torch.randn(2, 4)\nep = torch.export.export(model, (x,), dynamic_shapes={\"x\": {0: Dim(\"batch\")}})\ntorch.export.save(ep, \"net_saved.pt2\")\nprint(\"saved\")\n",
        ]),
    )
    .unwrap();
    let exported = pt2lsp(
        dir.path(),
        &["export", "--isolated", "--python", python, "net.ipynb"],
    );
    assert_eq!(exported.code, 0, "{exported:?}");
    assert!(
        exported
            .stdout
            .starts_with("Exported net.ipynb (cell 3:3) to net_saved.pt2"),
        "{exported:?}"
    );
    assert!(
        exported.stdout.contains("(batch): [0, inf]"),
        "{exported:?}"
    );
    assert!(dir.path().join("net_saved.pt2").is_file());

    fs::write(
        dir.path().join("gate.ipynb"),
        notebook_of(&[
            "import torch\n",
            "class Gate(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x * 2\n        return x\n",
            "ep = torch.export.export(Gate(), (torch.randn(3),))\n",
        ]),
    )
    .unwrap();
    let failed = pt2lsp(
        dir.path(),
        &["export", "--isolated", "--python", python, "gate.ipynb"],
    );
    assert_eq!(failed.code, 1, "{failed:?}");
    // The finding, its message and its notes name the notebook's cells, never the module the
    // cells were joined into.
    assert!(
        failed.stdout.starts_with("gate.ipynb:cell 2:3:"),
        "{failed:?}"
    );
    assert!(failed.stdout.contains("gate.ipynb cell 2:3"), "{failed:?}");
    assert!(!failed.stdout.contains(".py"), "{failed:?}");
    assert!(!dir.path().join("gate.pt2").exists());
}

/// Cells in another language (VS Code's shell and plain-text cells) are not Python and are not
/// checked; the Python cells are, on their own lines, automagics (`pip install x`) masked.
#[test]
fn cells_in_other_languages_are_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/notebooks/other_languages.ipynb");
    fs::copy(path, dir.path().join("other_languages.ipynb")).unwrap();
    let found = pt2lsp(
        dir.path(),
        &["check", "--isolated", "other_languages.ipynb"],
    );
    assert_eq!(found.code, 1, "{found:?}");
    let lines: Vec<&str> = found
        .stdout
        .lines()
        .filter(|line| line.starts_with("other_languages.ipynb:"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", found.stdout);
    assert!(
        lines[0].starts_with("other_languages.ipynb:cell 5:3:12: PT101 [error] "),
        "{}",
        found.stdout
    );
}

/// A notebook whose kernel is not Python's has no Python cells.
#[test]
fn a_notebook_in_another_language_has_nothing_to_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut notebook: Value =
        serde_json::from_str(&notebook_of(&["x <- c(1, 2)\nprint(x)\n"])).unwrap();
    notebook["metadata"] = serde_json::json!({"kernelspec": {"language": "R", "name": "ir"}});
    fs::write(dir.path().join("r.ipynb"), notebook.to_string()).unwrap();
    let found = pt2lsp(dir.path(), &["check", "--isolated", "r.ipynb"]);
    assert_eq!(found.code, 0, "{found:?}");
    assert!(!found.stdout.contains("PT001"), "{}", found.stdout);
}
