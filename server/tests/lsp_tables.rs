//! Entrypoint tables in the editor (`pt2lsp serve` over stdio, real torch): a save of a model
//! file traces the tables whose expressions build that model; the model's failure is published
//! on its line, and a string that cannot be evaluated on its line in `pyproject.toml`, as
//! `check --trace` reports them (server/tests/tracer_tables.rs).
//!
//! The project is `server/tests/data/table_expressions` (see its `pyproject.toml`).
//!
//! The problems of the strings that need no run (no `model`, not `module:EXPRESSION`, an
//! expression that does not parse, a module found nowhere) are the same from `pt2lsp check` in
//! every format and from the editor: one function judges them for both.

mod common;
#[path = "support/tree.rs"]
mod tree;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::file_uri;
use serde_json::{Value, json};

/// Starting torch and tracing four entrypoints, on a machine the other tests share.
const TRACE_WAIT: Duration = Duration::from_secs(300);

/// (code, 1-based line, source in data, message) of each diagnostic of a publication.
fn found(params: &Value) -> Vec<(String, u64, String, String)> {
    params["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_owned(),
                d["range"]["start"]["line"].as_u64().unwrap() + 1,
                d["data"]["source"].as_str().unwrap_or("static").to_owned(),
                d["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Whether a publication has `code` from the trace on the 1-based `line`.
fn traced_at(params: &Value, code: &str, line: u64) -> bool {
    found(params)
        .iter()
        .any(|(c, l, source, _)| c == code && *l == line && source.ends_with("trace"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_traces_the_tables_and_a_bad_string_is_published_on_its_pyproject_line() {
    let python = std::env::var("PT2LSP_PYTHON")
        .expect("PT2LSP_PYTHON must name a Python with torch (scripts/test.sh sets it)");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    tree::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/table_expressions"),
        &root,
    );
    let (mut child, mut client) = common::spawn_server(Stdio::inherit());
    let response = client
        .initialize(Some(&root), json!({"python": python, "timeout": 120}))
        .await;
    assert!(response.get("result").is_some(), "{response}");
    client.scanned().await;
    let model = root.join("tablepkg/model.py");
    let model_uri = file_uri(&model);
    let pyproject_uri = file_uri(&root.join("pyproject.toml"));
    client
        .open(&model_uri, 1, &std::fs::read_to_string(&model).unwrap())
        .await;
    // As typed, before any trace: the static pass reads the tables' `Dim`s as `check` does,
    // so the guard on the batch `capped` declares dynamic is PT401, not "static shape".
    let statics = client.diagnostics(&model_uri, 1).await;
    let codes: Vec<(String, u64)> = statics
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_owned(),
                d["range"]["start"]["line"].as_u64().unwrap() + 1,
            )
        })
        .collect();
    assert!(codes.contains(&("PT401".to_owned(), 14)), "{statics:#?}");
    client
        .notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": model_uri}}),
        )
        .await;
    // Both bad strings, each on its own `model` line, from the trace.
    let published = client
        .wait_for_within(TRACE_WAIT, |message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == pyproject_uri
                && traced_at(&message["params"], "PT503", 25)
                && traced_at(&message["params"], "PT503", 31)
        })
        .await;
    let mut diagnostics = found(&published["params"]);
    diagnostics.sort_by_key(|(_, line, _, _)| *line);
    assert_eq!(diagnostics.len(), 2, "{diagnostics:#?}");
    assert!(
        diagnostics[0]
            .3
            .contains("tablepkg:build_model(ModelConfg(hidden=8))")
            && diagnostics[0].3.contains("NameError"),
        "{diagnostics:#?}"
    );
    assert!(
        diagnostics[1].3.contains("hidden must be positive, not -1"),
        "{diagnostics:#?}"
    );
    // The model built by `capped`'s expression fails on the model's own line.
    client
        .wait_for_within(TRACE_WAIT, |message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == model_uri
                && traced_at(&message["params"], "PT401", 14)
        })
        .await;
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}

/// Tables whose problems need no run, appended to the project's: an expression that does not
/// parse, a string that is not `module:EXPRESSION`, a module found nowhere, a table with no
/// `model`; and one whose module is an installed library's, which is no problem.
const BAD_TABLES: &str = r#"
[[tool.pt2lsp.entrypoints]]
name = "broken"
model = "tablepkg:build_model(ModelConfig(hidden=8)"
example-args = "tablepkg"
dynamic-shapes = "tablepkgg.spec:DYNAMIC_SHAPES"

[[tool.pt2lsp.entrypoints]]
name = "installed"
model = "installedlib.models:build()"

[[tool.pt2lsp.entrypoints]]
name = "nomodel"
"#;

