//! A small LSP client for the tests: Content-Length framing over any pair of async streams.
//!
//! The same client drives the in-process server (duplex pipes) and the real binary (its
//! stdin and stdout), so both kinds of test read alike.

// Each test crate uses a different part of this client.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// How long a test waits for any one message before it fails.
pub const TIMEOUT: Duration = Duration::from_secs(30);

type Writer = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

pub struct TestClient {
    writer: Writer,
    incoming: mpsc::UnboundedReceiver<Value>,
    /// Messages read while waiting for another one, in arrival order.
    backlog: Vec<Value>,
    next_id: i64,
    /// What the client answers to `workspace/configuration`.
    pub configuration: Arc<Mutex<Value>>,
    /// Every request the server sent to the client, in order.
    pub server_requests: Arc<Mutex<Vec<Value>>>,
}

impl TestClient {
    pub fn new(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(Box::new(writer)));
        let (sender, incoming) = mpsc::unbounded_channel();
        let configuration = Arc::new(Mutex::new(Value::Null));
        let server_requests = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn(read_loop(
            BufReader::new(reader),
            Arc::clone(&writer),
            sender,
            Arc::clone(&configuration),
            Arc::clone(&server_requests),
        ));
        Self {
            writer,
            incoming,
            backlog: Vec::new(),
            next_id: 1,
            configuration,
            server_requests,
        }
    }

    pub async fn send(&self, message: &Value) {
        send_frame(&self.writer, message.to_string().as_bytes()).await;
    }

    /// Sends a frame with an arbitrary body, for malformed input.
    pub async fn send_raw(&self, body: &[u8]) {
        send_frame(&self.writer, body).await;
    }

    /// Writes `bytes` as they are, unframed: for tests of the server's framing.
    pub async fn send_bytes(&self, bytes: &[u8]) {
        let mut writer = self.writer.lock().await;
        let _ = writer.write_all(bytes).await;
        let _ = writer.flush().await;
    }

    /// Sends `bytes` and closes the server's input right after, as a client that dies
    /// mid-write does; later writes go nowhere. One hold of the writer: an answer this client
    /// gives to a server request meanwhile can never land between the two.
    pub async fn send_bytes_and_close(&self, bytes: &[u8]) {
        let mut writer = self.writer.lock().await;
        let _ = writer.write_all(bytes).await;
        let _ = writer.flush().await;
        let _ = writer.shutdown().await;
        *writer = Box::new(tokio::io::sink());
    }

    pub async fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Sends a request and waits for its response (the whole message, `result` or `error`).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.wait_for(|message| {
            message.get("id") == Some(&json!(id)) && message.get("method").is_none()
        })
        .await
    }

    /// The first message, read before or after this call, that `matches`; fails after [`TIMEOUT`].
    pub async fn wait_for(&mut self, matches: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_within(TIMEOUT, matches).await
    }

    /// [`Self::wait_for`] with another time limit, for what includes starting torch.
    pub async fn wait_for_within(
        &mut self,
        timeout: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(index) = self.backlog.iter().position(&matches) {
            return self.backlog.remove(index);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Ok(Some(message)) if matches(&message) => return message,
                Ok(Some(message)) => self.backlog.push(message),
                Ok(None) => panic!(
                    "the server closed its output; unmatched messages: {:#?}",
                    self.backlog
                ),
                Err(elapsed) => panic!("{elapsed}; messages seen: {:#?}", self.backlog),
            }
        }
    }

    /// True when no message, read before or during this call, `matches` within a second.
    pub async fn wait_for_none(&mut self, matches: impl Fn(&Value) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        loop {
            if self.backlog.iter().any(&matches) {
                return false;
            }
            match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Ok(Some(message)) => self.backlog.push(message),
                Ok(None) | Err(_) => return true,
            }
        }
    }

    /// Whether the server closes its output within [`TIMEOUT`].
    pub async fn closed(&mut self) -> bool {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Ok(Some(message)) => self.backlog.push(message),
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    }

    pub async fn initialize(&mut self, root: Option<&std::path::Path>, options: Value) -> Value {
        let root_uri = root.map(file_uri);
        let folders = root_uri
            .as_ref()
            .map(|uri| json!([{"uri": uri, "name": "root"}]));
        let response = self
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": root_uri,
                    "workspaceFolders": folders,
                    "initializationOptions": options,
                    "capabilities": {
                        "window": {"workDoneProgress": true},
                        "workspace": {
                            "configuration": true,
                            "workspaceEdit": {"documentChanges": true},
                            "didChangeWatchedFiles": {"dynamicRegistration": true},
                            "workspaceFolders": true
                        }
                    }
                }),
            )
            .await;
        self.notify("initialized", json!({})).await;
        response
    }

    /// Waits for the end of the server's workspace scan (the import graph is built from it).
    pub async fn scanned(&mut self) {
        self.wait_for(|message| {
            message["method"] == "$/progress"
                && message["params"]["token"]
                    .as_str()
                    .is_some_and(|token| token.starts_with("pt2lsp/scan"))
                && message["params"]["value"]["kind"] == "end"
        })
        .await;
    }

    pub async fn open(&self, uri: &str, version: i32, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}}),
        )
        .await;
    }

    /// The diagnostics published for `uri` at `version`, skipping earlier publications.
    pub async fn diagnostics(&mut self, uri: &str, version: i32) -> Vec<Value> {
        let message = self
            .wait_for(|message| {
                message["method"] == "textDocument/publishDiagnostics"
                    && message["params"]["uri"] == uri
                    && message["params"]["version"] == version
            })
            .await;
        // Later publications for the same version (a settings or index change) replace it.
        self.backlog.retain(|message| {
            !(message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri)
        });
        message["params"]["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The versions of every publication for `uri`, in arrival order, up to and including the
    /// first one at `version`. That one and later ones stay for the next call.
    pub async fn published_versions(&mut self, uri: &str, version: i32) -> Vec<Option<i64>> {
        let is_publication = |message: &Value| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri
        };
        let is_target =
            |message: &Value| is_publication(message) && message["params"]["version"] == version;
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        while !self.backlog.iter().any(is_target) {
            match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Ok(Some(message)) => self.backlog.push(message),
                Ok(None) => panic!("the server closed its output; seen: {:#?}", self.backlog),
                Err(elapsed) => panic!("{elapsed}; messages seen: {:#?}", self.backlog),
            }
        }
        let end = self.backlog.iter().position(is_target).unwrap_or_default();
        let mut versions = Vec::new();
        let rest = self.backlog.split_off(end);
        self.backlog.retain(|message| {
            if is_publication(message) {
                versions.push(message["params"]["version"].as_i64());
                false
            } else {
                true
            }
        });
        self.backlog.extend(rest);
        versions.push(Some(i64::from(version)));
        versions
    }

    /// Waits until a publication for `uri` at `version` has exactly the rule codes `expected`;
    /// for changes that re-publish a version (settings, index), whose order against other
    /// re-publications the test cannot know.
    pub async fn settles_to(&mut self, uri: &str, version: i32, expected: &[&str]) {
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        while tokio::time::Instant::now() < deadline {
            let codes: Vec<String> = self
                .diagnostics(uri, version)
                .await
                .iter()
                .map(|d| d["code"].as_str().unwrap_or_default().to_owned())
                .collect();
            if codes == expected {
                return;
            }
            seen.push(codes);
        }
        panic!("{uri} v{version} never settled to {expected:?}; saw {seen:?}");
    }

    /// The inlay hints of lines 0 to 100 of `uri`, as (0-based line, label).
    pub async fn inlay_hints(&mut self, uri: &str) -> Vec<(u64, String)> {
        let whole =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 100, "character": 0}});
        let response = self
            .request(
                "textDocument/inlayHint",
                json!({"textDocument": {"uri": uri}, "range": whole}),
            )
            .await;
        response["result"]
            .as_array()
            .unwrap_or_else(|| panic!("a list of hints: {response}"))
            .iter()
            .map(|hint| {
                (
                    hint["position"]["line"].as_u64().unwrap(),
                    hint["label"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    pub async fn shutdown_and_exit(&mut self) {
        let response = self.request("shutdown", Value::Null).await;
        assert_eq!(response["result"], Value::Null, "{response}");
        self.notify("exit", Value::Null).await;
    }
}

pub fn file_uri(path: &std::path::Path) -> String {
    let path = path.to_str().expect("test paths are UTF-8");
    format!("file://{}", path.replace(' ', "%20"))
}

async fn send_frame(writer: &Writer, body: &[u8]) {
    let mut writer = writer.lock().await;
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    // The server may already be gone in tests of its exit; the reader reports that instead.
    let _ = writer.write_all(header.as_bytes()).await;
    let _ = writer.write_all(body).await;
    let _ = writer.flush().await;
}

async fn read_loop(
    mut reader: BufReader<impl AsyncRead + Unpin>,
    writer: Writer,
    sender: mpsc::UnboundedSender<Value>,
    configuration: Arc<Mutex<Value>>,
    server_requests: Arc<Mutex<Vec<Value>>>,
) {
    while let Some(body) = read_frame(&mut reader).await {
        if std::env::var_os("PT2LSP_TEST_TRACE").is_some() {
            eprintln!("<< {}", String::from_utf8_lossy(&body));
        }
        let message: Value = serde_json::from_slice(&body).expect("the server sent invalid JSON");
        if let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) {
            // Answer the server's own requests the way an editor would.
            let result = match method {
                "workspace/configuration" => json!([configuration.lock().unwrap().clone()]),
                _ => Value::Null,
            };
            server_requests.lock().unwrap().push(message.clone());
            let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
            send_frame(&writer, response.to_string().as_bytes()).await;
        }
        if sender.send(message).is_err() {
            return;
        }
    }
}

async fn read_frame(reader: &mut BufReader<impl AsyncRead + Unpin>) -> Option<Vec<u8>> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let mut body = vec![0; length.expect("a frame without Content-Length")];
    reader.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// The real `pt2lsp serve` over stdio with a client on its pipes; `stderr` is where its log
/// goes (`Stdio::piped()` to read it, `Stdio::inherit()` to show it with the test's output).
/// `PT2LSP_TEST_BIN` runs the same tests against another build, such as a release binary.
pub fn spawn_server(stderr: std::process::Stdio) -> (tokio::process::Child, TestClient) {
    let binary =
        std::env::var_os("PT2LSP_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_pt2lsp").into());
    let mut child = tokio::process::Command::new(binary)
        .arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("pt2lsp starts");
    let client = TestClient::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    (child, client)
}
