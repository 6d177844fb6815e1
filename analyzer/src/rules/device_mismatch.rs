//! PT604 `device-mismatch`: traced code moves a tensor to CUDA (`.cuda()`, `device="cuda"`)
//! and uses it with the inputs, built on the CPU, or with the model's parameters: the exporter
//! finds two devices in one operation.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT604",
    name: "device-mismatch",
    summary: "A tensor traced code moves to CUDA meets the inputs or parameters on the CPU",
    finds: "`.cuda()`, `.to(\"cuda\")` or `device=\"cuda\"` in traced code, and the operation \
        or layer where that tensor meets the example inputs (built on the CPU) or the model's \
        parameters",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds a tensor that traced code puts on a CUDA device — `.cuda()`, `.to("cuda")`,
`.to("cuda:0")`, a factory's `device="cuda"` — and reports the operation where it meets a
tensor on the device of the example inputs: an arithmetic operation, a torch function given
both, or a layer with parameters (`nn.Linear`, `nn.LSTM`, a convolution, an embedding, a batch
norm), whose parameters are where the model is. Only when every example input is known to be
built on the CPU (`torch.randn(2, 8)`, with no `.cuda()` or `.to(device)`): with inputs on
CUDA, the same code exports. Moves back are followed (`.to(x.device)`, `.cpu()`, `type_as`,
`new_tensor`, `device=x.device`); a tensor on a device the program does not spell, and a
tensor of no dimensions (`x.sum()`, `torch.tensor(2.0)`, which torch lets meet any device),
are not reported. In a branch the analysis cannot decide (`if x.is_cuda:`) it is a warning.

The tracer reports torch's own exception on the same line.

## Why export fails
A model written for one GPU often builds its state in `forward` with `.cuda()` — the initial
hidden state of a recurrent layer, a mask, a position table. Export traces with fake tensors
that keep their device, so the operation that combines that tensor with the inputs or the
parameters fails, whether or not the machine has a GPU. Measured with torch 2.15:
`FakeTensorDeviceMismatchError: Expected all tensors to be on the same device, but found at
least two devices, cpu and cuda:0!`, raised on the line that uses the tensor, not the one that
moves it.

## Example
```python
def forward(self, tokens):
    embedded = self.embed(tokens).permute(1, 0, 2)
    h0 = torch.zeros(1, tokens.shape[0], self.hidden).cuda()
    c0 = torch.zeros(1, tokens.shape[0], self.hidden).cuda()
    output, _ = self.lstm(embedded, (h0, c0))  # the inputs and the LSTM are on the CPU
    return output
```

## Fix
Build the tensor on the device of the input it goes with, so that the model runs, and
exports, wherever its inputs are:

```python
h0 = torch.zeros(1, tokens.shape[0], self.hidden, device=tokens.device)
```

or `.to(tokens.device)` in place of `.cuda()`. Exporting for a GPU, move the model and the
example inputs to CUDA instead (`model.cuda()`, `torch.randn(2, 8, device="cuda")`).
"#,
}

use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::EventKind;

pub(crate) fn check(checker: &mut Checker) {
    let mut reported = std::collections::HashSet::new();
    for event in &checker.model.events {
        let EventKind::DeviceMismatch { moved } = &event.kind else {
            continue;
        };
        if !reported.insert(event.range) {
            continue;
        }
        let text = checker.model.text(event.range);
        let message = format!(
            "`{text}` uses a tensor that `{moved}` put on CUDA together with tensors on the CPU, where the example inputs and the model's parameters are: export fails with \"FakeTensorDeviceMismatchError: Expected all tensors to be on the same device\"; build that tensor on the device of the input it goes with (`device=x.device`, `.to(x.device)`), or export with the model and the inputs on CUDA"
        );
        // Under a condition the analysis cannot decide (`if x.is_cuda:`), the move may never
        // happen.
        let severity = if event.undecided_path {
            Severity::Warning
        } else {
            Checker::failure_severity(event)
        };
        checker.report(Rule::DeviceMismatch, severity, event.range, message);
    }
}
