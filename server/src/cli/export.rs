//! `pt2lsp export FILE`: exports one entrypoint with the real `torch.export` in a worker, writes
//! the `.pt2` file (a temporary name, then a rename), loads it back and checks it against the
//! eager model, and prints what was written.
//!
//! Progress goes to stderr, the report to stdout. A model that does not export gets the
//! diagnostics `check --trace` would print for it, and exit status 1; a usage or setup problem
//! (no such file, no such entrypoint, no Python with torch) is exit status 2.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use pt2lsp_analyzer::{FixMode, Rule};
use serde::Serialize;
use serde_json::json;

use crate::cli::args::{ExportArgs, ExportFormat};
use crate::cli::output::{self, FileReport, OutputFormat, Reported, Source};
use crate::cli::{ExitStatus, warn};
use pt2lsp_project::config::{self, Config};
use pt2lsp_project::notebook::{CellMap, Notebook};
use pt2lsp_project::walk;
use pt2lsp_tracer::diagnostics::{self, TraceDiagnostic};
use pt2lsp_tracer::export::{self as plan, Exportable};
use pt2lsp_tracer::manager::Progress;
use pt2lsp_tracer::protocol::{ExportJob, ExportReport, JobResult, Status};
use pt2lsp_tracer::{self as tracer, Tracer, TracerOptions, batch};