/// A virtual environment with one library installed (`installedlib`) and no interpreter that
/// runs: the static judgement looks for modules on disk, it never starts Python.
fn environment(dir: &Path) -> std::path::PathBuf {
    let site = dir.join("venv/lib/python3.12/site-packages/installedlib");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("__init__.py"), "").unwrap();
    std::fs::create_dir_all(dir.join("venv/bin")).unwrap();
    let python = dir.join("venv/bin/python");
    std::fs::write(&python, "").unwrap();
    python
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_problems_that_need_no_run_are_the_same_in_check_and_the_editor() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("project");
    tree::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/table_expressions"),
        &root,
    );
    let pyproject = root.join("pyproject.toml");
    let text = std::fs::read_to_string(&pyproject).unwrap() + BAD_TABLES;
    std::fs::write(&pyproject, text).unwrap();
    let python = environment(dir.path());
    let check = |format: &str| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
            .args(["check", "--format", format, "--python"])
            .arg(&python)
            .current_dir(&root)
            .env_remove("VIRTUAL_ENV")
            .env("PT2LSP_NO_CACHE", "1")
            .output()
            .unwrap();
        // An error in the configuration file fails the check as any error does.
        assert_eq!(
            output.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let text = check("text");
    let on_pyproject: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("pyproject.toml:"))
        .collect();
    insta::assert_snapshot!(on_pyproject.join("\n"), @r#"
    pyproject.toml:36:1: PT503 [error] entrypoint `broken`: `model = "tablepkg:build_model(ModelConfig(hidden=8)"`: `build_model(ModelConfig(hidden=8)` is not a Python expression: unexpected EOF while parsing
    pyproject.toml:37:1: PT503 [error] entrypoint `broken`: `example-args = "tablepkg"` is not a reference; write `module:expression`, e.g. `models.encoder:build_model()`
    pyproject.toml:38:1: PT503 [error] entrypoint `broken`: `dynamic-shapes` names the module `tablepkgg.spec`, which is found neither in the project nor in the interpreter's installed libraries
    pyproject.toml:44:1: PT503 [error] entrypoint `nomodel` has no `model` to trace (`model = "module:build()"`)
    "#);
    let json: Vec<Value> = serde_json::from_str(&check("json")).unwrap();
    let mut from_check: Vec<(u64, String)> = json
        .iter()
        .filter(|item| item["file"] == "pyproject.toml")
        .map(|item| {
            assert_eq!(item["code"], "PT503", "{item:#}");
            (
                item["line"].as_u64().unwrap(),
                item["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    from_check.sort();
    assert_eq!(from_check.len(), 4, "{from_check:#?}");
    let sarif: Value = serde_json::from_str(&check("sarif")).unwrap();
    let in_sarif = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|result| {
            result["ruleId"] == "PT503"
                && result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                    .as_str()
                    .is_some_and(|uri| uri.ends_with("pyproject.toml"))
        })
        .count();
    assert_eq!(in_sarif, 4, "{sarif:#}");

    // The editor publishes the same problems on `pyproject.toml` once it has indexed the
    // workspace, with no file opened or saved, and with tracing off: they need no run.
    let (mut child, mut client) = common::spawn_server(Stdio::inherit());
    let response = client
        .initialize(
            Some(&root),
            json!({"python": python, "timeout": 5, "trace": "off"}),
        )
        .await;
    assert!(response.get("result").is_some(), "{response}");
    let pyproject_uri = file_uri(&pyproject);
    let published = client
        .wait_for_within(Duration::from_secs(60), |message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == pyproject_uri
        })
        .await;
    let mut from_editor: Vec<(u64, String)> = found(&published["params"])
        .into_iter()
        .map(|(code, line, source, message)| {
            assert_eq!((code.as_str(), source.as_str()), ("PT503", "static"));
            (line, message)
        })
        .collect();
    from_editor.sort();
    assert_eq!(from_editor, from_check);
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}

/// A guard only the trace sees (through `globals()`), on a `Dim` written inside the table's
/// `dynamic-shapes` string.
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

/// `text` with LSP text edits applied (ASCII: UTF-16 columns are byte columns).
fn apply_edits(text: &str, edits: &[Value]) -> String {
    let offset = |position: &Value| {
        let line = position["line"].as_u64().unwrap() as usize;
        let character = position["character"].as_u64().unwrap() as usize;
        text.split_inclusive('\n')
            .take(line)
            .map(str::len)
            .sum::<usize>()
            + character
    };
    let mut edits: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|edit| {
            (
                offset(&edit["range"]["start"]),
                offset(&edit["range"]["end"]),
                edit["newText"].as_str().unwrap(),
            )
        })
        .collect();
    edits.sort_by_key(|(start, ..)| std::cmp::Reverse(*start));
    let mut out = text.to_owned();
    for (start, end, new) in edits {
        out.replace_range(start..end, new);
    }
    out
}

/// torch's fix of a `Dim` written inside a table string is published on the table's line in
/// `pyproject.toml` with the edit of the string, as `check --trace` makes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torch_s_fix_of_a_dim_in_a_table_string_is_published_on_the_string() {
    let python = std::env::var("PT2LSP_PYTHON")
        .expect("PT2LSP_PYTHON must name a Python with torch (scripts/test.sh sets it)");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    tree::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/table_expressions"),
        &root,
    );
    let model = root.join("tablepkg/model.py");
    std::fs::write(&model, GUARD_ONLY_THE_TRACE_SEES).unwrap();
    let pyproject = root.join("pyproject.toml");
    let table = "[project]\nname = \"inline-dims\"\nversion = \"0.1.0\"\n\n[tool.pt2lsp]\ntimeout = 120\n\n\
                 [[tool.pt2lsp.entrypoints]]\nname = \"capped\"\n\
                 model = \"tablepkg:build_model(ModelConfig(hidden=8))\"\n\
                 example-args = \"tablepkg:(torch.randn(8, 8),)\"\n\
                 dynamic-shapes = \"tablepkg.spec:{'x': {0: Dim('batch', min=2, max=64)}}\"\n";
    std::fs::write(&pyproject, table).unwrap();
    let (mut child, mut client) = common::spawn_server(Stdio::inherit());
    let response = client
        .initialize(Some(&root), json!({"python": python, "timeout": 120}))
        .await;
    assert!(response.get("result").is_some(), "{response}");
    client.scanned().await;
    let model_uri = file_uri(&model);
    let pyproject_uri = file_uri(&pyproject);
    client
        .open(&model_uri, 1, &std::fs::read_to_string(&model).unwrap())
        .await;
    client
        .notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": model_uri}}),
        )
        .await;
    let published = client
        .wait_for_within(TRACE_WAIT, |message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == pyproject_uri
                && traced_at(&message["params"], "PT401", 12)
        })
        .await;
    let companion = published["params"]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "PT401")
        .unwrap()
        .clone();
    let edits = companion["data"]["edits"]
        .as_array()
        .unwrap_or_else(|| panic!("no edits: {companion:#}"));
    let fixed = apply_edits(table, edits);
    assert!(
        fixed
            .contains("dynamic-shapes = \"tablepkg.spec:{'x': {0: Dim('batch', min=5, max=64)}}\""),
        "{fixed}"
    );
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}

