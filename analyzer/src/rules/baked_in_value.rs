//! PT601 `baked-in-value`: a value read at trace time is frozen into the exported program.

use crate::diagnostic::Severity;
use crate::registry::RuleMeta;

pub(crate) const META: RuleMeta = RuleMeta {
    code: "PT601",
    name: "baked-in-value",
    summary: "A value read at trace time is frozen into the exported program",
    severity: Severity::Warning,
    is_static: false,
    doc: r#"## What it does
Reported by the tracer when the exported program disagrees with eager execution on fresh
inputs: a global counter, a builtin's result, `random` or `time` was read while tracing and
became a constant.

## Why export fails
It does not fail; the exported program is silently different from the model.

## Example
```python
def forward(self, x):
    return x * random.random()
```

## Fix
Pass such values in as inputs, or compute them with torch operations (`torch.rand`).
"#,
};
