//! PT403 `invalid-dynamic-shapes`: `dynamic_shapes` does not match `forward`'s parameters.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT403",
    name: "invalid-dynamic-shapes",
    summary: "`dynamic_shapes` does not match `forward`'s parameters",
    finds: "`dynamic_shapes` that does not match `forward`",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Checks the file's `dynamic_shapes` against the exported model's `forward`: dictionary keys must
name its parameters, a tuple needs one entry per example argument, and dimension indices must
exist in the example inputs. A `*args` parameter is one input: its key (`"mems"` for `*mems`)
takes a tuple with one entry per example input it receives.

## Why export fails
`torch.export.export` validates the specification before tracing and raises
`UserError` (INVALID_INPUT), e.g. "When `dynamic_shapes` is specified as a dict, its top-level
keys must be the arg names ['x'] of `inputs`, but here they are ['y']".

## Example
```python
class M(torch.nn.Module):
    def forward(self, x):
        return x + 1

dynamic_shapes = {"inp": {0: Dim("batch")}}
```

## Fix
Rename the key to the parameter's name, or give the tuple one entry per argument (`None` for a
fully static one).
"#,
}

use crate::registry::Rule;
use crate::rules::Checker;

pub(crate) fn check(checker: &mut Checker) {
    let Some(spec) = &checker.model.spec else {
        return;
    };
    for problem in &spec.problems {
        checker.report(
            Rule::InvalidDynamicShapes,
            Severity::Error,
            problem.range,
            problem.message.clone(),
        );
    }
}
