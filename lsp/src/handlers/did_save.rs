//! `textDocument/didSave`: trace again every entrypoint that reaches the saved file (its own, and
//! those of the files that import it; a trace still running for one is cancelled), and, since
//! it is now what other files import, refresh its summary in the index.

use std::sync::Arc;

use pt2lsp_analyzer::summarize_file;
use tower_lsp_server::ls_types::DidSaveTextDocumentParams;

use crate::session::{Session, TraceReason};
use crate::workspace;

// The routing table (`handlers/mod.rs`) passes every notification's parameters by value.
#[allow(clippy::needless_pass_by_value)]
pub fn handle(session: &Arc<Session>, params: DidSaveTextDocumentParams) {
    session.trace(&params.text_document.uri, TraceReason::Save);
    let Some((rope, path)) = session
        .documents
        .get(&params.text_document.uri)
        .and_then(|open| Some((open.document.rope().clone(), open.path.clone()?)))
    else {
        return;
    };
    let Some(place) = workspace::module_place(&path).filter(|_| workspace::is_python(&path)) else {
        return;
    };
    if session.workspace.is_excluded(&path) {
        return;
    }
    let session = Arc::clone(session);
    tokio::spawn(async move {
        let workspace = Arc::clone(&session.workspace);
        let changed = tokio::task::spawn_blocking(move || {
            let summary = summarize_file(place.file(&rope.to_string()));
            workspace.update_summary(&path, Some(summary))
        })
        .await
        .unwrap_or(false);
        if changed {
            session.rebuild_index().await;
            session.schedule_all();
        }
    });
}
