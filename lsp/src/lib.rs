//! The language server: `pt2lsp serve`, LSP over stdio.
//!
//! A thin shell around the analyzer (ruff_server's layout): [`session`] holds the state,
//! [`handlers`] has one small function per request or notification, [`document`] and
//! [`diagnostics`] convert between the analyzer's byte offsets and the protocol.
//!
//! Nothing but protocol may reach stdout; every other line goes to stderr through
//! [`log_stderr`] or to the client's log.

pub mod diagnostics;
pub mod document;
pub mod handlers;
pub mod notebooks;
pub mod rule_pages;
pub mod server;
pub mod session;
pub mod settings;
pub mod trace;
pub mod transport;
pub mod workspace;

/// The protocol's types, for the fuzz targets and tests that speak to the server in process.
pub use tower_lsp_server::ls_types;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::ls_types::{
    CodeActionKind, Notebook, NotebookCellSelector, NotebookDocumentSyncOptions, NotebookSelector,
    OneOf, PositionEncodingKind, SaveOptions, ServerCapabilities, TextDocumentSyncCapability,
    TextDocumentSyncKind, TextDocumentSyncOptions, TextDocumentSyncSaveOptions,
    WorkspaceFoldersServerCapabilities, WorkspaceServerCapabilities,
};
use tower_lsp_server::{LspService, Server};

/// The code action kind of "apply every safe fix".
pub const FIX_ALL_KIND: CodeActionKind = CodeActionKind::new("source.fixAll.pt2lsp");

/// Re-scans the workspace and re-analyses every open document.
pub const REANALYZE_COMMAND: &str = "pt2lsp.reanalyze";

/// Traces one document again (arguments: its URI), when tracing is on for it.
pub const RETRACE_COMMAND: &str = "pt2lsp.retrace";

/// Writes a document's model as a `.pt2` file (arguments: its URI, then optionally an
/// entrypoint name and an output path) and answers with what was written.
pub const EXPORT_COMMAND: &str = "pt2lsp.exportPt2";

/// Stack for every thread of the server: analyses run on tokio's blocking pool and the parser
/// and the analyzer recurse on the syntax tree, which generated code nests tens of thousands
/// deep (`a + a + ... + a`). A stack overflow aborts the process, so the server gets the CLI's
/// analysis stack; the memory is only reserved, pages are touched as deep as a file goes.
pub const THREAD_STACK_BYTES: usize = 512 << 20;

/// Serves LSP on stdin and stdout until the client sends `exit` or closes stdin.
///
/// Fails when the client exits without asking for `shutdown` first, so the process ends with
/// status 1 as the protocol asks.
pub fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(THREAD_STACK_BYTES)
        .enable_all()
        .build()?;
    let shut_down = runtime.block_on(serve(tokio::io::stdin(), tokio::io::stdout()));
    // Tokio reads stdin on a blocking thread that may never return (the client need not close
    // its end), and analyses may still be running: neither is worth waiting for after `exit`.
    runtime.shutdown_background();
    if shut_down {
        Ok(())
    } else {
        anyhow::bail!("the client exited without a shutdown request, or its input broke")
    }
}

/// Serves LSP on any pair of streams; returns whether the client asked for `shutdown` first
/// (and the input stayed readable to the end).
pub async fn serve<I, O>(input: I, output: O) -> bool
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite,
{
    let shutdown_requested = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&shutdown_requested);
    let (service, socket) = LspService::build(move |client| server::Server::new(client, flag))
        .custom_method(transport::INVALID_MESSAGE_METHOD, server::invalid_message)
        .finish();
    let (input, broken) = transport::guard(input);
    Server::new(input, output, socket).serve(service).await;
    // A stream the guard could not recover is a failure even after `shutdown`: the client must
    // see the server die, not exit cleanly, to restart it.
    shutdown_requested.load(Ordering::SeqCst) && !broken.load(Ordering::SeqCst)
}

/// What `initialize` announces: document and notebook sync and workspace folders here, then
/// what each routed request's handler advertises (`handlers::advertise`).
pub fn capabilities() -> ServerCapabilities {
    let mut capabilities = ServerCapabilities {
        position_encoding: Some(PositionEncodingKind::UTF16),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                will_save: None,
                will_save_wait_until: None,
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                    include_text: Some(false),
                })),
            },
        )),
        // Jupyter notebooks: their Python cells, analysed as one module.
        notebook_document_sync: Some(OneOf::Left(NotebookDocumentSyncOptions {
            notebook_selector: vec![NotebookSelector::ByCells {
                notebook: Some(Notebook::String("jupyter-notebook".to_owned())),
                cells: vec![NotebookCellSelector {
                    language: "python".to_owned(),
                }],
            }],
            save: Some(false),
        })),
        workspace: Some(WorkspaceServerCapabilities {
            workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                supported: Some(true),
                change_notifications: Some(OneOf::Left(true)),
            }),
            file_operations: None,
        }),
        ..ServerCapabilities::default()
    };
    handlers::advertise(&mut capabilities);
    capabilities
}

/// One line on stderr, the only output channel besides the protocol.
pub fn log_stderr(message: &str) {
    eprintln!("pt2lsp: {message}");
}
