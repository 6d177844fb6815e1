//! Notebooks open in the editor (`notebookDocument/*`, LSP 3.17): their cells kept in order, each
//! code cell's text as a [`Document`], analysed together as `pt2lsp check` analyses a `.ipynb`
//! (the code cells joined into one module, IPython syntax masked: `pt2lsp_project::notebook`), and the
//! diagnostics published on the cells they are in, at cell-relative positions.
//!
//! A cell is not an open document of its own: hover, hints and the file-level requests do not
//! see it; code actions do, through the fix edits mapped into the cells when the diagnostics
//! were published (`DiagnosticData::cell_edits`). The notebook's version stamps an analysis: one
//! that ends after a newer change is dropped.

use std::path::PathBuf;

use dashmap::DashMap;
use pt2lsp_analyzer::{Diagnostic, LineIndex, TextRange, TextSize};
use tower_lsp_server::ls_types::{
    self as lsp, DidChangeNotebookDocumentParams, DidOpenNotebookDocumentParams, NotebookCell,
    NotebookCellKind, TextDocumentItem, TextEdit, Uri,
};

use crate::diagnostics::{self, AnalysedText, CellEdit, Finding};
use crate::document::{Document, TextPositions};
use pt2lsp_project::notebook::JoinedCells;

/// The notebooks open in the editor and which notebook each cell belongs to.
#[derive(Debug, Default)]
pub struct Notebooks {
    open: DashMap<Uri, OpenNotebook>,
    cells: DashMap<Uri, Uri>,
}

/// One open notebook.
#[derive(Debug, Clone)]
pub struct OpenNotebook {
    pub version: i32,
    /// The `.ipynb` on disk, for settings and the module's place; `None` for an untitled one.
    pub path: Option<PathBuf>,
    pub cells: Vec<Cell>,
}

/// One cell, in notebook order.
#[derive(Debug, Clone)]
pub struct Cell {
    pub uri: Uri,
    /// A code cell in Python: analysed. Markup cells and code in other languages are not, but
    /// count in the numbering, as in the editor.
    pub python: bool,
    /// The cell's language as the editor opened it (`python`; empty when not said).
    language: String,
    pub document: Document,
}

impl Notebooks {
    pub fn open(&self, params: DidOpenNotebookDocumentParams) {
        let notebook = params.notebook_document;
        let mut texts = params.cell_text_documents;
        let cells = notebook
            .cells
            .iter()
            .map(|cell| new_cell(cell, &mut texts))
            .collect::<Vec<_>>();
        for cell in &cells {
            self.cells.insert(cell.uri.clone(), notebook.uri.clone());
        }
        let path = notebook
            .uri
            .to_file_path()
            .map(std::borrow::Cow::into_owned);
        self.open.insert(
            notebook.uri,
            OpenNotebook {
                version: notebook.version,
                path,
                cells,
            },
        );
    }

    /// Applies a change (cells added, removed or re-kinded, cell texts edited); returns the
    /// cells it removed, whose diagnostics the caller clears. `None` for a notebook not open.
    pub fn change(&self, params: DidChangeNotebookDocumentParams) -> Option<Vec<Uri>> {
        let uri = params.notebook_document.uri;
        let mut removed = Vec::new();
        let mut added = Vec::new();
        {
            let mut notebook = self.open.get_mut(&uri)?;
            notebook.version = params.notebook_document.version;
            let Some(cells) = params.change.cells else {
                return Some(removed);
            };
            if let Some(structure) = cells.structure {
                let mut texts = structure.did_open.unwrap_or_default();
                let start = (structure.array.start as usize).min(notebook.cells.len());
                let end = (start + structure.array.delete_count as usize).min(notebook.cells.len());
                let inserted: Vec<Cell> = structure
                    .array
                    .cells
                    .unwrap_or_default()
                    .iter()
                    .map(|cell| new_cell(cell, &mut texts))
                    .collect();
                added.extend(inserted.iter().map(|cell| cell.uri.clone()));
                removed.extend(
                    notebook
                        .cells
                        .splice(start..end, inserted)
                        .map(|cell| cell.uri),
                );
                // A cell moved is removed and inserted in one change: it stays open.
                removed.retain(|gone| !added.contains(gone));
            }
            for data in cells.data.unwrap_or_default() {
                if let Some(cell) = notebook.cells.iter_mut().find(|c| c.uri == data.document) {
                    cell.python = is_python(&data.kind, &cell.language);
                }
            }
            for content in cells.text_content.unwrap_or_default() {
                if let Some(cell) = notebook
                    .cells
                    .iter_mut()
                    .find(|cell| cell.uri == content.document.uri)
                {
                    cell.document
                        .apply_changes(&content.changes, content.document.version);
                }
            }
        }
        for cell in &removed {
            self.cells.remove(cell);
        }
        for cell in added {
            self.cells.insert(cell, uri.clone());
        }
        Some(removed)
    }

    /// Forgets a notebook; returns its cells, whose diagnostics the caller clears.
    pub fn close(&self, uri: &Uri) -> Vec<Uri> {
        let Some((_, notebook)) = self.open.remove(uri) else {
            return Vec::new();
        };
        notebook
            .cells
            .into_iter()
            .map(|cell| {
                self.cells.remove(&cell.uri);
                cell.uri
            })
            .collect()
    }

    /// A copy of an open notebook (cells share their ropes' chunks).
    pub fn get(&self, uri: &Uri) -> Option<OpenNotebook> {
        self.open.get(uri).map(|notebook| notebook.clone())
    }

