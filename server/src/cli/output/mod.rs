//! Renders the results of a check, one file per format, and owns the process's stdout.
//!
//! Formats take plain data ([`FileReport`]s, already sorted by path and position) and write to
//! any `io::Write`, so tests can render into a buffer. Positions are 1-based lines and 1-based
//! columns counted in characters (Unicode scalar values), as ruff prints them.

mod github;
mod json;
mod sarif;
mod text;

pub(crate) use text::counted;

pub(crate) use pt2lsp_project::report::path_string;
pub use pt2lsp_project::report::{FileReport, Reported, Source, related_path};

use std::io::{self, BufWriter, IsTerminal, Write};

use pt2lsp_analyzer::{Diagnostic, FixMode, Rule, Severity};

/// The `--format` values of `pt2lsp check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// `path:line:col: CODE [severity] message` lines and a summary, for people.
    Text,
    /// One JSON array of diagnostics, for scripts.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.
    Sarif,
    /// GitHub Actions workflow commands, shown as annotations on the pull request.
    Github,
    /// `path:line:col: CODE message` lines that terminals and editors jump to, a notebook's
    /// positions being those of its JSON file; no notes, no summary.
    Concise,
}

/// Counts by severity, for summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// Files with at least one diagnostic.
    pub files: usize,
}

impl Counts {
    pub fn of(reports: &[FileReport]) -> Self {
        let mut counts = Self::default();
        for report in reports {
            counts.files += usize::from(!report.diagnostics.is_empty());
            for diagnostic in &report.diagnostics {
                match diagnostic.severity {
                    Severity::Error => counts.errors += 1,
                    Severity::Warning => counts.warnings += 1,
                    Severity::Info => counts.infos += 1,
                }
            }
        }
        counts
    }

    pub fn total(self) -> usize {
        self.errors + self.warnings + self.infos
    }
}

/// How many diagnostics each rule produced, most frequent first (`--statistics`).
pub fn statistics(reports: &[FileReport]) -> Vec<(Rule, usize)> {
    let mut counts: Vec<(Rule, usize)> = Vec::new();
    for diagnostic in reports.iter().flat_map(|report| &report.diagnostics) {
        match counts.iter_mut().find(|(rule, _)| *rule == diagnostic.rule) {
            Some((_, count)) => *count += 1,
            None => counts.push((diagnostic.rule, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts
}

/// What `--trace` did: how many entrypoints it traced, ran and replayed from the cache, and the
/// export calls it could not reach. `--statistics --format json` reports it, so that a CI job
/// can tell a trace that ran nothing from one that passed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TraceSummary {
    /// The entrypoints traced: `run` + `replayed`.
    pub entrypoints: usize,
    /// Traced by the exporter in this run.
    pub run: usize,
    /// Taken from the trace cache: their files are unchanged since a run that traced them.
    pub replayed: usize,
    /// Export calls no job can reach, each where it is and why.
    pub not_reached: Vec<NotReached>,
}

/// One export call `--trace` did not trace.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NotReached {
    /// As the report shows paths: relative to the current directory when under it.
    pub file: String,
    /// 1-based.
    pub line: u32,
    pub reason: String,
}

/// What to render and how.
#[derive(Debug, Clone, Copy)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each bool is one on/off command-line flag"
)]
pub struct Options<'a> {
    pub format: OutputFormat,
    /// Diagnostics only: no summary line.
    pub quiet: bool,
    /// Counts per rule instead of diagnostics (text and json only).
    pub statistics: bool,
    /// ANSI colours in the text format.
    pub color: bool,
    /// Which fixes count as applicable: marked `[*]` and counted in the text summary.
    pub fix_mode: FixMode,
    /// What `--fix` fixed, by severity; `None` when it did not run.
    pub fixed: Option<Counts>,
    /// `--fix-only`: the summary of what was fixed, no diagnostics.
    pub fix_only: bool,
    /// `--trace` was asked for and the tracer could not run: the summary never says that all
    /// checks passed.
    pub trace_failed: bool,
    /// What `--trace` did, when it ran.
    pub trace: Option<&'a TraceSummary>,
}

/// Whether `diagnostic` has a fix that `mode` applies.
pub fn is_fixable(diagnostic: &Diagnostic, mode: FixMode) -> bool {
    diagnostic
        .fix
        .as_ref()
        .is_some_and(|fix| mode.allows(fix.applicability) && !fix.edits.is_empty())
}

