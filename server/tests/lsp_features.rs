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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn document_symbols_list_module_classes_with_methods_and_the_entrypoint_bindings() {
    let (_child, mut client) = spawn();
    let response = client.initialize(None, Value::Null).await;
    assert_eq!(
        response["result"]["capabilities"]["documentSymbolProvider"], true,
        "{response}"
    );
    // `Helper` is no module: not listed. `Sub` derives from a module class defined above it.
    let text = format!(
        "{MODEL}\n\nclass Helper:\n    def run(self):\n        pass\n\n\nclass Sub(M):\n    def extra(self):\n        return 1\n"
    );
    client.open(URI, 1, &text).await;
    let response = client
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    let symbols = response["result"].as_array().expect("a list of symbols");
    let names: Vec<&str> = symbols.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(
        names,
        ["M", "model", "example_args", "dynamic_shapes", "Sub"],
        "{response:#}"
    );
    let class = &symbols[0];
    assert_eq!(class["kind"], 5, "a class: {class}");
    let methods: Vec<&str> = class["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(methods, ["__init__", "forward"], "{class}");
    let forward = &class["children"][1];
    assert_eq!(forward["kind"], 6, "a method: {forward}");
    assert_eq!(
        forward["selectionRange"]["start"],
        json!({"line": 7, "character": 8})
    );
    assert_eq!(forward["range"]["end"]["line"], 10, "{forward}");
    let model = &symbols[1];
    assert_eq!(model["kind"], 13, "a variable: {model}");
    assert_eq!(model["range"]["start"], json!({"line": 13, "character": 0}));
    client.shutdown_and_exit().await;
}

fn lenses(response: &Value) -> Vec<(String, String, Value, i64)> {
    response["result"]
        .as_array()
        .expect("a list of lenses")
        .iter()
        .map(|lens| {
            (
                lens["command"]["title"].as_str().unwrap().to_owned(),
                lens["command"]["command"].as_str().unwrap().to_owned(),
                lens["command"]["arguments"].clone(),
                lens["range"]["start"]["line"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_lenses_export_and_trace_the_model_line_only_when_tracing_is_on() {
    let (_child, mut client) = spawn();
    let response = client.initialize(None, Value::Null).await;
    assert!(
        response["result"]["capabilities"]["codeLensProvider"].is_object(),
        "{response}"
    );
    client.open(URI, 1, MODEL).await;
    let response = client
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert_eq!(
        lenses(&response),
        [
            (
                "Export to .pt2".to_owned(),
                "pt2lsp.exportPt2".to_owned(),
                json!([URI]),
                13
            ),
            (
                "Trace again".to_owned(),
                "pt2lsp.retrace".to_owned(),
                json!([URI]),
                13
            ),
        ],
        "{response:#}"
    );
    // A file without `model = ...` is no entrypoint: no lens.
    let library = "file:///tmp/pt2lsp-features/layers.py";
    client.open(library, 1, "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x\n").await;
    let response = client
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": library}}),
        )
        .await;
    assert_eq!(response["result"], json!([]), "{response:#}");
    client.shutdown_and_exit().await;

    let (_child, mut client) = spawn();
    client.initialize(None, json!({"trace": "off"})).await;
    client.open(URI, 1, MODEL).await;
    let response = client
        .request(
            "textDocument/codeLens",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert_eq!(response["result"], json!([]), "{response:#}");
    client.shutdown_and_exit().await;
}

/// The interpreter with torch: `PT2LSP_PYTHON`, else the repository's `.venv`.
fn torch_python() -> std::path::PathBuf {
    std::env::var_os("PT2LSP_PYTHON").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python"),
        std::path::PathBuf::from,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_results_ask_a_pulling_client_to_pull_again_and_the_pull_has_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.py");
    std::fs::write(&file, MODEL).unwrap();
    let uri = common::file_uri(&file);
    let (_child, mut client) = spawn();
    let root = common::file_uri(dir.path());
    client
        .request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": root,
                "workspaceFolders": [{"uri": root, "name": "root"}],
                "initializationOptions": {"python": torch_python().to_str().unwrap(), "timeout": 120},
                "capabilities": {
                    "workspace": {"diagnostics": {"refreshSupport": true}},
                    "textDocument": {"diagnostic": {"dynamicRegistration": false}}
                }
            }),
        )
        .await;
    client.notify("initialized", json!({})).await;
    client.open(&uri, 1, MODEL).await;
    client.diagnostics(&uri, 1).await;
    client
        .request(
            "workspace/executeCommand",
            json!({"command": "pt2lsp.retrace", "arguments": [uri]}),
        )
        .await;
    client
        .wait_for_within(std::time::Duration::from_secs(240), |message| {
            message["method"] == "workspace/diagnostic/refresh"
        })
        .await;
    let pulled = client
        .request(
            "textDocument/diagnostic",
            json!({"textDocument": {"uri": uri}}),
        )
        .await;
    let items = pulled["result"]["items"].as_array().unwrap();
    // The trace confirms the static PT101 (or adds its own): the pull carries trace results.
    assert!(
        items
            .iter()
            .any(|d| matches!(d["data"]["source"].as_str(), Some("trace" | "static+trace"))),
        "{pulled:#}"
    );
    client.shutdown_and_exit().await;
}

/// A model whose shapes move: a view into heads, a transpose, a layer, a concatenation.
const SHAPED: &str = r#"import torch
import torch.nn as nn
from torch.export import Dim


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(64, 192)

    def forward(self, x, extra):
        b, t, c = x.shape
        qkv = self.qkv(x)
        q = qkv[..., :64].view(b, t, 4, 16).transpose(1, 2)
        y = q.relu()
        both = torch.cat([x, extra], dim=1)
        return y, both


model = Attention()
batch = Dim("batch")
seq = Dim("seq")
extra_len = Dim("extra_len")
example_args = (torch.randn(2, 8, 64), torch.randn(2, 3, 64))
dynamic_shapes = {"x": {0: batch, 1: seq}, "extra": {0: batch, 1: extra_len}}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_and_inlay_hints_show_shapes_in_the_users_dim_names() {
    let (_child, mut client) = spawn();
    let response = client.initialize(None, Value::Null).await;
    assert_eq!(
        response["result"]["capabilities"]["inlayHintProvider"], true,
        "{response}"
    );
    client.open(URI, 1, SHAPED).await;
    let hints = client.inlay_hints(URI).await;
    // `y = q.relu()` keeps `q`'s shape, a change only for a new name: every binding here is new.
    assert_eq!(
        hints,
        [
            (10, ": [batch, seq, 64]".to_owned()),
            (10, ": [batch, extra_len, 64]".to_owned()),
            (12, ": [batch, seq, 192]".to_owned()),
            (13, ": [batch, 4, seq, 16]".to_owned()),
            (14, ": [batch, 4, seq, 16]".to_owned()),
            (15, ": [batch, extra_len + seq, 64]".to_owned()),
        ]
    );
    // Hover on a use of `both`'s operand `extra`, and on `q`'s binding.
    let hover = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": 15, "character": 30}}),
        )
        .await;
    let text = hover["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("extra: Tensor[batch, extra_len, 64]"),
        "{hover:#}"
    );
    assert!(
        text.contains("`extra_len`: dynamic, declared on line 23"),
        "{hover:#}"
    );
    let hover = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": 13, "character": 8}}),
        )
        .await;
    let text = hover["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("q: Tensor[batch, 4, seq, 16]"), "{hover:#}");

    // `inlayHints = false` turns them off.
    client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"pt2lsp": {"inlayHints": false}}}),
        )
        .await;
    let response = client
        .request(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": URI}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 30, "character": 0}}}),
        )
        .await;
    assert_eq!(response["result"], json!([]), "{response:#}");
    client.shutdown_and_exit().await;
}
