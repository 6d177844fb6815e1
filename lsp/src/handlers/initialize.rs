//! `initialize`: read the client's capabilities, roots and settings, and answer with the
//! server's capabilities.

use std::borrow::Cow;
use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{
    InitializeParams, InitializeResult, MessageType, ServerCapabilities, ServerInfo,
};

use crate::session::{ClientFlags, Session};

/// Nothing beyond what `crate::capabilities` lists: `initialize` is what answers with them.
pub fn advertise(_: &mut ServerCapabilities) {}

// Every request handler is async: the routing table awaits each the same way.
#[allow(clippy::unused_async)]
pub async fn handle(session: Arc<Session>, params: InitializeParams) -> Result<InitializeResult> {
    Ok(initialize(&session, params))
}

fn initialize(session: &Arc<Session>, params: InitializeParams) -> InitializeResult {
    session.set_flags(ClientFlags::new(&params.capabilities));
    let mut roots: Vec<_> = params
        .workspace_folders
        .unwrap_or_default()
        .iter()
        .filter_map(|folder| folder.uri.to_file_path().map(Cow::into_owned))
        .collect();
    if roots.is_empty() {
        // Clients older than workspace folders name a single root; it is deprecated, not gone.
        #[allow(deprecated)]
        let root = params
            .root_uri
            .as_ref()
            .and_then(|uri| uri.to_file_path().map(Cow::into_owned));
        roots.extend(root);
    }
    session.set_roots(roots);
    if let Some(options) = &params.initialization_options {
        for warning in session.set_editor_options(options) {
            session.log(MessageType::WARNING, warning);
        }
    }
    InitializeResult {
        capabilities: crate::capabilities(),
        server_info: Some(ServerInfo {
            name: "pt2lsp".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
        offset_encoding: None,
    }
}
