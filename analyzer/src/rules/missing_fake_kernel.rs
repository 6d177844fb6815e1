//! PT301 `missing-fake-kernel`: a custom operator has no fake (meta) kernel.

use crate::diagnostic::Severity;
use crate::registry::RuleMeta;

pub(crate) const META: RuleMeta = RuleMeta {
    code: "PT301",
    name: "missing-fake-kernel",
    summary: "A custom operator has no fake (meta) kernel",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds custom operators defined with `@torch.library.custom_op` or `torch.library.Library(...).define`
that have no fake kernel anywhere in the workspace (`@op.register_fake`,
`torch.library.register_fake("ns::op")`, `impl_abstract`, or a `Meta` implementation).

## Why export fails
The exporter runs every operator on fake tensors to learn output shapes. Without a fake kernel it
raises `There was no fake impl registered for <CustomOpDef(ns::op)>` (custom_op) or
`UnsupportedOperatorException: ns.op.default` (Library.define).

## Example
```python
@torch.library.custom_op("mylib::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2
```

## Fix
Register a fake kernel that computes only the output's shape and dtype:
```python
@scale.register_fake
def _(x):
    return torch.empty_like(x)
```
"#,
};

use crate::registry::Rule;
use crate::rules::Checker;

pub(crate) fn check(checker: &mut Checker) {
    for op in &checker.model.custom_ops {
        if op.has_fake {
            continue;
        }
        let message = format!(
            "Custom operator `{}` has no fake kernel: `torch.export` cannot compute its output shapes; register one with `torch.library.register_fake(\"{}\")`",
            op.name, op.name
        );
        checker.report(Rule::MissingFakeKernel, Severity::Error, op.range, message);
    }
}
