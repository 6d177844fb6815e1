//! Analyzer diagnostics to LSP diagnostics, with the fix carried in `data`.
//!
//! A diagnostic's `data` holds everything its code actions need: the analyzer's fix as it is
//! (byte ranges of the analysed text) and the same edits already converted to LSP ranges, with
//! the document version they apply to. A quick fix is then a pure function of the request.

use pt2lsp_analyzer::{
    Diagnostic, Fix, FixMode, Rule, Severity, compatible_fixes, fix_to_fixpoint,
};
use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::{
    self as lsp, CodeDescription, DiagnosticSeverity, NumberOrString, Range, TextEdit, Uri,
};

use super::document::TextPositions;

/// The `source` of every diagnostic the server publishes.
pub const SOURCE: &str = "pt2lsp";

/// What travels in an LSP diagnostic's `data`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiagnosticData {
    pub code: String,
    pub name: String,
    /// The document version the ranges below refer to.
    pub version: i32,
    pub fix: Option<Fix>,
    /// `fix`'s edits in LSP coordinates of `version`.
    #[serde(default)]
    pub edits: Vec<TextEdit>,
    /// `"trace"` for what the tracer found by running the real exporter; absent for the static
    /// analysis (as `source` in `pt2lsp check --format json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The exporter's structured suggested fixes, for trace diagnostics that have them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_fixes: Option<serde_json::Value>,
    /// In a notebook cell: `fix`'s edits, each in the cell it falls in (`edits` is empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cell_edits: Vec<CellEdit>,
    /// Holds only where an export that succeeded ran its line (see
    /// `pt2lsp_analyzer::Report::unproven`): kept with the static diagnostics, published only
    /// once a trace proves it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unproven: bool,
}

/// An edit of one notebook cell, at the cell's version when the diagnostic was published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellEdit {
    pub uri: Uri,
    pub version: i32,
    pub edit: TextEdit,
}

impl DiagnosticData {
    pub fn from_lsp(diagnostic: &lsp::Diagnostic) -> Option<Self> {
        serde_json::from_value(diagnostic.data.clone()?).ok()
    }
}

pub fn to_lsp(
    diagnostic: &Diagnostic,
    positions: &TextPositions<'_>,
    version: i32,
) -> lsp::Diagnostic {
    let edits = diagnostic
        .fix
        .as_ref()
        .map(|fix| fix_edits(fix, positions))
        .unwrap_or_default();
    let data = DiagnosticData {
        code: diagnostic.rule.code().to_owned(),
        name: diagnostic.rule.name().to_owned(),
        version,
        fix: diagnostic.fix.clone(),
        edits,
        source: None,
        suggested_fixes: None,
        cell_edits: Vec::new(),
        unproven: false,
    };
    lsp::Diagnostic {
        range: positions.range(diagnostic.range),
        severity: Some(severity(diagnostic.severity)),
        code: Some(NumberOrString::String(diagnostic.rule.code().to_owned())),
        code_description: doc_url(diagnostic.rule).map(|href| CodeDescription { href }),
        source: Some(SOURCE.to_owned()),
        message: diagnostic.message.clone(),
        related_information: related_information(&diagnostic.related),
        tags: None,
        data: serde_json::to_value(data).ok(),
    }
}

/// [`to_lsp`] of a diagnostic that holds only where a trace proves it (`DiagnosticData::unproven`).
pub fn unproven_to_lsp(
    diagnostic: &pt2lsp_analyzer::Diagnostic,
    positions: &TextPositions<'_>,
    version: i32,
) -> lsp::Diagnostic {
    let mut converted = to_lsp(diagnostic, positions, version);
    if let Some(data) = converted.data.as_mut() {
        data["unproven"] = serde_json::Value::Bool(true);
    }
    converted
}

/// Whether `diagnostic` holds only where a trace proves it (see [`unproven_to_lsp`]).
pub fn is_unproven(diagnostic: &lsp::Diagnostic) -> bool {
    diagnostic
        .data
        .as_ref()
        .is_some_and(|data| data["unproven"] == serde_json::Value::Bool(true))
}

