//! `notebookDocument/didOpen`, `didChange` and `didClose`: keep the notebook's cells (see
//! `lsp::notebooks`), analyse the notebook after each, and clear the diagnostics of cells that
//! are gone. A save changes nothing the analysis reads: the cells are the editor's.

use std::sync::Arc;

use tower_lsp_server::ls_types::{
    DidChangeNotebookDocumentParams, DidCloseNotebookDocumentParams, DidOpenNotebookDocumentParams,
};

use crate::session::Session;

pub fn did_open(session: &Arc<Session>, params: DidOpenNotebookDocumentParams) {
    let uri = params.notebook_document.uri.clone();
    session.notebooks.open(params);
    session.analyze_notebook(uri);
}

pub fn did_change(session: &Arc<Session>, params: DidChangeNotebookDocumentParams) {
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

pub fn did_close(session: &Arc<Session>, params: &DidCloseNotebookDocumentParams) {
    let cells = session.notebooks.close(&params.notebook_document.uri);
    session.clear_cells(cells);
}
