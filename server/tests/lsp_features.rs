//! The real binary over stdio: pulled diagnostics, document symbols and code lenses.

mod common;

use std::process::Stdio;

use common::TestClient;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const URI: &str = "file:///tmp/pt2lsp-features/model.py";

/// A model whose `forward` branches on a tensor (PT101), with the file convention's bindings.
const MODEL: &str = "import torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n\n\nmodel = M().eval()\nexample_args = (torch.randn(2, 3),)\ndynamic_shapes = None\n";

fn spawn() -> (Child, TestClient) {
    let binary =
        std::env::var_os("PT2LSP_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_pt2lsp").into());
    let mut child = Command::new(binary)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("pt2lsp starts");
    let client = TestClient::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    (child, client)
}

fn codes(diagnostics: &[Value]) -> Vec<&str> {
    diagnostics
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulled_diagnostics_are_the_pushed_ones_and_are_advertised() {
    let (_child, mut client) = spawn();
    let response = client.initialize(None, Value::Null).await;
    let provider = &response["result"]["capabilities"]["diagnosticProvider"];
    assert_eq!(provider["interFileDependencies"], true, "{response}");
    assert_eq!(provider["workspaceDiagnostics"], false, "{response}");

    client.open(URI, 1, MODEL).await;
    // Pulled at once, before the pushed analysis may have ended: the same answer either way.
    let pulled = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert_eq!(pulled["result"]["kind"], "full", "{pulled}");
    let items = pulled["result"]["items"].as_array().unwrap().clone();
    assert_eq!(codes(&items), ["PT101"], "{pulled}");
    let pushed = client.diagnostics(URI, 1).await;
    assert_eq!(items, pushed);

    // An edit that removes the problem: the pull follows the document's version.
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": 2}, "contentChanges": [{"text": "import torch\n"}]}),
        )
        .await;
    let pulled = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert_eq!(pulled["result"]["items"], json!([]), "{pulled}");

    let closed = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": "file:///tmp/pt2lsp-features/never_opened.py"}}),
        )
        .await;
    assert_eq!(closed["result"]["items"], json!([]), "{closed}");
    client.shutdown_and_exit().await;
}
