//! PT602 `tensor-data-attribute`: `.data` of a tensor in traced code, which export traces as a
//! tensor of the trace that it keeps as a constant of the program.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT602",
    name: "tensor-data-attribute",
    summary: "`.data` of a tensor in traced code",
    finds: "`.data` of a tensor in traced code (read, updated in place, assigned): non-strict \
        export fails naming only a constant, strict export keeps a fake tensor as a constant; \
        the tracer finds the line",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds `.data` of a tensor in traced code: read (`x * self.weight.data`, `x.data`), updated in
place (`self.weight.data.add_(1.0)`), or assigned (`self.weight.data = …`). An error under
non-strict export, where it fails; a warning under `strict = true`, where the export succeeds
and the program is wrong. An assignment is not reported under `strict = true`: strict export
of a buffer's `.data = …` agrees with eager.

The tracer reports it on the same line: from non-strict export's refusal ("We found a fake
tensor in the exported program constant's list", which names a constant and no line; pt2lsp
finds the line from the graph torch had built), and, after an export that succeeded, from a
constant of the program that is a tensor of the trace.

## Why export fails
`.data` hands out the tensor's storage behind autograd's back, and export cannot follow it:
it lifts what `.data` returns as a constant of the program, and that constant is a fake tensor
of the trace, not the parameter, buffer or input. Measured with torch 2.15: non-strict export
fails after tracing (`RuntimeError: We found a fake tensor in the exported program constant's
list. … following model attribute: lifted_tensor_0. Please file an issue on github.`, with no
line), for reads and in-place updates of parameters, buffers and inputs alike, and for an
assignment to a parameter's `.data`; strict export succeeds and builds a program that returns
fake tensors or updates the constant instead of the parameter, so it disagrees with eager.

## Example
```python
def forward(self, x):
    self.weight.data = self.weight.data * 0.9 + x.mean(0) * 0.1
    return x * self.weight.data
```

## Fix
Read with `.detach()` (the same values, and export traces it); update the tensor itself, in
place, under `torch.no_grad()` (measured: exports, strict and not, and agrees with eager call
after call):

```python
def forward(self, x):
    with torch.no_grad():
        self.weight.copy_(self.weight * 0.9 + x.mean(0) * 0.1)
    return x * self.weight.detach()
```

The fixes, proven by real torch (`fixtures/fixes/data/`: the fixed model exports and agrees
with eager, call after call):
- a read, `self.weight.data`, becomes `self.weight.detach()`: safe, the same values;
- an in-place update written as a statement, `self.weight.data.mul_(0.5)`, becomes
  `self.weight.mul_(0.5)` under `with torch.no_grad():`: unsafe, since the tensor's autograd
  version counter now moves (a backward through an earlier use would notice);
- an assignment, `self.weight.data = value`, becomes `self.weight.copy_(value)` under
  `with torch.no_grad():`, with the `.data` reads in `value` made `.detach()`: unsafe, since
  `.data = …` may change the tensor's shape or dtype, which `copy_` cannot (it broadcasts and
  casts).

No edit is offered for a store through `.data` (`x.data[0] = 1`, `x.data += 1`), an in-place
call inside a larger statement, or a statement that shares its line.
"#,
}

use ruff_text_size::TextRange;

use crate::fixes::data_attribute;
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::EventKind;

pub(crate) fn check(checker: &mut Checker) {
    let strict = checker.strict();
    let text = checker.model.file.text;
    let line_of = |offset: usize| text[..offset].matches('\n').count();
    // `self.w.data = self.w.data * 0.9`: one diagnostic, the assignment's (where it is reported).
    let assigned_lines: Vec<usize> = checker
        .model
        .events
        .iter()
        .filter(|event| {
            !strict && matches!(event.kind, EventKind::DataAttribute { assigned: true, .. })
        })
        .map(|event| line_of(event.range.start().to_usize()))
        .collect();
    // The reads of this file, which an assignment's fix rewrites in its value.
    let reads: Vec<(TextRange, &str)> = checker
        .model
        .events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::DataAttribute {
                tensor,
                assigned: false,
            } if event.file == 0 => Some((event.range, tensor.as_str())),
            _ => None,
        })
        .collect();
    for event in &checker.model.events {
        let EventKind::DataAttribute { tensor, assigned } = &event.kind else {
            continue;
        };
        if !assigned && assigned_lines.contains(&line_of(event.range.start().to_usize())) {
            continue;
        }
        // `x.data.dim()`, `x.data.shape[0]`: only what the tensor is like is read, no value of
        // it reaches the program (measured: both modes export).
        if !assigned && reads_metadata(&text[event.range.end().to_usize()..]) {
            continue;
        }
        let how = if strict {
            "strict export succeeds, and the program computes with a fake tensor of the trace kept as a constant instead of"
        } else {
            "non-strict export fails after tracing (\"We found a fake tensor in the exported program constant's list\"): it keeps a fake tensor of the trace as a constant for"
        };
        let (severity, message) = match (assigned, strict) {
            (true, true) => continue,
            (true, false) => (
                Checker::failure_severity(event),
                format!(
                    "`{tensor}.data` is assigned in traced code: {how} `{tensor}`. Update `{tensor}` in place instead: `with torch.no_grad(): {tensor}.copy_(...)`"
                ),
            ),
            (false, _) => (
                if strict {
                    Severity::Warning
                } else {
                    Checker::failure_severity(event)
                },
                format!(
                    "`{tensor}.data` in traced code: {how} `{tensor}`. Read it with `{tensor}.detach()`, and update it in place under `with torch.no_grad():`"
                ),
            ),
        };
        let fix = if event.file != 0 {
            None
        } else if *assigned {
            data_attribute::assignment_fix(
                event.range,
                tensor,
                &reads,
                &checker.parsed.module.body,
                text,
                checker.imports(),
            )
        } else {
            data_attribute::read_fix(
                event.range,
                tensor,
                &checker.parsed.module.body,
                text,
                checker.imports(),
            )
        };
        checker.report_with_fix(
            Rule::TensorDataAttribute,
            severity,
            event.range,
            message,
            fix,
        );
    }
}

/// The attributes and methods of a tensor that describe it without reading its values.
const METADATA: &[&str] = &[
    "dim(",
    "ndim",
    "ndimension(",
    "shape",
    "size(",
    "dtype",
    "device",
    "numel(",
    "is_cuda",
    "layout",
    "requires_grad",
];

/// Whether the text after `x.data` reads only what the tensor is like (`.shape`, `.dim()`).
fn reads_metadata(after: &str) -> bool {
    after.strip_prefix('.').is_some_and(|rest| {
        METADATA
            .iter()
            .any(|name| rest.starts_with(name) && !continues_name(&rest[name.len()..], name))
    })
}

/// Whether `rest` continues the identifier `name` ends with (`.shape_hint`), unless `name`
/// already ends with its call's parenthesis.
fn continues_name(rest: &str, name: &str) -> bool {
    !name.ends_with('(')
        && rest
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
}
