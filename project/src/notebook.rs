//! Jupyter notebooks as Python modules: the code cells joined into one source (IPython's magics
//! and shell escapes masked), lines mapped back to cells, and fixes written back into the
//! notebook's JSON without touching anything else in it.
//!
//! The joined source keeps every cell's lines as they are, one cell after another, so a line of
//! the module is a line of one cell at the same columns. A masked line (`%time f()`,
//! `!pip install x`, `x = !ls`, `obj?`, a `%%bash` cell) keeps its indentation and becomes `...`
//! (or keeps `x = ` before it), so blocks around it still parse and nothing is reported on it.
//! Cells are numbered from 1 as VS Code and Jupyter show them: markdown and raw cells count.
//! A code cell in another language (VS Code's `"vscode": {"languageId": "shellscript"}`, or any
//! cell of a notebook whose kernel is not Python's) is left out of the module, as markdown is.

use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// Cell magics whose body is Python that runs as usual (`%%time` times it).
const PYTHON_CELL_MAGICS: &[&str] = &["time", "timeit", "capture", "prun", "debug"];

/// A notebook read from its JSON text.
#[derive(Debug)]
pub struct Notebook<'a> {
    text: &'a str,
    cells: Vec<Cell>,
    python: String,
}

/// Where a line of the joined module is in the notebook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellLine {
    /// The cell, numbered from 1 over all cells.
    pub cell: u32,
    /// The line in the cell, from 1.
    pub line: u32,
}

/// Where each code cell's lines are in the joined module, kept after the notebook's text is
/// gone (a report holds it to show positions by cell).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CellMap {
    /// (cell number from 1, first line in the module from 0, line count), code cells in order.
    cells: Vec<(u32, usize, usize)>,
    /// Where each line of each code cell (in the order of `cells`) is written in the
    /// notebook's JSON text.
    file_lines: Vec<Vec<FileLine>>,
}

/// Where one line of a cell is written in the notebook's file, for a `path:line:col` that an
/// editor or a terminal can jump to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct FileLine {
    /// The file's line, from 1.
    line: u32,
    /// The file's column (in characters, from 1) of each character of the cell's line, and one
    /// past its last: JSON's escapes (`\"`, `\\`, `\u00e9`) make them differ from the cell's.
    columns: Vec<u32>,
}

impl CellMap {
    /// Where a line and column of the module (both from 1, the column in characters) are
    /// written in the notebook's file, as (line, column) from 1.
    pub fn file_position(&self, module_line: u32, column: u32) -> Option<(u32, u32)> {
        let line = usize::try_from(module_line.checked_sub(1)?).ok()?;
        let (index, within) = self.cells.iter().enumerate().find_map(|(index, cell)| {
            let within = line.checked_sub(cell.1)?;
            (within < cell.2).then_some((index, within))
        })?;
        let written = self.file_lines.get(index)?.get(within)?;
        let column = usize::try_from(column.checked_sub(1)?).ok()?;
        let file_column = written
            .columns
            .get(column)
            .or_else(|| written.columns.last())?;
        Some((written.line, *file_column))
    }

    /// The cell and cell line of a line of the module (both from 1).
    pub fn locate(&self, module_line: u32) -> Option<CellLine> {
        let line = usize::try_from(module_line.checked_sub(1)?).ok()?;
        self.cells.iter().find_map(|&(cell, first, count)| {
            let within = line.checked_sub(first)?;
            (within < count).then(|| CellLine {
                cell,
                line: u32::try_from(within + 1).unwrap_or(u32::MAX),
            })
        })
    }
}

/// An edit of the joined module, by byte offsets into [`Notebook::python`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleEdit {
    pub range: Range<usize>,
    pub content: String,
}

#[derive(Debug)]
struct Cell {
    /// The cell's number, from 1.
    number: u32,
    /// The JSON value of the cell's `source`, as bytes of the notebook's text.
    source_span: Range<usize>,
    /// The cell's source as Jupyter shows it.
    text: String,
    /// For code cells: the first line of the cell in the joined module (0-based) and which of
    /// its lines are masked.
    code: Option<CodeLines>,
}

