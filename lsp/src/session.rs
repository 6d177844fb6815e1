//! The server's state, shared by every handler: the client's capabilities, the settings and
//! the workspace roots. Its parts live in submodules: open documents and their analysis in
//! [`documents`], the workspace part (scan, summaries, indexes, sources) in [`index`], traces
//! in [`traces`] and the export command in [`export`]. No blocking task holds the session:
//! each takes what it reads first, a snapshot ([`analysis`]'s `AnalysisSnapshot` and
//! `RequestSnapshot`, [`traces`]' `TraceInputs`) or the workspace part.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, OnceLock, RwLock};

use dashmap::DashMap;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{ClientCapabilities, MessageType, Uri};

mod analysis;
mod documents;
mod export;
mod index;
mod notebooks;
mod traced_shapes;
mod traces;

pub use analysis::RequestSnapshot;
pub use documents::{MAX_ANALYSED_BYTES, OpenDocument};
pub use export::ExportRequest;
pub use traces::TraceReason;

use super::settings::{self, Project, Resolved};
use pt2lsp_project::config::Config;
use pt2lsp_tracer::diagnostics::Anchor;

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
    /// `workspace.inlayHint.refreshSupport`: the client is told to ask for inlay hints again
    /// when a trace brings the exported program's shapes.
    pub inlay_hint_refresh: bool,
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
            inlay_hint_refresh: workspace
                .and_then(|w| w.inlay_hint.as_ref())
                .and_then(|i| i.refresh_support)
                .unwrap_or(false),
        }
    }
}

/// The settings' inputs: the editor's layer and the projects found so far (see
/// [`Session::settings_source`]).
#[derive(Debug, Clone, Default)]
pub struct SettingsSource {
    editor: Config,
    projects: Arc<settings::ProjectCache>,
}

impl SettingsSource {
    /// The settings for a file, the editor's over its project's, and the warnings reading its
    /// project gave. Blocking: the first look-up in a directory reads files.
    pub fn resolve(&self, path: Option<&Path>) -> (Resolved, Vec<String>) {
        let mut warnings = Vec::new();
        let project: Option<Arc<Project>> = path
            .and_then(Path::parent)
            .and_then(|dir| self.projects.find(dir, &mut |w| warnings.push(w)));
        let options = match &project {
            Some(project) => self.editor.or(&project.options),
            None => self.editor.clone(),
        };
        let mut resolved = Resolved {
            project: project.map(|project| project.pyproject.clone()),
            ..Resolved::new(&options)
        };
        resolved.analyzer.entrypoint_targets = pt2lsp_project::config::entrypoint_targets(
            &resolved.entrypoints,
            resolved.project_dir().as_deref(),
        );
        resolved.analyzer.scripts_with_arguments = pt2lsp_project::config::scripts_with_arguments(
            &resolved.entrypoints,
            resolved.project_dir().as_deref(),
        );
        (resolved, warnings)
    }
}

/// An entrypoint's trace, planned: the job and what its results are read against.
#[derive(Clone)]
pub struct PlannedTrace {
    spec: pt2lsp_tracer::JobSpec,
    anchor: Anchor,
    python: PathBuf,
    path: PathBuf,
    /// Where its result is replayed from and kept (`None` with `PT2LSP_NO_CACHE`).
    cache: Option<crate::trace::Caching>,
    /// Foreground when its entry file is open: the user is looking at it.
    priority: pt2lsp_tracer::manager::Priority,
    /// How the worker starts job processes (`start-method`).
    start_method: pt2lsp_tracer::worker::StartMethod,
}

/// Shared by every handler through an `Arc`.
#[derive(Debug)]
pub struct Session {
    pub client: Client,
    pub documents: DashMap<Uri, OpenDocument>,
    flags: OnceLock<ClientFlags>,
    editor: RwLock<Config>,
    projects: Arc<settings::ProjectCache>,
    roots: RwLock<Vec<PathBuf>>,
    /// The scan, the summaries, the indexes and the texts analyses read (see
    /// [`index::WorkspaceState`]); blocking tasks over the workspace hold this part alone.
    pub workspace: Arc<index::WorkspaceState>,
    next_ticket: AtomicU64,
    /// Held while checking a ticket and sending its diagnostics, so two publications for one
    /// document can never overtake each other on the way out.
    publish_lock: tokio::sync::Mutex<()>,
    /// True once a workspace scan has ended (or could not start): a trace planned before that
    /// would not see the export scripts that reach the saved file, so it waits for it.
    pub(super) scanned: tokio::sync::watch::Sender<bool>,
    pub shutdown_requested: Arc<AtomicBool>,
    /// The tracer's part: its thread, each entrypoint's last trace, what the user was told.
    tracer: traces::TraceState,
    /// Open notebooks and their cells (`notebookDocument/*`).
    pub notebooks: super::notebooks::Notebooks,
}

impl Session {
    pub fn new(client: Client, shutdown_requested: Arc<AtomicBool>) -> Self {
        Self {
            client,
            documents: DashMap::new(),
            flags: OnceLock::new(),
            editor: RwLock::new(Config::default()),
            projects: Arc::default(),
            roots: RwLock::new(Vec::new()),
            workspace: Arc::default(),
            next_ticket: AtomicU64::new(1),
            publish_lock: tokio::sync::Mutex::new(()),
            scanned: tokio::sync::watch::Sender::new(false),
            shutdown_requested,
            tracer: traces::TraceState::default(),
            notebooks: super::notebooks::Notebooks::default(),
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
        self.projects.forget();
    }

    /// What settings are resolved from now: the editor's layer as it is and the projects'
    /// cache. Owned, so a blocking task resolves a file's settings without the session.
    pub fn settings_source(&self) -> SettingsSource {
        SettingsSource {
            editor: self
                .editor
                .read()
                .map(|editor| editor.clone())
                .unwrap_or_default(),
            projects: Arc::clone(&self.projects),
        }
    }

    /// The settings for a file: the editor's over its project's. Must run off the reactor: the
    /// first look-up in a directory reads files.
    pub fn resolve_settings(&self, path: Option<&Path>) -> Resolved {
        let (resolved, warnings) = self.settings_source().resolve(path);
        for warning in warnings {
            self.log(MessageType::WARNING, warning);
        }
        resolved
    }

    /// Where related places' columns are counted, for a client that shows them; `None` for
    /// one that does not (it is sent none).
    pub fn related_texts(&self) -> Option<&dyn crate::diagnostics::RelatedTexts> {
        self.flags()
            .related_information
            .then_some(self.workspace.buffers.as_ref() as &dyn crate::diagnostics::RelatedTexts)
    }

    /// The texts analyses read (open documents first), shared with blocking tasks that need them.
    fn buffers(&self) -> Arc<index::Buffers> {
        Arc::clone(&self.workspace.buffers)
    }

    /// A line in the client's log, from any thread (see [`log_to`]).
    pub fn log(&self, kind: MessageType, message: String) {
        log_to(&self.client, kind, message);
    }
}

/// A line in `client`'s log, from any thread of the runtime; warnings and errors also go to
/// stderr, which some clients (Neovim) log as errors whatever it says.
pub fn log_to(client: &Client, kind: MessageType, message: String) {
    if kind == MessageType::WARNING || kind == MessageType::ERROR {
        crate::log_stderr(&message);
    }
    let client = client.clone();
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move { client.log_message(kind, message).await });
    }
}
