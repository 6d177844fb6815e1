//! PT002 `unused-suppression`: a suppression comment names a code that silences nothing.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT002",
    name: "unused-suppression",
    summary: "A suppression comment names a code that silences nothing",
    finds: "a `# pt2lsp: ignore[...]` code that certainly silences nothing: no such rule, written \
        twice, a rule the settings do not run, or (with a trace) nothing on a line an export \
        that succeeded ran",
    severity: Severity::Warning,
    is_static: true,
    doc: r#"## What it does
Finds the codes in `# pt2lsp: ignore[...]` comments that certainly silence nothing: a code that
names no rule (a typo such as `PT10l`, a rule's name where its code belongs, a code from another
tool), a code another one in the same comment already covers (`PT1, PT101`), and a code whose
rules the settings do not run (`select`, `ignore`).

With a trace (`pt2lsp check --trace`, or a save in the editor), also a code, or a bare
`# pt2lsp: ignore`, that silences nothing on a line where every export reaching the file
succeeded and one ran the line: the analysis finds nothing there and the exporter passed it.

## Why export fails
It does not: the comment is what fails. A code that names no rule silences nothing, so the
diagnostic it was meant for still shows, or a later one on that line goes unnoticed because the
reader trusts the comment.

## Example
```python
if x.sum() > 0:  # pt2lsp: ignore[PT999]
y = x.item()  # pt2lsp: ignore[PT1, PT102]
```

## Fix
Write the code of the rule you mean (`pt2lsp rule` lists them); the fix removes the code, and
the comment when nothing else is left in it. Without a trace, pt2lsp does not report a code of
a rule it runs when nothing on its line is silenced: the exporter may find there a problem the
static pass does not, and the comment that silences it is not unused.
"#,
}

use ruff_text_size::{TextRange, TextSize};

use crate::diagnostic::{Applicability, Edit, Fix};
use crate::registry::Rule;
use crate::rules::Checker;
use crate::suppression::{self, Suppression, Unproven};

pub(crate) fn check(checker: &mut Checker) {
    let text = checker.model.file.text;
    for comment in &checker.parsed.comments {
        let Some(Suppression::Codes(codes)) = suppression::parse(&text[*comment], comment.start())
        else {
            continue;
        };
        for (index, (_, range)) in codes.iter().enumerate() {
            let Some(why) = silences_nothing(checker, &codes, index) else {
                continue;
            };
            let written = &text[*range];
            let message = format!("`{written}` {why}");
            let fix = removal(text, *comment, &codes, index);
            checker.report_with_fix(
                Rule::UnusedSuppression,
                Severity::Warning,
                *range,
                message,
                Some(fix),
            );
        }
    }
}

/// Why code `index` of a comment silences nothing, when that is certain: it names no rule,
/// another code of the comment already covers it, or the settings run none of its rules. A known
/// code with no diagnostic on its line is not reported: the exporter may find one there.
fn silences_nothing(
    checker: &Checker,
    codes: &[(String, TextRange)],
    index: usize,
) -> Option<String> {
    let code = codes[index].0.as_str();
    let rules: Vec<Rule> = Rule::ALL
        .iter()
        .copied()
        .filter(|rule| rule.code().starts_with(code))
        .collect();
    if rules.is_empty() {
        let written = &checker.model.file.text[codes[index].1];
        let hint = match Rule::from_code_or_name(written) {
            Some(rule) => format!("; write its code, `{}`", rule.code()),
            None => "; `pt2lsp rule` lists the rules".to_owned(),
        };
        return Some(format!(
            "names no pt2lsp rule, so this suppression silences nothing{hint}"
        ));
    }
    // The first of two equal codes stays; a code inside a shorter one goes.
    let covering = codes.iter().enumerate().find(|&(other, (other_code, _))| {
        other != index
            && code.starts_with(other_code.as_str())
            && (other_code.len() < code.len() || other < index)
    });
    if let Some((_, (other_code, _))) = covering {
        return Some(if other_code == code {
            "is written twice in this comment".to_owned()
        } else {
            format!("is already silenced by `{other_code}` in this comment")
        });
    }
    if !rules.iter().any(|rule| checker.settings.is_enabled(*rule)) {
        return Some(
            "names rules the settings do not run (`select`, `ignore`), so it silences nothing"
                .to_owned(),
        );
    }
    None
}

/// PT002 for a suppression that silenced nothing the analysis found, though its rules ran
/// (one code of a comment, or a whole bare `# pt2lsp: ignore`). It holds
/// only where an export that succeeded ran the line ([`crate::Report::unproven`]); where none
/// did, the exporter may find there what the comment is for.
pub(crate) fn unproven(text: &str, suppression: &Unproven) -> crate::diagnostic::Diagnostic {
    let comment = suppression.comment;
    let (range, message, fix) = if let Some((codes, at)) = &suppression.code {
        let at = *at;
        let written = &text[codes[at].1];
        (
            codes[at].1,
            format!(
                "`{written}` silences nothing here: the analysis finds no {written} on this line, and the export that ran it succeeded"
            ),
            removal(text, comment, codes, at),
        )
    } else {
        let before = &text[..comment.start().to_usize()];
        let spaces = before.len() - before.trim_end_matches([' ', '\t']).len();
        let start = comment.start() - TextSize::try_from(spaces).unwrap_or_default();
        let message = "This suppression silences nothing: the analysis finds nothing on this line, and the export that ran it succeeded";
        let fix = Fix {
            title: "Remove the suppression".to_owned(),
            edits: vec![Edit {
                range: TextRange::new(start, comment.end()),
                content: String::new(),
            }],
            applicability: Applicability::Safe,
        };
        (comment, message.to_owned(), fix)
    };
    crate::diagnostic::Diagnostic {
        rule: Rule::UnusedSuppression,
        severity: Severity::Warning,
        message,
        range,
        fix: Some(fix),
        related: Vec::new(),
    }
}

/// The edit that takes code `index` out of the comment: with its comma when others stay, the
/// whole comment (and the spaces before it) when it was the only code and nothing follows.
fn removal(text: &str, comment: TextRange, codes: &[(String, TextRange)], index: usize) -> Fix {
    let range = codes[index].1;
    let edit_range = if codes.len() > 1 {
        match codes.get(index + 1) {
            // `PT999, PT101`: from this code to the next one.
            Some((_, next)) => TextRange::new(range.start(), next.start()),
            // `PT101, PT999`: from the end of the previous code to the end of this one.
            None => TextRange::new(codes[index - 1].1.end(), range.end()),
        }
    } else {
        let after_codes = text[range.end().to_usize()..comment.end().to_usize()]
            .trim_start()
            .strip_prefix(']')
            .map(str::trim);
        if after_codes == Some("") {
            // Nothing else in the comment: it goes, with the spaces that separated it.
            let before = &text[..comment.start().to_usize()];
            let spaces = before.len() - before.trim_end_matches([' ', '\t']).len();
            let start = comment.start() - TextSize::try_from(spaces).unwrap_or_default();
            TextRange::new(start, comment.end())
        } else {
            range
        }
    };
    Fix {
        title: format!("Remove `{}` from the suppression", &text[range]),
        edits: vec![Edit {
            range: edit_range,
            content: String::new(),
        }],
        applicability: Applicability::Safe,
    }
}
