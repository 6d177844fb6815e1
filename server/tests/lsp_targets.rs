//! The real binary over stdio: the configured deployment targets that write an artefact of
//! their own are offered as code lenses beside "Export to .pt2", each running `pt2lsp.exportPt2`
//! with the target as its fourth argument; with real torch, a save lowers the entrypoint for its
//! targets, and what a lowering finds (PT7xx) reaches the editor on the user's line, while a
//! target that cannot run in the interpreter is one `window/showMessage` per session, however
//! many entrypoints name it, and the other targets' findings stand. A model file opened alone
//! is warned about (PT707) for the targets of the export script that reaches it, however they
//! are named: the script's own `targets`, its entrypoint table, the editor's settings.
//!
//! The torch tests use `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`;
//! without torch they fail when `CI` is set and are skipped, with a note, otherwise.

mod common;

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{TestClient, file_uri};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

// `turn()` is not used: its guard cannot be held across an await; `TURN` below is this
// file's.
#[allow(dead_code)]
#[path = "support/torch.rs"]
mod torch_support;

/// How long a trace with its lowerings may take: it includes starting a worker, whose
/// `import torch` takes seconds, and much longer on a loaded machine.
const TRACE_WAIT: Duration = Duration::from_secs(240);

/// One server with a tracer at a time: each starts a worker that imports torch.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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

/// `pt2lsp serve` on `workspace`, tracing on save with `python`, with `environment` added to
/// the server's (the worker inherits it).
async fn serve_traced(
    python: &Path,
    workspace: &Path,
    tmp: &Path,
    environment: &[(&str, &str)],
) -> (Child, TestClient) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pt2lsp"));
    command
        .arg("serve")
        .env("TMPDIR", tmp)
        .env("PT2LSP_NO_CACHE", "1")
        .env_remove("VIRTUAL_ENV")
        .current_dir(workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    for (key, value) in environment {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("pt2lsp starts");
    let mut client = TestClient::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let response = client
        .initialize(
            Some(workspace),
            json!({"python": python, "trace": "on-save", "timeout": 120}),
        )
        .await;
    assert!(response.get("result").is_some(), "{response}");
    client.scanned().await;
    (child, client)
}

/// Opens `path` (as version 1) and saves it unchanged, as an editor does.
async fn open_and_save(client: &TestClient, path: &Path) -> String {
    let uri = file_uri(path);
    client
        .open(&uri, 1, &fs::read_to_string(path).unwrap())
        .await;
    client
        .notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri}}),
        )
        .await;
    uri
}

/// The first publication for `uri` at version 1 with a diagnostic of `code` from the trace.
async fn traced_with(client: &mut TestClient, uri: &str, code: &str) -> Vec<Value> {
    let message = client
        .wait_for_within(TRACE_WAIT, |message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri
                && message["params"]["version"] == 1
                && message["params"]["diagnostics"]
                    .as_array()
                    .is_some_and(|all| all.iter().any(|d| d["code"] == code))
        })
        .await;
    message["params"]["diagnostics"].as_array().unwrap().clone()
}

/// The 0-based lines of `text` marked `# error[CODE]`.
fn marked_lines(text: &str, code: &str) -> Vec<u64> {
    let mark = format!("# error[{code}]");
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.contains(&mark))
        .map(|(at, _)| at as u64)
        .collect()
}