#[derive(Debug, Clone)]
struct CodeLines {
    first: usize,
    masked: Vec<bool>,
}

#[derive(Deserialize)]
struct RawNotebook<'a> {
    #[serde(borrow)]
    cells: Option<Vec<RawCell<'a>>>,
    nbformat: Option<u32>,
    metadata: Option<Value>,
}

#[derive(Deserialize)]
struct RawCell<'a> {
    cell_type: String,
    #[serde(borrow)]
    source: &'a RawValue,
    metadata: Option<Value>,
}

/// The language a notebook says its code cells are in: its kernel's (`kernelspec.language`),
/// or the one it last ran (`language_info.name`); `None` when it does not say.
fn notebook_language(metadata: Option<&Value>) -> Option<&str> {
    let metadata = metadata?;
    metadata
        .pointer("/kernelspec/language")
        .or_else(|| metadata.pointer("/language_info/name"))
        .and_then(Value::as_str)
}

/// The language VS Code gave a code cell (`metadata.vscode.languageId`).
fn cell_language(metadata: Option<&Value>) -> Option<&str> {
    metadata?
        .pointer("/vscode/languageId")
        .and_then(Value::as_str)
}

/// Whether a language a notebook or a cell names is Python (`python`, `python3`, `ipython`).
fn is_python(language: &str) -> bool {
    let language = language.to_ascii_lowercase();
    language.starts_with("python") || language.starts_with("ipython")
}

/// Code cells appended one after another as one module, each masked (see the module's doc).
#[derive(Default)]
struct Joiner {
    python: String,
    next_line: usize,
}

impl Joiner {
    fn push(&mut self, cell: &str) -> CodeLines {
        let (masked_text, masked) = mask(cell);
        self.python.push_str(&masked_text);
        if !masked_text.is_empty() && !masked_text.ends_with('\n') {
            self.python.push('\n');
        }
        let lines = CodeLines {
            first: self.next_line,
            masked,
        };
        self.next_line += lines.masked.len();
        lines
    }
}

/// The cells of a notebook an editor holds open, joined as [`Notebook::python`] joins a file's:
/// for the language server, which gets cells, not the notebook's JSON.
#[derive(Debug)]
pub struct JoinedCells {
    pub python: String,
    /// By cell index: the first line in `python` (0-based) and whether each line is masked;
    /// `None` for a markup cell.
    lines: Vec<Option<CodeLines>>,
}

impl JoinedCells {
    /// `cells` in order: whether each is a code cell, and its text.
    pub fn new<'t>(cells: impl IntoIterator<Item = (bool, &'t str)>) -> Self {
        let mut joiner = Joiner::default();
        let lines = cells
            .into_iter()
            .map(|(code, text)| code.then(|| joiner.push(text)))
            .collect();
        Self {
            python: joiner.python,
            lines,
        }
    }

    /// The cell index and the line in it (both from 0) of a line of `python` (from 0), and
    /// whether that line is masked IPython syntax.
    pub fn locate(&self, module_line: usize) -> Option<(usize, usize, bool)> {
        self.lines.iter().enumerate().find_map(|(index, lines)| {
            let lines = lines.as_ref()?;
            let within = module_line.checked_sub(lines.first)?;
            lines
                .masked
                .get(within)
                .map(|masked| (index, within, *masked))
        })
    }
}

