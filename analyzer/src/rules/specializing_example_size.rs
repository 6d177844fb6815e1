//! PT405 `specializing-example-size`: an example input's size that the exporter cannot keep
//! dynamic (0 or 1, or outside the `Dim`'s range) on a dimension declared dynamic.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT405",
    name: "specializing-example-size",
    summary: "An example input's size makes a dimension declared dynamic static",
    finds: "an example size 0 or 1 (or outside the `Dim`'s range) on a dimension declared dynamic",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Reads the example inputs (`example_args`, `example_kwargs`, or the arguments of a
`torch.export.export` call) and the `Dim` that `dynamic_shapes` gives each of their dimensions,
and reports an example whose size in a dimension declared dynamic is 0 or 1, or lies outside the
`Dim`'s `min`/`max`. Sizes are read from torch factory calls (`torch.randn(1, 8)`,
`torch.zeros((1, 8)).to(device)`, `torch.randint(0, 10, (1, 16))`), through names bound to them
and to integer literals, and through `tuple(inputs)` / `list(inputs)` of a list the file spells
out. The check needs only the entrypoint, so it runs on library models too
(`torchvision.models.resnet50()`), whose `forward` the analysis does not read. `Dim.AUTO` is not reported: with a size-1 example it makes the
dimension static without failing.

## Why export fails
The exporter traces with the example's sizes as hints and specializes every size 0 or 1 to a
constant, whatever the `Dim` says (`min=1` included). A dimension declared dynamic that becomes
a constant fails the export: `UserError: Constraints violated (batch)! You marked batch as
dynamic but your code specialized it to be a constant (1)`, and with `Dim.DYNAMIC`,
"export 0/1 specialized due to hint of 1". An example outside the declared range fails too:
"16 not in range [2, 8]".

torch's suggested fix for the first message is `batch = 1`: it removes the `Dim`, and the
exported program accepts a batch of 1 only, the opposite of what the declaration asked for.
The problem is the example, not the model.

## Example
```python
model = M().eval()
example_args = (torch.randn(1, 8),)
dynamic_shapes = {"x": {0: Dim("batch")}}
```

## Fix
Give the example a size the exporter keeps dynamic: 2 (or the `Dim`'s `min` when it is
larger), or a size inside the declared range. The `Dim` stays as declared:

```python
example_args = (torch.randn(2, 8),)
```

Fix safety: unsafe. It changes the example input, not the model, so the exported program
accepts every size the `Dim` declares; but code that reads the example elsewhere (a test that
compares outputs, a batch-1-only code path in the model) sees another input, which the
analysis cannot check.
"#,
}

use std::collections::BTreeMap;

use crate::diagnostic::{Applicability, Edit, Fix};
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::ShapesSpec;

pub(crate) fn check(checker: &mut Checker) {
    let Some(spec) = &checker.model.spec else {
        return;
    };
    // One diagnostic per example input, whatever number of its dimensions are at fault.
    let mut by_example: BTreeMap<(u32, u32), Vec<usize>> = BTreeMap::new();
    for (index, problem) in spec.example_problems.iter().enumerate() {
        by_example
            .entry((problem.range.start().into(), problem.range.end().into()))
            .or_default()
            .push(index);
    }
    for problems in by_example.values() {
        let first = &spec.example_problems[problems[0]];
        let message = problems
            .iter()
            .map(|&index| spec.example_problems[index].message.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        let fix = example_fix(spec, problems);
        checker.report_with_fix(
            Rule::SpecializingExampleSize,
            Severity::Error,
            first.range,
            message,
            fix,
        );
    }
}

/// The edits that give the examples of `problems` sizes the exporter keeps dynamic; `None`
/// when one of them cannot be rewritten (a size computed at run time), since a partial fix
/// would leave the export failing.
fn example_fix(spec: &ShapesSpec, problems: &[usize]) -> Option<Fix> {
    let mut edits: Vec<Edit> = Vec::new();
    let mut dims: Vec<String> = Vec::new();
    for &index in problems {
        let problem = &spec.example_problems[index];
        let (range, size) = problem.edit?;
        if !edits.iter().any(|edit| edit.range == range) {
            edits.push(Edit {
                range,
                content: size.to_string(),
            });
        }
        let described = format!("`{}` {} -> {size}", problem.dim, problem.size);
        if !dims.contains(&described) {
            dims.push(described);
        }
    }
    edits.sort_by_key(|edit| edit.range.start());
    Some(Fix {
        title: format!(
            "Change the example's size ({}): the `Dim` stays dynamic",
            dims.join(", ")
        ),
        edits,
        applicability: Applicability::Unsafe,
    })
}

/// The fix for the examples that made dimension `dim` a constant (size 0 or 1, or outside its
/// range), for the tracer's constraint violation: `None` when no example of `dim` is at fault,
/// so the constant comes from the code.
pub(crate) fn fix_for_dim(spec: &ShapesSpec, dim: &str, constant: i64) -> Option<Fix> {
    let problems: Vec<usize> = spec
        .example_problems
        .iter()
        .enumerate()
        .filter(|(_, problem)| problem.dim == dim && problem.size == constant)
        .map(|(index, _)| index)
        .collect();
    if problems.is_empty() {
        return None;
    }
    example_fix(spec, &problems)
}
