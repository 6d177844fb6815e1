//! PT703 `onnx-unsupported-op`: `torch.onnx.export` of the exported program cannot translate an
//! op (deployment target `onnx`).

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT703",
    name: "onnx-unsupported-op",
    summary: "The ONNX exporter cannot translate an op of the exported program",
    finds: "(target `onnx`) an op `torch.onnx.export` cannot translate",
    severity: Severity::Error,
    is_static: false,
    doc: r#"## What it does
Reported by the tracer when the entrypoint names the `onnx` target. After the export succeeds,
the worker runs `torch.onnx.export(program, ..., dynamo=True)`. The exporter stops at the first
op it cannot translate; the worker reports that one with the exporter's reason, and also every
other op of the exporter's decomposed program that its registry has no ONNX function for, each
on the line of your code that called it. It needs `onnx` and `onnxscript` in the traced
interpreter; without them the target is skipped with one message per run.

## Why export fails
The dynamo ONNX exporter translates each ATen op through a registry of ONNX Script functions
(torchlib). An op with no function there and no decomposition to ops that have one
(`aten.kthvalue`, `aten.median.dim`, linear algebra such as `aten.linalg_inv_ex`) stops the
translation: `ConversionError: Error when translating node ...`, `DispatchError: No ONNX
function found for ...`.

## Example
```python
def forward(self, x):
    low = torch.kthvalue(x, 2, dim=-1).values   # no ONNX function for aten.kthvalue
    return low
```

## Fix
Use ops ONNX has (`torch.topk(x, 2, largest=False).values[..., -1]` for the second smallest),
or register a translation with `torch.onnx.export(..., custom_translation_table={...})`.
"#,
}
