//! PT103 `data-dependent-shape`: the size of a data-dependent result is used as a Python value.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT103",
    name: "data-dependent-shape",
    summary: "The size of a data-dependent result is used as a Python value",
    finds: "sizes of `nonzero`/`unique`/boolean-mask results used as Python values; an RNN over a \
        `PackedSequence`; a branch, loop or `int()` on a `ShapeVar` of `@dynamic_spec` (an \
        unbacked size)",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Tracks tensors whose size depends on data: `nonzero()`, `unique()`, `masked_select()`,
boolean-mask indexing `x[x > 0]`, `torch.where(cond)` with one argument, and the
`PackedSequence` of `pack_padded_sequence` / `pack_sequence`. Reports where their size
(`.shape[i]`, `.size(i)`, `len()`, `.numel()`) decides a branch or a loop, where `len()` must
return it as a Python int (non-strict), Python loops over such a tensor, and a recurrent layer
(`nn.LSTM`, `nn.GRU`, `nn.RNN`) run over a `PackedSequence`, which reads its batch sizes as
Python numbers (`TypeError: zeros(): argument 'size' ... got FakeTensor`).

The dimensions `@dynamic_spec` declares (`ShapeVar("B")` in a `TensorSpec`, on `forward` or in
a `ShapesSpec` given as `dynamic_shapes`) are such sizes too: torch 2.15 gives them unbacked
symbols. A branch on one, a Python loop over it, or (non-strict) `int()`/`len()` of it fails;
so do `split(n)`, `chunk(n)`, `unbind` and `tensor_split(n)` along one (torch counts the parts
from its size), `max_pool1d` or a recurrent layer over one, and global average pooling
(`AdaptiveAvgPool2d((1, 1))`, `F.adaptive_avg_pool2d(x, 1)`) or `AdaptiveMaxPool1d` of an input
whose range includes 0 (measured, torch 2.15, strict and not; a convolution before the pooling
or a declared `min=1` narrows the range and decides the test, so only the pooling of a
parameter of `forward` itself is reported); sections given as a list (`split([4, 4])`), a cut along a static dimension, and
`avg_pool1d`/`conv1d` over one export; an `assert` or `torch._check` on it, and a relation between two, become runtime checks, and the
spec's `assumptions` (`B > 4`) decide the comparisons they imply.

## Why export fails
Such sizes are unbacked symbols. Feeding them to further tensor operations is fine, but a Python
`if idx.shape[0] > 3` or `range(idx.shape[0])` needs a value the exporter does not have:
`GuardOnDataDependentSymNode` (strict: `UserError` anti-pattern).

## Example
```python
def forward(self, x):
    idx = x.nonzero()
    if idx.shape[0] > 3:
        return x[:3]
    return x
```

## Fix
Keep the size symbolic: compute with it in tensor operations, or use `torch.cond` on
`idx.shape[0] > 3`. Where a bound is known, state it with `torch._check(idx.shape[0] <= 16)`.

For input validation, `if idx.shape[0] == 0: raise ...`, the unsafe fix inserts
`torch._check(idx.shape[0] != 0)` before the `if`, which decides it. Not offered where `len()`
of the result is taken in non-strict export (`len` fails whatever is checked: use
`t.shape[0]`), nor for two-sided branches and loops.
"#,
}

use ruff_text_size::{Ranged, TextRange};

use crate::fixes::torch_check;
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::value::{Guard, GuardKind, SizeOrigin, Value};
use crate::semantic::{BoolContext, EventKind, ScalarUse};
use crate::syntax::ast::{self, Expr, Stmt};
use crate::syntax::parse_expression;

// Measured: an `assert` on a data-dependent value becomes a runtime assertion in the graph.