/// (0-based line, source) of each diagnostic of `code`, in line order.
fn placed(diagnostics: &[Value], code: &str) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = diagnostics
        .iter()
        .filter(|d| d["code"] == code)
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap(),
                d["data"]["source"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_lowering_finds_reaches_the_editor_on_the_users_line() {
    let Some(python) = torch_support::torch_python("lsp_targets") else {
        return;
    };
    let _turn = TURN.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let fixtures = torch_support::repository().join("fixtures/targets");
    // One file per target kind: core ATen (PT701) and ONNX (PT703, two lines), each naming
    // its target in the file, as `fixtures/targets/` does.
    let cases = [
        ("core-aten/searchsorted.py", "PT701"),
        ("onnx/kthvalue.py", "PT703"),
    ];
    for (fixture, _) in cases {
        let name = Path::new(fixture).file_name().unwrap();
        fs::copy(fixtures.join(fixture), workspace.path().join(name)).unwrap();
    }
    let (_child, mut client) = serve_traced(python, workspace.path(), tmp.path(), &[]).await;
    for (fixture, code) in cases {
        let path = workspace
            .path()
            .join(Path::new(fixture).file_name().unwrap());
        let uri = open_and_save(&client, &path).await;
        let diagnostics = traced_with(&mut client, &uri, code).await;
        let expected: Vec<(u64, String)> = marked_lines(&fs::read_to_string(&path).unwrap(), code)
            .into_iter()
            .map(|line| (line, "trace".to_owned()))
            .collect();
        assert!(!expected.is_empty(), "{fixture} marks no {code}");
        // The static PT707 on those lines said the same before the save; the lowering's
        // finding replaces it.
        assert_eq!(placed(&diagnostics, "PT707"), [], "{diagnostics:#?}");
        assert_eq!(
            placed(&diagnostics, code),
            expected,
            "{fixture}: {diagnostics:#?}"
        );
        let message = diagnostics.iter().find(|d| d["code"] == code).unwrap()["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.contains(if code == "PT701" { "core ATen" } else { "ONNX" }),
            "{message}"
        );
    }
    client.shutdown_and_exit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_cannot_run_is_said_once_per_session_and_the_rest_stands() {
    let Some(python) = torch_support::torch_python("lsp_targets") else {
        return;
    };
    let _turn = TURN.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let model = fs::read_to_string(
        torch_support::repository().join("fixtures/targets/core-aten/searchsorted.py"),
    )
    .unwrap()
    .replace(
        "targets = [\"core-aten\"]",
        "targets = [\"executorch\", \"core-aten\"]",
    );
    assert!(
        model.contains("\"executorch\""),
        "the fixture names its target"
    );
    for name in ["one.py", "two.py"] {
        fs::write(workspace.path().join(name), &model).unwrap();
    }
    // What importing an ExecuTorch built against another torch looks like: its compiled
    // extension misses a symbol of the installed libtorch.
    let shadow = tempfile::tempdir().unwrap();
    fs::create_dir(shadow.path().join("executorch")).unwrap();
    fs::write(
        shadow.path().join("executorch/__init__.py"),
        "raise ImportError('executorch/extension/pybindings/_portable_lib.so: undefined symbol: _ZN3c104impl3cow11cow_deleterEPv')\n",
    )
    .unwrap();
    let (_child, mut client) = serve_traced(
        python,
        workspace.path(),
        tmp.path(),
        &[("PYTHONPATH", shadow.path().to_str().unwrap())],
    )
    .await;
    let expected: Vec<(u64, String)> = marked_lines(&model, "PT701")
        .into_iter()
        .map(|line| (line, "trace".to_owned()))
        .collect();
    // Two entrypoints, each traced on its save: the note is one message, and each file still
    // gets the core ATen finding.
    for name in ["one.py", "two.py"] {
        let uri = open_and_save(&client, &workspace.path().join(name)).await;
        let diagnostics = traced_with(&mut client, &uri, "PT701").await;
        assert_eq!(placed(&diagnostics, "PT701"), expected, "{diagnostics:#?}");
        assert!(
            diagnostics
                .iter()
                .all(|d| d["code"] != "PT705" && d["code"] != "PT502"),
            "{diagnostics:#?}"
        );
    }
    let shown = client
        .wait_for(|message| message["method"] == "window/showMessage")
        .await;
    let text = shown["params"]["message"].as_str().unwrap();
    assert_eq!(shown["params"]["type"], 2, "a warning: {shown}");
    assert!(
        text.contains("target `executorch` not checked")
            && text.contains("does not import with torch 2.")
            && text.contains("undefined symbol"),
        "{text}"
    );
    assert!(
        client
            .wait_for_none(|message| message["method"] == "window/showMessage")
            .await,
        "the note is shown once per session"
    );
    client.shutdown_and_exit().await;
}

/// A model whose line 6 (0-based) calls `torch.kthvalue`, which torch.onnx has no function for.
const KTHVALUE: &str = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        low = torch.kthvalue(x, 2, dim=-1).values\n        return low * 2\n";

/// (code, 0-based line) of `diagnostics`.
fn codes(diagnostics: &[Value]) -> Vec<(String, u64)> {
    diagnostics
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_owned(),
                d["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_a_configured_target_cannot_run_is_a_warning_as_you_type() {
    let (_child, mut client) = spawn();
    // Targets from the editor's settings; tracing off: what is published is the static pass.
    client
        .initialize(None, json!({"targets": ["onnx"], "trace": "off"}))
        .await;
    let entry = "file:///tmp/pt2lsp-targets/onnx_entry.py";
    let with_entrypoint =
        format!("{KTHVALUE}\n\nmodel = M()\nexample_args = (torch.randn(4, 16),)\n");
    client.open(entry, 1, &with_entrypoint).await;
    let diagnostics = client.diagnostics(entry, 1).await;
    assert_eq!(
        codes(&diagnostics),
        [("PT707".to_owned(), 5)],
        "{diagnostics:#?}"
    );
    let message = diagnostics[0]["message"].as_str().unwrap();
    assert!(
        message.contains("`torch.kthvalue`") && message.contains("`onnx`"),
        "{message}"
    );
    assert_eq!(diagnostics[0]["severity"], 2, "a warning");
    // The same call in a file with no entrypoint: nothing here is lowered for a target.
    let alone = "file:///tmp/pt2lsp-targets/onnx_model_only.py";
    client.open(alone, 1, KTHVALUE).await;
    assert_eq!(codes(&client.diagnostics(alone, 1).await), []);
    // The file's own `targets` adds to the configured ones; `pt2` runs any op.
    let own = "file:///tmp/pt2lsp-targets/own_targets.py";
    let text = with_entrypoint.replace("torch.kthvalue(x, 2, dim=-1).values", "torch.histc(x)")
        + "targets = [\"pt2\", \"core-aten\"]\n";
    client.open(own, 1, &text).await;
    let diagnostics = client.diagnostics(own, 1).await;
    let messages: Vec<&str> = diagnostics
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes(&diagnostics),
        [("PT707".to_owned(), 5)],
        "{diagnostics:#?}"
    );
    assert!(
        messages[0].contains("`torch.histc`") && messages[0].contains("`core-aten`"),
        "{messages:?}"
    );
    client.shutdown_and_exit().await;
}

/// `fixtures/projects/deploy_script` under `root`, with `pyproject` as its `pyproject.toml`;
/// `own_targets: false` takes the script's `targets = ["executorch"]` out.
fn deploy_project(root: &Path, pyproject: &str, own_targets: bool) {
    let fixture = torch_support::repository().join("fixtures/projects/deploy_script");
    for file in [
        "mymodels/__init__.py",
        "mymodels/net.py",
        "scripts/export_pte.py",
    ] {
        let to = root.join(file);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        let text = fs::read_to_string(fixture.join(file)).unwrap();
        let text = if own_targets {
            text
        } else {
            text.replace("targets = [\"executorch\"]\n", "")
        };
        fs::write(to, text).unwrap();
    }
    fs::write(root.join("pyproject.toml"), pyproject).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_file_opened_alone_is_warned_for_its_export_scripts_targets() {
    let table = "[project]\nname = \"audio\"\n\n[[tool.pt2lsp.entrypoints]]\nscript = \"scripts/export_pte.py\"\ntargets = [\"executorch\"]\n";
    let plain = "[project]\nname = \"audio\"\n";
    // (pyproject.toml, the script keeps its own targets, the editor's settings, the target named)
    let cases = [
        (plain, true, json!({"trace": "off"}), "executorch"),
        (table, false, json!({"trace": "off"}), "executorch"),
        (
            plain,
            false,
            json!({"trace": "off", "targets": ["core-aten"]}),
            "core-aten",
        ),
    ];
    for (pyproject, own_targets, settings, target) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        deploy_project(&root, pyproject, own_targets);
        let (_child, mut client) = spawn();
        client.initialize(Some(&root), settings).await;
        client.scanned().await;
        let net = root.join("mymodels/net.py");
        let text = fs::read_to_string(&net).unwrap();
        let uri = file_uri(&net);
        client.open(&uri, 1, &text).await;
        let diagnostics = client.diagnostics(&uri, 1).await;
        let line = text
            .lines()
            .position(|line| line.ends_with("# warning[PT707]"))
            .expect("the mark") as u64;
        assert_eq!(
            codes(&diagnostics),
            [("PT707".to_owned(), line)],
            "{target}: {diagnostics:#?}"
        );
        let message = diagnostics[0]["message"].as_str().unwrap();
        assert!(
            message.contains("`torch.histc`")
                && message.contains(&format!("the deployment target `{target}`")),
            "{message}"
        );
        client.shutdown_and_exit().await;
    }
}
