//! PT204 `compiled-module-export`: the module exported is a `torch.compile` wrapper, whose
//! `forward` is `(*args, **kwargs)` and whose parameters are renamed `_orig_mod.*`.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT204",
    name: "compiled-module-export",
    summary: "The module exported is a `torch.compile` wrapper",
    finds: "a `torch.compile(...)` wrapper given to `torch.export.export` (error when \
        `dynamic_shapes` is keyed by `forward`'s names, which fails naming only `args`)",
    severity: Severity::Warning,
    is_static: true,
    doc: r#"## What it does
Finds a `torch.compile(...)` result given to `torch.export.export` (or `draft_export`): the
entrypoint's `model = torch.compile(...)`, a `torch.compile(...)` call written as the export
call's module, or a name bound to one in the same function (or at module level). An error when
`dynamic_shapes` is a dict keyed by `forward`'s parameter names (export fails), else a warning.
`model.compile()`, which compiles in place and keeps the module, is not reported.

The tracer reports the failure on the same line, in place of torch's message about `args`.

## Why export fails
`torch.compile(model)` returns an `OptimizedModule` whose `forward` is `(*args, **kwargs)` and
which holds the model as `_orig_mod`. Export traces through it (measured with torch 2.15,
strict and not: the program agrees with eager), but it sees the wrapper's signature: the
program's input is named `args_0`, its parameters `_orig_mod.<name>`, and `dynamic_shapes`
keyed by `forward`'s names fails with `UserError: When dynamic_shapes is specified as a dict, its
top-level keys must be the arg names ['args'] of inputs, but here they are ['x']`, which says
nothing of `torch.compile`.

## Example
```python
model = torch.compile(Net())
example_args = (torch.randn(3, 4),)
dynamic_shapes = {"x": {0: Dim("batch")}}
```

## Fix
Export the module itself, before (or instead of) compiling it: `torch.export.export(net, ...)`
with `net = Net()`, and `torch.compile(net)` for eager use; or `model._orig_mod` when only the
compiled module is at hand.

The fix (unsafe) unwraps the call: `torch.compile(Net(), backend="eager")` becomes `Net()`, so
the module exported is the module itself (measured: the program exports with `dynamic_shapes`
keyed by `x`, and agrees with eager). Unsafe because the name that held the compiled module now
holds the module: code that runs it eagerly runs it uncompiled, with the same values.
"#,
}

use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashMap;

use crate::fixes::compiled_module;
use crate::registry::Rule;
use crate::rules::Checker;
use crate::names;
use crate::syntax::ast::{self, Expr, Stmt};

/// The export functions whose first argument is the module exported.
const EXPORT_FUNCTIONS: &[&str] = &["torch.export.export", "torch.export.draft_export"];

pub(crate) fn check(checker: &mut Checker) {
    let body = &checker.parsed.module.body;
    let module_level = names::module_level_statements(body);
    let mut scopes = vec![module_level.clone()];
    for stmt in &module_level {
        if let Stmt::FunctionDef(function) = stmt {
            scopes.push(names::module_level_statements(&function.body));
        }
    }
    let module_shapes_by_name = module_level
        .iter()
        .filter_map(|stmt| assigned(stmt, "dynamic_shapes"))
        .any(keyed_by_name);
    let mut found: Vec<(TextRange, bool)> = Vec::new();
    // The file convention: `model = torch.compile(...)` beside `example_args`.
    let convention = module_level
        .iter()
        .any(|stmt| assigned(stmt, "example_args").is_some());
    if convention {
        for stmt in &module_level {
            if let Some(call) =
                assigned(stmt, "model").and_then(|value| compile_call(checker, value))
            {
                found.push((call, module_shapes_by_name));
            }
        }
    }
    for scope in &scopes {
        let compiled: FxHashMap<&str, TextRange> = scope
            .iter()
            .filter_map(|stmt| {
                let Stmt::Assign(assign) = stmt else {
                    return None;
                };
                let [Expr::Name(name)] = assign.targets.as_slice() else {
                    return None;
                };
                Some((name.id.as_str(), compile_call(checker, &assign.value)?))
            })
            .collect();
        for stmt in scope {
            let value = match stmt {
                Stmt::Assign(assign) => &assign.value,
                Stmt::Expr(expr) => &expr.value,
                Stmt::Return(ast::StmtReturn {
                    value: Some(value), ..
                }) => value,
                _ => continue,
            };
            let Expr::Call(call) = &**value else {
                continue;
            };
            let function = names::qualified_through(checker.model, &call.func);
            if !function.is_some_and(|name| EXPORT_FUNCTIONS.contains(&name.as_str())) {
                continue;
            }
            let Some(module) = call
                .arguments
                .args
                .first()
                .or_else(|| call.arguments.find_keyword("mod").map(|k| &k.value))
            else {
                continue;
            };
            let at = match module {
                Expr::Name(name) => compiled.get(name.id.as_str()).copied(),
                other => compile_call(checker, other),
            };
            let Some(at) = at else {
                continue;
            };
            let by_name = call
                .arguments
                .find_keyword("dynamic_shapes")
                .is_some_and(|keyword| match &keyword.value {
                    Expr::Name(name) => scope
                        .iter()
                        .chain(module_level.iter())
                        .filter_map(|stmt| assigned(stmt, name.id.as_str()))
                        .any(keyed_by_name),
                    other => keyed_by_name(other),
                });
            found.push((at, by_name));
        }
    }
    found.sort_by_key(|(range, _)| range.start());
    found.dedup_by(|later, earlier| {
        if later.0 == earlier.0 {
            earlier.1 |= later.1;
            true
        } else {
            false
        }
    });
    for (range, by_name) in found {
        let (severity, message) = if by_name {
            (
                Severity::Error,
                "this `torch.compile(...)` result is the module exported: its `forward` is `(*args, **kwargs)`, so `dynamic_shapes` keyed by `forward`'s parameter names fails (torch: \"its top-level keys must be the arg names ['args']\"). Export the module itself, before `torch.compile` (or `model._orig_mod`)",
            )
        } else {
            (
                Severity::Warning,
                "this `torch.compile(...)` result is the module exported: export traces through the wrapper, and the program's input is named `args_0` and its parameters `_orig_mod.*`. Export the module itself, before `torch.compile` (or `model._orig_mod`)",
            )
        };
        let fix = compiled_module::unwrap_compile_fix(range, checker.model.file.text);
        checker.report_with_fix(
            Rule::CompiledModuleExport,
            severity,
            range,
            message.to_owned(),
            fix,
        );
    }
}

/// The value of a statement `<name> = <value>`.
fn assigned<'a>(stmt: &'a Stmt, name: &str) -> Option<&'a Expr> {
    let Stmt::Assign(assign) = stmt else {
        return None;
    };
    let [Expr::Name(target)] = assign.targets.as_slice() else {
        return None;
    };
    (target.id.as_str() == name).then_some(&*assign.value)
}

/// The range of `value` when it is a call of `torch.compile`.
fn compile_call(checker: &Checker, value: &Expr) -> Option<TextRange> {
    let Expr::Call(call) = value else {
        return None;
    };
    (names::qualified_through(checker.model, &call.func).as_deref() == Some("torch.compile"))
        .then(|| call.range())
}

/// A `dynamic_shapes` dict literal keyed by strings: `forward`'s parameter names.
fn keyed_by_name(value: &Expr) -> bool {
    let Expr::Dict(dict) = value else {
        return false;
    };
    dict.items
        .iter()
        .any(|item: &ast::DictItem| matches!(item.key, Some(Expr::StringLiteral(_))))
}
