//! A package traced through the real binary (`pt2lsp serve` over stdio) with real torch: the
//! trace's failures are published on the files they are in, for an ExportDB-style entry file
//! and for a `[[tool.pt2lsp.entrypoints]]` entry, and cleared when fixed.
//!
//! The package is `fixtures/projects/three_files`: `export_net.py` exports `mymodels.net.Net`
//! with the batch declared dynamic; `mymodels/helpers.py:5` branches on `h.mean() > 0` (PT101)
//! and `mymodels/heads.py:11` on the batch size (PT401).

mod common;
#[path = "support/tree.rs"]
mod tree;
use tree::copy_tree;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{TestClient, file_uri};
use serde_json::{Value, json};
use tokio::process::Child;

/// Starting torch and tracing, on a machine the other tests share.
const TRACE_WAIT: Duration = Duration::from_secs(240);

fn torch_python() -> String {
    std::env::var("PT2LSP_PYTHON")
        .expect("PT2LSP_PYTHON must name a Python with torch (scripts/test.sh sets it)")
}

/// A copy of the package in a temporary directory (canonical, so paths compare as the server
/// resolves them).
fn package() -> (tempfile::TempDir, PathBuf) {
    project("three_files")
}

/// A copy of `fixtures/projects/<name>`, as [`package`] makes it.
fn project(name: &str) -> (tempfile::TempDir, PathBuf) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/projects")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    copy_tree(&fixture, &root);
    (dir, root)
}

fn spawn() -> (Child, TestClient) {
    common::spawn_server(Stdio::inherit())
}

/// A server on `root`, its workspace scan finished (the import graph is built from it).
async fn served(root: &Path) -> (Child, TestClient) {
    let (child, mut client) = spawn();
    let options = json!({"python": torch_python(), "timeout": 120});
    let response = client.initialize(Some(root), options).await;
    assert!(response.get("result").is_some(), "{response}");
    client.scanned().await;
    (child, client)
}

async fn save(client: &TestClient, uri: &str) {
    client
        .notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri}}),
        )
        .await;
}

/// The next trace's end message.
async fn trace_end(client: &mut TestClient) -> String {
    let end = client
        .wait_for_within(TRACE_WAIT, |message| {
            message["method"] == "$/progress"
                && message["params"]["token"]
                    .as_str()
                    .is_some_and(|token| token.starts_with("pt2lsp/trace"))
                && message["params"]["value"]["kind"] == "end"
        })
        .await;
    end["params"]["value"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The newest publication for `uri` among those read so far and within a short wait.
async fn latest(client: &mut TestClient, uri: &str) -> Value {
    let mut last = client
        .wait_for_within(TRACE_WAIT, |message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri
        })
        .await;
    while !client
        .wait_for_none(|message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri
        })
        .await
    {
        last = client
            .wait_for(|message| {
                message["method"] == "textDocument/publishDiagnostics"
                    && message["params"]["uri"] == uri
            })
            .await;
    }
    last["params"].clone()
}

/// (code, 1-based line, source in data) of each diagnostic of a publication.
fn found(params: &Value) -> Vec<(String, u64, String)> {
    params["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_owned(),
                d["range"]["start"]["line"].as_u64().unwrap() + 1,
                d["data"]["source"].as_str().unwrap_or("static").to_owned(),
            )
        })
        .collect()
}