/// The static pass's fix of a `Dim` written inside a table string is published on the string
/// in `pyproject.toml` with its edit, as `pt2lsp check` shows it, before any trace (this
/// interpreter cannot run one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_static_fix_of_a_dim_in_a_table_string_is_published_on_the_string() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("project");
    tree::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/table_expressions"),
        &root,
    );
    let pyproject = root.join("pyproject.toml");
    let table = "[project]\nname = \"inline-dims\"\nversion = \"0.1.0\"\n\n[tool.pt2lsp]\ntimeout = 5\n\n\
                 [[tool.pt2lsp.entrypoints]]\nname = \"capped\"\n\
                 model = \"tablepkg:build_model(ModelConfig(hidden=8, max_batch=4))\"\n\
                 example-args = \"tablepkg:(torch.randn(8, 8),)\"\n\
                 dynamic-shapes = \"tablepkg.spec:{'x': {0: Dim('batch', min=2, max=64)}}\"\n";
    std::fs::write(&pyproject, table).unwrap();
    let python = environment(dir.path());
    let (mut child, mut client) = common::spawn_server(Stdio::inherit());
    let response = client
        .initialize(Some(&root), json!({"python": python, "timeout": 5}))
        .await;
    assert!(response.get("result").is_some(), "{response}");
    client.scanned().await;
    let model = root.join("tablepkg/model.py");
    let model_uri = file_uri(&model);
    let pyproject_uri = file_uri(&pyproject);
    client
        .open(&model_uri, 1, &std::fs::read_to_string(&model).unwrap())
        .await;
    client
        .notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": model_uri}}),
        )
        .await;
    let published = client
        .wait_for_within(Duration::from_secs(60), |message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == pyproject_uri
        })
        .await;
    let diagnostics = published["params"]["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    let companion = &diagnostics[0];
    assert_eq!(
        (
            companion["code"].as_str(),
            companion["range"]["start"]["line"].as_u64()
        ),
        (Some("PT401"), Some(11)),
        "{companion:#}"
    );
    let fixed = apply_edits(table, companion["data"]["edits"].as_array().unwrap());
    assert!(fixed.contains("Dim('batch', min=5, max=64)"), "{fixed}");
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}
