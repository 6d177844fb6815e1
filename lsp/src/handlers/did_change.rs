//! `textDocument/didChange`: apply the edits now and ask for an analysis of the new text, and
//! of the open files whose analysis reads it.
//!
//! The edits are applied before this handler could ever await: tower-lsp may run the next
//! notification's handler as soon as this one yields, and edits must land in order.

use std::sync::Arc;

use tower_lsp_server::ls_types::DidChangeTextDocumentParams;

use crate::session::Session;

pub fn handle(session: &Arc<Session>, params: DidChangeTextDocumentParams) {
    let uri = params.text_document.uri;
    let Some(mut open) = session.documents.get_mut(&uri) else {
        crate::log_stderr(&format!(
            "didChange for a document that is not open: {}",
            uri.as_str()
        ));
        return;
    };
    open.document
        .apply_changes(&params.content_changes, params.text_document.version);
    // The entry's lock must go before scheduling, which takes it again.
    drop(open);
    session.edited(&uri);
}
