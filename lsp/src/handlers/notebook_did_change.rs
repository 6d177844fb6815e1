//! `notebookDocument/didChange`: apply the change to the notebook's cells, clear the
//! diagnostics of cells that are gone and analyse the notebook again.

use std::sync::Arc;

use tower_lsp_server::ls_types::DidChangeNotebookDocumentParams;

use crate::session::Session;

pub fn handle(session: &Arc<Session>, params: DidChangeNotebookDocumentParams) {
    let uri = params.notebook_document.uri.clone();
    let Some(removed) = session.notebooks.change(params) else {
        crate::log_stderr(&format!(
            "notebookDocument/didChange for a notebook that is not open: {}",
            uri.as_str()
        ));
        return;
    };
    session.clear_cells(removed);
    session.analyze_notebook(uri);
}
