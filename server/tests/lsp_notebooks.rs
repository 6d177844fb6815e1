//! Notebooks in the language server (`notebookDocument/*`) through the real binary over stdio:
//! the diagnostics of `fixtures/notebooks/gated.ipynb` land on the cell they are in, at
//! cell-relative lines; a quick fix edits that cell; incremental cell edits and a cell inserted
//! before keep every position right; closing clears the cells.

mod common;

use std::process::Stdio;

use common::{TestClient, file_uri};
use serde_json::{Value, json};

/// The fixture's cells: (kind, text), kind 1 markup, 2 code.
fn fixture_cells() -> Vec<(u8, String)> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/notebooks/gated.ipynb");
    let notebook: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    notebook["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| {
            let text = match &cell["source"] {
                Value::Array(lines) => lines.iter().map(|line| line.as_str().unwrap()).collect(),
                other => other.as_str().unwrap().to_owned(),
            };
            let kind = if cell["cell_type"] == "code" { 2 } else { 1 };
            (kind, text)
        })
        .collect()
}

fn cell_uri(notebook: &str, id: &str) -> String {
    format!(
        "vscode-notebook-cell:{}#{id}",
        notebook.trim_start_matches("file://")
    )
}

/// The newest diagnostics published for `uri` at `version`.
async fn cell_diagnostics(client: &mut TestClient, uri: &str, version: i64) -> Vec<Value> {
    let message = client
        .wait_for(|message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri
                && message["params"]["version"] == version
        })
        .await;
    message["params"]["diagnostics"].as_array().unwrap().clone()
}

