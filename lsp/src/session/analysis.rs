//! One static analysis of an open document, as a function of an immutable snapshot: the text
//! and version, the settings' inputs, the workspace index and the file's module, all taken when
//! the analysis starts. The blocking task that runs it holds the snapshot alone, never the
//! session; what it changes in the session (the file's summary, the user's warnings) it
//! returns, for the caller to apply. An edit bumps the document's ticket, which outdates every
//! snapshot taken before it: an outdated snapshot is not analysed, and a result of one is
//! dropped by the caller (biome's and rust-analyzer's way with stale analyses).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pt2lsp_analyzer::{
    ModuleSummary, Report, ShapeHint, SourceFile, WorkspaceIndex, check_file, check_file_summarized,
};
use ropey::Rope;
use tower_lsp_server::ls_types::MessageType;

use super::{MAX_ANALYSED_BYTES, SettingsSource};
use crate::diagnostics::{AnalysedText, Finding, Findings, TooLarge};
use crate::settings::Resolved;
use crate::workspace;

/// What one analysis reads.
pub struct AnalysisSnapshot {
    /// For messages only.
    pub name: String,
    pub rope: Rope,
    pub version: i32,
    pub path: Option<PathBuf>,
    /// The ticket the snapshot was taken at, and the document's newest (see [`Self::is_outdated`]);
    /// `None` for an analysis nothing outdates (a pull's).
    pub ticket: Option<(u64, Arc<AtomicU64>)>,
    pub settings: SettingsSource,
    pub index: Arc<WorkspaceIndex>,
    /// The module the workspace scan knows the file as; `None` for a file it did not index.
    pub module: Option<String>,
    /// Whether the file's summary follows this text (an open document's own analysis).
    pub track: bool,
}

/// One analysis of a text: its findings, the shapes it inferred, and what the caller applies
/// to the session.
pub struct Analysed {
    pub findings: Findings,
    pub shapes: Vec<ShapeHint>,
    /// With `track`: the file's summary from this text, for the index's inputs.
    pub summary: Option<(PathBuf, ModuleSummary)>,
    /// Warnings for the user's log (a project's settings, a document too large).
    pub warnings: Vec<String>,
}

impl AnalysisSnapshot {
    /// Whether an edit (or any newer reason to analyse) came after the snapshot was taken.
    pub fn is_outdated(&self) -> bool {
        self.ticket
            .as_ref()
            .is_some_and(|(ticket, latest)| latest.load(Ordering::SeqCst) != *ticket)
    }

    /// Analyses the snapshot. Blocking. `None` when it is already outdated, which spares the
    /// work.
    pub fn analyse(self) -> Option<Analysed> {
        if self.is_outdated() {
            return None;
        }
        let text = self.rope.to_string();
        let (settings, mut warnings) = self.settings.resolve(self.path.as_deref());
        if text.len() > MAX_ANALYSED_BYTES {
            warnings.push(format!(
                "{}: {} bytes, too large to analyse",
                self.name,
                text.len()
            ));
            return Some(Analysed {
                findings: Findings::default(),
                shapes: Vec::new(),
                summary: None,
                warnings,
            });
        }
        let version = self.version;
        if text.len() > settings.max_file_bytes {
            // A huge (generated) file: its syntax only, and a line saying why.
            let syntax = pt2lsp_analyzer::check_syntax(&text).diagnostics;
            let bytes = text.len();
            let text = AnalysedText::new(text);
            return Some(Analysed {
                findings: Findings {
                    items: syntax
                        .into_iter()
                        .map(|found| Finding::found_statically(found, &text, version))
                        .collect(),
                    too_large: Some(TooLarge {
                        bytes,
                        limit: settings.max_file_bytes,
                    }),
                },
                shapes: Vec::new(),
                summary: None,
                warnings,
            });
        }
        // An open document's summary follows its text, made from the analysis's own parse.
        // Packages' `__init__.py` files are left to saves and the file watcher.
        let tracked = self
            .path
            .as_deref()
            .filter(|_| self.track)
            .zip(self.module.as_deref())
            .filter(|(path, _)| path.file_stem().is_some_and(|stem| stem != "__init__"));
        let (mut report, summary) = match tracked {
            Some((path, module)) => {
                let namespace = workspace::module_place(path).and_then(|place| place.namespace);
                let file = SourceFile {
                    text: &text,
                    module: Some(module),
                    is_package: false,
                    namespace: namespace.as_deref(),
                };
                let (report, summary) =
                    check_file_summarized(file, &settings.analyzer, &self.index);
                (report, Some((path.to_path_buf(), summary)))
            }
            None => (
                check(&text, self.path.as_deref(), &settings, &self.index),
                None,
            ),
        };
        // Code no entrypoint of the project exports: as `pt2lsp check` reports it. The module
        // is the scan's (no disk look-up on a keystroke).
        let unexported = self
            .module
            .as_deref()
            .and_then(|module| self.index.unexported(module));
        if let Some(why) = unexported {
            for diagnostic in &mut report.diagnostics {
                pt2lsp_analyzer::as_unexported(diagnostic, &why);
            }
        }
        let text = AnalysedText::new(text);
        let unproven = report.unproven.into_iter().map(|found| Finding {
            unproven: true,
            ..Finding::found_statically(found, &text, version)
        });
        Some(Analysed {
            findings: report
                .diagnostics
                .into_iter()
                .map(|found| Finding::found_statically(found, &text, version))
                .chain(unproven)
                .collect::<Vec<_>>()
                .into(),
            shapes: report.shapes,
            summary,
            warnings,
        })
    }
}

