//! `textDocument/hover`: on a tensor's name, the shape the analysis infers for it
//! (`x: Tensor[batch, 64]`) and where each `Dim` in it is declared; on a diagnostic's range,
//! what is wrong there — the diagnostic's own message, its fix and whether the exporter
//! confirmed it — then its rule in one line and a link to the rule's page. The whole page is a
//! click away, not in the way of the code.

use std::fmt::Write as _;
use std::sync::Arc;

use pt2lsp_analyzer::{Applicability, Rule, UNKNOWN_SHAPE};
use tower_lsp_server::ls_types::{
    Hover, HoverContents, HoverParams, MarkupContent, MarkupKind, NumberOrString, Position, Range,
    Uri,
};

use crate::document::TextPositions;

use crate::diagnostics::{CONFIRMED_SOURCE, DiagnosticData, TRACE_SOURCE, doc_url};
use crate::session::Session;

pub async fn hover(session: Arc<Session>, params: HoverParams) -> Option<Hover> {
    let uri = params
        .text_document_position_params
        .text_document
        .uri
        .clone();
    let position = params.text_document_position_params.position;
    // The shapes may need an analysis of the text: off the async threads.
    let shape = {
        let (session, uri) = (Arc::clone(&session), uri.clone());
        tokio::task::spawn_blocking(move || shape_at(&session, &uri, position))
            .await
            .ok()
            .flatten()
    };
    let uri = &uri;
    let Some(current) = session.current_diagnostics(uri) else {
        crate::log_stderr(&format!(
            "hover on a document that is not open: {}",
            uri.as_str()
        ));
        return None;
    };
    let hits: Vec<_> = current
        .iter()
        .filter(|hit| hit.range.start <= position && position <= hit.range.end)
        .collect();
    let mut value = String::new();
    let mut range = hits.first().map(|hit| hit.range);
    if let Some((shape, shape_range)) = shape {
        value.push_str(&shape);
        range = range.or(Some(shape_range));
    }
    for hit in &hits {
        let code = match &hit.code {
            Some(NumberOrString::String(code)) => code.clone(),
            Some(NumberOrString::Number(number)) => number.to_string(),
            None => continue,
        };
        let Some(rule) = Rule::from_code_or_name(&code) else {
            continue;
        };
        let data = DiagnosticData::from_lsp(hit);
        if !value.is_empty() {
            value.push_str("\n\n---\n\n");
        }
        let _ = write!(value, "**{code}** {}", hit.message);
        match data.as_ref().and_then(|data| data.source.as_deref()) {
            Some(CONFIRMED_SOURCE) => value.push_str("\n\nConfirmed by `torch.export`."),
            Some(TRACE_SOURCE) => value.push_str("\n\nFound by running `torch.export`."),
            _ => {}
        }
        if let Some(fix) = data.as_ref().and_then(|data| data.fix.as_ref()) {
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
fn shape_at(session: &Session, uri: &Uri, position: Position) -> Option<(String, Range)> {
    let (text, shapes, _) = session.shapes(uri)?;
    let positions = TextPositions::new(&text);
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
