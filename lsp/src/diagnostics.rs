//! The server's diagnostics: kept as [`Finding`]s (the analyzer's diagnostic in byte offsets of
//! the text it was read in, the pass that found it and the pass's data, as `pt2lsp check`
//! reports it), and turned into LSP diagnostics only at the edge ([`to_protocol`]), when they
//! are published or a request is answered. [`build`] is the one place an `lsp::Diagnostic` is
//! made.
//!
//! A published diagnostic's `data` holds everything its code actions need: the analyzer's fix
//! as it is (byte ranges of the analysed text) and the same edits already converted to LSP
//! ranges, with the document version they apply to. A quick fix is then a pure function of the
//! request, and `data` is read back only from what a client sends.

use std::path::Path;
use std::sync::Arc;

use pt2lsp_analyzer::{
    Diagnostic, Fix, FixMode, LineIndex, Rule, Severity, TextSize, compatible_fixes,
    fix_to_fixpoint,
};
use pt2lsp_project::report::{Reported, Source};
use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::{
    self as lsp, CodeDescription, DiagnosticSeverity, NumberOrString, Range, TextEdit, Uri,
};

use super::document::{TextPositions, position_of_line_column};

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
    /// The data of a diagnostic a client sent back (a code action's context).
    pub fn from_lsp(diagnostic: &lsp::Diagnostic) -> Option<Self> {
        serde_json::from_value(diagnostic.data.clone()?).ok()
    }
}

/// A text that findings' offsets point into, with its lines; shared by every finding of one
/// analysis or of one file's trace.
#[derive(Debug)]
pub struct AnalysedText {
    text: String,
    lines: LineIndex,
}

impl AnalysedText {
    pub fn new(text: String) -> Arc<Self> {
        let lines = LineIndex::new(&text);
        Arc::new(Self { text, lines })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn lines(&self) -> &LineIndex {
        &self.lines
    }

    /// The 0-based line of an offset.
    pub fn line(&self, offset: TextSize) -> u32 {
        self.lines.line_column(offset).line
    }
}

/// One diagnostic as the server keeps it: what `pt2lsp check` reports for it (byte offsets,
/// source, the tracer's data), the text version those offsets are of, and whether it holds
/// only where a trace proves it.
#[derive(Debug, Clone)]
pub struct Finding {
    pub reported: Reported,
    /// Holds only where an export that succeeded ran its line (`Report::unproven`): kept with
    /// the static diagnostics, published only once a trace proves it.
    pub unproven: bool,
    /// The document version `text` is ([`DISK_VERSION`] for a file read from disk).
    pub version: i32,
    pub text: Arc<AnalysedText>,
}

/// The version of a finding read from a file on disk: no document has it, so no code action
/// applies its edits until the file is opened (and the finding adopted).
pub const DISK_VERSION: i32 = -1;

impl Finding {
    /// A finding of the static analysis in `text` at `version`.
    pub fn found_statically(
        diagnostic: Diagnostic,
        text: &Arc<AnalysedText>,
        version: i32,
    ) -> Self {
        Self {
            reported: Reported::found_statically(diagnostic),
            unproven: false,
            version,
            text: Arc::clone(text),
        }
    }

    /// A tracer finding in `text` at `version`.
    pub fn traced(
        found: &pt2lsp_tracer::TraceDiagnostic,
        text: &Arc<AnalysedText>,
        version: i32,
    ) -> Self {
        Self {
            reported: Reported {
                diagnostic: found.to_diagnostic(text.text(), text.lines()),
                source: Source::Trace,
                data: found.data(),
            },
            unproven: false,
            version,
            text: Arc::clone(text),
        }
    }

    pub fn diagnostic(&self) -> &Diagnostic {
        &self.reported.diagnostic
    }

    /// The 0-based line it starts on.
    pub fn line(&self) -> u32 {
        self.text.line(self.reported.diagnostic.range.start())
    }

    pub fn is_traced(&self) -> bool {
        self.reported.source == Source::Trace
    }

    pub fn is_confirmed(&self) -> bool {
        self.reported.source == Source::Both
    }

