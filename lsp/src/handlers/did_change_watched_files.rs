//! `workspace/didChangeWatchedFiles`: keep the index in step with files changed on disk.
//!
//! A changed `pyproject.toml` may change any file's settings, so every open document is
//! re-analysed, and the workspace is scanned again if it changed what is excluded. A changed
//! Python file only matters when its summary changed, and never in an excluded directory.

use std::borrow::Cow;
use std::sync::Arc;

use tower_lsp_server::ls_types::{DidChangeWatchedFilesParams, FileChangeType};

use crate::session::Session;
use crate::workspace;

pub fn handle(session: &Arc<Session>, params: DidChangeWatchedFilesParams) {
    let mut pyproject_changed = false;
    let mut python = Vec::new();
    for change in params.changes {
        let Some(path) = change.uri.to_file_path().map(Cow::into_owned) else {
            continue;
        };
        if path
            .file_name()
            .is_some_and(|name| name == "pyproject.toml")
        {
            pyproject_changed = true;
        } else if workspace::is_python(&path) {
            // What was read of it before is stale, whether or not its summary changes.
            session.file_changed(&path);
            python.push((path, change.typ == FileChangeType::DELETED));
        }
    }
    if pyproject_changed {
        session.forget_projects();
    }
    let session = Arc::clone(session);
    tokio::spawn(async move {
        // The blocking task holds the workspace part, not the session.
        let workspace = Arc::clone(&session.workspace);
        let index_changed =
            tokio::task::spawn_blocking(move || workspace.summarise_from_disk(&python))
                .await
                .unwrap_or(false);
        if pyproject_changed {
            let rescan = session.scopes_changed().await;
            if rescan {
                // The scan rebuilds the index and re-analyses every open document at its end.
                session.schedule_all();
                session.scan(None).await;
                return;
            }
        }
        if index_changed {
            session.rebuild_index().await;
        }
        if index_changed || pyproject_changed {
            session.schedule_all();
        }
        if pyproject_changed {
            session.publish_configurations().await;
        }
    });
}
