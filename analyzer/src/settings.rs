//! Which rules run and in which export mode.

use crate::registry::Rule;

/// A rule code or a prefix of one (`PT`, `PT1`, `PT101`), as in `select` and `ignore`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSelector(String);

impl RuleSelector {
    /// Parses a selector; `None` when it can match no rule (a typo the caller should report).
    pub fn parse(text: &str) -> Option<Self> {
        let upper = text.trim().to_ascii_uppercase();
        let matches_any = Rule::ALL.iter().any(|rule| rule.code().starts_with(&upper));
        (!upper.is_empty() && matches_any).then_some(Self(upper))
    }

    pub fn matches(&self, rule: Rule) -> bool {
        rule.code().starts_with(&self.0)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Longer selectors are more specific, as in ruff: `--select PT1 --ignore PT101`.
    fn specificity(&self) -> usize {
        self.0.len()
    }
}

/// Analysis settings, from `[tool.pt2lsp]`, the command line or the editor.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `strict = true`: the user exports with `torch.export.export(..., strict=True)`, so
    /// Dynamo-only problems (graph breaks, untraceable calls) fail the export.
    pub strict: bool,
    pub select: Vec<RuleSelector>,
    pub ignore: Vec<RuleSelector>,
    /// The deployment targets configured for every entrypoint (`targets` of `[tool.pt2lsp]`,
    /// the editor's settings or `--target`: `core-aten`, `executorch`, `onnx`, ...); a file's
    /// own `targets = [...]` and [`Settings::entrypoint_targets`] add to them for its
    /// entrypoint. PT707 warns only about the targets of the entrypoints that reach a call.
    pub targets: Vec<String>,
    /// The `targets` of each `[[tool.pt2lsp.entrypoints]]` table, by the dotted module the table
    /// names (its `model`'s module, or its `script`'s): that module is an entrypoint lowered for
    /// them too, and so is what its analysis reaches in other files.
    pub entrypoint_targets: Vec<(String, Vec<String>)>,
    /// The dotted modules of the scripts that `[[tool.pt2lsp.entrypoints]]` tables run with
    /// command-line arguments (`args = [...]`): their `parse_args()` is not the defaults.
    pub scripts_with_arguments: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            strict: false,
            select: vec![RuleSelector("PT".to_owned())],
            ignore: Vec::new(),
            targets: Vec::new(),
            entrypoint_targets: Vec::new(),
            scripts_with_arguments: Vec::new(),
        }
    }
}

impl Settings {
    /// Whether the tracer runs module `module` with command-line arguments of its own.
    pub fn runs_with_arguments(&self, module: Option<&str>) -> bool {
        module.is_some_and(|module| {
            self.scripts_with_arguments
                .iter()
                .any(|script| script == module)
        })
    }

    /// A rule runs when the most specific selector that matches it is a `select`.
    pub fn is_enabled(&self, rule: Rule) -> bool {
        let best = |selectors: &[RuleSelector]| {
            selectors
                .iter()
                .filter(|s| s.matches(rule))
                .map(RuleSelector::specificity)
                .max()
        };
        match (best(&self.select), best(&self.ignore)) {
            (Some(selected), Some(ignored)) => selected > ignored,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selectors(codes: &[&str]) -> Vec<RuleSelector> {
        codes
            .iter()
            .map(|code| RuleSelector::parse(code).unwrap())
            .collect()
    }

    #[test]
    fn most_specific_selector_wins() {
        let settings = Settings {
            strict: false,
            select: selectors(&["PT1"]),
            ignore: selectors(&["pt101"]),
            ..Settings::default()
        };
        assert!(!settings.is_enabled(Rule::DataDependentBranch));
        assert!(settings.is_enabled(Rule::DataDependentScalar));
        assert!(!settings.is_enabled(Rule::TensorToNumpy));
        let settings = Settings {
            strict: false,
            select: selectors(&["PT101"]),
            ignore: selectors(&["PT1"]),
            ..Settings::default()
        };
        assert!(settings.is_enabled(Rule::DataDependentBranch));
        assert!(!settings.is_enabled(Rule::DataDependentScalar));
    }

    #[test]
    fn unknown_selectors_are_refused() {
        assert!(RuleSelector::parse("E501").is_none());
        assert!(RuleSelector::parse("").is_none());
        assert!(RuleSelector::parse("PT9").is_none());
    }
}
