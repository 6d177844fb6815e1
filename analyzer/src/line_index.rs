//! Byte offset to line and column, for renderers at the edge (CLI, server).

use ruff_text_size::TextSize;

/// Start offsets of every line of one text.
#[derive(Debug, Clone)]
pub struct LineIndex {
    line_starts: Vec<TextSize>,
}

/// A zero-based line and a zero-based column counted in bytes from the line start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineColumn {
    pub line: u32,
    pub byte_column: u32,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![TextSize::new(0)];
        if text.contains('\r') {
            let bytes = text.as_bytes();
            for (offset, byte) in bytes.iter().enumerate() {
                // A lone `\r` ends a line in Python as in LSP; `\r\n` ends it at the `\n`.
                let ends_line = match byte {
                    b'\n' => true,
                    b'\r' => bytes.get(offset + 1) != Some(&b'\n'),
                    _ => false,
                };
                if ends_line {
                    line_starts.push(TextSize::new(offset as u32 + 1));
                }
            }
        } else {
            // The common case, with the standard library's fast search for one byte.
            line_starts.extend(
                text.match_indices('\n')
                    .map(|(offset, _)| TextSize::new(offset as u32 + 1)),
            );
        }
        Self { line_starts }
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The offset where zero-based `line` starts; the text's end for lines past it.
    pub fn line_start(&self, line: u32, text: &str) -> TextSize {
        self.line_starts
            .get(line as usize)
            .copied()
            .unwrap_or_else(|| TextSize::new(text.len() as u32))
    }

    pub fn line_column(&self, offset: TextSize) -> LineColumn {
        let line = self.line_starts.partition_point(|start| *start <= offset) - 1;
        LineColumn {
            line: line as u32,
            byte_column: (offset - self.line_starts[line]).to_u32(),
        }
    }

    /// Zero-based line and the column counted in Unicode scalar values, as ruff prints it.
    pub fn line_char_column(&self, offset: TextSize, text: &str) -> (u32, u32) {
        let LineColumn { line, byte_column } = self.line_column(offset);
        let start = self.line_starts[line as usize].to_usize();
        let end = (start + byte_column as usize).min(text.len());
        let prefix = text.get(start..end).unwrap_or_default();
        (line, prefix.chars().count() as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let text = "ab\r\ncé\rx\n";
        let index = LineIndex::new(text);
        assert_eq!(index.line_count(), 4);
        assert_eq!(
            index.line_column(TextSize::new(5)),
            LineColumn {
                line: 1,
                byte_column: 1
            }
        );
        assert_eq!(index.line_char_column(TextSize::new(7), text), (1, 2));
        assert_eq!(
            index.line_column(TextSize::new(8)),
            LineColumn {
                line: 2,
                byte_column: 0
            }
        );
    }

    #[test]
    fn texts_without_carriage_returns_take_the_fast_search_to_the_same_lines() {
        let text = "a\n\nbc\nd";
        let index = LineIndex::new(text);
        let with_lone_return = LineIndex::new("a\n\nbc\nd\r");
        assert_eq!(index.line_starts, [0, 2, 3, 6].map(TextSize::new));
        assert_eq!(with_lone_return.line_starts[..4], index.line_starts[..]);
        assert_eq!(LineIndex::new("").line_count(), 1);
        assert_eq!(LineIndex::new("x\n").line_count(), 2);
    }
}
