//! One open document: a rope, its version, and the conversions between LSP positions and offsets.
//!
//! LSP counts columns in UTF-16 code units and ends lines only at `\n`, `\r\n` and `\r`; the
//! analyzer speaks byte offsets. Every conversion between the two lives here, so the rest of the
//! server never counts code units by hand.

use pt2lsp_analyzer::{LineIndex, TextRange, TextSize};
use ropey::Rope;
use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent};

/// The text of an open document and the version the client gave it.
#[derive(Debug, Clone)]
pub struct Document {
    rope: Rope,
    version: i32,
    /// How many characters ropey ends a line at but LSP does not (form feed, `U+2028`, ...).
    /// While it is zero, ropey's line numbers are LSP's and positions convert in O(log n);
    /// otherwise they convert through a full line index of the text, which is rare and slow.
    foreign_breaks: usize,
}

impl Document {
    pub fn new(text: &str, version: i32) -> Self {
        Self {
            rope: Rope::from_str(text),
            version,
            foreign_breaks: count_foreign_breaks(text.chars()),
        }
    }

    pub fn version(&self) -> i32 {
        self.version
    }

    /// A cheap copy of the text: ropes share their chunks.
    pub fn rope(&self) -> &Rope {
        &self.rope
    }

    pub fn text(&self) -> String {
        self.rope.to_string()
    }

    /// Applies one `didChange` notification's edits, in order, each relative to the text the
    /// previous one left.
    pub fn apply_changes(&mut self, changes: &[TextDocumentContentChangeEvent], version: i32) {
        for change in changes {
            self.apply_change(change);
        }
        self.version = version;
    }

    fn apply_change(&mut self, change: &TextDocumentContentChangeEvent) {
        let Some(range) = change.range else {
            *self = Self::new(&change.text, self.version);
            return;
        };
        let start = self.char_index(range.start);
        let end = self.char_index(range.end);
        // A client that sends a reversed range means the same span; ropey would panic on it.
        let (start, end) = if start <= end {
            (start, end)
        } else {
            (end, start)
        };
        self.foreign_breaks -= count_foreign_breaks(self.rope.slice(start..end).chars());
        self.rope.remove(start..end);
        self.rope.insert(start, &change.text);
        self.foreign_breaks += count_foreign_breaks(change.text.chars());
    }

    /// The char index of an LSP position, clamped as the protocol asks: a column past the end
    /// of its line means the line's end, a line past the end of the text means the text's end.
    pub fn char_index(&self, position: Position) -> usize {
        if self.foreign_breaks > 0 {
            let text = self.text();
            let offset = TextPositions::new(&text).offset(position);
            return self.rope.byte_to_char(offset.to_usize());
        }
        let line = position.line as usize;
        if line >= self.rope.len_lines() {
            return self.rope.len_chars();
        }
        let line_start = self.rope.line_to_char(line);
        let line_end = line_start + line_content_len(self.rope.line(line));
        let target = self.rope.char_to_utf16_cu(line_start) + position.character as usize;
        if target >= self.rope.char_to_utf16_cu(line_end) {
            line_end
        } else {
            // Inside a surrogate pair ropey rounds down to the character that holds it.
            self.rope.utf16_cu_to_char(target)
        }
    }

    /// Zero-based line `line` without its terminator; `None` past the last line.
    pub fn line(&self, line: u32) -> Option<String> {
        if self.foreign_breaks > 0 {
            let text = self.text();
            let index = LineIndex::new(&text);
            if line as usize >= index.line_count() {
                return None;
            }
            let start = index.line_start(line, &text).to_usize();
            let end = index.line_start(line + 1, &text).to_usize();
            return Some(strip_terminator(&text[start..end]).to_owned());
        }
        let slice = self.rope.get_line(line as usize)?;
        Some(slice.slice(..line_content_len(slice)).to_string())
    }
}

/// The length in chars of a rope line without its line terminator.
fn line_content_len(line: ropey::RopeSlice<'_>) -> usize {
    let len = line.len_chars();
    match (
        len.checked_sub(2).map(|i| line.char(i)),
        len.checked_sub(1).map(|i| line.char(i)),
    ) {
        (Some('\r'), Some('\n')) => len - 2,
        (_, Some('\n' | '\r')) => len - 1,
        _ => len,
    }
}

fn strip_terminator(line: &str) -> &str {
    line.strip_suffix("\r\n")
        .or_else(|| line.strip_suffix('\n'))
        .or_else(|| line.strip_suffix('\r'))
        .unwrap_or(line)
}

/// Line breaks of ropey's default (Unicode) set that are not line breaks in LSP or Python.
fn is_foreign_break(c: char) -> bool {
    matches!(
        c,
        '\u{000B}' | '\u{000C}' | '\u{0085}' | '\u{2028}' | '\u{2029}'
    )
}

fn count_foreign_breaks(chars: impl Iterator<Item = char>) -> usize {
    chars.filter(|&c| is_foreign_break(c)).count()
}

/// The LSP character (UTF-16 units) of byte offset `byte` into one line's text.
pub fn utf16_column(line: &str, byte: usize) -> u32 {
    line[..byte].encode_utf16().count() as u32
}

