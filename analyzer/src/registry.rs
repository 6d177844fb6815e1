//! The codes table: every rule's stable code, name, default severity and documentation.
//!
//! The static pass and the tracer speak these codes. A rule's logic and documentation live in
//! its own file under `rules/`; this table only names it.

use crate::diagnostic::Severity;
use crate::rules;

/// Every rule pt2lsp knows, static or tracer-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    SyntaxError,
    UnusedSuppression,
    DataDependentBranch,
    DataDependentScalar,
    DataDependentShape,
    TensorToNumpy,
    UntraceableCall,
    CompiledModuleExport,
    ExplicitGraphBreak,
    MissingFakeKernel,
    MismatchedFakeKernel,
    DynamicDimGuard,
    ShapeSpecialization,
    InvalidDynamicShapes,
    UnregisteredInputType,
    SpecializingExampleSize,
    DimensionMadeStatic,
    ExportFailed,
    WorkerCrash,
    EntrypointError,
    BakedInValue,
    NonCoreAtenOp,
    UnsaveableProgram,
    OnnxUnsupportedOp,
    AotiBuildFailure,
    ExecutorchUnsupportedOp,
    ExecutorchNotDelegated,
    TensorDataAttribute,
    GradientTransform,
    TargetUnsupportedOp,
}

/// What the table says of one rule.
#[derive(Debug, Clone, Copy)]
pub struct RuleMeta {
    pub code: &'static str,
    pub name: &'static str,
    /// One line, shown in `--help`-like listings and SARIF's `shortDescription`.
    pub summary: &'static str,
    /// Severity in the default, non-strict mode. A check may pick another for one case
    /// (a strict-only construct is an error under `strict = true`).
    pub severity: Severity,
    /// Markdown with the sections What it does / Why export fails / Example / Fix.
    pub doc: &'static str,
    /// False for rules only the tracer reports.
    pub is_static: bool,
}

impl Rule {
    pub const ALL: &[Rule] = &[
        Rule::SyntaxError,
        Rule::UnusedSuppression,
        Rule::DataDependentBranch,
        Rule::DataDependentScalar,
        Rule::DataDependentShape,
        Rule::TensorToNumpy,
        Rule::UntraceableCall,
        Rule::CompiledModuleExport,
        Rule::ExplicitGraphBreak,
        Rule::MissingFakeKernel,
        Rule::MismatchedFakeKernel,
        Rule::DynamicDimGuard,
        Rule::ShapeSpecialization,
        Rule::InvalidDynamicShapes,
        Rule::UnregisteredInputType,
        Rule::SpecializingExampleSize,
        Rule::DimensionMadeStatic,
        Rule::ExportFailed,
        Rule::WorkerCrash,
        Rule::EntrypointError,
        Rule::BakedInValue,
        Rule::NonCoreAtenOp,
        Rule::UnsaveableProgram,
        Rule::OnnxUnsupportedOp,
        Rule::AotiBuildFailure,
        Rule::ExecutorchUnsupportedOp,
        Rule::ExecutorchNotDelegated,
        Rule::TensorDataAttribute,
        Rule::GradientTransform,
        Rule::TargetUnsupportedOp,
    ];

    pub fn meta(self) -> &'static RuleMeta {
        match self {
            Rule::SyntaxError => &rules::syntax_error::META,
            Rule::UnusedSuppression => &rules::unused_suppression::META,
            Rule::DataDependentBranch => &rules::data_dependent_branch::META,
            Rule::DataDependentScalar => &rules::data_dependent_scalar::META,
            Rule::DataDependentShape => &rules::data_dependent_shape::META,
            Rule::TensorToNumpy => &rules::tensor_to_numpy::META,
            Rule::UntraceableCall => &rules::untraceable_call::META,
            Rule::CompiledModuleExport => &rules::compiled_module_export::META,
            Rule::ExplicitGraphBreak => &rules::explicit_graph_break::META,
            Rule::MissingFakeKernel => &rules::missing_fake_kernel::META,
            Rule::MismatchedFakeKernel => &rules::mismatched_fake_kernel::META,
            Rule::DynamicDimGuard => &rules::dynamic_dim_guard::META,
            Rule::ShapeSpecialization => &rules::shape_specialization::META,
            Rule::InvalidDynamicShapes => &rules::invalid_dynamic_shapes::META,
            Rule::UnregisteredInputType => &rules::unregistered_input_type::META,
            Rule::SpecializingExampleSize => &rules::specializing_example_size::META,
            Rule::DimensionMadeStatic => &rules::dimension_made_static::META,
            Rule::ExportFailed => &rules::export_failed::META,
            Rule::WorkerCrash => &rules::worker_crash::META,
            Rule::EntrypointError => &rules::entrypoint_error::META,
            Rule::BakedInValue => &rules::baked_in_value::META,
            Rule::NonCoreAtenOp => &rules::non_core_aten_op::META,
            Rule::UnsaveableProgram => &rules::unsaveable_program::META,
            Rule::OnnxUnsupportedOp => &rules::onnx_unsupported_op::META,
            Rule::AotiBuildFailure => &rules::aoti_build_failure::META,
            Rule::ExecutorchUnsupportedOp => &rules::executorch_unsupported_op::META,
            Rule::ExecutorchNotDelegated => &rules::executorch_not_delegated::META,
            Rule::TensorDataAttribute => &rules::tensor_data_attribute::META,
            Rule::GradientTransform => &rules::gradient_transform::META,
            Rule::TargetUnsupportedOp => &rules::target_unsupported_op::META,
        }
    }

    pub fn code(self) -> &'static str {
        self.meta().code
    }

    pub fn name(self) -> &'static str {
        self.meta().name
    }

    pub fn summary(self) -> &'static str {
        self.meta().summary
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
