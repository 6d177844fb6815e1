//! The rules: one file each, with its metadata, documentation and check.
//!
//! Every check reads the facts the semantic model gathered (`SemanticModel::events` and the
//! declarations beside them) and pushes diagnostics; no check walks the tree on its own, so a
//! file is parsed and interpreted once however many rules run.

pub(crate) mod aoti_build_failure;
pub(crate) mod baked_in_value;
pub(crate) mod compiled_module_export;
pub(crate) mod data_dependent_branch;
pub(crate) mod data_dependent_scalar;
pub(crate) mod data_dependent_shape;
pub(crate) mod dimension_made_static;
pub(crate) mod dynamic_dim_guard;
pub(crate) mod entrypoint_error;
pub(crate) mod executorch_not_delegated;
pub(crate) mod executorch_unsupported_op;
pub(crate) mod explicit_graph_break;
pub(crate) mod export_failed;
pub(crate) mod gradient_transform;
pub(crate) mod invalid_dynamic_shapes;
pub(crate) mod mismatched_fake_kernel;
pub(crate) mod missing_fake_kernel;
pub(crate) mod non_core_aten_op;
pub(crate) mod onnx_unsupported_op;
pub(crate) mod shape_specialization;
pub(crate) mod specializing_example_size;
pub(crate) mod syntax_error;
pub(crate) mod target_unsupported_op;
pub(crate) mod tensor_data_attribute;
pub(crate) mod tensor_to_numpy;
pub(crate) mod unregistered_input_type;
pub(crate) mod unsaveable_program;
pub(crate) mod untraceable_call;
pub(crate) mod unused_suppression;
pub(crate) mod worker_crash;

use ruff_text_size::TextRange;

use crate::diagnostic::{Diagnostic, Fix, Severity};
use crate::fixes::ModuleImports;
use crate::registry::Rule;
use crate::semantic::{Event, SemanticModel};
use crate::settings::Settings;
use crate::syntax::Parsed;

/// What a rule's check gets: the file's facts, the settings, and a place to report.
pub(crate) struct Checker<'a> {
    pub(crate) parsed: &'a Parsed,
    pub(crate) model: &'a SemanticModel<'a>,
    pub(crate) settings: &'a Settings,
    diagnostics: Vec<Diagnostic>,
    imports: std::cell::OnceCell<ModuleImports>,
}

impl Checker<'_> {
    /// The file's module-level imports, for fixes that name `torch.cond`, `torch._check`, ...
    pub(crate) fn imports(&self) -> &ModuleImports {
        self.imports
            .get_or_init(|| ModuleImports::of(&self.parsed.module.body, self.model.file))
    }

    pub(crate) fn report(
        &mut self,
        rule: Rule,
        severity: Severity,
        range: TextRange,
        message: String,
    ) {
        self.report_with_fix(rule, severity, range, message, None);
    }

    pub(crate) fn report_with_fix(
        &mut self,
        rule: Rule,
        severity: Severity,
        range: TextRange,
        message: String,
        fix: Option<Fix>,
    ) {
        if self.settings.is_enabled(rule) {
            self.diagnostics.push(Diagnostic {
                rule,
                severity,
                message,
                range,
                fix,
                related: Vec::new(),
            });
        }
    }

    /// Whether the file is exported with `strict=True`, by settings or by its own declaration.
    pub(crate) fn strict(&self) -> bool {
        self.settings.strict || self.model.strict
    }

    /// An event's error severity: a warning when the event runs only under a condition the
    /// analysis cannot decide, since the export may never reach it.
    pub(crate) fn failure_severity(event: &Event) -> Severity {
        if event.conditional {
            Severity::Warning
        } else {
            Severity::Error
        }
    }

    /// The severity of a construct that fails only under strict export.
    pub(crate) fn strict_only(&self) -> Severity {
        if self.strict() {
            Severity::Error
        } else {
            Severity::Warning
        }
    }
}

/// A guard PT401 reports, with the constraints that settle it.
pub(crate) struct JudgedGuard {
    /// The file it is in: 0 for the analysed one, `k` for the model's `foreign[k - 1]`.
    pub(crate) file: u32,
    pub(crate) range: TextRange,
    pub(crate) message: String,
    pub(crate) constraints: Vec<crate::fixes::dims::DimConstraint>,
}

/// PT401's judgement of every event of `model`'s program that a constraint settles: the
/// events of its own file and of the files its analysis entered.
pub(crate) fn dim_guard_constraints(
    parsed: &Parsed,
    model: &SemanticModel<'_>,
    settings: &Settings,
) -> Vec<JudgedGuard> {
    let checker = Checker {
        parsed,
        model,
        settings,
        diagnostics: Vec::new(),
        imports: std::cell::OnceCell::new(),
    };
    let events: Vec<&Event> = model.events.iter().chain(&model.foreign_events).collect();
    dynamic_dim_guard::judged(&checker, &events)
        .into_iter()
        .filter_map(|(event, message, constraints)| {
            Some(JudgedGuard {
                file: event.file,
                range: event.range,
                message,
                constraints: constraints?,
            })
        })
        .collect()
}

/// Runs every static rule over one analysed file.
pub(crate) fn run_all<'a>(
    parsed: &'a Parsed,
    model: &'a SemanticModel<'a>,
    settings: &'a Settings,
) -> Vec<Diagnostic> {
    let mut checker = Checker {
        parsed,
        model,
        settings,
        diagnostics: Vec::new(),
        imports: std::cell::OnceCell::new(),
    };
    syntax_error::check(&mut checker);
    unused_suppression::check(&mut checker);
    data_dependent_branch::check(&mut checker);
    data_dependent_scalar::check(&mut checker);
    data_dependent_shape::check(&mut checker);
    tensor_to_numpy::check(&mut checker);
    untraceable_call::check(&mut checker);
    compiled_module_export::check(&mut checker);
    explicit_graph_break::check(&mut checker);
    missing_fake_kernel::check(&mut checker);
    dynamic_dim_guard::check(&mut checker);
    shape_specialization::check(&mut checker);
    invalid_dynamic_shapes::check(&mut checker);
    specializing_example_size::check(&mut checker);
    dimension_made_static::check(&mut checker);
    unregistered_input_type::check(&mut checker);
    baked_in_value::check(&mut checker);
    tensor_data_attribute::check(&mut checker);
    gradient_transform::check(&mut checker);
    target_unsupported_op::check(&mut checker);
    checker.diagnostics
}
