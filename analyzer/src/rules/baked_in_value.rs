//! PT601 `baked-in-value`: a value read at trace time is frozen into the exported program.
//! Statically: a Python number on the module that traced code changes (`self.steps += 1`); the
//! tracer confirms any frozen value by running the exported program against eager.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT601",
    name: "baked-in-value",
    summary: "A value read at trace time is frozen into the exported program",
    finds: "a Python value frozen into the exported program (a counter on the module, a module \
        hook that changes a module-level container, sets an attribute of its module, prints, \
        logs or writes a file; the tracer confirms by running)",
    severity: Severity::Warning,
    is_static: true,
    doc: r#"## What it does
Statically, on `self.<name> += …` in traced code where `<name>` is a Python number the module
sets (`self.steps = 0` in `__init__`): state that changes from call to call; and on each read,
in traced code, of a module-level list, dict or set that a function of its file changes
(`SCALES.extend(...)` in `set_scales`, `TABLE[key] = ...`, `global COUNT; COUNT = ...`). A
container filled only by module-level statements (once, on import) is a constant and is not
reported; buffers and parameters are tensors and are not reported. On `next(...)` of an
iterator that outlives the call (`self.batches`, a module-level generator): each eager call
takes the next element. And where a value read from the clock, `random` or the environment
(`time.time()`, `random.uniform(...)`, `os.getenv(...)`, `uuid`, `secrets`), or computed from
one, reaches a tensor (`x * scale`, `torch.full(..., t)`): a value used only for logging is not
reported, and under strict export a call Dynamo rejects is PT202's error instead. And on the
registration (`model.register_forward_hook(collect)`, `register_forward_pre_hook`, at module
level or in `__init__`) of a hook of the file that changes a module-level container
(`FEATURES.append(output)`, `CALLS["n"] += 1`): export runs hooks while tracing and keeps what
they compute (measured with torch 2.15, strict and not), but what a hook changes outside the
tensors happens once, while exporting, never in the exported program. The same registration is
reported for a hook that sets an attribute of the module it is given (`module.calls += 1`, the
feature-extraction `module.last_output = output`), prints, logs through a logger, or, under
non-strict export, opens a file (strict export fails on `open`, GB0059: PT202): the exported
program does none of it (measured; `tests/python/test_hook_effects_real_torch.py` runs each fixture both ways). A hook
that updates or reassigns a buffer, or reads an attribute without setting it, exports into the
program and is not reported.

