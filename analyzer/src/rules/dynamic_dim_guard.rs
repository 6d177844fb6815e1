//! PT401 `dynamic-dim-guard`: code guards on a dimension declared dynamic.

use crate::diagnostic::Severity;
use crate::registry::RuleMeta;

pub(crate) const META: RuleMeta = RuleMeta {
    code: "PT401",
    name: "dynamic-dim-guard",
    summary: "Code guards on a dimension declared dynamic",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Reads the file's `dynamic_shapes` (module level or in a `torch.export.export` call) and the `Dim`
given to each dimension of each `forward` parameter, then finds branches, asserts and loops on
those dimensions that the `Dim`'s range does not already decide: `if x.shape[0] > 16` with
`Dim("batch")`, `for i in range(x.shape[0])`, iterating over the tensor itself, and (non-strict)
`len(x)`, which must return a Python int. The exporter assumes a dynamic size is at least 2, so
`if x.shape[0] == 1` is decided and not reported. An elementwise operation that broadcasts two
inputs' different `Dim`s against each other (`x + y` with `Dim("a")` and `Dim("b")`) is
reported too: the exporter requires them equal; against a literal size other than 1
(`x + torch.ones(8, 3)`) it specialises the dimension, also reported. So are `view`/`reshape` to literal sizes that the
dynamic dimension's element count must divide into (`x.reshape(-1, 4)` on `x: [batch, 2]`), and
slicing a parameter or buffer up to a dynamic
size (`self.pos[:, :x.shape[1]]`) when the `Dim` has no `max`. `Dim.AUTO` and `Dim.DYNAMIC` let the
exporter refine the range itself and are not checked.

## Why export fails
A branch on a dynamic size adds a guard (`s0 > 16`) that narrows the range you declared, and a loop
fixes the size to one value. Export refuses with `UserError: Constraints violated (batch)!` and a
`Suggested fixes:` block — without a line number; pt2lsp puts it on the line that made the guard.

## Example
```python
batch = Dim("batch")
dynamic_shapes = {"x": {0: batch}}

class M(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 16:
            return x[:16]
        return x
```

## Fix
State the range the code needs: `Dim("batch", min=17)` or `Dim("batch", max=16)`, or replace
the branch with tensor operations. Loops over a dynamic size become tensor operations.
"#,
};

use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::value::{Guard, GuardKind, SizeOrigin, Value};
use crate::semantic::{EventKind, ScalarUse};

pub(crate) fn check(checker: &mut Checker) {
    let strict = checker.strict();
    for event in &checker.model.events {
        let text = checker.model.text(event.range);
        let message = match &event.kind {
            EventKind::Truthiness {
                value:
                    Value::Guard(Guard {
                        kind: GuardKind::Dynamic(dim),
                        decided: false,
                        suggestion,
                    }),
                context,
            } => {
                let fix = suggestion.as_ref().map_or_else(String::new, |suggestion| {
                    format!("; declare the range it needs: {suggestion}")
                });
                format!(
                    "{} on `{text}` guards dynamic dimension `{}`: export fails with \"Constraints violated ({})\"{fix}",
                    context.describe(),
                    dim.name,
                    dim.name
                )
            }
            EventKind::Scalar {
                value:
                    Value::Size {
                        origin: SizeOrigin::Dynamic { dim, .. },
                        ..
                    },
                usage: ScalarUse::Range,
            } if !dim.automatic => {
                format!(
                    "`range()` over `{text}`, dynamic dimension `{}`: the loop is unrolled, which fixes the dimension to the example's size; use tensor operations instead",
                    dim.name
                )
            }
            // Measured: non-strict `len(x)` must return a Python int, which fixes the dimension.
            EventKind::Scalar {
                value:
                    Value::Size {
                        origin: SizeOrigin::Dynamic { dim, .. },
                        ..
                    },
                usage: ScalarUse::Len,
            } if !dim.automatic && !strict => format!(
                "`{text}` returns a Python int, which fixes dynamic dimension `{}` to the example's size; use `x.shape[0]`, which stays symbolic",
                dim.name
            ),
            EventKind::DimMismatch { left, right } => format!(
                "`{text}` broadcasts dynamic dimensions `{}` and `{}` against each other, so they must be equal: export fails with \"Constraints violated ({})\"; declare `{} = {}` in `dynamic_shapes`",
                left.name, right.name, right.name, right.name, left.name
            ),
            EventKind::DimSpecialized { dim, size } => format!(
                "`{text}` broadcasts dynamic dimension `{}` against a fixed size {size}, which specialises it: export fails with \"Constraints violated ({})\"; make the other operand follow the input's shape, or declare the dimension static",
                dim.name, dim.name
            ),
            EventKind::ReshapeGuard { dim, multiple } => format!(
                "`{text}` needs the element count to divide into the new shape, which guards dynamic dimension `{}`: export fails with \"Constraints violated ({})\"; declare it a multiple of {multiple} (`_{} = Dim(\"_{}\"); {} = {multiple} * _{}`) or use sizes taken from the input",
                dim.name, dim.name, dim.name, dim.name, dim.name, dim.name
            ),
            EventKind::BufferSlice { dim } => format!(
                "Slicing a fixed-size parameter or buffer up to `{text}` guards dynamic dimension `{}` to at most its length: export fails with \"Constraints violated ({})\"; declare `Dim(\"{}\", max=...)` with that length",
                dim.name, dim.name, dim.name
            ),
            EventKind::IterateTensor {
                size:
                    Value::Size {
                        origin: SizeOrigin::Dynamic { dim, .. },
                        ..
                    },
                ..
            } if !dim.automatic => {
                format!(
                    "Looping over `{text}` unrolls its dynamic dimension `{}` to the example's size; use tensor operations instead",
                    dim.name
                )
            }
            _ => continue,
        };
        checker.report(
            Rule::DynamicDimGuard,
            Checker::failure_severity(event),
            event.range,
            message,
        );
    }
}
