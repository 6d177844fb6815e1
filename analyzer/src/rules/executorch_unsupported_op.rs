//! PT705 `executorch-unsupported-op`: an op of the exported program that ExecuTorch cannot run
//! (deployment target `executorch`).

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT705",
    name: "executorch-unsupported-op",
    summary: "ExecuTorch cannot lower or run an op of the exported program",
    finds: "(target `executorch`) an op outside core ATen, or with no kernel in ExecuTorch's \
        portable library",
    severity: Severity::Error,
    is_static: false,
    doc: r#"## What it does
Reported by the tracer when the entrypoint names the `executorch` target. After the export
succeeds, the worker runs `to_edge_transform_and_lower` with the XNNPACK partitioner, then
`to_executorch()`, and reports on the line of your code that called it: every op outside core
ATen (the edge dialect refuses the program), and every op of the final program that has no
kernel in ExecuTorch's portable library (the installed package's
`kernels/portable/functions.yaml`). A failure of the lowering itself is reported on the
entrypoint. The `executorch` package must be installed in the traced interpreter, at the release
built for its torch; otherwise the target is skipped with one message per run.

## Why export fails
The edge dialect verifies that every op is core ATen (`SpecViolationError: Operator
aten.histc.default is not in Core ATen opset`). What XNNPACK does not take runs on the portable
kernels; an op with none there (`aten.avg_pool3d.out`) makes the runtime refuse the method:
`Missing operator: aten::avg_pool3d.out`.

## Example
```python
def forward(self, volume):
    pooled = nn.functional.avg_pool3d(volume, 2)   # no portable kernel
    return pooled.flatten(1)
```

## Fix
Use ops the portable library has (a 3-d pooling as 2-d poolings over reshaped slices), or build
the runtime with a kernel for the op (a custom kernel library or selective build).
"#,
}
