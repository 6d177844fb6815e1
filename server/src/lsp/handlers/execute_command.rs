//! `workspace/executeCommand`: `pt2lsp.reanalyze` re-scans the workspace and re-analyses.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{ExecuteCommandParams, LSPAny};

use crate::lsp::REANALYZE_COMMAND;
use crate::lsp::session::Session;

pub fn execute_command(
    session: &Arc<Session>,
    params: &ExecuteCommandParams,
) -> Result<Option<LSPAny>> {
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
