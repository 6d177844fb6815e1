//! PT401 `dynamic-dim-guard`: code guards on a dimension declared dynamic.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT401",
    name: "dynamic-dim-guard",
    summary: "Code guards on a dimension declared dynamic",
    finds: "branches, asserts, loops on a dimension declared dynamic; convolution or pooling \
        windows that may shrink it to 1; `max_pool1d` over it; reflection padding wider than \
        it; einops groups it must divide into; sizes torch needs as numbers",
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
dynamic dimension's element count must divide into (`x.reshape(-1, 4)` on `x: [batch, 2]`),
slicing a parameter or buffer up to a dynamic
size (`self.pos[:, :x.shape[1]]`) when the `Dim` has no `max`, non-strict `int(x.shape[0])`,
`math.log2` of a size, and `nn.LSTM` / `nn.GRU` / `nn.RNN` over a dynamic sequence length, which
the exporter unrolls step by step (in either mode).

Sizes and the numbers they are compared with come from the values the program computes: the
model is built with its constructor's arguments (a config dataclass, `SimpleNamespace`, a dict,
`**config`, argparse defaults), so `assert t <= self.config.block_size` under
`Dim("seq", max=64)` with `block_size=32` is reported, and with `block_size=64` is not.

Shapes are followed symbolically, in your `Dim` names, through layers (from their constructor
arguments), concatenation, views, transposes, slices with steps and reductions, so constraints
the code forces far from any `if` are found too: `torch.cat([x, y], 1)` fed to `nn.Linear(32, ...)`
requires `dx + dy == 32`; `torch.cat([x, x], 1) + y` relates `dy = 2*dx`; `nn.Linear(32, ...)`
on a dimension declared dynamic fixes it to 32; broadcasting `z[:, ::2]`, of size `(dz + 1)//2`,
guards it `!= 1`, which `Dim("dz")` allows at dz = 2 (non-strict export guards every slice with a
step that way, where it slices); a U-Net's skip concatenation of `2*(h//4)` with `h//2`, after
two stride-2 poolings and one stride-2 upsampling, holds only when `h` is a multiple of 4 (the
fix declares `h = 4*_h`, as torch suggests). A skip connection cropped to the upsampled map's
size before the concatenation (`layer[:, :, dy:dy + h, dx:dx + w]` with `dy = (H - h) // 2`, as
classic U-Nets do) always fits, but torch cannot prove it through the floor divisions of the
poolings and guards the crop to stay inside the map: the image size must be a multiple of every
divisor involved (`H = 8*_H` after three poolings), and the fix is offered only when that
multiple makes every crop exact. Your subclasses of torch layers (`class Projection(nn.Linear)`,
`class SelfAttention(nn.MultiheadAttention)`, a `forward` that calls `super().forward(x)`) are
followed as the layers they extend; an attention's output has its query's shape and its weights
are `(batch, L, S)`, `S` the key's length. A
convolution or pooling window
(`nn.Conv2d(3, 64, 7, stride=2, padding=3)`, `F.max_pool2d(x, 2)`) whose output the range
allows to be 1 or less is guarded too (`!= 1` non-strict, `>= 1` strict), on each window's
line as torch reports it, each with the one minimum under which all of them hold (`min=33`
for a ResNet's five halvings; torch 2.15 suggests none, or a minimum that still fails).
`nn.MaxPool1d` / `F.max_pool1d` over a dynamic length is reported too: torch 2.15 exports it
only for the example's length (strict and not), and `F.max_pool2d(x.unsqueeze(-1), (k,
1)).squeeze(-1)` gives the same values with the length dynamic. A reflection padding
(`nn.ReflectionPad1d(3)`) needs each padded size above the padding, so `Dim("frames")`, which
allows 2, gets `min=4`. An einops pattern that splits a dynamic size into a group with known
axes (`rearrange(x, "b c (h p1) (w p2) -> ...", p1=16, p2=16)`, the `Rearrange` layer) needs it
a multiple of their product (`height = 16*_height`). Arguments torch needs as Python numbers,
`torch.linspace(..., steps=h)` and the window of `F.max_pool1d(x, x.size(2))`, fix the
dimension they are taken from (`torch.arange(h)` does not). A relation torch checks at run time
instead (`dx + dy == dz`) is not reported. `Dim.AUTO` and `Dim.DYNAMIC` let the
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

The fix edits `dynamic_shapes` and the `Dim`s it uses, wherever they are written (a
`batch = Dim("batch")` variable, `Dim("batch")` inline in the spec, `dims(...)`,
`torch.export.Dim`), adding `from torch.export import Dim` when a new `Dim` needs it:

- a comparison with a literal gets the range that keeps the branch the example inputs take
  (`x.shape[0] > 16` on a batch of 4: `max=16`);
- two dimensions compared equal or broadcast together become one (`b = a`);
- a relation an operation forces becomes a derived dim (`dy = 2*dx`), with the narrower range
  its root needs; a sum of dims equal to a number narrows each (`Dim("da", max=28)`); a
  decreasing relation (`y_dim = 32 - x_dim`), which `Dim` arithmetic cannot state, makes both
  `Dim.AUTO`: both stay dynamic and the exporter derives the relation, but their declared
  bounds go, which the fix's title says;
- a strided size, or a window's output, that may be 1 raises the `Dim`'s minimum
  (`Dim("dz", min=3)`);
- a reshape that needs a multiple becomes a derived dim (`_batch = Dim("_batch", min=2)`,
  `batch = 2*_batch`);
- a dimension the code fixes to one size (`== 4`, a loop, `len`, broadcasting against a
  literal) leaves `dynamic_shapes` (`Dim.STATIC` in a tuple).

A `Dim` your spec imports from another module of the project (`from pkg.dims import BATCH`), or
a whole `dynamic_shapes` imported from one, is edited in that module: the fix stands on an info
diagnostic on its `Dim(...)` call there, and the error stays on the guard. So is a `Dim` your
export script writes itself (in `main()` or at its module level) when the guard is in a module
of your package: the fix stands on the script's `Dim(...)` call.

Fix safety: with `--trace`, a range, an equality or a derived dim from torch's own `Suggested
fixes:` is safe: it is the exporter's statement of what its trace needs, and every dimension
stays dynamic. A constant (`batch = 1`) removes a `Dim` you declared, so it is never applied
from the trace: when the example's size (0 or 1) is the cause, the fix changes the example
instead (unsafe, see PT405); otherwise torch's suggestion is shown, display-only, with a title
that says the dimension would become static. The static pass's fix is unsafe: it reads the
bound from the code and the example inputs, and it changes which sizes the exported program
accepts; one that makes a dimension static says so in its title.
"#,
}

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::diagnostic::{Applicability, Fix};
use crate::fixes::dims::{DimConstraint, constraint_fix};
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::symbolic::{
    Relation, SymSize, min_above_one, min_reaching, periodic_relation, relation,
};
use crate::semantic::value::{
    CompareOp, Compared, DimDecl, Guard, GuardKind, SizeComparison, SizeOrigin, Value,
};
use crate::semantic::{BoolContext, Event, EventKind, Forcing, ScalarUse};

pub(crate) fn check(checker: &mut Checker) {
    let model = checker.model;
    let events: Vec<&Event> = model.events.iter().collect();
    // Guards on one dim ask for the same constraint again and again; each fix reads the file.
    let mut fixes: HashMap<Vec<DimConstraint>, Option<Fix>> = HashMap::new();
    for (event, message, constraints) in judged(checker, &events) {
        let fix = constraints.and_then(|constraints| {
            fixes
                .entry(constraints)
                .or_insert_with_key(|constraints| {
                    constraint_fix(
                        &checker.parsed.module.body,
                        checker.model.file,
                        constraints,
                        Applicability::Unsafe,
                    )
                })
                .clone()
        });
        checker.report_with_fix(
            Rule::DynamicDimGuard,
            Checker::failure_severity(event),
            event.range,
            message,
            fix,
        );
    }
}

/// What PT401 says of each of `events` it reports on: its message and the constraints that
/// settle it, when they can be stated. The events may lie in several files of the model's
/// program (a companion on a `Dim` declared elsewhere judges the entrypoint's whole program).
pub(crate) fn judged<'e>(
    checker: &Checker,
    events: &[&'e Event],
) -> Vec<(&'e Event, String, Option<Vec<DimConstraint>>)> {
    let strict = checker.strict();
    // Non-strict export guards a strided slice's size `!= 1` where it slices: a broadcast of
    // that size later is the same guard, reported once, at the slice.
    let strided: Vec<&SymSize> = events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::StridedSlice { size } if !strict => Some(size),
            _ => None,
        })
        .collect();
    let windows = window_requirements(events, strict);
    let crops = crop_requirements(events);
    events
        .iter()
        // `@dynamic_spec`'s dimensions: PT103 says what fails on them.
        .filter(|event| !event.kind.on_unbacked_dim())
        .filter_map(|event| {
            let (message, constraints) = judge(checker, event, strict, &strided, &windows, &crops)?;
            Some((*event, message, constraints))
        })
        .collect()
}

/// One event's message and constraints, or `None` when PT401 says nothing of it.
fn judge(
    checker: &Checker,
    event: &Event,
    strict: bool,
    strided: &[&SymSize],
    windows: &[WindowRequirement],
    crops: &[CropRequirement],
) -> Option<(String, Option<Vec<DimConstraint>>)> {
    let text = checker.model.text_in(event.file, event.range);
    let (message, constraints) = match &event.kind {
        EventKind::Truthiness {
            value:
                Value::Guard(Guard {
                    kind: GuardKind::Dynamic(dim),
                    decided: false,
                    suggestion,
                }),
            context,
        } => {
            let hint = match suggestion {
                Some(SizeComparison {
                    op,
                    against: Compared::Constant(constant),
                }) => format!(
                    "; declare the range it needs: {}",
                    range_hint(&dim.name, *op, *constant, *context)
                ),
                _ => String::new(),
            };
            (
                format!(
                    "{} on `{text}` guards dynamic dimension `{}`: export fails with \"Constraints violated ({})\"{hint}",
                    context.describe(),
                    dim.name,
                    dim.name
                ),
                suggestion
                    .as_ref()
                    .and_then(|comparison| guard_constraints(checker, dim, comparison)),
            )
        }
        EventKind::Scalar {
            value:
                Value::Size {
                    origin: SizeOrigin::Dynamic { dim, .. },
                    ..
                },
            usage: ScalarUse::Range,
        } if fails_on_one_size(dim) => (
            format!(
                "`range()` over `{text}`, dynamic dimension `{}`: the loop is unrolled, which fixes the dimension to the example's size; use tensor operations instead",
                dim.shown()
            ),
            static_dim(checker, dim),
        ),
        // Measured: non-strict `len(x)` must return a Python int, which fixes the dimension.
        EventKind::Scalar {
            value:
                Value::Size {
                    origin: SizeOrigin::Dynamic { dim, .. },
                    ..
                },
            usage: ScalarUse::Len,
        } if fails_on_one_size(dim) && !strict => (
            format!(
                "`{text}` returns a Python int, which fixes dynamic dimension `{}` to the example's size; use `x.shape[0]`, which stays symbolic",
                dim.shown()
            ),
            static_dim(checker, dim),
        ),
        // Measured: torch 2.15 unrolls `nn.LSTM`/`GRU`/`RNN` over a dynamic sequence, in
        // either mode, and the length becomes the example's.
        EventKind::Unrolled { dim, layer } if fails_on_one_size(dim) => (
            format!(
                "`{text}` runs `nn.{layer}` step by step over dynamic dimension `{}`, which fixes it to the example's length: export fails with \"Constraints violated{}\"; export with one sequence length (pad inputs to it), or declare the dimension static",
                dim.shown(),
                dim.violated_suffix()
            ),
            static_dim(checker, dim),
        ),
        EventKind::PoolFixesLength { dim, kernel } => {
            let kernel = kernel.map_or_else(|| "k".to_owned(), |kernel| kernel.to_string());
            (
                format!(
                    "`{text}` pools over dynamic dimension `{}` with `max_pool1d`, which torch 2.15 exports only for the example's length: export fails with \"Constraints violated ({})\"; pool in two dimensions, `F.max_pool2d(x.unsqueeze(-1), ({kernel}, 1)).squeeze(-1)`, which gives the same values and keeps `{}` dynamic",
                    dim.name, dim.name, dim.name
                ),
                None,
            )
        }
        // Measured: non-strict `int(x.shape[0])` asks for the size's value as `len(x)` does.
        EventKind::Scalar {
            value:
                Value::Size {
                    origin: SizeOrigin::Dynamic { dim, .. },
                    ..
                },
            usage: ScalarUse::Conversion,
        } if fails_on_one_size(dim) && !strict => (
            format!(
                "`{text}` asks for the value of dynamic dimension `{}`, which fixes it to the example's size; keep the size as it is (`x.shape[0]` stays symbolic without `int()`)",
                dim.shown()
            ),
            static_dim(checker, dim),
        ),
        // Measured: `math.log2(n)` (and `sqrt`, `exp`, `isqrt`, `gcd`) of a size needs a
        // concrete number, which fixes the dimension in either mode.
        EventKind::Scalar {
            value:
                Value::Size {
                    origin: SizeOrigin::Dynamic { dim, .. },
                    ..
                },
            usage: ScalarUse::MathCall,
        } if !dim.automatic => (
            format!(
                "`{text}` needs a concrete number, which fixes dynamic dimension `{}` to the example's size; compute it with the torch function of the same name on a tensor, or declare the dimension static",
                dim.name
            ),
            static_dim(checker, dim),
        ),
        // Measured: `torch.linspace(..., steps=n)` and `F.max_pool1d(x, n)` of a size fix the
        // dimension in either mode (`arange(n)` keeps it symbolic).
        EventKind::Scalar {
            value:
                Value::Size {
                    origin: SizeOrigin::Dynamic { dim, .. },
                    ..
                },
            usage: ScalarUse::ConcreteArgument(parameter),
        } if !dim.automatic => (
            format!(
                "`{text}` takes `{parameter}` from dynamic dimension `{}`, and torch needs it as a concrete number, which fixes the dimension to the example's size; make `{parameter}` a constant (an adaptive pool over the dimension, a table cut to the size), or declare the dimension static",
                dim.name
            ),
            static_dim(checker, dim),
        ),
        EventKind::DimMismatch { left, right } => (
            format!(
                "`{text}` broadcasts dynamic dimensions `{}` and `{}` against each other, so they must be equal: export fails with \"Constraints violated ({})\"; declare `{} = {}` in `dynamic_shapes`",
                left.name, right.name, right.name, right.name, left.name
            ),
            Some(vec![DimConstraint::Equal {
                name: right.name.clone(),
                to: left.name.clone(),
            }]),
        ),
        EventKind::DimFixed { dim, size } if fails_on_one_size(dim) => (
            format!(
                "`{text}` needs dynamic dimension `{}` to be {size}: export fails with \"Constraints violated{}\"; take the sizes from the input (`-1`, `x.shape[0]`), or declare the dimension static",
                dim.shown(),
                dim.violated_suffix()
            ),
            Some(vec![DimConstraint::Constant {
                name: dim.name.clone(),
                value: *size,
            }]),
        ),
        EventKind::DimSpecialized { dim, size } => {
            let requirement = format!(
                "broadcasts dynamic dimension `{}` against a fixed size {size}{}",
                dim.name,
                if event.file == 0 {
                    state_origin(checker, event.range, &text)
                } else {
                    String::new()
                }
            );
            specialized(
                checker,
                &text,
                &requirement,
                dim,
                *size,
                &Forcing::Broadcast,
            )
        }
        EventKind::ReshapeGuard { dim, multiple } => (
            format!(
                "`{text}` needs the element count to divide into the new shape, which guards dynamic dimension `{}`: export fails with \"Constraints violated ({})\"; declare it a multiple of {multiple} (`_{} = Dim(\"_{}\"); {} = {multiple} * _{}`) or use sizes taken from the input",
                dim.name, dim.name, dim.name, dim.name, dim.name, dim.name
            ),
            multiple_of(checker, dim, *multiple, dim.low()),
        ),
        EventKind::SizeEquality { left, right, by } => {
            if let Some(relation) = relation(left, right) {
                match &relation {
                    Relation::Constant { dim, value } => {
                        let requirement = requirement(left, right, by);
                        specialized(checker, &text, &requirement, dim, *value, by)
                    }
                    relation => size_equality(&text, left, right, by, relation),
                }
            } else {
                periodic_equality(checker, &text, left, right, by)?
            }
        }
        EventKind::StridedSlice { size } if !strict => {
            let (dim, min) = min_above_one(size)?;
            let declared_low = dim.low();
            (
                format!(
                    "`{text}` takes a slice with a step of dynamic dimension `{}`, of size `{size}`; the range of `{}` allows it to be 1 (at {} = {declared_low}), so non-strict export guards `{size} != 1`: export fails with \"Constraints violated ({})\"; declare `Dim(\"{}\", min={min})`",
                    dim.name, dim.name, dim.name, dim.name, dim.name
                ),
                Some(vec![DimConstraint::Range {
                    name: dim.name.clone(),
                    min: Some(min),
                    max: None,
                }]),
            )
        }
        EventKind::ReflectionTooWide {
            size,
            padding,
            layer,
        } => {
            let (dim, min) = min_reaching(size, padding + 1)?;
            (
                format!(
                    "`{text}` ({layer}) reflects {padding} values at each end of `{size}`, a size of dynamic dimension `{}` that its range allows at {padding} or less (at {} = {}); torch needs the size above the padding and guards `{size} > {padding}`: export fails with \"Constraints violated ({})\"; declare `Dim(\"{}\", min={min})`",
                    dim.name,
                    dim.name,
                    dim.low(),
                    dim.name,
                    dim.name
                ),
                Some(vec![DimConstraint::Range {
                    name: dim.name.clone(),
                    min: Some(min),
                    max: None,
                }]),
            )
        }
        EventKind::WindowOutput { size, layer } => {
            let least = if strict { 1 } else { 2 };
            let requirement = min_reaching(size, least)
                .and_then(|(dim, _)| windows.iter().find(|found| found.dim.name == dim.name))?;
            let dim = &requirement.dim;
            let declared_low = dim.low();
            let guard = if strict { ">= 1" } else { "!= 1" };
            let all = match requirement.layers {
                1 => String::new(),
                n => format!(", the minimum all {n} windows over `{}` need", dim.name),
            };
            let found = format!(
                "`{text}` ({layer}) makes a size `{size}` of dynamic dimension `{}`, which its range allows below {least} (at {} = {declared_low}), so the exporter guards `{size} {guard}`: export fails with \"Constraints violated ({})\"",
                dim.name, dim.name, dim.name
            );
            // Crops over the same `Dim` need more than a minimum: one declaration for both.
            match crops.iter().find(|crop| crop.dim.name == dim.name) {
                Some(CropRequirement {
                    multiple: Some(multiple),
                    ..
                }) => (
                    format!(
                        "{found}; with the crops over `{}`, declare it a multiple of {multiple} of at least {}{all} (`_{} = Dim(\"_{}\", min={}); {} = {multiple}*_{}`)",
                        dim.name,
                        requirement.min,
                        dim.name,
                        dim.name,
                        ceil_div(requirement.min, *multiple).max(2),
                        dim.name,
                        dim.name
                    ),
                    multiple_of(checker, dim, *multiple, requirement.min),
                ),
                Some(CropRequirement { multiple: None, .. }) => (
                    format!(
                        "{found}; it needs `min={}`{all}, and the crops over `{}` more than the analysis can state",
                        requirement.min, dim.name
                    ),
                    None,
                ),
                None => (
                    format!(
                        "{found}; declare `Dim(\"{}\", min={})`{all}",
                        dim.name, requirement.min
                    ),
                    Some(vec![DimConstraint::Range {
                        name: dim.name.clone(),
                        min: Some(requirement.min),
                        max: None,
                    }]),
                ),
            }
        }
        EventKind::SliceWithin { size, length } => {
            let (dim, _) = crop_multiple(size, length)?;
            let crop = crops.iter().find(|crop| crop.dim.name == dim.name)?;
            let found = format!(
                "`{text}` takes `{length}` of a dimension of size `{size}` from an offset computed from sizes; the exporter guards that the slice stays within the dimension, which it cannot prove for every `{}` through the floor divisions: export fails with \"Constraints violated ({})\"",
                dim.name, dim.name
            );
            match crop.multiple {
                Some(multiple) => {
                    let least = windows
                        .iter()
                        .find(|window| window.dim.name == dim.name)
                        .map_or(dim.low(), |window| window.min);
                    (
                        format!(
                            "{found}; declare it a multiple of {multiple}, which makes every crop over `{}` exact (`_{} = Dim(\"_{}\", min={}); {} = {multiple}*_{}`)",
                            dim.name,
                            dim.name,
                            dim.name,
                            ceil_div(least, multiple).max(2),
                            dim.name,
                            dim.name
                        ),
                        multiple_of(checker, &dim, multiple, least),
                    )
                }
                None => (
                    format!(
                        "{found}; no multiple of `{}` makes every crop exact: crop with sizes that do not depend on floor divisions, or declare the dimension static",
                        dim.name
                    ),
                    None,
                ),
            }
        }
        EventKind::MaybeOne { size, other } => {
            if strided.contains(&size) {
                return None;
            }
            let (dim, min) = min_above_one(size)?;
            let (declared_low, _) = (dim.low(), dim.max);
            (
                format!(
                    "`{text}` broadcasts a dimension of size `{size}` against `{other}`; the range of `{}` allows `{size}` to be 1 (at {} = {declared_low}), so the exporter guards `{size} != 1`: export fails with \"Constraints violated ({})\"; declare `Dim(\"{}\", min={min})`",
                    dim.name, dim.name, dim.name, dim.name
                ),
                Some(vec![DimConstraint::Range {
                    name: dim.name.clone(),
                    min: Some(min),
                    max: None,
                }]),
            )
        }
        EventKind::BufferSlice { dim } => (
            format!(
                "Slicing a fixed-size parameter or buffer up to `{text}` guards dynamic dimension `{}` to at most its length: export fails with \"Constraints violated ({})\"; declare `Dim(\"{}\", max=...)` with that length",
                dim.name, dim.name, dim.name
            ),
            None,
        ),
        EventKind::IterateTensor {
            size:
                Value::Size {
                    origin: SizeOrigin::Dynamic { dim, .. },
                    ..
                },
            ..
        } if fails_on_one_size(dim) => (
            format!(
                "Looping over `{text}` unrolls its dynamic dimension `{}` to the example's size; use tensor operations instead",
                dim.shown()
            ),
            static_dim(checker, dim),
        ),
        _ => return None,
    };
    Some((message, constraints))
}

