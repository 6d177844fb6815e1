//! `workspace/executeCommand`: `pt2lsp.reanalyze` re-scans the workspace and re-analyses;
//! `pt2lsp.retrace` (arguments: a file's URI) traces the entrypoints that reach it again;
//! `pt2lsp.exportPt2` (arguments: a document's URI, then optionally an entrypoint name and an
//! output path) writes its model as a `.pt2` file and answers with what was written.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{
    ExecuteCommandOptions, ExecuteCommandParams, LSPAny, ServerCapabilities,
};

use crate::session::{ExportRequest, Session, TraceReason};
use crate::{EXPORT_COMMAND, REANALYZE_COMMAND, RETRACE_COMMAND};

/// What the server advertises for this request.
pub fn advertise(capabilities: &mut ServerCapabilities) {
    capabilities.execute_command_provider = Some(ExecuteCommandOptions {
        commands: vec![
            REANALYZE_COMMAND.to_owned(),
            RETRACE_COMMAND.to_owned(),
            EXPORT_COMMAND.to_owned(),
        ],
        ..ExecuteCommandOptions::default()
    });
}

pub async fn handle(session: Arc<Session>, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
    execute_command(&session, params).await
}

async fn execute_command(
    session: &Arc<Session>,
    params: ExecuteCommandParams,
) -> Result<Option<LSPAny>> {
    if params.command == EXPORT_COMMAND {
        let request = ExportRequest::from_arguments(&params.arguments)?;
        let token = params.work_done_progress_params.work_done_token;
        return session.export_pt2(request, token).await.map(Some);
    }
    if params.command == RETRACE_COMMAND {
        let uri = params
            .arguments
            .first()
            .and_then(serde_json::Value::as_str)
            .and_then(|uri| uri.parse::<tower_lsp_server::ls_types::Uri>().ok())
            .ok_or_else(|| Error::invalid_params("pt2lsp.retrace takes a document URI"))?;
        session.trace(&uri, TraceReason::Retrace);
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
