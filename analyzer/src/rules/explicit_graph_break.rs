//! PT203 `explicit-graph-break`: a graph break or side effect that strict export rejects or drops.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT203",
    name: "explicit-graph-break",
    summary: "A graph break or side effect that strict export rejects or drops",
    finds: "`torch._dynamo.graph_break()`; `print`/logging under strict",
    severity: Severity::Warning,
    is_static: true,
    doc: r#"## What it does
Finds `torch._dynamo.graph_break()` (a warning; an error under `strict = true`) and, under
`strict = true` only, `print`, `logging` and `warnings` calls in traced code (a warning: they
are dropped from the graph). Non-strict export runs prints while tracing, so they are not
reported there.

## Why export fails
Strict export must capture one whole graph, so `graph_break()` is an error there
(`Unsupported: Call to torch._dynamo.graph_break()`); non-strict export ignores it. A `print` runs
only while tracing: the exported program never prints (strict export drops it silently).

## Example
```python
def forward(self, x):
    print("shape", x.shape)
    torch._dynamo.graph_break()
    return x + 1
```

## Fix
Remove the graph break. Move logging out of `forward`, or guard it with
`if not torch.compiler.is_compiling():`.
"#,
}

use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::EventKind;

pub(crate) fn check(checker: &mut Checker) {
    let strict = checker.strict();
    for event in &checker.model.events {
        let EventKind::Call { qualified, .. } = &event.kind else {
            continue;
        };
        let (severity, message) = if qualified == "torch._dynamo.graph_break" {
            (
                checker.strict_only(),
                "`torch._dynamo.graph_break()` splits the graph: strict export fails on it, non-strict export ignores it".to_owned(),
            )
        } else if strict
            && (qualified == "print"
                || qualified == "warnings.warn"
                || qualified.starts_with("logging."))
        {
            // Measured: strict export succeeds and drops the call from the graph.
            (
                Severity::Warning,
                format!("`{qualified}` runs only while tracing; the exported program drops it"),
            )
        } else {
            continue;
        };
        checker.report(Rule::ExplicitGraphBreak, severity, event.range, message);
    }
}