    /// The document of a cell of an open notebook.
    pub fn cell(&self, cell: &Uri) -> Option<Document> {
        let notebook_uri = self.cells.get(cell)?.clone();
        let notebook = self.open.get(&notebook_uri)?;
        let found = notebook.cells.iter().find(|c| c.uri == *cell)?;
        Some(found.document.clone())
    }

    /// The version a notebook has now.
    pub fn version(&self, uri: &Uri) -> Option<i32> {
        self.open.get(uri).map(|notebook| notebook.version)
    }
}

fn is_python(kind: &NotebookCellKind, language: &str) -> bool {
    *kind == NotebookCellKind::CODE && (language.is_empty() || language == "python")
}

fn new_cell(cell: &NotebookCell, texts: &mut Vec<TextDocumentItem>) -> Cell {
    let item = texts
        .iter()
        .position(|item| item.uri == cell.document)
        .map(|index| texts.swap_remove(index));
    let (text, version, language) = item.map_or_else(
        || (String::new(), 0, String::new()),
        |item| (item.text, item.version, item.language_id),
    );
    Cell {
        uri: cell.document.clone(),
        python: is_python(&cell.kind, &language),
        language,
        document: Document::new(&text, version),
    }
}

/// What an analysis of a notebook publishes: each Python cell's URI, version and diagnostics,
/// in cell order.
pub type CellDiagnostics = Vec<(Uri, i32, Vec<lsp::Diagnostic>)>;

/// The notebook's Python cells joined, for analysis.
pub fn join(notebook: &OpenNotebook) -> (JoinedCells, Vec<String>) {
    let texts: Vec<String> = notebook
        .cells
        .iter()
        .map(|cell| cell.document.text())
        .collect();
    let joined = JoinedCells::new(
        notebook
            .cells
            .iter()
            .zip(&texts)
            .map(|(cell, text)| (cell.python, text.as_str())),
    );
    (joined, texts)
}

/// The analyzer's diagnostics of the joined module, placed in their cells.
pub fn place(
    notebook: &OpenNotebook,
    joined: &JoinedCells,
    texts: &[String],
    found: &[Diagnostic],
    related: Option<&dyn diagnostics::RelatedTexts>,
) -> CellDiagnostics {
    let module_lines = LineIndex::new(&joined.python);
    let positions: Vec<TextPositions<'_>> =
        texts.iter().map(|text| TextPositions::new(text)).collect();
    let cell_lines: Vec<LineIndex> = texts.iter().map(|text| LineIndex::new(text)).collect();
    let locate = |offset: TextSize| -> Option<(usize, TextSize)> {
        let at = module_lines.line_column(offset);
        let (cell, line, masked) = joined.locate(at.line as usize)?;
        if masked {
            return None;
        }
        let line_start = cell_lines[cell].line_start(u32::try_from(line).ok()?, &texts[cell]);
        Some((cell, line_start + TextSize::new(at.byte_column)))
    };
    // An end at the first column of a cell's first line is the end of the cell before it.
    let locate_end = |offset: TextSize, cell: usize| -> Option<TextSize> {
        match locate(offset) {
            Some((found, end)) if found == cell => Some(end),
            _ => end_of_cell(offset, &module_lines, joined, texts)
                .and_then(|(found, end)| (found == cell).then_some(end)),
        }
    };
    let mut cells: CellDiagnostics = notebook
        .cells
        .iter()
        .filter(|cell| cell.python)
        .map(|cell| (cell.uri.clone(), cell.document.version(), Vec::new()))
        .collect();
    let module = AnalysedText::new(joined.python.clone());
    for diagnostic in found {
        let Some((cell, start)) = locate(diagnostic.range.start()) else {
            continue;
        };
        // A range that runs into the next cell ends at its own cell's end.
        let end = locate_end(diagnostic.range.end(), cell)
            .unwrap_or_else(|| TextSize::of(texts[cell].as_str()));
        let cell_edits = diagnostic
            .fix
            .as_ref()
            .and_then(|fix| {
                fix.edits
                    .iter()
                    .map(|edit| {
                        let (first, from) = locate(edit.range.start())?;
                        // An edit across cells, or into masked lines, drops the fix.
                        let to = locate_end(edit.range.end(), first)?;
                        Some(CellEdit {
                            uri: notebook.cells[first].uri.clone(),
                            version: notebook.cells[first].document.version(),
                            edit: TextEdit {
                                range: positions[first].range(TextRange::new(from, to)),
                                new_text: edit.content.clone(),
                            },
                        })
                    })
                    .collect::<Option<Vec<_>>>()
            })
            .unwrap_or_default();
        let lsp_diagnostic = diagnostics::in_cell(
            &Finding::found_statically(diagnostic.clone(), &module, notebook.version),
            positions[cell].range(TextRange::new(start, end.max(start))),
            cell_edits,
            related,
        );
        let uri = &notebook.cells[cell].uri;
        if let Some(entry) = cells.iter_mut().find(|(cell_uri, ..)| cell_uri == uri) {
            entry.2.push(lsp_diagnostic);
        }
    }
    cells
}

/// An edit's end at the first column of the line after a cell's last (its text ended there):
/// the end of that cell.
fn end_of_cell(
    offset: TextSize,
    module_lines: &LineIndex,
    joined: &JoinedCells,
    texts: &[String],
) -> Option<(usize, TextSize)> {
    let at = module_lines.line_column(offset);
    if at.byte_column != 0 || at.line == 0 {
        return None;
    }
    let (cell, _, _) = joined.locate(at.line as usize - 1)?;
    Some((cell, TextSize::of(texts[cell].as_str())))
}
