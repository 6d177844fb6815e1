//! The real binary, `pt2lsp serve`, over stdio, fed frames whose `Content-Length` is wrong,
//! missing, or buried in garbage: it answers every request it can read, logs what it skipped,
//! and exits with a failure when its input cannot be recovered.

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

/// A request the server answers without any workspace: an unknown method, whose error
/// response carries the request's id.
fn request(id: i64) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "pt2lsp/noSuchMethod", "params": {"id": id}})
        .to_string()
        .into_bytes()
}

/// A frame whose `Content-Length` is off by `error` bytes.
fn frame(body: &[u8], error: isize) -> Vec<u8> {
    let length = body.len().checked_add_signed(error).unwrap();
    let mut frame = format!("Content-Length: {length}\r\n\r\n").into_bytes();
    frame.extend_from_slice(body);
    frame
}

async fn answer(client: &mut TestClient, id: i64) -> Value {
    client
        .wait_for(|message| message["id"] == id && message.get("method").is_none())
        .await
}

async fn exit_code(child: &mut Child) -> Option<i32> {
    tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server exits promptly")
        .unwrap()
        .code()
}

async fn stderr(child: &mut Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .await
        .unwrap();
    text
}

/// Shuts the server down cleanly: proof that it still reads and answers.
async fn finish(mut child: Child, mut client: TestClient) -> String {
    client.shutdown_and_exit().await;
    assert_eq!(exit_code(&mut child).await, Some(0));
    stderr(&mut child).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_content_length_is_survived() {
    let (child, mut client) = spawn();
    client.initialize(None, Value::Null).await;
    let mut bytes = frame(&request(10), -1);
    bytes.extend(frame(&request(11), 0));
    client.send_bytes(&bytes).await;
    // The good request after it is answered, and so is the misframed one itself.
    assert_eq!(answer(&mut client, 11).await["error"]["code"], -32601);
    assert_eq!(answer(&mut client, 10).await["error"]["code"], -32601);
    // A document opened with a short length gets its diagnostics.
    let uri = "file:///tmp/pt2lsp-transport/model.py";
    let open = json!({
        "jsonrpc": "2.0",
        "method": "textDocument/didOpen",
        "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1,
            "text": "import torch\n\nx = torch.ones(2, (3,)\n",
        }},
    });
    client
        .send_bytes(&frame(open.to_string().as_bytes(), -3))
        .await;
    let diagnostics = client.diagnostics(uri, 1).await;
    assert_eq!(diagnostics[0]["code"], "PT001", "{diagnostics:#?}");
    let stderr = finish(child, client).await;
    assert!(
        stderr.contains("Content-Length said") && stderr.contains("resynchronised"),
        "stderr: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_content_length_is_survived() {
    let (child, mut client) = spawn();
    client.initialize(None, Value::Null).await;
    let mut bytes = frame(&request(20), 7);
    bytes.extend(frame(&request(21), 0));
    client.send_bytes(&bytes).await;
    assert_eq!(answer(&mut client, 21).await["error"]["code"], -32601);
    assert_eq!(answer(&mut client, 20).await["error"]["code"], -32601);
    // The last message the client sends, too long, while the client waits for its answer.
    client.send_bytes(&frame(&request(22), 2)).await;
    assert_eq!(answer(&mut client, 22).await["error"]["code"], -32601);
    finish(child, client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_between_messages_is_skipped_and_logged() {
    let (child, mut client) = spawn();
    client.initialize(None, Value::Null).await;
    let mut bytes = frame(&request(30), 0);
    bytes.extend(b"hello there\r\n}\0\xfe{\"partial\": ");
    bytes.extend(frame(&request(31), 0));
    client.send_bytes(&bytes).await;
    assert_eq!(answer(&mut client, 30).await["error"]["code"], -32601);
    assert_eq!(answer(&mut client, 31).await["error"]["code"], -32601);
    let stderr = finish(child, client).await;
    assert!(
        stderr.contains("skipped 28 bytes") && stderr.contains("hello there"),
        "stderr: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_without_content_length_is_survived() {
    let (child, mut client) = spawn();
    client.initialize(None, Value::Null).await;
    let mut bytes = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n".to_vec();
    bytes.extend(request(40));
    bytes.extend(b"Content-Length: many\r\n\r\n");
    bytes.extend(request(41));
    bytes.extend(frame(&request(42), 0));
    client.send_bytes(&bytes).await;
    for id in [40, 41, 42] {
        assert_eq!(answer(&mut client, id).await["error"]["code"], -32601);
    }
    let stderr = finish(child, client).await;
    assert!(
        stderr.contains("without Content-Length"),
        "stderr: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_message_in_good_framing_gets_an_error_and_the_server_goes_on() {
    let (child, mut client) = spawn();
    client.initialize(None, Value::Null).await;
    client
        .send_bytes(&frame(
            b"{\"jsonrpc\": \"2.0\", \"id\": 50, \"method\": ",
            0,
        ))
        .await;
    let error = client
        .wait_for(|message| message["id"].is_null() && message.get("error").is_some())
        .await;
    assert_eq!(error["error"]["code"], -32700, "{error}");
    client.send_bytes(&frame(&request(51), 0)).await;
    assert_eq!(answer(&mut client, 51).await["error"]["code"], -32601);
    finish(child, client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_input_inside_a_body_exits_with_a_failure() {
    let (mut child, mut client) = spawn();
    client.initialize(None, Value::Null).await;
    // Even after `shutdown`: the client that asked for it did not get to say `exit`.
    let response = client.request("shutdown", Value::Null).await;
    assert_eq!(response["result"], Value::Null, "{response}");
    let whole = frame(&request(60), 0);
    client.send_bytes_and_close(&whole[..whole.len() / 2]).await;
    let code = exit_code(&mut child).await;
    let stderr = stderr(&mut child).await;
    assert_eq!(code, Some(1), "stderr: {stderr}");
    assert!(stderr.contains("inside a message"), "stderr: {stderr}");
}
