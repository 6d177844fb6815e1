//! `notebookDocument/didClose`: forget the notebook and clear its cells' diagnostics.

use std::sync::Arc;

use tower_lsp_server::ls_types::DidCloseNotebookDocumentParams;

use crate::session::Session;

// The routing table (`handlers/mod.rs`) passes every notification's parameters by value.
#[allow(clippy::needless_pass_by_value)]
pub fn handle(session: &Arc<Session>, params: DidCloseNotebookDocumentParams) {
    let cells = session.notebooks.close(&params.notebook_document.uri);
    session.clear_cells(cells);
}
