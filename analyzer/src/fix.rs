//! Applying fixes to a text: the one place that decides which fixes go together, what a round
//! of fixing is, and how many rounds run.
//!
//! `pt2lsp check --fix`, `source.fixAll.pt2lsp` and the tests all fix through here, so the text
//! the command line makes is the text the editor makes: [`fix_round`] is one round (the fixes
//! that go together, applied), [`fix_to_fixpoint`] the rounds on one text until none changes it,
//! at most [`MAX_FIX_ROUNDS`]. The command line runs the same rounds over many files at once.

use ruff_text_size::{TextRange, TextSize};

use crate::diagnostic::{Applicability, Diagnostic, Edit, Fix};

/// Rounds of fixing before giving up on a text whose fixes keep changing it (ruff stops at 100;
/// a pt2lsp round may re-run the exporter, and real fixes settle in two or three).
pub const MAX_FIX_ROUNDS: usize = 10;

/// Which fixes may be applied without the user reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixMode {
    /// Only [`Applicability::Safe`] fixes (`--fix`).
    Safe,
    /// Safe and [`Applicability::Unsafe`] fixes (`--fix --unsafe-fixes`).
    Unsafe,
}

impl FixMode {
    /// Whether a fix of this applicability is applied in this mode; display-only fixes never are.
    pub fn allows(self, applicability: Applicability) -> bool {
        match applicability {
            Applicability::Safe => true,
            Applicability::Unsafe => self == FixMode::Unsafe,
            Applicability::DisplayOnly => false,
        }
    }
}

/// The fixes of `diagnostics` that `mode` allows and that can be applied together: sorted by
/// where they start, skipping each fix whose edits overlap one taken before it. The skipped
/// ones are found again on the fixed text and applied by the next round.
pub fn compatible_fixes(diagnostics: &[Diagnostic], mode: FixMode) -> Vec<&Fix> {
    let mut fixes: Vec<&Fix> = diagnostics
        .iter()
        .filter_map(|diagnostic| diagnostic.fix.as_ref())
        .filter(|fix| mode.allows(fix.applicability) && !fix.edits.is_empty())
        .collect();
    fixes.sort_by_key(|fix| fix.edits.iter().map(|edit| edit.range.start()).min());
    let mut taken: Vec<TextRange> = Vec::new();
    let mut chosen = Vec::new();
    for fix in fixes {
        let overlaps = fix.edits.iter().any(|edit| {
            taken.iter().any(|range| {
                edit.range.start() < range.end() && range.start() < edit.range.end()
                    // Two insertions at one offset would have an order no fix agreed to.
                    || edit.range.start() == range.start()
            })
        });
        if !overlaps {
            taken.extend(fix.edits.iter().map(|edit| edit.range));
            chosen.push(fix);
        }
    }
    chosen
}

/// `text` with the edits of `fixes` applied. The fixes must not overlap (as
/// [`compatible_fixes`] returns them); an edit outside the text or off a char boundary is a
/// bug in the rule that made it, and is skipped rather than corrupting the file.
pub fn apply_fixes(text: &str, fixes: &[&Fix]) -> String {
    let mut edits: Vec<&Edit> = fixes.iter().flat_map(|fix| &fix.edits).collect();
    edits.sort_by_key(|edit| (edit.range.start(), edit.range.end()));
    let mut output = String::with_capacity(text.len());
    let mut copied = TextSize::new(0);
    for edit in edits {
        let (start, end) = (edit.range.start(), edit.range.end());
        let in_bounds = start >= copied
            && end.to_usize() <= text.len()
            && text.is_char_boundary(start.to_usize())
            && text.is_char_boundary(end.to_usize());
        if !in_bounds {
            debug_assert!(false, "fix edit {:?} does not fit the text", edit.range);
            continue;
        }
        output.push_str(&text[copied.to_usize()..start.to_usize()]);
        output.push_str(&edit.content);
        copied = end;
    }
    output.push_str(&text[copied.to_usize()..]);
    output
}

/// One round: `text` with every fix of `diagnostics` that `mode` allows and that goes with the
/// others applied, and those fixes; `None` when no fix changes it. A fix skipped because it
/// overlapped another is found again by the next round, on the new text.
pub fn fix_round<'d>(
    text: &str,
    diagnostics: &'d [Diagnostic],
    mode: FixMode,
) -> Option<(String, Vec<&'d Fix>)> {
    let fixes = compatible_fixes(diagnostics, mode);
    if fixes.is_empty() {
        return None;
    }
    let applied = apply_fixes(text, &fixes);
    (applied != text).then_some((applied, fixes))
}

