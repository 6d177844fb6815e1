//! `--format github`: GitHub Actions workflow commands, which the Actions log turns into
//! annotations on the changed lines of a pull request.
//!
//! Escaping follows the runner's rules (actions/toolkit `command.ts`): in the message `%`, `\r`
//! and `\n` are percent-encoded; in property values `:` and `,` are too, since they delimit
//! the properties.

use std::io::{self, Write};

use pt2lsp_analyzer::Severity;

use super::FileReport;

pub(super) fn render(reports: &[FileReport], out: &mut dyn Write) -> io::Result<()> {
    for report in reports {
        let file = escape_property(&report.path_string());
        for diagnostic in &report.diagnostics {
            let start = report.position(diagnostic.range.start());
            let end = report.end_position(diagnostic.range.end());
            let command = match diagnostic.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "notice",
            };
            // GitHub places an annotation on a line of the file as stored: a notebook's is its
            // JSON, so the annotation names the cell and sits on the file.
            if let Some(cell) = start.cell {
                writeln!(
                    out,
                    "::{command} file={file},title={}::{}",
                    escape_property(&format!(
                        "{} (cell {cell}, line {})",
                        diagnostic.rule.code(),
                        start.line
                    )),
                    escape_data(&diagnostic.message),
                )?;
                continue;
            }
            writeln!(
                out,
                "::{command} file={file},line={},col={},endLine={},endColumn={},title={}::{}",
                start.line,
                start.column,
                end.line,
                end.column,
                escape_property(diagnostic.rule.code()),
                escape_data(&diagnostic.message),
            )?;
        }
    }
    Ok(())
}

fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_the_actions_toolkit() {
        assert_eq!(
            escape_data("50% of a\r\nb: c, d"),
            "50%25 of a%0D%0Ab: c, d"
        );
        assert_eq!(escape_property("C:\\a,b%.py"), "C%3A\\a%2Cb%25.py");
    }
}