impl<'a> Notebook<'a> {
    /// Reads a notebook (nbformat 4); the error says what is wrong with it.
    pub fn parse(text: &'a str) -> Result<Self, String> {
        let raw: RawNotebook<'a> =
            serde_json::from_str(text).map_err(|error| format!("not a notebook: {error}"))?;
        let Some(raw_cells) = raw.cells else {
            return Err(match raw.nbformat {
                Some(version) if version < 4 => format!(
                    "nbformat {version} notebooks are not supported; convert it with `jupyter nbconvert --to notebook --nbformat 4`"
                ),
                _ => "not a notebook: it has no `cells` list".to_owned(),
            });
        };
        let mut cells = Vec::with_capacity(raw_cells.len());
        let mut joiner = Joiner::default();
        let notebook_language = notebook_language(raw.metadata.as_ref());
        for (index, raw) in raw_cells.into_iter().enumerate() {
            let source = raw.source.get();
            let start = source.as_ptr() as usize - text.as_ptr() as usize;
            let text_of_cell = decode_source(source)
                .map_err(|error| format!("cell {}: its source {error}", index + 1))?;
            let python = cell_language(raw.metadata.as_ref())
                .or(notebook_language)
                .is_none_or(is_python);
            let code = (raw.cell_type == "code" && python).then(|| joiner.push(&text_of_cell));
            cells.push(Cell {
                number: u32::try_from(index + 1).unwrap_or(u32::MAX),
                source_span: start..start + source.len(),
                text: text_of_cell,
                code,
            });
        }
        Ok(Self {
            text,
            cells,
            python: joiner.python,
        })
    }

    /// The code cells as one Python module.
    pub fn python(&self) -> &str {
        &self.python
    }

    /// The cell and cell line of a line of the module (both from 1).
    pub fn locate(&self, module_line: u32) -> Option<CellLine> {
        self.cell_map().locate(module_line)
    }

    /// Where the code cells' lines are in the module.
    pub fn cell_map(&self) -> CellMap {
        CellMap {
            cells: self
                .cells
                .iter()
                .filter_map(|cell| {
                    let code = cell.code.as_ref()?;
                    Some((cell.number, code.first, code.masked.len()))
                })
                .collect(),
            file_lines: self
                .cells
                .iter()
                .filter(|cell| cell.code.is_some())
                .map(|cell| file_lines(self.text, cell.source_span.clone()))
                .collect(),
        }
    }

    /// The notebook's text with the module changed from [`Self::python`] to `fixed`: each
    /// changed run of lines becomes an edit of its cell ([`Self::apply`]).
    pub fn rewrite(&self, fixed: &str) -> Result<String, String> {
        let diff = similar::TextDiff::from_lines(self.python.as_str(), fixed);
        let old_lines = line_starts(&self.python);
        let new_lines = line_starts(fixed);
        let offset = |starts: &[usize], text: &str, line: usize| {
            starts
                .get(line)
                .copied()
                .unwrap_or(text.len())
                .min(text.len())
        };
        let mut edits = Vec::new();
        for op in diff.ops() {
            let (old, new) = (op.old_range(), op.new_range());
            if matches!(op, similar::DiffOp::Equal { .. }) {
                continue;
            }
            let start = offset(&old_lines, &self.python, old.start);
            let end = offset(&old_lines, &self.python, old.end);
            let content =
                &fixed[offset(&new_lines, fixed, new.start)..offset(&new_lines, fixed, new.end)];
            edits.push(ModuleEdit {
                range: start..end,
                content: content.to_owned(),
            });
        }
        self.apply(&edits)
    }

