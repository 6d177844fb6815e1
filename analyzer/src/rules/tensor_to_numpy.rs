//! PT201 `tensor-to-numpy`: a tensor is converted to a NumPy array inside traced code.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT201",
    name: "tensor-to-numpy",
    summary: "A tensor is converted to a NumPy array inside traced code",
    finds: "`.numpy()`, `np.*` on tensors or on dynamic sizes",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds `.numpy()` on tensors and calls into `numpy` that take a tensor (`np.array(x)`,
`np.mean(x)`) or a size of a dynamic dimension (`np.log(x.shape[1])`) inside traced code.

## Why export fails
Non-strict export traces with fake tensors that have no data: `.numpy()` raises
`RuntimeError: .numpy() is not supported for tensor subclasses.` Strict export traces NumPy calls
through `torch._numpy`, so there it is a warning.

A size of a dimension declared dynamic is a symbolic integer (`SymInt`) during export, and
NumPy's functions do not take one: `np.log(n)` raises `TypeError: loop of ufunc does not support
argument 0 of type SymInt which has no callable log method` (measured, torch 2.15).

## Example
```python
def forward(self, x):
    return torch.from_numpy(np.clip(x.numpy(), 0, 1))
```

## Fix
Use the torch equivalent (`torch.clamp(x, 0, 1)`); most `np.*` functions have one of the same name.

Where the array is used only where the tensor does the same, the fix keeps the tensor (the
`.detach()`/`.cpu()` before `.numpy()` stay, so device and gradients are as before):

- Straight back to torch, `torch.from_numpy(t.numpy())`, `torch.as_tensor(...)`,
  `torch.asarray(...)` become `t`, and `torch.tensor(...)` or `np.array(t)`, which copy,
  `t.clone()`; also through a name (`a = t.numpy()`) whose every read goes straight back.
  `.item()` and `.tolist()` of the array become the tensor's own (`.tolist()` only for a tensor
  whose sizes are known static: the tensor's asks for every size, which would fix a dimension
  declared dynamic). These are safe: same values, dtype, device and memory sharing.
- A reduction of the array with no arguments (`.std()`, `.mean()`, `.sum()`, `.max()`, …)
  becomes the tensor's (`std(correction=0)`, as NumPy divides by n): unsafe, the value is a
  0-d tensor instead of a NumPy scalar.
- An array returned from the exported model's `forward` becomes the tensor: unsafe, eager
  callers get a tensor (the exported program returns one there in any case).

A NumPy function of a dynamic size gets no fix either: `math` computes on the size but makes
the dimension static (PT401 where it is declared dynamic), and torch operations on a tensor of
the size make the result data-dependent; which one keeps the model's intent is the user's call.

NumPy functions, and methods with arguments, get no fix: their names (`axis`/`dim`), defaults
and dtype promotion differ from torch's, so no rewrite is mechanical.
"#,
}

use std::collections::HashSet;

use ruff_text_size::TextRange;

use crate::fixes::numpy_tensor::NumpyFixes;
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::EventKind;

pub(crate) fn check(checker: &mut Checker) {
    // Strict export traces NumPy through `torch._numpy`; non-strict export has fake tensors
    // without data and fails.
    let severity = if checker.strict() {
        Severity::Warning
    } else {
        Severity::Error
    };
    // Built on the first conversion, once for all of them.
    let mut fixes: Option<NumpyFixes> = None;
    // A helper runs once per call: its conversion has a static shape only if it has on every
    // call (the diagnostics of one place are one).
    let dynamic: HashSet<TextRange> = checker
        .model
        .events
        .iter()
        .filter(|event| {
            matches!(
                event.kind,
                EventKind::Numpy {
                    static_shape: false,
                    ..
                }
            )
        })
        .map(|event| event.range)
        .collect();
    for event in &checker.model.events {
        let (call, static_shape) = match &event.kind {
            EventKind::Numpy { call, static_shape } => (call, static_shape),
            EventKind::NumpySize { dim, .. } => {
                let text = checker.model.text(event.range);
                let message = format!(
                    "`{text}` gives NumPy a size of dynamic dimension `{}`: during export the size is a symbolic integer (`SymInt`), and NumPy fails on it with \"TypeError: loop of ufunc does not support argument 0 of type SymInt\"; compute it with torch operations on a tensor, or with `math` if the dimension may be static (`math` makes it static)",
                    dim.name
                );
                checker.report(Rule::TensorToNumpy, severity, event.range, message);
                continue;
            }
            _ => continue,
        };
        let message = if call == ".numpy()" {
            "`.numpy()` on a tensor inside traced code: export traces without data, so there is no array to return; use torch operations".to_owned()
        } else {
            format!(
                "`{call}` called on a tensor inside traced code: NumPy needs the tensor's data; use the torch function of the same name"
            )
        };
        let fix = fixes
            .get_or_insert_with(|| NumpyFixes::new(&checker.parsed.module.body, checker.model))
            .fix(
                event.range,
                *static_shape && !dynamic.contains(&event.range),
            );
        checker.report_with_fix(Rule::TensorToNumpy, severity, event.range, message, fix);
    }
}
