//! `workspace/executeCommand`: `pt2lsp.reanalyze` re-scans the workspace and re-analyses;
//! `pt2lsp.retrace` (arguments: a document's URI) traces that document again.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{ExecuteCommandParams, LSPAny};

use crate::lsp::session::Session;
use crate::lsp::{REANALYZE_COMMAND, RETRACE_COMMAND};

pub fn execute_command(
    session: &Arc<Session>,
    params: &ExecuteCommandParams,
) -> Result<Option<LSPAny>> {
    if params.command == RETRACE_COMMAND {
        let uri = params
            .arguments
            .first()
            .and_then(serde_json::Value::as_str)
            .and_then(|uri| uri.parse::<tower_lsp_server::ls_types::Uri>().ok())
            .ok_or_else(|| Error::invalid_params("pt2lsp.retrace takes a document URI"))?;
        session.trace(uri);
        return Ok(None);
    }
    if params.command != REANALYZE_COMMAND {
        return Err(Error::invalid_params(format!(
            "unknown command `{}`",
            params.command
        )));
    }
    session.forget_projects();
    // The scan runs in the background: the client should not wait for a large workspace.
    tokio::spawn(Arc::clone(session).scan(None));
    session.schedule_all();
    Ok(None)
}
