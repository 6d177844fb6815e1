//! `initialize` and `initialized`: read the client's capabilities, roots and settings, then
//! register file watchers and start the background workspace scan.

use std::borrow::Cow;
use std::sync::Arc;

use tower_lsp_server::ls_types::{
    DidChangeWatchedFilesRegistrationOptions, FileSystemWatcher, GlobPattern, InitializeParams,
    InitializeResult, MessageType, Registration, ServerInfo,
};

use crate::session::{ClientFlags, Session};

pub fn initialize(session: &Arc<Session>, params: InitializeParams) -> InitializeResult {
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

pub fn initialized(session: &Arc<Session>) {
    if session.flags().dynamic_watchers {
        let session = Arc::clone(session);
        tokio::spawn(async move {
            let watchers = ["**/*.py", "**/*.pyi", "**/pyproject.toml"]
                .into_iter()
                .map(|glob| FileSystemWatcher {
                    glob_pattern: GlobPattern::String(glob.to_owned()),
                    kind: None,
                })
                .collect();
            let registration = Registration {
                id: "pt2lsp-watched-files".to_owned(),
                method: "workspace/didChangeWatchedFiles".to_owned(),
                register_options: serde_json::to_value(DidChangeWatchedFilesRegistrationOptions {
                    watchers,
                })
                .ok(),
            };
            if let Err(error) = session.client.register_capability(vec![registration]).await {
                session.log(
                    MessageType::WARNING,
                    format!("could not register file watchers: {error}"),
                );
            }
        });
    }
    tokio::spawn(Arc::clone(session).scan(None));
}
