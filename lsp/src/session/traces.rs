//! Traces in the language server: which entrypoints a save reaches, and what their traces found,
//! published on every file it lands in.
//!
//! A save (or an open, when `trace = "on-open-and-save"`, or `pt2lsp.retrace`) of a file traces
//! every entrypoint that reaches it: the file's own (the ExportDB convention or a configured
//! `[[tool.pt2lsp.entrypoints]]` whose `model` module it is) and those of every workspace file
//! that imports it, directly or through other files (the reverse of the index's import graph).
//!
//! Each entrypoint's last trace is kept as diagnostics per file, each file's stamped with the
//! version of the open document they were read against (`None`: the file was not open and its
//! text came from disk). A file's publication is its static diagnostics merged with the trace
//! diagnostics stamped with its version, from every entrypoint; a file that is not open gets
//! the trace diagnostics alone. A new trace of an entrypoint replaces its old one, so files it
//! no longer finds problems in are published again without them. An edit changes the version,
//! so a file shows static diagnostics only until the next trace, as before; a file opened after
//! the trace adopts the diagnostics read from disk.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tower_lsp_server::ls_types::{self as lsp, MessageType, Uri};

use super::{MAX_ANALYSED_BYTES, PlannedTrace, Session};
use crate::diagnostics::{self, AnalysedText, DISK_VERSION, Finding, Findings};
use crate::workspace;
use pt2lsp_project::config::{self, TraceMode};
use pt2lsp_project::interpreter as python;
use pt2lsp_project::table_problems::{self, ModuleSearch};
use pt2lsp_tracer::diagnostics::{dedup, from_result, is_suppressed, normalized};
use pt2lsp_tracer::manager::Priority;
use pt2lsp_tracer::protocol::JobResult;
use pt2lsp_tracer::targets::UnavailableTargets;
use pt2lsp_tracer::{Status, batch};

/// Files a save may reach through imports: a bound on the walk for a module that the whole of
/// a very large workspace imports.
const MAX_REACHED_FILES: usize = 4096;

/// The most places the progress end message lists; the rest are counted.
const MAX_LISTED: usize = 5;

/// Why a trace was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceReason {
    Open,
    Save,
    Retrace,
}

/// One entrypoint: the file that defines it and, for a configured one, its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryKey {
    /// Normalized (see [`normalized`]).
    pub file: PathBuf,
    pub name: Option<String>,
}

impl EntryKey {
    pub fn of(planned: &PlannedTrace) -> Self {
        Self {
            file: normalized(&planned.spec.file),
            name: planned
                .spec
                .entrypoint
                .as_ref()
                .map(|entry| entry.name.clone().unwrap_or_else(|| entry.model.clone())),
        }
    }

    /// The key the trace thread cancels by: the file's URI, with the entrypoint's name as the
    /// fragment for a configured one, so two entrypoints of one file do not cancel each other.
    fn job_uri(&self) -> Option<Uri> {
        let uri = Uri::from_file_path(&self.file)?;
        match &self.name {
            None => Some(uri),
            Some(name) => {
                let fragment: String = name
                    .bytes()
                    .map(|byte| {
                        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.') {
                            char::from(byte).to_string()
                        } else {
                            format!("%{byte:02X}")
                        }
                    })
                    .collect();
                format!("{}#{fragment}", uri.as_str()).parse().ok()
            }
        }
    }
}

/// The last trace of one entrypoint.
#[derive(Debug, Default)]
pub struct EntryTrace {
    /// The newest trace asked for; an older one's results are dropped.
    ticket: u64,
    /// Its diagnostics by normalized file.
    files: HashMap<PathBuf, FileTrace>,
}

/// An entrypoint's trace diagnostics in one file.
#[derive(Debug, Clone)]
pub struct FileTrace {
    pub uri: Uri,
    /// The open document's version they were read against; `None` when read from disk.
    pub version: Option<i32>,
    pub diagnostics: Vec<Finding>,
    /// The exported program's tensor shapes by 1-based line (see [`TracedShapes`]).
    pub shapes: HashMap<u32, Vec<String>>,
    /// What the trace says against the file's static errors (`tracer::ground_truth`).
    pub evidence: Evidence,
}

/// One entrypoint's trace, as evidence about one file it reached.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The export succeeded.
    pub exported: bool,
    /// The file's 1-based lines the export ran.
    pub lines: Vec<u32>,
    /// The entrypoint, for the reason shown.
    pub label: String,
    /// The 1-based lines where a suppression comment silenced what the trace found.
    pub silenced: Vec<u32>,
}

/// What one save traces, and the problems of the configured entrypoints' strings.
#[derive(Default)]
struct Plan {
    traces: Vec<PlannedTrace>,
    /// `pyproject.toml` and its PT503 diagnostics (empty when every entrypoint is well formed).
    config: Option<(PathBuf, Vec<Finding>)>,
}