/// A diagnostic's related places as LSP related information: each a point at its 1-based line
/// and character column (the file's text is not at hand to count UTF-16 units, and columns past
/// the Basic Multilingual Plane are rare in code). Places whose file is not an absolute path
/// have no URI and are left out. `None` when nothing is left.
pub fn related_information(
    related: &[pt2lsp_analyzer::Related],
) -> Option<Vec<lsp::DiagnosticRelatedInformation>> {
    let information: Vec<lsp::DiagnosticRelatedInformation> = related
        .iter()
        .filter_map(|related| {
            let uri = Uri::from_file_path(&related.file)?;
            let position = lsp::Position {
                line: related.line.saturating_sub(1),
                character: related.column.saturating_sub(1),
            };
            Some(lsp::DiagnosticRelatedInformation {
                location: lsp::Location {
                    uri,
                    range: Range {
                        start: position,
                        end: position,
                    },
                },
                message: related.message.clone(),
            })
        })
        .collect();
    (!information.is_empty()).then_some(information)
}

/// The `source` in a trace diagnostic's `data`.
pub const TRACE_SOURCE: &str = "trace";

/// A tracer finding as an LSP diagnostic of `text` at `version`, marked as traced in `data`.
pub fn traced_to_lsp(
    found: &pt2lsp_tracer::TraceDiagnostic,
    text: &str,
    lines: &pt2lsp_analyzer::LineIndex,
    positions: &TextPositions<'_>,
    version: i32,
) -> lsp::Diagnostic {
    let mut diagnostic = to_lsp(&found.to_diagnostic(text, lines), positions, version);
    if let Some(mut data) = DiagnosticData::from_lsp(&diagnostic) {
        data.source = Some(TRACE_SOURCE.to_owned());
        data.suggested_fixes = found
            .data()
            .and_then(|value| value.get("suggested_fixes").cloned());
        diagnostic.data = serde_json::to_value(data).ok();
    }
    diagnostic
}

/// Whether a published diagnostic came from the tracer.
pub fn is_traced(diagnostic: &lsp::Diagnostic) -> bool {
    data_source(diagnostic) == Some(TRACE_SOURCE)
}

/// The `source` a published diagnostic's `data` names (`trace`, `static+trace`).
fn data_source(diagnostic: &lsp::Diagnostic) -> Option<&str> {
    diagnostic
        .data
        .as_ref()
        .and_then(|data| data.get("source"))
        .and_then(serde_json::Value::as_str)
}

/// Whether a published diagnostic is a static one the tracer confirmed.
pub fn is_confirmed(diagnostic: &lsp::Diagnostic) -> bool {
    data_source(diagnostic) == Some(CONFIRMED_SOURCE)
}

/// The rule of a published diagnostic, from its code.
pub fn rule_of(diagnostic: &lsp::Diagnostic) -> Option<Rule> {
    match &diagnostic.code {
        Some(NumberOrString::String(code)) => Rule::from_code_or_name(code),
        _ => None,
    }
}

/// The `source` in `data` of a static diagnostic the tracer confirmed.
pub const CONFIRMED_SOURCE: &str = "static+trace";

/// The static diagnostics of a version with the trace diagnostics of the same version merged
/// in, by the rule `pt2lsp check --trace` uses (`tracer::diagnostics::merge_traced`): a problem
/// both found is the static diagnostic (its message, its fix) marked `data.source =
/// "static+trace"`.
pub fn merge(statics: &[lsp::Diagnostic], traced: &[lsp::Diagnostic]) -> Vec<lsp::Diagnostic> {
    let mut merged = statics.to_vec();
    for diagnostic in traced {
        pt2lsp_tracer::diagnostics::merge_traced(
            &mut merged,
            diagnostic.clone(),
            |item| {
                let code = match &item.code {
                    Some(NumberOrString::String(code)) => code.clone(),
                    Some(NumberOrString::Number(number)) => number.to_string(),
                    None => String::new(),
                };
                let code = pt2lsp_tracer::diagnostics::merge_code(&code).to_owned();
                let places: Vec<(std::path::PathBuf, u32)> = item
                    .related_information
                    .iter()
                    .flatten()
                    .filter_map(|related| {
                        Some((
                            related.location.uri.to_file_path()?.into_owned(),
                            related.location.range.start.line + 1,
                        ))
                    })
                    .collect();
                let library = pt2lsp_tracer::diagnostics::LibraryPlace::of(
                    places.iter().map(|(path, line)| (path.as_path(), *line)),
                );
                (!is_traced(item), (code, item.range.start.line, library))
            },
            confirm,
        );
    }
    merged.sort_by_key(|d| (d.range.start.line, d.range.start.character));
    merged
}