fn codes_at(diagnostics: &[Value]) -> Vec<(String, u64)> {
    diagnostics
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebooks_diagnostics_and_fixes_land_in_their_cells() {
    let dir = tempfile::tempdir().unwrap();
    let notebook_path = dir.path().canonicalize().unwrap().join("gated.ipynb");
    let notebook = file_uri(&notebook_path);
    let (mut child, mut client) = common::spawn_server(Stdio::inherit());
    let response = client
        .initialize(Some(&dir.path().canonicalize().unwrap()), json!({}))
        .await;
    let sync = &response["result"]["capabilities"]["notebookDocumentSync"];
    assert_eq!(
        sync["notebookSelector"][0]["cells"][0]["language"], "python",
        "{response}"
    );

    let cells = fixture_cells();
    let ids: Vec<String> = (1..=cells.len()).map(|index| format!("c{index}")).collect();
    client
        .notify(
            "notebookDocument/didOpen",
            json!({
                "notebookDocument": {
                    "uri": notebook,
                    "notebookType": "jupyter-notebook",
                    "version": 1,
                    "cells": cells.iter().zip(&ids).map(|((kind, _), id)| json!({
                        "kind": kind, "document": cell_uri(&notebook, id)
                    })).collect::<Vec<_>>(),
                },
                "cellTextDocuments": cells.iter().zip(&ids).map(|((kind, text), id)| json!({
                    "uri": cell_uri(&notebook, id),
                    "languageId": if *kind == 2 { "python" } else { "markdown" },
                    "version": 1,
                    "text": text,
                })).collect::<Vec<_>>(),
            }),
        )
        .await;
    let gate = cell_uri(&notebook, "c3");
    let found = cell_diagnostics(&mut client, &gate, 1).await;
    // `if x.sum() > 0:` is line 4 of cell 3 (0-based 3), after a masked `%time` line.
    assert!(
        codes_at(&found).contains(&("PT101".to_owned(), 3)),
        "{found:#?}"
    );
    let setup = cell_diagnostics(&mut client, &cell_uri(&notebook, "c2"), 1).await;
    assert!(
        setup.iter().all(|d| d["severity"] != 1),
        "the masked magics are no errors: {setup:#?}"
    );

    // A quick fix of the branch edits cell 3, and "ignore" appends to its line there.
    let branch = found.iter().find(|d| d["code"] == "PT101").unwrap().clone();
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": gate},
                "range": branch["range"],
                "context": {"diagnostics": [branch]},
            }),
        )
        .await;
    let actions = actions["result"].as_array().unwrap();
    let edited = |action: &Value| -> Vec<(String, Value)> {
        action["edit"]["documentChanges"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|change| {
                let uri = change["textDocument"]["uri"].as_str().unwrap().to_owned();
                change["edits"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(move |edit| (uri.clone(), edit.clone()))
            })
            .collect()
    };
    let ignore = actions
        .iter()
        .find(|action| action["title"] == "Ignore PT101 on this line")
        .unwrap_or_else(|| panic!("{actions:#?}"));
    let ignore_edits = edited(ignore);
    assert_eq!(ignore_edits.len(), 1);
    assert_eq!(ignore_edits[0].0, gate);
    assert_eq!(ignore_edits[0].1["range"]["start"]["line"], 3);
    let rewrite = actions
        .iter()
        .find(|action| action["title"] != "Ignore PT101 on this line")
        .unwrap_or_else(|| panic!("a fix of the branch: {actions:#?}"));
    let rewrite_edits = edited(rewrite);
    assert!(!rewrite_edits.is_empty());
    assert!(
        rewrite_edits.iter().all(|(uri, _)| uri == &gate),
        "{rewrite_edits:#?}"
    );
    assert!(
        rewrite_edits
            .iter()
            .any(|(_, edit)| edit["range"]["start"]["line"].as_u64().unwrap() >= 3),
        "{rewrite_edits:#?}"
    );

    // A code cell inserted before the others moves the module's lines, not the cells'; a line
    // typed at the top of cell 3 in the same change moves its branch down one.
    client
        .notify(
            "notebookDocument/didChange",
            json!({
                "notebookDocument": {"uri": notebook, "version": 2},
                "change": {"cells": {
                    "structure": {
                        "array": {"start": 1, "deleteCount": 0, "cells": [
                            {"kind": 2, "document": cell_uri(&notebook, "c0")}
                        ]},
                        "didOpen": [{
                            "uri": cell_uri(&notebook, "c0"), "languageId": "python", "version": 1,
                            "text": "import math\n\nSCALE = math.pi\n"
                        }],
                    },
                    "textContent": [{
                        "document": {"uri": gate, "version": 2},
                        "changes": [{
                            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                            "text": "# The gate.\n"
                        }],
                    }],
                }},
            }),
        )
        .await;
    let found = cell_diagnostics(&mut client, &gate, 2).await;
    assert!(
        codes_at(&found).contains(&("PT101".to_owned(), 4)),
        "{found:#?}"
    );

    // An incremental edit of cell 3 that removes the branch clears it.
    client
        .notify(
            "notebookDocument/didChange",
            json!({
                "notebookDocument": {"uri": notebook, "version": 3},
                "change": {"cells": {"textContent": [{
                    "document": {"uri": gate, "version": 3},
                    "changes": [{
                        "range": {"start": {"line": 4, "character": 0}, "end": {"line": 6, "character": 0}},
                        "text": ""
                    }],
                }]}},
            }),
        )
        .await;
    let found = cell_diagnostics(&mut client, &gate, 3).await;
    assert!(
        !codes_at(&found).iter().any(|(code, _)| code == "PT101"),
        "{found:#?}"
    );

    // Closing the notebook clears every cell.
    client
        .notify(
            "notebookDocument/didClose",
            json!({
                "notebookDocument": {"uri": notebook},
                "cellTextDocuments": ids.iter().map(|id| json!({"uri": cell_uri(&notebook, id)})).collect::<Vec<_>>(),
            }),
        )
        .await;
    let cleared = client
        .wait_for(|message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == gate
                && message["params"]["version"].is_null()
        })
        .await;
    assert_eq!(cleared["params"]["diagnostics"], json!([]));
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
}