/// The session's tracer part: the thread that owns the tracer, each entrypoint's last trace,
/// and what the user was told once.
#[derive(Debug, Default)]
pub(super) struct TraceState {
    /// The thread that owns the tracer, started with the first trace.
    pub(super) thread: crate::trace::TraceThread,
    /// Each entrypoint's last trace, by file. Never held while waiting for `documents`.
    entries: std::sync::Mutex<HashMap<EntryKey, EntryTrace>>,
    /// Whether the user was told that tracing is unavailable (once per session).
    unavailable_said: std::sync::atomic::AtomicBool,
    /// The deployment targets' "not checked" notes the user was shown (once each per session).
    targets_said: std::sync::Mutex<HashSet<String>>,
}

/// What the blocking steps of a trace read, taken on the reactor when it is planned or its
/// result arrives: the workspace roots, the settings' inputs, the workspace part and each open
/// document's text (a rope's clone shares its nodes). They hold this, never the session.
pub(super) struct TraceInputs {
    roots: Vec<PathBuf>,
    pub(super) settings: super::SettingsSource,
    workspace: Arc<super::index::WorkspaceState>,
    /// Each open document by its normalized path: its URI, text and version.
    open: HashMap<PathBuf, (Uri, ropey::Rope, i32)>,
    /// For the settings' warnings.
    client: tower_lsp_server::Client,
}

/// The problems of a `pyproject.toml`'s entrypoint tables' strings, when `settings` are that
/// file's project's ([`entrypoint_problems`]), and the fixes the static pass finds for `Dim`s
/// written inside them (`TableProgram::companions`, as `pt2lsp check` shows them), over the
/// index of the project the file belongs to.
fn table_problems(
    settings: &crate::settings::Resolved,
    pyproject: &Path,
    workspace: &super::index::WorkspaceState,
) -> Vec<Finding> {
    match (&settings.project, pyproject.parent()) {
        (Some(project), Some(root)) if normalized(project) == normalized(pyproject) => {
            let python = python::interpreter(
                None,
                settings.python.as_deref(),
                Some(root),
                std::env::var_os("VIRTUAL_ENV").as_deref().map(Path::new),
            );
            let mut found = entrypoint_problems(pyproject, &settings.entrypoints, root, &python);
            if let Ok(text) = std::fs::read_to_string(pyproject) {
                let index = workspace.index_of(Some(pyproject));
                let analysed = AnalysedText::new(text.clone());
                for table in pt2lsp_project::table_programs::table_programs(&settings.entrypoints)
                    .iter()
                    .filter(|table| normalized(&table.path) == normalized(pyproject))
                {
                    found.extend(
                        table
                            .companions(&text, &settings.analyzer, &index)
                            .into_iter()
                            .map(|diagnostic| {
                                Finding::found_statically(diagnostic, &analysed, DISK_VERSION)
                            }),
                    );
                }
            }
            found
        }
        _ => Vec::new(),
    }
}

/// A configuration file's static findings with its trace findings: a traced finding with the
/// code and line of a static one (torch's companion on the `Dim` the static pass also fixes)
/// stands for both, as `check --trace` merges them.
fn with_table_traces(mut statics: Vec<Finding>, traced: Vec<Finding>) -> Vec<Finding> {
    statics.retain(|item| {
        !traced.iter().any(|found| {
            found.diagnostic().rule == item.diagnostic().rule && found.line() == item.line()
        })
    });
    statics.extend(traced);
    statics
}

impl Session {
    /// What a trace's blocking steps read, as it is now (see [`TraceInputs`]).
    pub(super) fn trace_inputs(&self) -> TraceInputs {
        TraceInputs {
            roots: self.roots(),
            settings: self.settings_source(),
            workspace: Arc::clone(&self.workspace),
            open: self
                .documents
                .iter()
                .filter_map(|open| {
                    let file = open.normalized.clone()?;
                    let document = &open.document;
                    Some((
                        file,
                        (
                            open.key().clone(),
                            document.rope().clone(),
                            document.version(),
                        ),
                    ))
                })
                .collect(),
            client: self.client.clone(),
        }
    }

    /// Whether a document is open for a normalized path.
    fn is_open_file(&self, file: &Path) -> bool {
        self.documents
            .iter()
            .any(|open| open.normalized.as_deref() == Some(file))
    }
}

impl TraceInputs {
    pub(super) fn roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    /// Each `pyproject.toml` of the workspace's projects (the roots' and the index's
    /// namespaces'), with the problems of its entrypoint tables that need no run
    /// ([`table_problems`]), for each that has a `[tool.pt2lsp]` table (so a fixed problem is
    /// cleared, and a project that does not configure pt2lsp is sent nothing). Blocking: reads
    /// files.
    fn configuration_problems(&self) -> Vec<(PathBuf, Vec<Finding>)> {
        let pyprojects: std::collections::BTreeSet<PathBuf> = self
            .workspace
            .namespace_roots()
            .into_iter()
            .chain(self.roots())
            .map(|directory| directory.join("pyproject.toml"))
            .filter(|pyproject| pyproject.is_file())
            .collect();
        pyprojects
            .into_iter()
            .filter_map(|pyproject| {
                let settings = self.resolve_settings(Some(&pyproject));
                let configures = settings
                    .project
                    .as_deref()
                    .is_some_and(|project| normalized(project) == normalized(&pyproject));
                configures.then(|| {
                    let problems = table_problems(&settings, &pyproject, &self.workspace);
                    (pyproject, problems)
                })
            })
            .collect()
    }

