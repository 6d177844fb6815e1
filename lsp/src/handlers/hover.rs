//! `textDocument/hover`: on a tensor's name, the shape the analysis infers for it
//! (`x: Tensor[batch, 64]`) and where each `Dim` in it is declared; on a diagnostic's range,
//! what is wrong there — the diagnostic's own message, its fix and whether the exporter
//! confirmed it — then its rule in one line and a link to the rule's page. The whole page is a
//! click away, not in the way of the code.

use std::fmt::Write as _;
use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::ServerCapabilities;

use pt2lsp_analyzer::{Applicability, UNKNOWN_SHAPE};
use tower_lsp_server::ls_types::{
    Hover, HoverContents, HoverParams, MarkupContent, MarkupKind, Position, Range,
};

use crate::diagnostics::doc_url;
use crate::document::TextPositions;
use crate::session::{RequestSnapshot, Session};

/// What the server advertises for this request.
pub fn advertise(capabilities: &mut ServerCapabilities) {
    capabilities.hover_provider = Some(tower_lsp_server::ls_types::HoverProviderCapability::Simple(true));
}

pub async fn handle(session: Arc<Session>, params: HoverParams) -> Result<Option<Hover>> {
    Ok(hover(session, params).await)
}

async fn hover(session: Arc<Session>, params: HoverParams) -> Option<Hover> {
    let uri = params
        .text_document_position_params
        .text_document
        .uri
        .clone();
    let position = params.text_document_position_params.position;
    // The shapes may need an analysis of the text: off the async threads.
    let shape = match session.request_snapshot(&uri) {
        Some(snapshot) => tokio::task::spawn_blocking(move || shape_at(&snapshot, position))
            .await
            .ok()
            .flatten(),
        None => None,
    };
    let uri = &uri;
    let Some(current) = session.current_findings(uri) else {
        crate::log_stderr(&format!(
            "hover on a document that is not open: {}",
            uri.as_str()
        ));
        return None;
    };
    // The findings of the current version share one text: their ranges are converted on it.
    let positions = current
        .items
        .first()
        .map(|finding| TextPositions::new(finding.text.text()));
    let hits: Vec<_> = current
        .items
        .iter()
        .zip(std::iter::repeat(positions.as_ref()))
        .filter_map(|(hit, positions)| {
            let range = positions?.range(hit.diagnostic().range);
            (range.start <= position && position <= range.end).then_some((hit, range))
        })
        .collect();
    let mut value = String::new();
    let mut range = hits.first().map(|(_, range)| *range);
    if let Some((shape, shape_range)) = shape {
        value.push_str(&shape);
        range = range.or(Some(shape_range));
    }
    for (hit, _) in &hits {
        let diagnostic = hit.diagnostic();
        let rule = diagnostic.rule;
        if !value.is_empty() {
            value.push_str("\n\n---\n\n");
        }
        let _ = write!(value, "**{}** {}", rule.code(), diagnostic.message);
        if hit.is_confirmed() {
            value.push_str("\n\nConfirmed by `torch.export`.");
        } else if hit.is_traced() {
            value.push_str("\n\nFound by running `torch.export`.");
        }
        if let Some(fix) = &diagnostic.fix {
            let how = match fix.applicability {
                Applicability::Safe => "a safe quick fix",
                Applicability::Unsafe => "a quick fix that changes behaviour: read it first",
                Applicability::DisplayOnly => "a suggestion to apply by hand",
            };
            let _ = write!(value, "\n\nFix: {} ({how})", fix.title);
        }
        let _ = write!(
            value,
            "\n\n`{}` `{}`: {}",
            rule.code(),
            rule.name(),
            rule.summary()
        );
        if let Some(url) = doc_url(rule) {
            let _ = write!(value, " [Rule page]({})", url.as_str());
        }
    }
    if value.is_empty() {
        return None;
    }
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value,
        }),
        range,
    })
}

/// The shape of the tensor named at `position`, as hover text, and the name's range.
fn shape_at(snapshot: &RequestSnapshot, position: Position) -> Option<(String, Range)> {
    let shapes = snapshot.shapes(&snapshot.settings());
    let text = &snapshot.text;
    let positions = TextPositions::new(text);
    let hint = shapes.iter().find(|hint| {
        let range = positions.range(hint.range);
        range.start <= position && position <= range.end && hint.shape != UNKNOWN_SHAPE
    })?;
    let name = text.get(std::ops::Range::<usize>::from(hint.range))?;
    let mut value = format!("```python\n{name}: Tensor{}\n```", hint.shape);
    if hint.traced {
        value.push_str("\n\nThe shape in the program `torch.export` produced on the last trace.");
    }
    for (dim, declared) in &hint.dims {
        let line = positions.range(*declared).start.line + 1;
        let _ = write!(value, "\n\n`{dim}`: dynamic, declared on line {line}");
    }
    if hint.shape.contains('_') || hint.shape.contains('?') {
        value.push_str(
            "\n\n`_`: a static size the analysis does not know; `?`: a dynamic size it cannot write",
        );
    }
    Some((value, positions.range(hint.range)))
}
