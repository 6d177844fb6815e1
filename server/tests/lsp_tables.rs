//! Entrypoint tables in the editor (`pt2lsp serve` over stdio, real torch): a save of a model
//! file traces the tables whose expressions build that model; the model's failure is published
//! on its line, and a string that cannot be evaluated on its line in `pyproject.toml`, as
//! `check --trace` reports them (server/tests/tracer_tables.rs).
//!
//! The project is `server/tests/data/table_expressions` (see its `pyproject.toml`).

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
