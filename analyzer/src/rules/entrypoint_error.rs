//! PT503 `entrypoint-error`: the exportable entrypoint cannot be built.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT503",
    name: "entrypoint-error",
    summary: "The exportable entrypoint cannot be built",
    finds: "(tracer) the entrypoint cannot be built",
    severity: Severity::Error,
    is_static: false,
    doc: r#"## What it does
Reported when a file declares an entrypoint (module-level `model` and `example_args`, or
`[[tool.pt2lsp.entrypoints]]`) that cannot be built: `example_args` is missing, or building the
model or its inputs raised.

## Why export fails
There is nothing to export until the model and its example inputs exist.

## Example
```python
model = MyModel()
# example_args is missing
```

## Fix
Define `example_args = (torch.randn(2, 3),)` beside `model`, or fix the exception at the line shown.
"#,
}