/// Marks a static diagnostic as confirmed by a trace diagnostic of the same problem: it keeps
/// its message and its fix, unless the trace's fix wins (`tracer::diagnostics::trace_fix_wins`:
/// it had none, or the exporter's own is safe where its own is a guess), and takes the
/// exporter's suggested fixes.
fn confirm(found: &mut lsp::Diagnostic, traced: &lsp::Diagnostic) {
    let (Some(mut data), Some(from_trace)) = (
        DiagnosticData::from_lsp(found),
        DiagnosticData::from_lsp(traced),
    ) else {
        return;
    };
    data.source = Some(CONFIRMED_SOURCE.to_owned());
    if let Some(message) =
        pt2lsp_tracer::diagnostics::confirmed_message(&found.message, &traced.message)
    {
        found.message = message;
    }
    // A merge never lowers the exporter's severity.
    if traced.severity == Some(DiagnosticSeverity::ERROR) {
        found.severity = traced.severity;
    }
    if pt2lsp_tracer::diagnostics::trace_fix_wins(data.fix.as_ref(), from_trace.fix.as_ref()) {
        data.fix = from_trace.fix;
        data.edits = from_trace.edits;
    }
    if from_trace.suggested_fixes.is_some() {
        data.suggested_fixes = from_trace.suggested_fixes;
    }
    found.data = serde_json::to_value(data).ok();
    if found.related_information.is_none() {
        found
            .related_information
            .clone_from(&traced.related_information);
    }
}

pub fn fix_edits(fix: &Fix, positions: &TextPositions<'_>) -> Vec<TextEdit> {
    fix.edits
        .iter()
        .map(|edit| TextEdit {
            range: positions.range(edit.range),
            new_text: edit.content.clone(),
        })
        .collect()
}

/// The link to a rule's page (see [`super::rule_pages`]).
pub fn doc_url(rule: Rule) -> Option<Uri> {
    super::rule_pages::url(rule)
}

fn severity(severity: Severity) -> DiagnosticSeverity {
    match severity {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Info => DiagnosticSeverity::INFORMATION,
    }
}

/// "Fix all": the edits that turn `text` into what `pt2lsp check --fix` makes of it, by the
/// analyzer's own rounds ([`fix_to_fixpoint`]). When one round did it, its edits are returned
/// as the fixes made them; after several rounds (fixes that overlapped, or that the first ones
/// made possible) the changed span is one edit.
pub fn fix_all_edits(
    text: &str,
    diagnostics: &[Diagnostic],
    mode: FixMode,
    mut check: impl FnMut(&str) -> Vec<Diagnostic>,
) -> Vec<TextEdit> {
    let positions = TextPositions::new(text);
    let first = compatible_fixes(diagnostics, mode);
    if first.is_empty() {
        return Vec::new();
    }
    // The first round's diagnostics are the ones the client has; later rounds check again.
    let mut given = Some(diagnostics.to_vec());
    let (fixed, rounds) = fix_to_fixpoint(text, mode, |current| {
        given.take().unwrap_or_else(|| check(current))
    });
    if rounds <= 1 {
        return first
            .iter()
            .flat_map(|fix| fix_edits(fix, &positions))
            .collect();
    }
    changed_span(text, &fixed, &positions).into_iter().collect()
}

