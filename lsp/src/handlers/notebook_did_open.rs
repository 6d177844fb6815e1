//! `notebookDocument/didOpen`: keep the notebook's cells (see `lsp::notebooks`) and analyse it.

use std::sync::Arc;

use tower_lsp_server::ls_types::DidOpenNotebookDocumentParams;

use crate::session::Session;

pub fn handle(session: &Arc<Session>, params: DidOpenNotebookDocumentParams) {
    let uri = params.notebook_document.uri.clone();
    session.notebooks.open(params);
    session.analyze_notebook(uri);
}
