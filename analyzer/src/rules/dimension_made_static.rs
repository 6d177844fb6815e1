//! PT406 `dimension-made-static`: an operation fixes a dimension declared `Dim.AUTO` or by
//! `@dynamic_spec` to one size, and export succeeds with a program that accepts only that size.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT406",
    name: "dimension-made-static",
    summary: "A dimension declared `Dim.AUTO` or by `@dynamic_spec` is fixed to one size by the code",
    finds: "code that needs a dimension declared `Dim.AUTO` or by `@dynamic_spec` to be one size \
        (a reshape to literals, a broadcast against a literal size, a Python loop): export \
        succeeds with the dimension static",
    severity: Severity::Warning,
    is_static: true,
    doc: r#"## What it does
Finds operations that need a dimension the user declared dynamic to be one size, where the
declaration does not make export fail but lets it give up the dimension silently:

- `Dim.AUTO` in `dynamic_shapes`: an example of size 0 or 1 there (the exporter specialises
  those sizes), a `view`/`reshape` to literal sizes only, a broadcast against a literal size, a Python loop over the dimension (`range(x.shape[0])`, `for row in x`), a
  recurrent layer run step by step over it, and, in non-strict export, `int()`, `len()` or a
  `math` function of the size;
- a `ShapeVar` of `@dynamic_spec` (`torch.fx.experimental.dynamic_spec`): a `view`/`reshape`
  to literal sizes only, a broadcast against a literal size, a `split` into literal sections
  along it (`x.split([4, 4])`: the sections must add up to its size).

The tracer confirms both from the exported program, on the same line, so the two merge: a
`Dim.AUTO` input dimension the program holds at one size (on the line whose guard fixed it, or
on the example of size 0 or 1), and a `ShapeVar` whose range the program narrowed to one size
(`VR[8, 8]`, on the line of the runtime assert that narrowed it, `Eq(4*u0, 32)`), strict or not.

## Why export fails
It does not fail, which is the problem. Measured with torch 2.15: `Dim.AUTO` lets the exporter
choose, and where the code needs one size it chooses a static dimension, with no warning: the
exported program's `range_constraints` has no entry for it, and it rejects every other size at
run time. A `ShapeVar`'s range is narrowed to the one size (`VR[8, 8]`). A named `Dim` or
`Dim.DYNAMIC` fails export at the same line instead (PT401).

## Example
```python
dynamic_shapes = {"x": {0: Dim.AUTO}}

def forward(self, x):          # x: (batch, 4)
    return x.reshape(2, 16)    # batch must be 8: the program is exported for batch 8 only
```

## Fix
Give the example a size of at least 2 (an unsafe fix: it changes an input). Take the sizes
from the input (`x.reshape(x.shape[0] // 4, -1)`, `-1` for the one inferred)
and use tensor operations instead of Python loops, so the dimension stays dynamic. If the model
really takes one size there, declare the dimension static (`None`) so the program says so. No
automatic fix: either changes what the code means or what the user declared.
"#,
}

use crate::diagnostic::{Applicability, Edit, Fix};
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::value::{DimDecl, SizeOrigin, Value};
use crate::semantic::{EventKind, ScalarUse};

pub(crate) fn check(checker: &mut Checker) {
    if let Some(spec) = &checker.model.spec {
        for example in &spec.auto_examples {
            let fix = example.edit.map(|(range, size)| Fix {
                title: format!(
                    "Change the example's size ({} -> {size}): the dimension stays dynamic",
                    example.size
                ),
                edits: vec![Edit {
                    range,
                    content: size.to_string(),
                }],
                applicability: Applicability::Unsafe,
            });
            checker.report_with_fix(
                Rule::DimensionMadeStatic,
                Severity::Warning,
                example.range,
                example.message.clone(),
                fix,
            );
        }
    }
    let strict = checker.strict();
    for event in &checker.model.events {
        let text = checker.model.text(event.range);
        let subject = |dim: &DimDecl| {
            if dim.unbacked {
                format!("`{}`, a `ShapeVar` of `@dynamic_spec`,", dim.name)
            } else {
                "a dimension declared `Dim.AUTO`".to_owned()
            }
        };
        let (dim, what) = match &event.kind {
            EventKind::DimFixed { dim, size } if dim.fixed_silently() => {
                (dim, format!("needs {} to be {size}", subject(dim)))
            }
            EventKind::Scalar {
                value:
                    Value::Size {
                        origin: SizeOrigin::Dynamic { dim, .. },
                        ..
                    },
                usage,
            } if dim.is_auto() => {
                let fixes = match usage {
                    ScalarUse::Range | ScalarUse::ConcreteArgument(_) => true,
                    ScalarUse::Conversion | ScalarUse::Len | ScalarUse::MathCall => !strict,
                    ScalarUse::ListIndex => false,
                };
                if !fixes {
                    continue;
                }
                (dim, format!("needs {} as a Python number", subject(dim)))
            }
            EventKind::IterateTensor {
                size:
                    Value::Size {
                        origin: SizeOrigin::Dynamic { dim, .. },
                        ..
                    },
                ..
            } if dim.is_auto() => (dim, format!("loops in Python over {}", subject(dim))),
            EventKind::Unrolled { dim, layer } if dim.is_auto() => (
                dim,
                format!("runs `nn.{layer}` step by step over {}", subject(dim)),
            ),
            _ => continue,
        };
        let outcome = if dim.unbacked {
            "export succeeds with its range narrowed to that one size, so the program accepts no other; take the sizes from the input (`-1`, `x.shape[0]`), or declare the dimension static"
        } else {
            "export succeeds with that dimension made static, so the program accepts no other size; take the sizes from the input (`-1`, `x.shape[0]`) and use tensor operations, or declare the dimension static (`None`)"
        };
        checker.report(
            Rule::DimensionMadeStatic,
            Severity::Warning,
            event.range,
            format!("`{text}` {what}: {outcome}"),
        );
    }
}