/// How many diagnostics have a fix `mode` applies, and how many more `--unsafe-fixes` would add.
pub fn fixable(reports: &[FileReport], mode: FixMode) -> (usize, usize) {
    let diagnostics = || reports.iter().flat_map(|report| &report.diagnostics);
    let applicable = diagnostics()
        .filter(|diagnostic| is_fixable(diagnostic, mode))
        .count();
    let with_unsafe = diagnostics()
        .filter(|diagnostic| is_fixable(diagnostic, FixMode::Unsafe))
        .count();
    (applicable, with_unsafe - applicable)
}

/// Writes the report in the chosen format.
pub fn render(reports: &[FileReport], options: Options, out: &mut dyn Write) -> io::Result<()> {
    if options.fix_only {
        // What remains is not reported, so no format has anything to say but the text summary.
        return match options.format {
            OutputFormat::Text => text::render(&[], options, out),
            _ => render(
                &[],
                Options {
                    fix_only: false,
                    ..options
                },
                out,
            ),
        };
    }
    match (options.format, options.statistics) {
        (OutputFormat::Text, false) => text::render(reports, options, out),
        (OutputFormat::Text, true) => text::render_statistics(reports, out),
        (OutputFormat::Json, false) => json::render(reports, out),
        (OutputFormat::Json, true) => json::render_statistics(reports, options.trace, out),
        (OutputFormat::Sarif, _) => sarif::render(reports, out),
        (OutputFormat::Github, _) => github::render(reports, out),
        (OutputFormat::Concise, _) => text::render_concise(reports, options, out),
    }
}

/// Whether the text report may use colour: only for a terminal, and never when the user set
/// `NO_COLOR` (https://no-color.org: any non-empty value).
pub fn use_color() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    !no_color && io::stdout().is_terminal()
}

/// Runs `write` against the process's stdout, buffered, and flushes it.
///
/// The crate denies `clippy::print_stdout` because in `serve` stdout is the LSP channel, where
/// one stray line corrupts every message after it. The report is the only thing the CLI ever
/// writes to stdout, and this is the only function that touches it.
#[allow(
    clippy::print_stdout,
    reason = "the single, deliberate writer of the CLI's report"
)]
pub fn with_stdout(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = write(&mut out).and_then(|()| out.flush());
    match result {
        // `pt2lsp check | head` closes the pipe early; that is the reader's choice, not a failure.
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use pt2lsp_analyzer::{Diagnostic, Related, TextRange, TextSize};

    use super::*;

    /// A traced PT101 in a helper module, with the entrypoint and the call that reach it.
    fn with_related() -> Vec<FileReport> {
        let text = "import torch\n\n\ndef normalize(h):\n    if h.mean() > 0:\n        return h\n    return -h\n";
        let start = text.find("if h").unwrap() as u32;
        let end = text.find(":\n        return h").unwrap() as u32;
        let diagnostic = Diagnostic {
            rule: Rule::DataDependentBranch,
            severity: Severity::Error,
            message: "`if` on a tensor's value".to_owned(),
            range: TextRange::new(TextSize::new(start), TextSize::new(end)),
            fix: None,
            related: vec![
                Related {
                    file: "export_net.py".into(),
                    line: 8,
                    column: 1,
                    message: "`model` is exported here".to_owned(),
                },
                Related {
                    file: "mymodels/net.py".into(),
                    line: 15,
                    column: 13,
                    message: "calls `normalize`".to_owned(),
                },
            ],
        };
        let mut report = FileReport::new(
            "mymodels/helpers.py".into(),
            text.to_owned(),
            vec![diagnostic],
        );
        report.diagnostics[0].source = Source::Trace;
        vec![report]
    }

    fn rendered(format: OutputFormat) -> String {
        let options = Options {
            format,
            quiet: false,
            statistics: false,
            color: false,
            fix_mode: FixMode::Safe,
            fixed: None,
            fix_only: false,
            trace_failed: false,
            trace: None,
        };
        let mut out = Vec::new();
        render(&with_related(), options, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn related_locations_in_text() {
        insta::assert_snapshot!(rendered(OutputFormat::Text));
    }

    #[test]
    fn related_locations_in_json() {
        insta::assert_snapshot!(rendered(OutputFormat::Json));
    }

    #[test]
    fn related_locations_in_sarif() {
        let log: serde_json::Value = serde_json::from_str(&rendered(OutputFormat::Sarif)).unwrap();
        let result = &log["runs"][0]["results"][0];
        insta::assert_snapshot!(serde_json::to_string_pretty(&result["relatedLocations"]).unwrap());
    }
}
