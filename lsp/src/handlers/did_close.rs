//! `textDocument/didClose`: forget the document and clear its diagnostics, but for what a trace
//! found in the file as it is on disk. The file on disk is what other files' analyses read now:
//! the open files that read it are analysed again, and its summary is read from disk again
//! (an unsaved edit may have changed what the index says it imports).

use std::sync::Arc;

use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

use crate::session::Session;
use crate::workspace;

pub fn handle(session: &Arc<Session>, params: DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    if !session.close(&uri) {
        crate::log_stderr(&format!(
            "didClose for a document that is not open: {}",
            uri.as_str()
        ));
        return;
    }
    let path = uri
        .to_file_path()
        .map(std::borrow::Cow::into_owned)
        .filter(|path| workspace::is_python(path));
    if let Some(path) = &path {
        session.file_changed(path);
    }
    let session = Arc::clone(session);
    tokio::spawn(async move {
        session.clear(uri).await;
        let Some(path) = path else {
            return;
        };
        // The blocking task holds the workspace part, not the session.
        let workspace = Arc::clone(&session.workspace);
        let changed = tokio::task::spawn_blocking(move || {
            workspace.summarise_from_disk(&[(path, false)])
        })
        .await
        .unwrap_or(false);
        if changed {
            session.rebuild_index().await;
            session.schedule_all();
        }
    });
}
