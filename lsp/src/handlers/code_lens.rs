//! `textDocument/codeLens`: "Export to .pt2" and "Trace again" above an entrypoint file's
//! `model = ...` line (the export file convention), running `pt2lsp.exportPt2` and
//! `pt2lsp.retrace` with the document's URI, and one "Export to ONNX" (AOTInductor,
//! ExecuTorch) per configured deployment target that writes an artefact. None when tracing is
//! off for the file: every command runs the exporter.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::ServerCapabilities;

use pt2lsp_analyzer::OutlineKind;
use tower_lsp_server::ls_types::{CodeLens, CodeLensParams, Command};

use crate::document::TextPositions;
use crate::session::Session;
use crate::{EXPORT_COMMAND, RETRACE_COMMAND};
use pt2lsp_project::config::TraceMode;

/// What the server advertises for this request.
pub fn advertise(capabilities: &mut ServerCapabilities) {
    capabilities.code_lens_provider = Some(tower_lsp_server::ls_types::CodeLensOptions {
        resolve_provider: Some(false),
    });
}

pub async fn handle(session: Arc<Session>, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
    Ok(code_lens(session, params).await)
}

async fn code_lens(session: Arc<Session>, params: CodeLensParams) -> Option<Vec<CodeLens>> {
    let uri = params.text_document.uri;
    let argument = serde_json::Value::String(uri.as_str().to_owned());
    let snapshot = session.request_snapshot(&uri)?;
    let (snapshot, symbols, settings) = tokio::task::spawn_blocking(move || {
        let symbols = snapshot.outline();
        let settings = snapshot.settings();
        (snapshot, symbols, settings)
    })
    .await
    .ok()?;
    let text = snapshot.text;
    if settings.trace == TraceMode::Off {
        return Some(Vec::new());
    }
    let positions = TextPositions::new(&text);
    let lenses = symbols
        .iter()
        .filter(|symbol| symbol.kind == OutlineKind::Entrypoint && symbol.name == "model")
        .flat_map(|symbol| {
            let range = positions.range(symbol.range);
            let lens = |title: &str, command: &str, arguments: Vec<serde_json::Value>| CodeLens {
                range,
                command: Some(Command {
                    title: title.to_owned(),
                    command: command.to_owned(),
                    arguments: Some(arguments),
                }),
                data: None,
            };
            let mut lenses = vec![
                lens("Export to .pt2", EXPORT_COMMAND, vec![argument.clone()]),
                lens("Trace again", RETRACE_COMMAND, vec![argument.clone()]),
            ];
            // `[uri, entry, output, target]`: the defaults, and the target.
            for target in &settings.targets {
                if let Some(title) = target.artefact_title() {
                    let arguments = vec![
                        argument.clone(),
                        serde_json::Value::Null,
                        serde_json::Value::Null,
                        serde_json::Value::String(target.as_str().to_owned()),
                    ];
                    lenses.push(lens(title, EXPORT_COMMAND, arguments));
                }
            }
            lenses
        })
        .collect();
    Some(lenses)
}
