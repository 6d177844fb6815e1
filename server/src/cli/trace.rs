//! `pt2lsp check --trace`: the real exporter run on the project's entrypoints, its findings
//! merged into the project's reports.

use std::path::{Path, PathBuf};

use anyhow::Result;
use pt2lsp_analyzer::Rule;

use crate::cli::args::CheckArgs;
use crate::cli::output;
use pt2lsp_project::check::Project;
use pt2lsp_project::config::Config;
use pt2lsp_project::report::FileReport;
use pt2lsp_project::walk;
use pt2lsp_project::warn;
use pt2lsp_tracer::diagnostics::normalized;

/// The module files of the notebooks among the checked files, by the notebook's index in
/// `Project::files`: `notebooks/<hash of the notebook's path>_<name>.py` in the cache directory
/// (a stable path, so the trace cache can replay them; written even with `--no-cache`), the
/// notebook's code cells joined as the report's text has them.
struct NotebookModules {
    modules: Vec<(usize, PathBuf)>,
    /// Each notebook's directory: Jupyter runs a notebook there, with it on `sys.path`.
    directories: Vec<(PathBuf, PathBuf)>,
}

impl NotebookModules {
    fn write(project: &Project<'_>, cache: &pt2lsp_tracer::cache::TraceCache) -> Result<Self> {
        let mut found = Self {
            modules: Vec::new(),
            directories: Vec::new(),
        };
        let notebooks: Vec<(usize, &pt2lsp_project::check::Checked)> = project
            .files
            .iter()
            .enumerate()
            .filter(|(_, file)| file.notebook_json.is_some() && file.decodable)
            .collect();
        if notebooks.is_empty() {
            return Ok(found);
        }
        for (index, file) in notebooks {
            let module = cache
                .notebook_module(&file.path, &file.report.text)
                .map_err(|error| {
                    anyhow::anyhow!(
                        "cannot write the module of {} in {}: {error}",
                        file.report.path.display(),
                        cache.dir().display()
                    )
                })?;
            let absolute = std::path::absolute(&file.path).unwrap_or_else(|_| file.path.clone());
            if let Some(parent) = absolute.parent() {
                found
                    .directories
                    .push((module.clone(), parent.to_path_buf()));
            }
            found.modules.push((index, module));
        }
        Ok(found)
    }

    /// The notebook (its index among the checked files) whose module `file` is.
    fn notebook_of(&self, file: &Path) -> Option<usize> {
        let key = normalized(file);
        self.modules
            .iter()
            .find(|(_, module)| normalized(module) == key)
            .map(|(index, _)| *index)
    }

    fn module_of(&self, index: usize) -> Option<&PathBuf> {
        self.modules
            .iter()
            .find(|(found, _)| *found == index)
            .map(|(_, module)| module)
    }

    /// A notebook's job runs in the notebook's directory, which is on `sys.path` and the user's,
    /// and is labelled by the notebook and cell (`nb.ipynb cell 4:3 (module level)`), in the
    /// progress line and in what a contradicted finding says.
    fn run_beside_their_notebooks(
        &self,
        project: &Project<'_>,
        jobs: &mut [pt2lsp_tracer::batch::PlannedJob],
    ) {
        for job in jobs {
            if let Some((_, directory)) = self
                .directories
                .iter()
                .find(|(module, _)| *module == job.spec.file)
            {
                job.run_in(directory);
            }
            let Some(index) = self.notebook_of(&job.spec.file) else {
                continue;
            };
            let report = &project.files[index].report;
            let mut head = report.path.display().to_string();
            if let Some(at) = job
                .spec
                .call
                .as_ref()
                .and_then(|call| report.notebook.as_ref()?.locate(call.line))
            {
                head = format!("{head} cell {}:{}", at.cell, at.line);
            }
            job.label = match job.label.find(" (") {
                Some(at) => format!("{head}{}", &job.label[at..]),
                None => head,
            };
        }
    }
}

