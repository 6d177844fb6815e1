//! The server's state: open documents, settings, the workspace index, and analysis scheduling.
//!
//! tower-lsp starts handlers in arrival order but runs them concurrently, so document edits are
//! applied synchronously in the notification handler, before its first `.await`, and never
//! from a spawned task.
//!
//! Analysis starts at once, without a debounce: the static pass of even a 4,000-line file takes
//! milliseconds, less than a keystroke apart. Each document has at most one analysis running,
//! on tokio's blocking pool. Every reason to analyse (an edit, new settings, a new index) takes
//! a ticket from one counter and stores it in the document; an edit that arrives while an
//! analysis runs only does that. When the analysis ends, its result is published if its ticket
//! is still the document's; otherwise it is dropped and the same task analyses the newest text
//! at once. So a burst of edits costs at most one stale analysis, the last version is always
//! published, and results never overtake each other (rust-analyzer and biome drop stale
//! results the same way).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use dashmap::DashMap;
use pt2lsp_analyzer::{ModuleSummary, Report, SourceFile, WorkspaceIndex, check_file};
use ropey::Rope;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{self as lsp, ClientCapabilities, MessageType, Uri};

mod export;
mod traces;

pub use export::ExportRequest;
pub use traces::TraceReason;

use super::diagnostics;
use super::document::{Document, TextPositions};
use super::settings::{self, Project, Resolved};
use super::trace::TraceThread;
use super::workspace::{self, Scope};
use crate::cli::config::Config;
use crate::tracer::diagnostics::{Anchor, normalized};

/// Documents larger than this are not analysed; the client is told once, on stderr and in its
/// log. Far beyond any hand-written model file, far below the analyzer's 4 GiB offset limit.
pub const MAX_ANALYSED_BYTES: usize = 16 * 1024 * 1024;

/// Files summarised per step of a workspace scan: small enough for steady progress reports and
/// for a newer scan to stop an older one soon, large enough to keep the scan threads busy.
const SCAN_CHUNK: usize = 256;

/// What the client said it can do, read once from `initialize`.
// Independent yes/no capabilities of the client; an enum or bitset would only obscure them.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientFlags {
    pub dynamic_watchers: bool,
    pub work_done_progress: bool,
    pub document_changes: bool,
    pub pull_configuration: bool,
    /// `textDocument.publishDiagnostics.relatedInformation`: related places are sent only to a
    /// client that shows them.
    pub related_information: bool,
    /// `workspace.diagnostics.refreshSupport`: a client that pulls diagnostics is told to pull
    /// again when trace results arrive.
    pub diagnostic_refresh: bool,
}

impl ClientFlags {
    pub fn new(capabilities: &ClientCapabilities) -> Self {
        let workspace = capabilities.workspace.as_ref();
        Self {
            dynamic_watchers: workspace
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|w| w.dynamic_registration)
                .unwrap_or(false),
            work_done_progress: capabilities
                .window
                .as_ref()
                .and_then(|w| w.work_done_progress)
                .unwrap_or(false),
            document_changes: workspace
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|w| w.document_changes)
                .unwrap_or(false),
            pull_configuration: workspace.and_then(|w| w.configuration).unwrap_or(false),
            related_information: capabilities
                .text_document
                .as_ref()
                .and_then(|t| t.publish_diagnostics.as_ref())
                .and_then(|p| p.related_information)
                .unwrap_or(false),
            diagnostic_refresh: workspace
                .and_then(|w| w.diagnostics.as_ref())
                .and_then(|d| d.refresh_support)
                .unwrap_or(false),
        }
    }
}

/// An open document and its analysis bookkeeping.
#[derive(Debug)]
pub struct OpenDocument {
    pub document: Document,
    /// The file behind a `file:` URI; `None` for unsaved buffers.
    pub path: Option<PathBuf>,
    /// `path` as the file system resolves it, to match the tracer's files.
    normalized: Option<PathBuf>,
    /// The ticket of the newest reason to analyse this document.
    ticket: u64,
    /// The ticket that started the analysis task now running for this document, if any. A task
    /// whose ticket is no longer here (the document was closed and reopened) stops.
    runner: Option<u64>,
    /// The static diagnostics last published and the version they are for. Trace diagnostics
    /// (kept per entrypoint in [`traces`]) of the same version are merged into every
    /// publication; those of another version are stale, so an edit publishes static
    /// diagnostics only until the next trace.
    statics: Option<(i32, Arc<Vec<lsp::Diagnostic>>)>,
}