    /// The notebook's text with `edits` (of the module) made in their cells; everything else
    /// (outputs, metadata, the JSON's layout) stays byte for byte. An edit that spans two cells
    /// or touches a masked line is refused: it has no place in the notebook.
    pub fn apply(&self, edits: &[ModuleEdit]) -> Result<String, String> {
        let module_lines = line_starts(&self.python);
        let mut per_cell: Vec<Vec<(Range<usize>, &str)>> = vec![Vec::new(); self.cells.len()];
        for edit in edits {
            let (start_cell, start) = self.cell_offset(&module_lines, edit.range.start, false)?;
            let (end_cell, end) = if edit.range.is_empty() {
                (start_cell, start)
            } else {
                self.cell_offset(&module_lines, edit.range.end, true)?
            };
            if start_cell != end_cell {
                return Err(format!(
                    "an edit spans cells {} and {}",
                    self.cells[start_cell].number, self.cells[end_cell].number
                ));
            }
            per_cell[start_cell].push((start..end, edit.content.as_str()));
        }
        let mut out = String::with_capacity(self.text.len());
        let mut copied = 0;
        for (cell, mut cell_edits) in self.cells.iter().zip(per_cell) {
            if cell_edits.is_empty() {
                continue;
            }
            cell_edits.sort_by_key(|(range, _)| (range.start, range.end));
            let mut text = cell.text.clone();
            for (range, content) in cell_edits.iter().rev() {
                text.replace_range(range.clone(), content);
            }
            out.push_str(&self.text[copied..cell.source_span.start]);
            out.push_str(&encode_source(&self.text[cell.source_span.clone()], &text));
            copied = cell.source_span.end;
        }
        out.push_str(&self.text[copied..]);
        Ok(out)
    }

    /// The cell (by index) and byte offset in its text of a byte offset of the module. The
    /// start of a cell's first line is also the end of the cell before it: an edit's end
    /// (`at_end`) there belongs to the cell before, its start to the cell it starts.
    fn cell_offset(
        &self,
        module_lines: &[usize],
        offset: usize,
        at_end: bool,
    ) -> Result<(usize, usize), String> {
        let line = module_lines.partition_point(|start| *start <= offset) - 1;
        let column = offset - module_lines[line];
        if at_end && column == 0 && line > 0 {
            if let Some(found) = self.cell_line(line - 1) {
                let (index, within) = found?;
                let cell = &self.cells[index];
                let end = line_starts(&cell.text)
                    .get(within + 1)
                    .copied()
                    .unwrap_or(cell.text.len());
                return Ok((index, end));
            }
        }
        let (index, within) = self
            .cell_line(line)
            .ok_or_else(|| "an edit lies outside every code cell".to_owned())??;
        let cell = &self.cells[index];
        let start = line_starts(&cell.text)
            .get(within)
            .copied()
            .unwrap_or(cell.text.len());
        Ok((index, (start + column).min(cell.text.len())))
    }

    /// The code cell (by index) holding a line of the module (0-based), and the line in it;
    /// an error when the line is masked IPython syntax.
    fn cell_line(&self, line: usize) -> Option<Result<(usize, usize), String>> {
        self.cells.iter().enumerate().find_map(|(index, cell)| {
            let code = cell.code.as_ref()?;
            let within = line.checked_sub(code.first)?;
            let masked = *code.masked.get(within)?;
            Some(if masked {
                Err(format!(
                    "an edit touches line {} of cell {}, which is IPython syntax",
                    within + 1,
                    cell.number
                ))
            } else {
                Ok((index, within))
            })
        })
    }
}

/// A cell's `source`: one string, or a list of strings to join.
fn decode_source(raw: &str) -> Result<String, String> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Source {
        Joined(String),
        Lines(Vec<String>),
    }
    match serde_json::from_str::<Source>(raw) {
        Ok(Source::Joined(text)) => Ok(text),
        Ok(Source::Lines(lines)) => Ok(lines.concat()),
        Err(_) => Err("is neither a string nor a list of strings".to_owned()),
    }
}

