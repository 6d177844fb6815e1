//! The language server in process: the real `serve` loop over in-memory pipes, and its
//! documents directly (the random edit tests below), through `pt2lsp::in_process`.

mod common;

use std::path::Path;

use common::{TestClient, file_uri};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Starts a server on in-memory pipes and returns a client connected to it.
fn start() -> TestClient {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    tokio::spawn(pt2lsp::in_process::serve(server_read, server_write));
    let (client_read, client_write) = tokio::io::split(client_end);
    TestClient::new(client_read, client_write)
}

async fn started(root: Option<&Path>, options: Value) -> TestClient {
    let mut client = start();
    let response = client.initialize(root, options).await;
    assert_eq!(
        response["result"]["capabilities"]["textDocumentSync"]["change"], 2,
        "{response}"
    );
    client
}

fn codes(diagnostics: &[Value]) -> Vec<&str> {
    diagnostics
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect()
}

fn change(version: i32, start: (u32, u32), end: (u32, u32), text: &str) -> Value {
    json!({
        "textDocument": {"uri": "file:///tmp/pt2lsp-test/model.py", "version": version},
        "contentChanges": [{
            "range": {"start": {"line": start.0, "character": start.1}, "end": {"line": end.0, "character": end.1}},
            "text": text
        }]
    })
}