/// A finding the tracer reports in a notebook's joined module (`module`), pointed into the
/// notebook: each related place at the notebook file's own line and column (where an editor
/// or a terminal jumps), its cell named, and a `module.py:N` in the message written as
/// `nb.ipynb cell C:L`. Nobody wrote the module; the user knows the cells.
pub(crate) fn point_into_notebook(
    found: &mut pt2lsp_tracer::diagnostics::TraceDiagnostic,
    module: &Path,
    notebook: &Path,
    cells: &pt2lsp_project::notebook::CellMap,
) {
    let module_key = normalized(module);
    for related in &mut found.related {
        if normalized(&related.file) != module_key {
            continue;
        }
        if let Some(at) = cells.locate(related.line) {
            related.message = format!("{} (cell {}:{})", related.message, at.cell, at.line);
        }
        if let Some((line, column)) = cells.file_position(related.line, related.column) {
            related.line = line;
            related.column = column;
        }
        related.file = notebook.to_path_buf();
    }
    let (Some(module_name), Some(notebook_name)) = (
        module.file_name().and_then(|name| name.to_str()),
        notebook.file_name().and_then(|name| name.to_str()),
    ) else {
        return;
    };
    let pattern = format!("{module_name}:");
    let mut rewritten = String::with_capacity(found.message.len());
    let mut rest = found.message.as_str();
    while let Some(at) = rest.find(&pattern) {
        let after = &rest[at + pattern.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let place = after[..digits]
            .parse::<u32>()
            .ok()
            .and_then(|line| cells.locate(line));
        rewritten.push_str(&rest[..at]);
        if let Some(place) = place {
            rewritten.push_str(notebook_name);
            rewritten.push_str(" cell ");
            rewritten.push_str(&place.cell.to_string());
            rewritten.push(':');
            rewritten.push_str(&place.line.to_string());
            rest = &after[digits..];
        } else {
            rewritten.push_str(&pattern);
            rest = after;
        }
    }
    rewritten.push_str(rest);
    found.message = rewritten;
}

/// What `--trace` needs besides the files: the flags, the configuration and the project's
/// root (on the jobs' `sys.path`, where the cache is), however the check was asked.
pub(crate) struct Tracing<'a> {
    args: &'a CheckArgs,
    config: &'a Config,
    cwd: &'a Path,
    root: &'a Path,
}

impl<'a> Tracing<'a> {
    pub(crate) fn new(
        args: &'a CheckArgs,
        config: &'a Config,
        cwd: &'a Path,
        root: &'a Path,
    ) -> Self {
        Self {
            args,
            config,
            cwd,
            root,
        }
    }

