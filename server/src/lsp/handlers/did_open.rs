//! `textDocument/didOpen`: start tracking the document and analyse it at once.

use std::sync::Arc;

use tower_lsp_server::ls_types::DidOpenTextDocumentParams;

use crate::lsp::session::Session;

pub fn did_open(session: &Arc<Session>, params: DidOpenTextDocumentParams) {
    let document = params.text_document;
    session.open(document.uri.clone(), &document.text, document.version);
    session.schedule(document.uri);
}