The tracer reports it after an export that succeeded: the exported program and the eager model
run side by side on fresh inputs (the example inputs drawn again, at sizes across each dynamic
dimension's range), eager twice, so that state changing between calls shows. When they
disagree, the model is exported once more and the two programs are compared node by node: the
constants that differ are values the export froze, and the finding is on the line that read one
(a counter on the module, `random`, the clock). When no constant differs and the example
inputs share memory (one tensor passed at several places, pytorch #139805), the export traced
them as one tensor: the finding is on `example_args`, naming those places. Programs with random
ops (dropout in training mode, `torch.rand`) are not compared.

## Why export fails
It does not fail: `torch.export` runs `forward` once and keeps every Python value it reads as a
constant, so the exported program silently computes something else than the model.

## Example
```python
def forward(self, x):
    self.steps += 1            # frozen at its first value
    return x * random.random() # frozen at trace time
```

## Fix
Keep changing state in a buffer (`self.register_buffer("steps", torch.zeros(()))`) updated in
place, pass the value in as an input, or compute it with torch operations (`torch.rand`).

A draw from `random` that torch makes from the same distribution (`random.random()`,
`uniform(a, b)`, `gauss(mu, sigma)`, `normalvariate`, `expovariate`) has an unsafe fix that
makes it with torch in the graph (`random.uniform(0.9, 1.1)` →
`torch.empty(()).uniform_(0.9, 1.1)`): the value becomes a 0-d tensor, which arithmetic with
tensors treats as the number it was, but a branch or a size computed from it would not.

A number set in `__init__` (`self.steps = 0`, after `super().__init__()`) and changed only by
`+=`-style updates has an unsafe fix that keeps it in a non-persistent buffer
(`self.register_buffer("steps", torch.tensor(0), persistent=False)`): the exported program
updates it on every call, and checkpoints are unchanged.
"#,
}

use crate::fixes::module_buffer::buffer_fix;
use crate::fixes::torch_random::torch_draw_fix;
use crate::registry::Rule;
use crate::rules::Checker;
use crate::rules::untraceable_call::is_strict_failure;
use crate::semantic::EventKind;
use crate::names;
use crate::syntax::ast::{self, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashSet;

pub(crate) fn check(checker: &mut Checker) {
    for event in &checker.model.events {
        let message = match &event.kind {
            EventKind::ModuleStateChanged { attribute } => format!(
                "`self.{attribute}` is a Python number that `forward` changes on every call; the exported program keeps the value it had while exporting. Keep it in a buffer (`register_buffer`) updated in place, or pass it in as an input"
            ),
            EventKind::MutatedGlobalRead {
                name,
                kind,
                function,
            } => format!(
                "`{name}` is a module-level {kind} that `{function}` changes; traced code reads it here, so the exported program keeps the value it had while exporting and never sees a change. Hold it in a buffer (`register_buffer`) the model updates, or pass it in as an input"
            ),
            // Strict export fails on the call itself (PT202 says so): nothing is frozen.
            EventKind::BakedIntoTensor { source, .. }
                if checker.strict() && is_strict_failure(source) =>
            {
                continue;
            }
            EventKind::BakedIntoTensor { source, .. } => format!(
                "a value `{source}` read while exporting reaches the tensors here: the exported program keeps that one value as a constant on every call. Draw it with a torch op (`torch.rand`, `torch.randn`) or pass it in as an input"
            ),
            EventKind::IteratorAdvanced { iterator } => format!(
                "`next({iterator})` advances an iterator kept across calls: each eager call takes the next element, but the exported program keeps the one it took while exporting. Pass the value in as an input"
            ),
            _ => continue,
        };
        let fix = match &event.kind {
            // A draw used at several places gets the same fix at each (one edit, at the draw).
            EventKind::BakedIntoTensor { source, read_at } => {
                torch_draw_fix(source, *read_at, checker.model.file.text, checker.imports())
            }
            EventKind::ModuleStateChanged { attribute } => buffer_fix(
                attribute,
                event.range,
                &checker.parsed.module.body,
                checker.model.file.text,
                checker.imports(),
            ),
            _ => None,
        };
        checker.report_with_fix(
            Rule::BakedInValue,
            Severity::Warning,
            event.range,
            message,
            fix,
        );
    }
    check_hooks(checker);
}

/// The methods that register a forward hook, and what to call it in a message.
const REGISTRATIONS: &[(&str, &str)] = &[
    ("register_forward_hook", "forward hook"),
    ("register_forward_pre_hook", "forward pre-hook"),
];

/// A forward hook or pre-hook the file registers on its model: at module level or in a module
/// class's `__init__`, by the name of a function (`model.register_forward_hook(collect)`).
pub(crate) struct HookRegistration<'a> {
    /// The registration call.
    pub(crate) range: TextRange,
    /// "forward hook" or "forward pre-hook".
    pub(crate) kind: &'static str,
    pub(crate) hook: &'a str,
    /// The hook's module-level `def`, when the file has one.
    pub(crate) definition: Option<&'a ast::StmtFunctionDef>,
}

/// Every [`HookRegistration`] of the file whose module is `body`.
pub(crate) fn hook_registrations(body: &[Stmt]) -> Vec<HookRegistration<'_>> {
    let module_level = names::module_level_statements(body);
    // The model's `__init__` registers hooks on `self` too.
    let mut statements: Vec<&Stmt> = module_level.clone();
    for stmt in &module_level {
        if let Stmt::ClassDef(class) = stmt {
            for item in &class.body {
                if let Stmt::FunctionDef(init) = item {
                    if init.name.as_str() == "__init__" {
                        statements.extend(names::module_level_statements(&init.body));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    for stmt in statements {
        let value = match stmt {
            Stmt::Expr(expr) => &expr.value,
            Stmt::Assign(assign) => &assign.value,
            _ => continue,
        };
        let Expr::Call(call) = &**value else {
            continue;
        };
        let Expr::Attribute(method) = &*call.func else {
            continue;
        };
        let Some((_, kind)) = REGISTRATIONS
            .iter()
            .find(|(name, _)| *name == method.attr.as_str())
        else {
            continue;
        };
        let Some(Expr::Name(hook)) = call.arguments.args.first() else {
            continue;
        };
        let hook = hook.id.as_str();
        let definition = module_level.iter().find_map(|stmt| match stmt {
            Stmt::FunctionDef(def) if def.name.as_str() == hook => Some(def),
            _ => None,
        });
        found.push(HookRegistration {
            range: call.range(),
            kind,
            hook,
            definition,
        });
    }
    found
}

/// PT601 on the registration of a hook of the file that changes a module-level container: a
/// forward hook or pre-hook runs once, while exporting, so the exported program never makes
/// that change, and what the hook read from it is frozen. Or one that does something else
/// besides computing on tensors, which the exported program never does ([`hook_side_effects`]).
fn check_hooks(checker: &mut Checker) {
    // The tensors the file's modules hold: a hook that reassigns one is not judged here.
    let tensors: FxHashSet<&str> = checker
        .model
        .classes
        .iter()
        .filter(|class| class.file == 0)
        .flat_map(|class| &class.attributes)
        .filter(|(_, value)| value.is_tensor())
        .map(|(name, _)| name.as_str())
        .collect();
    let mut found: Vec<(TextRange, String)> = Vec::new();
    for HookRegistration {
        range,
        kind,
        hook,
        definition,
    } in hook_registrations(&checker.parsed.module.body)
    {
        let mut changed: Vec<&str> = checker
            .model
            .mutated
            .iter()
            .filter(|(_, mutated)| mutated.function == hook)
            .map(|(name, _)| name.as_str())
            .collect();
        if !changed.is_empty() {
            changed.sort_unstable();
            let changed = changed
                .iter()
                .map(|name| format!("`{name}`"))
                .collect::<Vec<_>>()
                .join(", ");
            found.push((
                range,
                format!(
                    "`{hook}`, a {kind} of the model, changes {changed}: export runs the hook once, while tracing, so the exported program never changes it, and keeps what the hook read from it as a constant. Move the hook's work into `forward` (return what it collects, keep a count in a buffer updated in place)"
                ),
            ));
            continue;
        }
        let Some(definition) = definition else {
            continue;
        };
        let effects = hook_side_effects(definition, &tensors, checker.strict());
        if effects.is_empty() {
            continue;
        }
        let effects = effects.join(", ");
        found.push((
            range,
            format!(
                "`{hook}`, a {kind} of the model, {effects}: export runs the hook only while tracing, and the exported program never does it (measured, torch 2.15). Move the work into `forward` (return what the hook stores), or keep the hook for eager runs only"
            ),
        ));
    }
    for (range, message) in found {
        checker.report(Rule::BakedInValue, Severity::Warning, range, message);
    }
}

/// What `hook` does that the exported program drops, measured with torch 2.15: setting an
/// attribute of the module it is given (`mod.calls += 1`, `mod.last = out`), printing, logging
/// through a logger, and opening a file (each done at most once, while exporting, never by the
/// program). Under strict export `open` fails instead (GB0059: [`hook_strict_failures`]), so it
/// is not said there; a tensor attribute the module holds (a buffer) is not judged.
fn hook_side_effects(
    hook: &ast::StmtFunctionDef,
    tensors: &FxHashSet<&str>,
    strict: bool,
) -> Vec<String> {
    hook_effects(hook, tensors, strict).0
}

/// The calls in `hook` that strict export cannot trace (measured with torch 2.15: `open`,
/// "Failed to trace builtin operator", GB0059), with what each calls.
pub(crate) fn hook_strict_failures(hook: &ast::StmtFunctionDef) -> Vec<(TextRange, &'static str)> {
    hook_effects(hook, &FxHashSet::default(), true).1
}

/// What [`hook_side_effects`] and [`hook_strict_failures`] say, from one walk of the hook.
fn hook_effects(
    hook: &ast::StmtFunctionDef,
    tensors: &FxHashSet<&str>,
    strict: bool,
) -> (Vec<String>, Vec<(TextRange, &'static str)>) {
    struct Effects<'h> {
        module: Option<&'h str>,
        tensors: &'h FxHashSet<&'h str>,
        strict: bool,
        found: Vec<String>,
        strict_failures: Vec<(TextRange, &'static str)>,
    }
    impl Effects<'_> {
        fn note(&mut self, effect: String) {
            if !self.found.contains(&effect) {
                self.found.push(effect);
            }
        }
        fn target(&mut self, target: &Expr) {
            let Expr::Attribute(attribute) = target else {
                return;
            };
            let Expr::Name(owner) = &*attribute.value else {
                return;
            };
            let name = attribute.attr.as_str();
            if Some(owner.id.as_str()) == self.module && !self.tensors.contains(name) {
                self.note(format!("sets `{}.{name}`", owner.id));
            }
        }
    }
    impl<'h> ast::visitor::Visitor<'h> for Effects<'h> {
        fn visit_stmt(&mut self, stmt: &'h Stmt) {
            match stmt {
                Stmt::Assign(assign) => assign.targets.iter().for_each(|t| self.target(t)),
                Stmt::AugAssign(assign) => self.target(&assign.target),
                Stmt::AnnAssign(assign) => self.target(&assign.target),
                // A function defined inside the hook runs only if called: not followed.
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => return,
                _ => {}
            }
            ast::visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'h Expr) {
            if let Expr::Call(call) = expr {
                let root = names::dotted(&call.func).unwrap_or_default();
                let logs = root.starts_with("logging.")
                    || root
                        .split('.')
                        .next()
                        .is_some_and(|first| first.contains("log"))
                        && [".debug", ".info", ".warning", ".error"]
                            .iter()
                            .any(|level| root.ends_with(level));
                match root.as_str() {
                    "print" => self.note("prints".to_owned()),
                    "open" if self.strict => self.strict_failures.push((call.range(), "`open`")),
                    "open" => self.note("opens a file".to_owned()),
                    _ if logs => self.note("logs".to_owned()),
                    _ => {}
                }
            }
            if !matches!(expr, Expr::Lambda(_)) {
                ast::visitor::walk_expr(self, expr);
            }
        }
    }
    let parameters = &hook.parameters;
    let module = parameters
        .posonlyargs
        .iter()
        .chain(&parameters.args)
        .next()
        .map(|parameter| parameter.parameter.name.as_str());
    let mut effects = Effects {
        module,
        tensors,
        strict,
        found: Vec::new(),
        strict_failures: Vec::new(),
    };
    for stmt in &hook.body {
        ast::visitor::Visitor::visit_stmt(&mut effects, stmt);
    }
    (effects.found, effects.strict_failures)
}
