//! Tracing a set of files at once, for `pt2lsp check --trace`: find the entrypoints, run them on
//! one worker with as many children as there are cores, report progress, collect diagnostics.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::cache::TraceCache;
use super::diagnostics::{self, Anchor, TraceDiagnostic};
use super::entrypoint;
use super::ground_truth::GroundTruth;
use super::manager::{JobId, Tracer, TracerOptions};
use super::protocol::{CallReachKind, CallSite, EntrypointSpec, JobSpec};
use super::targets::{self, DeploymentTarget, UnavailableTargets};
use super::worker::StartError;
use pt2lsp_analyzer::CallReach;

/// A file that may hold an entrypoint.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Absolute.
    pub path: &'a Path,
    pub text: &'a str,
}

/// What every job of the batch shares.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// The project root: its files are the user's, and it goes on `sys.path`.
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub strict: bool,
    pub timeout: Duration,
    pub memory_limit_mb: Option<u64>,
    /// `[[tool.pt2lsp.entrypoints]]`.
    pub entrypoints: Vec<EntrypointSpec>,
    /// The command lines of scripts, from entrypoint tables with `script` and `args`.
    pub scripts: Vec<ScriptArgs>,
    /// Deployment targets every job lowers for (`targets`, `--target`).
    pub targets: Vec<DeploymentTarget>,
}

/// The command line a script's export calls are reached with (`script` and `args` of an
/// entrypoint table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptArgs {
    /// As written: relative to the project root, or absolute.
    pub script: String,
    pub args: Vec<String>,
    /// The table's `targets`: its export calls are lowered for them too.
    pub targets: Vec<DeploymentTarget>,
}

impl ScriptArgs {
    /// The command lines configured in `entrypoints` (tables with a `script`).
    pub fn configured(entrypoints: &[pt2lsp_project::config::Entrypoint]) -> Vec<Self> {
        entrypoints
            .iter()
            .filter_map(|entry| {
                Some(Self {
                    script: entry.script.clone()?,
                    args: entry.args.clone().unwrap_or_default(),
                    targets: entry.targets.clone().unwrap_or_default(),
                })
            })
            .collect()
    }
}

/// One job to run and where its own problems go.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedJob {
    pub spec: JobSpec,
    pub anchor: Anchor,
    /// Shown in the progress line.
    pub label: String,
}

impl PlannedJob {
    /// Runs the job in `directory`, with it first on `sys.path`: where Jupyter runs a
    /// notebook, whose joined module is written elsewhere.
    pub fn run_in(&mut self, directory: &Path) {
        self.spec.cwd = directory.to_path_buf();
        if !self.spec.roots.iter().any(|root| root == directory) {
            self.spec.roots.insert(0, directory.to_path_buf());
        }
    }
}

/// Problems found before anything ran (a configured entrypoint whose module is missing).
#[derive(Debug, Default)]
pub struct Plan {
    pub jobs: Vec<PlannedJob>,
    pub warnings: Vec<String>,
    /// Export calls no job can reach (a function that needs arguments nothing in its file
    /// passes): where each is, and why it is not traced.
    pub skipped: Vec<(Anchor, String)>,
}