/// What one analysis works on: a copy of the document as it was when the analysis started.
struct Snapshot {
    rope: Rope,
    version: i32,
    path: Option<PathBuf>,
    ticket: u64,
}

/// An entrypoint's trace, planned: the job and what its results are read against.
#[derive(Clone)]
pub struct PlannedTrace {
    spec: crate::tracer::JobSpec,
    anchor: Anchor,
    python: PathBuf,
    path: PathBuf,
}

/// The summaries of the workspace's files, sorted by path so that the index never depends on
/// the order files were scanned in, and kept in one vector so the index is built from them
/// without a copy.
#[derive(Debug, Default)]
struct Summaries {
    paths: Vec<PathBuf>,
    summaries: Vec<ModuleSummary>,
}

impl Summaries {
    /// Inserts or replaces one file's summary; true when it changed.
    fn insert(&mut self, path: PathBuf, summary: ModuleSummary) -> bool {
        match self.paths.binary_search(&path) {
            Ok(at) if self.summaries[at] == summary => false,
            Ok(at) => {
                self.summaries[at] = summary;
                true
            }
            Err(at) => {
                self.paths.insert(at, path);
                self.summaries.insert(at, summary);
                true
            }
        }
    }

    fn remove(&mut self, path: &Path) -> bool {
        let Ok(at) = self
            .paths
            .binary_search_by(|probe| probe.as_path().cmp(path))
        else {
            return false;
        };
        self.paths.remove(at);
        self.summaries.remove(at);
        true
    }

    fn retain(&mut self, mut keep: impl FnMut(&Path) -> bool) {
        let mut index = 0;
        let paths = &self.paths;
        self.summaries.retain(|_| {
            index += 1;
            keep(&paths[index - 1])
        });
        self.paths.retain(|path| keep(path));
        self.paths.shrink_to_fit();
        self.summaries.shrink_to_fit();
    }
}

/// Other workspace files' texts for whole-program analysis, read from disk when an
/// entrypoint's analysis follows a call into them.
struct DiskSources(std::collections::HashMap<String, PathBuf>);

impl DiskSources {
    fn new(paths: &[PathBuf], summaries: &[ModuleSummary]) -> Self {
        Self(
            paths
                .iter()
                .zip(summaries)
                .filter(|(_, summary)| !summary.module.is_empty())
                .map(|(path, summary)| (summary.module.clone(), path.clone()))
                .collect(),
        )
    }
}

impl pt2lsp_analyzer::WorkspaceSources for DiskSources {
    fn source(&self, module: &str) -> Option<pt2lsp_analyzer::ModuleSource> {
        let path = self.0.get(module)?;
        let text = std::fs::read_to_string(path).ok()?;
        Some(pt2lsp_analyzer::ModuleSource {
            text: Arc::from(text),
            is_package: path.file_stem().is_some_and(|stem| stem == "__init__"),
            path: path.clone(),
        })
    }
}

/// Shared by every handler through an `Arc`.
#[derive(Debug)]
pub struct Session {
    pub client: Client,
    pub documents: DashMap<Uri, OpenDocument>,
    flags: OnceLock<ClientFlags>,
    editor: RwLock<Config>,
    projects: DashMap<PathBuf, Option<Arc<Project>>>,
    roots: RwLock<Vec<PathBuf>>,
    /// What each root's project excludes, as of the last scan of that root.
    scopes: RwLock<Vec<Scope>>,
    summaries: RwLock<Summaries>,
    /// The index and the number of the rebuild that made it; a slower, older rebuild never
    /// replaces a newer index.
    index: RwLock<(u64, Arc<WorkspaceIndex>)>,
    index_builds: AtomicU64,
    next_ticket: AtomicU64,
    /// Held while checking a ticket and sending its diagnostics, so two publications for one
    /// document can never overtake each other on the way out.
    publish_lock: tokio::sync::Mutex<()>,
    /// Bumped by every workspace scan, so an older scan that finishes late is dropped.
    scan_generation: AtomicU64,
    pub shutdown_requested: Arc<AtomicBool>,
    /// The thread that owns the tracer, started with the first trace.
    tracing: TraceThread,
    /// Whether the user was told that tracing is unavailable (once per session).
    trace_warned: AtomicBool,
    /// Each entrypoint's last trace, by file. Never held while waiting for `documents`.
    traces: Mutex<HashMap<traces::EntryKey, traces::EntryTrace>>,
}

