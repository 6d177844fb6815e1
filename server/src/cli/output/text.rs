//! `--format text`: one line per diagnostic, `path:line:col: CODE [severity] message`, and a
//! summary line, like ruff's concise output.

use std::io::{self, Write};

use pt2lsp_analyzer::Severity;

use super::{Counts, FileReport, Options, fixable, is_fixable, statistics};

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";

fn severity_color(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "\x1b[1;31m",
        Severity::Warning => "\x1b[1;33m",
        Severity::Info => "\x1b[1;36m",
    }
}

/// `--format concise`: a line per diagnostic, `path:line:col: CODE [severity] [*] message`, at
/// the position in the file on disk (for a notebook, in its JSON text), so that a terminal or an
/// editor's error list opens the file at the problem.
pub(super) fn render_concise(
    reports: &[FileReport],
    options: Options,
    out: &mut dyn Write,
) -> io::Result<()> {
    for report in reports {
        for diagnostic in &report.diagnostics {
            let (line, column) = report.file_position(diagnostic.range.start());
            let marker = if is_fixable(diagnostic, options.fix_mode) {
                "[*] "
            } else {
                ""
            };
            writeln!(
                out,
                "{path}:{line}:{column}: {code} [{severity}] {marker}{message}",
                path = report.path.display(),
                code = diagnostic.rule.code(),
                severity = diagnostic.severity.as_str(),
                message = diagnostic.message,
            )?;
        }
    }
    Ok(())
}

pub(super) fn render(
    reports: &[FileReport],
    options: Options,
    out: &mut dyn Write,
) -> io::Result<()> {
    let paint = |style: &'static str| if options.color { style } else { "" };
    for report in reports {
        let path = report.path.display();
        for diagnostic in &report.diagnostics {
            let start = report.position(diagnostic.range.start());
            // The severity is spelled out even with colour, so a log read without ANSI support
            // (or a screen reader) still tells errors from warnings.
            let color = paint(severity_color(diagnostic.severity));
            let (bold, reset) = (paint(BOLD), paint(RESET));
            // `[*]` as ruff marks it: `--fix` (with the current `--unsafe-fixes`) fixes this one.
            let marker = if is_fixable(diagnostic, options.fix_mode) {
                "[*] "
            } else {
                ""
            };
            writeln!(
                out,
                "{bold}{path}{reset}:{cell}{line}:{column}: {color}{code} [{severity}]{reset} {marker}{message}",
                cell = start
                    .cell
                    .map_or_else(String::new, |cell| format!("cell {cell}:")),
                line = start.line,
                column = start.column,
                code = diagnostic.rule.code(),
                severity = diagnostic.severity.as_str(),
                message = diagnostic.message,
            )?;
            // The places that explain it, one indented line each, as rustc prints its notes.
            for related in &diagnostic.related {
                writeln!(
                    out,
                    "  = note: {}:{}:{}: {}",
                    super::related_path(&related.file),
                    related.line,
                    related.column,
                    related.message,
                )?;
            }
        }
    }
    if options.quiet {
        return Ok(());
    }
    let remaining = Counts::of(reports);
    match options.fixed {
        Some(fixed) if options.fix_only && fixed.total() == 0 => {
            writeln!(out, "No fixes applied.")?;
        }
        Some(fixed) if options.fix_only => writeln!(out, "Fixed {}.", counted(fixed))?,
        Some(fixed) if fixed.total() > 0 => {
            let left = if remaining.total() == 0 {
                "0".to_owned()
            } else {
                counted(remaining)
            };
            writeln!(out, "Fixed {} ({left} remaining).", counted(fixed))?;
        }
        _ if options.trace_failed && remaining.total() == 0 => writeln!(
            out,
            "The static check found no problems; the trace did not run (see the error above)."
        )?,
        _ => writeln!(out, "{}", summary(remaining))?,
    }
    if !options.fix_only {
        if let Some(hint) = fixable_hint(fixable(reports, options.fix_mode)) {
            writeln!(out, "{hint}")?;
        }
    }
    Ok(())
}

/// `[*] 2 fixable with --fix (1 more with --unsafe-fixes).`, as ruff says it, or nothing.
pub(super) fn fixable_hint((applicable, hidden): (usize, usize)) -> Option<String> {
    let fixes = |count: usize| if count == 1 { "fix" } else { "fixes" };
    match (applicable, hidden) {
        (0, 0) => None,
        (0, hidden) => Some(format!(
            "{hidden} {} available with --unsafe-fixes.",
            fixes(hidden)
        )),
        (applicable, 0) => Some(format!("[*] {applicable} fixable with --fix.")),
        (applicable, hidden) => Some(format!(
            "[*] {applicable} fixable with --fix ({hidden} more with --unsafe-fixes)."
        )),
    }
}

/// `Found 3 errors, 1 warning in 2 files.` or `All checks passed!`.
pub(super) fn summary(counts: Counts) -> String {
    if counts.total() == 0 {
        return "All checks passed!".to_owned();
    }
    format!(
        "Found {} in {}.",
        counted(counts),
        plural(counts.files, "file", "files")
    )
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// `3 errors, 1 warning`: the non-zero counts by severity.
pub(crate) fn counted(counts: Counts) -> String {
    let parts: Vec<String> = [
        (counts.errors, "error", "errors"),
        (counts.warnings, "warning", "warnings"),
        // "info" is a mass noun: "2 info", as in "2 info diagnostics".
        (counts.infos, "info", "info"),
    ]
    .into_iter()
    .filter(|(count, _, _)| *count > 0)
    .map(|(count, one, many)| plural(count, one, many))
    .collect();
    parts.join(", ")
}

/// `--statistics`: `count<TAB>code<TAB>name` per rule, most frequent first, as ruff prints it.
pub(super) fn render_statistics(reports: &[FileReport], out: &mut dyn Write) -> io::Result<()> {
    let rows = statistics(reports);
    let width = rows
        .iter()
        .map(|(_, count)| count.to_string().len())
        .max()
        .unwrap_or(1);
    for (rule, count) in rows {
        writeln!(out, "{count:>width$}\t{}\t{}", rule.code(), rule.name())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_count_by_severity() {
        let counts = |errors, warnings, infos, files| Counts {
            errors,
            warnings,
            infos,
            files,
        };
        assert_eq!(summary(counts(0, 0, 0, 0)), "All checks passed!");
        assert_eq!(
            summary(counts(3, 1, 0, 2)),
            "Found 3 errors, 1 warning in 2 files."
        );
        assert_eq!(summary(counts(1, 0, 0, 1)), "Found 1 error in 1 file.");
        assert_eq!(
            summary(counts(0, 2, 2, 1)),
            "Found 2 warnings, 2 info in 1 file."
        );
    }

    #[test]
    fn fixable_hints_tell_which_flag_applies_what() {
        assert_eq!(fixable_hint((0, 0)), None);
        assert_eq!(fixable_hint((2, 0)).unwrap(), "[*] 2 fixable with --fix.");
        assert_eq!(
            fixable_hint((0, 1)).unwrap(),
            "1 fix available with --unsafe-fixes."
        );
        assert_eq!(
            fixable_hint((1, 3)).unwrap(),
            "[*] 1 fixable with --fix (3 more with --unsafe-fixes)."
        );
    }
}
