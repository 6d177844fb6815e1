//! `textDocument/codeAction`: each diagnostic's fix, an "ignore on this line" action for each
//! diagnostic, and `source.fixAll.pt2lsp`, which does what `pt2lsp check --fix` does: every
//! safe fix (unsafe ones too with the `unsafeFixes` setting), in rounds.
//!
//! Quick fixes come from the diagnostic's `data` alone; when the client sends no diagnostics,
//! those published on the requested lines are used. "Fix all" analyses the current text again,
//! since the client sends only the diagnostics in the requested range.

use std::collections::HashMap;
use std::sync::Arc;

use pt2lsp_analyzer::{Applicability, FixMode};
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{
    CodeAction, CodeActionDisabled, CodeActionOptions, CodeActionProviderCapability, CodeActionKind, CodeActionOrCommand, CodeActionParams,
    CodeActionResponse, Diagnostic, DocumentChanges, OneOf,
    OptionalVersionedTextDocumentIdentifier, Position, Range, TextDocumentEdit, TextEdit, Uri,
    ServerCapabilities, WorkspaceEdit,
};

use crate::FIX_ALL_KIND;
use crate::diagnostics::{self, DiagnosticData, SOURCE};
use crate::document::{Document, utf16_column};
use crate::session::Session;

const MARKER: &str = "pt2lsp: ignore";

/// Why a display-only fix is offered disabled.
const DISPLAY_ONLY_REASON: &str = "pt2lsp cannot apply this fix for you: it needs a decision only you can make; the \
     diagnostic's message says what to write";

/// What the server advertises for this request.
pub fn advertise(capabilities: &mut ServerCapabilities) {
    capabilities.code_action_provider = Some(CodeActionProviderCapability::Options(
        CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX, FIX_ALL_KIND]),
            ..CodeActionOptions::default()
        },
    ));
}

pub async fn handle(
    session: Arc<Session>,
    params: CodeActionParams,
) -> Result<Option<CodeActionResponse>> {
    let uri = params.text_document.uri.clone();
    if !session.documents.contains_key(&uri) {
        if let Some(cell) = session.notebooks.cell(&uri) {
            return Ok(Some(cell_actions(&session, &uri, &cell, &params)));
        }
    }
    let Some(document) = session
        .documents
        .get(&uri)
        .map(|open| open.document.clone())
    else {
        crate::log_stderr(&format!(
            "codeAction on a document that is not open: {}",
            uri.as_str()
        ));
        return Ok(None);
    };
    let only = params.context.only.as_deref();
    let mut actions = Vec::new();
    if wants(only, &CodeActionKind::QUICKFIX) {
        let mut ignored = Vec::new();
        // A client that sends no diagnostics (eglot at the end of a flagged line) gets the
        // actions of those published on the lines of the requested range.
        let under_cursor;
        let asked = if params.context.diagnostics.is_empty() {
            let (first, last) = (params.range.start.line, params.range.end.line);
            under_cursor = session
                .current_diagnostics(&uri)
                .unwrap_or_default()
                .into_iter()
                .filter(|d| d.range.start.line <= last && d.range.end.line >= first)
                .collect::<Vec<_>>();
            &under_cursor
        } else {
            &params.context.diagnostics
        };
        for diagnostic in asked {
            if diagnostic.source.as_deref() != Some(SOURCE) {
                continue;
            }
            let Some(data) = DiagnosticData::from_lsp(diagnostic) else {
                continue;
            };
            match &data.fix {
                // A suggestion pt2lsp cannot make for the user: listed, so the editor shows it
                // beside the others, but disabled, with the reason.
                Some(fix) if fix.applicability == Applicability::DisplayOnly => {
                    actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                        title: fix.title.clone(),
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: Some(vec![diagnostic.clone()]),
                        disabled: Some(CodeActionDisabled {
                            reason: DISPLAY_ONLY_REASON.to_owned(),
                        }),
                        ..CodeAction::default()
                    }));
                }
                // Safe fixes are preferred (applied by "auto fix"); unsafe ones are offered,
                // never preferred, since the user should read them first.
                Some(fix) if !data.edits.is_empty() => actions.push(action(
                    &session,
                    fix.title.clone(),
                    CodeActionKind::QUICKFIX,
                    (&uri, data.version, data.edits.clone()),
                    Some(diagnostic),
                    fix.applicability == Applicability::Safe,
                )),
                _ => {}
            }
            let line = diagnostic.range.start.line;
            if ignored.contains(&(line, data.code.clone())) {
                continue;
            }
            if let Some(edit) = ignore_edit(&document, line, &data.code) {
                ignored.push((line, data.code.clone()));
                actions.push(action(
                    &session,
                    format!("Ignore {} on this line", data.code),
                    CodeActionKind::QUICKFIX,
                    (&uri, document.version(), vec![edit]),
                    Some(diagnostic),
                    false,
                ));
            }
        }
    }
    if wants(only, &FIX_ALL_KIND) {
        // The blocking task holds a snapshot of the document, not the session; the edits are
        // of the snapshot's version.
        let snapshot = session.request_snapshot(&uri);
        let (version, edits) = tokio::task::spawn_blocking(move || {
            let Some(snapshot) = snapshot else {
                return (0, Vec::new());
            };
            let settings = snapshot.settings();
            let mode = if settings.unsafe_fixes {
                FixMode::Unsafe
            } else {
                FixMode::Safe
            };
            let report = snapshot.check(&snapshot.text, &settings);
            let edits =
                diagnostics::fix_all_edits(&snapshot.text, &report.diagnostics, mode, |fixed| {
                    snapshot.check(fixed, &settings).diagnostics
                });
            (snapshot.version, edits)
        })
        .await
        .unwrap_or_default();
        if !edits.is_empty() {
            actions.push(action(
                &session,
                "Fix all auto-fixable pt2lsp problems".to_owned(),
                FIX_ALL_KIND,
                (&uri, version, edits),
                None,
                false,
            ));
        }
    }
    Ok(Some(actions))
}

