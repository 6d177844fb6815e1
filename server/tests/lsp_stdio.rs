//! The real binary, `pt2lsp serve`, over stdio with Content-Length framing.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::TestClient;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::Child;

fn spawn() -> (Child, TestClient) {
    common::spawn_server(Stdio::piped())
}

async fn exit_status(child: &mut Child) -> std::process::ExitStatus {
    tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server exits promptly after `exit`")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_over_stdio_survives_bad_input_and_exits_cleanly() {
    let (mut child, mut client) = spawn();
    let response = client.initialize(None, Value::Null).await;
    assert_eq!(
        response["result"]["serverInfo"]["name"], "pt2lsp",
        "{response}"
    );

    let uri = "file:///tmp/pt2lsp-stdio/model.py";
    client
        .open(uri, 1, "import torch\n\nx = torch.ones(2, (3,)\n")
        .await;
    let diagnostics = client.diagnostics(uri, 1).await;
    assert_eq!(diagnostics[0]["code"], "PT001", "{diagnostics:#?}");

    client.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": ").await;
    let error = client
        .wait_for(|message| message["id"].is_null() && message.get("error").is_some())
        .await;
    assert_eq!(error["error"]["code"], -32700, "{error}");

    let unknown = client.request("pt2lsp/noSuchMethod", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    // Still serving after both: an edit that fixes the file clears its diagnostics.
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"range": {"start": {"line": 2, "character": 21}, "end": {"line": 2, "character": 21}}, "text": ")"}]
            }),
        )
        .await;
    assert!(client.diagnostics(uri, 2).await.is_empty());

    client.shutdown_and_exit().await;
    let status = exit_status(&mut child).await;
    assert_eq!(status.code(), Some(0));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    assert!(stderr.contains("malformed JSON"), "stderr: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_without_shutdown_is_status_one() {
    let (mut child, mut client) = spawn();
    client.initialize(None, Value::Null).await;
    client.notify("exit", Value::Null).await;
    assert_eq!(exit_status(&mut child).await.code(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_generated_code_is_analysed_without_a_crash() {
    let (mut child, mut client) = spawn();
    client.initialize(None, Value::Null).await;
    let uri = "file:///tmp/pt2lsp-stdio/generated.py";
    // Generated code nests far deeper than any hand-written file; the parser and the analyzer
    // recurse on it, and a stack overflow would abort the server.
    let text = format!(
        "x = {}\ny = {}1{}\n",
        vec!["a"; 30_000].join(" + "),
        "(".repeat(3_000),
        ")".repeat(3_000)
    );
    client.open(uri, 1, &text).await;
    client.diagnostics(uri, 1).await;
    client.shutdown_and_exit().await;
    assert_eq!(exit_status(&mut child).await.code(), Some(0));
}