pub fn run(args: &ExportArgs) -> Result<ExitStatus> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let file = walk::absolute(&cwd, &args.file);
    let shown = walk::display_path(&file, &cwd);
    if !file.is_file() {
        std::fs::metadata(&file).with_context(|| format!("cannot export {}", shown.display()))?;
        anyhow::bail!("cannot export {}: not a file", shown.display());
    }
    let source = walk::read(&file, &shown)?;
    if let Some(problem) = &source.problem {
        anyhow::bail!("cannot export {}: {}", shown.display(), problem.message);
    }
    // A notebook exports through the module of its joined code cells, as `check --trace`
    // traces it: its export call or `model` is in some cell.
    let notebook = if walk::is_notebook(&file) {
        let parsed = Notebook::parse(&source.text)
            .map_err(|problem| anyhow!("cannot export {}: {problem}", shown.display()))?;
        Some((parsed.python().to_owned(), parsed.cell_map()))
    } else {
        None
    };
    let config = load_config(args, &cwd, &file)?;
    // Old spellings of keys are shown even under -q, or the file never gets fixed.
    for deprecation in &config.deprecations {
        warn(deprecation);
    }
    if !args.quiet {
        for warning in &config.warnings {
            warn(warning);
        }
    }

    let root = config
        .root()
        .map(Path::to_path_buf)
        .or_else(|| file.starts_with(&cwd).then(|| cwd.clone()))
        .or_else(|| file.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| cwd.clone());
    let timeout = args
        .timeout
        .or(config.timeout)
        .unwrap_or(tracer::DEFAULT_TIMEOUT_SECONDS);
    let options = batch::BatchOptions {
        root,
        cwd: cwd.clone(),
        strict: args.strict_override().or(config.strict).unwrap_or_default(),
        timeout: std::time::Duration::from_secs_f64(timeout),
        memory_limit_mb: args.memory_limit.or_else(tracer::default_memory_limit_mb),
        entrypoints: plan::configured(&config),
        scripts: batch::ScriptArgs::configured(config.entrypoints.as_deref().unwrap_or_default()),
        targets: Vec::new(),
    };
    let notebook = match notebook {
        Some((python, cells)) => {
            let cache =
                tracer::cache::TraceCache::in_project(&options.root, config.cache_dir.as_deref());
            let module = cache.notebook_module(&file, &python).with_context(|| {
                format!(
                    "cannot write the module of {} in {}",
                    shown.display(),
                    cache.dir().display()
                )
            })?;
            Some(NotebookModule {
                module,
                python,
                cells,
            })
        }
        None => None,
    };
    let available = match &notebook {
        Some(notebook) => notebook.entrypoints(&file, &options),
        None => plan::entrypoints(&file, &source.text, &options),
    };
    let chosen = plan::choose(available, args.entry.as_deref())
        .map_err(|error| anyhow!(error.describe(&shown, "--entry NAME")))?;
    let output = match &args.output {
        Some(given) => plan::resolve_output(given, &cwd, &file, &chosen),
        None => plan::default_output(&file, &chosen, plan::out_dir(&config).as_deref()),
    };
    // A target's artefact is named after the .pt2 it replaces, with the target's extension,
    // unless `-o` names the file.
    let names_file = args.output.as_ref().is_some_and(|given| {
        !given.to_string_lossy().ends_with(std::path::MAIN_SEPARATOR)
            && !walk::absolute(&cwd, given).is_dir()
    });
    let output = match args.target {
        Some(target) if !names_file => {
            output.with_extension(target.artefact_extension().unwrap_or("pt2"))
        }
        _ => output,
    };
    if let Some(dir) = output.parent() {
        // A missing directory is created, and said so: a typo in `-o` must not make
        // directories unnoticed (`-o /nonexistent/x.pt2`).
        let missing = !dir.is_dir();
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
        if missing && !args.quiet {
            warn(&format!("created the output directory {}", dir.display()));
        }
    }
    let label = format!("{} ({})", shown.display(), chosen.name);

    let python = pt2lsp_project::interpreter::interpreter(
        args.python.as_deref(),
        config.python.as_deref(),
        config.root(),
        std::env::var_os("VIRTUAL_ENV").as_deref().map(Path::new),
    );
    let quiet = args.quiet;
    let say = move |line: &str| {
        if !quiet {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{line}");
        }
    };
    say(&format!("starting the tracer: {}", python.display()));
    let (tracer, completed) = Tracer::start(TracerOptions {
        python,
        jobs: 1,
        startup_timeout: tracer::DEFAULT_STARTUP_TIMEOUT,
        start_method: args
            .start_method
            .or(config.start_method)
            .unwrap_or_else(tracer::worker::StartMethod::from_environment),
    })
    .map_err(|error| anyhow!(error.message))?;
    let temporary = plan::temporary_path(&output);
    let stage_label = label.clone();
    tracer.submit_export(
        chosen.job.spec.clone(),
        ExportJob {
            output: output.clone(),
            temporary: temporary.clone(),
            allow_divergence: args.allow_divergence,
            target: args.target,
        },
        Box::new(move |progress: Progress| {
            say(&describe_stage(&progress, &stage_label));
        }),
    );
    let result = completed.recv().map_or_else(
        |_| JobResult {
            id: 0,
            status: Status::Crashed,
            diagnostics: Vec::new(),
            detail: Some("the tracer stopped before the export ended".to_owned()),
            output: String::new(),
            output_truncated: false,
            elapsed: None,
            export: None,
            shapes: Vec::new(),
            dependencies: Vec::new(),
            passed_lines: Vec::new(),
            targets: None,
            replayed: false,
        },
        |done| done.result,
    );
    drop(tracer);
    // A job killed while saving (timeout, crash) leaves its temporary file behind.
    plan::remove_temporary(&temporary);

    if let (Status::Ok, Some(report)) = (&result.status, &result.export) {
        // Written under --allow-divergence: the divergence is still said.
        let mut divergent = diagnostics::from_result(&result, &chosen.job.anchor);
        diagnostics::dedup(&mut divergent);
        if !args.quiet {
            for found in &divergent {
                warn(&format!(
                    "{}:{}: {} (written anyway: --allow-divergence): {}",
                    walk::display_path(&found.file, &cwd).display(),
                    found.line,
                    found.rule.code(),
                    found.message
                ));
            }
        }
        let matches = report.verification.matches;
        if !matches && !args.quiet {
            warn(&format!(
                "{} was written, but the program loaded back from it disagrees with the \
                     eager model on the example inputs: {}",
                walk::display_path(&report.path, &cwd).display(),
                report.verification.detail.as_deref().unwrap_or("no detail")
            ));
        }
        print_report(args.format, &file, &chosen, report, &label, &cwd)?;
        // --allow-divergence accepts a program that computes something else than eager.
        Ok(if matches || args.allow_divergence {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        })
    } else {
        let mut found = diagnostics::from_result(&result, &chosen.job.anchor);
        diagnostics::dedup(&mut found);
        if let Some(notebook) = &notebook {
            for found in &mut found {
                if found.file == notebook.module {
                    crate::cli::trace::point_into_notebook(
                        found,
                        &notebook.module,
                        &file,
                        &notebook.cells,
                    );
                }
            }
        }
        if found.is_empty() {
            // A job that ended without a report and without findings (it was cancelled).
            anyhow::bail!(
                "{label} was not exported: {}",
                result
                    .detail
                    .as_deref()
                    .unwrap_or("the export job ended early")
            );
        }
        let reports = file_reports(
            &found,
            &cwd,
            notebook.as_ref().map(|notebook| (notebook, &*shown)),
        );
        if !args.quiet {
            warn(&format!(
                "{label} does not export: {} problem{}",
                found.len(),
                if found.len() == 1 { "" } else { "s" }
            ));
            if found.iter().all(|found| found.rule == Rule::BakedInValue) {
                warn(
                    "the program exported but computes something else than eager; \
                     pass --allow-divergence to write it anyway",
                );
            }
        }
        print_failure(args.format, &file, &chosen, &reports)?;
        Ok(ExitStatus::Failure)
    }
}

