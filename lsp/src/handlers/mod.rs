//! One small handler per request or notification: convert in, call the session, convert out.
//!
//! The table below is the only routing: each line declares the handler's module (a file of
//! this directory, named after the `LanguageServer` method) and wires the method to its
//! `handle` function (see `crate::server::routes`). A request's handler is
//! `async fn handle(Arc<Session>, Params) -> Result<Answer>`, run in its own task, with
//! `fn advertise(&mut ServerCapabilities)` saying what `initialize` announces for it; a
//! notification's is `fn handle(&Arc<Session>, Params)`, run before the next message is read.
//! Adding a request is its file and one line here.

crate::server::routes! {
    request initialize(InitializeParams) -> InitializeResult;
    request hover(HoverParams) -> Option<Hover>;
    request inlay_hint(InlayHintParams) -> Option<Vec<InlayHint>>;
    request code_action(CodeActionParams) -> Option<CodeActionResponse>;
    request code_lens(CodeLensParams) -> Option<Vec<CodeLens>>;
    request document_symbol(DocumentSymbolParams) -> Option<DocumentSymbolResponse>;
    request diagnostic(DocumentDiagnosticParams) -> DocumentDiagnosticReportResult;
    request execute_command(ExecuteCommandParams) -> Option<LSPAny>;
    notification initialized(InitializedParams), "initialized";
    notification did_open(DidOpenTextDocumentParams), "textDocument/didOpen";
    notification did_change(DidChangeTextDocumentParams), "textDocument/didChange";
    notification did_save(DidSaveTextDocumentParams), "textDocument/didSave";
    notification did_close(DidCloseTextDocumentParams), "textDocument/didClose";
    notification notebook_did_open(DidOpenNotebookDocumentParams), "notebookDocument/didOpen";
    notification notebook_did_change(DidChangeNotebookDocumentParams), "notebookDocument/didChange";
    notification notebook_did_close(DidCloseNotebookDocumentParams), "notebookDocument/didClose";
    notification did_change_configuration(DidChangeConfigurationParams), "workspace/didChangeConfiguration";
    notification did_change_workspace_folders(DidChangeWorkspaceFoldersParams), "workspace/didChangeWorkspaceFolders";
    notification did_change_watched_files(DidChangeWatchedFilesParams), "workspace/didChangeWatchedFiles";
}
