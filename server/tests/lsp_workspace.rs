//! Whole-program analysis in the editor, through the real binary (`pt2lsp serve` over stdio):
//! the files an entrypoint's analysis reads are the open buffers, not the disk, and an edit to
//! one file re-analyses and re-publishes the open files that depend on it.
//!
//! The package is `fixtures/projects/three_files`: `export_net.py` exports `mymodels.net.Net`
//! with the batch declared dynamic (`Dim("batch")`, no bounds); `mymodels/heads.py:11` guards
//! the batch size (PT401, because the entry file declares it dynamic). No edit here is saved,
//! so the files on disk keep the guard and the unbounded `Dim` throughout.

mod common;
#[path = "support/tree.rs"]
mod tree;
use tree::copy_tree;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{TestClient, file_uri};
use serde_json::{Value, json};
use tokio::process::Child;

const GUARD: &str = "        if h.shape[0] > 4:  # error[PT401]\n            return self.out(h)\n";

/// A copy of the package in a temporary directory (canonical, so paths compare as the server
/// resolves them).
fn package() -> (tempfile::TempDir, PathBuf) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects/three_files");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    copy_tree(&fixture, &root);
    (dir, root)
}

/// A server on `root`, its workspace scan finished (the import graph is built from it).
async fn served(root: &Path) -> (Child, TestClient) {
    let (child, mut client) = common::spawn_server(Stdio::inherit());
    let response = client.initialize(Some(root), json!({})).await;
    assert!(response.get("result").is_some(), "{response}");
    client.scanned().await;
    (child, client)
}

/// A server on `root` for a client that pulls diagnostics and can be told to pull again.
async fn served_pulling(root: &Path) -> (Child, TestClient) {
    let capabilities = json!({
        "window": {"workDoneProgress": true},
        "workspace": {"diagnostics": {"refreshSupport": true}},
        "textDocument": {"diagnostic": {"dynamicRegistration": false}}
    });
    served_with(root, json!({}), capabilities).await
}

/// A server on `root` initialised with `options` for a client with `capabilities`, its
/// workspace scan finished.
async fn served_with(root: &Path, options: Value, capabilities: Value) -> (Child, TestClient) {
    let (child, mut client) = common::spawn_server(Stdio::inherit());
    let root_uri = file_uri(root);
    let response = client
        .request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": root_uri,
                "workspaceFolders": [{"uri": root_uri, "name": "root"}],
                "initializationOptions": options,
                "capabilities": capabilities
            }),
        )
        .await;
    assert!(response.get("result").is_some(), "{response}");
    client.notify("initialized", json!({})).await;
    client.scanned().await;
    (child, client)
}

fn is_publication(message: &Value, uri: &str) -> bool {
    message["method"] == "textDocument/publishDiagnostics" && message["params"]["uri"] == uri
}

/// Reads every publication for `uri` until none comes for a second, so the next one seen is
/// caused by what the test does next.
async fn quiet(client: &mut TestClient, uri: &str) {
    while !client
        .wait_for_none(|message| is_publication(message, uri))
        .await
    {
        client
            .wait_for(|message| is_publication(message, uri))
            .await;
    }
}

/// (code, 1-based line) of each diagnostic.
fn found(diagnostics: &[Value]) -> Vec<(String, u64)> {
    diagnostics
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_owned(),
                d["range"]["start"]["line"].as_u64().unwrap() + 1,
            )
        })
        .collect()
}

/// Waits for the first publication for `uri` at `version` whose diagnostics are `expected`,
/// and fails with what was published instead if none comes.
async fn settles(client: &mut TestClient, uri: &str, version: i32, expected: &[(&str, u64)]) {
    let expected: Vec<(String, u64)> = expected
        .iter()
        .map(|(code, line)| ((*code).to_owned(), *line))
        .collect();
    let mut seen = Vec::new();
    for _ in 0..8 {
        let diagnostics = found(&client.diagnostics(uri, version).await);
        if diagnostics == expected {
            return;
        }
        seen.push(diagnostics);
    }
    panic!("{uri} v{version} never published {expected:?}; saw {seen:?}");
}