fn load_config(args: &ExportArgs, cwd: &Path, file: &Path) -> Result<Config> {
    if args.isolated {
        Ok(Config::default())
    } else if let Some(path) = &args.config {
        config::load(&walk::absolute(cwd, path))
    } else {
        config::discover(file.parent().unwrap_or(cwd))
    }
}

fn describe_stage(progress: &Progress, label: &str) -> String {
    match (progress.stage.as_str(), progress.message.as_deref()) {
        ("exporting", Some(message)) => format!("exporting {label}: {message}"),
        ("exporting", None) => format!("exporting {label}"),
        (stage, Some(message)) => format!("{stage}: {message}"),
        (stage, None) => stage.to_owned(),
    }
}

/// A notebook being exported: its joined code cells, written as the module the worker runs.
struct NotebookModule {
    module: PathBuf,
    python: String,
    cells: CellMap,
}

impl NotebookModule {
    /// The notebook's entrypoints, run in its directory (where Jupyter runs it), an export
    /// call named by its cell (`cell 4:3`) rather than by the joined module's line.
    fn entrypoints(&self, notebook: &Path, options: &batch::BatchOptions) -> Vec<Exportable> {
        let mut available = plan::entrypoints(&self.module, &self.python, options);
        for entry in &mut available {
            if let Some(directory) = notebook.parent() {
                entry.job.run_in(directory);
            }
            let Some(call) = &entry.job.spec.call else {
                continue;
            };
            if call.scope.is_none()
                && let Some(at) = self.cells.locate(call.line)
            {
                entry.name = format!("cell {}:{}", at.cell, at.line);
            }
        }
        available
    }
}

/// The trace's findings as `check --trace` reports them: one report per file, in path order.
/// Findings in a notebook's module are shown in the notebook (`shown`), by cell.
fn file_reports(
    found: &[TraceDiagnostic],
    cwd: &Path,
    notebook: Option<(&NotebookModule, &Path)>,
) -> Vec<FileReport> {
    let mut by_file: BTreeMap<PathBuf, Vec<&TraceDiagnostic>> = BTreeMap::new();
    for diagnostic in found {
        let shown = match notebook {
            Some((notebook, shown)) if diagnostic.file == notebook.module => shown.to_path_buf(),
            _ => walk::display_path(&diagnostic.file, cwd),
        };
        by_file.entry(shown).or_default().push(diagnostic);
    }
    let mut reports = Vec::new();
    for (shown, found) in by_file {
        let in_notebook = notebook.filter(|(notebook, _)| found[0].file == notebook.module);
        let text = match in_notebook {
            Some((notebook, _)) => notebook.python.clone(),
            None => walk::read(&found[0].file, &shown)
                .map(|source| source.text)
                .unwrap_or_default(),
        };
        let mut report = FileReport::new(shown, text, Vec::new());
        report.notebook = in_notebook.map(|(notebook, _)| notebook.cells.clone());
        for diagnostic in found {
            let converted = diagnostic.to_diagnostic(&report.text, report.line_index());
            report.diagnostics.push(Reported {
                diagnostic: converted,
                source: Source::Trace,
                data: diagnostic.data(),
            });
        }
        report
            .diagnostics
            .sort_by_key(|diagnostic| (diagnostic.range.start(), diagnostic.rule));
        reports.push(report);
    }
    reports
}