const URI: &str = "file:///tmp/pt2lsp-test/model.py";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syntax_error_is_published_with_its_version_and_rule_page() {
    let mut client = started(None, Value::Null).await;
    client.open(URI, 1, "def f(:\n    return 1\n").await;
    let diagnostics = client.diagnostics(URI, 1).await;
    assert_eq!(codes(&diagnostics)[0], "PT001", "{diagnostics:#?}");
    let diagnostic = &diagnostics[0];
    assert_eq!(diagnostic["source"], "pt2lsp");
    assert_eq!(diagnostic["severity"], 1);
    // The link opens the rule's page, the same as the repository's `docs/rules/PT001.md`.
    let href = diagnostic["codeDescription"]["href"].as_str().unwrap();
    let page = href
        .strip_prefix("file://")
        .unwrap_or_else(|| panic!("a file link: {href}"));
    let repository_page =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/rules/PT001.md");
    assert_eq!(
        std::fs::read_to_string(page).unwrap(),
        std::fs::read_to_string(repository_page).unwrap(),
        "{href}"
    );
    assert_eq!(diagnostic["data"]["code"], "PT001");
    assert_eq!(diagnostic["data"]["name"], "syntax-error");
    assert_eq!(diagnostic["data"]["version"], 1);
    client.shutdown_and_exit().await;
    assert!(client.closed().await, "the server did not stop after exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_count_utf16_units_after_emoji_and_cjk() {
    let mut client = started(None, Value::Null).await;
    client.open(URI, 1, "s = '😀漢字'\nt = 1\n").await;
    assert!(client.diagnostics(URI, 1).await.is_empty());
    // `'😀漢字'` spans UTF-16 columns 4..10: the emoji takes two units. Replace the closing
    // quote with `(`, leaving an unterminated string on line 0.
    client
        .notify("textDocument/didChange", change(2, (0, 9), (0, 10), ""))
        .await;
    let diagnostics = client.diagnostics(URI, 2).await;
    assert_eq!(codes(&diagnostics)[0], "PT001", "{diagnostics:#?}");
    assert_eq!(diagnostics[0]["range"]["start"]["line"], 0);
    assert_eq!(
        diagnostics[0]["range"]["start"]["character"], 4,
        "{diagnostics:#?}"
    );
    // Put it back, in two edits in one notification: both apply, in order.
    let both = json!({
        "textDocument": {"uri": URI, "version": 3},
        "contentChanges": [
            {"range": {"start": {"line": 0, "character": 9}, "end": {"line": 0, "character": 9}}, "text": "X"},
            {"range": {"start": {"line": 0, "character": 9}, "end": {"line": 0, "character": 10}}, "text": "'"}
        ]
    });
    client.notify("textDocument/didChange", both).await;
    assert!(client.diagnostics(URI, 3).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_edits_publishes_the_last_version_last() {
    let mut client = started(None, Value::Null).await;
    client.open(URI, 1, "x = 1\n").await;
    client.diagnostics(URI, 1).await;
    for version in 2..=60 {
        let text = if version % 2 == 0 { "(" } else { ")" };
        client
            .notify(
                "textDocument/didChange",
                change(version, (0, 0), (0, 0), text),
            )
            .await;
    }
    // 30 `(` and 29 `)`: one unclosed bracket.
    let diagnostics = client.diagnostics(URI, 60).await;
    assert!(codes(&diagnostics).contains(&"PT001"), "{diagnostics:#?}");
    // A request round trip, then nothing older may have been published after version 60.
    client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": 9, "character": 0}}),
        )
        .await;
    client
        .notify("textDocument/didChange", change(61, (0, 0), (0, 1), ""))
        .await;
    client.diagnostics(URI, 61).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_faster_than_analysis_publish_in_order_and_end_with_the_last() {
    let mut client = started(None, Value::Null).await;
    // A file large enough that analysing it takes longer than the edits below are apart.
    let text = PT101_MODEL.repeat(300);
    client.open(URI, 1, &text).await;
    client.diagnostics(URI, 1).await;
    let line = text.lines().count() as u32;
    for version in 2..=40 {
        let typed = if version % 2 == 0 { "x" } else { "(" };
        client
            .notify(
                "textDocument/didChange",
                change(version, (line, 0), (line, 0), typed),
            )
            .await;
    }
    let versions = client.published_versions(URI, 40).await;
    // Versions superseded before their analysis ended are never published; the others are,
    // oldest first, and the last edit always is.
    assert!(
        versions.windows(2).all(|pair| pair[0] < pair[1]),
        "{versions:?}"
    );
    assert_eq!(versions.last(), Some(&Some(40)), "{versions:?}");
    let edited = client.diagnostics(URI, 40).await;
    assert!(codes(&edited).contains(&"PT001"), "{edited:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_on_a_diagnostic_starts_with_its_message_then_its_rule() {
    let mut client = started(None, Value::Null).await;
    client.open(URI, 1, "def f(:\n    return 1\n").await;
    let diagnostics = client.diagnostics(URI, 1).await;
    let start = diagnostics[0]["range"]["start"].clone();
    let hover = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": start}),
        )
        .await;
    let markdown = hover["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(hover["result"]["contents"]["kind"], "markdown");
    let message = diagnostics[0]["message"].as_str().unwrap();
    assert!(
        markdown.starts_with(&format!("**PT001** {message}")),
        "{markdown}"
    );
    // The rule in one line and a link to its page, not the page itself.
    assert!(markdown.contains("`syntax-error`"), "{markdown}");
    assert!(!markdown.contains("## What it does"), "{markdown}");
    let link = markdown
        .split("[Rule page](file://")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("a link to the rule page: {markdown}"));
    assert!(
        std::fs::read_to_string(link).is_ok_and(|page| page.starts_with("# PT001 `syntax-error`")),
        "{markdown}"
    );
    let away = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": 1, "character": 12}}),
        )
        .await;
    assert_eq!(away["result"], Value::Null, "{away}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_action_suppresses_the_diagnostic() {
    let mut client = started(None, Value::Null).await;
    client.open(URI, 1, "x = (1,\n").await;
    let diagnostics = client.diagnostics(URI, 1).await;
    assert_eq!(codes(&diagnostics), ["PT001"]);
    let response = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": URI},
                "range": diagnostics[0]["range"],
                "context": {"diagnostics": diagnostics, "only": ["quickfix"]}
            }),
        )
        .await;
    let actions = response["result"].as_array().unwrap();
    let ignore = actions
        .iter()
        .find(|a| a["title"] == "Ignore PT001 on this line")
        .expect("an ignore action");
    assert_eq!(ignore["kind"], "quickfix");
    let document_edit = &ignore["edit"]["documentChanges"][0];
    assert_eq!(document_edit["textDocument"]["version"], 1);
    let edit = &document_edit["edits"][0];
    let position = &edit["range"]["start"];
    assert_eq!(edit["newText"], "  # pt2lsp: ignore[PT001]");
    let line = position["line"].as_u64().unwrap() as u32;
    let character = position["character"].as_u64().unwrap() as u32;
    client
        .notify(
            "textDocument/didChange",
            change(
                2,
                (line, character),
                (line, character),
                edit["newText"].as_str().unwrap(),
            ),
        )
        .await;
    assert!(client.diagnostics(URI, 2).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_fixes_come_from_diagnostic_data_alone() {
    let mut client = started(None, Value::Null).await;
    client.open(URI, 7, "y = x.item()\n").await;
    client.diagnostics(URI, 7).await;
    let edit = json!({"range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 12}}, "newText": "x"});
    let diagnostic = json!({
        "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 12}},
        "message": "m",
        "source": "pt2lsp",
        "code": "PT102",
        "data": {
            "code": "PT102", "name": "data-dependent-scalar", "version": 7,
            "fix": {"title": "Keep it a tensor", "edits": [{"range": [4, 12], "content": "x"}], "applicability": "safe"},
            "edits": [edit]
        }
    });
    let response = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": URI}, "range": diagnostic["range"], "context": {"diagnostics": [diagnostic]}}),
        )
        .await;
    let actions = response["result"].as_array().unwrap();
    let fix = actions
        .iter()
        .find(|a| a["title"] == "Keep it a tensor")
        .expect("the fix");
    assert_eq!(fix["isPreferred"], true);
    assert_eq!(fix["edit"]["documentChanges"][0]["edits"][0], edit);
    assert_eq!(
        fix["edit"]["documentChanges"][0]["textDocument"]["version"],
        7
    );
    // No rule has a safe fix for this text, so "fix all" has nothing to offer.
    assert!(
        !actions.iter().any(|a| a["kind"] == "source.fixAll.pt2lsp"),
        "{actions:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_action_request_without_diagnostics_gets_those_of_its_lines() {
    let mut client = started(None, Value::Null).await;
    let text = "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n";
    client.open(URI, 1, text).await;
    let diagnostics = client.diagnostics(URI, 1).await;
    assert_eq!(codes(&diagnostics), ["PT101"], "{diagnostics:#?}");
    // The cursor at the end of the flagged line, and no diagnostics in the context, as eglot
    // sends it.
    let at_end = json!({"line": 3, "character": 23});
    let response = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": URI}, "range": {"start": at_end, "end": at_end}, "context": {"diagnostics": []}}),
        )
        .await;
    let titles: Vec<&str> = response["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|action| action["title"].as_str())
        .collect();
    assert!(titles.contains(&"Ignore PT101 on this line"), "{titles:?}");
    assert!(
        titles.iter().any(|title| title.contains("torch.where")),
        "{titles:?}"
    );
    // A line without a diagnostic gets no quick fix.
    let elsewhere = json!({"line": 0, "character": 3});
    let response = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": URI}, "range": {"start": elsewhere, "end": elsewhere}, "context": {"diagnostics": [], "only": ["quickfix"]}}),
        )
        .await;
    assert_eq!(response["result"], json!([]), "{response}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_settings_override_pyproject_and_pyproject_changes_apply() {
    let dir = tempfile::tempdir().unwrap();
    let pyproject = dir.path().join("pyproject.toml");
    std::fs::write(&pyproject, "[tool.pt2lsp]\nignore = [\"PT001\"]\n").unwrap();
    let path = dir.path().join("broken.py");
    std::fs::write(&path, "x = (1,\n").unwrap();
    let uri = file_uri(&path);
    let mut client = started(Some(dir.path()), Value::Null).await;
    client.open(&uri, 1, "x = (1,\n").await;
    client.settles_to(&uri, 1, &[]).await;

    client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"pt2lsp": {"ignore": []}}}),
        )
        .await;
    // The editor's empty `ignore` wins over the pyproject's.
    client.settles_to(&uri, 1, &["PT001"]).await;

    // A pull-model client sends no settings and answers workspace/configuration instead.
    *client.configuration.lock().unwrap() = json!({"select": ["PT2"]});
    client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": null}),
        )
        .await;
    client.settles_to(&uri, 1, &[]).await;

    // No editor settings: the pyproject applies again, and a change to it is picked up.
    *client.configuration.lock().unwrap() = Value::Null;
    client
        .notify(
            "workspace/didChangeConfiguration",
            json!({"settings": null}),
        )
        .await;
    client.settles_to(&uri, 1, &[]).await;
    std::fs::write(&pyproject, "[tool.pt2lsp]\nstrict = true\n").unwrap();
    client
        .notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": [{"uri": file_uri(&pyproject), "type": 2}]}),
        )
        .await;
    client.settles_to(&uri, 1, &["PT001"]).await;
}