    /// The exporter's suggested `dynamic_shapes` fixes, when the tracer gave some.
    fn suggested_fixes(&self) -> Option<serde_json::Value> {
        self.reported
            .data
            .as_ref()
            .and_then(|data| data.get("suggested_fixes").cloned())
    }
}

/// What is kept for one file: its findings and, for a document over `max-file-size`, the
/// information shown on its first line saying why only its syntax is checked.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub items: Vec<Finding>,
    pub too_large: Option<TooLarge>,
}

/// A document's size and the `max-file-size` it is over, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct TooLarge {
    pub bytes: usize,
    pub limit: usize,
}

impl From<Vec<Finding>> for Findings {
    fn from(items: Vec<Finding>) -> Self {
        Self {
            items,
            too_large: None,
        }
    }
}

/// Where the edge reads the text of a file a related place is in, to count its column in
/// UTF-16 units (the analyzer and the tracer count characters): the session's sources, so the
/// text is the one the analysis read.
pub trait RelatedTexts {
    fn text(&self, file: &Path) -> Option<Arc<str>>;
}

/// No text at hand: related columns are sent as the characters they are counted in.
pub struct NoTexts;

impl RelatedTexts for NoTexts {
    fn text(&self, _: &Path) -> Option<Arc<str>> {
        None
    }
}

