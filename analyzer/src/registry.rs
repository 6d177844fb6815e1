//! Rule identity: every rule's stable code, name, default severity and documentation.
//!
//! The bottom of the crate's rule layers: it names no other module, so diagnostics, settings
//! and suppressions name a `Rule` without reaching the checks. `build.rs` generates `Rule`,
//! `Rule::ALL` and the table of each rule's `RuleMeta` from the `declare_rule!` in each file of
//! `rules/`, where a rule's logic and documentation live; nothing else lists the rules.

use serde::{Deserialize, Serialize};

/// How bad a diagnostic is, in the mode it was found in. A rule declares its default one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The real exporter fails on this code.
    Error,
    /// The export succeeds but specialises, drops or bakes in something, or fails only in strict mode.
    Warning,
    /// A hint.
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// What the table says of one rule.
#[derive(Debug, Clone, Copy)]
pub struct RuleMeta {
    pub code: &'static str,
    pub name: &'static str,
    /// One line, shown in `--help`-like listings and SARIF's `shortDescription`.
    pub summary: &'static str,
    /// What the rule finds, in a few words: the README's rules table (`tests/rule_docs.rs`
    /// generates it).
    pub finds: &'static str,
    /// Severity in the default, non-strict mode. A check may pick another for one case
    /// (a strict-only construct is an error under `strict = true`).
    pub severity: Severity,
    /// Markdown with the sections What it does / Why export fails / Example / Fix.
    pub doc: &'static str,
    /// False for rules only the tracer reports.
    pub is_static: bool,
}

/// Declares the rule of the file it is written in: its `RuleMeta` fields. `build.rs` reads
/// the declaration from the file's text to generate the registry; here the compiler checks the
/// fields where they are written.
macro_rules! declare_rule {
    ($($field:tt)*) => {
        const _: $crate::registry::RuleMeta = $crate::registry::RuleMeta { $($field)* };
    };
}
pub(crate) use declare_rule;

include!(concat!(env!("OUT_DIR"), "/registry.rs"));

impl Rule {
    pub fn code(self) -> &'static str {
        self.meta().code
    }

    pub fn name(self) -> &'static str {
        self.meta().name
    }

    pub fn summary(self) -> &'static str {
        self.meta().summary
    }

    /// What the rule finds, in a few words (the README's rules table).
    pub fn finds(self) -> &'static str {
        self.meta().finds
    }

    pub fn default_severity(self) -> Severity {
        self.meta().severity
    }

    pub fn doc(self) -> &'static str {
        self.meta().doc
    }

    pub fn is_static(self) -> bool {
        self.meta().is_static
    }

    /// Finds a rule by its code (`PT101`) or its name (`data-dependent-branch`).
    pub fn from_code_or_name(text: &str) -> Option<Rule> {
        Rule::ALL
            .iter()
            .copied()
            .find(|rule| rule.code().eq_ignore_ascii_case(text) || rule.name() == text)
    }

    /// Where the rule's page lives in the repository, relative to its root.
    pub fn doc_path(self) -> String {
        format!("docs/rules/{}.md", self.code())
    }

    /// The rule's page: its code, name, summary, severity and documentation, in Markdown. The
    /// repository's `docs/rules/` holds these pages (a test keeps them equal), and the language
    /// server writes them next to itself for the editor's rule links.
    pub fn page(self) -> String {
        let static_note = if self.is_static() {
            "Found by the static analysis, as you type, and by the tracer."
        } else {
            "Found by the tracer only (`pt2lsp check --trace`, or on save in the editor)."
        };
        format!(
            "# {code} `{name}`\n\n{summary}.\n\nDefault severity: **{severity}**. {static_note}\n\n{doc}",
            code = self.code(),
            name = self.name(),
            summary = self.summary(),
            severity = self.default_severity().as_str(),
            doc = self.doc().trim_start(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for rule in Rule::ALL {
            assert!(seen.insert(rule.code()), "duplicate code {}", rule.code());
            assert!(seen.insert(rule.name()), "duplicate name {}", rule.name());
            assert!(rule.code().len() == 5 && rule.code().starts_with("PT"));
            assert!(
                rule.name()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-')
            );
            assert!(!rule.name().starts_with("no-") && !rule.name().starts_with("disallow-"));
            for section in [
                "## What it does",
                "## Why export fails",
                "## Example",
                "## Fix",
            ] {
                assert!(
                    rule.doc().contains(section),
                    "{} lacks {section}",
                    rule.code()
                );
            }
            assert_eq!(Rule::from_code_or_name(rule.code()), Some(*rule));
            assert_eq!(Rule::from_code_or_name(rule.name()), Some(*rule));
        }
    }
}
