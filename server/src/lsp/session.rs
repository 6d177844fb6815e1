//! The server's state: open documents, settings, the workspace index, and analysis scheduling.
//!
//! tower-lsp starts handlers in arrival order but runs them concurrently, so document edits are
//! applied synchronously in the notification handler, before its first `.await`, and never
//! from a spawned task. Analysis runs on tokio's blocking pool. Every scheduled analysis takes a
//! ticket from one counter and stores it in its document; a result is published only if its
//! ticket is still the document's, so a newer edit, setting or index always wins over a slower
//! older run (biome's session does the same with document versions).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use dashmap::DashMap;
use pt2lsp_analyzer::{ModuleSummary, Report, SourceFile, WorkspaceIndex, check_file};
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{self as lsp, ClientCapabilities, MessageType, Uri};

use super::diagnostics::{self, Published};
use super::document::{Document, TextPositions};
use super::settings::{self, Options, Project, Resolved};
use super::workspace;

/// How long typing must pause before a changed document is analysed. Short: the static pass
/// takes milliseconds, and the wait only spares the work of keystrokes typed in a burst.
pub const DEBOUNCE: Duration = Duration::from_millis(30);

/// Documents larger than this are not analysed; the client is told once, on stderr and in its
/// log. Far beyond any hand-written model file, far below the analyzer's 4 GiB offset limit.
pub const MAX_ANALYSED_BYTES: usize = 16 * 1024 * 1024;

/// What the client said it can do, read once from `initialize`.
// Independent yes/no capabilities of the client; an enum or bitset would only obscure them.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientFlags {
    pub dynamic_watchers: bool,
    pub work_done_progress: bool,
    pub document_changes: bool,
    pub pull_configuration: bool,
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
        }
    }
}

/// An open document and its analysis bookkeeping.
#[derive(Debug)]
pub struct OpenDocument {
    pub document: Document,
    /// The file behind a `file:` URI; `None` for unsaved buffers.
    pub path: Option<PathBuf>,
    /// The ticket of the newest analysis scheduled for this document.
    ticket: u64,
    /// What was last published, for hover.
    pub published: Arc<Vec<Published>>,
}

/// Shared by every handler through an `Arc`.
#[derive(Debug)]
pub struct Session {
    pub client: Client,
    pub documents: DashMap<Uri, OpenDocument>,
    flags: OnceLock<ClientFlags>,
    editor: RwLock<Options>,
    projects: DashMap<PathBuf, Option<Arc<Project>>>,
    roots: RwLock<Vec<PathBuf>>,
    summaries: DashMap<PathBuf, ModuleSummary>,
    index: RwLock<Arc<WorkspaceIndex>>,
    next_ticket: AtomicU64,
    /// Held while checking a ticket and sending its diagnostics, so two publications for one
    /// document can never overtake each other on the way out.
    publish_lock: tokio::sync::Mutex<()>,
    /// Bumped by every workspace scan, so an older scan that finishes late is dropped.
    scan_generation: AtomicU64,
    pub shutdown_requested: Arc<AtomicBool>,
}

