//! PT501 `export-failed`: the real exporter failed with an error no other rule names.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT501",
    name: "export-failed",
    summary: "The real exporter failed with an error no other rule names",
    finds: "(tracer) any other exporter error",
    severity: Severity::Error,
    is_static: false,
    doc: r#"## What it does
Reported by the tracer for any exporter error that the other rules do not classify, with the
exporter's message and the user frame it came from.

## Why export fails
See the message: it is the exporter's own, trimmed to what helps.

## Example
```python
def forward(self, x):
    return x.view(3, -1)   # the example input has 4 elements
```

## Fix
Read the message at the reported line; run `pt2lsp check --trace` again after the change.
"#,
}
