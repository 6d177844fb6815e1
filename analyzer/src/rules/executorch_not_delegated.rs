//! PT706 `executorch-not-delegated`: ops the XNNPACK partitioner leaves to ExecuTorch's portable
//! kernels, which run them slower (deployment target `executorch`).

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT706",
    name: "executorch-not-delegated",
    summary: "XNNPACK does not take these ops: they run on ExecuTorch's slower portable kernels",
    finds: "(target `executorch`) ops XNNPACK leaves to the slower portable kernels, with their \
        share of the graph",
    severity: Severity::Warning,
    is_static: false,
    doc: r#"## What it does
Reported by the tracer when the entrypoint names the `executorch` target and the lowering
succeeds: on each line of your code whose ops the XNNPACK partitioner did not delegate, with how
many of the graph's ops they are and the share of the whole graph left undelegated.

## Why export fails
It does not fail: the program runs. The portable kernels are reference implementations,
single-threaded and unvectorised; an op left to them between delegated parts also splits the
graph into several delegate calls, each copying its inputs. A model that spends its time there
runs far slower on a phone than the delegated share suggests.

## Example
```python
def forward(self, x):
    h = self.linear(x)            # delegated to XNNPACK
    return torch.cumsum(h, 0)     # not delegated: portable kernel
```

## Fix
Where an op XNNPACK takes computes the same thing, use it; otherwise accept the cost, or lower
with a partitioner of a backend that takes the op.
"#,
}
