//! PT702 `unsaveable-program`: the exported program does not survive the `.pt2` round trip
//! (`torch.export.save`, `torch.export.load`, a run against eager; deployment target `pt2`).

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT702",
    name: "unsaveable-program",
    summary: "The exported program cannot be saved as a .pt2, loaded back, or run like eager",
    finds: "(target `pt2`) a program `torch.export.save` cannot write (a sparse buffer), `load` \
        cannot read (a custom op in a new process), or that runs unlike eager once loaded",
    severity: Severity::Error,
    is_static: false,
    doc: r#"## What it does
Reported by the tracer when the entrypoint names the `pt2` target. After the export succeeds,
the worker saves the program with `torch.export.save`, loads it back with `torch.export.load`
and runs it against the eager model on the example inputs. A tensor the serializer cannot write
is reported on the line that made it: the `register_buffer(...)` or `self.x = ...` line of
`__init__` for a parameter or buffer, the line of `forward` for a constant made there. A load
or run that fails, or outputs that differ from eager, are reported on the entrypoint. When the
program calls ops that `import torch` does not register (a `torch.library.custom_op` of yours,
`torchvision::nms`), it is also loaded in a new interpreter, as a server that deploys the file
loads it; if that fails, the finding is on each line that calls such an op.

## Why export fails
`torch.export.export` keeps tensors in memory as they are; the `.pt2` format writes each one's
storage with a dtype code. A sparse tensor has no plain storage (`Cannot access storage of
SparseTensorImpl`), and dtypes such as `torch.bits8` have no code in the format, so the program
exports and cannot be written. (torch 2.15 writes complex tensors and complex scalars.) A
custom op is saved by name: a new process that has not imported the code registering it cannot
resolve it (`We failed to resolve torch.ops.audio.soft_clip.default to an operator`), though the
process that exported loads the file back.

## Example
```python
def __init__(self):
    super().__init__()
    self.register_buffer("adjacency", torch.eye(8).to_sparse())   # cannot be saved
```

## Fix
Keep the tensor dense in the module (`torch.eye(8)`), converting where it is used if the
computation needs sparsity, or store it in a dtype the format has. For a custom op, import the
module that registers it before `torch.export.load` wherever the `.pt2` is loaded.
"#,
}
