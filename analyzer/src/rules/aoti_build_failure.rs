//! PT704 `aoti-build-failure`: `aoti_compile_and_package` cannot build the exported program
//! (deployment target `aoti`).

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT704",
    name: "aoti-build-failure",
    summary: "AOTInductor cannot compile the exported program",
    finds: "(target `aoti`) an AOTInductor build that fails (a `forward` returning a Python \
        number)",
    severity: Severity::Error,
    is_static: false,
    doc: r#"## What it does
Reported by the tracer when the entrypoint names the `aoti` target. After the export succeeds,
the worker runs `torch._inductor.aoti_compile_and_package` on the program in the job's scratch
directory. A build that fails is reported where its cause is: the `return` of a `forward` that
returns a Python number, the `__init__` line of a tensor Inductor cannot hold as a constant (a
sparse buffer), the line of the op Inductor could not lower, else the entrypoint. A C++ compiler
is needed (`$CXX`, `c++`, `g++` or `clang++`); without one the target is skipped with one message
per run, not reported as a failure.

## Why export fails
`torch.export` accepts any output pytree; Inductor compiles a program of tensors to C++. A
Python number among the outputs raises `InductorError: AssertionError: Unexpected output types:
[<class 'float'>]`; a sparse constant fails with `could not find kernel for aten.as_strided`.

## Example
```python
def forward(self, x):
    return self.head(x) / self.temperature, self.temperature   # a float output
```

## Fix
Return tensors only (`torch.tensor(self.temperature)`, or leave the constant to the caller);
keep constants dense.
"#,
}
