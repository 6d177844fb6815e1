//! `pt2lsp export` as the real binary, with real torch: a model with a dynamic batch is written
//! as a `.pt2` that `torch.export.load` runs at another batch size; a model that does not
//! export exits 1 with the trace's diagnostic; `-o`, `out-dir`, `--entry`, and the usage errors
//! (exit 2). No run leaves a temporary file beside the output, or anything in its `TMPDIR`.
//!
//! The interpreter is `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`.
//! Without torch the tests fail when `CI` is set and are skipped, with a note, otherwise.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

#[path = "support/torch.rs"]
mod torch_support;

use torch_support::turn;

fn torch_python() -> Option<&'static std::path::Path> {
    torch_support::torch_python("export")
}

const DYNAMIC_BATCH: &str = r#"import torch
from torch.export import Dim


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x).relu() + x.mean()


def build():
    return Net().eval()


model = build()
example_args = (torch.randn(8, 16),)
dynamic_shapes = {"x": {0: Dim("batch", min=2, max=1024)}}
"#;

const DATA_DEPENDENT: &str = r"import torch


class Bad(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


model = Bad()
example_args = (torch.randn(3),)
";

/// A project: `pyproject.toml` (with `extra` in its `[tool.pt2lsp]`), and `files`.
struct Project {
    dir: TempDir,
    tmp: TempDir,
}

impl Project {
    fn new(extra: &str, files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("pyproject.toml"),
            format!("[tool.pt2lsp]\ntimeout = 120\n{extra}"),
        )
        .unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        Self {
            dir,
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `check --trace --format json` of `file`, the trace cache off (every run exports).
    fn check_traced(&self, python: &Path, file: &str) -> Run {
        run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
            .args([
                "check",
                "--trace",
                "--no-cache",
                "--format",
                "json",
                "--python",
            ])
            .arg(python)
            .arg(file)
            .current_dir(self.dir.path())
            .env("TMPDIR", self.tmp.path())
            .env_remove("VIRTUAL_ENV"))
    }

    fn export(&self, python: &Path, args: &[&str]) -> Run {
        run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
            .arg("export")
            .args(args)
            .arg("--python")
            .arg(python)
            .current_dir(self.dir.path())
            .env("TMPDIR", self.tmp.path())
            .env_remove("VIRTUAL_ENV"))
    }

    /// Nothing but the expected files in `dir` (no temporary file from the export), nothing in
    /// the run's TMPDIR.
    fn assert_clean(&self, dir: &Path, expected: &[&str]) {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort_unstable();
        let mut expected: Vec<String> = expected.iter().map(|name| (*name).to_owned()).collect();
        expected.sort_unstable();
        assert_eq!(names, expected, "files in {}", dir.display());
        let left: Vec<PathBuf> = fs::read_dir(self.tmp.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert!(left.is_empty(), "files left in TMPDIR: {left:#?}");
    }
}

/// Runs `program` with `torch.export.load` on `pt2` in `python`; returns its stdout.
fn with_loaded(python: &Path, pt2: &Path, program: &str) -> String {
    let script = format!(
        "import torch\nep = torch.export.load({:?})\nm = ep.module()\n{program}",
        pt2.to_str().unwrap()
    );
    let output = Command::new(python).args(["-c", &script]).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_dynamic_batch_model_is_written_and_runs_at_another_batch_size() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let project = Project::new("", &[("net.py", DYNAMIC_BATCH)]);
    let result = project.export(python, &["net.py"]);
    assert_eq!(result.code, 0, "{result:#?}");
    let written = project.path("net.pt2");
    assert!(
        result
            .stdout
            .starts_with("Exported net.py (model) to net.pt2\n"),
        "{}",
        result.stdout
    );
    assert!(
        result.stdout.contains("range constraints: s")
            && result.stdout.contains(" (batch): [2, 1024]"),
        "{}",
        result.stdout
    );
    assert!(result.stdout.contains("matches eager"), "{}", result.stdout);
    for stage in ["exporting net.py (model)", "saving: ", "verifying: "] {
        assert!(
            result.stderr.contains(stage),
            "no `{stage}`: {}",
            result.stderr
        );
    }
    project.assert_clean(project.dir.path(), &["net.pt2", "net.py", "pyproject.toml"]);

    // The file is an ordinary exported program: another process loads it and runs it at a
    // batch size the example did not have.
    let shapes = with_loaded(
        python,
        &written,
        "print(tuple(m(torch.randn(37, 16)).shape), tuple(m(torch.randn(2, 16)).shape))",
    );
    assert_eq!(shapes.trim(), "(37, 4) (2, 4)");

    // JSON: the same report, for scripts.
    let result = project.export(python, &["net.py", "--output-format", "json", "--quiet"]);
    assert_eq!(result.code, 0, "{result:#?}");
    assert!(result.stderr.is_empty(), "{}", result.stderr);
    let report: Value = serde_json::from_str(&result.stdout).unwrap();
    assert_eq!(report["status"], "exported");
    assert_eq!(report["entry"], "model");
    assert_eq!(report["path"], written.to_str().unwrap());
    assert_eq!(
        report["size"].as_u64(),
        Some(fs::metadata(&written).unwrap().len())
    );
    assert!(report["nodes"].as_u64().unwrap() >= 5, "{report:#}");
    assert_eq!(
        report["inputs"][0].as_str().unwrap().split(':').next(),
        Some("x")
    );
    let range = &report["range_constraints"][0];
    assert_eq!(
        (&range["dim"], &range["min"], &range["max"]),
        (&Value::from("batch"), &Value::from(2), &Value::from(1024))
    );
    assert_eq!(report["verification"]["matches"], true, "{report:#}");
}

/// The commonest declarations have no bounds: an unbounded `Dim("batch")`, `Dim.AUTO`,
/// `Dim.DYNAMIC` and a dim derived from an unbounded one. Each is written, loaded in another
/// process and run at a batch size the example did not have.
#[test]
fn unbounded_auto_dynamic_and_derived_dims_are_written_and_run_at_another_batch_size() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let unbounded = DYNAMIC_BATCH.replace(r#"Dim("batch", min=2, max=1024)"#, r#"Dim("batch")"#);
    let auto = DYNAMIC_BATCH.replace(r#"Dim("batch", min=2, max=1024)"#, "Dim.AUTO");
    let dynamic = DYNAMIC_BATCH.replace(r#"Dim("batch", min=2, max=1024)"#, "Dim.DYNAMIC");
    let derived = r#"import torch
from torch.export import Dim


class Shifted(torch.nn.Module):
    def forward(self, x, y):
        return x[1:] + y


model = Shifted().eval()
batch = Dim("batch")
example_args = (torch.randn(9, 4), torch.randn(8, 4))
dynamic_shapes = {"x": {0: batch + 1}, "y": {0: batch}}
"#;
    let project = Project::new(
        "",
        &[
            ("unbounded.py", &unbounded),
            ("auto.py", &auto),
            ("dynamic.py", &dynamic),
            ("derived.py", derived),
        ],
    );
    for name in ["unbounded", "auto", "dynamic"] {
        let result = project.export(python, &[&format!("{name}.py")]);
        assert_eq!(result.code, 0, "{name}: {result:#?}");
        assert!(result.stdout.contains("matches eager"), "{}", result.stdout);
        let shapes = with_loaded(
            python,
            &project.path(&format!("{name}.pt2")),
            "print(tuple(m(torch.randn(37, 16)).shape), tuple(m(torch.randn(3, 16)).shape))",
        );
        assert_eq!(shapes.trim(), "(37, 4) (3, 4)", "{name}");
    }
    let result = project.export(python, &["unbounded.py", "--output-format", "json"]);
    assert_eq!(result.code, 0, "{result:#?}");
    let report: Value = serde_json::from_str(&result.stdout).unwrap();
    let range = &report["range_constraints"][0];
    assert_eq!(range["dim"], "batch", "{report:#}");
    assert_eq!(range["max"], Value::Null, "unbounded above: {report:#}");

    let result = project.export(python, &["derived.py"]);
    assert_eq!(result.code, 0, "{result:#?}");
    let shapes = with_loaded(
        python,
        &project.path("derived.pt2"),
        "print(tuple(m(torch.randn(21, 4), torch.randn(20, 4)).shape))",
    );
    assert_eq!(shapes.trim(), "(20, 4)");
    project.assert_clean(
        project.dir.path(),
        &[
            "auto.pt2",
            "auto.py",
            "derived.pt2",
            "derived.py",
            "dynamic.pt2",
            "dynamic.py",
            "pyproject.toml",
            "unbounded.pt2",
            "unbounded.py",
        ],
    );
}

#[test]
fn a_model_that_does_not_export_exits_1_with_the_trace_diagnostic() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let project = Project::new("", &[("bad.py", DATA_DEPENDENT)]);
    let result = project.export(python, &["bad.py"]);
    assert_eq!(result.code, 1, "{result:#?}");
    assert!(
        result.stdout.starts_with("bad.py:6:12: PT101 [error] "),
        "{}",
        result.stdout
    );
    assert!(
        result
            .stderr
            .contains("bad.py (model) does not export: 1 problem"),
        "{}",
        result.stderr
    );
    project.assert_clean(project.dir.path(), &["bad.py", "pyproject.toml"]);

    let result = project.export(python, &["bad.py", "--output-format", "json", "-q"]);
    assert_eq!(result.code, 1, "{result:#?}");
    let report: Value = serde_json::from_str(&result.stdout).unwrap();
    assert_eq!(report["status"], "failed");
    let diagnostic = &report["diagnostics"][0];
    assert_eq!(
        (
            &diagnostic["code"],
            &diagnostic["line"],
            &diagnostic["source"]
        ),
        (
            &Value::from("PT101"),
            &Value::from(6),
            &Value::from("trace")
        )
    );
}

#[test]
fn output_flag_out_dir_and_entry_choose_what_is_written_where() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let configured = r#"out-dir = "artifacts"

[[tool.pt2lsp.entrypoints]]
name = "tiny"
model = "models.net:build()"
example-args = "models.net:TINY_ARGS"
"#;
    let net = format!("{DYNAMIC_BATCH}\nTINY_ARGS = (torch.randn(3, 16),)\n");
    let project = Project::new(configured, &[("models/net.py", &net)]);

    // `out-dir` from pyproject.toml, relative to it; the file's own entrypoint by default.
    let result = project.export(python, &["models/net.py", "-q"]);
    assert_eq!(result.code, 0, "{result:#?}");
    assert!(
        result.stdout.contains("to artifacts/net.pt2"),
        "{}",
        result.stdout
    );
    project.assert_clean(&project.path("artifacts"), &["net.pt2"]);

    // `--entry` picks the configured one, written as `<name>.pt2`; its inputs are static.
    let result = project.export(python, &["models/net.py", "--entry", "tiny", "-q"]);
    assert_eq!(result.code, 0, "{result:#?}");
    assert!(
        result.stdout.contains("artifacts/tiny.pt2"),
        "{}",
        result.stdout
    );
    assert!(
        result.stdout.contains("x: f32[3, 16]")
            && result.stdout.contains("none (every dimension is static)"),
        "{}",
        result.stdout
    );

    // `-o` wins over `out-dir`; a path ending in `/` is a directory, created when missing.
    let result = project.export(python, &["models/net.py", "-o", "build/m.pt2", "-q"]);
    assert_eq!(result.code, 0, "{result:#?}");
    let result = project.export(python, &["models/net.py", "-o", "dist/", "-q"]);
    assert_eq!(result.code, 0, "{result:#?}");
    project.assert_clean(&project.path("build"), &["m.pt2"]);
    project.assert_clean(&project.path("dist"), &["net.pt2"]);
    project.assert_clean(&project.path("artifacts"), &["net.pt2", "tiny.pt2"]);
    let shape = with_loaded(
        python,
        &project.path("build/m.pt2"),
        "print(tuple(m(torch.randn(5, 16)).shape))",
    );
    assert_eq!(shape.trim(), "(5, 4)");
}

#[test]
fn usage_and_setup_problems_exit_2_and_name_what_to_do() {
    let project = Project::new(
        "",
        &[
            ("net.py", DYNAMIC_BATCH),
            ("lib.py", "def helper():\n    return 1\n"),
        ],
    );
    let python = torch_python().map_or_else(|| PathBuf::from("python3"), Path::to_path_buf);

    let missing = project.export(&python, &["nothere.py"]);
    assert_eq!(missing.code, 2, "{missing:#?}");
    assert!(
        missing.stderr.contains("cannot export nothere.py"),
        "{}",
        missing.stderr
    );

    let none = project.export(&python, &["lib.py"]);
    assert_eq!(none.code, 2, "{none:#?}");
    assert!(
        none.stderr.contains("lib.py has no entrypoint to export"),
        "{}",
        none.stderr
    );

    let unknown = project.export(&python, &["net.py", "--entry", "encoder"]);
    assert_eq!(unknown.code, 2, "{unknown:#?}");
    assert!(
        unknown
            .stderr
            .contains("net.py has no entrypoint `encoder`; its entrypoints: model"),
        "{}",
        unknown.stderr
    );

    let no_python = project.export(&project.path("no-such-python"), &["net.py"]);
    assert_eq!(no_python.code, 2, "{no_python:#?}");
    assert!(
        no_python
            .stderr
            .contains("cannot run the Python interpreter"),
        "{}",
        no_python.stderr
    );
    project.assert_clean(project.dir.path(), &["lib.py", "net.py", "pyproject.toml"]);
}

/// `fake_weights = True`: a 10.7 B-parameter model (43 GB of float32) is built under
/// `FakeTensorMode` and traced without allocating its weights; `export` refuses to write a
/// `.pt2` of it and says why, leaving nothing on disk.
#[test]
fn a_model_with_fake_weights_is_traced_without_its_weights_and_never_written() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let big = r#"import torch
from torch.export import Dim

fake_weights = True


class Big(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(*[torch.nn.Linear(8192, 8192) for _ in range(160)])

    def forward(self, x):
        return self.layers(x).relu()


model = Big().eval()
example_args = (torch.randn(4, 8192),)
dynamic_shapes = {"x": {0: Dim("batch")}}
"#;
    let project = Project::new("memory_limit = 4096\n", &[("big.py", big)]);
    let check = project.check_traced(python, "big.py");
    assert_eq!(check.code, 0, "{check:#?}");
    assert_eq!(check.stdout.trim(), "[]", "{check:#?}");

    let result = project.export(python, &["big.py"]);
    assert_eq!(result.code, 1, "{result:#?}");
    assert!(
        result.stdout.contains("big.py:16:1: PT503")
            && result.stdout.contains("fake weights")
            && result.stdout.contains("no weights"),
        "{}",
        result.stdout
    );
    project.assert_clean(project.dir.path(), &["big.py", "pyproject.toml"]);
}

/// The same 43 GB model without `fake_weights`: its real build stops once its parameters pass
/// half the memory the job may use (here `memory_limit = 4096`), and it is built again with fake
/// weights, so the trace reports what the exporter finds instead of running out of memory;
/// `export` refuses and says the parameters would not fit.
#[test]
fn a_model_too_large_for_memory_is_traced_with_fake_weights_without_being_asked() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let big = r#"import torch
from torch.export import Dim


class Big(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(*[torch.nn.Linear(8192, 8192) for _ in range(160)])

    def forward(self, x):
        y = self.layers(x).relu()
        if x.shape[0] > 8:
            return y
        return -y


model = Big().eval()
example_args = (torch.randn(4, 8192),)
dynamic_shapes = {"x": {0: Dim("batch")}}
"#;
    let project = Project::new("memory_limit = 4096\n", &[("big.py", big)]);
    let check = project.check_traced(python, "big.py");
    assert_eq!(check.code, 1, "{check:#?}");
    let report: serde_json::Value = serde_json::from_str(&check.stdout).unwrap();
    let found: Vec<(u64, &str, &str)> = report
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["line"].as_u64().unwrap(),
                d["code"].as_str().unwrap(),
                d["source"].as_str().unwrap(),
            )
        })
        .collect();
    // The exporter's verdict on the guard of the dynamic batch, not an out-of-memory PT502.
    assert!(
        found
            .iter()
            .any(|(_, code, source)| *code == "PT401" && source.ends_with("trace")),
        "{check:#?}"
    );
    assert!(
        !found.iter().any(|(_, code, _)| *code == "PT502"),
        "{check:#?}"
    );

    let result = project.export(python, &["big.py"]);
    assert_eq!(result.code, 1, "{result:#?}");
    assert!(
        result.stdout.contains("fake weights") && result.stdout.contains("would not fit in memory"),
        "{}",
        result.stdout
    );
    project.assert_clean(project.dir.path(), &["big.py", "pyproject.toml"]);
}

#[test]
fn a_program_that_disagrees_with_eager_is_written_only_with_allow_divergence() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let counter = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/rules/PT601/counter_on_module.py"),
    )
    .unwrap();
    let project = Project::new("", &[("counter.py", &counter)]);
    let result = project.export(python, &["counter.py"]);
    assert_eq!(result.code, 1, "{result:#?}");
    assert!(
        result.stdout.starts_with("counter.py:16:9: PT601 "),
        "{}",
        result.stdout
    );
    assert!(
        result.stderr.contains("pass --allow-divergence"),
        "{}",
        result.stderr
    );
    project.assert_clean(project.dir.path(), &["counter.py", "pyproject.toml"]);

    let result = project.export(python, &["counter.py", "--allow-divergence"]);
    assert_eq!(result.code, 0, "{result:#?}");
    assert!(project.path("counter.pt2").is_file(), "{result:#?}");
    assert!(
        result
            .stderr
            .contains("counter.py:16: PT601 (written anyway: --allow-divergence)"),
        "{}",
        result.stderr
    );
}
