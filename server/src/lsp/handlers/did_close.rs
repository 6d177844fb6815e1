//! `textDocument/didClose`: forget the document and clear its diagnostics, but for what a trace
//! found in the file as it is on disk.

use std::sync::Arc;

use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

use crate::lsp::session::Session;

pub fn did_close(session: &Arc<Session>, params: DidCloseTextDocumentParams) {
    let uri = params.text_document.uri;
    if !session.close(&uri) {
        crate::lsp::log_stderr(&format!(
            "didClose for a document that is not open: {}",
            uri.as_str()
        ));
        return;
    }
    let session = Arc::clone(session);
    tokio::spawn(async move { session.clear(uri).await });
}
