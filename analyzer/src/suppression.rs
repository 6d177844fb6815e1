//! `# pt2lsp: ignore[PT101]` comments: drop diagnostics on the line that carries one.
//!
//! One reader of the comment serves the static pass, the tracer's findings (through
//! [`silences`]) and PT002, which reports the codes in a comment that name no rule.

use ruff_text_size::{TextRange, TextSize};

use crate::diagnostic::Diagnostic;
use crate::line_index::LineIndex;
use crate::registry::Rule;
use crate::settings::Settings;

const MARKER: &str = "pt2lsp: ignore";

/// What one comment suppresses.
pub(crate) enum Suppression {
    /// A bare `# pt2lsp: ignore`.
    All,
    /// The codes in the brackets, upper-cased, each with its range in the text searched.
    Codes(Vec<(String, TextRange)>),
}

impl Suppression {
    fn silences(&self, rule: Rule) -> bool {
        match self {
            Suppression::All => true,
            Suppression::Codes(codes) => codes
                .iter()
                .any(|(code, _)| rule.code().starts_with(code.as_str())),
        }
    }
}

/// The suppression in `text`, which starts at `offset` in its file and holds a comment from
/// its first `#` on. The marker must sit in that comment; a `#` inside a string on the same
/// line is rare enough that a false suppression there is acceptable, and the scan stays plain.
pub(crate) fn parse(text: &str, offset: TextSize) -> Option<Suppression> {
    let hash = text.find('#')?;
    let comment = &text[hash..];
    let after_marker = hash + comment.find(MARKER)? + MARKER.len();
    let Some(codes) = text[after_marker..].strip_prefix('[') else {
        return Some(Suppression::All);
    };
    let codes_start = after_marker + 1;
    let codes = &codes[..codes.find(']').unwrap_or(codes.len())];
    let mut found = Vec::new();
    let mut at = codes_start;
    for piece in codes.split(',') {
        let code = piece.trim();
        if !code.is_empty() {
            let start = at + (piece.len() - piece.trim_start().len());
            let range = TextRange::at(
                offset + TextSize::try_from(start).unwrap_or_default(),
                TextSize::try_from(code.len()).unwrap_or_default(),
            );
            found.push((code.to_ascii_uppercase(), range));
        }
        at += piece.len() + 1;
    }
    Some(Suppression::Codes(found))
}

/// Whether the suppression comment on `line` (one line of a file) silences `rule`: for the
/// diagnostics found elsewhere than the static pass, the tracer's.
pub fn silences(line: &str, rule: Rule) -> bool {
    parse(line, TextSize::default()).is_some_and(|suppression| suppression.silences(rule))
}

/// A suppression that silenced nothing though the rules it names ran (see [`unproven`]):
/// code `at` of the comment's `codes`, or the whole comment of a bare `# pt2lsp: ignore`
/// (`code` is `None`). PT002's file turns it into a diagnostic.
pub(crate) struct Unproven {
    pub(crate) comment: TextRange,
    pub(crate) code: Option<(Vec<(String, TextRange)>, usize)>,
}

/// Removes every diagnostic whose first line carries a matching suppression comment, and
/// returns what in the `comments` silenced none of them (see [`unproven`]).
pub(crate) fn apply(
    text: &str,
    comments: &[TextRange],
    diagnostics: &mut Vec<Diagnostic>,
    settings: &Settings,
) -> Vec<Unproven> {
    if !text.contains(MARKER) {
        return Vec::new();
    }
    let index = LineIndex::new(text);
    // The silenced rules by line, to tell which suppressions silenced something.
    let mut silenced: Vec<(u32, Rule)> = Vec::new();
    diagnostics.retain(|diagnostic| {
        let line = index.line_column(diagnostic.range.start()).line;
        let start = index.line_start(line, text).to_usize();
        let end = index.line_start(line + 1, text).to_usize();
        let silent = silences(&text[start..end], diagnostic.rule);
        if silent {
            silenced.push((line, diagnostic.rule));
        }
        !silent
    });
    unproven(text, comments, &index, &silenced, settings)
}

/// Each suppression in `comments` that silenced nothing (`silenced`: the rules
/// silenced on each line) though the rules it names ran: the analysis finds nothing there, but
/// the exporter may, so each holds only where an export that succeeded ran its line. The codes
/// that certainly silence nothing are the rule's own check.
fn unproven(
    text: &str,
    comments: &[TextRange],
    index: &LineIndex,
    silenced: &[(u32, Rule)],
    settings: &Settings,
) -> Vec<Unproven> {
    if !settings.is_enabled(Rule::UnusedSuppression) {
        return Vec::new();
    }
    let mut found = Vec::new();
    for comment in comments {
        let Some(suppression) = parse(&text[*comment], comment.start()) else {
            continue;
        };
        let line = index.line_column(comment.start()).line;
        let silenced_here = |code: Option<&str>| {
            silenced.iter().any(|(at, rule)| {
                *at == line && code.is_none_or(|code| rule.code().starts_with(code))
            })
        };
        match &suppression {
            Suppression::All => {
                if !silenced_here(None) {
                    found.push(Unproven {
                        comment: *comment,
                        code: None,
                    });
                }
            }
            // `ignore[PT101, PT002]`: the comment silences its own PT002s.
            Suppression::Codes(_) if suppression.silences(Rule::UnusedSuppression) => {}
            Suppression::Codes(codes) => {
                for (at, (code, _)) in codes.iter().enumerate() {
                    let rules = || {
                        Rule::ALL
                            .iter()
                            .copied()
                            .filter(|rule| rule.code().starts_with(code.as_str()))
                    };
                    let runs = rules().any(|rule| settings.is_enabled(rule));
                    // A code another one of the comment covers is the rule's own finding.
                    let covered = codes.iter().enumerate().any(|(other, (other_code, _))| {
                        other != at
                            && code.starts_with(other_code.as_str())
                            && (other_code.len() < code.len() || other < at)
                    });
                    if runs && !covered && !silenced_here(Some(code)) {
                        found.push(Unproven {
                            comment: *comment,
                            code: Some((codes.clone(), at)),
                        });
                    }
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_read_with_their_ranges() {
        let line = "x = 1  # pt2lsp: ignore[PT101,  pt999 ]";
        let Some(Suppression::Codes(codes)) = parse(line, TextSize::new(10)) else {
            panic!("a list of codes");
        };
        let read: Vec<_> = codes
            .iter()
            .map(|(code, range)| {
                let local = *range - TextSize::new(10);
                (code.as_str(), &line[local])
            })
            .collect();
        assert_eq!(read, [("PT101", "PT101"), ("PT999", "pt999")]);
        assert!(silences(line, Rule::DataDependentBranch));
        assert!(!silences(line, Rule::DataDependentScalar));
        assert!(silences("y  # pt2lsp: ignore", Rule::DataDependentScalar));
        assert!(!silences("y  # pt2lsp ignore", Rule::DataDependentScalar));
    }
}