    /// Runs the real exporter on the entrypoints among the project's files (in the project's
    /// Python, see `tracer`) and merges its findings into their reports, replacing what an
    /// earlier trace found. A traced diagnostic with the code and line of a static one confirms
    /// it: one diagnostic, the static message and fix, `source` "static+trace"
    /// (`tracer::diagnostics::merge_traced`). Fails only when no tracer could be started (no
    /// interpreter, no torch in it).
    pub(crate) fn trace(&self, project: &mut Project<'_>) -> Result<output::TraceSummary> {
        use pt2lsp_tracer::{self as tracer, batch, diagnostics::normalized};
        use std::collections::HashMap;

        let (args, config, cwd) = (self.args, self.config, self.cwd);
        let settings = project.settings;
        let mut entrypoints = Vec::new();
        // The tables as the configuration file says now: `--fix` may have rewritten a `Dim`
        // written inside one of their strings since the check began.
        let reread = config
            .path
            .as_deref()
            .and_then(|path| pt2lsp_project::config::load(path).ok());
        let tables = reread
            .as_ref()
            .unwrap_or(config)
            .entrypoints
            .as_deref()
            .unwrap_or_default();
        for (index, entry) in tables.iter().enumerate() {
            match tracer::export::spec_of(entry) {
                Some(spec) => entrypoints.push(spec),
                // A table with `script` gives a script's command line; it names no model.
                None if !args.quiet && entry.script.is_none() => warn(&format!(
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
            root: self.root.to_path_buf(),
            cwd: cwd.to_path_buf(),
            strict: settings.strict,
            timeout: std::time::Duration::from_secs_f64(timeout),
            memory_limit_mb: args
                .memory_limit
                .or(config.memory_limit)
                .or_else(tracer::default_memory_limit_mb),
            entrypoints,
            scripts: batch::ScriptArgs::configured(tables),
            targets: tracer::targets::union(
                &args.targets,
                config.targets.as_deref().unwrap_or_default(),
            ),
        };
        // A new trace replaces the previous one's findings (`--fix` traces again after a round).
        // The others' static findings (the configuration file's table problems) stay.
        for report in project
            .files
            .iter_mut()
            .map(|file| &mut file.report)
            .chain(project.others.iter_mut())
        {
            report
                .diagnostics
                .retain(|diagnostic| diagnostic.source != output::Source::Trace);
            for diagnostic in &mut report.diagnostics {
                if diagnostic.source == output::Source::Both {
                    diagnostic.source = output::Source::Static;
                    diagnostic.data = None;
                }
            }
        }
        // A notebook runs as its code cells joined into one module (magics masked), written to
        // a file of its own; its findings come back on that file's lines, which are the
        // report's, shown by cell.
        let cache_dir = match &args.cache_dir {
            Some(dir) => tracer::cache::TraceCache::new(cwd.join(dir)),
            None => {
                tracer::cache::TraceCache::in_project(&options.root, config.cache_dir.as_deref())
            }
        };
        let notebook_modules = NotebookModules::write(project, &cache_dir)?;
        let candidates: Vec<batch::Candidate<'_>> = project
            .files
            .iter()
            .enumerate()
            .filter(|(_, file)| {
                // A file that does not parse cannot be imported; its PT001 already says why.
                file.decodable
                    && !file
                        .report
                        .diagnostics
                        .iter()
                        .any(|diagnostic| diagnostic.rule == Rule::SyntaxError)
            })
            .filter_map(|(index, file)| {
                let path = match file.notebook_json {
                    Some(_) => notebook_modules.module_of(index)?,
                    None => &file.path,
                };
                Some(batch::Candidate {
                    path,
                    text: &file.report.text,
                })
            })
            // The project's entrypoints that reach a checked file, wherever they are: a model
            // file checked alone is traced through the script that exports it, as in `check .`.
            .chain(
                project
                    .entrypoints_elsewhere()
                    .map(|(path, text)| batch::Candidate { path, text }),
            )
            .collect();
        let mut plan = batch::plan(&candidates, &options);
        notebook_modules.run_beside_their_notebooks(project, &mut plan.jobs);
        if let Some(shard) = args.shard {
            plan.jobs = shard.select(plan.jobs, &options.root);
        }
        if !args.quiet {
            for warning in &plan.warnings {
                warn(warning);
            }
            for (anchor, why) in &plan.skipped {
                warn(&format!(
                    "{}:{}: {why}",
                    walk::display_path(&anchor.file, cwd).display(),
                    anchor.line
                ));
            }
            if plan.jobs.is_empty() {
                warn(
                    "--trace found no entrypoint to trace in the checked files: it looks for calls \
                     of torch.export.export, torch.export.draft_export and torch.onnx.export \
                     (in scripts, functions and tests), module-level `model` with \
                     `example_args` (the ExportDB convention), and [[tool.pt2lsp.entrypoints]] \
                     tables in pyproject.toml",
                );
            }
        }
        let python = pt2lsp_project::interpreter::interpreter(
            args.python.as_deref(),
            config.python.as_deref(),
            config.root(),
            std::env::var_os("VIRTUAL_ENV").as_deref().map(Path::new),
        );
        let tracer_options = tracer::TracerOptions {
            python,
            jobs: std::thread::available_parallelism().map_or(2, usize::from),
            startup_timeout: tracer::DEFAULT_STARTUP_TIMEOUT,
            start_method: args
                .start_method
                .or(config.start_method)
                .unwrap_or_else(tracer::worker::StartMethod::from_environment),
        };
        let cache =
            (!args.no_cache && !tracer::cache::disabled_by_environment()).then_some(cache_dir);
        let traced = batch::run(&plan.jobs, tracer_options, cache.as_ref(), !args.quiet)?;
        let summary = output::TraceSummary {
            entrypoints: plan.jobs.len(),
            run: plan.jobs.len() - traced.replayed,
            replayed: traced.replayed,
            not_reached: plan
                .skipped
                .iter()
                .map(|(anchor, why)| output::NotReached {
                    file: output::path_string(&walk::display_path(&anchor.file, cwd)),
                    line: anchor.line,
                    reason: why.clone(),
                })
                .collect(),
        };
        if let (Some(cache), true) = (&cache, traced.replayed > 0 && !args.quiet) {
            // Not a warning: said so that a result nobody re-ran is never a surprise.
            eprintln!(
                "Replayed {} of {} traces from {} (their files are unchanged; --no-cache runs them again).",
                traced.replayed,
                plan.jobs.len(),
                walk::display_path(cache.dir(), cwd).display()
            );
        }
        if !args.quiet && !plan.jobs.is_empty() {
            let ran = plan.jobs.len() - traced.replayed;
            let skipped = if plan.skipped.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} not reached (see above)",
                    plural(plan.skipped.len(), "export call", "export calls")
                )
            };
            eprintln!(
                "Traced {} ({ran} run, {} replayed){skipped}.",
                plural(plan.jobs.len(), "entrypoint", "entrypoints"),
                traced.replayed
            );
        }
        if !args.quiet {
            // A target that cannot run here (its package missing, built for another torch) is
            // said once, however many entrypoints name it; the rest of the check stands.
            for message in traced.unavailable_targets.messages() {
                warn(&message);
            }
        }

        // A project file the trace found a problem in that was not checked (the model a
        // checked script exports) is checked now, so its report is everything `check .` says
        // of it, not the trace's findings alone.
        let unchecked: std::collections::HashSet<PathBuf> = traced
            .diagnostics
            .iter()
            .filter(|found| settings.is_enabled(found.rule))
            .map(|found| normalized(&found.file))
            .collect();
        project.check_also(|path| unchecked.contains(&normalized(path)));

        let mut checked: HashMap<PathBuf, usize> = project
            .files
            .iter()
            .enumerate()
            .map(|(index, file)| (normalized(&file.path), index))
            .collect();
        checked.extend(
            notebook_modules
                .modules
                .iter()
                .map(|(index, module)| (normalized(module), *index)),
        );
        project
            .others
            .retain(|report| !report.diagnostics.is_empty());
        let mut others: HashMap<PathBuf, usize> = project
            .others
            .iter()
            .enumerate()
            .map(|(index, report)| (normalized(&walk::absolute(cwd, &report.path)), index))
            .collect();
        // The lines where a suppression silenced what the trace found there.
        let mut silenced: std::collections::HashSet<(PathBuf, u32)> =
            std::collections::HashSet::new();
        for mut found in traced.diagnostics {
            if !settings.is_enabled(found.rule) {
                continue;
            }
            if let Some(index) = notebook_modules.notebook_of(&found.file) {
                let file = &project.files[index];
                if let Some(cells) = &file.report.notebook {
                    let module = found.file.clone();
                    point_into_notebook(&mut found, &module, &file.path, cells);
                }
            }
            let key = normalized(&found.file);
            // The companion of a `Dim` written inside an entrypoint table's string.
            let table = found
                .declaration_of
                .as_ref()
                .and_then(|_| project.table_program_at(&found.file, found.line));
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
            let (text, lines, diagnostics) = report.diagnostics_by_line();
            if tracer::diagnostics::is_suppressed(text, lines, found.line, found.rule) {
                silenced.insert((normalized(&found.file), found.line));
                continue;
            }
            let mut diagnostic = found.to_diagnostic(text, lines);
            if let Some(table) = &table {
                // torch's fix is made on the table's module, whose lines and columns are the
                // string's, and carried to where the `Dim` is written (or not offered at all).
                let fix = found
                    .dim_fix(&table.text)
                    .and_then(|fix| table.fix_in_configuration(text, &fix));
                if let Some(edit) = fix.as_ref().and_then(|fix| fix.edits.first()) {
                    diagnostic.range = edit.range;
                }
                diagnostic.fix = fix;
            }
            let traced = output::Reported {
                diagnostic,
                source: output::Source::Trace,
                data: found.data(),
            };
            tracer::diagnostics::merge_traced(
                diagnostics,
                traced,
                |reported| {
                    (
                        reported.source != output::Source::Trace,
                        (
                            tracer::diagnostics::merge_code(reported.diagnostic.rule.code()),
                            lines.line_column(reported.diagnostic.range.start()).line,
                            tracer::diagnostics::LibraryPlace::of(
                                reported
                                    .diagnostic
                                    .related
                                    .iter()
                                    .map(|place| (place.file.as_path(), place.line)),
                            ),
                        ),
                    )
                },
                |found, traced| {
                    found.source = output::Source::Both;
                    if let Some(message) = tracer::diagnostics::confirmed_message(
                        &found.diagnostic.message,
                        &traced.diagnostic.message,
                    ) {
                        found.diagnostic.message = message;
                    }
                    found.diagnostic.severity = tracer::diagnostics::stronger(
                        found.diagnostic.severity,
                        traced.diagnostic.severity,
                    );
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
            settle_contradicted(report, &traced.truth, cwd, args.show_contradicted);
            drop_superseded(report);
            prove_unproven(report, &traced.truth, cwd, &silenced);
            report
                .diagnostics
                .sort_by_key(|diagnostic| (diagnostic.range.start(), diagnostic.rule));
        }
        Ok(summary)
    }
}

/// Drops each static diagnostic that a deployment target's lowering states on its line
/// (`tracer::diagnostics::superseded_by_lowering`), as the language server does.
fn drop_superseded(report: &mut pt2lsp_project::report::FileReport) {
    let (_, lines, diagnostics) = report.diagnostics_by_line();
    let line =
        |reported: &output::Reported| lines.line_column(reported.diagnostic.range.start()).line;
    let lowered: Vec<(u32, &'static str, String)> = diagnostics
        .iter()
        .filter(|reported| reported.source == output::Source::Trace)
        .map(|reported| {
            (
                line(reported),
                reported.diagnostic.rule.code(),
                reported.diagnostic.message.clone(),
            )
        })
        .collect();
    diagnostics.retain(|reported| {
        reported.source == output::Source::Trace
            || !lowered.iter().any(|(at, code, message)| {
                *at == line(reported)
                    && pt2lsp_tracer::diagnostics::superseded_by_lowering(
                        reported.diagnostic.rule.code(),
                        &reported.diagnostic.message,
                        code,
                        message,
                    )
            })
    });
}

/// `1 entrypoint`, `2 entrypoints`.
fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// The static diagnostics that hold where an export that succeeded ran their line (a
/// suppression that silenced nothing), added where every export reaching the file succeeded,
/// one ran the line, and nothing the trace found there was silenced (`silenced`).
fn prove_unproven(
    report: &mut pt2lsp_project::report::FileReport,
    truth: &pt2lsp_tracer::ground_truth::GroundTruth,
    cwd: &Path,
    silenced: &std::collections::HashSet<(PathBuf, u32)>,
) {
    let path = walk::absolute(cwd, &report.path);
    let key = pt2lsp_tracer::diagnostics::normalized(&path);
    let unproven = std::mem::take(&mut report.unproven);
    let (_, lines, diagnostics) = report.diagnostics_by_line();
    for diagnostic in unproven {
        let line = lines.line_column(diagnostic.range.start()).line + 1;
        if truth.ran_and_succeeded(&path, line) && !silenced.contains(&(key.clone(), line)) {
            diagnostics.push(output::Reported::found_statically(diagnostic));
        }
    }
}

/// The exporter is ground truth where it ran: a static error that an export which succeeded
/// contradicts (`tracer::ground_truth`) leaves the report, or, with `show`, stays as an info
/// diagnostic that says which export passed the line.
fn settle_contradicted(
    report: &mut pt2lsp_project::report::FileReport,
    truth: &pt2lsp_tracer::ground_truth::GroundTruth,
    cwd: &Path,
    show: bool,
) {
    use pt2lsp_analyzer::Severity;

    let path = walk::absolute(cwd, &report.path);
    let (_, lines, diagnostics) = report.diagnostics_by_line();
    diagnostics.retain_mut(|reported| {
        if reported.source != output::Source::Static {
            return true;
        }
        let line = lines.line_column(reported.diagnostic.range.start()).line + 1;
        let Some(why) = truth.contradicts_static(&path, line, &reported.diagnostic, cwd) else {
            return true;
        };
        if show {
            reported.diagnostic.severity = Severity::Info;
            reported.diagnostic.message =
                format!("{} (contradicted: {why})", reported.diagnostic.message);
        }
        show
    });
}