fn traced(params: &Value, code: &str, line: u64) -> bool {
    found(params)
        .iter()
        .any(|(c, l, source)| c == code && *l == line && source.ends_with("trace"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_of_the_entry_file_publishes_failures_on_the_files_they_are_in() {
    let (_dir, root) = package();
    let (mut child, mut client) = served(&root).await;
    let entry = root.join("export_net.py");
    let entry_uri = file_uri(&entry);
    let helpers = root.join("mymodels/helpers.py");
    let helpers_uri = file_uri(&helpers);
    let heads_uri = file_uri(&root.join("mymodels/heads.py"));
    client
        .open(&entry_uri, 1, &std::fs::read_to_string(&entry).unwrap())
        .await;
    // Opening traces nothing by default (`trace = "on-save"`).
    assert!(
        client
            .wait_for_none(|message| message["method"] == "$/progress"
                && message["params"]["token"]
                    .as_str()
                    .is_some_and(|token| token.starts_with("pt2lsp/trace")))
            .await,
        "a trace ran on open"
    );
    save(&client, &entry_uri).await;
    assert_eq!(
        trace_end(&mut client).await,
        "2 problems: mymodels/heads.py:11, mymodels/helpers.py:5"
    );
    let published = latest(&mut client, &helpers_uri).await;
    assert!(traced(&published, "PT101", 5), "{published:#}");
    assert_eq!(published["version"], Value::Null, "not open: {published:#}");
    let published = latest(&mut client, &heads_uri).await;
    assert!(traced(&published, "PT401", 11), "{published:#}");

    // Opened later, the helper shows the trace's finding with its static diagnostics.
    let broken = std::fs::read_to_string(&helpers).unwrap();
    client.open(&helpers_uri, 1, &broken).await;
    let published = latest(&mut client, &helpers_uri).await;
    assert_eq!(published["version"], 1, "{published:#}");
    assert!(traced(&published, "PT101", 5), "{published:#}");

    // Fixed and saved: the entrypoint that imports the helper is traced again, and the
    // helper's problem is gone while the head's stays.
    let fixed = broken.replace("    if h.mean() > 0:  # error[PT101]\n        return h / h.norm(dim=-1, keepdim=True)\n    return h\n", "    return h / h.norm(dim=-1, keepdim=True)\n");
    assert_ne!(fixed, broken);
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": helpers_uri, "version": 2},
                "contentChanges": [{"text": fixed}]
            }),
        )
        .await;
    std::fs::write(&helpers, &fixed).unwrap();
    save(&client, &helpers_uri).await;
    assert_eq!(
        trace_end(&mut client).await,
        "1 problem: mymodels/heads.py:11"
    );
    let published = latest(&mut client, &helpers_uri).await;
    assert_eq!(published["version"], 2, "{published:#}");
    assert!(
        !found(&published)
            .iter()
            .any(|(_, _, source)| source.ends_with("trace")),
        "{published:#}"
    );
    let published = latest(&mut client, &heads_uri).await;
    assert!(traced(&published, "PT401", 11), "{published:#}");
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_entrypoint_is_traced_when_a_file_it_imports_is_saved() {
    let (_dir, root) = package();
    // No file follows the convention: the entrypoint is configured, in a module of its own.
    std::fs::remove_file(root.join("export_net.py")).unwrap();
    std::fs::write(
        root.join("build.py"),
        "import torch\nfrom torch.export import Dim\n\nfrom mymodels.net import Net\n\n\n\
         def build():\n    return Net().eval()\n\n\ndef inputs():\n    return (torch.randn(8, 16),)\n\n\n\
         SHAPES = {\"x\": {0: Dim(\"batch\")}}\n",
    )
    .unwrap();
    let pyproject = root.join("pyproject.toml");
    std::fs::write(
        &pyproject,
        "[tool.pt2lsp]\n\n[[tool.pt2lsp.entrypoints]]\nname = \"net\"\nmodel = \"build:build()\"\n\
         example_args = \"build:inputs()\"\ndynamic_shapes = \"build:SHAPES\"\n\n\
         [[tool.pt2lsp.entrypoints]]\nname = \"typo\"\nmodel = \"mymodels.nett:Net()\"\n",
    )
    .unwrap();
    let (mut child, mut client) = served(&root).await;
    let heads = root.join("mymodels/heads.py");
    let heads_uri = file_uri(&heads);
    let helpers_uri = file_uri(&root.join("mymodels/helpers.py"));
    client
        .open(&heads_uri, 1, &std::fs::read_to_string(&heads).unwrap())
        .await;
    // `build.py` imports `mymodels.net`, which imports the head: saving the head traces `net`.
    save(&client, &heads_uri).await;
    let problems = latest(&mut client, &file_uri(&pyproject)).await;
    assert_eq!(
        found(&problems),
        [("PT503".to_owned(), 11, "static".to_owned())],
        "{problems:#}"
    );
    assert_eq!(
        trace_end(&mut client).await,
        "2 problems: mymodels/heads.py:11, mymodels/helpers.py:5"
    );
    let published = latest(&mut client, &helpers_uri).await;
    assert!(traced(&published, "PT101", 5), "{published:#}");
    let published = latest(&mut client, &heads_uri).await;
    assert_eq!(published["version"], 1, "{published:#}");
    assert!(traced(&published, "PT401", 11), "{published:#}");
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}

/// `fixtures/projects/export_script`, unchanged: `scripts/export.py` builds the model inside
/// `main()` and calls `torch.export.export` there; the package imports its modules relatively
/// (`from .head import Head`). Saving the head traces the script, run to its export call, and
/// the failures land on the package's lines; the script's own save never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_of_a_relatively_imported_module_traces_the_export_script_that_reaches_it() {
    let (_dir, root) = project("export_script");
    let (mut child, mut client) = served(&root).await;
    let head = root.join("mymodels/head.py");
    let head_uri = file_uri(&head);
    let backbone_uri = file_uri(&root.join("mymodels/backbone.py"));
    client
        .open(&head_uri, 1, &std::fs::read_to_string(&head).unwrap())
        .await;
    save(&client, &head_uri).await;
    assert_eq!(
        trace_end(&mut client).await,
        "2 problems: mymodels/backbone.py:13, mymodels/head.py:14"
    );
    let published = latest(&mut client, &head_uri).await;
    assert_eq!(published["version"], 1, "{published:#}");
    assert!(traced(&published, "PT101", 14), "{published:#}");
    let published = latest(&mut client, &backbone_uri).await;
    assert!(traced(&published, "PT401", 13), "{published:#}");
    assert!(!root.join("classifier.pt2").exists());
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}