#[derive(Serialize)]
struct ExportedJson<'a> {
    status: &'static str,
    file: &'a Path,
    entry: &'a str,
    #[serde(flatten)]
    report: &'a ExportReport,
}

fn print_report(
    format: ExportFormat,
    file: &Path,
    chosen: &Exportable,
    report: &ExportReport,
    label: &str,
    cwd: &Path,
) -> Result<()> {
    output::with_stdout(|out| match format {
        ExportFormat::Json => {
            let value = ExportedJson {
                status: "exported",
                file,
                entry: &chosen.name,
                report,
            };
            serde_json::to_writer_pretty(&mut *out, &value)?;
            writeln!(out)
        }
        ExportFormat::Text => write_text_report(out, report, label, cwd),
    })
    .context("cannot write the report")
}

fn write_text_report(
    out: &mut dyn Write,
    report: &ExportReport,
    label: &str,
    cwd: &Path,
) -> std::io::Result<()> {
    writeln!(
        out,
        "Exported {label} to {}",
        walk::display_path(&report.path, cwd).display()
    )?;
    writeln!(out, "  size:              {}", human_size(report.size))?;
    writeln!(out, "  graph:             {} nodes", report.nodes)?;
    if !report.inputs.is_empty() {
        writeln!(out, "  inputs:            {}", report.inputs.join(", "))?;
    }
    let ranges = if report.range_constraints.is_empty() {
        "none (every dimension is static)".to_owned()
    } else {
        report
            .range_constraints
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    writeln!(out, "  range constraints: {ranges}")?;
    let verification = &report.verification;
    let check = if verification.matches {
        let difference = match verification.max_abs_diff {
            Some(difference) if difference > 0.0 => format!("{difference:.2e}"),
            _ => "0".to_owned(),
        };
        let runtime = match report.target.as_deref() {
            Some("onnx") => "runs with onnxruntime",
            Some("aoti") => "loads with aoti_load_package",
            Some("executorch") => "runs with ExecuTorch's runtime",
            _ => "loads with torch.export.load",
        };
        format!("{runtime} and matches eager on the example inputs (max abs diff {difference})")
    } else {
        format!(
            "MISMATCH: {}",
            verification.detail.as_deref().unwrap_or("no detail")
        )
    };
    writeln!(out, "  check:             {check}")
}

/// `9.4 KiB (9605 bytes)`.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    #[allow(
        clippy::cast_precision_loss,
        reason = "a size for people, to one decimal"
    )]
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {} ({bytes} bytes)", UNITS[unit])
}

fn print_failure(
    format: ExportFormat,
    file: &Path,
    chosen: &Exportable,
    reports: &[FileReport],
) -> Result<()> {
    let options = |format| output::Options {
        format,
        quiet: false,
        statistics: false,
        color: format == OutputFormat::Text && output::use_color(),
        fix_mode: FixMode::Safe,
        fixed: None,
        fix_only: false,
        trace_failed: false,
        trace: None,
    };
    match format {
        ExportFormat::Text => {
            output::with_stdout(|out| output::render(reports, options(OutputFormat::Text), out))
        }
        ExportFormat::Json => {
            let mut rendered = Vec::new();
            output::render(reports, options(OutputFormat::Json), &mut rendered)?;
            let diagnostics: serde_json::Value =
                serde_json::from_slice(&rendered).map_err(std::io::Error::other)?;
            let value = json!({
                "status": "failed",
                "file": file,
                "entry": chosen.name,
                "diagnostics": diagnostics,
            });
            output::with_stdout(|out| {
                serde_json::to_writer_pretty(&mut *out, &value)?;
                writeln!(out)
            })
        }
    }
    .context("cannot write the report")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_size(512), "512 bytes");
        assert_eq!(human_size(9605), "9.4 KiB (9605 bytes)");
        assert_eq!(human_size(5 << 20), "5.0 MiB (5242880 bytes)");
    }
}