/// The edge: a file's findings as LSP diagnostics, positions in UTF-16 of the text each was
/// read in; related places only for a client that shows them (`related`), in UTF-16 of the
/// text `related` gives for their file.
pub fn to_protocol(
    findings: &Findings,
    related: Option<&dyn RelatedTexts>,
) -> Vec<lsp::Diagnostic> {
    let mut out = Vec::with_capacity(findings.items.len() + 1);
    if let Some(too_large) = findings.too_large {
        out.push(too_large_to_analyse(too_large));
    }
    // Every finding of one analysis shares its text: its positions are computed once.
    let mut positions: Vec<(*const AnalysedText, TextPositions<'_>)> = Vec::new();
    for finding in &findings.items {
        let key = Arc::as_ptr(&finding.text);
        let at = if let Some(at) = positions.iter().position(|(text, _)| *text == key) {
            at
        } else {
            positions.push((key, TextPositions::new(finding.text.text())));
            positions.len() - 1
        };
        out.push(to_lsp(finding, &positions[at].1, related));
    }
    out
}

/// One finding as an LSP diagnostic, `positions` being those of its text.
pub fn to_lsp(
    finding: &Finding,
    positions: &TextPositions<'_>,
    related: Option<&dyn RelatedTexts>,
) -> lsp::Diagnostic {
    let diagnostic = finding.diagnostic();
    let edits = diagnostic
        .fix
        .as_ref()
        .map(|fix| fix_edits(fix, positions))
        .unwrap_or_default();
    build(
        finding,
        positions.range(diagnostic.range),
        edits,
        Vec::new(),
        related,
    )
}

/// A finding of a notebook's joined module as an LSP diagnostic of the cell it is placed in:
/// `range` in the cell, the fix's edits each in the cell it falls in (see `lsp::notebooks`).
pub fn in_cell(
    finding: &Finding,
    range: Range,
    cell_edits: Vec<CellEdit>,
    related: Option<&dyn RelatedTexts>,
) -> lsp::Diagnostic {
    build(finding, range, Vec::new(), cell_edits, related)
}

/// The one constructor of a published diagnostic.
fn build(
    finding: &Finding,
    range: Range,
    edits: Vec<TextEdit>,
    cell_edits: Vec<CellEdit>,
    related: Option<&dyn RelatedTexts>,
) -> lsp::Diagnostic {
    let diagnostic = finding.diagnostic();
    let source = match finding.reported.source {
        Source::Static => None,
        Source::Trace => Some(TRACE_SOURCE.to_owned()),
        Source::Both => Some(CONFIRMED_SOURCE.to_owned()),
    };
    let data = DiagnosticData {
        code: diagnostic.rule.code().to_owned(),
        name: diagnostic.rule.name().to_owned(),
        version: finding.version,
        fix: diagnostic.fix.clone(),
        edits,
        source,
        suggested_fixes: finding.suggested_fixes(),
        cell_edits,
        unproven: finding.unproven,
    };
    protocol_diagnostic(
        range,
        severity(diagnostic.severity),
        Some(diagnostic.rule),
        diagnostic.message.clone(),
        related.and_then(|texts| related_information(&diagnostic.related, texts)),
        serde_json::to_value(data).ok(),
    )
}

/// The information a document over `max-file-size` shows on its first line.
fn too_large_to_analyse(too_large: TooLarge) -> lsp::Diagnostic {
    #[allow(clippy::cast_precision_loss)]
    let (size, limit) = (too_large.bytes as f64 / 1_048_576.0, too_large.limit / 1024);
    protocol_diagnostic(
        Range::default(),
        DiagnosticSeverity::INFORMATION,
        None,
        format!(
            "pt2lsp checks only the syntax of this file as you type: it is {size:.1} MiB, over `max-file-size` ({limit} KiB). `pt2lsp check` analyses it in full; raise `max-file-size` in [tool.pt2lsp] to do so here"
        ),
        None,
        None,
    )
}

/// The `lsp::Diagnostic` literal, written once (`tidy` checks it is nowhere else).
fn protocol_diagnostic(
    range: Range,
    severity: DiagnosticSeverity,
    rule: Option<Rule>,
    message: String,
    related_information: Option<Vec<lsp::DiagnosticRelatedInformation>>,
    data: Option<serde_json::Value>,
) -> lsp::Diagnostic {
    lsp::Diagnostic {
        range,
        severity: Some(severity),
        code: rule.map(|rule| NumberOrString::String(rule.code().to_owned())),
        code_description: rule.and_then(doc_url).map(|href| CodeDescription { href }),
        source: Some(SOURCE.to_owned()),
        message,
        related_information,
        tags: None,
        data,
    }
}

/// A diagnostic's related places as LSP related information: each a point at its line and
/// column, counted in UTF-16 units of its file's text as `texts` gives it (in characters when
/// it gives none). Places whose file is not an absolute path have no URI and are left out.
/// `None` when nothing is left.
pub fn related_information(
    related: &[pt2lsp_analyzer::Related],
    texts: &dyn RelatedTexts,
) -> Option<Vec<lsp::DiagnosticRelatedInformation>> {
    let information: Vec<lsp::DiagnosticRelatedInformation> = related
        .iter()
        .filter_map(|related| {
            let uri = Uri::from_file_path(&related.file)?;
            // The first column is the first unit in any encoding: no text needed.
            let position = match texts.text(&related.file).filter(|_| related.column > 1) {
                Some(text) => position_of_line_column(&text, related.line, related.column),
                None => lsp::Position {
                    line: related.line.saturating_sub(1),
                    character: related.column.saturating_sub(1),
                },
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

/// The `source` in `data` of a static diagnostic the tracer confirmed.
pub const CONFIRMED_SOURCE: &str = "static+trace";

/// The static findings of a version with the trace findings of the same version merged in, by
/// the rule `pt2lsp check --trace` uses (`tracer::diagnostics::merge_traced`): a problem both
/// found is the static finding (its message, its fix) marked `static+trace`.
pub fn merge(statics: &[Finding], traced: &[Finding]) -> Vec<Finding> {
    let mut merged = statics.to_vec();
    for finding in traced {
        pt2lsp_tracer::diagnostics::merge_traced(
            &mut merged,
            finding.clone(),
            |item| {
                let diagnostic = item.diagnostic();
                let code =
                    pt2lsp_tracer::diagnostics::merge_code(diagnostic.rule.code()).to_owned();
                let library = pt2lsp_tracer::diagnostics::LibraryPlace::of(
                    diagnostic
                        .related
                        .iter()
                        .filter(|related| related.file.is_absolute())
                        .map(|related| (related.file.as_path(), related.line)),
                );
                (!item.is_traced(), (code, item.line(), library))
            },
            confirm,
        );
    }
    merged.sort_by_key(|finding| finding.diagnostic().range.start());
    merged
}

/// Marks a static finding as confirmed by a trace finding of the same problem: it keeps its
/// message and its fix, unless the trace's fix wins (`tracer::diagnostics::trace_fix_wins`: it
/// had none, or the exporter's own is safe where its own is a guess), and takes the exporter's
/// suggested fixes.
fn confirm(found: &mut Finding, traced: &Finding) {
    found.reported.source = Source::Both;
    let own = &mut found.reported.diagnostic;
    let theirs = &traced.reported.diagnostic;
    if let Some(message) =
        pt2lsp_tracer::diagnostics::confirmed_message(&own.message, &theirs.message)
    {
        own.message = message;
    }
    // A merge never lowers the exporter's severity.
    own.severity = pt2lsp_tracer::diagnostics::stronger(own.severity, theirs.severity);
    if pt2lsp_tracer::diagnostics::trace_fix_wins(own.fix.as_ref(), theirs.fix.as_ref()) {
        own.fix.clone_from(&theirs.fix);
    }
    if traced.suggested_fixes().is_some() {
        found.reported.data.clone_from(&traced.reported.data);
    }
    // The tracer's places when the static finding has none a client could open.
    let own_places = &found.reported.diagnostic.related;
    if !own_places.iter().any(|place| place.file.is_absolute()) {
        found
            .reported
            .diagnostic
            .related
            .clone_from(&traced.reported.diagnostic.related);
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

    fn statically(diagnostic: Diagnostic, text: &str, version: i32) -> Finding {
        Finding::found_statically(diagnostic, &AnalysedText::new(text.to_owned()), version)
    }

    fn traced(diagnostic: Diagnostic, text: &str, version: i32) -> Finding {
        let mut finding = statically(diagnostic, text, version);
        finding.reported.source = Source::Trace;
        finding
    }

    fn published(findings: &[Finding]) -> Vec<lsp::Diagnostic> {
        to_protocol(&findings.to_vec().into(), Some(&NoTexts))
    }

    #[test]
    fn data_round_trips_and_carries_lsp_edits() {
        let text = "é = 1\nb = 2\n";
        let [diagnostic] = published(&[statically(fix(8, 9, Applicability::Safe), text, 4)])
            .try_into()
            .unwrap();
        let data = DiagnosticData::from_lsp(&diagnostic).unwrap();
        assert_eq!((data.code.as_str(), data.version), ("PT101", 4));
        assert_eq!(data.source, None);
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
        let mut found = fix(0, 14, Applicability::Unsafe);
        found.message = "`if` on `x.sum() > 0`, a tensor's value".to_owned();
        let statics = [statically(found.clone(), text, 3)];
        let mut exporter = fix(0, 14, Applicability::Safe);
        exporter.message = "Could not guard on data-dependent expression Eq(u0, 1)".to_owned();
        exporter.fix = None;
        let merged = merge(&statics, &[traced(exporter.clone(), text, 3)]);
        assert_eq!(merged.len(), 1);
        let [confirmed] = published(&merged).try_into().unwrap();
        assert_eq!(confirmed.message, found.message);
        let data = DiagnosticData::from_lsp(&confirmed).unwrap();
        assert_eq!(data.source.as_deref(), Some(CONFIRMED_SOURCE));
        assert_eq!(data.fix, found.fix);
        // On another line, the trace's diagnostic is added as it is.
        let mut elsewhere = exporter;
        elsewhere.range = TextRange::new(TextSize::new(20), TextSize::new(24));
        let merged = merge(&statics, &[traced(elsewhere, text, 3)]);
        assert_eq!(merged.len(), 2);
        assert_eq!(
            DiagnosticData::from_lsp(&published(&merged)[1])
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
        let library = |line: u32| pt2lsp_analyzer::Related {
            file: std::path::PathBuf::from("/env/lib/python3.11/site-packages/lib/ops.py"),
            line,
            column: 1,
            message: "here, in installed lib".to_owned(),
        };
        let mut warning = fix(0, 12, Applicability::Unsafe);
        warning.severity = Severity::Warning;
        warning.related = vec![library(10)];
        let statics = [statically(warning, text, 1)];
        let mut exporter = fix(0, 12, Applicability::Safe);
        exporter.fix = None;
        exporter.related = vec![library(20)];
        let merged = merge(&statics, &[traced(exporter.clone(), text, 1)]);
        assert_eq!(merged.len(), 2, "{merged:#?}");
        assert!(published(&merged).iter().any(|d| {
            DiagnosticData::from_lsp(d).unwrap().source.as_deref() == Some(TRACE_SOURCE)
                && d.severity == Some(DiagnosticSeverity::ERROR)
        }));
        exporter.related = vec![library(10)];
        let merged = merge(&statics, &[traced(exporter, text, 1)]);
        assert_eq!(merged.len(), 1, "{merged:#?}");
        let [one] = published(&merged).try_into().unwrap();
        assert_eq!(one.severity, Some(DiagnosticSeverity::ERROR));
        assert_eq!(
            DiagnosticData::from_lsp(&one).unwrap().source.as_deref(),
            Some(CONFIRMED_SOURCE)
        );
    }

    #[test]
    fn related_places_become_related_information_at_their_line_and_column() {
        let text = "if x.sum() > 0:\n    pass\n";
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
        let finding = statically(found.clone(), text, 1);
        let information = published(std::slice::from_ref(&finding))[0]
            .related_information
            .clone()
            .unwrap();
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
        // A client that does not show related places is sent none.
        let hidden = to_protocol(&vec![finding].into(), None);
        assert!(hidden[0].related_information.is_none());
        found.related.clear();
        assert!(
            published(&[statically(found, text, 1)])[0]
                .related_information
                .is_none()
        );
    }

    /// The texts of the files related places are in, as a session's sources give them.
    struct Texts(Vec<(&'static str, &'static str)>);

    impl RelatedTexts for Texts {
        fn text(&self, file: &Path) -> Option<Arc<str>> {
            let (_, text) = self.0.iter().find(|(name, _)| Path::new(name) == file)?;
            Some(Arc::from(*text))
        }
    }

    #[test]
    fn related_columns_are_counted_in_utf16_units_of_their_files_text() {
        let text = "if x.sum() > 0:\n    pass\n";
        let mut found = fix(0, 14, Applicability::Unsafe);
        // Characters 1-based: `𝑥` is one character, two UTF-16 units; `é` one of each.
        let place = |line: u32, column: u32| pt2lsp_analyzer::Related {
            file: "/w/helpers.py".into(),
            line,
            column,
            message: "here".to_owned(),
        };
        found.related = vec![place(2, 10), place(3, 5), place(9, 5)];
        let texts = Texts(vec![(
            "/w/helpers.py",
            "import torch\r\n𝑥 = 'é'; y = x.sum()\r\ndéf = 1\n",
        )]);
        let finding = statically(found, text, 1);
        let sent = to_protocol(&vec![finding.clone()].into(), Some(&texts));
        let points: Vec<(u32, u32)> = sent[0]
            .related_information
            .as_ref()
            .unwrap()
            .iter()
            .map(|info| {
                (
                    info.location.range.start.line,
                    info.location.range.start.character,
                )
            })
            .collect();
        // `y` is the 10th character and the 11th unit; `=` after `déf ` is the 5th character
        // and unit; a line past the text's end keeps its characters.
        assert_eq!(points, [(1, 10), (2, 4), (8, 4)]);
        // Without the file's text, the characters as counted.
        let sent = to_protocol(&vec![finding].into(), Some(&NoTexts));
        assert_eq!(
            sent[0].related_information.as_ref().unwrap()[0]
                .location
                .range
                .start,
            lsp::Position {
                line: 1,
                character: 9
            }
        );
    }

    #[test]
    fn a_document_too_large_to_analyse_says_so_on_its_first_line() {
        let findings = Findings {
            items: Vec::new(),
            too_large: Some(TooLarge {
                bytes: 3 * 1_048_576,
                limit: 2 * 1_048_576,
            }),
        };
        let [notice] = to_protocol(&findings, Some(&NoTexts)).try_into().unwrap();
        assert_eq!(notice.severity, Some(DiagnosticSeverity::INFORMATION));
        assert_eq!((notice.code, notice.data), (None, None));
        assert!(notice.message.contains("3.0 MiB"), "{}", notice.message);
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
