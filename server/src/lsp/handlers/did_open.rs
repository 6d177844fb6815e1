//! `textDocument/didOpen`: start tracking the document, analyse it at once, and trace it when
//! tracing is on and it has an entrypoint.

use std::sync::Arc;

use tower_lsp_server::ls_types::DidOpenTextDocumentParams;

use crate::lsp::session::Session;

pub fn did_open(session: &Arc<Session>, params: DidOpenTextDocumentParams) {
    let document = params.text_document;
    session.open(document.uri.clone(), &document.text, document.version);
    session.schedule(document.uri.clone());
    session.trace(document.uri);
}