    /// The settings for a file: the editor's over its project's; their warnings go to the
    /// client's log. Blocking: the first look-up in a directory reads files.
    pub(super) fn resolve_settings(&self, path: Option<&Path>) -> crate::settings::Resolved {
        let (resolved, warnings) = self.settings.resolve(path);
        for warning in warnings {
            super::log_to(&self.client, MessageType::WARNING, warning);
        }
        resolved
    }

    /// The open document of a normalized path: its URI, text and version.
    fn open_document(&self, file: &Path) -> Option<(Uri, String, i32)> {
        let (uri, rope, version) = self.open.get(file)?;
        Some((uri.clone(), rope.to_string(), *version))
    }

    /// Whether the tracer's diagnostics in `file` are the user's to see: a file in a workspace
    /// root (or the project the trace ran in), not in an excluded or installed part of it.
    fn is_workspace_file(&self, file: &Path, root: Option<&Path>) -> bool {
        let installed = file
            .components()
            .any(|part| part.as_os_str() == "site-packages" || part.as_os_str() == "dist-packages");
        let inside = root.is_some_and(|root| file.starts_with(normalized(root)))
            || self
                .roots()
                .iter()
                .any(|root| file.starts_with(normalized(root)));
        inside && !installed && !self.workspace.is_excluded(file)
    }

    /// A job's result as diagnostics per file, and the progress end message that says what was
    /// found where. Blocking: reads settings and the files that are not open.
    pub(super) fn traced_files(
        &self,
        planned: &PlannedTrace,
        result: &JobResult,
        submitted: &HashMap<PathBuf, i32>,
    ) -> (HashMap<PathBuf, FileTrace>, String) {
        let mut found = from_result(result, &planned.anchor);
        dedup(&mut found);
        let mut by_file: BTreeMap<PathBuf, Vec<_>> = BTreeMap::new();
        for diagnostic in found {
            by_file
                .entry(normalized(&diagnostic.file))
                .or_default()
                .push(diagnostic);
        }
        let mut shapes_by_file: HashMap<PathBuf, HashMap<u32, Vec<String>>> = HashMap::new();
        for traced in &result.shapes {
            let file = normalized(&traced.file);
            by_file.entry(file.clone()).or_default();
            shapes_by_file
                .entry(file)
                .or_default()
                .insert(traced.line, traced.shapes.clone());
        }
        let exported = pt2lsp_tracer::ground_truth::GroundTruth::exported(result);
        let mut passed: HashMap<PathBuf, Vec<u32>> = HashMap::new();
        for file in &result.dependencies {
            by_file.entry(normalized(file)).or_default();
        }
        for lines in &result.passed_lines {
            let file = normalized(&lines.file);
            by_file.entry(file.clone()).or_default();
            passed.insert(file, lines.lines.clone());
        }
        let root = planned.spec.roots.first().map(PathBuf::as_path);
        let mut files = HashMap::new();
        let mut places: Vec<(String, u32)> = Vec::new();
        for (file, found) in by_file {
            if !self.is_workspace_file(&file, root) {
                continue;
            }
            let (uri, text, version) = if let Some((uri, text, version)) = self.open_document(&file)
            {
                if submitted.get(&file).is_some_and(|then| *then != version) {
                    // Edited while the trace ran: its lines no longer say where.
                    continue;
                }
                (uri, text, Some(version))
            } else {
                let Some(uri) = Uri::from_file_path(&file) else {
                    continue;
                };
                match std::fs::read_to_string(&file) {
                    Ok(text) if text.len() <= MAX_ANALYSED_BYTES => (uri, text, None),
                    _ => continue,
                }
            };
            let settings = self.resolve_settings(Some(&file));
            let text = AnalysedText::new(text);
            let lines = text.lines();
            let enabled = || {
                found
                    .iter()
                    .filter(|found| settings.analyzer.is_enabled(found.rule))
            };
            let silenced: Vec<u32> = enabled()
                .filter(|found| is_suppressed(text.text(), lines, found.line, found.rule))
                .map(|found| found.line)
                .collect();
            let diagnostics: Vec<Finding> = enabled()
                .filter(|found| !is_suppressed(text.text(), lines, found.line, found.rule))
                .map(|found| {
                    if found.declaration_of.is_none() {
                        places.push((shown(&file, root), found.line));
                    }
                    let mut finding =
                        Finding::traced(found, &text, version.unwrap_or(DISK_VERSION));
                    if found.declaration_of.is_some() && !workspace::is_python(&file) {
                        table_fix(&mut finding, found, &settings.entrypoints, &file);
                    }
                    finding
                })
                .collect();
            let shapes = shapes_by_file.remove(&file).unwrap_or_default();
            let label = match &planned.spec.call {
                Some(call) => format!("{}:{}", shown(&planned.path, root), call.line),
                None => shown(&planned.path, root),
            };
            let evidence = Evidence {
                exported,
                lines: passed.remove(&file).unwrap_or_default(),
                label,
                silenced,
            };
            files.insert(
                file,
                FileTrace {
                    uri,
                    version,
                    diagnostics,
                    shapes,
                    evidence,
                },
            );
        }
        places.sort();
        (files, found_message(&places))
    }

