//! Fuzz target: the language server's conversions between byte offsets and LSP positions
//! (UTF-16 columns; lines end at `\n`, `\r\n` and `\r` only), and its incremental edits.
//!
//! Each conversion is compared with a naive model written from the protocol's wording: split
//! the text into lines, count UTF-16 units. `TextPositions` (diagnostics out), the rope's fast
//! path in `Document::char_index` (edits in) and the model must agree on every input.

#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use pt2lsp::fuzzing::{Document, Position, Range, TextDocumentContentChangeEvent, TextPositions};
use pt2lsp_analyzer::TextSize;

#[derive(Debug, Arbitrary)]
struct Input {
    text: String,
    positions: Vec<(u16, u16)>,
    edits: Vec<EditInput>,
}

#[derive(Debug, Arbitrary)]
struct EditInput {
    /// `None` replaces the whole text, as a client without incremental sync does.
    range: Option<((u16, u16), (u16, u16))>,
    text: String,
}

fuzz_target!(|input: Input| {
    let positions: Vec<Position> = input.positions.iter().map(|&p| position(p)).collect();
    check_text(&input.text, &positions);

    let mut document = Document::new(&input.text, 0);
    let mut expected = input.text.clone();
    for (version, edit) in (1..).zip(&input.edits) {
        let change = TextDocumentContentChangeEvent {
            range: edit.range.map(|(start, end)| Range {
                start: position(start),
                end: position(end),
            }),
            range_length: None,
            text: edit.text.clone(),
        };
        document.apply_changes(std::slice::from_ref(&change), version);
        expected = model_apply(&expected, &change);
        assert_eq!(document.text(), expected, "after {change:?}");
        assert_eq!(document.version(), version);
    }
    check_text(&expected, &positions);
    check_document(&document, &expected, &positions);
});

fn position((line, character): (u16, u16)) -> Position {
    Position {
        line: u32::from(line),
        character: u32::from(character),
    }
}

/// One line of the model: where its content starts and ends (terminator excluded).
struct ModelLine {
    start: usize,
    end: usize,
}

fn model_lines(text: &str) -> Vec<ModelLine> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(ModelLine { start, end: i });
                start = i + 1;
            }
            b'\r' => {
                lines.push(ModelLine { start, end: i });
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    lines.push(ModelLine {
        start,
        end: text.len(),
    });
    lines
}

/// The protocol's byte offset of `position`: past the last line is the text's end, past a
/// line's end is that end, inside a surrogate pair is the character holding it.
fn model_offset(text: &str, lines: &[ModelLine], position: Position) -> usize {
    let Some(line) = lines.get(position.line as usize) else {
        return text.len();
    };
    let mut units = 0;
    for (byte, c) in text[line.start..line.end].char_indices() {
        if units + c.len_utf16() > position.character as usize {
            return line.start + byte;
        }
        units += c.len_utf16();
    }
    line.end
}

fn model_apply(text: &str, change: &TextDocumentContentChangeEvent) -> String {
    let Some(range) = change.range else {
        return change.text.clone();
    };
    let lines = model_lines(text);
    let start = model_offset(text, &lines, range.start);
    let end = model_offset(text, &lines, range.end);
    let (start, end) = (start.min(end), start.max(end));
    format!("{}{}{}", &text[..start], change.text, &text[end..])
}

fn check_text(text: &str, positions: &[Position]) {
    let converter = TextPositions::new(text);
    let lines = model_lines(text);

    // Offsets to positions, at every character boundary: the model's line and column, and back.
    for (number, line) in lines.iter().enumerate() {
        let mut units = 0u32;
        let content = &text[line.start..line.end];
        for (byte, c) in content.char_indices().chain([(content.len(), '\n')]) {
            let offset = line.start + byte;
            let expected = Position {
                line: number as u32,
                character: units,
            };
            let got = converter.position(TextSize::new(offset as u32));
            assert_eq!(got, expected, "position of byte {offset} in {text:?}");
            assert_eq!(
                converter.offset(got).to_usize(),
                offset,
                "offset of {got:?} in {text:?}"
            );
            units += c.len_utf16() as u32;
        }
    }

    // Positions to offsets, for arbitrary positions including ones past the ends.
    for &position in positions {
        let offset = converter.offset(position).to_usize();
        assert_eq!(
            offset,
            model_offset(text, &lines, position),
            "offset of {position:?} in {text:?}"
        );
    }
}

fn check_document(document: &Document, text: &str, positions: &[Position]) {
    let lines = model_lines(text);
    for &position in positions {
        let offset = model_offset(text, &lines, position);
        assert_eq!(
            document.char_index(position),
            text[..offset].chars().count(),
            "char index of {position:?} in {text:?}"
        );
        let line = position.line;
        assert_eq!(
            document.line(line).as_deref(),
            lines
                .get(line as usize)
                .map(|model| &text[model.start..model.end]),
            "line {line} of {text:?}"
        );
    }
}
