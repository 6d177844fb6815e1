//! `pt2lsp check --trace`: the real exporter run on the project's entrypoints, its findings
//! merged into the project's reports.

use std::path::{Path, PathBuf};

use anyhow::Result;
use pt2lsp_analyzer::Rule;

use crate::cli::args::CheckArgs;
use crate::cli::output;
use crate::project::check::Project;
use crate::project::config::Config;
use crate::project::report::FileReport;
use crate::project::walk;
use crate::project::warn;

/// What `--trace` needs besides the files: the flags and the configuration.
pub(crate) struct Tracing<'a> {
    args: &'a CheckArgs,
    config: &'a Config,
    cwd: &'a Path,
}

impl<'a> Tracing<'a> {
    pub(crate) fn new(args: &'a CheckArgs, config: &'a Config, cwd: &'a Path) -> Self {
        Self { args, config, cwd }
    }

    /// Runs the real exporter on the entrypoints among the project's files (in the project's
    /// Python, see `tracer`) and merges its findings into their reports, replacing what an
    /// earlier trace found. A traced diagnostic with the code and line of a static one confirms
    /// it: one diagnostic, the static message and fix, `source` "static+trace"
    /// (`tracer::diagnostics::merge_traced`). Fails only when no tracer could be started (no
    /// interpreter, no torch in it).
    pub(crate) fn trace(&self, project: &mut Project<'_>) -> Result<()> {
        use crate::tracer::{self, batch, diagnostics::normalized};
        use std::collections::HashMap;

        let (args, config, cwd) = (self.args, self.config, self.cwd);
        let settings = project.settings;
        let mut entrypoints = Vec::new();
        for (index, entry) in config.entrypoints.iter().flatten().enumerate() {
            match tracer::export::spec_of(entry) {
                Some(spec) => entrypoints.push(spec),
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
            memory_limit_mb: args
                .memory_limit
                .or(config.memory_limit)
                .or_else(tracer::default_memory_limit_mb),
            entrypoints,
        };
        // A new trace replaces the previous one's findings (`--fix` traces again after a round).
        project.others.clear();
        for file in &mut project.files {
            file.report
                .diagnostics
                .retain(|diagnostic| diagnostic.source != output::Source::Trace);
            for diagnostic in &mut file.report.diagnostics {
                if diagnostic.source == output::Source::Both {
                    diagnostic.source = output::Source::Static;
                    diagnostic.data = None;
                }
            }
        }
        let candidates: Vec<batch::Candidate<'_>> = project
            .files
            .iter()
            .filter(|file| {
                // A file that does not parse cannot be imported; its PT001 already says why. A
                // notebook is not importable either: its entrypoints are checked statically.
                file.decodable
                    && file.notebook_json.is_none()
                    && !file
                        .report
                        .diagnostics
                        .iter()
                        .any(|diagnostic| diagnostic.rule == Rule::SyntaxError)
            })
            .map(|file| batch::Candidate {
                path: &file.path,
                text: &file.report.text,
            })
            .collect();
        let mut plan = batch::plan(&candidates, &options);
        if let Some(shard) = args.shard {
            plan.jobs = shard.select(plan.jobs, &options.root);
        }
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
        let cache = (!args.no_cache && !tracer::cache::disabled_by_environment()).then(|| {
            match &args.cache_dir {
                Some(dir) => tracer::cache::TraceCache::new(cwd.join(dir)),
                None => tracer::cache::TraceCache::in_project(
                    &options.root,
                    config.cache_dir.as_deref(),
                ),
            }
        });
        let traced = batch::run(&plan.jobs, tracer_options, cache.as_ref(), !args.quiet)?;
        if let (Some(cache), true) = (&cache, traced.replayed > 0 && !args.quiet) {
            // Not a warning: said so that a result nobody re-ran is never a surprise.
            eprintln!(
                "Replayed {} of {} traces from {} (their files are unchanged; --no-cache runs them again).",
                traced.replayed,
                plan.jobs.len(),
                walk::display_path(cache.dir(), cwd).display()
            );
        }

        let checked: HashMap<PathBuf, usize> = project
            .files
            .iter()
            .enumerate()
            .map(|(index, file)| (normalized(&file.path), index))
            .collect();
        let mut others: HashMap<PathBuf, usize> = HashMap::new();
        for found in traced.diagnostics {
            if !settings.is_enabled(found.rule) {
                continue;
            }
            let key = normalized(&found.file);
            let report = if let Some(index) = checked.get(&key) {
                &mut project.files[*index].report
            } else if let Some(index) = others.get(&key) {
                &mut project.others[*index]
            } else {
                // A problem in a workspace file that was not checked (a helper module).
                let path = walk::display_path(&found.file, cwd);
                let Ok(source) = walk::read(&found.file, &path) else {
                    continue;
                };
                project
                    .others
                    .push(FileReport::new(path, source.text, Vec::new()));
                others.insert(key, project.others.len() - 1);
                project.others.last_mut().expect("just pushed")
            };
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
            tracer::diagnostics::merge_traced(
                &mut report.diagnostics,
                traced,
                |reported| {
                    (
                        reported.source != output::Source::Trace,
                        (
                            tracer::diagnostics::merge_code(reported.diagnostic.rule.code()),
                            lines.line_column(reported.diagnostic.range.start()).line,
                        ),
                    )
                },
                |found, traced| {
                    found.source = output::Source::Both;
                    if tracer::diagnostics::trace_fix_wins(
                        found.diagnostic.fix.as_ref(),
                        traced.diagnostic.fix.as_ref(),
                    ) {
                        found.diagnostic.fix.clone_from(&traced.diagnostic.fix);
                    }
                    if traced.data.is_some() {
                        found.data.clone_from(&traced.data);
                    }
                },
            );
        }
        for report in project
            .files
            .iter_mut()
            .map(|file| &mut file.report)
            .chain(project.others.iter_mut())
        {
            report
                .diagnostics
                .sort_by_key(|diagnostic| (diagnostic.range.start(), diagnostic.rule));
        }
        Ok(())
    }
}