impl Session {
    pub fn new(client: Client, shutdown_requested: Arc<AtomicBool>) -> Self {
        Self {
            client,
            documents: DashMap::new(),
            flags: OnceLock::new(),
            editor: RwLock::new(Config::default()),
            projects: DashMap::new(),
            roots: RwLock::new(Vec::new()),
            scopes: RwLock::new(Vec::new()),
            summaries: RwLock::new(Summaries::default()),
            index: RwLock::new((0, Arc::new(WorkspaceIndex::default()))),
            index_builds: AtomicU64::new(0),
            next_ticket: AtomicU64::new(1),
            publish_lock: tokio::sync::Mutex::new(()),
            scan_generation: AtomicU64::new(0),
            shutdown_requested,
            tracing: TraceThread::default(),
            trace_warned: AtomicBool::new(false),
            traces: Mutex::new(HashMap::new()),
        }
    }

    pub fn flags(&self) -> ClientFlags {
        self.flags.get().copied().unwrap_or_default()
    }

    pub fn set_flags(&self, flags: ClientFlags) {
        let _ = self.flags.set(flags);
    }

    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots
            .read()
            .map(|roots| roots.clone())
            .unwrap_or_default()
    }

    pub fn set_roots(&self, roots: Vec<PathBuf>) {
        if let Ok(mut current) = self.roots.write() {
            *current = roots;
        }
    }

    /// Replaces the editor's settings layer; returns the warnings to show.
    pub fn set_editor_options(&self, value: &serde_json::Value) -> Vec<String> {
        let (options, warnings) = settings::from_editor(value);
        if let Ok(mut editor) = self.editor.write() {
            *editor = options;
        }
        warnings
    }

    /// Forgets every project's settings; the next analysis reads `pyproject.toml` again.
    pub fn forget_projects(&self) {
        self.projects.clear();
    }

    fn project(&self, dir: &Path) -> Option<Arc<Project>> {
        let mut warnings = Vec::new();
        let project = settings::find_project(dir, &self.projects, &mut |w| warnings.push(w));
        for warning in warnings {
            self.log(MessageType::WARNING, warning);
        }
        project
    }

    /// The settings for a file: the editor's over its project's. Must run off the reactor: the
    /// first look-up in a directory reads files.
    pub fn resolve_settings(&self, path: Option<&Path>) -> Resolved {
        let project = path
            .and_then(Path::parent)
            .and_then(|dir| self.project(dir));
        let editor = self
            .editor
            .read()
            .map(|editor| editor.clone())
            .unwrap_or_default();
        let options = match &project {
            Some(project) => editor.or(&project.options),
            None => editor,
        };
        Resolved {
            project: project.map(|project| project.pyproject.clone()),
            ..Resolved::new(&options)
        }
    }

    pub fn index(&self) -> Arc<WorkspaceIndex> {
        self.index
            .read()
            .map(|index| Arc::clone(&index.1))
            .unwrap_or_default()
    }

    /// A line in the client's log, from any thread; warnings and errors also go to stderr,
    /// which some clients (Neovim) log as errors whatever it says.
    pub fn log(&self, kind: MessageType, message: String) {
        if kind == MessageType::WARNING || kind == MessageType::ERROR {
            super::log_stderr(&message);
        }
        let client = self.client.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { client.log_message(kind, message).await });
        }
    }

    /// Opens (or reopens) a document. Synchronous: see the module docs. Trace diagnostics
    /// found in the file while it was closed become this version's.
    pub fn open(&self, uri: Uri, text: &str, version: i32) {
        let path = uri.to_file_path().map(std::borrow::Cow::into_owned);
        let normalized = path.as_deref().map(normalized);
        if let Some(file) = &normalized {
            self.adopt_traces(file, version);
        }
        self.documents.insert(
            uri,
            OpenDocument {
                document: Document::new(text, version),
                path,
                normalized,
                ticket: 0,
                runner: None,
                statics: None,
            },
        );
    }

    /// Forgets a closed document; false when it was not open. Its trace diagnostics stay,
    /// as the file's on disk, and [`Session::clear`] publishes them.
    pub fn close(&self, uri: &Uri) -> bool {
        let Some((_, open)) = self.documents.remove(uri) else {
            return false;
        };
        if let Some(file) = &open.normalized {
            self.release_traces(file, open.document.version());
        }
        true
    }

    /// Asks for an analysis of `uri`'s current text: starts one now, or, when one is running,
    /// leaves it to that one's task to analyse again when it ends. Synchronous up to the spawn,
    /// so callers keep their ordering guarantees.
    pub fn schedule(self: &Arc<Self>, uri: Uri) {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        {
            let Some(mut open) = self.documents.get_mut(&uri) else {
                return;
            };
            open.ticket = ticket;
            if open.runner.is_some() {
                return;
            }
            open.runner = Some(ticket);
        }
        let session = Arc::clone(self);
        tokio::spawn(async move { session.analyse(uri, ticket).await });
    }

    /// Re-analyses every open document, after a settings or index change.
    pub fn schedule_all(self: &Arc<Self>) {
        let uris: Vec<Uri> = self
            .documents
            .iter()
            .map(|entry| entry.key().clone())
            .collect();
        for uri in uris {
            self.schedule(uri);
        }
    }

    fn is_current(&self, uri: &Uri, ticket: u64) -> bool {
        self.documents
            .get(uri)
            .is_some_and(|open| open.ticket == ticket)
    }

    /// The analysis task of one document: analyses its newest text until a result is still
    /// current when it is ready, publishes that one and ends.
    async fn analyse(self: Arc<Self>, uri: Uri, runner: u64) {
        loop {
            let Some(snapshot) = self.documents.get(&uri).and_then(|open| {
                (open.runner == Some(runner)).then(|| Snapshot {
                    rope: open.document.rope().clone(),
                    version: open.document.version(),
                    path: open.path.clone(),
                    ticket: open.ticket,
                })
            }) else {
                return;
            };
            let (version, ticket) = (snapshot.version, snapshot.ticket);
            let session = Arc::clone(&self);
            let analysed_uri = uri.clone();
            let outcome =
                tokio::task::spawn_blocking(move || session.diagnose(&analysed_uri, snapshot))
                    .await;
            let _guard = self.publish_lock.lock().await;
            let mut merged = Vec::new();
            {
                let Some(mut open) = self.documents.get_mut(&uri) else {
                    return;
                };
                if open.runner != Some(runner) {
                    return;
                }
                if open.ticket != ticket {
                    // Stale: the document changed meanwhile. Analyse the newest text now.
                    continue;
                }
                open.runner = None;
                match &outcome {
                    Ok(Some(lsp)) => {
                        let statics = Arc::new(lsp.clone());
                        let traced = open
                            .normalized
                            .as_deref()
                            .map(|file| self.traced_for(file, Some(version)))
                            .unwrap_or_default();
                        merged = diagnostics::merge(&statics, &traced);
                        open.statics = Some((version, statics));
                    }
                    Ok(None) => return,
                    Err(_) => {}
                }
            }
            match outcome {
                Ok(Some(_)) => {
                    self.publish(uri, merged, Some(version)).await;
                }
                Ok(None) => {}
                Err(error) => self.log(
                    MessageType::ERROR,
                    format!("{}: analysis failed: {error}", uri.as_str()),
                ),
            }
            return;
        }
    }

    /// Analyses one snapshot and converts the result for the protocol. Blocking. `None` when
    /// the snapshot is already stale, which spares the work.
    fn diagnose(&self, uri: &Uri, snapshot: Snapshot) -> Option<Vec<lsp::Diagnostic>> {
        if !self.is_current(uri, snapshot.ticket) {
            return None;
        }
        let text = snapshot.rope.to_string();
        drop(snapshot.rope);
        Some(self.analyse_text(uri, &text, snapshot.path.as_deref(), snapshot.version))
    }

    /// The static diagnostics of one text, for the protocol. Blocking.
    fn analyse_text(
        &self,
        uri: &Uri,
        text: &str,
        path: Option<&Path>,
        version: i32,
    ) -> Vec<lsp::Diagnostic> {
        if text.len() > MAX_ANALYSED_BYTES {
            self.log(
                MessageType::WARNING,
                format!(
                    "{}: {} bytes, too large to analyse",
                    uri.as_str(),
                    text.len()
                ),
            );
            return Vec::new();
        }
        let settings = self.resolve_settings(path);
        let report = self.check(text, path, &settings);
        let positions = TextPositions::new(text);
        report
            .diagnostics
            .iter()
            .map(|d| diagnostics::to_lsp(d, &positions, version))
            .collect()
    }

    /// Runs the analyzer on one text. Blocking.
    pub fn check(&self, text: &str, path: Option<&Path>, settings: &Resolved) -> Report {
        let place = path
            .filter(|path| workspace::is_python(path))
            .and_then(workspace::module_place);
        let file = SourceFile {
            text,
            module: place.as_ref().map(|place| place.module.as_str()),
            is_package: place.as_ref().is_some_and(|place| place.is_package),
        };
        check_file(file, &settings.analyzer, &self.index())
    }

    /// What is published for an open document now: its static diagnostics of the current
    /// version merged with the trace diagnostics of that version. `None` when the document is
    /// not open; empty before its first analysis ends.
    pub fn current_diagnostics(&self, uri: &Uri) -> Option<Vec<lsp::Diagnostic>> {
        let (version, statics, file) = self.documents.get(uri).map(|open| {
            (
                open.document.version(),
                open.statics.clone(),
                open.normalized.clone(),
            )
        })?;
        let Some((static_version, statics)) = statics.filter(|(at, _)| *at == version) else {
            return Some(Vec::new());
        };
        let traced = file
            .map(|file| self.traced_for(&file, Some(static_version)))
            .unwrap_or_default();
        Some(diagnostics::merge(&statics, &traced))
    }

    /// The outline of an open document, with its text (the outline's offsets are into it) and
    /// its settings. Blocking: parses the document. `None` when it is not open.
    pub fn outline(
        &self,
        uri: &Uri,
    ) -> Option<(String, Vec<pt2lsp_analyzer::OutlineSymbol>, Resolved)> {
        let (text, path) = self
            .documents
            .get(uri)
            .map(|open| (open.document.text(), open.path.clone()))?;
        if text.len() > MAX_ANALYSED_BYTES {
            return None;
        }
        let place = path
            .as_deref()
            .filter(|path| workspace::is_python(path))
            .and_then(workspace::module_place);
        let file = SourceFile {
            text: &text,
            module: place.as_ref().map(|place| place.module.as_str()),
            is_package: place.as_ref().is_some_and(|place| place.is_package),
        };
        let symbols = pt2lsp_analyzer::outline(file, &self.index());
        let settings = self.resolve_settings(path.as_deref());
        Some((text, symbols, settings))
    }

    /// What `textDocument/diagnostic` answers: what is pushed for the document's current
    /// version. When its analysis has not ended yet, the pull does not wait for it: it analyses
    /// the same text itself, so the answer is never an empty list that only means "not yet".
    /// `None` when the document is not open.
    pub async fn pulled_diagnostics(self: &Arc<Self>, uri: &Uri) -> Option<Vec<lsp::Diagnostic>> {
        let (version, statics, file, rope, path) = self.documents.get(uri).map(|open| {
            (
                open.document.version(),
                open.statics.clone(),
                open.normalized.clone(),
                open.document.rope().clone(),
                open.path.clone(),
            )
        })?;
        let statics = if let Some((_, statics)) = statics.filter(|(at, _)| *at == version) {
            statics.as_ref().clone()
        } else {
            let session = Arc::clone(self);
            let uri = uri.clone();
            tokio::task::spawn_blocking(move || {
                session.analyse_text(&uri, &rope.to_string(), path.as_deref(), version)
            })
            .await
            .ok()?
        };
        let traced = file
            .map(|file| self.traced_for(&file, Some(version)))
            .unwrap_or_default();
        let mut merged = diagnostics::merge(&statics, &traced);
        if !self.flags().related_information {
            for diagnostic in &mut merged {
                diagnostic.related_information = None;
            }
        }
        Some(merged)
    }

    /// Tells a client that pulls diagnostics to pull them again (new trace results). Returns
    /// at once; the client's answer is not waited for.
    pub fn refresh_pulled_diagnostics(&self) {
        if !self.flags().diagnostic_refresh {
            return;
        }
        let client = self.client.clone();
        tokio::spawn(async move {
            if let Err(error) = client.workspace_diagnostic_refresh().await {
                super::log_stderr(&format!("workspace/diagnostic/refresh failed: {error}"));
            }
        });
    }

    /// Sends a file's diagnostics; related places only to a client that shows them.
    pub async fn publish(
        &self,
        uri: Uri,
        mut diagnostics: Vec<lsp::Diagnostic>,
        version: Option<i32>,
    ) {
        if !self.flags().related_information {
            for diagnostic in &mut diagnostics {
                diagnostic.related_information = None;
            }
        }
        self.client
            .publish_diagnostics(uri, diagnostics, version)
            .await;
    }

    /// Clears a closed document's diagnostics, after any publication already under way, but
    /// for the trace diagnostics of the file as it is on disk.
    pub async fn clear(&self, uri: Uri) {
        let _guard = self.publish_lock.lock().await;
        if !self.documents.contains_key(&uri) {
            let traced = uri
                .to_file_path()
                .map(|path| self.traced_for(&normalized(&path), None))
                .unwrap_or_default();
            self.publish(uri, traced, None).await;
        }
    }

    /// The scope of each root: what its project excludes. Blocking: reads `pyproject.toml`s.
    fn scopes_of(&self, roots: &[PathBuf]) -> Vec<Scope> {
        roots
            .iter()
            .map(|root| {
                let project = self.project(root);
                let mut warnings = Vec::new();
                let scope = Scope::new(root, project.as_deref(), &mut |w| warnings.push(w));
                for warning in warnings {
                    self.log(MessageType::WARNING, warning);
                }
                scope
            })
            .collect()
    }

    /// Whether a file lies in an excluded part of a workspace root, so the index leaves it out.
    pub fn is_excluded(&self, path: &Path) -> bool {
        self.scopes
            .read()
            .is_ok_and(|scopes| scopes.iter().any(|scope| scope.excludes(path)))
    }

    /// Whether a changed `pyproject.toml` changed what the scan excludes. Blocking.
    pub fn scopes_changed(&self) -> bool {
        let roots = self.roots();
        let fresh = self.scopes_of(&roots);
        self.scopes.read().map_or(true, |scopes| {
            scopes.len() != fresh.len()
                || scopes
                    .iter()
                    .zip(&fresh)
                    .any(|(old, new)| !old.same_patterns(new))
        })
    }

    /// Scans `roots` (all workspace roots when `None`) and rebuilds the index, reporting
    /// progress when the client can show it. Summaries of files under other roots are kept.
    ///
    /// Files are read and summarised one at a time per thread and only their summaries kept,
    /// on one thread fewer than the machine has cores, so an edit's analysis always finds a
    /// core free while a large workspace is indexed.
    pub async fn scan(self: Arc<Self>, roots: Option<Vec<PathBuf>>) {
        let generation = self.scan_generation.fetch_add(1, Ordering::SeqCst) + 1;
        let full = roots.is_none();
        let roots = roots.unwrap_or_else(|| self.roots());
        let progress = self.begin_progress(generation).await;
        let session = Arc::clone(&self);
        let walk_roots = roots.clone();
        let scopes = tokio::task::spawn_blocking(move || session.scopes_of(&walk_roots))
            .await
            .unwrap_or_default();
        let walked = scopes.clone();
        let files = tokio::task::spawn_blocking(move || {
            walked
                .iter()
                .flat_map(Scope::python_files)
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let threads = std::thread::available_parallelism()
            .map_or(1, |cores| cores.get().saturating_sub(1))
            .max(1);
        let pool = match rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|n| format!("pt2lsp-scan-{n}"))
            .stack_size(super::THREAD_STACK_BYTES)
            .build()
        {
            Ok(pool) => Arc::new(pool),
            Err(error) => {
                self.log(
                    MessageType::ERROR,
                    format!("cannot start the workspace scan: {error}"),
                );
                return;
            }
        };
        let mut summaries = Vec::with_capacity(files.len());
        for (done, chunk) in files.chunks(SCAN_CHUNK).enumerate() {
            if self.scan_generation.load(Ordering::SeqCst) != generation {
                return;
            }
            let chunk = chunk.to_vec();
            let pool = Arc::clone(&pool);
            let summarised = tokio::task::spawn_blocking(move || {
                use rayon::prelude::*;
                pool.install(|| {
                    chunk
                        .into_par_iter()
                        .filter_map(|path| {
                            workspace::summarize_file(&path).map(|summary| (path, summary))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .await
            .unwrap_or_default();
            summaries.extend(summarised);
            if let Some(progress) = &progress {
                let scanned = ((done + 1) * SCAN_CHUNK).min(files.len());
                let percentage = (scanned * 100 / files.len().max(1)) as u32;
                progress
                    .report_with_message(format!("{scanned}/{} files", files.len()), percentage)
                    .await;
            }
        }
        drop(pool);
        if self.scan_generation.load(Ordering::SeqCst) != generation {
            return;
        }
        let count = summaries.len();
        if let (Ok(mut current), Ok(mut all)) = (self.scopes.write(), self.summaries.write()) {
            if full {
                *all = Summaries::default();
                current.clear();
            } else {
                all.retain(|path| !roots.iter().any(|root| path.starts_with(root)));
                current.retain(|scope| !roots.contains(&scope.root));
            }
            current.extend(scopes);
            for (path, summary) in summaries {
                all.insert(path, summary);
            }
        }
        Arc::clone(&self).rebuild_index().await;
        if let Some(progress) = progress {
            progress
                .finish_with_message(format!("{count} files indexed"))
                .await;
        }
        self.log(MessageType::INFO, format!("indexed {count} Python files"));
        self.schedule_all();
    }

    async fn begin_progress(
        &self,
        generation: u64,
    ) -> Option<
        tower_lsp_server::OngoingProgress<
            tower_lsp_server::Bounded,
            tower_lsp_server::NotCancellable,
        >,
    > {
        if !self.flags().work_done_progress {
            return None;
        }
        let token = lsp::NumberOrString::String(format!("pt2lsp/scan/{generation}"));
        self.client
            .create_work_done_progress(token.clone())
            .await
            .ok()?;
        Some(
            self.client
                .progress(token, "pt2lsp: indexing workspace")
                .with_percentage(0)
                .begin()
                .await,
        )
    }

    /// Replaces one file's summary (drops it when `None`); true when it changed. The caller
    /// rebuilds the index once after a batch of updates.
    pub fn update_summary(&self, path: &Path, summary: Option<ModuleSummary>) -> bool {
        let Ok(mut all) = self.summaries.write() else {
            return false;
        };
        match summary {
            Some(summary) => all.insert(path.to_owned(), summary),
            None => all.remove(path),
        }
    }

    pub fn forget_root(&self, root: &Path) {
        if let Ok(mut all) = self.summaries.write() {
            all.retain(|path| !path.starts_with(root));
        }
        if let Ok(mut scopes) = self.scopes.write() {
            scopes.retain(|scope| scope.root != root);
        }
    }

    /// Builds the index from the current summaries, off the reactor (it takes a tenth of a
    /// second for a workspace as large as transformers), and installs it unless a rebuild that
    /// started later got there first.
    pub async fn rebuild_index(self: Arc<Self>) {
        let session = Arc::clone(&self);
        let built = tokio::task::spawn_blocking(move || {
            let all = session.summaries.read().ok()?;
            // Numbered under the read lock: a later number always saw at least as new a set.
            let build = session.index_builds.fetch_add(1, Ordering::SeqCst) + 1;
            let index = WorkspaceIndex::new(&all.summaries)
                .with_sources(Arc::new(DiskSources::new(&all.paths, &all.summaries)));
            Some((build, index))
        })
        .await;
        if let Ok(Some((build, index))) = built {
            if let Ok(mut current) = self.index.write() {
                if build > current.0 {
                    *current = (build, Arc::new(index));
                }
            }
        }
    }
}
