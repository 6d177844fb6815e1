//! `workspace/didChangeWorkspaceFolders`: index added folders, forget removed ones.

use std::borrow::Cow;
use std::sync::Arc;

use tower_lsp_server::ls_types::DidChangeWorkspaceFoldersParams;

use crate::session::Session;

// The routing table (`handlers/mod.rs`) passes every notification's parameters by value.
#[allow(clippy::needless_pass_by_value)]
pub fn handle(session: &Arc<Session>, params: DidChangeWorkspaceFoldersParams) {
    let to_path = |folder: &tower_lsp_server::ls_types::WorkspaceFolder| {
        folder.uri.to_file_path().map(Cow::into_owned)
    };
    let removed: Vec<_> = params.event.removed.iter().filter_map(to_path).collect();
    let added: Vec<_> = params.event.added.iter().filter_map(to_path).collect();
    let mut roots = session.roots();
    roots.retain(|root| !removed.contains(root));
    for root in &removed {
        session.workspace.forget_root(root);
    }
    roots.extend(
        added
            .iter()
            .filter(|root| !roots.contains(root))
            .cloned()
            .collect::<Vec<_>>(),
    );
    session.set_roots(roots);
    let session = Arc::clone(session);
    tokio::spawn(async move {
        if added.is_empty() {
            session.rebuild_index().await;
            session.schedule_all();
        } else {
            session.scan(Some(added)).await;
        }
    });
}
