//! Open documents and their static analysis: opening, editing, scheduling, publishing.
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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pt2lsp_analyzer::ShapeHint;
use tower_lsp_server::ls_types::{self as lsp, MessageType, Uri};

use super::Session;
use super::analysis::{Analysed, AnalysisSnapshot, RequestSnapshot};
use crate::diagnostics::{self, Findings};
use crate::document::Document;
use pt2lsp_tracer::diagnostics::normalized;

/// Documents larger than this are not analysed; the client is told once, on stderr and in its
/// log. Far beyond any hand-written model file, far below the analyzer's 4 GiB offset limit.
pub const MAX_ANALYSED_BYTES: usize = 16 * 1024 * 1024;
/// An open document and its analysis bookkeeping.
#[derive(Debug)]
pub struct OpenDocument {
    pub document: Document,
    /// The file behind a `file:` URI; `None` for unsaved buffers.
    pub path: Option<PathBuf>,
    /// `path` as the file system resolves it, to match the tracer's files.
    pub(super) normalized: Option<PathBuf>,
    /// The ticket of the newest reason to analyse this document.
    pub(super) ticket: u64,
    /// The same, shared with the snapshots of its analyses, which it outdates when it moves
    /// (see [`AnalysisSnapshot::is_outdated`]).
    pub(super) latest: Arc<AtomicU64>,
    /// The ticket that started the analysis task now running for this document, if any. A task
    /// whose ticket is no longer here (the document was closed and reopened) stops.
    pub(super) runner: Option<u64>,
    /// The static diagnostics last published and the version they are for. Trace diagnostics
    /// (kept per entrypoint in [`super::traces`]) of the same version are merged into every
    /// publication; those of another version are stale, so an edit publishes static
    /// diagnostics only until the next trace.
    pub(super) statics: Option<(i32, Arc<Findings>)>,
    /// The tensor shapes the same analysis inferred, for hover and inlay hints.
    pub(super) shapes: Option<(i32, Arc<Vec<ShapeHint>>)>,
}