    /// The traces a save of `path` asks for, and the configured entrypoints' problems.
    /// Blocking: reads settings and files.
    fn plan_traces(&self, path: &Path, reason: TraceReason) -> Plan {
        let mut plan = Plan::default();
        if !workspace::is_python(path) {
            return plan;
        }
        let settings = self.resolve_settings(Some(path));
        let wanted = match settings.trace {
            TraceMode::Off => false,
            TraceMode::OnSave => reason != TraceReason::Open,
            TraceMode::OnOpenAndSave => true,
        };
        if !wanted {
            return plan;
        }
        let project_dir = settings.project_dir();
        let Some(root) = project_dir
            .clone()
            .or_else(|| self.roots().into_iter().find(|root| path.starts_with(root)))
            .or_else(|| path.parent().map(Path::to_path_buf))
        else {
            return plan;
        };
        if let Some(pyproject) = &settings.project {
            plan.config = Some((
                pyproject.clone(),
                table_problems(&settings, pyproject, &self.workspace),
            ));
        }
        let reached = self.reached_by(path);
        let texts: Vec<(PathBuf, String)> = reached
            .into_iter()
            .filter_map(|file| {
                let text = match self.open_document(&normalized(&file)) {
                    Some((_, text, _)) => text,
                    None => std::fs::read_to_string(&file).ok()?,
                };
                (text.len() <= MAX_ANALYSED_BYTES).then_some((file, text))
            })
            .collect();
        let candidates: Vec<batch::Candidate<'_>> = texts
            .iter()
            .map(|(file, text)| batch::Candidate { path: file, text })
            .collect();
        let options = batch::BatchOptions {
            root: root.clone(),
            cwd: root,
            strict: settings.analyzer.strict,
            timeout: std::time::Duration::try_from_secs_f64(settings.timeout_seconds).unwrap_or(
                std::time::Duration::from_secs_f64(pt2lsp_tracer::DEFAULT_TIMEOUT_SECONDS),
            ),
            memory_limit_mb: settings
                .memory_limit_mb
                .or_else(pt2lsp_tracer::default_memory_limit_mb),
            entrypoints: settings.entrypoint_specs(),
            scripts: batch::ScriptArgs::configured(&settings.entrypoints),
            targets: settings.targets.clone(),
        };
        let cache = (!pt2lsp_tracer::cache::disabled_by_environment()).then(|| {
            crate::trace::Caching {
                cache: pt2lsp_tracer::cache::TraceCache::in_project(
                    &options.root,
                    settings.cache_dir.as_deref(),
                ),
                // "Trace again" means run it, whatever the cache holds.
                replay: reason != TraceReason::Retrace,
            }
        });
        let start_method = settings
            .start_method
            .unwrap_or_else(pt2lsp_tracer::worker::StartMethod::from_environment);
        let planned = batch::plan(&candidates, &options);
        let python = python::interpreter(
            None,
            settings.python.as_deref(),
            project_dir.as_deref(),
            std::env::var_os("VIRTUAL_ENV").as_deref().map(Path::new),
        );
        for job in planned.jobs {
            let priority = if self.open_document(&normalized(&job.spec.file)).is_some() {
                Priority::Foreground
            } else {
                Priority::Background
            };
            plan.traces.push(PlannedTrace {
                path: job.spec.file.clone(),
                spec: job.spec,
                anchor: job.anchor,
                python: python.clone(),
                cache: cache.clone(),
                priority,
                start_method,
            });
        }
        plan
    }

    /// `path` and every workspace file that imports it, directly or through others: the
    /// import graph of the index its analysis reads (`WorkspaceIndex::importing`), so a save
    /// traces the entrypoints whose programs the edit changes, relative imports and packages'
    /// `__init__`s included. A path the scan knows under another spelling is found by its
    /// normalized form.
    fn reached_by(&self, path: &Path) -> Vec<PathBuf> {
        let known = if self.workspace.module_of(path).is_some() {
            path.to_path_buf()
        } else {
            let wanted = normalized(path);
            self.workspace
                .summaries
                .read()
                .ok()
                .and_then(|all| {
                    all.paths
                        .iter()
                        .find(|known| normalized(known) == wanted)
                        .cloned()
                })
                .unwrap_or_else(|| path.to_path_buf())
        };
        self.workspace.importing_files(&known, MAX_REACHED_FILES)
    }
}

