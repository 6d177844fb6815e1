//! `textDocument/didOpen`: start tracking the document, analyse it at once, index its project
//! when its folder's walk skips it, and trace the entrypoints that reach it when the settings
//! say `trace = "on-open-and-save"`.

use std::sync::Arc;

use tower_lsp_server::ls_types::DidOpenTextDocumentParams;

use crate::session::{Session, TraceReason};

pub fn handle(session: &Arc<Session>, params: DidOpenTextDocumentParams) {
    let document = params.text_document;
    session.open(document.uri.clone(), &document.text, document.version);
    if let Some(path) = document.uri.to_file_path() {
        session.adopt_project(&path);
    }
    session.schedule(document.uri.clone());
    session.trace(&document.uri, TraceReason::Open);
}
