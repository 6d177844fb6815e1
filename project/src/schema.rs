//! The one serialisable diagnostic: what `pt2lsp check --format json` writes for each finding,
//! what the Python API returns (`pt2lsp::api`, `pt2lsp._native`, whose `to_dict()` is this
//! object serialised) and what its `.pyi` describes. Positions are those of [`FileReport`]:
//! 1-based lines, 1-based columns in characters, ends exclusive; in a notebook the line is the
//! cell's and `cell` says which. Built from a report in one place, [`FileReport::located`], so
//! no consumer converts positions, names or applicability on its own.

use pt2lsp_analyzer::{Applicability, Severity, TextRange};
use serde::{Deserialize, Serialize};

use crate::report::{FileReport, related_path};

/// One finding at one place of one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// The path as shown: relative to the current directory when under it, `/` separators.
    pub file: String,
    /// In a notebook: the cell (from 1, every cell counted); `line` is then the cell's line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<u32>,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub code: String,
    pub name: String,
    pub severity: Severity,
    pub message: String,
    /// `static` for the static analysis, `trace` for the tracer's findings, `static+trace` for
    /// a static finding the tracer confirmed.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<Fix>,
    /// The places that explain it (the entrypoint, the calls that reach it, library frames),
    /// in the order a reader follows them; empty when there are none.
    #[serde(default)]
    pub related: Vec<Related>,
    /// The tracer's extra data: `suggested_fixes` for `dynamic_shapes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

/// Another place that explains a diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Related {
    /// Shown like [`Diagnostic::file`].
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// Edits that together fix one diagnostic, and how safe they are to apply.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fix {
    pub title: String,
    pub applicability: Applicability,
    pub edits: Vec<Edit>,
}

/// Replace the text from (`line`, `column`) up to, not including, (`end_line`, `end_column`)
/// with `content`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Edit {
    /// In a notebook: the cell the edit starts in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<u32>,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub content: String,
}

impl FileReport {
    /// Every diagnostic of the file in the schema, in the report's order.
    pub fn located(&self) -> Vec<Diagnostic> {
        let file = self.path_string();
        let span = |range: TextRange| {
            let (start, end) = (self.position(range.start()), self.end_position(range.end()));
            (start.cell, start.line, start.column, end.line, end.column)
        };
        self.diagnostics
            .iter()
            .map(|reported| {
                let (cell, line, column, end_line, end_column) = span(reported.range);
                let fix = reported.fix.as_ref().map(|fix| Fix {
                    title: fix.title.clone(),
                    applicability: fix.applicability,
                    edits: fix
                        .edits
                        .iter()
                        .map(|edit| {
                            let (cell, line, column, end_line, end_column) = span(edit.range);
                            Edit {
                                cell,
                                line,
                                column,
                                end_line,
                                end_column,
                                content: edit.content.clone(),
                            }
                        })
                        .collect(),
                });
                Diagnostic {
                    file: file.clone(),
                    cell,
                    line,
                    column,
                    end_line,
                    end_column,
                    code: reported.rule.code().to_owned(),
                    name: reported.rule.name().to_owned(),
                    severity: reported.severity,
                    message: reported.message.clone(),
                    source: reported.source.as_str().to_owned(),
                    fix,
                    related: reported
                        .related
                        .iter()
                        .map(|related| Related {
                            file: related_path(&related.file),
                            line: related.line,
                            column: related.column,
                            message: related.message.clone(),
                        })
                        .collect(),
                    data: reported.data.clone(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use pt2lsp_analyzer::{
        Diagnostic as Found, Edit as FoundEdit, Fix as FoundFix, Rule, TextSize,
    };

    use super::*;

    #[test]
    fn positions_are_one_based_characters_and_what_is_written_reads_back() {
        // `--format json`'s own test (`cli/output/json.rs`) checks the written object.
        let text = "x = 1\nif t.sum() > 0:\n    pass\n";
        let range = |start: u32, end: u32| TextRange::new(TextSize::new(start), TextSize::new(end));
        let found = Found {
            rule: Rule::DataDependentBranch,
            severity: Severity::Warning,
            message: "branch".to_owned(),
            range: range(9, 20),
            fix: Some(FoundFix {
                title: "Use torch.cond".to_owned(),
                edits: vec![FoundEdit {
                    range: range(6, 8),
                    content: "torch.cond".to_owned(),
                }],
                applicability: Applicability::DisplayOnly,
            }),
            related: Vec::new(),
        };
        let report = FileReport::new("m.py".into(), text.to_owned(), vec![found]);
        let located = report.located();
        let [diagnostic] = located.as_slice() else {
            panic!("{located:?}")
        };
        let at = (
            diagnostic.line,
            diagnostic.column,
            diagnostic.end_line,
            diagnostic.end_column,
        );
        assert_eq!(at, (2, 4, 2, 15));
        assert_eq!(
            (diagnostic.code.as_str(), diagnostic.source.as_str()),
            ("PT101", "static")
        );
        let fix = diagnostic.fix.as_ref().unwrap();
        assert_eq!(fix.applicability, Applicability::DisplayOnly);
        assert_eq!((fix.edits[0].line, fix.edits[0].column), (2, 1));
        // What `merge` and the Python package read back is what was written.
        let json = serde_json::to_string(&located).unwrap();
        let back: Vec<Diagnostic> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, located);
    }
}
