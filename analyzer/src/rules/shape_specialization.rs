//! PT402 `shape-specialization`: a branch on a static dimension: the exported graph keeps one side only.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT402",
    name: "shape-specialization",
    summary: "A branch on a static dimension: the exported graph keeps one side only",
    finds: "branches on a static dimension: one side is kept",
    severity: Severity::Warning,
    is_static: true,
    doc: r#"## What it does
Finds `if`, `while` and ternaries whose condition compares a static dimension (one not declared
dynamic). An `if` whose body only raises (input validation) is not reported.

## Why export fails
It does not fail: the exporter evaluates the condition on the example input and keeps only that
branch. The exported program then accepts only inputs of that shape, and the other branch is
gone. That is right for a fixed-shape model and a surprise for one meant to run at other sizes.

## Example
```python
def forward(self, x):
    if x.shape[0] > 5:
        return x[:5]
    return x
```

## Fix
If the dimension should stay dynamic, declare it in `dynamic_shapes` (then PT401 tells whether
the branch needs a constraint). If the shape is fixed, suppress with `# pt2lsp: ignore[PT402]`.
"#,
}

use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::EventKind;
use crate::semantic::value::{Guard, GuardKind, Value};

pub(crate) fn check(checker: &mut Checker) {
    for event in &checker.model.events {
        let EventKind::Truthiness {
            value:
                Value::Guard(Guard {
                    kind: GuardKind::Static,
                    ..
                }),
            context,
        } = &event.kind
        else {
            continue;
        };
        if !context.is_branch() {
            continue;
        }
        let text = checker.model.text(event.range);
        let message = format!(
            "{} on static shape `{text}`: the exported graph keeps only the side the example input takes",
            context.describe()
        );
        checker.report(
            Rule::ShapeSpecialization,
            Severity::Warning,
            event.range,
            message,
        );
    }
}
