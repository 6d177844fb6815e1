//! Diagnostics and fixes: plain data, so a fix can travel in an LSP diagnostic's `data`.

use std::path::PathBuf;

use ruff_text_size::TextRange;
use serde::{Deserialize, Serialize};

// A rule declares its default severity, so the type lives with the rules' identity.
use crate::registry::Rule;
pub use crate::registry::Severity;

/// Whether a fix may be applied without the user reading it (ruff's applicability levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Applicability {
    /// Keeps the program's meaning; `--fix` applies it.
    Safe,
    /// Probably right but may change meaning; `--unsafe-fixes` applies it.
    Unsafe,
    /// Shown to the user, never applied.
    DisplayOnly,
}

/// Replace `range` of the file with `content`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    pub range: TextRange,
    pub content: String,
}

/// A titled set of edits that together fix one diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    pub title: String,
    pub edits: Vec<Edit>,
    pub applicability: Applicability,
}

/// Another place that explains a diagnostic: the entrypoint that exports the model, each call
/// on the way to the problem, or a frame inside an installed library.
///
/// Unlike a diagnostic's own range, this points into a file whose text the consumer may not
/// hold (a library in site-packages, a file the editor has not opened), so it is resolved to a
/// line and column where it is made.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Related {
    /// The file, as the caller of the analysis named it (absolute where the caller knows it).
    pub file: PathBuf,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    /// What happens there: "`model` is exported here", "calls `head`", "raised here".
    pub message: String,
}

/// One problem at one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub rule: Rule,
    pub severity: Severity,
    pub message: String,
    pub range: TextRange,
    pub fix: Option<Fix>,
    /// The places that explain it, in the order a reader follows them (entrypoint first).
    pub related: Vec<Related>,
}

/// Everything the analyzer found in one file, sorted by position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub diagnostics: Vec<Diagnostic>,
    /// The shapes the analysis inferred for tensors in traced code, by position.
    pub shapes: Vec<ShapeHint>,
    /// Diagnostics that hold only where an export that succeeded ran their line (PT002 for a
    /// suppression that silenced nothing the analysis found): `check --trace` and the editor
    /// add each once the trace of every entrypoint that reaches the line proves it.
    pub unproven: Vec<Diagnostic>,
}

/// The shape of a tensor whose rank the analysis does not know: the editor shows it only once
/// a trace has replaced it with the exported program's.
pub const UNKNOWN_SHAPE: &str = "?";

/// The shape the analysis infers for a tensor named in traced code: what an editor shows on
/// hover, and as an inlay hint after an assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeHint {
    /// The name: a binding (`h = ...`, a parameter) or a use.
    pub range: TextRange,
    /// `[batch, dx + dy, 64]` in the user's `Dim` names; `_` is a static size the analysis does
    /// not know, `?` a dynamic one it cannot write; [`UNKNOWN_SHAPE`] when the rank is unknown.
    pub shape: String,
    /// A binding (an assignment or a parameter), not a use.
    pub binding: bool,
    /// A binding whose shape differs from what the name held before, or its first one.
    pub changed: bool,
    /// Each `Dim` the shape names, and where it is made.
    pub dims: Vec<(String, TextRange)>,
    /// The exported program's shape, from the last trace, in place of the inferred one (the
    /// analysis never sets it; the editor does).
    pub traced: bool,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|diagnostic| diagnostic.severity == Severity::Error)
    }
}