async fn change(client: &TestClient, uri: &str, version: i32, text: &str) {
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}]
            }),
        )
        .await;
}

/// The next publication for `uri`, which must come.
async fn republished(client: &mut TestClient, uri: &str) -> Value {
    client
        .wait_for(|message| is_publication(message, uri))
        .await["params"]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsaved_edit_to_a_head_changes_its_diagnostics_and_republishes_the_entry_file() {
    let (_dir, root) = package();
    let (mut child, mut client) = served(&root).await;
    let entry = root.join("export_net.py");
    let entry_uri = file_uri(&entry);
    let heads = root.join("mymodels/heads.py");
    let heads_uri = file_uri(&heads);
    let guarded = std::fs::read_to_string(&heads).unwrap();
    assert!(guarded.contains(GUARD), "the fixture changed: {guarded}");

    client
        .open(&entry_uri, 1, &std::fs::read_to_string(&entry).unwrap())
        .await;
    client.open(&heads_uri, 1, &guarded).await;
    settles(&mut client, &heads_uri, 1, &[("PT401", 11)]).await;
    // The entry file's `Dim` carries the guard's fix (an info companion).
    settles(&mut client, &entry_uri, 1, &[("PT401", 10)]).await;
    quiet(&mut client, &entry_uri).await;

    // The guard goes, unsaved: the disk still has it, the analysis must not (nor the
    // companion on the entry file's `Dim`).
    let unguarded = guarded.replace(GUARD, "");
    change(&client, &heads_uri, 2, &unguarded).await;
    settles(&mut client, &heads_uri, 2, &[]).await;
    let entry_published = republished(&mut client, &entry_uri).await;
    assert_eq!(entry_published["version"], 1, "{entry_published:#}");
    assert_eq!(
        entry_published["diagnostics"],
        json!([]),
        "{entry_published:#}"
    );
    assert_eq!(std::fs::read_to_string(&heads).unwrap(), guarded);
    quiet(&mut client, &entry_uri).await;

    // The guard comes back, still unsaved.
    change(&client, &heads_uri, 3, &guarded).await;
    settles(&mut client, &heads_uri, 3, &[("PT401", 11)]).await;
    let entry_published = republished(&mut client, &entry_uri).await;
    assert_eq!(entry_published["version"], 1, "{entry_published:#}");

    client.shutdown_and_exit().await;
    child.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsaved_bound_on_the_entry_files_dim_clears_the_guard_in_the_open_head() {
    let (_dir, root) = package();
    let (mut child, mut client) = served(&root).await;
    let entry = root.join("export_net.py");
    let entry_uri = file_uri(&entry);
    let heads = root.join("mymodels/heads.py");
    let heads_uri = file_uri(&heads);
    let declared = std::fs::read_to_string(&entry).unwrap();

    client.open(&entry_uri, 1, &declared).await;
    client
        .open(&heads_uri, 1, &std::fs::read_to_string(&heads).unwrap())
        .await;
    settles(&mut client, &heads_uri, 1, &[("PT401", 11)]).await;
    quiet(&mut client, &heads_uri).await;

    // With `min=5`, `h.shape[0] > 4` always holds: the guard no longer decides anything. The
    // head's own version does not change, yet its diagnostics must.
    let bounded = declared.replace("Dim(\"batch\")", "Dim(\"batch\", min=5)");
    assert_ne!(bounded, declared);
    change(&client, &entry_uri, 2, &bounded).await;
    settles(&mut client, &heads_uri, 1, &[]).await;

    // Back to the unbounded `Dim`: the guard is a problem again.
    change(&client, &entry_uri, 3, &declared).await;
    settles(&mut client, &heads_uri, 1, &[("PT401", 11)]).await;

    // Closing the entry file unsaved: the head, unchanged, is analysed again with the file on
    // disk, where the `Dim` is unbounded.
    change(&client, &entry_uri, 4, &bounded).await;
    settles(&mut client, &heads_uri, 1, &[]).await;
    client
        .notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": entry_uri}}),
        )
        .await;
    settles(&mut client, &heads_uri, 1, &[("PT401", 11)]).await;

    client.shutdown_and_exit().await;
    child.wait().await.unwrap();
}

/// `textDocument/diagnostic` for `uri`: (code, 1-based line) of each item.
async fn pull(client: &mut TestClient, uri: &str) -> Vec<(String, u64)> {
    let pulled = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": uri}}),
        )
        .await;
    found(pulled["result"]["items"].as_array().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pulling_client_is_told_to_pull_again_and_pulls_the_dependents_new_diagnostics() {
    let (_dir, root) = package();
    let (mut child, mut client) = served_pulling(&root).await;
    let entry = root.join("export_net.py");
    let entry_uri = file_uri(&entry);
    let heads = root.join("mymodels/heads.py");
    let heads_uri = file_uri(&heads);
    let declared = std::fs::read_to_string(&entry).unwrap();
    client.open(&entry_uri, 1, &declared).await;
    client
        .open(&heads_uri, 1, &std::fs::read_to_string(&heads).unwrap())
        .await;
    assert_eq!(
        pull(&mut client, &heads_uri).await,
        [("PT401".to_owned(), 11)]
    );

    // Pulled at once after the entry file's edit, whether or not the head's re-analysis has
    // ended: never the guard the edit made moot.
    let bounded = declared.replace("Dim(\"batch\")", "Dim(\"batch\", min=5)");
    change(&client, &entry_uri, 2, &bounded).await;
    assert_eq!(pull(&mut client, &heads_uri).await, []);
    client
        .wait_for(|message| message["method"] == "workspace/diagnostic/refresh")
        .await;
    assert_eq!(pull(&mut client, &heads_uri).await, []);

    client.shutdown_and_exit().await;
    child.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsaved_import_in_the_entry_file_brings_a_new_module_into_its_program() {
    let (_dir, root) = package();
    // A head no file imports yet: alone, its guard is on a size it cannot know is dynamic.
    let tail = root.join("mymodels/tail.py");
    std::fs::write(
        &tail,
        "from torch import nn\n\n\nclass Tail(nn.Module):\n    def forward(self, x):\n        if x.shape[0] > 2:\n            return x\n        return x.relu()\n",
    )
    .unwrap();
    let (mut child, mut client) = served(&root).await;
    let entry = root.join("export_net.py");
    let entry_uri = file_uri(&entry);
    let tail_uri = file_uri(&tail);
    let declared = std::fs::read_to_string(&entry).unwrap();
    client.open(&entry_uri, 1, &declared).await;
    client
        .open(&tail_uri, 1, &std::fs::read_to_string(&tail).unwrap())
        .await;
    settles(&mut client, &tail_uri, 1, &[("PT402", 6)]).await;

    // The entry file exports the tail instead, unsaved: the import graph follows the buffer.
    let exports_tail = declared
        .replace(
            "from mymodels.net import Net",
            "from mymodels.tail import Tail",
        )
        .replace("model = Net().eval()", "model = Tail().eval()");
    assert_ne!(exports_tail, declared);
    change(&client, &entry_uri, 2, &exports_tail).await;
    settles(&mut client, &tail_uri, 1, &[("PT401", 6)]).await;

    change(&client, &entry_uri, 3, &declared).await;
    settles(&mut client, &tail_uri, 1, &[("PT402", 6)]).await;

    // Closed unsaved: the index takes the entry file's imports from disk again.
    change(&client, &entry_uri, 4, &exports_tail).await;
    settles(&mut client, &tail_uri, 1, &[("PT401", 6)]).await;
    client
        .notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": entry_uri}}),
        )
        .await;
    settles(&mut client, &tail_uri, 1, &[("PT402", 6)]).await;

    client.shutdown_and_exit().await;
    child.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_entry_file_changed_on_disk_is_read_again() {
    let (_dir, root) = package();
    let (mut child, mut client) = served(&root).await;
    let entry = root.join("export_net.py");
    let heads = root.join("mymodels/heads.py");
    let heads_uri = file_uri(&heads);
    let declared = std::fs::read_to_string(&entry).unwrap();
    let guarded = std::fs::read_to_string(&heads).unwrap();
    client.open(&heads_uri, 1, &guarded).await;
    settles(&mut client, &heads_uri, 1, &[("PT401", 11)]).await;

    // Saved by another program, and the client's file watcher says so: the head, open and
    // unchanged, is analysed again.
    let bounded = declared.replace("Dim(\"batch\")", "Dim(\"batch\", min=5)");
    std::fs::write(&entry, &bounded).unwrap();
    client
        .notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": [{"uri": file_uri(&entry), "type": 2}]}),
        )
        .await;
    settles(&mut client, &heads_uri, 1, &[]).await;

    // Changed back with no notification (a client without file watching): the next edit of
    // the head reads the file again.
    std::fs::write(&entry, &declared).unwrap();
    change(&client, &heads_uri, 2, &guarded).await;
    settles(&mut client, &heads_uri, 2, &[("PT401", 11)]).await;

    client.shutdown_and_exit().await;
    child.wait().await.unwrap();
}

/// A library installed for the configured interpreter, followed in the editor: the problem
/// inside it is published on the open file's line that calls it, with the library's line as
/// related information; an edit that stops calling it clears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_problem_inside_an_installed_library_is_published_on_the_calling_line() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects/installed_library");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    copy_tree(&fixture, &root);
    let python = root.join("venv/bin/python");
    let options = json!({"python": python.to_str().unwrap(), "trace": "off"});
    let capabilities = json!({
        "window": {"workDoneProgress": true},
        "textDocument": {"publishDiagnostics": {"relatedInformation": true}}
    });
    let (mut child, mut client) = served_with(&root, options, capabilities).await;

    let model = root.join("detector/model.py");
    let uri = file_uri(&model);
    let text = std::fs::read_to_string(&model).unwrap();
    client.open(&uri, 1, &text).await;
    let diagnostics = client.diagnostics(&uri, 1).await;
    assert_eq!(
        found(&diagnostics),
        [("PT101".to_owned(), 7), ("PT103".to_owned(), 7)],
        "{diagnostics:?}"
    );
    let related: Vec<(String, u64)> = diagnostics[0]["relatedInformation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["location"]["uri"].as_str().unwrap().to_owned(),
                r["location"]["range"]["start"]["line"].as_u64().unwrap() + 1,
            )
        })
        .collect();
    let boxes = root.join("venv/lib/python3.11/site-packages/detlib/ops/boxes.py");
    assert_eq!(
        related,
        [
            (file_uri(&root.join("export_head.py")), 6),
            (file_uri(&boxes), 16),
        ]
    );
    assert_eq!(diagnostics[0]["severity"], 1, "an error");
    assert_eq!(
        diagnostics[1]["severity"], 2,
        "a warning: on a branch not decided"
    );

    change(
        &client,
        &uri,
        2,
        &text.replace("filter_boxes(boxes, scores, labels)", "boxes"),
    )
    .await;
    settles(&mut client, &uri, 2, &[]).await;

    client.shutdown_and_exit().await;
    child.wait().await.unwrap();
}

