//! `--format json`: one array of diagnostics with 1-based positions, sorted by file and position.

use std::io::{self, Write};

use pt2lsp_analyzer::{Applicability, Severity, TextRange};
use serde::Serialize;

use super::{FileReport, TraceSummary, statistics};

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    file: String,
    /// In a notebook: the cell (from 1, every cell counted); `line` is then the cell's line.
    #[serde(skip_serializing_if = "Option::is_none")]
    cell: Option<u32>,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    code: &'static str,
    name: &'static str,
    severity: Severity,
    message: &'a str,
    /// `static` for the static analysis, `trace` for the tracer's findings (`--trace`).
    source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<JsonFix<'a>>,
    /// The places that explain it (the entrypoint, the calls that reach it, library frames),
    /// in the order a reader follows them; empty when there are none.
    related: Vec<JsonRelated<'a>>,
    /// The tracer's extra data: `suggested_fixes` for `dynamic_shapes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a serde_json::Value>,
}

#[derive(Serialize)]
struct JsonRelated<'a> {
    file: String,
    line: u32,
    column: u32,
    message: &'a str,
}

#[derive(Serialize)]
struct JsonFix<'a> {
    title: &'a str,
    applicability: Applicability,
    edits: Vec<JsonEdit<'a>>,
}

#[derive(Serialize)]
struct JsonEdit<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cell: Option<u32>,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    content: &'a str,
}

/// Start and end of a range, 1-based, the end exclusive (the character after the range).
fn span(report: &FileReport, range: TextRange) -> (u32, u32, u32, u32) {
    let start = report.position(range.start());
    let end = report.end_position(range.end());
    (start.line, start.column, end.line, end.column)
}

pub(super) fn render(reports: &[FileReport], out: &mut dyn Write) -> io::Result<()> {
    let mut items = Vec::new();
    for report in reports {
        let file = report.path_string();
        for diagnostic in &report.diagnostics {
            let (line, column, end_line, end_column) = span(report, diagnostic.range);
            let fix = diagnostic.fix.as_ref().map(|fix| JsonFix {
                title: &fix.title,
                applicability: fix.applicability,
                edits: fix
                    .edits
                    .iter()
                    .map(|edit| {
                        let (line, column, end_line, end_column) = span(report, edit.range);
                        JsonEdit {
                            cell: report.position(edit.range.start()).cell,
                            line,
                            column,
                            end_line,
                            end_column,
                            content: &edit.content,
                        }
                    })
                    .collect(),
            });
            items.push(JsonDiagnostic {
                file: file.clone(),
                cell: report.position(diagnostic.range.start()).cell,
                line,
                column,
                end_line,
                end_column,
                code: diagnostic.rule.code(),
                name: diagnostic.rule.name(),
                severity: diagnostic.severity,
                message: &diagnostic.message,
                source: diagnostic.source.as_str(),
                fix,
                related: diagnostic
                    .related
                    .iter()
                    .map(|related| JsonRelated {
                        file: super::related_path(&related.file),
                        line: related.line,
                        column: related.column,
                        message: &related.message,
                    })
                    .collect(),
                data: diagnostic.data.as_ref(),
            });
        }
    }
    serde_json::to_writer_pretty(&mut *out, &items)?;
    writeln!(out)
}

#[derive(Serialize)]
struct JsonStatistic {
    code: &'static str,
    name: &'static str,
    count: usize,
}

/// `--statistics --format json`: the count of each rule, most frequent first, and what
/// `--trace` did (`null` without it).
#[derive(Serialize)]
struct JsonStatistics<'a> {
    rules: Vec<JsonStatistic>,
    trace: Option<&'a TraceSummary>,
}

pub(super) fn render_statistics(
    reports: &[FileReport],
    trace: Option<&TraceSummary>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let rules: Vec<JsonStatistic> = statistics(reports)
        .into_iter()
        .map(|(rule, count)| JsonStatistic {
            code: rule.code(),
            name: rule.name(),
            count,
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &JsonStatistics { rules, trace })?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use pt2lsp_analyzer::{Diagnostic, Edit, Fix, Related, Rule, TextSize};

    use super::*;

    #[test]
    fn fixes_carry_their_edits_in_line_and_column() {
        let text = "x = 1\nif t.sum() > 0:\n    pass\n";
        let range = |start: u32, end: u32| TextRange::new(TextSize::new(start), TextSize::new(end));
        let diagnostic = Diagnostic {
            rule: Rule::DataDependentBranch,
            severity: Severity::Warning,
            message: "branch".to_owned(),
            range: range(9, 20),
            fix: Some(Fix {
                title: "Use torch.cond".to_owned(),
                edits: vec![Edit {
                    range: range(6, 8),
                    content: "torch.cond".to_owned(),
                }],
                applicability: Applicability::DisplayOnly,
            }),
            related: vec![Related {
                file: "export_net.py".into(),
                line: 8,
                column: 1,
                message: "`model` is exported here".to_owned(),
            }],
        };
        let report = FileReport::new("m.py".into(), text.to_owned(), vec![diagnostic]);
        let mut out = Vec::new();
        render(&[report], &mut out).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            value,
            serde_json::json!([{
                "file": "m.py", "line": 2, "column": 4, "end_line": 2, "end_column": 15,
                "code": "PT101", "name": "data-dependent-branch", "severity": "warning",
                "message": "branch", "source": "static",
                "fix": {
                    "title": "Use torch.cond",
                    "applicability": "display-only",
                    "edits": [{
                        "line": 2, "column": 1, "end_line": 2, "end_column": 3,
                        "content": "torch.cond",
                    }],
                },
                "related": [{
                    "file": "export_net.py", "line": 8, "column": 1,
                    "message": "`model` is exported here",
                }],
            }])
        );
    }
}
