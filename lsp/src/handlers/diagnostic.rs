//! `textDocument/diagnostic`: the pull model answers what the push model publishes for the
//! document's current version, static diagnostics merged with trace results. Always a full
//! report: the diagnostics of a document are cheap to send, and result ids would only add a
//! way for the two models to disagree.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::ServerCapabilities;

use tower_lsp_server::ls_types::{
    DocumentDiagnosticParams, DocumentDiagnosticReport, DocumentDiagnosticReportResult,
    FullDocumentDiagnosticReport, RelatedFullDocumentDiagnosticReport,
};

use crate::session::Session;

/// What the server advertises for this request.
pub fn advertise(capabilities: &mut ServerCapabilities) {
    // Trace results of one file come from the entrypoints that import it, so a document's
    // diagnostics depend on other files.
    capabilities.diagnostic_provider = Some(
        tower_lsp_server::ls_types::DiagnosticServerCapabilities::Options(
            tower_lsp_server::ls_types::DiagnosticOptions {
                identifier: Some("pt2lsp".to_owned()),
                inter_file_dependencies: true,
                workspace_diagnostics: false,
                ..tower_lsp_server::ls_types::DiagnosticOptions::default()
            },
        ),
    );
}

pub async fn handle(session: Arc<Session>, params: DocumentDiagnosticParams) -> Result<DocumentDiagnosticReportResult> {
    Ok(diagnostic(session, params).await)
}

async fn diagnostic(
    session: Arc<Session>,
    params: DocumentDiagnosticParams,
) -> DocumentDiagnosticReportResult {
    let uri = &params.text_document.uri;
    let items = session.pulled_diagnostics(uri).await.unwrap_or_else(|| {
        // A closed document has nothing pushed either, so nothing is pulled.
        crate::log_stderr(&format!(
            "diagnostics pulled for a document that is not open: {}",
            uri.as_str()
        ));
        Vec::new()
    });
    DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(
        RelatedFullDocumentDiagnosticReport {
            related_documents: None,
            full_document_diagnostic_report: FullDocumentDiagnosticReport {
                result_id: None,
                items,
            },
        },
    ))
}