impl Session {
    /// Traces the entrypoints that reach `uri`'s file, when its settings say so for `reason`.
    /// Returns at once; the traces run in the background.
    pub fn trace(self: &Arc<Self>, uri: &Uri, reason: TraceReason) {
        let Some(path) = uri.to_file_path().map(std::borrow::Cow::into_owned) else {
            return;
        };
        // The versions the trace's results are for: taken now, before any later edit arrives,
        // since the trace reads the files as saved at this moment.
        let submitted = Arc::new(self.open_versions());
        let session = Arc::clone(self);
        tokio::spawn(async move {
            // A save right after the editor opened the file: the entrypoints that reach it
            // are known once the workspace is indexed.
            let mut scanned = session.scanned.subscribe();
            let _ = scanned.wait_for(|done| *done).await;
            let inputs = session.trace_inputs();
            let plan = tokio::task::spawn_blocking(move || inputs.plan_traces(&path, reason))
                .await
                .unwrap_or_default();
            if let Some((pyproject, problems)) = plan.config {
                let problems =
                    with_table_traces(problems, session.traced_for(&normalized(&pyproject), None));
                if let Some(uri) = Uri::from_file_path(&pyproject) {
                    session.publish(uri, &problems.into(), None).await;
                }
            }
            for planned in plan.traces {
                tokio::spawn(Arc::clone(&session).run_trace(planned, Arc::clone(&submitted)));
            }
        });
    }

    /// Publishes what each project's `pyproject.toml` shows (its tables' problems that need
    /// no run, with what traces found there), whatever the trace setting: `pt2lsp check`
    /// reports them without `--trace`. After each scan and each change to a `pyproject.toml`.
    pub async fn publish_configurations(self: &Arc<Self>) {
        let inputs = self.trace_inputs();
        let found = tokio::task::spawn_blocking(move || inputs.configuration_problems())
            .await
            .unwrap_or_default();
        for (pyproject, problems) in found {
            let shown = with_table_traces(problems, self.traced_for(&normalized(&pyproject), None));
            if let Some(uri) = Uri::from_file_path(&pyproject) {
                self.publish(uri, &shown.into(), None).await;
            }
        }
    }

