//! The `LanguageServer` implementation: routes each method to its handler.
//!
//! Notification handlers that touch documents are synchronous functions, called before any
//! `.await`, which keeps edits in arrival order. Request handlers run in their own task, so a
//! bug that panics in one answers that request with an error instead of ending the server.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::{
    CodeActionParams, CodeActionResponse, DidChangeConfigurationParams,
    DidChangeTextDocumentParams, DidChangeWatchedFilesParams, DidChangeWorkspaceFoldersParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams,
    ExecuteCommandParams, Hover, HoverParams, InitializeParams, InitializeResult,
    InitializedParams, LSPAny,
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

impl LanguageServer for Server {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        Ok(handlers::initialize::initialize(&self.session, params))
    }

    async fn initialized(&self, _: InitializedParams) {
        handlers::initialize::initialized(&self.session);
    }

    async fn shutdown(&self) -> Result<()> {
        self.session
            .shutdown_requested
            .store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        handlers::did_open::did_open(&self.session, params);
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        handlers::did_change::did_change(&self.session, params);
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        handlers::did_save::did_save(&self.session, &params);
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        handlers::did_close::did_close(&self.session, params);
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let session = Arc::clone(&self.session);
        guarded(async move { Ok(handlers::hover::hover(&session, &params)) }).await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        guarded(handlers::code_action::code_action(
            Arc::clone(&self.session),
            params,
        ))
        .await
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        handlers::did_change_configuration::did_change_configuration(&self.session, &params);
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        handlers::did_change_workspace_folders::did_change_workspace_folders(
            &self.session,
            &params,
        );
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        handlers::did_change_watched_files::did_change_watched_files(&self.session, params);
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let session = Arc::clone(&self.session);
        guarded(async move { handlers::execute_command::execute_command(&session, &params) }).await
    }
}
