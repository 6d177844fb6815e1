//! Fixes in the language server, in process: quick fixes by applicability, and
//! `source.fixAll.pt2lsp`, which must make the text `pt2lsp check --fix` makes.
//!
//! The fixes are the analyzer's real ones: a data-dependent `if` rewritten as `torch.where` or
//! `torch.cond` (unsafe), and the display-only note on an `elif` chain, which has no rewrite.

mod common;

use std::path::Path;
use std::process::Command;

use common::{TestClient, file_uri};
use serde_json::{Value, json};

const URI: &str = "file:///tmp/pt2lsp-fixes-test/model.py";

/// One `if` with a `torch.where` rewrite (unsafe) and one `elif` chain with none (display-only).
const TWO_BRANCHES: &str = "\
import torch
import torch.nn as nn


class SignFlip(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


class Pick(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            print(\"big\")
            y = x * 2
        elif x.sum() < -1:
            y = x * 3
        else:
            y = x
        return y
";

/// Nested `if`s: the inner one is fixed in a second round, inside the outer one's rewrite.
const NESTED: &str = "\
import torch
import torch.nn as nn


class Nested(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            if x.max() > 1:
                return x * 2
            return x + 1
        return x - 1
";

fn start() -> TestClient {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    tokio::spawn(pt2lsp::in_process::serve(server_read, server_write));
    let (client_read, client_write) = tokio::io::split(client_end);
    TestClient::new(client_read, client_write)
}

async fn started(root: Option<&Path>, options: Value) -> TestClient {
    let mut client = start();
    client.initialize(root, options).await;
    client
}

async fn code_actions(client: &mut TestClient, uri: &str, diagnostics: &[Value]) -> Vec<Value> {
    let response = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": uri},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": diagnostics}
            }),
        )
        .await;
    response["result"].as_array().expect("actions").clone()
}

async fn fix_all(client: &mut TestClient, uri: &str) -> Option<Value> {
    let response = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": uri},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": [], "only": ["source.fixAll"]}
            }),
        )
        .await;
    let actions = response["result"].as_array().expect("actions");
    assert!(actions.len() <= 1, "{actions:#?}");
    actions.first().cloned()
}

/// `text` with an action's edits applied; the tests' texts are ASCII, so UTF-16 columns are
/// byte columns.
fn apply(text: &str, action: &Value) -> String {
    assert!(text.is_ascii());
    let edits = action["edit"]["documentChanges"][0]["edits"]
        .as_array()
        .expect("edits");
    let offset = |position: &Value| {
        let line = position["line"].as_u64().unwrap() as usize;
        let character = position["character"].as_u64().unwrap() as usize;
        text.split_inclusive('\n')
            .take(line)
            .map(str::len)
            .sum::<usize>()
            + character
    };
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|edit| {
            (
                offset(&edit["range"]["start"]),
                offset(&edit["range"]["end"]),
                edit["newText"].as_str().unwrap(),
            )
        })
        .collect();
    spans.sort_by_key(|span| std::cmp::Reverse(span.0));
    let mut result = text.to_owned();
    for (start, end, new_text) in spans {
        result.replace_range(start..end, new_text);
    }
    result
}

/// What `pt2lsp check --fix --unsafe-fixes` writes for `text`.
fn fixed_by_the_cli(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.py");
    std::fs::write(&path, text).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(["check", "--isolated", "--quiet", "--fix", "--unsafe-fixes"])
        .arg(&path)
        .output()
        .expect("pt2lsp runs")
        .status;
    assert!(status.code().is_some_and(|code| code <= 1), "{status}");
    std::fs::read_to_string(&path).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsafe_fixes_are_plain_quick_fixes_and_display_only_ones_are_disabled() {
    let mut client = started(None, Value::Null).await;
    client.open(URI, 1, TWO_BRANCHES).await;
    let diagnostics = client.diagnostics(URI, 1).await;
    assert_eq!(diagnostics.len(), 3, "{diagnostics:#?}");
    let actions = code_actions(&mut client, URI, &diagnostics).await;

    let rewrite = actions
        .iter()
        .find(|action| action["title"] == "Rewrite the `if` as `torch.where`")
        .expect("the torch.where rewrite");
    assert_eq!(rewrite["kind"], "quickfix");
    assert!(
        rewrite.get("isPreferred").is_none(),
        "an unsafe fix is never preferred: {rewrite:#}"
    );
    assert!(rewrite.get("disabled").is_none(), "{rewrite:#}");

    let note = actions
        .iter()
        .find(|action| {
            action["title"].as_str().is_some_and(|title| {
                title.starts_with("No `torch.cond` rewrite offered: an `elif`")
            })
        })
        .expect("the display-only note");
    assert_eq!(note["kind"], "quickfix");
    assert!(note.get("edit").is_none(), "{note:#}");
    assert!(
        note["disabled"]["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("cannot apply")),
        "{note:#}"
    );

    // Applying the rewrite clears its diagnostic, and only its.
    let text = apply(TWO_BRANCHES, rewrite);
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": text}]}),
        )
        .await;
    let after = client.diagnostics(URI, 2).await;
    let lines: Vec<u64> = after
        .iter()
        .map(|d| d["range"]["start"]["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [11, 14], "{after:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fix_all_applies_unsafe_fixes_only_with_the_setting() {
    let mut client = started(None, Value::Null).await;
    client.open(URI, 1, NESTED).await;
    client.diagnostics(URI, 1).await;
    assert_eq!(
        fix_all(&mut client, URI).await,
        None,
        "no fix here is safe, and unsafeFixes is off"
    );

    let mut client = started(None, json!({"unsafeFixes": true})).await;
    client.open(URI, 1, NESTED).await;
    client.diagnostics(URI, 1).await;
    let action = fix_all(&mut client, URI).await.expect("fix all");
    assert_eq!(action["kind"], "source.fixAll.pt2lsp");
    assert_eq!(
        action["edit"]["documentChanges"][0]["textDocument"]["version"],
        1
    );
    let fixed = apply(NESTED, &action);
    assert_eq!(
        fixed,
        fixed_by_the_cli(NESTED),
        "the editor's fix all and `check --fix` make the same text"
    );
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": fixed}]}),
        )
        .await;
    assert_eq!(client.diagnostics(URI, 2).await, Vec::<Value>::new());
    assert_eq!(fix_all(&mut client, URI).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fix_all_follows_unsafe_fixes_from_pyproject() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.pt2lsp]\nunsafe-fixes = true\n",
    )
    .unwrap();
    let path = dir.path().join("model.py");
    std::fs::write(&path, TWO_BRANCHES).unwrap();
    let uri = file_uri(&path);
    let mut client = started(Some(dir.path()), Value::Null).await;
    client.open(&uri, 1, TWO_BRANCHES).await;
    client.diagnostics(&uri, 1).await;
    let action = fix_all(&mut client, &uri).await.expect("fix all");
    let fixed = apply(TWO_BRANCHES, &action);
    assert_eq!(fixed, fixed_by_the_cli(TWO_BRANCHES));
    assert!(
        fixed.contains("return torch.where(x.sum() > 0, x + 1, x - 1)"),
        "{fixed}"
    );
    assert!(fixed.contains("elif x.sum() < -1:"), "{fixed}");
}
