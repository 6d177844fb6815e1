//! `textDocument/inlayHint`: the inferred shape after each assignment that changes a tensor's
//! shape (`h = x.view(b, 4, -1)` shows `: [batch, 4, 16]`), in the user's `Dim` names. On by
//! default; `inlay-hints = false` (or `pt2lsp.inlayHints: false`) turns them off.

use std::sync::Arc;

use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::ServerCapabilities;

use pt2lsp_analyzer::UNKNOWN_SHAPE;

use tower_lsp_server::ls_types::{
    InlayHint, InlayHintKind, InlayHintLabel, InlayHintParams, InlayHintTooltip,
};

use crate::document::TextPositions;
use crate::session::Session;

/// What the server advertises for this request.
pub fn advertise(capabilities: &mut ServerCapabilities) {
    capabilities.inlay_hint_provider = Some(tower_lsp_server::ls_types::OneOf::Left(true));
}

pub async fn handle(session: Arc<Session>, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
    Ok(inlay_hint(session, params).await)
}

async fn inlay_hint(session: Arc<Session>, params: InlayHintParams) -> Option<Vec<InlayHint>> {
    let uri = params.text_document.uri;
    let range = params.range;
    let snapshot = session.request_snapshot(&uri)?;
    let (snapshot, shapes, settings) = tokio::task::spawn_blocking(move || {
        let settings = snapshot.settings();
        let shapes = snapshot.shapes(&settings);
        (snapshot, shapes, settings)
    })
    .await
    .ok()?;
    let text = snapshot.text;
    if !settings.inlay_hints {
        return Some(Vec::new());
    }
    let positions = TextPositions::new(&text);
    let hints = shapes
        .iter()
        .filter(|hint| hint.binding && hint.changed && hint.shape != UNKNOWN_SHAPE)
        .filter_map(|hint| {
            let at = positions.range(hint.range).end;
            (range.start <= at && at <= range.end).then(|| InlayHint {
                position: at,
                label: InlayHintLabel::String(format!(": {}", hint.shape)),
                kind: Some(InlayHintKind::TYPE),
                text_edits: None,
                tooltip: if hint.traced {
                    Some(InlayHintTooltip::String(
                        "Tensor shape in the program torch.export produced on the last trace"
                            .to_owned(),
                    ))
                } else {
                    (!hint.dims.is_empty()).then(|| {
                        InlayHintTooltip::String(format!(
                            "Tensor shape inferred by pt2lsp; {} from `dynamic_shapes`",
                            hint.dims
                                .iter()
                                .map(|(name, _)| format!("`{name}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })
                },
                padding_left: None,
                padding_right: None,
                data: None,
            })
        })
        .collect();
    Some(hints)
}