/// The exporter is ground truth in the editor too: a static PT401 error on an assert that holds
/// (`t <= limit`, `limit = self.config.block_size`, which the script overrides to 64 through
/// `vars()` the static pass does not follow, with `Dim("seq", max=64)`) is published until a
/// trace of the script that reaches it exports, then no longer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_error_the_export_contradicts_leaves_the_editor_after_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/contradicted_gpt"),
        &root,
    );
    let (mut child, mut client) = served(&root).await;
    let model = root.join("gpt/model.py");
    let model_uri = file_uri(&model);
    client
        .open(&model_uri, 1, &std::fs::read_to_string(&model).unwrap())
        .await;
    let published = latest(&mut client, &model_uri).await;
    assert_eq!(
        found(&published),
        [("PT401".to_owned(), 15, "static".to_owned())],
        "the static pass no longer errs here: this test needs another false error"
    );
    save(&client, &model_uri).await;
    assert_eq!(trace_end(&mut client).await, "no problems");
    let published = latest(&mut client, &model_uri).await;
    assert_eq!(published["version"], 1, "{published:#}");
    assert_eq!(found(&published), [], "{published:#}");
    assert!(!root.join("gpt.pt2").exists());
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}

/// A suppression that silences nothing the analysis finds is said to be unused only once an
/// export that succeeded ran its line: before the trace it may be there for what the exporter
/// finds. As `check --trace` says it (`cli.rs`, `suppressions_that_silence_nothing_are_reported_and_fixed`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suppression_is_unused_once_an_export_that_succeeded_ran_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let net = root.join("net.py");
    std::fs::write(&net, QUIET_SUPPRESSIONS).unwrap();
    let (mut child, mut client) = served(&root).await;
    let uri = file_uri(&net);
    client.open(&uri, 1, QUIET_SUPPRESSIONS).await;
    assert_eq!(found(&latest(&mut client, &uri).await), []);
    save(&client, &uri).await;
    assert_eq!(trace_end(&mut client).await, "no problems");
    let published = latest(&mut client, &uri).await;
    assert_eq!(
        found(&published),
        [
            ("PT002".to_owned(), 8, "static".to_owned()),
            ("PT002".to_owned(), 9, "static".to_owned())
        ],
        "{published:#}"
    );
    // The comment that silences the clock read is not unused; the fix removes only the code.
    assert!(
        published["diagnostics"][0]["data"]["fix"]["title"]
            .as_str()
            .is_some_and(|title| title.contains("PT101")),
        "{published:#}"
    );
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}

