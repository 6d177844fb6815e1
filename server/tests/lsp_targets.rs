//! The real binary over stdio: the configured deployment targets that write an artefact of
//! their own are offered as code lenses beside "Export to .pt2", each running `pt2lsp.exportPt2`
//! with the target as its fourth argument.

mod common;

use std::process::Stdio;

use common::TestClient;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const URI: &str = "file:///tmp/pt2lsp-targets/model.py";

const MODEL: &str = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n\n\nmodel = M().eval()\nexample_args = (torch.randn(2, 3),)\n";

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_targets_are_offered_as_export_lenses() {
    let (_child, mut client) = spawn();
    // `pt2` and `core-aten` write no artefact of their own: no lens for them.
    client
        .initialize(
            None,
            json!({"targets": ["core-aten", "onnx", "executorch", "pt2"]}),
        )
        .await;
    client.open(URI, 1, MODEL).await;
    let response = client
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    let lenses: Vec<(String, Value)> = response["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{response:#}"))
        .iter()
        .map(|lens| {
            (
                lens["command"]["title"].as_str().unwrap().to_owned(),
                lens["command"]["arguments"].clone(),
            )
        })
        .collect();
    assert_eq!(
        lenses,
        [
            ("Export to .pt2".to_owned(), json!([URI])),
            ("Trace again".to_owned(), json!([URI])),
            (
                "Export to ONNX".to_owned(),
                json!([URI, null, null, "onnx"])
            ),
            (
                "Export to ExecuTorch".to_owned(),
                json!([URI, null, null, "executorch"])
            ),
        ],
        "{response:#}"
    );
    client.shutdown_and_exit().await;
}
