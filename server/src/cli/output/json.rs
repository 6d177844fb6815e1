//! `--format json`: one array of diagnostics with 1-based positions, sorted by file and position.

use std::io::{self, Write};

use serde::Serialize;

use super::{FileReport, TraceSummary, statistics};

/// Each report's diagnostics in the one schema (`pt2lsp_project::schema`), which the Python API
/// returns too.
pub(super) fn render(reports: &[FileReport], out: &mut dyn Write) -> io::Result<()> {
    let items: Vec<_> = reports.iter().flat_map(FileReport::located).collect();
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
    use pt2lsp_analyzer::{
        Applicability, Diagnostic, Edit, Fix, Related, Rule, Severity, TextRange, TextSize,
    };

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