/// `text` as a `source` value written the way `original` was: a list of lines (with the
/// original's indentation) or one string.
fn encode_source(original: &str, text: &str) -> String {
    let quote = |line: &str| serde_json::to_string(line).unwrap_or_else(|_| "\"\"".to_owned());
    if !original.trim_start().starts_with('[') {
        return quote(text);
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if lines.is_empty() {
        return "[]".to_owned();
    }
    let inner = &original[1..original.len() - 1];
    // The layout between `[` and the first line, and before `]`: nbformat writes "\n    " and
    // "\n   "; a compact list has none.
    let (lead, trail) = match (inner.find('"'), inner.rfind('"')) {
        (Some(first), Some(last)) => (&inner[..first], &inner[last + 1..]),
        _ => ("", ""),
    };
    let separator = format!(",{lead}");
    let body: Vec<String> = lines.into_iter().map(quote).collect();
    format!("[{lead}{}{trail}]", body.join(&separator))
}

/// Where each line of a cell's `source` (the JSON value at `span` of the notebook's `text`) is
/// written in the file: the strings are decoded character by character, and each decoded
/// character remembers the file position of the text that wrote it.
fn file_lines(text: &str, span: Range<usize>) -> Vec<FileLine> {
    let before = &text[..span.start];
    let mut line = u32::try_from(before.matches('\n').count() + 1).unwrap_or(u32::MAX);
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let mut column = u32::try_from(before[line_start..].chars().count() + 1).unwrap_or(u32::MAX);
    let mut lines = Vec::new();
    let mut current = FileLine {
        line,
        columns: Vec::new(),
    };
    let mut in_string = false;
    let mut closing_quote = column;
    let mut chars = text[span].chars().peekable();
    while let Some(c) = chars.next() {
        let here = (line, column);
        column += 1;
        if !in_string {
            if c == '\n' {
                line += 1;
                column = 1;
            } else if c == '"' {
                in_string = true;
            }
            continue;
        }
        let decoded = match c {
            '"' => {
                in_string = false;
                closing_quote = here.1;
                continue;
            }
            '\\' => {
                let escaped = chars.next();
                column += 1;
                if escaped == Some('u') {
                    // Four hex digits; a surrogate pair (`\ud83d\ude00`) is one character,
                    // whose second half is passed over here.
                    let digits: String = chars.by_ref().take(4).collect();
                    column += 4;
                    if u32::from_str_radix(&digits, 16)
                        .is_ok_and(|unit| (0xD800..0xDC00).contains(&unit))
                        && chars.peek() == Some(&'\\')
                    {
                        chars.by_ref().take(6).for_each(drop);
                        column += 6;
                    }
                    'u'
                } else if escaped == Some('n') {
                    '\n'
                } else {
                    escaped.unwrap_or(' ')
                }
            }
            other => other,
        };
        if current.columns.is_empty() {
            current.line = here.0;
        }
        current.columns.push(here.1);
        if decoded == '\n' {
            lines.push(std::mem::take(&mut current));
        }
    }
    // The last line, unless the cell ended with a newline: it ends at its string's quote.
    if !current.columns.is_empty() {
        current.columns.push(closing_quote);
        lines.push(current);
    }
    lines
}

/// Byte offsets where each line of `text` starts (a final empty line after a newline included).
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(at, _)| at + 1))
        .collect()
}

/// The cell's text with IPython syntax masked, and which lines were.
fn mask(text: &str) -> (String, Vec<bool>) {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let cell_magic = lines
        .iter()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| line.trim_start().strip_prefix("%%"))
        .map(|rest| rest.split_whitespace().next().unwrap_or(""));
    let whole_cell = cell_magic.is_some_and(|name| !PYTHON_CELL_MAGICS.contains(&name));
    let mut out = String::with_capacity(text.len());
    let mut masked = Vec::with_capacity(lines.len());
    let mut continued = false;
    for line in lines {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let trimmed = body.trim_start();
        let indent = &body[..body.len() - trimmed.len()];
        let escape =
            trimmed.starts_with(['%', '!', '?']) || is_help(trimmed) || is_automagic(trimmed);
        let replacement = if whole_cell || continued {
            // A non-Python cell magic's body, or the rest of an escape continued with `\`.
            Some(String::new())
        } else if escape {
            Some(format!("{indent}..."))
        } else {
            assignment_escape(body).map(|target| format!("{target}..."))
        };
        if let Some(replacement) = replacement {
            continued = !whole_cell && body.trim_end().ends_with('\\');
            out.push_str(&replacement);
            masked.push(true);
        } else {
            out.push_str(body);
            masked.push(false);
        }
        out.push_str(newline);
    }
    (out, masked)
}