/// The editor says what `pt2lsp check` says of code no entrypoint exports: a warning that
/// names why, not an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_no_entrypoint_exports_is_a_warning_in_the_editor_too() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let files = [
        ("pkg/__init__.py", ""),
        (
            "pkg/loss.py",
            "import torch\nimport torch.nn as nn\n\n\nclass HungarianMatcher(nn.Module):\n    def forward(self, outputs, targets):\n        cost = torch.cdist(outputs, targets)\n        if cost.max() > 10:\n            cost = cost / cost.max()\n        return cost.argmin(-1)\n",
        ),
        (
            "pkg/net.py",
            "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n        return self.fc(x)\n",
        ),
        (
            "export.py",
            "import torch\nfrom pkg.net import Net\n\ntorch.export.export(Net().eval(), (torch.randn(2, 4),))\n",
        ),
    ];
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let (mut child, mut client) = served(&root).await;
    let loss = root.join("pkg/loss.py");
    let uri = file_uri(&loss);
    client
        .open(&uri, 1, &std::fs::read_to_string(&loss).unwrap())
        .await;
    let diagnostics = client.diagnostics(&uri, 1).await;
    assert_eq!(found(&diagnostics), [("PT101".to_owned(), 8)]);
    assert_eq!(diagnostics[0]["severity"], 2, "{diagnostics:#?}");
    assert!(
        diagnostics[0]["message"]
            .as_str()
            .unwrap()
            .contains("no entrypoint exports this"),
        "{diagnostics:#?}"
    );
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}

