//! The `LanguageServer` implementation: routes each method to its handler.
//!
//! Notification handlers that touch documents are synchronous functions, called before any
//! `.await`, which keeps edits in arrival order. Request handlers run in their own task, so a
//! bug that panics in one answers that request with an error instead of ending the server; a
//! panic in a notification handler is caught where it happens, logged, and the notification
//! dropped. Either way the server keeps serving.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{
    CodeActionParams, CodeActionResponse, CodeLens, CodeLensParams, DidChangeConfigurationParams,
    DidChangeNotebookDocumentParams, DidChangeTextDocumentParams, DidChangeWatchedFilesParams,
    DidChangeWorkspaceFoldersParams, DidCloseNotebookDocumentParams, DidCloseTextDocumentParams,
    DidOpenNotebookDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams,
    DocumentDiagnosticParams, DocumentDiagnosticReportResult, DocumentSymbolParams,
    DocumentSymbolResponse, ExecuteCommandParams, Hover, HoverParams, InitializeParams,
    InitializeResult, InitializedParams, InlayHint, InlayHintParams, LSPAny,
};
use tower_lsp_server::{Client, LanguageServer};

use super::handlers;
use super::session::Session;

pub struct Server {
    session: Arc<Session>,
}

impl Server {
    pub fn new(client: Client, shutdown_requested: Arc<AtomicBool>) -> Self {
        Self {
            session: Arc::new(Session::new(client, shutdown_requested)),
        }
    }
}

/// Answers a malformed message (see `transport`) with the error it deserves. A function of the
/// server, as tower-lsp's custom methods are, though it needs none of its state.
pub fn invalid_message(_: &Server, params: serde_json::Value) -> std::future::Ready<Result<()>> {
    std::future::ready(Err(super::transport::invalid_message_error(params)))
}

/// Runs a request handler in its own task; a panic becomes an internal error response.
async fn guarded<T, F>(future: F) -> Result<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    tokio::spawn(future).await.unwrap_or_else(|error| {
        super::log_stderr(&format!("request handler failed: {error}"));
        Err(Error::internal_error())
    })
}