/// Line magics IPython runs without their `%` (its automagic, on by default) that notebooks
/// write that way: `pip install x`, `cd data`, `matplotlib inline`.
const AUTOMAGICS: &[&str] = &[
    "pip",
    "conda",
    "mamba",
    "cd",
    "matplotlib",
    "load_ext",
    "autoreload",
];

/// `pip install timm`: a line magic written without its `%`. IPython takes the line for one when
/// the magic's name is followed by words, not by what would make it Python (`pip = 3`,
/// `cd.path`, `pip(x)`, `pip + 1`).
fn is_automagic(line: &str) -> bool {
    let name_end = line
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(line.len());
    let (name, rest) = line.split_at(name_end);
    if !AUTOMAGICS.contains(&name) || !rest.starts_with([' ', '\t']) {
        return false;
    }
    let rest = rest.trim_start();
    !rest.is_empty()
        && !rest.starts_with([
            '=', '+', '*', '/', '%', '<', '>', '!', '&', '|', '^', '.', '(', '[', ',', ':', ';',
            '#',
        ])
        && !["if ", "else ", "and ", "or ", "in ", "is ", "not ", "for "]
            .iter()
            .any(|keyword| rest.starts_with(keyword))
}

/// `torch.ones?`, `model.forward??`, `torch.*ones*?`: IPython's help on a name.
fn is_help(line: &str) -> bool {
    let name = line.trim_end().trim_end_matches('?');
    name.len() < line.trim_end().len()
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '*'))
}