/// One edit replacing the part of `old` that differs from `new` (common prefix and suffix
/// kept, on character boundaries); `None` when they are equal.
fn changed_span(old: &str, new: &str, positions: &TextPositions<'_>) -> Option<TextEdit> {
    if old == new {
        return None;
    }
    let mut prefix = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(prefix) || !new.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let mut suffix = old[prefix..]
        .bytes()
        .rev()
        .zip(new[prefix..].bytes().rev())
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(old.len() - suffix) || !new.is_char_boundary(new.len() - suffix) {
        suffix -= 1;
    }
    let range = pt2lsp_analyzer::TextRange::new(
        pt2lsp_analyzer::TextSize::new(prefix as u32),
        pt2lsp_analyzer::TextSize::new((old.len() - suffix) as u32),
    );
    Some(TextEdit {
        range: positions.range(range),
        new_text: new[prefix..new.len() - suffix].to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use pt2lsp_analyzer::{Applicability, Edit, TextRange, TextSize};

    use super::*;

    fn fix(start: u32, end: u32, applicability: Applicability) -> Diagnostic {
        Diagnostic {
            rule: Rule::DataDependentBranch,
            severity: Severity::Error,
            message: "m".to_owned(),
            range: TextRange::new(TextSize::new(start), TextSize::new(end)),
            fix: Some(Fix {
                title: "t".to_owned(),
                edits: vec![Edit {
                    range: TextRange::new(TextSize::new(start), TextSize::new(end)),
                    content: "x".to_owned(),
                }],
                applicability,
            }),
            related: Vec::new(),
        }
    }

    #[test]
    fn data_round_trips_and_carries_lsp_edits() {
        let text = "é = 1\nb = 2\n";
        let positions = TextPositions::new(text);
        let diagnostic = to_lsp(&fix(8, 9, Applicability::Safe), &positions, 4);
        let data = DiagnosticData::from_lsp(&diagnostic).unwrap();
        assert_eq!((data.code.as_str(), data.version), ("PT101", 4));
        assert_eq!(
            data.edits[0].range.start,
            lsp::Position {
                line: 1,
                character: 1
            }
        );
        assert!(
            diagnostic
                .code_description
                .unwrap()
                .href
                .as_str()
                .ends_with("/PT101.md")
        );
    }

    #[test]
    fn a_problem_both_passes_find_keeps_the_static_message_and_fix() {
        let text = "if x.sum() > 0:\n    pass\n";
        let positions = TextPositions::new(text);
        let mut found = fix(0, 14, Applicability::Unsafe);
        found.message = "`if` on `x.sum() > 0`, a tensor's value".to_owned();
        let statics = [to_lsp(&found, &positions, 3)];
        let mut exporter = fix(0, 14, Applicability::Safe);
        exporter.message = "Could not guard on data-dependent expression Eq(u0, 1)".to_owned();
        exporter.fix = None;
        let mut traced = to_lsp(&exporter, &positions, 3);
        let mut data = DiagnosticData::from_lsp(&traced).unwrap();
        data.source = Some(TRACE_SOURCE.to_owned());
        traced.data = serde_json::to_value(data).ok();
        let merged = merge(&statics, &[traced.clone()]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].message, statics[0].message);
        let data = DiagnosticData::from_lsp(&merged[0]).unwrap();
        assert_eq!(data.source.as_deref(), Some(CONFIRMED_SOURCE));
        assert_eq!(data.fix, found.fix);
        // On another line, the trace's diagnostic is added as it is.
        traced.range.start.line = 1;
        let merged = merge(&statics, &[traced]);
        assert_eq!(merged.len(), 2);
        assert_eq!(
            DiagnosticData::from_lsp(&merged[1])
                .unwrap()
                .source
                .as_deref(),
            Some(TRACE_SOURCE)
        );
    }

    /// A merge never lowers the exporter's severity nor loses its library location: a static
    /// warning from one library line and the trace's error from another, on the same user line,
    /// stay two diagnostics; from the same library line they are one, an error.
    #[test]
    fn a_merge_keeps_the_exporters_severity_and_its_library_line() {
        let text = "y = boxes(x)\n";
        let positions = TextPositions::new(text);
        let library = |line: u32| pt2lsp_analyzer::Related {
            file: std::path::PathBuf::from("/env/lib/python3.11/site-packages/lib/ops.py"),
            line,
            column: 1,
            message: "here, in installed lib".to_owned(),
        };
        let mut warning = fix(0, 12, Applicability::Unsafe);
        warning.severity = Severity::Warning;
        warning.related = vec![library(10)];
        let statics = [to_lsp(&warning, &positions, 1)];
        let mut exporter = fix(0, 12, Applicability::Safe);
        exporter.fix = None;
        exporter.related = vec![library(20)];
        let mut traced = to_lsp(&exporter, &positions, 1);
        let mut data = DiagnosticData::from_lsp(&traced).unwrap();
        data.source = Some(TRACE_SOURCE.to_owned());
        traced.data = serde_json::to_value(data).ok();
        let merged = merge(&statics, std::slice::from_ref(&traced));
        assert_eq!(merged.len(), 2, "{merged:#?}");
        assert!(
            merged
                .iter()
                .any(|d| is_traced(d) && d.severity == Some(DiagnosticSeverity::ERROR))
        );
        traced.related_information = statics[0].related_information.clone();
        let merged = merge(&statics, &[traced]);
        assert_eq!(merged.len(), 1, "{merged:#?}");
        assert_eq!(merged[0].severity, Some(DiagnosticSeverity::ERROR));
        assert_eq!(
            DiagnosticData::from_lsp(&merged[0])
                .unwrap()
                .source
                .as_deref(),
            Some(CONFIRMED_SOURCE)
        );
    }

    #[test]
    fn related_places_become_related_information_at_their_line_and_column() {
        let text = "if x.sum() > 0:\n    pass\n";
        let positions = TextPositions::new(text);
        let mut found = fix(0, 14, Applicability::Unsafe);
        found.related = vec![
            pt2lsp_analyzer::Related {
                file: "/w/export_net.py".into(),
                line: 8,
                column: 1,
                message: "`model` is exported here".to_owned(),
            },
            // No URI for a relative path: left out rather than guessed.
            pt2lsp_analyzer::Related {
                file: "net.py".into(),
                line: 15,
                column: 13,
                message: "calls `normalize`".to_owned(),
            },
        ];
        let information = to_lsp(&found, &positions, 1).related_information.unwrap();
        assert_eq!(information.len(), 1);
        assert_eq!(
            information[0].location.uri.as_str(),
            "file:///w/export_net.py"
        );
        assert_eq!(
            information[0].location.range.start,
            lsp::Position {
                line: 7,
                character: 0
            }
        );
        assert_eq!(information[0].message, "`model` is exported here");
        found.related.clear();
        assert!(to_lsp(&found, &positions, 1).related_information.is_none());
    }

    #[test]
    fn fix_all_skips_overlapping_and_unsafe_fixes_in_one_round() {
        let text = "abcdefghij";
        let diagnostics = [
            fix(0, 4, Applicability::Safe),
            fix(2, 6, Applicability::Safe),
            fix(6, 7, Applicability::Unsafe),
            fix(8, 9, Applicability::Safe),
        ];
        let edits = fix_all_edits(text, &diagnostics, FixMode::Safe, |_| Vec::new());
        let starts: Vec<u32> = edits
            .iter()
            .map(|edit| edit.range.start.character)
            .collect();
        assert_eq!(starts, [0, 8]);
        let edits = fix_all_edits(text, &diagnostics, FixMode::Unsafe, |_| Vec::new());
        assert_eq!(edits.len(), 3);
    }

    #[test]
    fn fix_all_runs_rounds_and_returns_the_changed_span() {
        // Round one fixes "b" → "x"; the check of "axcdé" finds "d" → "y", which round two fixes.
        let text = "abcdé";
        let diagnostics = [fix(1, 2, Applicability::Safe)];
        let mut checks = 0;
        let edits = fix_all_edits(text, &diagnostics, FixMode::Safe, |fixed| {
            checks += 1;
            if fixed == "axcdé" {
                vec![fix(3, 4, Applicability::Safe)]
            } else {
                Vec::new()
            }
        });
        assert_eq!(checks, 2);
        assert_eq!(edits.len(), 1);
        assert_eq!(
            (edits[0].range.start.character, edits[0].range.end.character),
            (1, 4)
        );
        assert_eq!(edits[0].new_text, "xcx");
    }
}
