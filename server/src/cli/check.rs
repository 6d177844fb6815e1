//! `pt2lsp check`: the project's two-phase check (`project::check`), then the tracer when
//! asked (`cli::trace`), the fixes when asked (`cli::fix`), and the report; under `--watch`,
//! again after each change (`cli::watch`).

use anyhow::{Context, Result, bail};

use crate::cli::args::{CheckArgs, ColorChoice};
use crate::cli::fix;
use crate::cli::output::{self, OutputFormat};
use crate::cli::trace::Tracing;
use crate::cli::{ExitStatus, report_error, watch};
use pt2lsp_project::check::{CheckOptions, Prepared, Project, prepare};

pub fn run(args: &CheckArgs) -> Result<ExitStatus> {
    if args.statistics && !matches!(args.format, OutputFormat::Text | OutputFormat::Json) {
        bail!("--statistics works with --format text or json");
    }
    if args.watch {
        return watch::run(args);
    }
    check_prepared(args, prepare(&options(args))?).map(|checked| checked.status)
}

/// What one check did.
pub struct Checked {
    pub status: ExitStatus,
    /// The files `--fix` rewrote, absolute: `--watch` does not count its own writes as changes.
    pub rewritten: Vec<std::path::PathBuf>,
}

impl From<ExitStatus> for Checked {
    fn from(status: ExitStatus) -> Self {
        Self {
            status,
            rewritten: Vec::new(),
        }
    }
}

/// Checks what `prepare` found and prints the report (or the diff, the settings, the files).
pub fn check_prepared(args: &CheckArgs, prepared: Prepared) -> Result<Checked> {
    let Prepared {
        cwd,
        config,
        settings,
        files,
        context,
        pool,
        mut io_errors,
        libraries,
        walked: _,
        root,
    } = prepared;
    if args.show_settings {
        print_lines(&settings_lines(
            args,
            &config,
            &settings,
            files.len(),
            context.len(),
        ))?;
        return Ok(ExitStatus::Success.into());
    }
    if args.show_files {
        let mut shown: Vec<String> = files
            .iter()
            .map(|file| {
                pt2lsp_project::walk::display_path(file, &cwd)
                    .display()
                    .to_string()
            })
            .collect();
        shown.sort();
        print_lines(&shown)?;
        return Ok(ExitStatus::Success.into());
    }
    let fixing = fix::Fixing::resolve(args, &config);
    let mut project = Project::load(&files, &settings, &cwd, pool, &mut io_errors);
    project.add_context(&context, &config);
    project.add_table_problems(&config, &root, args.python.as_deref());
    if let Some((python, cache)) = &libraries {
        project.follow_libraries(python, cache.as_deref(), args.quiet);
    }
    project.check_against_workspace();
    for error in &io_errors {
        report_error(error);
    }
    let tracing = args.trace.then(|| Tracing::new(args, &config, &cwd, &root));
    let mut trace_failed = false;
    let mut traced = None;
    if let Some(tracing) = &tracing {
        match tracing.trace(&mut project) {
            Ok(summary) => traced = Some(summary),
            Err(error) => {
                report_error(&format!("{error:#}"));
                trace_failed = true;
            }
        }
    }
    let fixed = match fixing.apply {
        Some(apply) => {
            let retrace = tracing
                .as_ref()
                .filter(|_| !trace_failed && apply == fix::Apply::Write);
            let outcome = fix::run(&mut project, fixing, retrace, args.quiet);
            if outcome.traced.is_some() {
                traced.clone_from(&outcome.traced);
            }
            io_errors.extend(outcome.errors.iter().cloned());
            Some(outcome)
        }
        None => None,
    };

    let reports = project.into_reports();
    if let Some(outcome) = fixed
        .as_ref()
        .filter(|_| fixing.apply == Some(fix::Apply::Diff))
    {
        output::with_stdout(|out| outcome.write_diff(out)).context("cannot write the diff")?;
        if !args.quiet {
            outcome.summarize_diff(&reports, fixing.mode);
        }
        return Ok(if !io_errors.is_empty() || trace_failed {
            ExitStatus::Error
        } else if outcome.fixed.total() > 0 {
            ExitStatus::Failure
        } else {
            ExitStatus::Success
        }
        .into());
    }
    let options = output::Options {
        format: args.format,
        quiet: args.quiet,
        statistics: args.statistics,
        color: args.format == OutputFormat::Text
            && match args.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => args.output_file.is_none() && output::use_color(),
            },
        fix_mode: fixing.mode,
        fixed: fixed.as_ref().map(|outcome| outcome.fixed),
        fix_only: args.fix_only,
        trace_failed,
        trace: traced.as_ref(),
    };
    match &args.output_file {
        Some(path) => {
            let mut rendered = Vec::new();
            output::render(&reports, options, &mut rendered).context("cannot render the report")?;
            write_report(path, &rendered)?;
        }
        None => output::with_stdout(|out| output::render(&reports, options, out))
            .context("cannot write the report")?,
    }

    let has_errors = !args.fix_only
        && reports
            .iter()
            .flat_map(|report| &report.diagnostics)
            .any(|diagnostic| diagnostic.severity == pt2lsp_analyzer::Severity::Error);
    let status = if !io_errors.is_empty() || trace_failed {
        ExitStatus::Error
    } else if has_errors && !args.exit_zero {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    };
    let rewritten = fixed
        .filter(|_| fixing.apply == Some(fix::Apply::Write))
        .map(|outcome| {
            outcome
                .changes
                .iter()
                .map(|change| pt2lsp_project::walk::absolute(&cwd, &change.shown))
                .collect()
        })
        .unwrap_or_default();
    Ok(Checked { status, rewritten })
}

