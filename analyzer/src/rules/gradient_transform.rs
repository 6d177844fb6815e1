//! PT603 `gradient-transform`: a `torch.func` transform that differentiates, called in traced
//! code; the exported program holds the input it differentiates as a constant of the trace.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT603",
    name: "gradient-transform",
    summary: "A differentiating `torch.func` transform in traced code",
    finds: "`torch.func.grad` / `jacrev` / `jacfwd` / `hessian` / `vjp` / `jvp` in traced code: \
        export succeeds and the program returns fake tensors; `torch.autograd.grad` under \
        `enable_grad` exports",
    severity: Severity::Warning,
    is_static: true,
    doc: r#"## What it does
Finds calls of the `torch.func` (and `functorch`) transforms that differentiate — `grad`,
`grad_and_value`, `jacrev`, `jacfwd`, `hessian`, `vjp`, `jvp`, `linearize` — in traced code.
`torch.vmap` is not reported: it exports, and the program agrees with eager.

The tracer reports it after an export that succeeded, on the same line: a constant of the
exported program that is a tensor of the trace, used by the transform's graph nodes.

## Why export fails
Export succeeds, and the program is unusable. Measured with torch 2.15, strict and not: export
lifts the input the transform differentiates as a constant of the program (`lifted_tensor_0`),
and that constant is a fake tensor of the trace, not the input; running the exported program
returns fake tensors (`torch.allclose` on them raises `DataDependentOutputException`). Nothing
warns at export time.

## Example
```python
def forward(self, x):
    return torch.func.grad(lambda r: (r ** 2).sum())(x)
```

## Fix
Take the derivative with `torch.autograd.grad` on a detached copy that requires grad, under
`torch.enable_grad()`; non-strict export traces it into the program, which then agrees with
eager (strict export rejects `torch.autograd.grad`: a graph break, GB9186):

```python
def forward(self, x):
    with torch.enable_grad():
        r = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad((r ** 2).sum(), r)
    return g
```

Or write the derivative in closed form (`2 * x` here).

The fix (unsafe, non-strict export only) writes that rewrite for `torch.func.grad(f)(x)` of one
argument with no options, as the value of an assignment or a `return` on its own lines: the
lambda's body differentiated by its parameter, or `f(primal)` by `primal` for a named function
(not offered when that name is taken in the function). Proven by real torch
(`fixtures/fixes/autograd/`: exports, agrees with eager). It is unsafe because strict export
rejects it. `argnums`, `has_aux`, `jacrev`, `jacfwd`, `hessian`, `vjp`, `jvp`, `linearize` and
`grad_and_value` return more than one derivative, or derivatives of another shape, than one
`torch.autograd.grad` call written in place of the expression: no edit is offered for them.
"#,
}

use crate::fixes::autograd_grad;
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::EventKind;

pub(crate) fn check(checker: &mut Checker) {
    for event in &checker.model.events {
        let EventKind::GradientTransform { transform } = &event.kind else {
            continue;
        };
        let message = format!(
            "`{transform}` in traced code: export lifts the input it differentiates as a constant of the trace (a fake tensor), so the exported program cannot run. Compute the derivative with `torch.autograd.grad` under `torch.enable_grad()` on `x.detach().requires_grad_(True)` (non-strict export traces it), or in closed form"
        );
        // Strict export rejects `torch.autograd.grad` (GB9186): the rewrite is non-strict's.
        let fix = (event.file == 0 && !checker.strict())
            .then(|| {
                autograd_grad::autograd_fix(
                    event.range,
                    transform,
                    &checker.parsed.module.body,
                    checker.model.file.text,
                    checker.imports(),
                )
            })
            .flatten();
        checker.report_with_fix(
            Rule::GradientTransform,
            Severity::Warning,
            event.range,
            message,
            fix,
        );
    }
}
