//! PT101 `data-dependent-branch`: python control flow depends on a tensor's value.

use crate::diagnostic::Severity;
use crate::registry::RuleMeta;

pub(crate) const META: RuleMeta = RuleMeta {
    code: "PT101",
    name: "data-dependent-branch",
    summary: "Python control flow depends on a tensor's value",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds `if`, `while`, ternaries, `assert`, `bool()`, `not`, `and`/`or` and comprehension filters
whose condition is a tensor (`x.sum() > 0`, `mask.any()`, `torch.equal(a, b)`) inside traced code:
each `forward` of an `nn.Module`, what it calls, and `torch.cond` branches.
A condition behind an `and`/`or` operand the analysis cannot decide
(`x.dtype == torch.float16 and not torch.isfinite(x).all()`) is a warning: with float32
inputs the exporter never evaluates it.

## Why export fails
`torch.export` traces with symbolic tensors that have shapes but no values. Turning a tensor into a
Python `bool` needs its value, so non-strict export raises `GuardOnDataDependentSymNode`
(strict export: `Unsupported: Data-dependent branching`). A graph has no Python `if`: only one
side could be kept. Measured on torch 2.15: an `assert` on a tensor and `bool(t)` fail only in
non-strict export (strict export turns them into runtime checks), so under `strict = true` they
are not reported; `if`, `while` and ternaries fail in both modes.

## Example
```python
def forward(self, x):
    if x.sum() > 0:
        return x.sin()
    return x.cos()
```

## Fix
Express the choice as tensor operations: `torch.where(x.sum() > 0, x.sin(), x.cos())` when both
sides compute one tensor of the same shape, or `torch.cond(x.sum() > 0, true_fn, false_fn, (x,))`
for general branches. An `assert` on values becomes `torch._check(...)` on a scalar, or is removed.
"#,
};

use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::value::Value;
use crate::semantic::{BoolContext, EventKind};

pub(crate) fn check(checker: &mut Checker) {
    let strict = checker.strict();
    for event in &checker.model.events {
        let EventKind::Truthiness {
            value: Value::Tensor(_),
            context,
        } = &event.kind
        else {
            continue;
        };
        // Measured on torch 2.15: strict export turns an `assert` on a tensor into a runtime
        // assertion and `bool(t)` into a captured scalar; only non-strict export fails on them.
        if strict && matches!(context, BoolContext::Assert | BoolContext::BoolCall) {
            continue;
        }
        let text = checker.model.text(event.range);
        let message = format!(
            "{} needs the value of tensor `{text}`, which `torch.export` does not have while tracing; use `torch.where` or `torch.cond`",
            context.describe()
        );
        checker.report(
            Rule::DataDependentBranch,
            Checker::failure_severity(event),
            event.range,
            message,
        );
    }
}
