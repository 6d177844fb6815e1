//! PT502 `worker-crash`: the tracer timed out or its worker process died.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT502",
    name: "worker-crash",
    summary: "The tracer timed out or its worker process died",
    finds: "(tracer) timeout or crash",
    severity: Severity::Error,
    is_static: false,
    doc: r#"## What it does
Reported when the tracer's job for this file exceeded its time limit, ran out of memory, or the
worker process died (a segfault, `os._exit`). The worker is restarted for the next job.

## Why export fails
It may not: the model did not finish tracing in time, or crashed the interpreter.

## Example
```python
def forward(self, x):
    while True:
        pass
```

## Fix
Look for endless loops or huge allocations in the traced code, or raise `timeout` in
`[tool.pt2lsp]`.
"#,
}