/// A model that exports, with a suppression of a rule that finds nothing on its line (8), a
/// bare one (9), and one that silences the warning about a clock read (10).
const QUIET_SUPPRESSIONS: &str = "import time\n\nimport torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        y = x * 2  # pt2lsp: ignore[PT101]\n        z = y + 1  # pt2lsp: ignore\n        return z * time.time()  # pt2lsp: ignore[PT601]\n\n\nmodel = Net()\nexample_args = (torch.randn(3, 4),)\n";

/// An interpreter that leaves a mark in `marker` each time it starts, so a test can tell
/// whether the worker was started.
fn marking_python(dir: &Path, marker: &Path) -> String {
    let wrapper = dir.join("python-that-marks");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho started >> '{}'\nexec '{}' \"$@\"\n",
            marker.display(),
            torch_python()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&wrapper, permissions).unwrap();
    wrapper.to_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_replays_a_trace_the_command_line_ran_while_its_files_are_unchanged() {
    let (dir, root) = package();
    let marker = dir.path().join("python-started");
    let python = marking_python(dir.path(), &marker);
    let checked = std::process::Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(["check", "--trace", "--python", &python, "--timeout", "120"])
        .current_dir(&root)
        .env_remove("PT2LSP_NO_CACHE")
        .output()
        .unwrap();
    assert_eq!(checked.status.code(), Some(1), "{checked:?}");
    assert!(marker.exists(), "the command line traced");
    std::fs::remove_file(&marker).unwrap();

    let (mut child, mut client) = spawn();
    let response = client
        .initialize(Some(&root), json!({"python": python, "timeout": 120}))
        .await;
    assert!(response.get("result").is_some(), "{response}");
    let entry = root.join("export_net.py");
    let entry_uri = file_uri(&entry);
    let helpers = root.join("mymodels/helpers.py");
    let helpers_uri = file_uri(&helpers);
    client
        .open(&entry_uri, 1, &std::fs::read_to_string(&entry).unwrap())
        .await;
    save(&client, &entry_uri).await;
    assert_eq!(
        trace_end(&mut client).await,
        "2 problems: mymodels/heads.py:11, mymodels/helpers.py:5 (replayed: its files are \
         unchanged since the last trace)"
    );
    let published = latest(&mut client, &helpers_uri).await;
    assert!(traced(&published, "PT101", 5), "{published:#}");
    assert!(!marker.exists(), "replayed without starting Python");

    // A helper changed on disk and saved: traced for real, and the problem is gone.
    let broken = std::fs::read_to_string(&helpers).unwrap();
    let fixed = broken.replace("    if h.mean() > 0:  # error[PT101]\n        return h / h.norm(dim=-1, keepdim=True)\n    return h\n", "    return h / h.norm(dim=-1, keepdim=True)\n");
    assert_ne!(fixed, broken);
    std::fs::write(&helpers, &fixed).unwrap();
    save(&client, &helpers_uri).await;
    assert_eq!(
        trace_end(&mut client).await,
        "1 problem: mymodels/heads.py:11"
    );
    assert!(marker.exists(), "a changed helper is traced");
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}
