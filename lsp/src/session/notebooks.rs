//! Analysing an open notebook and publishing its diagnostics on its cells (see
//! `lsp::notebooks`): off the reactor, dropped when the notebook changed meanwhile, published
//! under the session's publication lock so two analyses never overtake each other.

use std::sync::Arc;

use tower_lsp_server::ls_types::Uri;

use super::Session;
use crate::notebooks;

impl Session {
    /// Analyses `uri`'s notebook as it is now and publishes each Python cell's diagnostics.
    pub fn analyze_notebook(self: &Arc<Self>, uri: Uri) {
        let session = Arc::clone(self);
        tokio::spawn(async move {
            let Some(notebook) = session.notebooks.get(&uri) else {
                return;
            };
            let analysis = Arc::clone(&session);
            let placed = tokio::task::spawn_blocking(move || {
                let settings = analysis.resolve_settings(notebook.path.as_deref());
                let (joined, texts) = notebooks::join(&notebook);
                // The notebook's path names no importable module: analysed as a script.
                let report = analysis.check(&joined.python, None, &settings);
                (
                    notebook.version,
                    notebooks::place(&notebook, &joined, &texts, &report.diagnostics),
                )
            })
            .await;
            let Ok((version, placed)) = placed else {
                return;
            };
            let _guard = session.publish_lock.lock().await;
            if session.notebooks.version(&uri) != Some(version) {
                return; // A newer change is being analysed.
            }
            for (cell, cell_version, diagnostics) in placed {
                session
                    .publish_converted(cell, diagnostics, Some(cell_version))
                    .await;
            }
        });
    }

    /// Clears the diagnostics of cells that were removed or closed.
    pub fn clear_cells(self: &Arc<Self>, cells: Vec<Uri>) {
        if cells.is_empty() {
            return;
        }
        let session = Arc::clone(self);
        tokio::spawn(async move {
            let _guard = session.publish_lock.lock().await;
            for cell in cells {
                session.publish_converted(cell, Vec::new(), None).await;
            }
        });
    }
}