/// `x = !ls` or `x = %time f()`: the text up to and including `= ` when the value is IPython.
fn assignment_escape(line: &str) -> Option<&str> {
    let equals = line.find('=')?;
    let (target, value) = (&line[..equals], &line[equals + 1..]);
    let simple_target = !target.trim().is_empty()
        && target
            .trim()
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == ',' || c == ' ' || c == '.');
    let escaped = value.trim_start().starts_with('!') || value.trim_start().starts_with('%');
    (simple_target && escaped).then(|| &line[..line.len() - value.trim_start().len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_in_the_file_follow_json_escapes_and_both_source_forms() {
        // Cell 1 is a list of lines with escapes; cell 2 one string on one line of the file.
        let text = "{\"cells\": [\n {\"cell_type\": \"code\", \"source\": [\n  \"s = \\\"\u{e9}\\\\\\u00e9\\\"; t = 1\\n\",\n  \"u = 2\"\n ]},\n {\"cell_type\": \"code\", \"source\": \"a = 1\\nb = 2\\n\"}\n], \"nbformat\": 4}\n";
        let notebook = Notebook::parse(text).unwrap();
        assert_eq!(
            notebook.python(),
            "s = \"\u{e9}\\\u{e9}\"; t = 1\nu = 2\na = 1\nb = 2\n"
        );
        let cells = notebook.cell_map();
        let file_lines: Vec<&str> = text.lines().collect();
        let written = |(line, column): (u32, u32)| -> String {
            file_lines[line as usize - 1]
                .chars()
                .skip(column as usize - 1)
                .take(5)
                .collect()
        };
        // `t` (the cell's column 12) comes after an escaped quote, a backslash and a `\u00e9`.
        assert_eq!(written(cells.file_position(1, 12).unwrap()), "t = 1");
        assert_eq!(cells.file_position(1, 1), Some((3, 4)));
        assert_eq!(written(cells.file_position(2, 1).unwrap()), "u = 2");
        // One past the end of the line: its newline's escape, or the closing quote.
        assert_eq!(written(cells.file_position(1, 17).unwrap()), "\\n\",");
        assert_eq!(written(cells.file_position(2, 6).unwrap()), "\"");
        // The second cell's lines share one line of the file.
        let (a, b) = (
            cells.file_position(3, 1).unwrap(),
            cells.file_position(4, 1).unwrap(),
        );
        assert_eq!((a.0, b.0), (6, 6));
        assert_eq!(written(b), "b = 2");
        assert_eq!(cells.file_position(5, 1), None);
    }

    /// A notebook as Jupyter writes it: indent 1, sources as lists of lines.
    const SAVED: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "metadata": {},
   "source": [
    "# A model"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": ["ok\n"]
    }
   ],
   "source": [
    "%matplotlib inline\n",
    "import torch\n",
    "files = !ls\n",
    "x = torch.ones(2)"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "metadata": {},
   "outputs": [],
   "source": "if x.sum() > 0:\n    %time y = 1\n    y = 2\n"
  }
 ],
 "metadata": {"kernelspec": {"name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

    #[test]
    fn code_cells_join_into_one_module_with_ipython_masked() {
        let notebook = Notebook::parse(SAVED).unwrap();
        assert_eq!(
            notebook.python(),
            "...\nimport torch\nfiles = ...\nx = torch.ones(2)\nif x.sum() > 0:\n    ...\n    y = 2\n"
        );
    }

    #[test]
    fn module_lines_map_to_cells_counted_as_editors_show_them() {
        let notebook = Notebook::parse(SAVED).unwrap();
        assert_eq!(notebook.locate(2), Some(CellLine { cell: 2, line: 2 }));
        assert_eq!(notebook.locate(4), Some(CellLine { cell: 2, line: 4 }));
        assert_eq!(notebook.locate(5), Some(CellLine { cell: 3, line: 1 }));
        assert_eq!(notebook.locate(7), Some(CellLine { cell: 3, line: 3 }));
        assert_eq!(notebook.locate(8), None);
        assert_eq!(notebook.locate(0), None);
    }

    /// The byte range of `needle` in the notebook's module.
    fn find(notebook: &Notebook<'_>, needle: &str) -> Range<usize> {
        let start = notebook.python().find(needle).unwrap();
        start..start + needle.len()
    }

    #[test]
    fn an_edit_rewrites_only_its_cells_source_in_the_same_layout() {
        let notebook = Notebook::parse(SAVED).unwrap();
        let edits = [
            ModuleEdit {
                range: find(&notebook, "torch.ones(2)"),
                content: "torch.ones(4)".to_owned(),
            },
            ModuleEdit {
                range: find(&notebook, "if x.sum() > 0:"),
                content: "if bool(x.sum() > 0):  # checked\nz = 1\nif True:".to_owned(),
            },
        ];
        let written = notebook.apply(&edits).unwrap();
        let expected = SAVED
            .replace("\"x = torch.ones(2)\"", "\"x = torch.ones(4)\"")
            .replace(
                "\"if x.sum() > 0:\\n",
                "\"if bool(x.sum() > 0):  # checked\\nz = 1\\nif True:\\n",
            );
        assert_eq!(written, expected);
        // The rewritten notebook reads back with the edits in place.
        let again = Notebook::parse(&written).unwrap();
        assert!(again.python().contains("x = torch.ones(4)\n"));
        assert!(again.python().contains("z = 1\nif True:\n    ...\n"));
    }

    #[test]
    fn a_list_source_gets_lines_added_in_its_own_indentation() {
        let notebook = Notebook::parse(SAVED).unwrap();
        let at = find(&notebook, "import torch\n").start;
        let written = notebook
            .apply(&[ModuleEdit {
                range: at..at,
                content: "from torch.export import Dim\n".to_owned(),
            }])
            .unwrap();
        assert!(
            written.contains(
                "   \"source\": [\n    \"%matplotlib inline\\n\",\n    \"from torch.export import Dim\\n\",\n    \"import torch\\n\","
            ),
            "{written}"
        );
        assert!(
            written.contains("\"text\": [\"ok\\n\"]"),
            "outputs are kept"
        );
    }

    #[test]
    fn edits_on_ipython_lines_or_across_cells_are_refused() {
        let notebook = Notebook::parse(SAVED).unwrap();
        let magic = find(&notebook, "...\nimport");
        assert!(
            notebook
                .apply(&[ModuleEdit {
                    range: magic.start..magic.start + 3,
                    content: "pass".to_owned(),
                }])
                .unwrap_err()
                .contains("IPython")
        );
        let across = find(&notebook, "torch.ones(2)\nif");
        assert!(
            notebook
                .apply(&[ModuleEdit {
                    range: across,
                    content: String::new(),
                }])
                .unwrap_err()
                .contains("spans cells 2 and 3")
        );
    }

    #[test]
    fn cell_magics_mask_the_cell_unless_its_body_is_python() {
        let text = r#"{"cells": [
            {"cell_type": "code", "source": "%%bash\necho hi\nls\n"},
            {"cell_type": "code", "source": "%%time\nx = 1\n"},
            {"cell_type": "code", "source": "!pip install \\\n  torch\nhelp?\n# a comment?\ny = 2  # why?"}
        ], "nbformat": 4}"#;
        let notebook = Notebook::parse(text).unwrap();
        assert_eq!(
            notebook.python(),
            "\n\n\n...\nx = 1\n...\n\n...\n# a comment?\ny = 2  # why?\n"
        );
        assert_eq!(notebook.locate(10), Some(CellLine { cell: 3, line: 5 }));
    }

    #[test]
    fn cells_in_another_language_stay_out_of_the_module() {
        // A shell cell, a Python cell VS Code names, a cell of no stated language (the
        // notebook's: Python), and a plain-text one.
        let text = r#"{"cells": [
            {"cell_type": "code", "metadata": {"vscode": {"languageId": "shellscript"}}, "source": "bash run.sh --x 1\n"},
            {"cell_type": "code", "metadata": {"vscode": {"languageId": "python"}}, "source": "a = 1\n"},
            {"cell_type": "code", "metadata": {}, "source": "b = 2\n"},
            {"cell_type": "code", "metadata": {"vscode": {"languageId": "plaintext"}}, "source": "Epoch: 1 | loss 0.4\n"}
        ], "metadata": {"language_info": {"name": "python"}}, "nbformat": 4}"#;
        let notebook = Notebook::parse(text).unwrap();
        assert_eq!(notebook.python(), "a = 1\nb = 2\n");
        assert_eq!(notebook.locate(1), Some(CellLine { cell: 2, line: 1 }));
        assert_eq!(notebook.locate(2), Some(CellLine { cell: 3, line: 1 }));
        // A kernel in another language: no cell is Python unless VS Code says it is.
        let r = r#"{"cells": [
            {"cell_type": "code", "source": "x <- c(1, 2)\n"},
            {"cell_type": "code", "metadata": {"vscode": {"languageId": "python"}}, "source": "y = 1\n"}
        ], "metadata": {"kernelspec": {"language": "R"}}, "nbformat": 4}"#;
        assert_eq!(Notebook::parse(r).unwrap().python(), "y = 1\n");
    }

    #[test]
    fn automagics_are_masked_and_python_that_looks_like_them_is_not() {
        let (masked, lines) = mask(
            "pip install timm\ncd data\nmatplotlib inline\npip = 3\ncd.path\npip(x)\npip if a else b\nconda\n",
        );
        assert_eq!(
            masked,
            "...\n...\n...\npip = 3\ncd.path\npip(x)\npip if a else b\nconda\n"
        );
        assert_eq!(lines, [true, true, true, false, false, false, false, false]);
    }

    #[test]
    fn what_is_not_a_notebook_says_why() {
        assert!(
            Notebook::parse("{")
                .unwrap_err()
                .starts_with("not a notebook:")
        );
        assert!(
            Notebook::parse(r#"{"nbformat": 3, "worksheets": []}"#)
                .unwrap_err()
                .contains("nbformat 3")
        );
        assert_eq!(
            Notebook::parse(r#"{"cells": [{"cell_type": "code", "source": 7}]}"#).unwrap_err(),
            "cell 1: its source is neither a string nor a list of strings"
        );
    }
}
