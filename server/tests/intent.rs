//! Fixes keep the user's intent: a dimension declared dynamic stays dynamic. With real torch
//! and the real binary, on a model whose example batch of 1 sits on `Dim("batch")` (torch's
//! suggestion for it is `batch = 1`, which would drop the `Dim`):
//!
//! - the static pass reports PT405 on the `example_args` line;
//! - the traced diagnostic carries the example-size fix, unsafe, never torch's constant as a
//!   safe fix, so `check --trace --fix` leaves the file as it is;
//! - `check --trace --fix --unsafe-fixes` changes the example, keeps the `Dim`, and the
//!   exported program runs at batch 5;
//! - where the constant comes from the code (`x + torch.ones(8, 3)`), torch's suggestion is
//!   shown display-only, with a title that says what it would do.
//!
//! The interpreter is `PT2LSP_PYTHON`, else `../.venv/bin/python`. Without torch the test fails
//! when `CI` is set and is skipped, with a note, otherwise.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

#[path = "support/torch.rs"]
mod torch_support;

use torch_support::turn;

const BATCH_ONE: &str = r#"import torch
import torch.nn as nn
from torch.export import Dim


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x).softmax(-1)


model = Classifier().eval()
example_args = (torch.randn(1, 8),)
dynamic_shapes = {"x": {0: Dim("batch")}}
"#;

const CODE_CONSTANT: &str = r#"import torch
import torch.nn as nn
from torch.export import Dim


class AddBias(nn.Module):
    def forward(self, x):
        return x + torch.ones(8, 3)


model = AddBias()
example_args = (torch.randn(8, 3),)
dynamic_shapes = {"x": {0: Dim("b")}}
"#;

fn pt2lsp(dir: &Path, python: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(args)
        .args(["--python", python.to_str().unwrap()])
        .current_dir(dir)
        .env("TMPDIR", dir)
        .env_remove("VIRTUAL_ENV"))
}

fn items(report: &Run) -> Vec<Value> {
    serde_json::from_str(&report.stdout)
        .unwrap_or_else(|error| panic!("{error}\n{}\n{}", report.stdout, report.stderr))
}

fn of_file<'a>(items: &'a [Value], name: &str) -> Vec<&'a Value> {
    items
        .iter()
        .filter(|item| item["file"].as_str().unwrap().ends_with(name))
        .collect()
}

#[test]
fn declared_dynamic_dims_stay_dynamic_through_every_fix() {
    let Some(python) = torch_support::torch_python("intent") else {
        return;
    };
    let _turn = turn();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    fs::write(dir.join("batch_one.py"), BATCH_ONE).unwrap();
    fs::write(dir.join("code_constant.py"), CODE_CONSTANT).unwrap();

    // Static: PT405 on the `example_args` line (16), with an unsafe fix.
    let report = items(&run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(["check", "--format", "json", "batch_one.py"])
        .current_dir(dir)));
    let pt405: Vec<&Value> = report.iter().filter(|d| d["code"] == "PT405").collect();
    assert_eq!(pt405.len(), 1, "{report:#?}");
    assert_eq!(pt405[0]["line"], 16);
    assert_eq!(pt405[0]["fix"]["applicability"], "unsafe");

    // Traced: torch's `batch = 1` is not the fix; the example is.
    let traced = items(&pt2lsp(
        dir,
        python,
        &["check", "--trace", "--format", "json", "."],
    ));
    // The exporter's PT405 lands on the same example as the static one: one confirmed
    // diagnostic (`static+trace`).
    let batch: Vec<&Value> = of_file(&traced, "batch_one.py")
        .into_iter()
        .filter(|d| d["source"].as_str().unwrap_or_default().ends_with("trace"))
        .collect();
    assert!(!batch.is_empty(), "no traced diagnostic: {traced:#?}");
    for diagnostic in &batch {
        let fix = &diagnostic["fix"];
        assert_eq!(fix["applicability"], "unsafe", "{diagnostic:#}");
        assert!(
            fix["title"].as_str().unwrap().contains("stays dynamic"),
            "{diagnostic:#}"
        );
        for edit in fix["edits"].as_array().unwrap() {
            assert_eq!(edit["line"], 16, "the fix edits the example only: {fix:#}");
        }
    }
    // Where the code itself makes the dimension constant, the exporter confirms the static
    // PT401 (`static+trace`), and the fix that would drop the `Dim` says so and is never safe:
    // torch's own suggestion is not applied, the static one needs --unsafe-fixes.
    let constant: Vec<&Value> = of_file(&traced, "code_constant.py")
        .into_iter()
        .filter(|d| {
            d["source"].as_str().unwrap_or_default().contains("trace")
                && d.get("fix").is_some_and(|f| !f.is_null())
        })
        .collect();
    assert!(!constant.is_empty(), "no traced fix: {traced:#?}");
    for diagnostic in &constant {
        let fix = &diagnostic["fix"];
        assert_ne!(fix["applicability"], "safe", "{diagnostic:#}");
        let title = fix["title"].as_str().unwrap();
        assert!(title.contains("removes the `Dim`"), "{title}");
        if diagnostic["source"] == "trace" {
            assert_eq!(fix["applicability"], "display-only", "{diagnostic:#}");
            assert!(title.contains("not applied"), "{title}");
        }
    }

    // `--fix` alone applies no fix that would remove a declared `Dim`.
    let safe = pt2lsp(dir, python, &["check", "--trace", "--fix", "."]);
    assert!(safe.code <= 1, "{}\n{}", safe.stdout, safe.stderr);
    assert_eq!(
        fs::read_to_string(dir.join("batch_one.py")).unwrap(),
        BATCH_ONE
    );
    assert_eq!(
        fs::read_to_string(dir.join("code_constant.py")).unwrap(),
        CODE_CONSTANT
    );

    // `--unsafe-fixes`: the example changes, the `Dim` stays, and batch 5 runs.
    let fixed = pt2lsp(
        dir,
        python,
        &[
            "check",
            "--trace",
            "--fix",
            "--unsafe-fixes",
            "batch_one.py",
        ],
    );
    assert_eq!(fixed.code, 0, "{}\n{}", fixed.stdout, fixed.stderr);
    let text = fs::read_to_string(dir.join("batch_one.py")).unwrap();
    assert!(
        text.contains("example_args = (torch.randn(2, 8),)"),
        "{text}"
    );
    assert!(text.contains("Dim(\"batch\")"), "{text}");
    let script = "import importlib.util, torch\n\
        spec = importlib.util.spec_from_file_location('fixed', 'batch_one.py')\n\
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n\
        ep = torch.export.export(m.model, m.example_args, dynamic_shapes=m.dynamic_shapes)\n\
        print(tuple(ep.module()(torch.randn(5, 8)).shape))\n";
    let output = Command::new(python)
        .args(["-c", script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "(5, 4)",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