/// The check the flags ask for.
pub fn options(args: &CheckArgs) -> CheckOptions {
    CheckOptions {
        paths: args.paths.clone(),
        select: args.select.clone(),
        ignore: args.ignore.clone(),
        strict: args.strict_override(),
        exclude: args.exclude.clone(),
        config: args.config.clone(),
        isolated: args.isolated,
        quiet: args.quiet,
        python: args.python.clone(),
        follow_libraries: args.no_follow_libraries.then_some(false),
        cache_dir: args.cache_dir.clone(),
        no_cache: args.no_cache,
        targets: args.targets.clone(),
    }
}

/// `--show-settings` and `--show-files`: one line each on stdout.
fn print_lines(lines: &[String]) -> Result<()> {
    output::with_stdout(|out| {
        for line in lines {
            writeln!(out, "{line}")?;
        }
        Ok(())
    })
    .context("cannot write to stdout")
}

/// `--show-settings`: each resolved setting, `key = value  # source`, as the run would use it.
fn settings_lines(
    args: &CheckArgs,
    config: &pt2lsp_project::config::Config,
    settings: &pt2lsp_analyzer::Settings,
    files: usize,
    context: usize,
) -> Vec<String> {
    let file = config.path.as_ref().map_or_else(
        || "default (no configuration file)".to_owned(),
        |path| path.display().to_string(),
    );
    let source = |flag: bool, flag_name: &str, configured: bool| {
        if flag {
            flag_name.to_owned()
        } else if configured {
            file.clone()
        } else {
            "default".to_owned()
        }
    };
    let list = |selectors: &[pt2lsp_analyzer::RuleSelector]| {
        let quoted: Vec<String> = selectors
            .iter()
            .map(|selector| format!("\"{}\"", selector.as_str()))
            .collect();
        format!("[{}]", quoted.join(", "))
    };
    let mut lines = vec![
        format!("configuration = {file}"),
        format!(
            "select = {}  # {}",
            list(&settings.select),
            source(args.select.is_some(), "--select", config.select.is_some())
        ),
        format!(
            "ignore = {}  # {}",
            list(&settings.ignore),
            source(args.ignore.is_some(), "--ignore", config.ignore.is_some())
        ),
        format!(
            "strict = {}  # {}",
            settings.strict,
            source(
                args.strict_override().is_some(),
                "--strict",
                config.strict.is_some()
            )
        ),
        format!(
            "timeout = {}  # {}",
            args.timeout
                .or(config.timeout)
                .unwrap_or(pt2lsp_tracer::DEFAULT_TIMEOUT_SECONDS),
            source(
                args.timeout.is_some(),
                "--timeout",
                config.timeout.is_some()
            )
        ),
        format!(
            "python = {}  # {}",
            // The interpreter the tracer would run, resolved as `--trace` resolves it.
            pt2lsp_project::interpreter::interpreter(
                args.python.as_deref(),
                config.python.as_deref(),
                config.root(),
                std::env::var_os("VIRTUAL_ENV")
                    .as_deref()
                    .map(std::path::Path::new),
            )
            .display(),
            source(args.python.is_some(), "--python", config.python.is_some())
        ),
        format!(
            "follow-libraries = {}  # {}",
            !args.no_follow_libraries && config.follow_libraries != Some(false),
            source(
                args.no_follow_libraries,
                "--no-follow-libraries",
                config.follow_libraries.is_some()
            )
        ),
    ];
    let exclude: Vec<String> = config
        .exclude
        .iter()
        .chain(&args.exclude)
        .map(|pattern| format!("\"{pattern}\""))
        .collect();
    lines.push(format!(
        "exclude = [{}]  # {}, beside the default excludes",
        exclude.join(", "),
        source(
            !args.exclude.is_empty(),
            "--exclude",
            !config.exclude.is_empty()
        )
    ));
    lines.push(format!(
        "files = {files} checked, {context} more of the project read for cross-file facts"
    ));
    lines
}

/// Writes the report to `path` through a temporary file beside it, renamed over it: a reader
/// sees the old report or the new one, never half of one.
fn write_report(path: &std::path::Path, rendered: &[u8]) -> Result<()> {
    let directory = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or_else(|| std::path::Path::new("."));
    let name = path
        .file_name()
        .with_context(|| format!("--output-file {} names no file", path.display()))?;
    let temporary = directory.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&temporary, rendered)
        .and_then(|()| std::fs::rename(&temporary, path))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&temporary);
        })
        .with_context(|| format!("cannot write the report to {}", path.display()))
}
