//! `pt2lsp.exportPt2` over the real binary's `serve`, on stdio, with real torch:
//! the answer is the report, the file is on disk and loads, progress reports each stage, and a
//! model that does not export gets its trace diagnostics published and an error answer.
//!
//! The interpreter is `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{TestClient, file_uri};
use serde_json::{Value, json};

fn torch_python() -> PathBuf {
    std::env::var_os("PT2LSP_PYTHON").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python"),
        PathBuf::from,
    )
}

async fn started(root: &Path) -> (tokio::process::Child, TestClient) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("pt2lsp starts");
    let mut client = TestClient::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let response = client
        .initialize(
            Some(root),
            json!({"python": torch_python().to_str().unwrap(), "timeout": 120}),
        )
        .await;
    let commands = &response["result"]["capabilities"]["executeCommandProvider"]["commands"];
    assert!(
        commands
            .as_array()
            .unwrap()
            .contains(&json!("pt2lsp.exportPt2")),
        "{response}"
    );
    (child, client)
}

fn is_export_progress(message: &Value) -> bool {
    message["method"] == "$/progress"
        && message["params"]["token"]
            .as_str()
            .is_some_and(|token| token.starts_with("pt2lsp/export/"))
}

/// Waits for the export's end, and returns every progress value it sent, in order.
async fn export_progress(client: &mut TestClient) -> Vec<Value> {
    let mut values = Vec::new();
    loop {
        let message = client.wait_for(is_export_progress).await;
        let value = message["params"]["value"].clone();
        let end = value["kind"] == "end";
        values.push(value);
        if end {
            return values;
        }
    }
}

const DYNAMIC_BATCH: &str = r#"import torch
from torch.export import Dim


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x).relu()


model = Net()
example_args = (torch.randn(8, 16),)
dynamic_shapes = {"x": {0: Dim("batch", min=2, max=1024)}}
"#;

const DATA_DEPENDENT: &str = "import torch\n\n\nclass Bad(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x * 2\n        return x\n\n\nmodel = Bad()\nexample_args = (torch.randn(3),)\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_writes_the_file_reports_it_and_shows_progress() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.py");
    std::fs::write(&path, DYNAMIC_BATCH).unwrap();
    let uri = file_uri(&path);
    let (mut server, mut client) = started(dir.path()).await;
    client.open(&uri, 1, DYNAMIC_BATCH).await;

    let output = dir.path().join("out/net.pt2");
    let response = client
        .request(
            "workspace/executeCommand",
            json!({"command": "pt2lsp.exportPt2", "arguments": [uri, null, output.to_str().unwrap()]}),
        )
        .await;
    let result = &response["result"];
    assert_eq!(result["status"], "exported", "{response:#}");
    assert_eq!(result["entry"], "model");
    let report = &result["report"];
    assert_eq!(report["path"], output.to_str().unwrap());
    assert_eq!(
        report["size"].as_u64(),
        Some(std::fs::metadata(&output).unwrap().len())
    );
    assert_eq!(report["range_constraints"][0]["dim"], "batch", "{report:#}");
    assert_eq!(report["verification"]["matches"], true, "{report:#}");
    // Only the file: the temporary it was written to is gone.
    let written: Vec<_> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(written, ["net.pt2"]);

    let progress = export_progress(&mut client).await;
    assert_eq!(progress[0]["kind"], "begin");
    assert_eq!(progress[0]["title"], "Exporting net.py (model)");
    let stages: Vec<&str> = progress
        .iter()
        .filter(|value| value["kind"] == "report")
        .map(|value| {
            value["message"]
                .as_str()
                .unwrap()
                .split(':')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(
        stages,
        ["exporting", "saving", "verifying"],
        "{progress:#?}"
    );
    assert_eq!(progress.last().unwrap()["message"], "exported");
    let shown = client
        .wait_for(|message| message["method"] == "window/showMessage")
        .await;
    assert_eq!(shown["params"]["type"], 3, "{shown}");
    assert!(
        shown["params"]["message"]
            .as_str()
            .unwrap()
            .contains(output.to_str().unwrap()),
        "{shown}"
    );

    // Another process loads the file and runs it at a batch size the example did not have.
    let script = format!(
        "import torch\nm = torch.export.load({:?}).module()\nprint(tuple(m(torch.randn(21, 16)).shape))",
        output.to_str().unwrap()
    );
    let ran = Command::new(torch_python())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&ran.stdout).trim(), "(21, 4)");
    client.shutdown_and_exit().await;
    assert!(server.wait().await.unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_does_not_export_publishes_its_diagnostics_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.py");
    std::fs::write(&path, DATA_DEPENDENT).unwrap();
    let uri = file_uri(&path);
    let (mut server, mut client) = started(dir.path()).await;
    client.open(&uri, 1, DATA_DEPENDENT).await;

    let response = client
        .request(
            "workspace/executeCommand",
            json!({"command": "pt2lsp.exportPt2", "arguments": [uri]}),
        )
        .await;
    let error = &response["error"];
    assert_eq!(error["code"], -32803, "{response:#}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("bad.py (model) does not export: bad.py:6: PT101 "),
        "{error}"
    );
    assert_eq!(error["data"]["diagnostics"][0]["code"], "PT101");
    assert_eq!(error["data"]["diagnostics"][0]["line"], 6);
    assert_eq!(error["data"]["diagnostics"][0]["place"], "bad.py:6");
    // Nothing was written: neither the default output nor a temporary beside it.
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["bad.py"]);

    let published = client
        .wait_for(|message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri
                && message["params"]["diagnostics"]
                    .as_array()
                    .is_some_and(|all| {
                        all.iter().any(|d| {
                            d["data"]["source"]
                                .as_str()
                                .is_some_and(|source| source.ends_with("trace"))
                        })
                    })
        })
        .await;
    let diagnostics = published["params"]["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics[0]["code"], "PT101", "{diagnostics:#?}");
    assert_eq!(diagnostics[0]["range"]["start"]["line"], 5);

    // An unknown entrypoint is a failed request that names the file's entrypoints.
    let response = client
        .request(
            "workspace/executeCommand",
            json!({"command": "pt2lsp.exportPt2", "arguments": [uri, "encoder", null]}),
        )
        .await;
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has no entrypoint `encoder`; its entrypoints: model"),
        "{response:#}"
    );
    client.shutdown_and_exit().await;
    assert!(server.wait().await.unwrap().success());
}