pub(crate) fn check(checker: &mut Checker) {
    let strict = checker.strict();
    let unexportable = torch_check::unexportable_uses(&checker.model.events, strict);
    // `if len(keep) == 0:` fails at `len(keep)` (non-strict): that is the one finding, not a
    // second one for the `if` around it, unless the `if` carries the fix.
    let failing_lengths: Vec<TextRange> = if strict {
        Vec::new()
    } else {
        checker
            .model
            .events
            .iter()
            .filter(|event| {
                matches!(
                    event.kind,
                    EventKind::Scalar {
                        value: Value::Size {
                            origin: SizeOrigin::Unbacked,
                            ..
                        },
                        usage: ScalarUse::Len,
                    }
                )
            })
            .map(|event| event.range)
            .collect()
    };
    for event in &checker.model.events {
        let text = checker.model.text(event.range);
        let message = match &event.kind {
            EventKind::Truthiness {
                value:
                    Value::Guard(Guard {
                        kind: GuardKind::Unbacked,
                        decided: false,
                        ..
                    }),
                context,
            } if *context != BoolContext::Assert => {
                format!(
                    "{} on `{text}`, which depends on the size of a data-dependent result (`nonzero`, `unique`, a boolean mask); the exporter cannot decide it",
                    context.describe()
                )
            }
            EventKind::Scalar {
                value:
                    Value::Size {
                        origin: SizeOrigin::Unbacked,
                        ..
                    },
                usage: ScalarUse::Range | ScalarUse::ListIndex,
            } => format!(
                "`{text}` is the size of a data-dependent result; a Python loop or index over it needs a concrete value while tracing"
            ),
            EventKind::Scalar {
                value:
                    Value::Size {
                        origin: SizeOrigin::Unbacked,
                        ..
                    },
                usage: ScalarUse::Len,
            } if !strict => format!(
                "`{text}` must return a Python int, but the length of a data-dependent result is unknown while tracing; use `t.shape[0]` in tensor arithmetic"
            ),
            EventKind::IterateTensor { tensor, .. } if tensor.data_dependent_shape => format!(
                "Looping over `{text}`, whose length depends on data: the exporter cannot unroll it"
            ),
            // Adaptive pooling tests the size only while its range includes 0: a convolution
            // before it narrows the range (measured), which the analysis does not follow, so
            // only the pooling of an input itself is said.
            EventKind::AdaptivePoolUnbacked { .. }
                if event.file != 0
                    || !pools_an_input(
                        &checker.parsed.module.body,
                        checker.model.file.text,
                        event.range,
                    ) =>
            {
                continue;
            }
            kind if kind.on_unbacked_dim() => match declared_unbacked(kind, strict) {
                Some((dim, Failure::Guard(context))) => format!(
                    "{} on `{text}` guards `{dim}`, a `ShapeVar` of `@dynamic_spec`, which export makes an unbacked size: export fails with \"Could not guard on data-dependent expression\"; state what always holds with `torch._check(...)` before it or in the spec's `assumptions`, or compute both sides with `torch.where`",
                    context.describe()
                ),
                Some((dim, Failure::Value)) => format!(
                    "`{text}` needs the value of `{dim}`, a `ShapeVar` of `@dynamic_spec`, which export makes an unbacked size: export fails with \"Could not extract specialized integer from data-dependent expression\"; keep the size symbolic in tensor operations"
                ),
                Some((dim, Failure::Layer)) => format!(
                    "`{text}` runs a layer that decides on the size of `{dim}`, a `ShapeVar` of `@dynamic_spec`, which export makes an unbacked size: export fails with \"Could not guard on data-dependent expression\"; declare the dimension with `Dim` in `dynamic_shapes` instead"
                ),
                Some((dim, Failure::Pool(layer))) => format!(
                    "`{text}` runs `{layer}`, which tests the size of `{dim}`, a `ShapeVar` of `@dynamic_spec` that export makes an unbacked size: export fails with \"Could not guard on data-dependent expression\"; for global average pooling take the mean over the spatial dimensions (`x.mean((2, 3), keepdim=True)`, which exports), or declare the dimension with `Dim` in `dynamic_shapes`"
                ),
                Some((dim, Failure::Cut(op))) => format!(
                    "`{text}` cuts `{dim}`, a `ShapeVar` of `@dynamic_spec`, into parts whose number `{op}` decides from its size, which export makes an unbacked size: export fails with \"Could not guard on data-dependent expression\"; cut a static dimension, or declare this one with `Dim` in `dynamic_shapes` instead"
                ),
                None => continue,
            },
            EventKind::DataDependentRecurrent { layer } => format!(
                "`{text}` runs `{layer}` over a sequence whose sizes depend on data (a `PackedSequence`'s batch sizes are tensor data): the layer reads them as Python numbers, which the exporter does not have; run it on the padded tensor and mask the padding"
            ),
            _ => continue,
        };
        // Only an input-validation `if` gets a check: see `fixes::torch_check`.
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
            _ => None,
        };
        let around_a_failing_length = matches!(event.kind, EventKind::Truthiness { .. })
            && failing_lengths
                .iter()
                .any(|length| event.range.contains_range(*length));
        if around_a_failing_length && fix.is_none() {
            continue;
        }
        checker.report_with_fix(
            Rule::DataDependentShape,
            Checker::failure_severity(event),
            event.range,
            message,
            fix,
        );
    }
}

/// What fails on a dimension `@dynamic_spec` declares.
enum Failure {
    /// A branch or a test needs its truth value.
    Guard(BoolContext),
    /// Python needs its value as a number: a loop count, an index, `int()`.
    Value,
    /// A layer tests its size inside torch (`nn.LSTM`, `max_pool1d`).
    Layer,
    /// `split`, `chunk`, `unbind` or `tensor_split` counts the parts from its size.
    Cut(String),
    /// Adaptive pooling tests its size (global average pooling, `AdaptiveMaxPool1d`).
    Pool(String),
}