/// What a request about one open document reads (its outline, its shapes, its fixes), taken
/// on the reactor when the request arrives: the text, what the document's analysis published
/// for that version, the trace's shapes for it, the settings' inputs and the index. The
/// blocking task that answers holds this alone, never the session.
pub struct RequestSnapshot {
    pub text: String,
    pub version: i32,
    pub path: Option<PathBuf>,
    /// The shapes the document's analysis published for this version, once it has ended.
    pub(super) published_shapes: Option<Arc<Vec<ShapeHint>>>,
    /// The exported program's shapes at this version, by 1-based line, from the last traces.
    pub(super) traced_shapes: HashMap<u32, Vec<String>>,
    pub(super) settings: SettingsSource,
    pub(super) index: Arc<WorkspaceIndex>,
    /// For the settings' warnings.
    pub(super) client: tower_lsp_server::Client,
}

impl RequestSnapshot {
    /// The document's settings: the editor's over its project's. Blocking: the first look-up
    /// in a directory reads files.
    pub fn settings(&self) -> Resolved {
        let (resolved, warnings) = self.settings.resolve(self.path.as_deref());
        for warning in warnings {
            crate::session::log_to(&self.client, MessageType::WARNING, warning);
        }
        resolved
    }

    /// Runs the analyzer on `text` (the document's, or a fixed version of it) as the
    /// document's. Blocking.
    pub fn check(&self, text: &str, settings: &Resolved) -> Report {
        check(text, self.path.as_deref(), settings, &self.index)
    }

    /// The document's outline. Blocking: parses it.
    pub fn outline(&self) -> Vec<pt2lsp_analyzer::OutlineSymbol> {
        let place = self
            .path
            .as_deref()
            .filter(|path| workspace::is_python(path))
            .and_then(workspace::module_place);
        let file = place.as_ref().map_or_else(
            || SourceFile::detached(&self.text),
            |place| place.file(&self.text),
        );
        pt2lsp_analyzer::outline(file, &self.index)
    }

    /// The tensor shapes in the document's text: those its analysis published for this
    /// version, or, before it ends, of an analysis run here (milliseconds), so an answer is
    /// never of an older version; after a trace of this version, the exported program's
    /// shapes in place of the inferred. Blocking.
    pub fn shapes(&self, settings: &Resolved) -> Arc<Vec<ShapeHint>> {
        let shapes = match &self.published_shapes {
            Some(shapes) => Arc::clone(shapes),
            None if self.text.len() > settings.max_file_bytes => Arc::new(Vec::new()),
            None => Arc::new(self.check(&self.text, settings).shapes),
        };
        if self.traced_shapes.is_empty() {
            return shapes;
        }
        Arc::new(super::traced_shapes::overlay(
            &self.text,
            &shapes,
            &self.traced_shapes,
        ))
    }
}

/// Runs the analyzer on one text with a workspace index. Blocking.
pub fn check(
    text: &str,
    path: Option<&Path>,
    settings: &Resolved,
    index: &WorkspaceIndex,
) -> Report {
    let place = path
        .filter(|path| workspace::is_python(path))
        .and_then(workspace::module_place);
    let file = place
        .as_ref()
        .map_or_else(|| SourceFile::detached(text), |place| place.file(text));
    check_file(file, &settings.analyzer, index)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BRANCH: &str = "import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n";

    fn snapshot(ticket: Option<(u64, Arc<AtomicU64>)>) -> AnalysisSnapshot {
        AnalysisSnapshot {
            name: "m.py".to_owned(),
            rope: Rope::from_str(BRANCH),
            version: 3,
            path: None,
            ticket,
            settings: SettingsSource::default(),
            index: Arc::default(),
            module: None,
            track: false,
        }
    }

    #[test]
    fn an_edit_outdates_the_snapshots_taken_before_it() {
        let latest = Arc::new(AtomicU64::new(7));
        let current = snapshot(Some((7, Arc::clone(&latest))));
        assert!(!current.is_outdated());
        let analysed = current.analyse().expect("a current snapshot is analysed");
        let codes: Vec<&str> = analysed
            .findings
            .items
            .iter()
            .map(|finding| finding.diagnostic().rule.code())
            .collect();
        assert_eq!(codes, ["PT101"]);
        assert!(
            analysed
                .findings
                .items
                .iter()
                .all(|finding| finding.version == 3)
        );
        // An edit takes the next ticket: the snapshot taken before it is not analysed.
        let before_the_edit = snapshot(Some((7, Arc::clone(&latest))));
        latest.store(8, Ordering::SeqCst);
        assert!(before_the_edit.is_outdated());
        assert!(before_the_edit.analyse().is_none());
        // A pull's analysis answers the request whatever comes after it.
        assert!(snapshot(None).analyse().is_some());
    }
}