/// The jobs for `files`: one per ExportDB-convention file, one per export call the user's code
/// makes in a file that does not follow the convention, one per configured entrypoint whose
/// `model` module is among them.
pub fn plan(files: &[Candidate<'_>], options: &BatchOptions) -> Plan {
    let mut plan = Plan::default();
    let spec = |file: &Path, entrypoint: Option<EntrypointSpec>| JobSpec {
        file: file.to_path_buf(),
        roots: vec![options.root.clone()],
        cwd: options.cwd.clone(),
        targets: targets::union(
            &options.targets,
            entrypoint.as_ref().map_or(&[][..], |entry| &entry.targets),
        ),
        entrypoint,
        call: None,
        strict: options.strict,
        timeout: options.timeout.as_secs_f64(),
        memory_limit_mb: options.memory_limit_mb,
    };
    let by_path: HashMap<PathBuf, &Candidate<'_>> = files
        .iter()
        .map(|file| (diagnostics::normalized(file.path), file))
        .collect();
    for file in files {
        if let Some(line) = entrypoint::convention_anchor(file.text) {
            plan.jobs.push(PlannedJob {
                spec: spec(file.path, None),
                anchor: Anchor {
                    file: file.path.to_path_buf(),
                    line,
                },
                label: file.path.display().to_string(),
            });
            continue;
        }
        let normalized_file = diagnostics::normalized(file.path);
        let script = options.scripts.iter().find(|script| {
            diagnostics::normalized(&options.root.join(&script.script)) == normalized_file
        });
        let argv = script.map(|script| script.args.clone()).unwrap_or_default();
        let script_targets = script.map_or(&[][..], |script| &script.targets);
        for call in export_call_jobs(file, &options.root) {
            match call {
                Ok((mut call, anchor, label)) => plan.jobs.push(PlannedJob {
                    spec: JobSpec {
                        call: Some({
                            call.argv.clone_from(&argv);
                            call
                        }),
                        targets: targets::union(&options.targets, script_targets),
                        ..spec(file.path, None)
                    },
                    anchor,
                    label,
                }),
                Err(skipped) => plan.skipped.push(skipped),
            }
        }
    }
    for entry in &options.entrypoints {
        let name = entry.name.clone().unwrap_or_else(|| entry.model.clone());
        let Some(module) = entrypoint::module_file(&entry.model, &options.root) else {
            plan.warnings.push(format!(
                "entrypoint `{name}`: cannot find the module of `{}` under {}",
                entry.model,
                options.root.display()
            ));
            continue;
        };
        let Some(file) = by_path.get(&diagnostics::normalized(&module)) else {
            continue; // Not among the files checked this time.
        };
        let line = entrypoint::reference_attribute(&entry.model)
            .and_then(|attribute| {
                entrypoint::module_bindings(file.text, &[attribute])
                    .first()
                    .map(|(_, line)| *line)
            })
            .unwrap_or(1);
        plan.jobs.push(PlannedJob {
            spec: spec(file.path, Some(entry.clone())),
            anchor: Anchor {
                file: file.path.to_path_buf(),
                line,
            },
            label: format!("{} ({name})", file.path.display()),
        });
    }
    plan
}

/// The export calls of `file` as jobs (the call, where its own problems go, the progress
/// label), or, for a call nothing reaches, where it is and why it is skipped.
#[allow(clippy::type_complexity, reason = "a private helper's two outcomes")]
fn export_call_jobs(
    file: &Candidate<'_>,
    root: &Path,
) -> Vec<Result<(CallSite, Anchor, String), (Anchor, String)>> {
    let calls = pt2lsp_analyzer::export_calls(pt2lsp_analyzer::SourceFile::detached(file.text));
    if calls.is_empty() {
        return Vec::new();
    }
    let index = pt2lsp_analyzer::LineIndex::new(file.text);
    calls
        .into_iter()
        .map(|call| {
            let line = index.line_column(call.range.start()).line + 1;
            let end_line = index.line_column(call.range.end()).line + 1;
            let anchor = Anchor {
                file: file.path.to_path_buf(),
                line,
            };
            let (reach, name) = match call.reach {
                CallReach::Script => (CallReachKind::Script, None),
                CallReach::Call { name } => (CallReachKind::Call, Some(name)),
                CallReach::Unreachable { why } => {
                    return Err((
                        anchor,
                        format!("the {} call is not traced: {why}", call.function),
                    ));
                }
            };
            let label = format!(
                "{}:{line} ({}{})",
                file.path.strip_prefix(root).unwrap_or(file.path).display(),
                call.scope.as_deref().unwrap_or("module level"),
                if call.in_loop {
                    ", first iteration of its loop"
                } else {
                    ""
                }
            );
            Ok((
                CallSite {
                    line,
                    end_line,
                    function: call.function,
                    reach,
                    name,
                    argv: Vec::new(),
                    save_path: call.save_path,
                    scope: call.scope,
                },
                anchor,
                label,
            ))
        })
        .collect()
}

/// How the batch went, for the summary and for measurements.
#[derive(Debug, Default)]
pub struct BatchReport {
    pub diagnostics: Vec<TraceDiagnostic>,
    /// Seconds each job took in its process, by label (jobs that ran, not replayed ones).
    pub timings: Vec<(String, f64)>,
    /// Jobs whose result came from the trace cache.
    pub replayed: usize,
    /// What the exports that ran say against static errors (`ground_truth`).
    pub truth: GroundTruth,
    /// Deployment targets that could not run, each said once for the whole run.
    pub unavailable_targets: UnavailableTargets,
}

/// Runs every job on one worker and returns the diagnostics, deduplicated by (code, file,
/// line). A job whose result `cache` holds for files that have not changed is replayed; the
/// worker starts only if some job is not. Fails only when no worker can be started at all.
pub fn run(
    jobs: &[PlannedJob],
    options: TracerOptions,
    cache: Option<&TraceCache>,
    progress: bool,
) -> Result<BatchReport, StartError> {
    let mut report = BatchReport::default();
    let mut to_run = Vec::with_capacity(jobs.len());
    for job in jobs {
        match cache.and_then(|cache| cache.lookup(&options.python, &job.spec)) {
            Some(result) => {
                report.replayed += 1;
                report.truth.add(&result, &job.label);
                report.unavailable_targets.add(&result);
                report
                    .diagnostics
                    .extend(diagnostics::from_result(&result, &job.anchor));
            }
            None => to_run.push(job),
        }
    }
    if to_run.is_empty() {
        diagnostics::dedup(&mut report.diagnostics);
        return Ok(report);
    }
    let mut progress = Progress::new(progress, to_run.len());
    progress.show("starting the tracer");
    let python = options.python.clone();
    let submitted = std::time::SystemTime::now();
    let mut cache_failed = false;
    let (tracer, completed) = match Tracer::start(options) {
        Ok(started) => started,
        Err(error) => {
            progress.clear();
            return Err(error);
        }
    };
    let mut pending: HashMap<JobId, &PlannedJob> = to_run
        .into_iter()
        .map(|job| (tracer.submit(job.spec.clone()), job))
        .collect();
    while !pending.is_empty() {
        let Ok(done) = completed.recv() else { break };
        let Some(job) = pending.remove(&done.id) else {
            continue;
        };
        progress.advance(&job.label);
        report.truth.add(&done.result, &job.label);
        report.unavailable_targets.add(&done.result);
        if let Some(elapsed) = done.result.elapsed {
            report.timings.push((job.label.clone(), elapsed));
        }
        if let Some(cache) = cache {
            let stored = cache.store(&python, &job.spec, &done.result, submitted);
            if let (Err(error), false) = (stored, cache_failed) {
                // The result stands; only the next run pays for it. Said once per run.
                cache_failed = true;
                eprintln!(
                    "pt2lsp: cannot write the trace cache in {}: {error}",
                    cache.dir().display()
                );
            }
        }
        report
            .diagnostics
            .extend(diagnostics::from_result(&done.result, &job.anchor));
    }
    drop(tracer);
    progress.clear();
    if std::env::var_os("PT2LSP_TRACE_TIMINGS").is_some() {
        // For measurements (bench/): seconds per job, fork to result, on stderr.
        let mut err = std::io::stderr().lock();
        for (label, seconds) in &report.timings {
            let _ = writeln!(err, "trace-timing {seconds:.3} {label}");
        }
    }
    diagnostics::dedup(&mut report.diagnostics);
    Ok(report)
}

/// How far the batch is: `tracing 3/12 models/encoder.py` on one terminal line, rewritten in
/// place; where stderr is not a terminal (a CI log), a line at the start and one as jobs end,
/// at most every [`LOG_INTERVAL`] (and for the last), so a long trace is never silent.
struct Progress {
    mode: ProgressMode,
    done: usize,
    total: usize,
    last_line: Option<std::time::Instant>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ProgressMode {
    Off,
    Terminal,
    Lines,
}

/// The least time between two progress lines in a log.
const LOG_INTERVAL: Duration = Duration::from_secs(5);

impl Progress {
    fn new(enabled: bool, total: usize) -> Self {
        let mode = match (enabled, std::io::stderr().is_terminal()) {
            (false, _) => ProgressMode::Off,
            (true, true) => ProgressMode::Terminal,
            (true, false) => ProgressMode::Lines,
        };
        Self {
            mode,
            done: 0,
            total,
            last_line: None,
        }
    }

    fn show(&mut self, what: &str) {
        let mut err = std::io::stderr().lock();
        match self.mode {
            ProgressMode::Off => {}
            ProgressMode::Terminal => {
                let _ = write!(err, "\r\x1b[2Ktracing {}/{} {what}", self.done, self.total);
                let _ = err.flush();
            }
            ProgressMode::Lines => {
                let due = self
                    .last_line
                    .is_none_or(|last| last.elapsed() >= LOG_INTERVAL);
                if due || self.done == self.total {
                    let _ = writeln!(err, "pt2lsp: tracing {}/{} {what}", self.done, self.total);
                    self.last_line = Some(std::time::Instant::now());
                }
            }
        }
    }

    fn advance(&mut self, label: &str) {
        self.done += 1;
        self.show(label);
    }

    fn clear(&self) {
        if self.mode == ProgressMode::Terminal {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_convention_files_and_configured_entrypoints() {
        let root = tempfile::tempdir().unwrap();
        let models = root.path().join("models");
        std::fs::create_dir_all(&models).unwrap();
        let encoder = models.join("encoder.py");
        let encoder_text = "import torch\n\ndef build():\n    return torch.nn.Linear(2, 2)\n";
        std::fs::write(&encoder, encoder_text).unwrap();
        let convention = root.path().join("m.py");
        let convention_text = "model = M()\nexample_args = ()\n";
        let other = root.path().join("p.py");
        let options = BatchOptions {
            targets: Vec::new(),
            root: root.path().to_path_buf(),
            cwd: root.path().to_path_buf(),
            strict: false,
            timeout: Duration::from_secs(7),
            memory_limit_mb: None,
            entrypoints: vec![
                EntrypointSpec {
                    targets: Vec::new(),
                    name: Some("encoder".to_owned()),
                    model: "models.encoder:build()".to_owned(),
                    example_args: Some("models.encoder:ARGS".to_owned()),
                    example_kwargs: None,
                    dynamic_shapes: None,
                    strict: None,
                    fake_weights: None,
                    declared: None,
                },
                EntrypointSpec {
                    targets: Vec::new(),
                    name: None,
                    model: "models.gone:build()".to_owned(),
                    example_args: None,
                    example_kwargs: None,
                    dynamic_shapes: None,
                    strict: None,
                    fake_weights: None,
                    declared: None,
                },
            ],
            scripts: Vec::new(),
        };
        let files = [
            Candidate {
                path: &convention,
                text: convention_text,
            },
            Candidate {
                path: &other,
                text: "x = 1\n",
            },
            Candidate {
                path: &encoder,
                text: encoder_text,
            },
        ];
        let plan = plan(&files, &options);
        assert_eq!(plan.jobs.len(), 2, "{plan:?}");
        assert_eq!(plan.jobs[0].anchor.line, 1);
        assert!(plan.jobs[0].spec.entrypoint.is_none());
        assert!((plan.jobs[0].spec.timeout - 7.0).abs() < f64::EPSILON);
        assert_eq!(plan.jobs[1].anchor.file, encoder);
        assert_eq!(plan.jobs[1].anchor.line, 3);
        assert_eq!(plan.warnings.len(), 1);
        assert!(
            plan.warnings[0].contains("models.gone"),
            "{:?}",
            plan.warnings
        );
    }
}