/// The LSP position of a place named by its 1-based line and 1-based column in characters (how
/// the analyzer and the tracer name related places in other files), counted in UTF-16 units of
/// that line of `text`. Characters past the line's end are kept as they are.
pub fn position_of_line_column(text: &str, line: u32, column: u32) -> Position {
    let line = line.saturating_sub(1);
    let chars = column.saturating_sub(1) as usize;
    let index = LineIndex::new(text);
    if line as usize >= index.line_count() {
        return Position {
            line,
            character: chars as u32,
        };
    }
    let start = index.line_start(line, text).to_usize();
    let end = index.line_start(line + 1, text).to_usize();
    let content = strip_terminator(&text[start..end]);
    let within: usize = content.chars().take(chars).map(char::len_utf16).sum();
    let beyond = chars.saturating_sub(content.chars().count());
    Position {
        line,
        character: (within + beyond) as u32,
    }
}

/// Converts between byte offsets and LSP positions on one snapshot of a text.
#[derive(Debug)]
pub struct TextPositions<'a> {
    text: &'a str,
    index: LineIndex,
}

impl<'a> TextPositions<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            index: LineIndex::new(text),
        }
    }

    /// The LSP position of a byte offset. Offsets past the end or inside a character, which a
    /// correct analyzer never reports, are moved to the nearest earlier character boundary.
    pub fn position(&self, offset: TextSize) -> Position {
        let mut offset = offset.to_usize().min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.index.line_column(TextSize::new(offset as u32)).line;
        let line_start = self.index.line_start(line, self.text).to_usize();
        let character = self.text[line_start..offset].encode_utf16().count();
        Position {
            line,
            character: character as u32,
        }
    }

    pub fn range(&self, range: TextRange) -> Range {
        Range {
            start: self.position(range.start()),
            end: self.position(range.end()),
        }
    }

    /// The byte offset of an LSP position, clamped like [`Document::char_index`].
    pub fn offset(&self, position: Position) -> TextSize {
        if position.line as usize >= self.index.line_count() {
            return TextSize::new(self.text.len() as u32);
        }
        let start = self.index.line_start(position.line, self.text).to_usize();
        let end = self
            .index
            .line_start(position.line + 1, self.text)
            .to_usize();
        let line = strip_terminator(&self.text[start..end]);
        let mut units = 0;
        for (byte, c) in line.char_indices() {
            units += c.len_utf16();
            if units > position.character as usize {
                return TextSize::new((start + byte) as u32);
            }
        }
        TextSize::new((start + line.len()) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(start: (u32, u32), end: (u32, u32), text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range {
                start: Position {
                    line: start.0,
                    character: start.1,
                },
                end: Position {
                    line: end.0,
                    character: end.1,
                },
            }),
            range_length: None,
            text: text.to_owned(),
        }
    }

    #[test]
    fn edits_count_utf16_units_on_lines_with_emoji_and_cjk() {
        let mut document = Document::new("x = '😀漢'\ny = 1\r\nz\n", 1);
        // The emoji takes two UTF-16 units, the CJK character one.
        document.apply_changes(&[change((0, 7), (0, 8), "字")], 2);
        assert_eq!(document.text(), "x = '😀字'\ny = 1\r\nz\n");
        document.apply_changes(&[change((1, 5), (2, 0), ""), change((0, 5), (0, 7), "")], 3);
        assert_eq!(document.text(), "x = '字'\ny = 1z\n");
        assert_eq!(document.version(), 3);
    }

    #[test]
    fn positions_past_the_line_end_clamp_to_it() {
        let document = Document::new("ab\r\ncd", 0);
        assert_eq!(
            document.char_index(Position {
                line: 0,
                character: 9
            }),
            2
        );
        assert_eq!(
            document.char_index(Position {
                line: 7,
                character: 0
            }),
            6
        );
        assert_eq!(document.line(0).as_deref(), Some("ab"));
        assert_eq!(document.line(2), None);
    }

    #[test]
    fn form_feed_and_line_separator_do_not_end_lines() {
        let mut document = Document::new("a\u{c}b\u{2028}c\nd", 0);
        assert_eq!(
            document.char_index(Position {
                line: 1,
                character: 0
            }),
            6
        );
        document.apply_changes(&[change((0, 4), (1, 1), "")], 1);
        assert_eq!(document.text(), "a\u{c}b\u{2028}");
        assert_eq!(document.line(0).as_deref(), Some("a\u{c}b\u{2028}"));
    }

    #[test]
    fn text_positions_round_trip() {
        let text = "a😀b\r\n漢\rc";
        let positions = TextPositions::new(text);
        for (offset, c) in text.char_indices() {
            // The `\n` of a `\r\n` is inside the terminator, which no position can name.
            if c == '\n' && text[..offset].ends_with('\r') {
                continue;
            }
            let offset = TextSize::new(offset as u32);
            assert_eq!(positions.offset(positions.position(offset)), offset);
        }
        assert_eq!(
            positions.position(TextSize::new(5)),
            Position {
                line: 0,
                character: 3
            }
        );
        assert_eq!(
            positions.position(TextSize::new(12)),
            Position {
                line: 2,
                character: 0
            }
        );
    }
}
