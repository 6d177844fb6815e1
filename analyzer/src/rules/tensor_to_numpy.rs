//! PT201 `tensor-to-numpy`: a tensor is converted to a NumPy array inside traced code.

use crate::diagnostic::Severity;
use crate::registry::RuleMeta;

pub(crate) const META: RuleMeta = RuleMeta {
    code: "PT201",
    name: "tensor-to-numpy",
    summary: "A tensor is converted to a NumPy array inside traced code",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds `.numpy()` on tensors and calls into `numpy` that take a tensor (`np.array(x)`,
`np.mean(x)`) inside traced code.

## Why export fails
Non-strict export traces with fake tensors that have no data: `.numpy()` raises
`RuntimeError: .numpy() is not supported for tensor subclasses.` Strict export traces NumPy calls
through `torch._numpy`, so there it is a warning.

## Example
```python
def forward(self, x):
    return torch.from_numpy(np.clip(x.numpy(), 0, 1))
```

## Fix
Use the torch equivalent (`torch.clamp(x, 0, 1)`); most `np.*` functions have one of the same name.
"#,
};

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
    for event in &checker.model.events {
        let EventKind::Numpy { call } = &event.kind else {
            continue;
        };
        let message = if call == ".numpy()" {
            "`.numpy()` on a tensor inside traced code: export traces without data, so there is no array to return; use torch operations".to_owned()
        } else {
            format!(
                "`{call}` called on a tensor inside traced code: NumPy needs the tensor's data; use the torch function of the same name"
            )
        };
        checker.report(Rule::TensorToNumpy, severity, event.range, message);
    }
}
