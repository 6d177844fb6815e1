//! PT302 `mismatched-fake-kernel`: a fake kernel disagrees with the real kernel's output.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT302",
    name: "mismatched-fake-kernel",
    summary: "A fake kernel disagrees with the real kernel's output",
    finds: "(tracer) fake kernel disagrees with the real one",
    severity: Severity::Error,
    is_static: false,
    doc: r#"## What it does
Reported by the tracer: `torch.export.draft_export` ran the real kernel beside the fake one and
their outputs differ in shape, dtype or strides.

## Why export fails
Export trusts the fake kernel, so it succeeds and records wrong shapes: the exported program
fails or computes garbage at run time. Only `draft_export` compares the two.

## Example
```python
@scale.register_fake
def _(x):
    return x.new_empty(x.shape[0] + 1)   # the real kernel returns x.shape[0] elements
```

## Fix
Make the fake kernel return the real kernel's shape and dtype.
"#,
}
