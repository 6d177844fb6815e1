//! `textDocument/documentSymbol`: the document's `nn.Module` classes with their methods, and
//! the module-level bindings the export file convention reads (`model`, `example_args`,
//! `example_kwargs`, `dynamic_shapes`): what a user looks for in a model file.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::ServerCapabilities;

use pt2lsp_analyzer::{OutlineKind, OutlineSymbol};
use tower_lsp_server::ls_types::{
    DocumentSymbol, DocumentSymbolParams, DocumentSymbolResponse, SymbolKind,
};

use crate::document::TextPositions;
use crate::session::Session;

/// What the server advertises for this request.
pub fn advertise(capabilities: &mut ServerCapabilities) {
    capabilities.document_symbol_provider = Some(tower_lsp_server::ls_types::OneOf::Left(true));
}

pub async fn handle(session: Arc<Session>, params: DocumentSymbolParams) -> Result<Option<DocumentSymbolResponse>> {
    Ok(document_symbol(session, params).await)
}

async fn document_symbol(
    session: Arc<Session>,
    params: DocumentSymbolParams,
) -> Option<DocumentSymbolResponse> {
    let uri = params.text_document.uri;
    let snapshot = session.request_snapshot(&uri)?;
    let (snapshot, symbols) = tokio::task::spawn_blocking(move || {
        let symbols = snapshot.outline();
        (snapshot, symbols)
    })
    .await
    .ok()?;
    let text = snapshot.text;
    let positions = TextPositions::new(&text);
    Some(DocumentSymbolResponse::Nested(
        symbols
            .iter()
            .map(|symbol| convert(symbol, &positions))
            .collect(),
    ))
}

fn convert(symbol: &OutlineSymbol, positions: &TextPositions<'_>) -> DocumentSymbol {
    let (kind, detail) = match symbol.kind {
        OutlineKind::ModuleClass => (SymbolKind::CLASS, Some("nn.Module".to_owned())),
        OutlineKind::Method => (SymbolKind::METHOD, None),
        OutlineKind::Entrypoint => (SymbolKind::VARIABLE, Some("export entrypoint".to_owned())),
    };
    let children: Vec<DocumentSymbol> = symbol
        .children
        .iter()
        .map(|child| convert(child, positions))
        .collect();
    // `deprecated` is itself deprecated, yet the struct has no other way to be built.
    #[allow(deprecated)]
    DocumentSymbol {
        name: symbol.name.clone(),
        detail,
        kind,
        tags: None,
        deprecated: None,
        range: positions.range(symbol.range),
        selection_range: positions.range(symbol.name_range),
        children: (!children.is_empty()).then_some(children),
    }
}
