//! PT701 `non-core-aten-op`: the exported program keeps an ATen op that does not decompose to
//! the core ATen opset (deployment target `core-aten`).

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT701",
    name: "non-core-aten-op",
    summary: "An op of the exported program has no decomposition to core ATen",
    finds: "(target `core-aten`) an op with no decomposition to core ATen",
    severity: Severity::Error,
    is_static: false,
    doc: r#"## What it does
Reported by the tracer when the entrypoint names the `core-aten` target (`targets =
["core-aten"]` in `[tool.pt2lsp]`, an entrypoint table or the file; `--target core-aten`). After
the export succeeds, the worker runs `ExportedProgram.run_decompositions()` with torch's default
table and reports every ATen op left that torch does not tag `core`, on the line of your code
that called it (from the graph node's `stack_trace`).

## Why export fails
The export succeeds; what fails is the next step. Backends that take core ATen (ExecuTorch's
edge dialect, compilers that consume the core opset) have kernels for the roughly 180 core ops
only. An op such as `aten.searchsorted` or `aten.histc` has no decomposition into them, so such
a backend refuses the program or needs a kernel of its own for it.

## Example
```python
def forward(self, x):
    index = torch.searchsorted(self.edges, x)   # aten.searchsorted.Tensor is not core ATen
    return index.float()
```

## Fix
Write the computation with core ops (`(x.unsqueeze(-1) > self.edges).sum(-1)` for a
`searchsorted` over sorted edges), or give the backend a kernel for the op.
"#,
}