/// The message and constraints for an operation that requires `left == right`, from what the
/// exporter makes of it.
/// A size equality that holds for some sizes of one `Dim` only (`2*(h//4) == h//2`): the
/// message, and the declaration of the `Dim` as a multiple of the period when that satisfies it.
fn periodic_equality(
    checker: &Checker,
    text: &str,
    left: &SymSize,
    right: &SymSize,
    by: &Forcing,
) -> Option<(String, Option<Vec<DimConstraint>>)> {
    let (dim, period, remainders) = periodic_relation(left, right)?;
    let sizes = match remainders.as_slice() {
        [0] => format!("a multiple of {period}"),
        [remainder] => format!("{remainder} more than a multiple of {period}"),
        _ => format!(
            "{} modulo {period}",
            remainders
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    };
    // A multiple of the period is one declaration that always holds.
    let fix = remainders
        .contains(&0)
        .then(|| multiple_of(checker, &dim, period, dim.low()))
        .flatten();
    let advice = if remainders.contains(&0) {
        format!(
            "declare it a multiple of {period} (`_{name} = Dim(\"_{name}\"); {name} = {period}*_{name}`)",
            name = dim.name
        )
    } else {
        "make the sizes agree for every size of the input".to_owned()
    };
    Some((
        format!(
            "`{text}` {}: they are equal only when dynamic dimension `{}` is {sizes}, so export fails with \"Constraints violated ({})\"; {advice}",
            requirement(left, right, by),
            dim.name,
            dim.name
        ),
        fix,
    ))
}

/// What forces `left == right`, as the message says it.
fn requirement(left: &SymSize, right: &SymSize, by: &Forcing) -> String {
    match by {
        Forcing::Broadcast => format!("broadcasts `{left}` against `{right}`, which must be equal"),
        Forcing::Layer { class, parameter } => format!(
            "feeds `nn.{class}` a dimension of size `{left}`, which must equal its `{parameter}` ({right})"
        ),
        Forcing::Concatenation => format!(
            "concatenates tensors whose other dimensions must agree: `{left}` and `{right}`"
        ),
        Forcing::Contraction => {
            format!("multiplies matrices whose inner sizes must agree: `{left}` and `{right}`")
        }
    }
}

/// An operation that fixes dynamic dimension `dim` to `value`. What torch says depends on the
/// example (measured, torch 2.15, a cache of batch 4 concatenated with or added to an input of
/// dynamic batch, strict and not): when the example's size is `value`, the exporter specialises
/// the dimension ("You marked batch as dynamic but your code specialized it to be a constant
/// (4)"); when it is not, the sizes disagree on the example itself and the trace stops at the
/// operation with a raw mismatch ("Sizes of tensors must match except in dimension 1. Expected
/// 4 in dimension 0 but got s77", "The size of tensor a (s77) must match the size of tensor b
/// (4)"; strict wraps it in `TorchRuntimeError`). Making the dimension static then exports
/// nothing either (the example still disagrees), so that case has no fix.
fn specialized(
    checker: &Checker,
    text: &str,
    requirement: &str,
    dim: &DimDecl,
    value: i64,
    by: &Forcing,
) -> (String, Option<Vec<DimConstraint>>) {
    let example = checker
        .model
        .spec
        .as_ref()
        .and_then(|spec| spec.example_size(&dim.name));
    match example {
        Some(example) if example != value => {
            let raw = match by {
                Forcing::Concatenation => format!(
                    "Sizes of tensors must match except in dimension … Expected {value} in dimension … but got s…"
                ),
                Forcing::Broadcast => format!(
                    "The size of tensor a (…) must match the size of tensor b ({value}) at non-singleton dimension …"
                ),
                Forcing::Layer { .. } | Forcing::Contraction => {
                    "a size mismatch between the operands".to_owned()
                }
            };
            let wrapped = if checker.strict() {
                "`TorchRuntimeError` (\"RuntimeError when making fake tensor call\")"
            } else {
                "`RuntimeError`"
            };
            (
                format!(
                    "`{text}` {requirement}: that needs dynamic dimension `{}` to be {value}, but the example's is {example}, so the operation fails on the example itself (eager too): export fails with {wrapped}: \"{raw}\"; give the example a `{}` of {value} and make the code follow the input's size, or declare the dimension static with that example",
                    dim.name, dim.name
                ),
                None,
            )
        }
        _ => (
            format!(
                "`{text}` {requirement}: that fixes dynamic dimension `{}` to {value}, and export fails with \"You marked {} as dynamic but your code specialized it to be a constant ({value})\"; make the code follow the input's size, or declare the dimension static",
                dim.name, dim.name
            ),
            Some(vec![DimConstraint::Constant {
                name: dim.name.clone(),
                value,
            }]),
        ),
    }
}

fn size_equality(
    text: &str,
    left: &SymSize,
    right: &SymSize,
    by: &Forcing,
    relation: &Relation,
) -> (String, Option<Vec<DimConstraint>>) {
    let requirement = requirement(left, right, by);
    match relation {
        Relation::Constant { dim, value } => (
            format!(
                "`{text}` {requirement}: that fixes dynamic dimension `{}` to {value}, and export fails with \"You marked {} as dynamic but your code specialized it to be a constant ({value})\"; make the code follow the input's size, or declare the dimension static",
                dim.name, dim.name
            ),
            Some(vec![DimConstraint::Constant {
                name: dim.name.clone(),
                value: *value,
            }]),
        ),
        Relation::Derived {
            dim,
            expr,
            root,
            root_range,
        } => {
            // Measured: torch's `Dim` arithmetic takes increasing linear expressions only;
            // `32 - x_dim` fails with "Attempted to negate x_dim". Then `Dim.AUTO` on both is
            // what keeps them dynamic: the exporter derives the relation itself.
            if expr
                .linear()
                .0
                .iter()
                .any(|(_, coefficient)| *coefficient < 0)
            {
                return (
                    format!(
                        "`{text}` {requirement}: the exporter relates the dimensions as `{} = {expr}`, so export fails with \"Constraints violated ({}, {})\"; torch cannot declare a decreasing relation (\"Attempted to negate {}\"), so declare both dimensions `Dim.AUTO` and let the exporter derive it, or make one of them static",
                        dim.name, root.name, dim.name, root.name
                    ),
                    Some(vec![
                        DimConstraint::Automatic {
                            name: root.name.clone(),
                        },
                        DimConstraint::Automatic {
                            name: dim.name.clone(),
                        },
                    ]),
                );
            }
            let mut constraints = vec![DimConstraint::Derived {
                name: dim.name.clone(),
                expr: expr.to_string(),
            }];
            let mut declare = format!("`{} = {expr}`", dim.name);
            if let Some((low, high)) = root_range {
                let declared_low = root.low();
                let min = (*low != declared_low).then_some(*low);
                let max = (*high != root.max).then_some(*high).flatten();
                let bounds = [
                    min.map(|min| format!("min={min}")),
                    max.map(|max| format!("max={max}")),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(", ");
                let _ = write!(
                    declare,
                    " and `{} = Dim(\"{}\", {bounds})`",
                    root.name, root.name
                );
                constraints.insert(
                    0,
                    DimConstraint::Range {
                        name: root.name.clone(),
                        min,
                        max,
                    },
                );
            }
            let violated = if root_range.is_some() {
                format!("{}, {}", root.name, dim.name)
            } else {
                dim.name.clone()
            };
            (
                format!(
                    "`{text}` {requirement}: the exporter relates the dimensions as `{} = {expr}`, so export fails with \"Constraints violated ({violated})\"; declare {declare} in `dynamic_shapes`",
                    dim.name
                ),
                Some(constraints),
            )
        }
        Relation::Ranges(ranges) => {
            let names: Vec<&str> = ranges.iter().map(|(dim, _, _)| dim.name.as_str()).collect();
            let declared: Vec<String> = ranges
                .iter()
                .map(|(dim, _, high)| match high {
                    Some(high) => format!("`Dim(\"{}\", max={high})`", dim.name),
                    None => format!("`Dim(\"{}\")`", dim.name),
                })
                .collect();
            (
                format!(
                    "`{text}` {requirement}: only part of the declared ranges can reach it, so export fails with \"Constraints violated ({})\"; declare {}",
                    names.join(", "),
                    declared.join(", ")
                ),
                Some(
                    ranges
                        .iter()
                        .map(|(dim, low, high)| DimConstraint::Range {
                            name: dim.name.clone(),
                            min: (*low != dim.low()).then_some(*low),
                            max: *high,
                        })
                        .collect(),
                ),
            )
        }
    }
}

/// For a size that comes from the module's own state (`k + self.k_cache`), where that state
/// was built: ` (of `self.k_cache`, built at line 9)`; empty unless the expression reads exactly
/// one attribute of `self` (not a call of one), which is then the fixed-size operand.
fn state_origin(checker: &Checker, range: ruff_text_size::TextRange, text: &str) -> String {
    let mut names = text.match_indices("self.").filter_map(|(at, _)| {
        let after = &text[at + "self.".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let called = after[name.len()..].trim_start().starts_with('(');
        (!name.is_empty() && !called).then_some(name)
    });
    let (Some(name), None) = (names.next(), names.next()) else {
        return String::new();
    };
    let body = &checker.parsed.module.body;
    let Some(origin) = crate::names::self_attribute_origin(body, range.start(), &name)
    else {
        return String::new();
    };
    let line = crate::line_index::LineIndex::new(checker.model.file.text)
        .line_column(origin.start())
        .line
        + 1;
    format!(" (of `self.{name}`, built at line {line})")
}

/// What the convolution and pooling windows over one dynamic dimension need of its minimum.
struct WindowRequirement {
    dim: std::rc::Rc<DimDecl>,
    /// The smallest minimum under which every window's size stays at least 2 (1 strict).
    min: i64,
    /// How many windows make a size of the dimension that may be too small.
    layers: usize,
}

/// The windows' requirements, one per dimension: each window's guard is reported on its line,
/// as torch reports them, with the one minimum under which all of them hold (`min=33` for the
/// five halvings of a ResNet), so that one fix settles them all.
fn window_requirements(events: &[&Event], strict: bool) -> Vec<WindowRequirement> {
    let least = if strict { 1 } else { 2 };
    let mut requirements: Vec<WindowRequirement> = Vec::new();
    // A window in a loop makes one event per level on the same line: each needs its minimum,
    // and the line counts once.
    let mut seen = std::collections::HashSet::new();
    for event in events {
        let first_on_its_line = seen.insert((event.file, event.range));
        let EventKind::WindowOutput { size, .. } = &event.kind else {
            continue;
        };
        if event.kind.on_unbacked_dim() {
            continue;
        }
        let Some((dim, min)) = min_reaching(size, least) else {
            continue;
        };
        if min <= dim.low() {
            continue;
        }
        match requirements
            .iter_mut()
            .find(|found| found.dim.name == dim.name)
        {
            Some(found) => {
                found.min = found.min.max(min);
                found.layers += usize::from(first_on_its_line);
            }
            None => requirements.push(WindowRequirement {
                dim,
                min,
                layers: 1,
            }),
        }
    }
    requirements
}

/// What the crops over one dynamic dimension need: the multiple that makes every one of them
/// exact, or `None` when one of them has none.
struct CropRequirement {
    dim: std::rc::Rc<DimDecl>,
    multiple: Option<i64>,
}

/// A window taken at an offset from a dimension of `size` (a centre crop) is guarded to stay
/// within it; where `size` or `length` floor-divides a `Dim`, the exporter's range analysis
/// cannot prove that (`2*(H//16) <= H//8` holds for every `H`, yet torch 2.15 reports it
/// violated) and its solver asks for the `Dim` to be a multiple of every divisor it met
/// (`H = 16*_H`, measured on U-Nets two to five levels deep). The `Dim`, and that multiple when
/// it makes both sizes exact and the window fit for every size it allows; `None` when the sizes
/// are linear (the exporter proves those) or over other than one `Dim`.
fn crop_multiple(size: &SymSize, length: &SymSize) -> Option<(std::rc::Rc<DimDecl>, Option<i64>)> {
    let dim = size.dims().chain(length.dims()).next()?.clone();
    if size
        .dims()
        .chain(length.dims())
        .any(|other| other.name != dim.name)
    {
        return None;
    }
    let (divisor, other_divisor) = (size.linear().2, length.linear().2);
    if divisor == 1 && other_divisor == 1 {
        return None;
    }
    let multiple = divisor / gcd(divisor, other_divisor) * other_divisor;
    let first = ceil_div(dim.low(), multiple).max(2);
    let roots: Vec<i64> = (first..first + 32)
        .take_while(|root| dim.max.is_none_or(|max| root * multiple <= max))
        .collect();
    let at = |sym: &SymSize, root: i64| sym.evaluate(|_| Some(root * multiple));
    let values: Option<Vec<(i64, i64)>> = roots
        .iter()
        .map(|root| Some((at(size, *root)?, at(length, *root)?)))
        .collect();
    // Exact: each size is linear in the root, so the exporter proves the bounds.
    let exact = values.as_ref().is_some_and(|values| {
        let steps = |pick: fn(&(i64, i64)) -> i64| {
            values
                .windows(2)
                .map(|pair| pick(&pair[1]) - pick(&pair[0]))
                .collect::<std::collections::HashSet<_>>()
                .len()
                <= 1
        };
        values.len() >= 2
            && steps(|(size, _)| *size)
            && steps(|(_, length)| *length)
            && values.iter().all(|(size, length)| length <= size)
    });
    Some((dim, exact.then_some(multiple)))
}

/// The crops' requirements, one per dimension: the least common multiple of each crop's.
fn crop_requirements(events: &[&Event]) -> Vec<CropRequirement> {
    let mut requirements: Vec<CropRequirement> = Vec::new();
    for event in events {
        let EventKind::SliceWithin { size, length } = &event.kind else {
            continue;
        };
        if event.kind.on_unbacked_dim() {
            continue;
        }
        let Some((dim, multiple)) = crop_multiple(size, length) else {
            continue;
        };
        match requirements
            .iter_mut()
            .find(|found| found.dim.name == dim.name)
        {
            Some(found) => {
                found.multiple = found.multiple.zip(multiple).map(|(a, b)| a / gcd(a, b) * b);
            }
            None => requirements.push(CropRequirement { dim, multiple }),
        }
    }
    requirements
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `⌈a / b⌉` for positive `b`.
fn ceil_div(a: i64, b: i64) -> i64 {
    -((-a).div_euclid(b))
}

/// The `Dim` ranges under which `dim <op> constant` is decided, for the message: both sides
/// for a branch, only the side that passes for an `assert` or `torch._check` (which must hold)
/// and for an `if` that only raises (which must not).
fn range_hint(name: &str, op: CompareOp, constant: f64, context: BoolContext) -> String {
    #[allow(clippy::cast_possible_truncation)] // Literal sizes.
    let constant = constant.floor() as i64;
    let (true_side, false_side) = match op {
        CompareOp::Gt => (format!("min={}", constant + 1), format!("max={constant}")),
        CompareOp::GtE => (format!("min={constant}"), format!("max={}", constant - 1)),
        CompareOp::Lt => (format!("max={}", constant - 1), format!("min={constant}")),
        CompareOp::LtE => (format!("max={constant}"), format!("min={}", constant + 1)),
        CompareOp::Eq | CompareOp::NotEq => {
            return format!(
                "`{name} = {constant}` (make the dimension static), or remove the branch"
            );
        }
    };
    match context {
        BoolContext::Assert | BoolContext::Check => {
            format!("`Dim(\"{name}\", {true_side})`, under which it holds")
        }
        BoolContext::If { raises_only: true } => {
            format!("`Dim(\"{name}\", {false_side})`, under which it never raises")
        }
        _ => format!("`Dim(\"{name}\", {true_side})` or `Dim(\"{name}\", {false_side})`"),
    }
}

/// The constraint that decides a guard the way the example inputs take it, so the exported
/// program keeps the branch eager runs on them: `x.shape[0] > 16` on a batch of 4 needs
/// `max=16`. Torch can state a range, an equality or a constant, never `!=`, so a guard the
/// example makes `!=` gets no fix.
fn guard_constraints(
    checker: &Checker,
    dim: &DimDecl,
    comparison: &SizeComparison,
) -> Option<Vec<DimConstraint>> {
    let spec = checker.model.spec.as_ref()?;
    let example = spec.example_size(&dim.name)?;
    match &comparison.against {
        Compared::Constant(constant) => {
            if constant.fract() != 0.0 {
                return None;
            }
            #[allow(clippy::cast_possible_truncation)] // An integral literal size.
            let constant = *constant as i64;
            let taken = holds(example, comparison.op, constant);
            let (min, max) = match (comparison.op, taken) {
                (CompareOp::Gt, true) | (CompareOp::LtE, false) => (Some(constant + 1), None),
                (CompareOp::Gt, false) | (CompareOp::LtE, true) => (None, Some(constant)),
                (CompareOp::GtE, true) | (CompareOp::Lt, false) => (Some(constant), None),
                (CompareOp::GtE, false) | (CompareOp::Lt, true) => (None, Some(constant - 1)),
                (CompareOp::Eq, true) | (CompareOp::NotEq, false) => {
                    return Some(vec![DimConstraint::Constant {
                        name: dim.name.clone(),
                        value: constant,
                    }]);
                }
                (CompareOp::Eq | CompareOp::NotEq, _) => return None,
            };
            // The range the `Dim` ends up with must still hold the example, and sizes >= 2.
            let low = min.into_iter().chain(dim.min).chain([2]).max()?;
            let high = max.into_iter().chain(dim.max).min();
            if high.is_some_and(|high| high < low || example > high) || example < low {
                return None;
            }
            Some(vec![DimConstraint::Range {
                name: dim.name.clone(),
                min,
                max,
            }])
        }
        Compared::Dim(other) => {
            let equal = spec.example_size(&other.name)? == example;
            let needs_equal = match comparison.op {
                CompareOp::Eq => equal,
                CompareOp::NotEq => !equal,
                _ => false,
            };
            (needs_equal && !other.automatic).then(|| {
                vec![DimConstraint::Equal {
                    name: other.name.clone(),
                    to: dim.name.clone(),
                }]
            })
        }
    }
}

fn holds(value: i64, op: CompareOp, constant: i64) -> bool {
    match op {
        CompareOp::Lt => value < constant,
        CompareOp::LtE => value <= constant,
        CompareOp::Gt => value > constant,
        CompareOp::GtE => value >= constant,
        CompareOp::Eq => value == constant,
        CompareOp::NotEq => value != constant,
    }
}

/// Code that fixes a dimension to the example's size (an unrolled loop, `len`): torch's own
/// suggestion is to make it static at that size.
fn static_dim(checker: &Checker, dim: &DimDecl) -> Option<Vec<DimConstraint>> {
    let value = checker.model.spec.as_ref()?.example_size(&dim.name)?;
    Some(vec![DimConstraint::Constant {
        name: dim.name.clone(),
        value,
    }])
}

/// `dim = multiple * _dim` with a new root `_dim` carrying the range, as torch suggests for a
/// reshape that needs the dimension to divide. Torch suggests `min=1` for the root, but the
/// program it then exports rejects a root of 1 (measured: "Guard failed: x.size()[0] // 2 !=
/// 1"), so the root's declared range starts at 2, the range the program really accepts.
/// `least` is the smallest size the dimension must have (its declared minimum, or what its
/// windows need).
fn multiple_of(
    checker: &Checker,
    dim: &DimDecl,
    multiple: i64,
    least: i64,
) -> Option<Vec<DimConstraint>> {
    if multiple < 2 {
        return None;
    }
    let example = checker.model.spec.as_ref()?.example_size(&dim.name);
    if example.is_some_and(|example| example % multiple != 0 || example < least) {
        return None;
    }
    let root = format!("_{}", dim.name);
    let low = least;
    Some(vec![
        DimConstraint::Range {
            name: root.clone(),
            min: Some(((low + multiple - 1) / multiple).max(2)),
            max: dim.max.map(|max| max / multiple),
        },
        DimConstraint::Derived {
            name: dim.name.clone(),
            expr: format!("{multiple}*{root}"),
        },
    ])
}

/// A dimension whose export fails where the code needs it to be one size: a named `Dim` or
/// `Dim.DYNAMIC` (measured, torch 2.15: "Constraints violated"). `Dim.AUTO` is made static
/// instead and a `ShapeVar` narrowed (PT406); a derived dimension follows its root.
fn fails_on_one_size(dim: &DimDecl) -> bool {
    !dim.fixed_silently() && (!dim.automatic || dim.is_dynamic_hint())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_size_from_the_modules_state_names_where_it_was_built() {
        let source = "import torch\nfrom torch.export import Dim\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.register_buffer(\"cache\", torch.zeros(4, 8))\n\n    def forward(self, x):\n        return x + self.cache\n\n\nmodel = M()\nexample_args = (torch.randn(2, 8),)\ndynamic_shapes = {\"x\": {0: Dim(\"batch\")}}\n";
        let report = crate::check(source, &crate::Settings::default());
        let messages: Vec<&str> = report
            .diagnostics
            .iter()
            .map(|diagnostic| diagnostic.message.as_str())
            .collect();
        assert!(
            matches!(messages.as_slice(), [message] if message.contains("a fixed size 4 (of `self.cache`, built at line 8)")),
            "{messages:?}"
        );
    }

    /// Measured with torch 2.15: a cache of batch 4 met by a dynamic batch specialises it when
    /// the example's batch is 4 (and the fix makes it static), and fails with a raw size
    /// mismatch when it is 2, where no declaration exports (no fix).
    #[test]
    fn a_fixed_size_quotes_what_torch_says_for_the_examples_size() {
        let source = |batch: i64| {
            format!(
                "import torch\nfrom torch.export import Dim\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.register_buffer(\"k\", torch.zeros(4, 16, 8))\n\n    def forward(self, x):\n        return torch.cat([self.k, x], dim=1)\n\n\nmodel = M()\nexample_args = (torch.randn({batch}, 4, 8),)\ndynamic_shapes = {{\"x\": {{0: Dim(\"batch\")}}}}\n"
            )
        };
        let found = |batch| {
            let report = crate::check(&source(batch), &crate::Settings::default());
            report
                .diagnostics
                .iter()
                .map(|diagnostic| (diagnostic.message.clone(), diagnostic.fix.is_some()))
                .collect::<Vec<_>>()
        };
        let equal = found(4);
        assert!(
            matches!(equal.as_slice(), [(message, true)] if message.contains("specialized it to be a constant (4)")),
            "{equal:?}"
        );
        let differs = found(2);
        assert!(
            matches!(differs.as_slice(), [(message, false)] if message.contains("the example's is 2") && message.contains("Sizes of tensors must match") && !message.contains("specialized")),
            "{differs:?}"
        );
    }

    /// A script that runs the model before exporting it only under a condition the analysis
    /// cannot decide may or may not have filled the scale: the branch that fills it from
    /// `int()` of the batch is a warning, not an error (with the warm-up always run, nothing:
    /// fixture `cache_filled_by_eager_run_ok`).
    #[test]
    fn a_branch_on_state_a_warm_up_may_have_filled_is_a_warning() {
        let source = "import sys\nimport torch\nfrom torch.export import Dim\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.scale = None\n\n    def forward(self, x):\n        if self.scale is None:\n            self.scale = int(x.shape[0])\n        return x / self.scale\n\n\nmodel = M()\nexample_args = (torch.randn(4, 8),)\ndynamic_shapes = {\"x\": {0: Dim(\"batch\")}}\nif len(sys.argv) > 1:\n    model(*example_args)\n";
        let report = crate::check(source, &crate::Settings::default());
        let severities: Vec<Severity> = report
            .diagnostics
            .iter()
            .map(|diagnostic| diagnostic.severity)
            .collect();
        assert_eq!(
            severities,
            vec![Severity::Warning],
            "{:?}",
            report.diagnostics
        );
    }

    /// Measured with torch 2.15: a 3-wide convolution over `Dim("t")` needs `min=4` non-strict
    /// (the size is guarded `!= 1`) and `min=3` strict (`>= 1` only). Strict export reports
    /// the guard on `dynamic_shapes`, so this case is a unit test, not a fixture.
    #[test]
    fn a_window_needs_a_size_of_two_non_strict_and_one_strict() {
        let model = |strict: &str| {
            format!(
                "import torch\nfrom torch.export import Dim\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.conv = torch.nn.Conv1d(8, 8, kernel_size=3)\n\n    def forward(self, x):\n        return self.conv(x)\n\n\nmodel = M()\nexample_args = (torch.randn(2, 8, 50),)\ndynamic_shapes = {{\"x\": {{2: Dim(\"t\")}}}}\n{strict}"
            )
        };
        let message = |source: &str| {
            let report = crate::check(source, &crate::Settings::default());
            report
                .diagnostics
                .iter()
                .map(|diagnostic| diagnostic.message.clone())
                .collect::<Vec<_>>()
        };
        let loose = message(&model(""));
        assert!(
            matches!(loose.as_slice(), [one] if one.contains("`t - 2 != 1`") && one.contains("min=4")),
            "{loose:?}"
        );
        let strict = message(&model("strict = True\n"));
        assert!(
            matches!(strict.as_slice(), [one] if one.contains("`t - 2 >= 1`") && one.contains("min=3")),
            "{strict:?}"
        );
    }

    #[test]
    fn range_hints_offer_only_the_side_an_assert_or_a_raise_allows() {
        let hint = |context| range_hint("seq", CompareOp::LtE, 32.0, context);
        assert_eq!(
            hint(BoolContext::If { raises_only: false }),
            "`Dim(\"seq\", max=32)` or `Dim(\"seq\", min=33)`"
        );
        assert_eq!(
            hint(BoolContext::Assert),
            "`Dim(\"seq\", max=32)`, under which it holds"
        );
        assert_eq!(
            hint(BoolContext::Check),
            "`Dim(\"seq\", max=32)`, under which it holds"
        );
        assert_eq!(
            hint(BoolContext::If { raises_only: true }),
            "`Dim(\"seq\", min=33)`, under which it never raises"
        );
    }
}
