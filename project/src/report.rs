//! What a check found in one file, as every consumer of a check takes it: the command's
//! renderers, `pt2lsp export`, the Python API. Positions are 1-based lines and 1-based columns
//! counted in characters (Unicode scalar values), as ruff prints them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pt2lsp_analyzer::{Diagnostic, LineIndex, TextSize};

use crate::notebook::CellMap;

/// One checked file: what is shown for it and what was found in it.
#[derive(Debug)]
pub struct FileReport {
    /// The path as shown: relative to the current directory when under it.
    pub path: PathBuf,
    /// The text the diagnostics' offsets point into.
    pub text: String,
    /// Built on the first position asked for: most files of a large check report nothing.
    line_index: OnceLock<LineIndex>,
    /// Sorted by position.
    pub diagnostics: Vec<Reported>,
    /// For a notebook: `text` is its code cells joined, and positions are shown by cell.
    pub notebook: Option<CellMap>,
    /// The static analysis's diagnostics that hold only where an export that succeeded ran
    /// their line (`pt2lsp_analyzer::Report::unproven`): `check --trace` adds those it proves.
    pub unproven: Vec<Diagnostic>,
}

/// Which pass found a diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The static analysis, from the source alone.
    Static,
    /// The tracer, from running the real exporter (`--trace`).
    Trace,
    /// Found by the static analysis and confirmed by the tracer: the static message and fix.
    Both,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Static => "static",
            Source::Trace => "trace",
            Source::Both => "static+trace",
        }
    }
}

/// A diagnostic as reported: what was found, by which pass, with the pass's extra data (the
/// tracer's suggested `dynamic_shapes` fixes). Derefs to the diagnostic, so renderers read
/// `reported.rule` and `reported.range` directly.
#[derive(Debug, Clone)]
pub struct Reported {
    pub diagnostic: Diagnostic,
    pub source: Source,
    pub data: Option<serde_json::Value>,
}

impl Reported {
    pub fn found_statically(diagnostic: Diagnostic) -> Self {
        Self {
            diagnostic,
            source: Source::Static,
            data: None,
        }
    }
}

impl std::ops::Deref for Reported {
    type Target = Diagnostic;

    fn deref(&self) -> &Diagnostic {
        &self.diagnostic
    }
}

/// A 1-based line and a 1-based column counted in characters; in a notebook, the line is the
/// cell's and `cell` its number (from 1, every cell counted, as editors show them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: u32,
    pub column: u32,
    pub cell: Option<u32>,
}

impl FileReport {
    pub fn new(path: PathBuf, text: String, diagnostics: Vec<Diagnostic>) -> Self {
        Self {
            path,
            text,
            line_index: OnceLock::new(),
            diagnostics: diagnostics
                .into_iter()
                .map(Reported::found_statically)
                .collect(),
            notebook: None,
            unproven: Vec::new(),
        }
    }

    /// Replaces every diagnostic with `diagnostics`, all found by the static analysis.
    pub fn set_static(&mut self, diagnostics: Vec<Diagnostic>) {
        self.diagnostics = diagnostics
            .into_iter()
            .map(Reported::found_statically)
            .collect();
    }

    /// The lines of [`Self::text`].
    pub fn line_index(&self) -> &LineIndex {
        self.line_index.get_or_init(|| LineIndex::new(&self.text))
    }

    /// The text and its lines beside the diagnostics, to change the diagnostics by position.
    pub fn diagnostics_by_line(&mut self) -> (&str, &LineIndex, &mut Vec<Reported>) {
        let lines = self.line_index.get_or_init(|| LineIndex::new(&self.text));
        (&self.text, lines, &mut self.diagnostics)
    }

    pub fn position(&self, offset: TextSize) -> Position {
        let (line, column) = self.line_index().line_char_column(offset, &self.text);
        let in_cell = self
            .notebook
            .as_ref()
            .and_then(|cells| cells.locate(line + 1));
        Position {
            line: in_cell.map_or(line + 1, |at| at.line),
            column: column + 1,
            cell: in_cell.map(|at| at.cell),
        }
    }

    /// Where `offset` is written in the file on disk, as (line, column) from 1: the same as
    /// [`Self::position`] but in a notebook, whose cells' lines are strings in its JSON text.
    pub fn file_position(&self, offset: TextSize) -> (u32, u32) {
        let (line, column) = self.line_index().line_char_column(offset, &self.text);
        self.notebook
            .as_ref()
            .and_then(|cells| cells.file_position(line + 1, column + 1))
            .unwrap_or((line + 1, column + 1))
    }

    /// [`Self::position`] of where a range ends: in a notebook, the end of a cell's last line
    /// stays in that cell (its line count + 1, column 1), though it is also the start of the
    /// next cell.
    pub fn end_position(&self, offset: TextSize) -> Position {
        let position = self.position(offset);
        let Some(cells) = &self.notebook else {
            return position;
        };
        let (line, column) = self.line_index().line_char_column(offset, &self.text);
        if column != 0 || line == 0 {
            return position;
        }
        match (cells.locate(line), cells.locate(line + 1)) {
            (Some(before), Some(after)) if before.cell != after.cell => Position {
                line: before.line + 1,
                column: 1,
                cell: Some(before.cell),
            },
            (Some(before), None) => Position {
                line: before.line + 1,
                column: 1,
                cell: Some(before.cell),
            },
            _ => position,
        }
    }

    /// The path with `/` separators, as JSON, SARIF and GitHub expect on every platform.
    pub fn path_string(&self) -> String {
        path_string(&self.path)
    }
}

/// A related location's file as the reports show paths: relative to the current directory when
/// under it (the analyzer and the tracer name files absolutely), with `/` separators.
pub fn related_path(path: &Path) -> String {
    let shown = std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf());
    path_string(&shown)
}

pub fn path_string(path: &Path) -> String {
    let text = path.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' {
        text.into_owned()
    } else {
        text.replace('\\', "/")
    }
}