    /// Claims the next trace of an entrypoint: its results are kept only if no newer one was
    /// claimed meanwhile.
    pub(super) fn claim_trace(&self, key: &EntryKey) -> u64 {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut traces) = self.tracer.entries.lock() {
            traces.entry(key.clone()).or_default().ticket = ticket;
        }
        ticket
    }

    async fn run_trace(
        self: Arc<Self>,
        planned: PlannedTrace,
        submitted: Arc<HashMap<PathBuf, i32>>,
    ) {
        let key = EntryKey::of(&planned);
        let Some(job_uri) = key.job_uri() else {
            return;
        };
        let ticket = self.claim_trace(&key);
        let progress = self.begin_trace_progress(&planned, ticket).await;
        let outcome = self
            .tracer
            .thread
            .submit(
                job_uri,
                (planned.python.clone(), planned.start_method),
                planned.spec.clone(),
                planned.cache.clone(),
                planned.priority,
            )
            .await;
        let message = match outcome {
            Ok(Ok(result)) if result.status == Status::Cancelled => "cancelled".to_owned(),
            Ok(Ok(result)) => {
                self.targets_unavailable(&result).await;
                let inputs = self.trace_inputs();
                let replayed = result.replayed;
                let converted = tokio::task::spawn_blocking(move || {
                    inputs.traced_files(&planned, &result, &submitted)
                })
                .await;
                match converted {
                    Ok((files, message)) => {
                        self.install_trace(key, ticket, files).await;
                        if replayed {
                            format!(
                                "{message} (replayed: its files are unchanged since the last trace)"
                            )
                        } else {
                            message
                        }
                    }
                    Err(error) => format!("failed: {error}"),
                }
            }
            Ok(Err(reason)) => {
                self.tracing_unavailable(&reason).await;
                format!("failed: {reason}")
            }
            Err(_) => {
                let reason = "the tracer stopped".to_owned();
                self.tracing_unavailable(&reason).await;
                format!("failed: {reason}")
            }
        };
        if let Some(progress) = progress {
            progress.finish_with_message(message).await;
        }
    }

    /// The open documents' versions by normalized path, as a trace starts: a file edited before
    /// the trace ends has no trace diagnostics for its new text.
    pub(super) fn open_versions(&self) -> HashMap<PathBuf, i32> {
        self.documents
            .iter()
            .filter_map(|open| Some((open.normalized.clone()?, open.document.version())))
            .collect()
    }

    /// Installs an entrypoint's new trace and publishes every file it or the one before found
    /// problems in; dropped when a newer trace of the entrypoint was asked for meanwhile.
    pub(super) async fn install_trace(
        &self,
        key: EntryKey,
        ticket: u64,
        files: HashMap<PathBuf, FileTrace>,
    ) {
        let _guard = self.publish_lock.lock().await;
        let affected: Vec<(PathBuf, Uri)> = {
            let Ok(mut traces) = self.tracer.entries.lock() else {
                return;
            };
            let entry = traces.entry(key).or_default();
            if entry.ticket != ticket {
                return;
            }
            let old = std::mem::replace(&mut entry.files, files);
            // A file changes when its trace diagnostics do, or, open, when the evidence against
            // its static errors may have (`with_traces`); a closed file shows traced ones only.
            let shown = |file: &PathBuf, trace: &FileTrace| {
                !trace.diagnostics.is_empty() || self.is_open_file(file)
            };
            let mut affected: BTreeMap<PathBuf, Uri> = old
                .into_iter()
                .filter(|(file, trace)| shown(file, trace))
                .map(|(file, trace)| (file, trace.uri))
                .collect();
            for (file, trace) in &entry.files {
                if shown(file, trace) {
                    affected.insert(file.clone(), trace.uri.clone());
                }
            }
            affected.into_iter().collect()
        };
        for (file, uri) in affected {
            self.republish(&file, uri).await;
        }
        self.refresh_pulled_diagnostics();
        self.refresh_inlay_hints();
    }

    /// The exported program's shapes in a file for a version (`None`: the file as it is on
    /// disk), by 1-based line, from every entrypoint (the first, in key order, per line).
    pub(super) fn traced_shapes(
        &self,
        file: &Path,
        version: Option<i32>,
    ) -> HashMap<u32, Vec<String>> {
        let mut out = HashMap::new();
        self.each_trace_of(file, version, |trace| {
            for (line, shapes) in &trace.shapes {
                out.entry(*line).or_insert_with(|| shapes.clone());
            }
        });
        out
    }

    /// Publishes one file again with the trace diagnostics it has now. The caller holds
    /// `publish_lock`.
    async fn republish(&self, file: &Path, uri: Uri) {
        let open = self.documents.iter().find_map(|open| {
            (open.normalized.as_deref() == Some(file)).then(|| {
                (
                    open.key().clone(),
                    open.document.version(),
                    open.statics.clone(),
                )
            })
        });
        match open {
            Some((uri, version, Some((static_version, statics)))) if static_version == version => {
                let merged = self.with_traces(Some(file), Some(version), &statics);
                self.publish(uri, &merged, Some(version)).await;
            }
            // The analysis of this version has not published yet; it merges them when it does.
            Some(_) => {}
            None if file
                .file_name()
                .is_some_and(|name| name == "pyproject.toml") =>
            {
                let shown = self.pyproject_findings(file);
                self.publish(uri, &shown.into(), None).await;
            }
            None => {
                let traced = self.traced_for(file, None);
                self.publish(uri, &traced.into(), None).await;
            }
        }
    }

    /// What a `pyproject.toml` shows: the problems of its entrypoint tables' strings
    /// ([`table_problems`]) and what the traces found on its lines (a string the worker could
    /// not evaluate, on its key's line). Blocking: reads the file.
    fn pyproject_findings(&self, pyproject: &Path) -> Vec<Finding> {
        let statics = table_problems(
            &self.resolve_settings(Some(pyproject)),
            pyproject,
            &self.workspace,
        );
        with_table_traces(statics, self.traced_for(&normalized(pyproject), None))
    }

    /// The static diagnostics of `file` at `version` with its trace diagnostics merged in
    /// (`diagnostics::merge`), less the static errors that an export which succeeded
    /// contradicts (`tracer::ground_truth`), as `check --trace` reports them.
    pub(super) fn with_traces(
        &self,
        file: Option<&Path>,
        version: Option<i32>,
        statics: &Findings,
    ) -> Findings {
        let (unproven, statics_items): (Vec<Finding>, Vec<Finding>) = statics
            .items
            .iter()
            .cloned()
            .partition(|finding| finding.unproven);
        let too_large = statics.too_large;
        let (unproven, statics) = (unproven, statics_items);
        let Some(file) = file else {
            return Findings {
                items: statics,
                too_large,
            };
        };
        let mut truth = pt2lsp_tracer::ground_truth::GroundTruth::default();
        let mut traced_any = false;
        let mut silenced = HashSet::new();
        self.each_trace_of(file, version, |trace| {
            traced_any = true;
            let evidence = &trace.evidence;
            truth.add_file(file, evidence.exported, &evidence.lines, &evidence.label);
            silenced.extend(evidence.silenced.iter().copied());
        });
        let traced = self.traced_for(file, version);
        let mut merged = diagnostics::merge(&statics, &traced);
        // A static guess the target's own lowering states on the same line goes.
        merged.retain(|found| {
            found.is_traced()
                || !traced.iter().any(|lowered| {
                    lowered.line() == found.line()
                        && pt2lsp_tracer::diagnostics::superseded_by_lowering(
                            found.diagnostic().rule.code(),
                            &found.diagnostic().message,
                            lowered.diagnostic().rule.code(),
                            &lowered.diagnostic().message,
                        )
                })
        });
        // What holds where an export that succeeded ran the line, as `check --trace` adds it.
        merged.extend(unproven.into_iter().filter(|finding| {
            let line = finding.line() + 1;
            traced_any && truth.ran_and_succeeded(file, line) && !silenced.contains(&line)
        }));
        if traced_any {
            merged.retain(|finding| {
                let base = file.parent().unwrap_or(file);
                let contradicted = !finding.is_traced()
                    && !finding.is_confirmed()
                    && truth
                        .contradicts_static(file, finding.line() + 1, finding.diagnostic(), base)
                        .is_some();
                !contradicted
            });
        }
        Findings {
            items: merged,
            too_large,
        }
    }

    /// The trace findings of a file for a version (`None`: the file as it is on disk), from
    /// every entrypoint, one per (code, line).
    pub(super) fn traced_for(&self, file: &Path, version: Option<i32>) -> Vec<Finding> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        self.each_trace_of(file, version, |trace| {
            for finding in &trace.diagnostics {
                if seen.insert((finding.diagnostic().rule, finding.line())) {
                    out.push(finding.clone());
                }
            }
        });
        out
    }

    /// Calls `visit` with each entrypoint's trace of `file` read against `version` (`None`: the
    /// file on disk), in entrypoint key order.
    fn each_trace_of(&self, file: &Path, version: Option<i32>, mut visit: impl FnMut(&FileTrace)) {
        let Ok(traces) = self.tracer.entries.lock() else {
            return;
        };
        let mut keys: Vec<&EntryKey> = traces.keys().collect();
        keys.sort();
        for key in keys {
            if let Some(trace) = traces[key].files.get(file) {
                if trace.version == version {
                    visit(trace);
                }
            }
        }
    }

    /// A file was opened: trace diagnostics read from its text on disk are now those of this
    /// version (the editor opened what is on disk).
    pub(super) fn adopt_traces(&self, file: &Path, version: i32) {
        let Ok(mut traces) = self.tracer.entries.lock() else {
            return;
        };
        for trace in traces.values_mut() {
            if let Some(found) = trace.files.get_mut(file) {
                if found.version.is_none() {
                    found.version = Some(version);
                    restamp(&mut found.diagnostics, version);
                }
            }
        }
    }

    /// A file was closed at `version`: its trace diagnostics for that version stay, as the
    /// file's on disk (where they were found); those of older versions are dropped.
    pub(super) fn release_traces(&self, file: &Path, version: i32) {
        let Ok(mut traces) = self.tracer.entries.lock() else {
            return;
        };
        for trace in traces.values_mut() {
            let keep = trace
                .files
                .get(file)
                .map(|found| found.version == Some(version));
            match keep {
                Some(true) => {
                    if let Some(found) = trace.files.get_mut(file) {
                        found.version = None;
                        restamp(&mut found.diagnostics, DISK_VERSION);
                    }
                }
                Some(false) => {
                    trace.files.remove(file);
                }
                None => {}
            }
        }
    }

    pub(super) async fn begin_trace_progress(
        &self,
        planned: &PlannedTrace,
        ticket: u64,
    ) -> Option<
        tower_lsp_server::OngoingProgress<
            tower_lsp_server::Unbounded,
            tower_lsp_server::NotCancellable,
        >,
    > {
        if !self.flags().work_done_progress {
            return None;
        }
        let token = lsp::NumberOrString::String(format!("pt2lsp/trace/{ticket}"));
        self.client
            .create_work_done_progress(token.clone())
            .await
            .ok()?;
        let mut name = planned
            .path
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
        if let Some(entry) = &planned.spec.entrypoint {
            name = format!(
                "{name} ({})",
                entry.name.clone().unwrap_or_else(|| entry.model.clone())
            );
        }
        Some(
            self.client
                .progress(token, format!("Tracing {name}"))
                .begin()
                .await,
        )
    }

    /// A missing interpreter or torch: one warning per session, static diagnostics only.
    pub(super) async fn tracing_unavailable(&self, reason: &str) {
        let message =
            format!("pt2lsp: tracing is unavailable, showing static analysis only: {reason}");
        self.log(MessageType::WARNING, message.clone());
        if !self.tracer.unavailable_said.swap(true, Ordering::SeqCst) {
            self.client
                .show_message(MessageType::WARNING, message)
                .await;
        }
    }

    /// A deployment target the job could not lower for (its package missing, built for another
    /// torch, a tool absent): one `window/showMessage` warning per target and reason for the
    /// session, as the CLI says it once per run, however many entrypoints name the target; the
    /// log has it after every trace. Not a diagnostic: the cause is the interpreter's
    /// environment, not a line, and the target may come from the editor's settings, which
    /// have no line.
    async fn targets_unavailable(&self, result: &JobResult) {
        let mut notes = UnavailableTargets::default();
        notes.add(result);
        for note in notes.messages() {
            let message = format!("pt2lsp: {note}; the export's own findings are shown");
            self.log(MessageType::INFO, message.clone());
            let new = self
                .tracer
                .targets_said
                .lock()
                .is_ok_and(|mut warned| warned.insert(note));
            if new {
                self.client
                    .show_message(MessageType::WARNING, message)
                    .await;
            }
        }
    }
}