/// Runs a notification handler; a panic is logged and the notification dropped. The handlers
/// keep no lock across a panic point that a later notification would wait on (`DashMap`
/// shards are released by unwinding), so the next notification is served normally.
fn guarded_notification(method: &str, handler: impl FnOnce()) {
    if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(handler)) {
        let reason = panic
            .downcast_ref::<&str>()
            .map(ToString::to_string)
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        super::log_stderr(&format!("notification handler failed: {method}: {reason}"));
    }
}

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        Ok(handlers::initialize::initialize(&self.session, params))
    }

    async fn initialized(&self, _: InitializedParams) {
        guarded_notification("initialized", || {
            handlers::initialize::initialized(&self.session);
        });
    }

    async fn shutdown(&self) -> Result<()> {
        self.session
            .shutdown_requested
            .store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        guarded_notification("textDocument/didOpen", || {
            handlers::did_open::did_open(&self.session, params);
        });
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        guarded_notification("textDocument/didChange", || {
            handlers::did_change::did_change(&self.session, params);
        });
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        guarded_notification("textDocument/didSave", || {
            handlers::did_save::did_save(&self.session, &params);
        });
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        guarded_notification("textDocument/didClose", || {
            handlers::did_close::did_close(&self.session, params);
        });
    }

    async fn notebook_did_open(&self, params: DidOpenNotebookDocumentParams) {
        guarded_notification("notebookDocument/didOpen", || {
            handlers::notebook::did_open(&self.session, params);
        });
    }

    async fn notebook_did_change(&self, params: DidChangeNotebookDocumentParams) {
        guarded_notification("notebookDocument/didChange", || {
            handlers::notebook::did_change(&self.session, params);
        });
    }

    async fn notebook_did_save(
        &self,
        _: tower_lsp_server::ls_types::DidSaveNotebookDocumentParams,
    ) {
        // The cells are the editor's, already analysed as they changed.
    }

    async fn notebook_did_close(&self, params: DidCloseNotebookDocumentParams) {
        guarded_notification("notebookDocument/didClose", || {
            handlers::notebook::did_close(&self.session, &params);
        });
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let session = Arc::clone(&self.session);
        guarded(async move { Ok(handlers::hover::hover(session, params).await) }).await
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        let session = Arc::clone(&self.session);
        guarded(async move { Ok(handlers::inlay_hint::inlay_hint(session, params).await) }).await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        guarded(handlers::code_action::code_action(
            Arc::clone(&self.session),
            params,
        ))
        .await
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        let session = Arc::clone(&self.session);
        guarded(async move { Ok(handlers::code_lens::code_lens(session, params).await) }).await
    }

    async fn document_symbol(
        &self,
        params: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        let session = Arc::clone(&self.session);
        guarded(
            async move { Ok(handlers::document_symbol::document_symbol(session, params).await) },
        )
        .await
    }

    async fn diagnostic(
        &self,
        params: DocumentDiagnosticParams,
    ) -> Result<DocumentDiagnosticReportResult> {
        let session = Arc::clone(&self.session);
        guarded(async move { Ok(handlers::diagnostic::diagnostic(session, params).await) }).await
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        guarded_notification("workspace/didChangeConfiguration", || {
            handlers::did_change_configuration::did_change_configuration(&self.session, &params);
        });
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        guarded_notification("workspace/didChangeWorkspaceFolders", || {
            handlers::did_change_workspace_folders::did_change_workspace_folders(
                &self.session,
                &params,
            );
        });
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        guarded_notification("workspace/didChangeWatchedFiles", || {
            handlers::did_change_watched_files::did_change_watched_files(&self.session, params);
        });
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let session = Arc::clone(&self.session);
        guarded(async move { handlers::execute_command::execute_command(&session, params).await })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set for the child process that [`a_panicking_request_handler_answers_with_an_error_and_logs_it`]
    /// starts: the child panics in a handler, the parent reads its stderr.
    const PANICKING_CHILD: &str = "PT2LSP_TEST_PANICKING_HANDLER";

    #[test]
    fn a_panicking_request_handler_answers_with_an_error_and_logs_it() {
        if std::env::var_os(PANICKING_CHILD).is_some() {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let response: Result<()> =
                runtime.block_on(guarded(async { panic!("a bug in a handler") }));
            assert_eq!(response.unwrap_err(), Error::internal_error());
            // The runtime, and the server it stands for, is still serving.
            assert_eq!(runtime.block_on(guarded(async { Ok(7) })), Ok(7));
            guarded_notification("textDocument/didOpen", || {
                panic!("a bug in a notification handler")
            });
            let mut served = false;
            guarded_notification("textDocument/didOpen", || served = true);
            assert!(served);
            return;
        }
        // The test name without the crate: the form libtest's filter takes.
        let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
        let name =
            format!("{module}::a_panicking_request_handler_answers_with_an_error_and_logs_it");
        let child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
            .env(PANICKING_CHILD, "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&child.stderr);
        assert!(child.status.success(), "{child:?}\n{stderr}");
        let logged: Vec<&str> = stderr
            .lines()
            .filter(|line| line.starts_with("pt2lsp: request handler failed"))
            .collect();
        assert_eq!(logged.len(), 1, "{stderr}");
        assert!(logged[0].contains("a bug in a handler"), "{}", logged[0]);
        let notification: Vec<&str> = stderr
            .lines()
            .filter(|line| line.starts_with("pt2lsp: notification handler failed"))
            .collect();
        assert_eq!(
            notification,
            [
                "pt2lsp: notification handler failed: textDocument/didOpen: a bug in a notification handler"
            ],
            "{stderr}"
        );
    }
}