/// Same answer however asked, in the editor: every multi-file fixture project, each file opened
/// alone in a fresh server, then all of them in one, publishes for each file what
/// `pt2lsp check .` reports for it (code, line, severity, message).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_gives_each_file_what_check_gives_it() {
    let projects = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(&projects)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    fixtures.sort();
    let mut compared = 0;
    for fixture in fixtures {
        // Installed libraries are followed only with an interpreter named: neither side has one.
        if fixture.join("venv").exists() {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        copy_tree(&fixture, &root);
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
            .args(["check", "--format", "json", "--exit-zero", "."])
            .current_dir(&root)
            .env_remove("VIRTUAL_ENV")
            .output()
            .unwrap();
        let report: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
        let mut files: Vec<PathBuf> = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(at) = stack.pop() {
            for entry in std::fs::read_dir(&at).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|ext| ext == "py") {
                    files.push(path);
                }
            }
        }
        files.sort();
        let expected = |file: &Path| -> Vec<String> {
            let shown = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let mut found: Vec<String> = report
                .iter()
                .filter(|item| item["file"] == shown.as_str())
                .map(|item| {
                    let severity = match item["severity"].as_str().unwrap() {
                        "error" => 1,
                        "warning" => 2,
                        _ => 3,
                    };
                    format!(
                        "{} {} {severity} {}",
                        item["line"],
                        item["code"].as_str().unwrap(),
                        item["message"].as_str().unwrap()
                    )
                })
                .collect();
            found.sort();
            found
        };
        let published = |diagnostics: &[Value]| -> Vec<String> {
            let mut found: Vec<String> = diagnostics
                .iter()
                .map(|d| {
                    format!(
                        "{} {} {} {}",
                        d["range"]["start"]["line"].as_u64().unwrap() + 1,
                        d["code"].as_str().unwrap_or_default(),
                        d["severity"],
                        d["message"].as_str().unwrap()
                    )
                })
                .collect();
            found.sort();
            found
        };
        for file in &files {
            let (mut child, mut client) = served(&root).await;
            let uri = file_uri(file);
            client
                .open(&uri, 1, &std::fs::read_to_string(file).unwrap())
                .await;
            let diagnostics = client.diagnostics(&uri, 1).await;
            compared += expected(file).len();
            assert_eq!(
                published(&diagnostics),
                expected(file),
                "{}: {} opened alone",
                fixture.display(),
                file.display()
            );
            client.shutdown_and_exit().await;
            let _ = child.wait().await;
        }
        let (mut child, mut client) = served(&root).await;
        for file in &files {
            client
                .open(&file_uri(file), 1, &std::fs::read_to_string(file).unwrap())
                .await;
        }
        for file in &files {
            let diagnostics = client.diagnostics(&file_uri(file), 1).await;
            assert_eq!(
                published(&diagnostics),
                expected(file),
                "{}: {} opened with the others",
                fixture.display(),
                file.display()
            );
        }
        client.shutdown_and_exit().await;
        let _ = child.wait().await;
    }
    assert!(compared >= 10, "only {compared} diagnostics compared");
}