/// Sets the document version a trace finding's edits refer to.
fn restamp(found: &mut [Finding], version: i32) {
    for finding in found {
        finding.version = version;
    }
}

/// A file as the progress message names it: relative to the trace's root when under it.
fn shown(file: &Path, root: Option<&Path>) -> String {
    let relative = root
        .and_then(|root| file.strip_prefix(normalized(root)).ok())
        .unwrap_or(file);
    relative.to_string_lossy().replace('\\', "/")
}

/// `no problems`, or `2 problems: mymodels/helpers.py:5, mymodels/heads.py:11` (the first
/// few places, then how many more).
pub fn found_message(places: &[(String, u32)]) -> String {
    if places.is_empty() {
        return "no problems".to_owned();
    }
    let count = places.len();
    let mut listed: Vec<String> = places
        .iter()
        .take(MAX_LISTED)
        .map(|(file, line)| format!("{file}:{line}"))
        .collect();
    if count > MAX_LISTED {
        listed.push(format!("and {} more", count - MAX_LISTED));
    }
    format!(
        "{count} problem{}: {}",
        if count == 1 { "" } else { "s" },
        listed.join(", ")
    )
}

/// torch's fix of a `Dim` written inside an entrypoint table's string, on the companion that
/// stands on the table's `dynamic-shapes` line of `file` (the configuration): made on the
/// table's module, whose lines and columns are the string's, and carried to where the `Dim`
/// is written, as `pt2lsp check --trace` carries it; no fix when it cannot be placed exactly.
fn table_fix(
    finding: &mut Finding,
    found: &pt2lsp_tracer::TraceDiagnostic,
    entries: &[config::Entrypoint],
    file: &Path,
) {
    let tables = pt2lsp_project::table_programs::table_programs(entries);
    let Some(table) = tables.iter().find(|table| {
        normalized(&table.path) == file && table.place.keys.values().any(|at| *at == found.line)
    }) else {
        return;
    };
    let fix = found
        .dim_fix(&table.text)
        .and_then(|fix| table.fix_in_configuration(finding.text.text(), &fix));
    let diagnostic = &mut finding.reported.diagnostic;
    if let Some(edit) = fix.as_ref().and_then(|fix| fix.edits.first()) {
        diagnostic.range = edit.range;
    }
    diagnostic.fix = fix;
}