impl Session {
    pub fn new(client: Client, shutdown_requested: Arc<AtomicBool>) -> Self {
        Self {
            client,
            documents: DashMap::new(),
            flags: OnceLock::new(),
            editor: RwLock::new(Options::default()),
            projects: DashMap::new(),
            roots: RwLock::new(Vec::new()),
            summaries: DashMap::new(),
            index: RwLock::new(Arc::new(WorkspaceIndex::default())),
            next_ticket: AtomicU64::new(1),
            publish_lock: tokio::sync::Mutex::new(()),
            scan_generation: AtomicU64::new(0),
            shutdown_requested,
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
        let (options, warnings) = Options::from_json(value);
        if let Ok(mut editor) = self.editor.write() {
            *editor = options;
        }
        warnings
    }

    /// Forgets every project's settings; the next analysis reads `pyproject.toml` again.
    pub fn forget_projects(&self) {
        self.projects.clear();
    }

    /// The settings for a file: the editor's over its project's. Must run off the reactor: the
    /// first look-up in a directory reads files.
    pub fn resolve_settings(&self, path: Option<&Path>) -> Resolved {
        let mut warnings = Vec::new();
        let project = path
            .and_then(Path::parent)
            .and_then(|dir| settings::find_project(dir, &self.projects, &mut |w| warnings.push(w)));
        for warning in warnings {
            self.log(MessageType::WARNING, warning);
        }
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
            .map(|index| Arc::clone(&index))
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

    /// Opens (or reopens) a document. Synchronous: see the module docs.
    pub fn open(&self, uri: Uri, text: &str, version: i32) {
        let path = uri.to_file_path().map(std::borrow::Cow::into_owned);
        self.documents.insert(
            uri,
            OpenDocument {
                document: Document::new(text, version),
                path,
                ticket: 0,
                published: Arc::default(),
            },
        );
    }

    /// Schedules an analysis of `uri` after `delay`, superseding any scheduled before it.
    /// Synchronous up to the spawn, so callers keep their ordering guarantees.
    pub fn schedule(self: &Arc<Self>, uri: Uri, delay: Duration) {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        match self.documents.get_mut(&uri) {
            Some(mut open) => open.ticket = ticket,
            None => return,
        }
        let session = Arc::clone(self);
        tokio::spawn(async move { session.analyse(uri, ticket, delay).await });
    }

    /// Re-analyses every open document, after a settings or index change.
    pub fn schedule_all(self: &Arc<Self>) {
        let uris: Vec<Uri> = self
            .documents
            .iter()
            .map(|entry| entry.key().clone())
            .collect();
        for uri in uris {
            self.schedule(uri, Duration::ZERO);
        }
    }

    fn is_current(&self, uri: &Uri, ticket: u64) -> bool {
        self.documents
            .get(uri)
            .is_some_and(|open| open.ticket == ticket)
    }

    async fn analyse(self: Arc<Self>, uri: Uri, ticket: u64, delay: Duration) {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let Some((rope, version, path)) = self.documents.get(&uri).and_then(|open| {
            (open.ticket == ticket).then(|| {
                (
                    open.document.rope().clone(),
                    open.document.version(),
                    open.path.clone(),
                )
            })
        }) else {
            return;
        };
        let session = Arc::clone(&self);
        let name = uri.as_str().to_owned();
        let outcome = tokio::task::spawn_blocking(move || {
            if !session.is_current(&uri, ticket) {
                return None;
            }
            let text = rope.to_string();
            if text.len() > MAX_ANALYSED_BYTES {
                session.log(
                    MessageType::WARNING,
                    format!(
                        "{}: {} bytes, too large to analyse",
                        uri.as_str(),
                        text.len()
                    ),
                );
                return Some((uri, Vec::new(), Vec::new()));
            }
            let settings = session.resolve_settings(path.as_deref());
            let report = session.check(&text, path.as_deref(), &settings);
            let positions = TextPositions::new(&text);
            let lsp = report
                .diagnostics
                .iter()
                .map(|d| diagnostics::to_lsp(d, &positions, version))
                .collect();
            let published = report
                .diagnostics
                .iter()
                .map(|d| diagnostics::published(d, &positions))
                .collect();
            Some((uri, lsp, published))
        })
        .await;
        let (uri, lsp, published) = match outcome {
            Ok(Some(result)) => result,
            Ok(None) => return,
            Err(error) => {
                self.log(
                    MessageType::ERROR,
                    format!("{name}: analysis failed: {error}"),
                );
                return;
            }
        };
        let _guard = self.publish_lock.lock().await;
        match self.documents.get_mut(&uri) {
            Some(mut open) if open.ticket == ticket => open.published = Arc::new(published),
            _ => return,
        }
        self.client
            .publish_diagnostics(uri, lsp, Some(version))
            .await;
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

    /// Clears a closed document's diagnostics, after any publication already under way.
    pub async fn clear(&self, uri: Uri) {
        let _guard = self.publish_lock.lock().await;
        if !self.documents.contains_key(&uri) {
            self.client.publish_diagnostics(uri, Vec::new(), None).await;
        }
    }

    /// Scans `roots` (all workspace roots when `None`) and rebuilds the index, reporting
    /// progress when the client can show it. Summaries of files under other roots are kept.
    pub async fn scan(self: Arc<Self>, roots: Option<Vec<PathBuf>>) {
        let generation = self.scan_generation.fetch_add(1, Ordering::SeqCst) + 1;
        let full = roots.is_none();
        let roots = roots.unwrap_or_else(|| self.roots());
        let progress = self.begin_progress(generation).await;
        let walk_roots = roots.clone();
        let files = tokio::task::spawn_blocking(move || {
            walk_roots
                .iter()
                .flat_map(|root| workspace::python_files(root))
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let mut summaries = HashMap::with_capacity(files.len());
        // Chunks keep the progress report moving and let a newer scan stop this one early.
        for (done, chunk) in files.chunks(256).enumerate() {
            if self.scan_generation.load(Ordering::SeqCst) != generation {
                return;
            }
            let chunk = chunk.to_vec();
            let summarised = tokio::task::spawn_blocking(move || {
                use rayon::prelude::*;
                chunk
                    .into_par_iter()
                    .filter_map(|path| {
                        workspace::summarize_file(&path).map(|summary| (path, summary))
                    })
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
            summaries.extend(summarised);
            if let Some(progress) = &progress {
                let scanned = ((done + 1) * 256).min(files.len());
                let percentage = (scanned * 100 / files.len().max(1)) as u32;
                progress
                    .report_with_message(format!("{scanned}/{} files", files.len()), percentage)
                    .await;
            }
        }
        if self.scan_generation.load(Ordering::SeqCst) != generation {
            return;
        }
        let count = summaries.len();
        if full {
            self.summaries.clear();
        } else {
            self.summaries
                .retain(|path, _| !roots.iter().any(|root| path.starts_with(root)));
        }
        for (path, summary) in summaries {
            self.summaries.insert(path, summary);
        }
        self.rebuild_index();
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
        match summary {
            Some(summary) => {
                self.summaries
                    .insert(path.to_owned(), summary.clone())
                    .as_ref()
                    != Some(&summary)
            }
            None => self.summaries.remove(path).is_some(),
        }
    }

    pub fn forget_root(&self, root: &Path) {
        self.summaries.retain(|path, _| !path.starts_with(root));
    }

    pub fn rebuild_index(&self) {
        let mut entries: Vec<(PathBuf, ModuleSummary)> = self
            .summaries
            .iter()
            .map(|entry| (entry.key().clone(), entry.value().clone()))
            .collect();
        // Sorted, so the index does not depend on the order files were scanned in.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let summaries: Vec<ModuleSummary> =
            entries.into_iter().map(|(_, summary)| summary).collect();
        let index = Arc::new(WorkspaceIndex::new(&summaries));
        if let Ok(mut current) = self.index.write() {
            *current = index;
        }
    }
}