/// `text` after rounds of fixing until no fix changes it or [`MAX_FIX_ROUNDS`] have run, with
/// `check` finding each round's diagnostics; the number of rounds that changed the text.
pub fn fix_to_fixpoint(
    text: &str,
    mode: FixMode,
    mut check: impl FnMut(&str) -> Vec<Diagnostic>,
) -> (String, usize) {
    let mut current = text.to_owned();
    let mut rounds = 0;
    while rounds < MAX_FIX_ROUNDS {
        let diagnostics = check(&current);
        let Some((next, _)) = fix_round(&current, &diagnostics, mode) else {
            break;
        };
        current = next;
        rounds += 1;
    }
    (current, rounds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Severity;
    use crate::registry::Rule;

    fn diagnostic(start: u32, end: u32, content: &str, applicability: Applicability) -> Diagnostic {
        let range = TextRange::new(TextSize::new(start), TextSize::new(end));
        Diagnostic {
            rule: Rule::DataDependentBranch,
            severity: Severity::Error,
            message: String::new(),
            range,
            fix: Some(Fix {
                title: String::new(),
                edits: vec![Edit {
                    range,
                    content: content.to_owned(),
                }],
                applicability,
            }),
            related: Vec::new(),
        }
    }

    #[test]
    fn overlapping_and_disallowed_fixes_are_left_for_later() {
        let diagnostics = [
            diagnostic(8, 9, "I", Applicability::Safe),
            diagnostic(0, 4, "A", Applicability::Safe),
            diagnostic(2, 6, "B", Applicability::Safe),
            diagnostic(6, 7, "U", Applicability::Unsafe),
            diagnostic(7, 8, "D", Applicability::DisplayOnly),
        ];
        let safe = compatible_fixes(&diagnostics, FixMode::Safe);
        assert_eq!(apply_fixes("abcdefghij", &safe), "AefghIj");
        let unsafe_too = compatible_fixes(&diagnostics, FixMode::Unsafe);
        assert_eq!(apply_fixes("abcdefghij", &unsafe_too), "AefUhIj");
    }

    #[test]
    fn insertions_and_multi_edit_fixes_apply_together() {
        let fix = Fix {
            title: String::new(),
            edits: vec![
                Edit {
                    range: TextRange::empty(TextSize::new(0)),
                    content: "import torch\n".to_owned(),
                },
                Edit {
                    range: TextRange::new(TextSize::new(4), TextSize::new(5)),
                    content: "é".to_owned(),
                },
            ],
            applicability: Applicability::Safe,
        };
        assert_eq!(apply_fixes("x = 1\n", &[&fix]), "import torch\nx = é\n");
    }

    #[test]
    fn rounds_run_until_nothing_changes_and_stop_at_the_limit() {
        // Each round turns one `a` into `b`: three rounds, then a round that changes nothing.
        let one_at_a_time = |text: &str| match text.find('a') {
            Some(at) => vec![diagnostic(
                u32::try_from(at).unwrap(),
                u32::try_from(at).unwrap() + 1,
                "b",
                Applicability::Safe,
            )],
            None => Vec::new(),
        };
        assert_eq!(
            fix_to_fixpoint("xaaa", FixMode::Safe, one_at_a_time),
            ("xbbb".to_owned(), 3)
        );
        // A fix that never settles (it rewrites `b` as `b`) changes nothing: no round counts.
        let idle = |_: &str| vec![diagnostic(0, 1, "b", Applicability::Safe)];
        assert_eq!(
            fix_to_fixpoint("b", FixMode::Safe, idle),
            ("b".to_owned(), 0)
        );
        // A text that changes forever stops after the limit.
        let grow = |_: &str| vec![diagnostic(0, 0, "+", Applicability::Safe)];
        let (grown, rounds) = fix_to_fixpoint("x", FixMode::Safe, grow);
        assert_eq!((grown.len(), rounds), (1 + MAX_FIX_ROUNDS, MAX_FIX_ROUNDS));
        // Unsafe fixes wait for the unsafe mode.
        let risky = |text: &str| match text.find('a') {
            Some(at) => vec![diagnostic(
                u32::try_from(at).unwrap(),
                u32::try_from(at).unwrap() + 1,
                "u",
                Applicability::Unsafe,
            )],
            None => Vec::new(),
        };
        assert_eq!(fix_to_fixpoint("aa", FixMode::Safe, risky).1, 0);
        assert_eq!(
            fix_to_fixpoint("aa", FixMode::Unsafe, risky),
            ("uu".to_owned(), 2)
        );
    }
}
