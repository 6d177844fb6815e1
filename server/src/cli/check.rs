//! `pt2lsp check`: resolves the settings, finds the files, analyses them, prints the report.
//!
//! Analysis runs in two phases so that facts crossing files hold whatever order files are
//! visited in: phase 1 reads every file once and summarises it (in parallel), the summaries
//! make one `WorkspaceIndex`, and phase 2 checks every file against that index (in parallel),
//! reusing the text read in phase 1.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use pt2lsp_analyzer::{
    Diagnostic, ModuleSummary, Rule, RuleSelector, Settings, SourceFile, TextRange, TextSize,
    WorkspaceIndex,
};
use rayon::prelude::*;

use crate::cli::args::CheckArgs;
use crate::cli::config::{self, Config};
use crate::cli::output::{self, FileReport, OutputFormat};
use crate::cli::walk::{self, Exclude, SourceText};
use crate::cli::{ExitStatus, report_error, warn};

/// Stack for each analysis thread. The parser and the analyzer recurse on the syntax tree, and
/// generated code can nest expressions tens of thousands deep (`a + a + ... + a`); the memory is
/// only reserved, pages are touched as deep as a file actually goes.
const ANALYSIS_STACK_BYTES: usize = 512 << 20;

pub fn run(args: &CheckArgs) -> Result<ExitStatus> {
    if args.statistics && !matches!(args.format, OutputFormat::Text | OutputFormat::Json) {
        bail!("--statistics works with --format text or json");
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let roots = resolve_roots(&args.paths, &cwd)?;

    let config = if args.isolated {
        Config::default()
    } else if let Some(path) = &args.config {
        config::load(&walk::absolute(&cwd, path))?
    } else {
        // The first path's project decides, so `pt2lsp check ../other` uses other's settings.
        let first = &roots[0];
        let start = if first.is_dir() {
            first.as_path()
        } else {
            first.parent().unwrap_or(&cwd)
        };
        config::discover(start)?
    };
    if !args.quiet {
        for warning in &config.warnings {
            warn(warning);
        }
    }
    let settings = resolve_settings(args, &config)?;
    let patterns: Vec<String> = walk::DEFAULT_EXCLUDE
        .iter()
        .map(|pattern| (*pattern).to_owned())
        .chain(config.exclude.iter().cloned())
        .chain(args.exclude.iter().cloned())
        .collect();
    let exclude = Exclude::new(&patterns, config.root().unwrap_or(&cwd))?;

    let discovery = walk::discover(&roots, &exclude);
    if !args.quiet {
        for warning in &discovery.warnings {
            warn(warning);
        }
        if discovery.files.is_empty() && discovery.errors.is_empty() {
            warn("no Python files found under the given paths");
        }
    }
    let mut io_errors = discovery.errors;
    // Every file is analysed on the pool's threads (rayon runs an unsplit job on the calling
    // thread otherwise), so each gets the large stack.
    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(ANALYSIS_STACK_BYTES)
        .build()
        .context("cannot start the analysis threads")?;
    let mut reports = pool.install(|| analyse(&discovery.files, &settings, &cwd, &mut io_errors));
    for error in &io_errors {
        report_error(error);
    }
    let mut trace_failed = false;
    if args.trace {
        if let Err(error) = trace(
            args,
            &config,
            &settings,
            &cwd,
            &discovery.files,
            &mut reports,
        ) {
            report_error(&format!("{error:#}"));
            trace_failed = true;
        }
    }

    let options = output::Options {
        format: args.format,
        quiet: args.quiet,
        statistics: args.statistics,
        color: args.format == OutputFormat::Text && output::use_color(),
    };
    output::with_stdout(|out| output::render(&reports, options, out))
        .context("cannot write the report")?;

    let has_errors = reports
        .iter()
        .flat_map(|report| &report.diagnostics)
        .any(|diagnostic| diagnostic.severity == pt2lsp_analyzer::Severity::Error);
    Ok(if !io_errors.is_empty() || trace_failed {
        ExitStatus::Error
    } else if has_errors && !args.exit_zero {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Absolute, normalised paths to check; a path that does not exist is a usage error, since a
/// typo in CI should fail loudly rather than check nothing.
fn resolve_roots(paths: &[PathBuf], cwd: &Path) -> Result<Vec<PathBuf>> {
    let paths = if paths.is_empty() {
        &[PathBuf::from(".")][..]
    } else {
        paths
    };
    paths
        .iter()
        .map(|path| {
            std::fs::metadata(path).with_context(|| format!("cannot check {}", path.display()))?;
            Ok(walk::absolute(cwd, path))
        })
        .collect()
}

/// Merges configuration and flags the way ruff layers them: `--select` starts over (the file's
/// `select` and `ignore` no longer apply), while `--ignore` alone adds to the file's `ignore`.
fn resolve_settings(args: &CheckArgs, config: &Config) -> Result<Settings> {
    let file = || {
        let path = config
            .path
            .as_deref()
            .map_or_else(String::new, |path| path.display().to_string());
        if path.ends_with("pyproject.toml") {
            format!("{path}: tool.pt2lsp.")
        } else {
            format!("{path}: ")
        }
    };
    let parse = |texts: &[String], origin: &str| -> Result<Vec<RuleSelector>> {
        texts
            .iter()
            .filter(|text| !text.trim().is_empty() || texts.len() == 1)
            .map(|text| {
                RuleSelector::parse(text).with_context(|| {
                    format!(
                        "unknown rule selector `{text}` in {origin}: selectors are rule codes or \
                         their prefixes (PT, PT1, PT101); `pt2lsp rule --all` lists the rules"
                    )
                })
            })
            .collect()
    };
    let defaults = Settings::default();
    let (select, mut ignore) = if let Some(select) = &args.select {
        (parse(select, "--select")?, Vec::new())
    } else {
        let select = match &config.select {
            Some(select) => parse(select, &format!("{}select", file()))?,
            None => defaults.select,
        };
        let ignore = match &config.ignore {
            Some(ignore) => parse(ignore, &format!("{}ignore", file()))?,
            None => Vec::new(),
        };
        (select, ignore)
    };
    if let Some(extra) = &args.ignore {
        ignore.extend(parse(extra, "--ignore")?);
    }
    let strict = args
        .strict_override()
        .or(config.strict)
        .unwrap_or(defaults.strict);
    Ok(Settings {
        strict,
        select,
        ignore,
    })
}

/// `--trace`: runs the real exporter on the entrypoints among `files` (in the project's Python,
/// see `tracer`) and merges its findings into the reports. A traced diagnostic with the code
/// and line of a static one replaces it: it is the same problem, confirmed. Fails only when no
/// tracer could be started (no interpreter, no torch in it).
fn trace(
    args: &CheckArgs,
    config: &Config,
    settings: &Settings,
    cwd: &Path,
    files: &[PathBuf],
    reports: &mut Vec<FileReport>,
) -> Result<()> {
    use crate::tracer::{self, batch, diagnostics::normalized};
    use std::collections::HashMap;

    let mut entrypoints = Vec::new();
    for (index, entry) in config.entrypoints.iter().flatten().enumerate() {
        match &entry.model {
            Some(model) => entrypoints.push(tracer::EntrypointSpec {
                name: entry.name.clone(),
                model: model.clone(),
                example_args: entry.example_args.clone(),
                example_kwargs: entry.example_kwargs.clone(),
                dynamic_shapes: entry.dynamic_shapes.clone(),
                strict: entry.strict,
            }),
            None if !args.quiet => warn(&format!(
                "entrypoint {}: no `model` to trace",
                entry
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("#{}", index + 1))
            )),
            None => {}
        }
    }
    let timeout = args
        .timeout
        .or(config.timeout)
        .unwrap_or(tracer::DEFAULT_TIMEOUT_SECONDS);
    let options = batch::BatchOptions {
        root: config.root().unwrap_or(cwd).to_path_buf(),
        cwd: cwd.to_path_buf(),
        strict: settings.strict,
        timeout: std::time::Duration::from_secs_f64(timeout),
        memory_limit_mb: args.memory_limit.or_else(tracer::default_memory_limit_mb),
        entrypoints,
    };
    let shown: HashMap<PathBuf, usize> = reports
        .iter()
        .enumerate()
        .map(|(index, report)| (report.path.clone(), index))
        .collect();
    let report_of = |path: &Path| shown.get(&walk::display_path(path, cwd)).copied();
    let candidates: Vec<batch::Candidate<'_>> = files
        .iter()
        .filter_map(|path| {
            let report = &reports[report_of(path)?];
            // A file that does not parse cannot be imported; its PT001 already says why.
            let broken = report
                .diagnostics
                .iter()
                .any(|diagnostic| diagnostic.rule == Rule::SyntaxError);
            (!broken).then_some(batch::Candidate {
                path,
                text: &report.text,
            })
        })
        .collect();
    let plan = batch::plan(&candidates, &options);
    if !args.quiet {
        for warning in &plan.warnings {
            warn(warning);
        }
    }
    let python = tracer::python::interpreter(
        args.python.as_deref(),
        config.python.as_deref(),
        config.root(),
        std::env::var_os("VIRTUAL_ENV").as_deref().map(Path::new),
    );
    let tracer_options = tracer::TracerOptions {
        python,
        jobs: std::thread::available_parallelism().map_or(2, usize::from),
        startup_timeout: tracer::DEFAULT_STARTUP_TIMEOUT,
    };
    let traced = batch::run(&plan.jobs, tracer_options, !args.quiet)?;

    let mut by_file: HashMap<PathBuf, usize> = files
        .iter()
        .filter_map(|path| Some((normalized(path), report_of(path)?)))
        .collect();
    for found in traced.diagnostics {
        if !settings.is_enabled(found.rule) {
            continue;
        }
        let key = normalized(&found.file);
        let index = if let Some(index) = by_file.get(&key) {
            *index
        } else {
            // A problem in a workspace file that was not checked (a helper module).
            let path = walk::display_path(&found.file, cwd);
            let Ok(source) = walk::read(&found.file, &path) else {
                continue;
            };
            reports.push(FileReport::new(path, source.text, Vec::new()));
            by_file.insert(key, reports.len() - 1);
            reports.len() - 1
        };
        let report = &mut reports[index];
        let (text, lines) = (&report.text, &report.line_index);
        if tracer::diagnostics::is_suppressed(text, lines, found.line, found.rule) {
            continue;
        }
        let diagnostic = found.to_diagnostic(text, lines);
        let traced = output::Reported {
            diagnostic,
            source: output::Source::Trace,
            data: found.data(),
        };
        tracer::diagnostics::merge_traced(&mut report.diagnostics, traced, |reported| {
            (
                reported.source == output::Source::Static,
                (
                    reported.diagnostic.rule,
                    lines.line_column(reported.diagnostic.range.start()).line,
                ),
            )
        });
    }
    for report in reports.iter_mut() {
        report
            .diagnostics
            .sort_by_key(|diagnostic| (diagnostic.range.start(), diagnostic.rule));
    }
    reports.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(())
}

/// A file after phase 1: its text, its place in the package tree, its summary.
struct Loaded {
    /// The path as the report shows it.
    shown: PathBuf,
    module: Option<(String, bool)>,
    source: SourceText,
    summary: Option<ModuleSummary>,
    diagnostics: Vec<Diagnostic>,
}

fn analyse(
    files: &[PathBuf],
    settings: &Settings,
    cwd: &Path,
    io_errors: &mut Vec<String>,
) -> Vec<FileReport> {
    // Phase 1: read, check on its own and summarise every file, from one parse each.
    let loaded: Vec<Result<Loaded, String>> = files
        .par_iter()
        .map(|path| {
            let shown = walk::display_path(path, cwd);
            let source = walk::read(path, &shown).map_err(|error| format!("{error:#}"))?;
            let module = walk::module_name(path);
            let mut file = Loaded {
                shown,
                module,
                source,
                summary: None,
                diagnostics: Vec::new(),
            };
            if let Some(problem) = decoding_problem(&file, settings) {
                file.diagnostics = problem;
            } else {
                let (report, summary) =
                    pt2lsp_analyzer::check_and_summarize(source_file(&file), settings);
                file.diagnostics = report.diagnostics;
                file.summary = Some(summary);
            }
            Ok(file)
        })
        .collect();
    let mut files = Vec::with_capacity(loaded.len());
    for result in loaded {
        match result {
            Ok(file) => files.push(file),
            Err(error) => io_errors.push(error),
        }
    }
    let summaries: Vec<ModuleSummary> = files
        .iter()
        .filter(|file| file.module.is_some())
        .filter_map(|file| file.summary.clone())
        .collect();
    let workspace = WorkspaceIndex::new(&summaries);

    // Phase 2: check again, against the whole workspace, only the files whose report may
    // depend on other files (a base class or a fake kernel defined elsewhere).
    let mut reports: Vec<FileReport> = files
        .into_par_iter()
        .map(|mut file| {
            if file
                .summary
                .as_ref()
                .is_some_and(|summary| summary.needs_workspace)
            {
                file.diagnostics =
                    pt2lsp_analyzer::check_file(source_file(&file), settings, &workspace)
                        .diagnostics;
            }
            FileReport::new(file.shown, file.source.text, file.diagnostics)
        })
        .collect();
    reports.sort_by(|a, b| a.path.cmp(&b.path));
    reports
}

fn source_file(file: &Loaded) -> SourceFile<'_> {
    let (module, is_package) = match &file.module {
        Some((name, is_package)) => (Some(name.as_str()), *is_package),
        None => (None, false),
    };
    SourceFile {
        text: &file.source.text,
        module,
        is_package,
    }
}

/// The one diagnostic of a file that could not be decoded, if it could not.
fn decoding_problem(file: &Loaded, settings: &Settings) -> Option<Vec<Diagnostic>> {
    let problem = file.source.problem.as_ref()?;
    // The text is only the decodable prefix: analysing it would report a syntax error where
    // the file was cut, so the decoding problem is the file's only diagnostic.
    if !settings.is_enabled(Rule::SyntaxError) {
        return Some(Vec::new());
    }
    let offset = TextSize::new(problem.offset as u32);
    Some(vec![Diagnostic {
        rule: Rule::SyntaxError,
        severity: Rule::SyntaxError.default_severity(),
        message: problem.message.clone(),
        range: TextRange::empty(offset),
        fix: None,
    }])
}
