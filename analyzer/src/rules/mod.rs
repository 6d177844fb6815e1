//! The rules: one file each, with its declaration (code, name, severity, documentation) and,
//! for a rule the static pass reports, its `check`. `build.rs` generates the module list and
//! `check_each` from the files here, so a new rule is a new file and nothing else.
//!
//! Every check reads the facts the semantic model gathered (`SemanticModel::events` and the
//! declarations beside them) and pushes diagnostics; no check walks the tree on its own, so a
//! file is parsed and interpreted once however many rules run.

use ruff_text_size::TextRange;

use crate::diagnostic::{Diagnostic, Fix, Severity};
use crate::fixes::ModuleImports;
use crate::registry::Rule;
use crate::semantic::{Event, SemanticModel};
use crate::settings::Settings;
use crate::syntax::Parsed;

include!(concat!(env!("OUT_DIR"), "/rule_modules.rs"));

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
    check_each(&mut checker);
    checker.diagnostics
}