/// The quick fixes of a notebook cell's diagnostics: each fix with its edits in the cells they
/// fall in (see `lsp::notebooks`), and "ignore on this line" in the cell. "Fix all" is the
/// CLI's for notebooks (`pt2lsp check --fix nb.ipynb`).
fn cell_actions(
    session: &Session,
    uri: &Uri,
    cell: &Document,
    params: &CodeActionParams,
) -> Vec<CodeActionOrCommand> {
    let mut actions = Vec::new();
    if !wants(params.context.only.as_deref(), &CodeActionKind::QUICKFIX) {
        return actions;
    }
    for diagnostic in &params.context.diagnostics {
        if diagnostic.source.as_deref() != Some(SOURCE) {
            continue;
        }
        let Some(data) = DiagnosticData::from_lsp(diagnostic) else {
            continue;
        };
        if let Some(fix) = &data.fix {
            if !data.cell_edits.is_empty() && fix.applicability != Applicability::DisplayOnly {
                let mut documents: Vec<(Uri, i32, Vec<TextEdit>)> = Vec::new();
                for edit in &data.cell_edits {
                    match documents.iter_mut().find(|(uri, ..)| *uri == edit.uri) {
                        Some(entry) => entry.2.push(edit.edit.clone()),
                        None => documents.push((
                            edit.uri.clone(),
                            edit.version,
                            vec![edit.edit.clone()],
                        )),
                    }
                }
                actions.push(action_over(
                    session,
                    fix.title.clone(),
                    CodeActionKind::QUICKFIX,
                    documents,
                    Some(diagnostic),
                    fix.applicability == Applicability::Safe,
                ));
            }
        }
        if let Some(edit) = ignore_edit(cell, diagnostic.range.start.line, &data.code) {
            actions.push(action(
                session,
                format!("Ignore {} on this line", data.code),
                CodeActionKind::QUICKFIX,
                (uri, cell.version(), vec![edit]),
                Some(diagnostic),
                false,
            ));
        }
    }
    actions
}

/// True when the client asked for no kinds or for a kind that `kind` falls under.
fn wants(only: Option<&[CodeActionKind]>, kind: &CodeActionKind) -> bool {
    only.is_none_or(|only| {
        only.iter().any(|asked| {
            let asked = asked.as_str();
            kind.as_str() == asked || kind.as_str().starts_with(&format!("{asked}."))
        })
    })
}

fn action(
    session: &Session,
    title: String,
    kind: CodeActionKind,
    (uri, version, edits): (&Uri, i32, Vec<TextEdit>),
    diagnostic: Option<&Diagnostic>,
    is_preferred: bool,
) -> CodeActionOrCommand {
    action_over(
        session,
        title,
        kind,
        vec![(uri.clone(), version, edits)],
        diagnostic,
        is_preferred,
    )
}