const PT101_MODEL: &str = "import torch\n\n\nclass M(torch.nn.Module):  # 😀 漢字\n    def forward(self, x):\n        s = '😀漢字'; y = x.sum()  # 👍🏽\n        if y > 0:  # 😀\n            return x * 2\n        return x\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_dependent_branch_is_reported_explained_and_ignorable() {
    let mut client = started(None, Value::Null).await;
    client.open(URI, 1, PT101_MODEL).await;
    let diagnostics = client.diagnostics(URI, 1).await;
    assert_eq!(codes(&diagnostics), ["PT101"], "{diagnostics:#?}");
    // `if y > 0:` on line 6: the condition starts at UTF-16 column 11.
    assert_eq!(
        diagnostics[0]["range"]["start"],
        json!({"line": 6, "character": 11})
    );
    let hover = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": {"line": 6, "character": 12}}),
        )
        .await;
    let markdown = hover["result"]["contents"]["value"].as_str().unwrap();
    // The shape of `y` (a tensor of no dimensions) heads the hover; after it, the line's own
    // message first, then the rule in one line.
    let (shape, found) = markdown.split_once("\n---\n\n").unwrap_or(("", markdown));
    assert!(shape.contains("y: Tensor[]"), "{markdown}");
    let message = diagnostics[0]["message"].as_str().unwrap();
    assert!(
        found.starts_with(&format!("**PT101** {message}")),
        "{markdown}"
    );
    assert!(markdown.contains("`data-dependent-branch`"), "{markdown}");
    let response = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": URI},
                "range": diagnostics[0]["range"],
                "context": {"diagnostics": diagnostics}
            }),
        )
        .await;
    let actions = response["result"].as_array().unwrap();
    let ignore = actions
        .iter()
        .find(|a| a["title"] == "Ignore PT101 on this line")
        .expect("an ignore action");
    let edit = &ignore["edit"]["documentChanges"][0]["edits"][0];
    // After `        if y > 0:  # 😀`, whose emoji counts two units.
    assert_eq!(edit["range"]["start"], json!({"line": 6, "character": 23}));
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": URI, "version": 2},
                "contentChanges": [{"range": edit["range"], "text": edit["newText"]}]
            }),
        )
        .await;
    assert!(client.diagnostics(URI, 2).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_base_class_in_another_file_is_found_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("pkg");
    std::fs::create_dir(&package).unwrap();
    std::fs::write(package.join("__init__.py"), "").unwrap();
    let base = package.join("base.py");
    std::fs::write(
        &base,
        "import torch\n\n\nclass Base(torch.nn.Module):\n    pass\n",
    )
    .unwrap();
    let model = package.join("model.py");
    let text = "from pkg.base import Base\n\n\nclass M(Base):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n";
    std::fs::write(&model, text).unwrap();
    let uri = file_uri(&model);
    let mut client = started(Some(dir.path()), Value::Null).await;
    client.open(&uri, 1, text).await;
    client.settles_to(&uri, 1, &["PT101"]).await;

    // `Base` stops being a module on disk: the watcher's event updates the index.
    std::fs::write(&base, "class Base:\n    pass\n").unwrap();
    client
        .notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": [{"uri": file_uri(&base), "type": 2}]}),
        )
        .await;
    client.settles_to(&uri, 1, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_workspace_folder_is_indexed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("layers.py"),
        "import torch\n\n\nclass Base(torch.nn.Module):\n    pass\n",
    )
    .unwrap();
    let model = dir.path().join("model.py");
    let text = "from layers import Base\n\n\nclass M(Base):\n    def forward(self, x):\n        while x.max() > 1:\n            x = x / 2\n        return x\n";
    std::fs::write(&model, text).unwrap();
    let uri = file_uri(&model);
    let mut client = started(None, Value::Null).await;
    client.open(&uri, 1, text).await;
    client.settles_to(&uri, 1, &[]).await;
    client
        .notify(
            "workspace/didChangeWorkspaceFolders",
            json!({"event": {"added": [{"uri": file_uri(dir.path()), "name": "models"}], "removed": []}}),
        )
        .await;
    client.settles_to(&uri, 1, &["PT101"]).await;
    client
        .notify(
            "workspace/didChangeWorkspaceFolders",
            json!({"event": {"added": [], "removed": [{"uri": file_uri(dir.path()), "name": "models"}]}}),
        )
        .await;
    client.settles_to(&uri, 1, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialization_options_are_settings() {
    let mut client = started(
        None,
        json!({"ignore": ["PT0"], "trace": "off", "timeout": 5}),
    )
    .await;
    client.open(URI, 1, "def f(:\n").await;
    assert!(client.diagnostics(URI, 1).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_over_max_file_size_gets_its_syntax_checked_and_says_why() {
    let mut client = started(None, json!({"maxFileSize": 1, "trace": "off"})).await;
    let model = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n";
    // Over 1 KiB: a data-dependent branch, and a syntax error at the end.
    let large = format!("{model}{}\ndef broken(:\n", "# padding\n".repeat(120));
    client.open(URI, 1, &large).await;
    let diagnostics = client.diagnostics(URI, 1).await;
    let found: Vec<(Option<&str>, u64, u64)> = diagnostics
        .iter()
        .map(|d| {
            (
                d["code"].as_str(),
                d["severity"].as_u64().unwrap(),
                d["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    // The information on the first line, then the syntax error: no PT101.
    assert_eq!(found[0], (None, 3, 0), "{diagnostics:#?}");
    assert!(
        diagnostics[0]["message"]
            .as_str()
            .unwrap()
            .contains("over `max-file-size` (1 KiB)"),
        "{diagnostics:#?}"
    );
    assert!(
        found.len() > 1
            && found[1..]
                .iter()
                .all(
                    |(code, severity, line)| (*code, *severity) == (Some("PT001"), 1)
                        && *line >= 129
                ),
        "{diagnostics:#?}"
    );
    // Below the limit, the same model is analysed.
    let small = "file:///tmp/pt2lsp-test/small.py";
    client.open(small, 1, model).await;
    assert_eq!(codes(&client.diagnostics(small, 1).await), ["PT101"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_scan_reports_progress_and_registers_watchers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/__init__.py"), "").unwrap();
    std::fs::write(
        dir.path().join("pkg/layers.py"),
        "import torch\nclass Block(torch.nn.Module):\n    pass\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("pkg/blob.py"), [0xff, 0xfe, 0x00, 0x41]).unwrap();
    let mut client = started(Some(dir.path()), Value::Null).await;
    let end = client
        .wait_for(|message| {
            message["method"] == "$/progress" && message["params"]["value"]["kind"] == "end"
        })
        .await;
    assert_eq!(
        end["params"]["value"]["message"], "2 files indexed",
        "{end}"
    );
    let requests = client.server_requests.lock().unwrap().clone();
    let registration = requests
        .iter()
        .find(|r| r["method"] == "client/registerCapability")
        .expect("a registration");
    let watchers = &registration["params"]["registrations"][0]["registerOptions"]["watchers"];
    assert!(
        watchers
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["globPattern"] == "**/*.py"),
        "{registration}"
    );
    assert!(
        requests
            .iter()
            .any(|r| r["method"] == "window/workDoneProgress/create")
    );

    let response = client
        .request(
            "workspace/executeCommand",
            json!({"command": "pt2lsp.reanalyze"}),
        )
        .await;
    assert_eq!(response["result"], Value::Null, "{response}");
    let response = client
        .request(
            "workspace/executeCommand",
            json!({"command": "pt2lsp.nothing"}),
        )
        .await;
    assert_eq!(response["error"]["code"], -32602, "{response}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scan_honours_exclude_and_rescans_when_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let pyproject = dir.path().join("pyproject.toml");
    std::fs::write(&pyproject, "[tool.pt2lsp]\nexclude = [\"generated\"]\n").unwrap();
    for file in ["model.py", "generated/layers.py", "venv/lib.py"] {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x = 1\n").unwrap();
    }
    let mut client = started(Some(dir.path()), Value::Null).await;
    let scan_end = |message: &Value| {
        message["method"] == "$/progress" && message["params"]["value"]["kind"] == "end"
    };
    let end = client.wait_for(scan_end).await;
    // `venv` is one of the CLI's default excludes, `generated` the project's.
    assert_eq!(
        end["params"]["value"]["message"], "1 files indexed",
        "{end}"
    );
    std::fs::write(&pyproject, "[tool.pt2lsp]\nexclude = []\n").unwrap();
    client
        .notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": [{"uri": file_uri(&pyproject), "type": 2}]}),
        )
        .await;
    let end = client.wait_for(scan_end).await;
    assert_eq!(
        end["params"]["value"]["message"], "2 files indexed",
        "{end}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_answers_not_a_crash() {
    let mut client = started(None, Value::Null).await;
    let unknown = "file:///nowhere/unknown.py";
    let hover = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": unknown}, "position": {"line": 0, "character": 0}}),
        )
        .await;
    assert_eq!(hover["result"], Value::Null, "{hover}");
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": {"uri": unknown}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "context": {"diagnostics": []}}),
        )
        .await;
    assert_eq!(actions["result"], Value::Null, "{actions}");
    client
        .notify("textDocument/didChange", change(3, (0, 0), (0, 0), "x"))
        .await;
    let response = client.request("pt2lsp/noSuchMethod", json!({})).await;
    assert_eq!(response["error"]["code"], -32601, "{response}");
    client
        .send_raw(b"{\"jsonrpc\": \"2.0\", \"method\": ")
        .await;
    let error = client
        .wait_for(|message| message["id"].is_null() && message.get("error").is_some())
        .await;
    assert_eq!(error["error"]["code"], -32700, "{error}");
    client.send_raw(b"{\"id\": 77, \"method\": 5}").await;
    let error = client.wait_for(|message| message["id"] == 77).await;
    assert_eq!(error["error"]["code"], -32600, "{error}");
    client.send_raw(&[0xff, 0xfe, 0x00]).await;
    let error = client
        .wait_for(|message| message["id"].is_null() && message.get("error").is_some())
        .await;
    assert_eq!(error["error"]["code"], -32700, "{error}");
    // Out-of-range positions and NUL characters are taken in stride.
    client
        .open(URI, 1, "x = '\u{0}\u{1b}'\n\u{feff}y = 1\n")
        .await;
    client.diagnostics(URI, 1).await;
    client
        .notify("textDocument/didChange", change(2, (90, 4), (3, 200), "z"))
        .await;
    client.diagnostics(URI, 2).await;
    // A 5 MB document, over the default `max-file-size`, gets its syntax checked: no error,
    // and the one information that says why it is not analysed.
    let big = "x = torch.zeros(3)  # 😀 漢字\n".repeat(5 * 1024 * 1024 / 33);
    client.open("file:///tmp/pt2lsp-test/big.py", 1, &big).await;
    let diagnostics = client
        .diagnostics("file:///tmp/pt2lsp-test/big.py", 1)
        .await;
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    assert_eq!(diagnostics[0]["severity"], 3, "{diagnostics:#?}");
    client.shutdown_and_exit().await;
    assert!(client.closed().await);
}

/// Converts a byte offset of `text` to an LSP position, independently of the server's code.
fn position_of(text: &str, offset: usize) -> (u32, u32) {
    let (mut line, mut character) = (0, 0);
    let mut chars = text[..offset].chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' | '\n' => {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                line += 1;
                character = 0;
            }
            c => character += c.len_utf16() as u32,
        }
    }
    (line, character)
}

/// Moves an offset off the inside of a character and of a `\r\n` pair, which no position names.
fn snap(text: &str, mut offset: usize) -> usize {
    offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    if offset > 0 && text[..offset].ends_with('\r') && text[offset..].starts_with('\n') {
        offset -= 1;
    }
    offset
}

const FRAGMENTS: &[&str] = &[
    "def f(x):\n",
    "    if x.sum() > 0:\n",
    "        return x\n",
    "😀",
    "漢字",
    "(",
    ")",
    ":",
    "'",
    "\"",
    "\n",
    "\r\n",
    "\r",
    " ",
    "x",
    "é",
    "\u{2028}",
    "\u{c}",
    "# c",
    "1",
    "\t",
    "👍🏽",
];

fn text_strategy(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(FRAGMENTS), 0..max)
        .prop_map(|parts| parts.concat())
}

/// One edit: where it starts and how much it replaces, in thousandths of the text's length,
/// and what it inserts.
fn edit_strategy() -> impl Strategy<Value = (usize, usize, String)> {
    (0..=1000usize, 0..=300usize, text_strategy(4))
}

/// Applies an edit to the model text; returns the LSP change the client would send.
fn apply(text: &mut String, (at, length, insert): &(usize, usize, String)) -> Value {
    let start = snap(text, text.len() * at / 1000);
    let end = snap(text, start + text.len() * length / 1000).max(start);
    let (start_line, start_character) = position_of(text, start);
    let (end_line, end_character) = position_of(text, end);
    text.replace_range(start..end, insert);
    json!({
        "range": {
            "start": {"line": start_line, "character": start_character},
            "end": {"line": end_line, "character": end_character}
        },
        "text": insert
    })
}

fn without_versions(mut diagnostics: Vec<Value>) -> Vec<Value> {
    for diagnostic in &mut diagnostics {
        diagnostic["data"]["version"] = Value::Null;
    }
    diagnostics
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_edits_keep_the_document_equal_to_the_model(
        initial in text_strategy(24),
        edits in proptest::collection::vec(edit_strategy(), 1..16),
    ) {
        let mut model = initial.clone();
        let mut document = pt2lsp::in_process::Document::new(&initial, 0);
        for (version, edit) in (1..).zip(&edits) {
            let change: tower_lsp_server::ls_types::TextDocumentContentChangeEvent =
                serde_json::from_value(apply(&mut model, edit)).unwrap();
            document.apply_changes(&[change], version);
            prop_assert_eq!(document.text(), model.clone());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_edits_end_with_the_diagnostics_of_the_final_text(
        initial in text_strategy(24),
        edits in proptest::collection::vec(edit_strategy(), 1..12),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let (edited, fresh) = runtime.block_on(async {
            let mut client = started(None, Value::Null).await;
            let mut model = initial.clone();
            client.open(URI, 0, &initial).await;
            let mut version = 0;
            for edit in &edits {
                version += 1;
                let change = apply(&mut model, edit);
                client
                    .notify(
                        "textDocument/didChange",
                        json!({"textDocument": {"uri": URI, "version": version}, "contentChanges": [change]}),
                    )
                    .await;
            }
            let edited = client.diagnostics(URI, version).await;
            let fresh_uri = "file:///tmp/pt2lsp-test/fresh.py";
            client.open(fresh_uri, 0, &model).await;
            let fresh = client.diagnostics(fresh_uri, 0).await;
            (without_versions(edited), without_versions(fresh))
        });
        prop_assert_eq!(edited, fresh);
    }
}

/// The interpreter with torch the trace tests run; scripts/test.sh sets it.
fn torch_python() -> String {
    std::env::var("PT2LSP_PYTHON")
        .expect("PT2LSP_PYTHON must name a Python with torch (scripts/test.sh sets it)")
}

/// A workspace holding the PT101 fixture, which follows the ExportDB convention.
fn traced_workspace() -> (tempfile::TempDir, String, String) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/rules/PT101/if_sum.py");
    let text = std::fs::read_to_string(fixture).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("if_sum.py");
    std::fs::write(&path, &text).unwrap();
    let uri = file_uri(&path);
    (dir, uri, text)
}

fn is_trace_progress(message: &Value, kind: &str) -> bool {
    message["method"] == "$/progress"
        && message["params"]["token"]
            .as_str()
            .is_some_and(|token| token.starts_with("pt2lsp/trace"))
        && message["params"]["value"]["kind"] == kind
}

fn has_trace_diagnostic(message: &Value, uri: &str) -> bool {
    message["method"] == "textDocument/publishDiagnostics"
        && message["params"]["uri"] == uri
        && message["params"]["diagnostics"]
            .as_array()
            .is_some_and(|all| {
                all.iter().any(|d| {
                    d["data"]["source"] == "trace" || d["data"]["source"] == "static+trace"
                })
            })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_with_an_entrypoint_is_traced_on_open_and_retraced_on_command() {
    let (dir, uri, text) = traced_workspace();
    let mut client = started(
        Some(dir.path()),
        json!({"python": torch_python(), "timeout": 120, "trace": "on-open-and-save"}),
    )
    .await;
    client.open(&uri, 1, &text).await;
    let begin = client
        .wait_for(|message| is_trace_progress(message, "begin"))
        .await;
    assert_eq!(
        begin["params"]["value"]["title"], "Tracing if_sum.py",
        "{begin}"
    );
    let published = client
        .wait_for(|message| has_trace_diagnostic(message, &uri))
        .await;
    assert_eq!(published["params"]["version"], 1, "{published}");
    let diagnostics = published["params"]["diagnostics"].as_array().unwrap();
    // The trace confirms the static PT101 on the same line: one diagnostic, marked as both.
    assert_eq!(codes(diagnostics), ["PT101"], "{diagnostics:#?}");
    assert_eq!(diagnostics[0]["source"], "pt2lsp");
    assert_eq!(diagnostics[0]["data"]["source"], "static+trace");
    assert_eq!(diagnostics[0]["range"]["start"]["line"], 7);
    // It says what the static pass says, in the user's terms, and keeps its quick fix.
    let message = diagnostics[0]["message"].as_str().unwrap();
    assert!(message.contains("`x.sum() > 0`"), "{message}");
    assert!(
        diagnostics[0]["data"]["fix"]["title"]
            .as_str()
            .is_some_and(|title| title.contains("torch.where")),
        "{:#}",
        diagnostics[0]
    );
    let end = client
        .wait_for(|message| is_trace_progress(message, "end"))
        .await;
    assert_eq!(
        end["params"]["value"]["message"], "1 problem: if_sum.py:8",
        "{end}"
    );

    let response = client
        .request(
            "workspace/executeCommand",
            json!({"command": "pt2lsp.retrace", "arguments": [uri]}),
        )
        .await;
    assert_eq!(response["result"], Value::Null, "{response}");
    let end = client
        .wait_for(|message| is_trace_progress(message, "end"))
        .await;
    assert_eq!(
        end["params"]["value"]["message"], "1 problem: if_sum.py:8",
        "{end}"
    );
    client.shutdown_and_exit().await;
}

/// A model whose convolution's kernel size is read from the environment: the analysis knows
/// `y`'s batch and channels but not its spatial sizes.
const KERNEL_FROM_PARAMETER: &str = "\
import torch
import torch.nn as nn
from torch.export import Dim


class Net(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, k, padding=k // 2)

    def forward(self, x):
        y = self.conv(x)
        return y.relu()


import os

model = Net(int(os.environ.get(\"KERNEL\", \"3\")))
example_args = (torch.randn(2, 3, 16, 16),)
dynamic_shapes = {\"x\": {0: Dim(\"batch\")}}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_trace_hints_and_hover_show_the_exported_programs_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kernel.py");
    std::fs::write(&path, KERNEL_FROM_PARAMETER).unwrap();
    let uri = file_uri(&path);
    let mut client = started(
        Some(dir.path()),
        json!({"python": torch_python(), "timeout": 120, "trace": "on-open-and-save"}),
    )
    .await;
    client.open(&uri, 1, KERNEL_FROM_PARAMETER).await;
    let end = client
        .wait_for(|message| is_trace_progress(message, "end"))
        .await;
    assert_eq!(end["params"]["value"]["message"], "no problems", "{end}");
    // The parameter's shape is the analysis's; `y`'s, whose spatial sizes it did not know,
    // the program's.
    assert_eq!(
        client.inlay_hints(&uri).await,
        [
            (10, ": [batch, 3, 16, 16]".to_owned()),
            (11, ": [batch, 8, 16, 16]".to_owned()),
        ]
    );
    let hover = client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": 12, "character": 16}}),
        )
        .await;
    let text = hover["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("y: Tensor[batch, 8, 16, 16]"), "{hover:#}");
    assert!(text.contains("last trace"), "{hover:#}");

    // An edit makes a new version: until it is traced, the analysis's shapes alone.
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [{"text": KERNEL_FROM_PARAMETER.replace("y.relu()", "y.tanh()")}]
            }),
        )
        .await;
    assert_eq!(
        client.inlay_hints(&uri).await,
        [
            (10, ": [batch, 3, 16, 16]".to_owned()),
            (11, ": [batch, 8, _, _]".to_owned()),
        ]
    );
    client.shutdown_and_exit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_interpreter_warns_once_and_keeps_static_diagnostics() {
    let (dir, uri, text) = traced_workspace();
    let mut client = started(
        Some(dir.path()),
        json!({"python": dir.path().join("no-such-python").to_str().unwrap(), "trace": "on-open-and-save"}),
    )
    .await;
    client.open(&uri, 1, &text).await;
    let diagnostics = client.diagnostics(&uri, 1).await;
    assert_eq!(codes(&diagnostics), ["PT101"], "{diagnostics:#?}");
    assert!(diagnostics[0]["data"].get("source").is_none());
    let warning = client
        .wait_for(|message| message["method"] == "window/showMessage")
        .await;
    assert_eq!(warning["params"]["type"], 2, "{warning}");
    let end = client
        .wait_for(|message| is_trace_progress(message, "end"))
        .await;
    assert!(
        end["params"]["value"]["message"]
            .as_str()
            .unwrap()
            .starts_with("failed: "),
        "{end}"
    );
    // Saving traces again: it fails again, without a second warning.
    client
        .notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri}}),
        )
        .await;
    client
        .wait_for(|message| is_trace_progress(message, "end"))
        .await;
    client
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
        )
        .await;
    assert!(
        client
            .wait_for_none(|message| message["method"] == "window/showMessage")
            .await,
        "a second warning"
    );
    client.shutdown_and_exit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_off_runs_nothing() {
    let (dir, uri, text) = traced_workspace();
    let mut client = started(
        Some(dir.path()),
        json!({"trace": "off", "python": dir.path().join("no-such-python").to_str().unwrap()}),
    )
    .await;
    client.open(&uri, 1, &text).await;
    assert_eq!(codes(&client.diagnostics(&uri, 1).await), ["PT101"]);
    client
        .notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri}}),
        )
        .await;
    client
        .request(
            "workspace/executeCommand",
            json!({"command": "pt2lsp.retrace", "arguments": [uri]}),
        )
        .await;
    assert!(
        client
            .wait_for_none(|message| message["method"] == "window/showMessage"
                || is_trace_progress(message, "begin"))
            .await,
        "a trace ran with trace = off"
    );
    client.shutdown_and_exit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_results_for_a_changed_text_are_dropped() {
    let (dir, uri, text) = traced_workspace();
    let mut client = started(
        Some(dir.path()),
        json!({"python": torch_python(), "timeout": 120, "trace": "on-open-and-save"}),
    )
    .await;
    client.open(&uri, 1, &text).await;
    // Edited while torch still imports: the trace of version 1 is stale when it ends.
    let line = text.lines().count() as u32;
    let edit = json!({
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{
            "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
            "text": "# edited\n"
        }]
    });
    client.notify("textDocument/didChange", edit).await;
    assert_eq!(codes(&client.diagnostics(&uri, 2).await), ["PT101"]);
    client
        .wait_for(|message| is_trace_progress(message, "end"))
        .await;
    assert!(
        client
            .wait_for_none(|message| has_trace_diagnostic(message, &uri))
            .await,
        "a stale trace was published"
    );
    client.shutdown_and_exit().await;
}
