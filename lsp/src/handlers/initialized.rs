//! `initialized`: register file watchers and start the background workspace scan.

use std::sync::Arc;

use tower_lsp_server::ls_types::{
    DidChangeWatchedFilesRegistrationOptions, FileSystemWatcher, GlobPattern, InitializedParams,
    MessageType, Registration,
};

use crate::session::Session;

// The routing table (`handlers/mod.rs`) passes every notification's parameters by value.
#[allow(clippy::needless_pass_by_value)]
pub fn handle(session: &Arc<Session>, _: InitializedParams) {
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
