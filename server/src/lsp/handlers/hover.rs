//! `textDocument/hover`: on a diagnostic's range, the documentation of its rule.

use std::fmt::Write as _;
use std::sync::Arc;

use tower_lsp_server::ls_types::{Hover, HoverContents, HoverParams, MarkupContent, MarkupKind};

use crate::lsp::diagnostics::doc_url;
use crate::lsp::session::Session;

pub fn hover(session: &Session, params: &HoverParams) -> Option<Hover> {
    let uri = &params.text_document_position_params.text_document.uri;
    let position = params.text_document_position_params.position;
    let Some(published) = session
        .documents
        .get(uri)
        .map(|open| Arc::clone(&open.published))
    else {
        crate::lsp::log_stderr(&format!(
            "hover on a document that is not open: {}",
            uri.as_str()
        ));
        return None;
    };
    let hits: Vec<_> = published
        .iter()
        .filter(|hit| hit.range.start <= position && position <= hit.range.end)
        .collect();
    let first = hits.first()?;
    let mut value = String::new();
    let mut seen = Vec::new();
    for hit in &hits {
        if seen.contains(&hit.rule) {
            continue;
        }
        seen.push(hit.rule);
        if !value.is_empty() {
            value.push_str("\n\n---\n\n");
        }
        let _ = write!(
            value,
            "**{}** `{}`: {}\n\n{}",
            hit.rule.code(),
            hit.rule.name(),
            hit.rule.summary(),
            hit.rule.doc()
        );
        if let Some(title) = &hit.display_only_fix {
            let _ = write!(value, "\n\nSuggested fix: {title}");
        }
        if let Some(url) = doc_url(hit.rule) {
            let _ = write!(
                value,
                "\n\n[{} documentation]({})",
                hit.rule.code(),
                url.as_str()
            );
        }
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        }),
        range: Some(first.range),
    })
}
