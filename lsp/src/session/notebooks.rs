//! Analysing an open notebook and publishing its diagnostics on its cells (see
//! `lsp::notebooks`): off the reactor, dropped when the notebook changed meanwhile, published
//! under the session's publication lock so two analyses never overtake each other.

use std::sync::Arc;

use tower_lsp_server::ls_types::{MessageType, Uri};

use super::{Session, analysis};
use crate::diagnostics::RelatedTexts;
use crate::notebooks;

impl Session {
    /// Analyses `uri`'s notebook as it is now and publishes each Python cell's diagnostics.
    pub fn analyze_notebook(self: &Arc<Self>, uri: Uri) {
        let session = Arc::clone(self);
        tokio::spawn(async move {
            let Some(notebook) = session.notebooks.get(&uri) else {
                return;
            };
            // The blocking task holds what it reads, not the session.
            let settings = session.settings_source();
            let index = session.workspace.index_of(notebook.path.as_deref());
            let related = session.related_texts().is_some().then(|| session.buffers());
            let placed = tokio::task::spawn_blocking(move || {
                let (resolved, warnings) = settings.resolve(notebook.path.as_deref());
                let (joined, texts) = notebooks::join(&notebook);
                // The notebook's path names no importable module: analysed as a script.
                let report = analysis::check(&joined.python, None, &resolved, &index);
                let related = related.as_deref().map(|texts| texts as &dyn RelatedTexts);
                let placed =
                    notebooks::place(&notebook, &joined, &texts, &report.diagnostics, related);
                (notebook.version, placed, warnings)
            })
            .await;
            let Ok((version, placed, warnings)) = placed else {
                return;
            };
            for warning in warnings {
                session.log(MessageType::WARNING, warning);
            }
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