/// An action whose edits may change several documents (a fix across notebook cells), each at
/// the version they were computed for.
fn action_over(
    session: &Session,
    title: String,
    kind: CodeActionKind,
    documents: Vec<(Uri, i32, Vec<TextEdit>)>,
    diagnostic: Option<&Diagnostic>,
    is_preferred: bool,
) -> CodeActionOrCommand {
    // With versioned edits the client refuses a fix computed for a text it no longer has.
    let edit = if session.flags().document_changes {
        WorkspaceEdit {
            document_changes: Some(DocumentChanges::Edits(
                documents
                    .into_iter()
                    .map(|(uri, version, edits)| TextDocumentEdit {
                        text_document: OptionalVersionedTextDocumentIdentifier {
                            uri,
                            version: Some(version),
                        },
                        edits: edits.into_iter().map(OneOf::Left).collect(),
                    })
                    .collect(),
            )),
            ..WorkspaceEdit::default()
        }
    } else {
        WorkspaceEdit {
            changes: Some(
                documents
                    .into_iter()
                    .map(|(uri, _, edits)| (uri, edits))
                    .collect::<HashMap<_, _>>(),
            ),
            ..WorkspaceEdit::default()
        }
    };
    CodeActionOrCommand::CodeAction(CodeAction {
        title,
        kind: Some(kind),
        diagnostics: diagnostic.map(|diagnostic| vec![diagnostic.clone()]),
        edit: Some(edit),
        is_preferred: is_preferred.then_some(true),
        ..CodeAction::default()
    })
}

/// The edit that adds `code` to line `line`'s suppression comment, or appends one.
/// `None` when the line already suppresses it, or ends in a backslash continuation, where a
/// comment would break the code.
pub fn ignore_edit(document: &Document, line: u32, code: &str) -> Option<TextEdit> {
    let text = document.line(line)?;
    if text.trim_end().ends_with('\\') {
        return None;
    }
    let at = |byte: usize| Position {
        line,
        character: utf16_column(&text, byte),
    };
    let insert = |byte: usize, new_text: String| {
        let position = at(byte);
        Some(TextEdit {
            range: Range {
                start: position,
                end: position,
            },
            new_text,
        })
    };
    let marker = text.find('#').and_then(|hash| {
        text[hash..]
            .find(MARKER)
            .map(|found| hash + found + MARKER.len())
    });
    let Some(after_marker) = marker else {
        return insert(text.len(), format!("  # {MARKER}[{code}]"));
    };
    // A bare marker already suppresses every rule on the line.
    let list_start = after_marker + text[after_marker..].strip_prefix('[').map(|_| 1)?;
    let list_end = list_start + text[list_start..].find(']')?;
    let codes: Vec<&str> = text[list_start..list_end]
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    if codes
        .iter()
        .any(|listed| code.starts_with(&listed.to_ascii_uppercase()))
    {
        return None;
    }
    let new_text = if codes.is_empty() {
        code.to_owned()
    } else {
        format!(", {code}")
    };
    insert(list_end, new_text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::TextPositions;

    fn apply(text: &str, code: &str) -> Option<String> {
        let document = Document::new(text, 0);
        let edit = ignore_edit(&document, 0, code)?;
        let positions = TextPositions::new(text);
        let offset = positions.offset(edit.range.start).to_usize();
        Some(format!(
            "{}{}{}",
            &text[..offset],
            edit.new_text,
            &text[offset..]
        ))
    }

    #[test]
    fn ignore_comments_are_appended_or_extended() {
        assert_eq!(
            apply("if x.sum() > 0:  # 😀\n", "PT101").unwrap(),
            "if x.sum() > 0:  # 😀  # pt2lsp: ignore[PT101]\n"
        );
        assert_eq!(apply("y = z  # pt2lsp: ignore[PT1]\n", "PT101"), None);
        assert_eq!(apply("y = z  # pt2lsp: ignore\n", "PT101"), None);
        assert_eq!(
            apply("y = '漢'  # pt2lsp: ignore[PT201]\r\n", "PT101").unwrap(),
            "y = '漢'  # pt2lsp: ignore[PT201, PT101]\r\n"
        );
        assert_eq!(apply("y = 1 + \\\n 2\n", "PT101"), None);
    }

    #[test]
    fn kinds_match_by_prefix() {
        assert!(wants(None, &FIX_ALL_KIND));
        assert!(wants(
            Some(&[CodeActionKind::SOURCE_FIX_ALL]),
            &FIX_ALL_KIND
        ));
        assert!(!wants(Some(&[CodeActionKind::QUICKFIX]), &FIX_ALL_KIND));
        assert!(wants(Some(&[CodeActionKind::new("source")]), &FIX_ALL_KIND));
    }
}