/// The `ShapeVar` an event fails on and how, measured with torch 2.15: a guard on one fails
/// where `assert` and `torch._check` become runtime checks; `int()`, `len()` and `math` of one
/// fail non-strict only, as on a `Dim`; equalities and ranges are runtime checks (no failure).
fn declared_unbacked(kind: &EventKind, strict: bool) -> Option<(String, Failure)> {
    match kind {
        EventKind::Truthiness {
            value:
                Value::Guard(Guard {
                    kind: GuardKind::Dynamic(dim),
                    decided: false,
                    ..
                }),
            context,
        } if !matches!(context, BoolContext::Assert | BoolContext::Check) => {
            Some((dim.name.clone(), Failure::Guard(*context)))
        }
        EventKind::Scalar {
            value:
                Value::Size {
                    origin: SizeOrigin::Dynamic { dim, .. },
                    ..
                },
            usage,
        } => {
            let fails = match usage {
                ScalarUse::Range | ScalarUse::ListIndex | ScalarUse::ConcreteArgument(_) => true,
                ScalarUse::Conversion | ScalarUse::Len | ScalarUse::MathCall => !strict,
            };
            fails.then(|| (dim.name.clone(), Failure::Value))
        }
        EventKind::IterateTensor {
            size:
                Value::Size {
                    origin: SizeOrigin::Dynamic { dim, .. },
                    ..
                },
            ..
        } => Some((dim.name.clone(), Failure::Value)),
        EventKind::Unrolled { dim, .. } | EventKind::PoolFixesLength { dim, .. } => {
            Some((dim.name.clone(), Failure::Layer))
        }
        EventKind::AdaptivePoolUnbacked { dim, layer } => {
            Some((dim.name.clone(), Failure::Pool(layer.clone())))
        }
        EventKind::CutsUnbackedDim { dim, op } => {
            Some((dim.name.clone(), Failure::Cut(op.clone())))
        }
        _ => None,
    }
}

/// Whether the call at `range` pools a parameter of the function around it that the function
/// never rebinds (`self.pool(x)` in `forward(self, x)`): the input's own sizes, as declared.
fn pools_an_input(body: &[Stmt], text: &str, range: TextRange) -> bool {
    struct Rebinds<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'a> ast::visitor::Visitor<'a> for Rebinds<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Name(name) = expr {
                self.found |= name.ctx == ast::ExprContext::Store && name.id.as_str() == self.name;
            }
            ast::visitor::walk_expr(self, expr);
        }
    }
    let Some(Expr::Call(call)) = parse_expression(&text[range]) else {
        return false;
    };
    let Some(Expr::Name(input)) = call.arguments.args.first() else {
        return false;
    };
    let mut level = body;
    let mut function = None;
    while let Some(stmt) = level.iter().find(|stmt| stmt.range().contains_range(range)) {
        level = match stmt {
            Stmt::FunctionDef(def) => {
                function = Some(def);
                &def.body
            }
            Stmt::ClassDef(class) => &class.body,
            _ => break,
        };
    }
    let Some(function) = function else {
        return false;
    };
    let name = input.id.as_str();
    let parameters = &function.parameters;
    let is_parameter = parameters
        .posonlyargs
        .iter()
        .chain(&parameters.args)
        .chain(&parameters.kwonlyargs)
        .any(|parameter| parameter.parameter.name.as_str() == name);
    let mut rebinds = Rebinds { name, found: false };
    for stmt in &function.body {
        ast::visitor::Visitor::visit_stmt(&mut rebinds, stmt);
    }
    is_parameter && !rebinds.found
}

#[cfg(test)]
mod tests {
    /// `if len(keep) == 0:` fails at `len(keep)`: one finding, on the length. Strict export
    /// takes the length, and fails at the `if`.
    #[test]
    fn an_if_on_a_failing_length_is_one_finding_at_the_length() {
        let source = "import torch\n\n\nclass Keep(torch.nn.Module):\n    def forward(self, scores):\n        keep = torch.nonzero(scores > 0.5).squeeze(1)\n        if len(keep) == 0:\n            return scores.new_zeros(1)\n        return scores[keep]\n\n\nmodel = Keep()\nexample_args = (torch.rand(8),)\n";
        let found = |settings: &crate::Settings| -> Vec<String> {
            crate::check(source, settings)
                .diagnostics
                .iter()
                .map(|diagnostic| source[diagnostic.range].to_owned())
                .collect()
        };
        assert_eq!(found(&crate::Settings::default()), ["len(keep)"]);
        let strict = crate::Settings {
            strict: true,
            ..crate::Settings::default()
        };
        assert_eq!(found(&strict), ["len(keep) == 0"]);
    }
}
