//! PT301 `missing-fake-kernel`: a custom operator has no fake (meta) kernel.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT301",
    name: "missing-fake-kernel",
    summary: "A custom operator has no fake (meta) kernel",
    finds: "custom ops without `register_fake` / meta kernel",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds custom operators defined with `@torch.library.custom_op` or `torch.library.Library(...).define`
that have no fake kernel anywhere in the workspace (`@op.register_fake`,
`torch.library.register_fake("ns::op")`, `impl_abstract`, or a `Meta` implementation). An
operator that mutates an argument and returns nothing is not reported: torch makes its fake
kernel itself.

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
def _scale_fake(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)
```
The unsafe fix writes that kernel after the operator's definition (after its last `lib.impl`
for a `Library.define` operator, registered with `torch.library.register_fake("ns::op")`), with
the operator's parameters (from the schema string for `define`) and an output read off the
implementation's `return`: `torch.empty_like(x)` for an elementwise expression of `x` (with the
dtype of a comparison or a `.float()`), the broadcast shape for several tensors, `x.new_empty`
of the reduced shape for a reduction over a literal dimension, `None` for an operator that
returns nothing. Where the implementation does not say (NumPy, a C extension), the kernel
returns the first tensor input's shape and says it is a guess. A wrong fake kernel exports
silently, so the kernel carries a comment asking to confirm its shape and dtype.
"#,
}

use crate::fixes::register_fake;
use crate::registry::Rule;
use crate::rules::Checker;

pub(crate) fn check(checker: &mut Checker) {
    for op in &checker.model.custom_ops {
        if op.has_fake || op.has_trivial_fake() {
            continue;
        }
        let message = format!(
            "Custom operator `{}` has no fake kernel: `torch.export` cannot compute its output shapes; register one with `torch.library.register_fake(\"{}\")`",
            op.name, op.name
        );
        let fix =
            register_fake::fake_kernel_fix(op, &checker.parsed.module.body, checker.model.file);
        checker.report_with_fix(
            Rule::MissingFakeKernel,
            Severity::Error,
            op.range,
            message,
            fix,
        );
    }
}
