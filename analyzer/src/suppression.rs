//! `# pt2lsp: ignore[PT101]` comments: drop diagnostics on the line that carries one.

use crate::diagnostic::Diagnostic;
use crate::line_index::LineIndex;

const MARKER: &str = "pt2lsp: ignore";

/// What one line suppresses.
enum Suppression {
    All,
    Codes(Vec<String>),
}

fn parse_line(line: &str) -> Option<Suppression> {
    // The marker must sit in a comment; `#` inside a string on the same line is rare enough
    // that a false suppression there is acceptable, and the check stays a plain scan.
    let comment = &line[line.find('#')?..];
    let rest = &comment[comment.find(MARKER)? + MARKER.len()..];
    let Some(codes) = rest.strip_prefix('[') else {
        return Some(Suppression::All);
    };
    let codes = &codes[..codes.find(']').unwrap_or(codes.len())];
    Some(Suppression::Codes(
        codes
            .split(',')
            .map(|code| code.trim().to_ascii_uppercase())
            .filter(|c| !c.is_empty())
            .collect(),
    ))
}

/// Removes every diagnostic whose first line carries a matching suppression comment.
pub(crate) fn apply(text: &str, diagnostics: &mut Vec<Diagnostic>) {
    if diagnostics.is_empty() || !text.contains(MARKER) {
        return;
    }
    let index = LineIndex::new(text);
    diagnostics.retain(|diagnostic| {
        let line = index.line_column(diagnostic.range.start()).line;
        let start = index.line_start(line, text).to_usize();
        let end = index.line_start(line + 1, text).to_usize();
        match parse_line(&text[start..end]) {
            Some(Suppression::All) => false,
            Some(Suppression::Codes(codes)) => !codes
                .iter()
                .any(|code| diagnostic.rule.code().starts_with(code.as_str())),
            None => true,
        }
    });
}
