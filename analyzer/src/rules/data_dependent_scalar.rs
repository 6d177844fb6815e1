//! PT102 `data-dependent-scalar`: a Python number read from a tensor drives control flow, a loop, indexing or a shape.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT102",
    name: "data-dependent-scalar",
    summary: "A Python number read from a tensor drives control flow, a loop, indexing or a shape",
    finds: "`.item()`/`.tolist()` values deciding a branch, a loop or an index; `int(t)`, \
        `float(t)`",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Follows the Python numbers made from tensor data (`.item()`, `.tolist()`) and reports where one
decides a branch, a `range()` or an index into a Python list. Also reports `int(t)` and
`float(t)` on a tensor (non-strict export fails on them even in plain arithmetic) and `math`
functions applied to a tensor. Using such a number in tensor arithmetic, in a factory
(`torch.zeros(n)`), in slicing or in `view`/`expand`/`repeat` is fine and not reported, and so
is an `assert` on it (the exporter keeps it as a runtime check).

## Why export fails
The exporter turns such a number into an unbacked symbol (`u0`, `zuf0`). Arithmetic on it is
recorded, but a branch, a loop count or a list index needs a concrete value, so export raises
`GuardOnDataDependentSymNode` ("Could not extract specialized integer from data-dependent
expression u0"). Bounds stated with `torch._check` are honoured: `if n < 6` after
`torch._check(n <= 5)` is decided and reported by nobody.

## Example
```python
def forward(self, x):
    n = x.sum().item()
    if n > 0.5:
        return x * 2
    return x
```

## Fix
Keep the value a tensor (`torch.where(x.sum() > 0.5, x * 2, x)`), or tell the exporter what it may
assume: `torch._check(n >= 0)`, `torch._check(n <= 16)`, `torch._check_is_size(n)` before the use.

A cast gets a safe fix: `int(n)` of a number read from a tensor becomes `torch.sym_int(n)`, and
`int(t)`/`float(t)` of a tensor `torch.sym_int(t.item())`/`torch.sym_float(t.item())`. In eager
these return exactly what the cast returns (for every dtype, errors included); while exporting
they keep the number symbolic, and it then works as a factor, a size (`torch.zeros(n)`,
`x[:n]`) or a returned number with no `torch._check` (measured on torch 2.15). A `math`
function of a tensor that torch spells the same (`math.sqrt(t)`, `math.exp(t)`, `math.log(t)`)
gets an unsafe fix, `torch.sqrt(t)`: the result is a 0-d tensor computed in the tensor's
precision instead of a Python float, and a domain error becomes NaN. `math.floor`/`ceil`
(which return an `int`) and `math.log(t, base)` get none.

For input validation, `if n < 0 or n > 8: raise ...`, the unsafe fix inserts the checks that
the code after it already assumes, `torch._check(n >= 0)` and `torch._check(n <= 8)`, before
the `if`: the exporter then decides the `if`, inputs that passed behave the same, and inputs
that raised still raise (a `RuntimeError` from `torch._check`). No check is offered for a
two-sided branch (deciding it would drop the side other inputs take), a loop, a list index,
`int(t)` in non-strict export, or a test whose negation is no conjunction of comparisons
(`if a < 0 and b < 0`): a check cannot make those export. A branch, a loop count or a list
index gets no fix at all: it needs the number's value however it is cast, and the rewrite
that avoids it (`torch.where`, `torch.cond`, a tensor index) depends on what the code means.
"#,
}

use crate::fixes::{scalar_conversion, torch_check};
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::value::{Guard, GuardKind, Value};
use crate::semantic::{BoolContext, EventKind, ScalarUse};

// Measured: an `assert` on a data-dependent value becomes a runtime assertion in the graph.

pub(crate) fn check(checker: &mut Checker) {
    let strict = checker.strict();
    let unexportable = torch_check::unexportable_uses(&checker.model.events, strict);
    for event in &checker.model.events {
        let text = checker.model.text(event.range);
        let message = match &event.kind {
            EventKind::Truthiness {
                value:
                    Value::Guard(Guard {
                        kind: GuardKind::Data,
                        decided: false,
                        ..
                    }),
                context,
            } if *context != BoolContext::Assert
                // Measured on torch 2.15: strict export captures `bool()` of a data-dependent
                // number as a symbolic boolean; only a branch on it fails (a later event).
                && !(strict && *context == BoolContext::BoolCall) =>
            {
                format!(
                    "{} on `{text}`, a number read from tensor data: the exporter cannot decide it; keep it a tensor (`torch.where`) or bound it with `torch._check`",
                    context.describe()
                )
            }
            EventKind::Scalar {
                value: Value::DataScalar(_),
                usage: ScalarUse::Range,
            } => format!(
                "`range()` over `{text}`, a number read from tensor data: the loop count must be known while tracing"
            ),
            EventKind::Scalar {
                value: Value::DataScalar(_),
                usage: ScalarUse::ListIndex,
            } => format!(
                "Indexing a Python sequence with `{text}`, a number read from tensor data: the exporter needs a concrete index"
            ),
            // Measured: non-strict export fails on `int(t)` / `float(t)` even in plain
            // arithmetic; strict export captures the scalar.
            EventKind::Scalar {
                value: Value::DataScalar(_),
                usage: ScalarUse::Conversion,
            } if !strict => format!(
                "`{text}` asks for the value of a number read from tensor data, which non-strict export cannot do; keep it a tensor, or export with `strict=True`"
            ),
            EventKind::Scalar {
                value: Value::Tensor(_),
                usage: ScalarUse::Conversion,
            } if !strict => format!(
                "`{text}` turns a tensor into a Python number, which non-strict export cannot do; use `.item()` and keep arithmetic in torch, or stay a tensor"
            ),
            EventKind::Scalar {
                value: Value::Tensor(_) | Value::DataScalar(_),
                usage: ScalarUse::MathCall,
            } => format!(
                "`{text}` applies a `math` function to a tensor, which needs its value; use the `torch` function of the same name"
            ),
            _ => continue,
        };
        // An input-validation `if` gets a check (see `fixes::torch_check`), a cast or a `math`
        // function its torch spelling (see `fixes::scalar_conversion`).
        let fix = match &event.kind {
            EventKind::Truthiness {
                context: BoolContext::If { raises_only: true },
                ..
            } => torch_check::validation_check_fix(
                event.range,
                &unexportable,
                &checker.parsed.module.body,
                checker.model.file,
                checker.imports(),
            ),
            EventKind::Scalar {
                value,
                usage: ScalarUse::Conversion,
            } => scalar_conversion::symbolic_cast_fix(
                event.range,
                matches!(value, Value::Tensor(_)),
                checker.model.file.text,
                checker.imports(),
            ),
            EventKind::Scalar {
                value: Value::Tensor(_),
                usage: ScalarUse::MathCall,
            } => scalar_conversion::torch_math_fix(
                event.range,
                checker.model.file.text,
                checker.imports(),
            ),
            _ => None,
        };
        checker.report_with_fix(
            Rule::DataDependentScalar,
            Checker::failure_severity(event),
            event.range,
            message,
            fix,
        );
    }
}