impl Session {
    /// Opens (or reopens) a document. Synchronous: see the module docs. Trace diagnostics
    /// found in the file while it was closed become this version's.
    pub fn open(&self, uri: Uri, text: &str, version: i32) {
        let path = uri.to_file_path().map(std::borrow::Cow::into_owned);
        let normalized = path.as_deref().map(normalized);
        if let Some(file) = &normalized {
            self.adopt_traces(file, version);
        }
        let document = Document::new(text, version);
        if let Some(path) = &path {
            self.workspace
                .buffers
                .set_open(path, version, document.rope().clone());
        }
        self.documents.insert(
            uri,
            OpenDocument {
                document,
                path,
                normalized,
                ticket: 0,
                latest: Arc::default(),
                runner: None,
                statics: None,
                shapes: None,
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
        if let Some(path) = &open.path {
            self.workspace.buffers.close(path);
        }
        true
    }

    /// After an edit to `uri` (already applied): records its new text for the analyses of
    /// other files, analyses it, and re-analyses the open documents whose diagnostics may
    /// depend on its text: the entrypoints that reach it and the files those reach
    /// ([`pt2lsp_analyzer::WorkspaceIndex::dependents`]). Synchronous up to the spawns, like
    /// [`Session::schedule`].
    pub fn edited(self: &Arc<Self>, uri: &Uri) {
        let path = self.documents.get(uri).and_then(|open| {
            let path = open.path.clone()?;
            self.workspace.buffers.set_open(
                &path,
                open.document.version(),
                open.document.rope().clone(),
            );
            Some(path)
        });
        self.schedule(uri.clone());
        if let Some(path) = path {
            self.schedule_dependents(&path, Some(uri));
        }
    }

    /// Re-analyses the open documents (but `except`) whose diagnostics may depend on the text
    /// of the file at `path`.
    pub(super) fn schedule_dependents(self: &Arc<Self>, path: &Path, except: Option<&Uri>) {
        let Some(module) = self.workspace.module_of(path) else {
            return;
        };
        let index = self.workspace.index_of(Some(path));
        let dependents = index.dependents(&module);
        if dependents.is_empty() {
            return;
        }
        let uris: Vec<Uri> = self
            .documents
            .iter()
            .filter(|entry| Some(entry.key()) != except)
            .filter(|entry| {
                entry
                    .path
                    .as_deref()
                    // Another project's module of the same name is not a dependent.
                    .filter(|path| Arc::ptr_eq(&self.workspace.index_of(Some(path)), &index))
                    .and_then(|path| self.workspace.module_of(path))
                    .is_some_and(|module| dependents.binary_search(&module).is_ok())
            })
            .map(|entry| entry.key().clone())
            .collect();
        if uris.is_empty() {
            return;
        }
        for dependent in uris {
            self.schedule(dependent);
        }
        // A client that pulls diagnostics asks again; until their analyses end, those pulls
        // analyse the documents themselves (see `pulled_diagnostics`).
        self.refresh_pulled_diagnostics();
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
            open.latest.store(ticket, Ordering::SeqCst);
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

    /// The analysis task of one document: analyses its newest text until a result is still
    /// current when it is ready, publishes that one and ends.
    async fn analyse(self: Arc<Self>, uri: Uri, runner: u64) {
        loop {
            let Some(snapshot) = self.snapshot(&uri, Some(runner), true) else {
                return;
            };
            let version = snapshot.version;
            let ticket = snapshot.ticket.as_ref().map_or(0, |(ticket, _)| *ticket);
            let outcome = tokio::task::spawn_blocking(move || snapshot.analyse()).await;
            if let Ok(Some(analysed)) = &outcome {
                self.apply(analysed);
            }
            let guard = self.publish_lock.lock().await;
            let mut merged = Findings::default();
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
                    Ok(Some(analysed)) => {
                        let statics = Arc::new(analysed.findings.clone());
                        open.shapes = Some((version, Arc::new(analysed.shapes.clone())));
                        merged =
                            self.with_traces(open.normalized.as_deref(), Some(version), &statics);
                        open.statics = Some((version, statics));
                    }
                    Ok(None) => return,
                    Err(_) => {}
                }
            }
            match outcome {
                Ok(Some(_)) => {
                    self.publish(uri, &merged, Some(version)).await;
                    drop(guard);
                    if self
                        .workspace
                        .summaries_changed
                        .swap(false, Ordering::SeqCst)
                    {
                        // An edit changed what the file imports or defines: every open
                        // document is analysed again against the new index.
                        self.rebuild_index().await;
                        self.schedule_all();
                    }
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

    /// The snapshot an analysis of `uri` reads, taken now; `None` when the document is not
    /// open, or, with `runner`, when that task no longer runs its analyses. With `track`, the
    /// snapshot's ticket is the document's, so the next edit outdates it.
    fn snapshot(&self, uri: &Uri, runner: Option<u64>, track: bool) -> Option<AnalysisSnapshot> {
        let (rope, version, path, ticket) = self.documents.get(uri).and_then(|open| {
            (runner.is_none() || open.runner == runner).then(|| {
                (
                    open.document.rope().clone(),
                    open.document.version(),
                    open.path.clone(),
                    (open.ticket, Arc::clone(&open.latest)),
                )
            })
        })?;
        let module = path
            .as_deref()
            .and_then(|path| self.workspace.module_of(path));
        let index = self.workspace.index_of(path.as_deref());
        Some(AnalysisSnapshot {
            name: uri.as_str().to_owned(),
            rope,
            version,
            path,
            ticket: track.then_some(ticket),
            settings: self.settings_source(),
            index,
            module,
            track,
        })
    }

    /// Applies to the session what an analysis returned for it: the file's summary (the index
    /// is rebuilt once the analysis has published, see `analyse`) and the user's warnings.
    fn apply(&self, analysed: &Analysed) {
        if let Some((path, summary)) = &analysed.summary {
            if self.workspace.update_summary(path, Some(summary.clone())) {
                self.workspace
                    .summaries_changed
                    .store(true, Ordering::SeqCst);
            }
        }
        for warning in &analysed.warnings {
            self.log(MessageType::WARNING, warning.clone());
        }
    }

    /// What is published for an open document now, as the protocol's diagnostics (see
    /// [`Session::current_findings`]).
    pub fn current_diagnostics(&self, uri: &Uri) -> Option<Vec<lsp::Diagnostic>> {
        let findings = self.current_findings(uri)?;
        Some(diagnostics::to_protocol(&findings, self.related_texts()))
    }

    /// What is published for an open document now: its static findings of the current version
    /// merged with the trace findings of that version. `None` when the document is not open;
    /// empty before its first analysis ends.
    pub fn current_findings(&self, uri: &Uri) -> Option<Findings> {
        let (version, statics, file) = self.documents.get(uri).map(|open| {
            (
                open.document.version(),
                open.statics.clone(),
                open.normalized.clone(),
            )
        })?;
        let Some((static_version, statics)) = statics.filter(|(at, _)| *at == version) else {
            return Some(Findings::default());
        };
        Some(self.with_traces(file.as_deref(), Some(static_version), &statics))
    }

    /// What a request about an open document reads, taken now (see [`RequestSnapshot`]):
    /// `None` when the document is not open or too large to analyse.
    pub fn request_snapshot(&self, uri: &Uri) -> Option<RequestSnapshot> {
        // Text and shapes are read together: an edit between two reads would pair them wrongly.
        let (text, path, file, version, published) = self.documents.get(uri).map(|open| {
            let version = open.document.version();
            let published = open
                .shapes
                .clone()
                .filter(|(published, _)| *published == version)
                .map(|(_, shapes)| shapes);
            (
                open.document.text(),
                open.path.clone(),
                open.normalized.clone(),
                version,
                published,
            )
        })?;
        if text.len() > MAX_ANALYSED_BYTES {
            return None;
        }
        let traced = file
            .map(|file| self.traced_shapes(&file, Some(version)))
            .unwrap_or_default();
        Some(RequestSnapshot {
            index: self.workspace.index_of(path.as_deref()),
            text,
            version,
            path,
            published_shapes: published,
            traced_shapes: traced,
            settings: self.settings_source(),
            client: self.client.clone(),
        })
    }

    /// What `textDocument/diagnostic` answers: what is pushed for the document's current
    /// version. When its analysis has not ended yet, the pull does not wait for it: it analyses
    /// the same text itself, so the answer is never an empty list that only means "not yet".
    /// That includes an analysis of the same version started because a file it reads changed:
    /// the diagnostics kept for the version are stale then. `None` when the document is not
    /// open.
    pub async fn pulled_diagnostics(self: &Arc<Self>, uri: &Uri) -> Option<Vec<lsp::Diagnostic>> {
        let (version, statics, file) = self.documents.get(uri).map(|open| {
            (
                open.document.version(),
                open.statics.clone().filter(|_| open.runner.is_none()),
                open.normalized.clone(),
            )
        })?;
        let statics = if let Some((_, statics)) = statics.filter(|(at, _)| *at == version) {
            statics
        } else {
            // The same text, analysed here without touching the index's inputs.
            let snapshot = self.snapshot(uri, None, false)?;
            let analysed = tokio::task::spawn_blocking(move || snapshot.analyse())
                .await
                .ok()??;
            for warning in &analysed.warnings {
                self.log(MessageType::WARNING, warning.clone());
            }
            Arc::new(analysed.findings)
        };
        let merged = self.with_traces(file.as_deref(), Some(version), &statics);
        Some(diagnostics::to_protocol(&merged, self.related_texts()))
    }

    /// Tells a client that pulls diagnostics to pull them again (new trace results). Returns
    /// at once; the client's answer is not waited for.
    /// Asks a client that supports it to request inlay hints again: a trace brought the
    /// exported program's shapes.
    pub fn refresh_inlay_hints(&self) {
        if !self.flags().inlay_hint_refresh {
            return;
        }
        let client = self.client.clone();
        tokio::spawn(async move {
            if let Err(error) = client.inlay_hint_refresh().await {
                crate::log_stderr(&format!("workspace/inlayHint/refresh failed: {error}"));
            }
        });
    }

    pub fn refresh_pulled_diagnostics(&self) {
        if !self.flags().diagnostic_refresh {
            return;
        }
        let client = self.client.clone();
        tokio::spawn(async move {
            if let Err(error) = client.workspace_diagnostic_refresh().await {
                crate::log_stderr(&format!("workspace/diagnostic/refresh failed: {error}"));
            }
        });
    }

    /// Sends a file's findings, as the protocol's diagnostics; related places only to a client
    /// that shows them.
    pub async fn publish(&self, uri: Uri, findings: &Findings, version: Option<i32>) {
        let diagnostics = diagnostics::to_protocol(findings, self.related_texts());
        self.publish_converted(uri, diagnostics, version).await;
    }

    /// Sends diagnostics already made for the protocol (a notebook's, placed in its cells).
    pub async fn publish_converted(
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
            self.publish(uri, &traced.into(), None).await;
        }
    }
}