/// PT503 for each problem of the configured entrypoints' strings that can be judged without
/// running anything (`pt2lsp_project::table_problems`, the function `pt2lsp check` asks too),
/// on its line in `pyproject.toml`. The modules are looked for in the project under `root` and
/// in the libraries of `python`, the interpreter the tracer runs.
pub fn entrypoint_problems(
    pyproject: &Path,
    entries: &[config::Entrypoint],
    root: &Path,
    python: &Path,
) -> Vec<Finding> {
    if entries.is_empty() {
        return Vec::new();
    }
    let Ok(text) = std::fs::read_to_string(pyproject) else {
        return Vec::new();
    };
    let modules = ModuleSearch::new(root, python);
    let analysed = AnalysedText::new(text.clone());
    table_problems::table_problems(&text, entries, &modules)
        .into_iter()
        .map(|diagnostic| Finding::found_statically(diagnostic, &analysed, DISK_VERSION))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_message_says_what_was_found_where() {
        assert_eq!(found_message(&[]), "no problems");
        let places = [
            ("mymodels/heads.py".to_owned(), 11),
            ("mymodels/helpers.py".to_owned(), 5),
        ];
        assert_eq!(
            found_message(&places),
            "2 problems: mymodels/heads.py:11, mymodels/helpers.py:5"
        );
        let many: Vec<(String, u32)> = (1..=7).map(|line| ("m.py".to_owned(), line)).collect();
        assert_eq!(
            found_message(&many),
            "7 problems: m.py:1, m.py:2, m.py:3, m.py:4, m.py:5, and 2 more"
        );
    }

    #[test]
    fn bad_entrypoint_strings_are_pt503_on_their_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("models")).unwrap();
        std::fs::write(dir.path().join("models/encoder.py"), "").unwrap();
        // An environment with no libraries: a module missing from the project is missing.
        let python = dir.path().join("venv/bin/python");
        std::fs::create_dir_all(dir.path().join("venv/lib/python3.12/site-packages")).unwrap();
        std::fs::create_dir_all(python.parent().unwrap()).unwrap();
        std::fs::write(&python, "").unwrap();
        let pyproject = dir.path().join("pyproject.toml");
        let text = "[project]\nname = \"x\"\n\n[tool.pt2lsp]\ntrace = \"on-save\"\n\n[[tool.pt2lsp.entrypoints]]\nname = \"good\"\nmodel = \"models.encoder:build()\"\n\n[[tool.pt2lsp.entrypoints]]\nname = \"typo\"\nmodel = \"models.encodr:build()\"\nexample_args = \"models.encoder\"\n\n[[tool.pt2lsp.entrypoints]]\nname = \"empty\"\n";
        std::fs::write(&pyproject, text).unwrap();
        let config = config::load(&pyproject).unwrap();
        let entries = config.entrypoints.unwrap();
        let found = diagnostics::to_protocol(
            &entrypoint_problems(&pyproject, &entries, dir.path(), &python).into(),
            Some(&diagnostics::NoTexts),
        );
        let lines: Vec<(u32, bool)> = found
            .iter()
            .map(|d| {
                (
                    d.range.start.line,
                    d.code == Some(lsp::NumberOrString::String("PT503".to_owned())),
                )
            })
            .collect();
        assert_eq!(lines, [(12, true), (13, true), (15, true)], "{found:#?}");
        assert!(
            found[0].message.contains("models.encodr"),
            "{}",
            found[0].message
        );
        assert!(
            found[1].message.contains("module:expression"),
            "{}",
            found[1].message
        );
        assert!(
            found[2].message.contains("no `model`"),
            "{}",
            found[2].message
        );
    }
}
