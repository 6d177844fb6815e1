//! PT202 `untraceable-call`: a call the exporter cannot trace: I/O, hashing, C extensions, raw data pointers.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT202",
    name: "untraceable-call",
    summary: "A call the exporter cannot trace: I/O, hashing, C extensions, raw data pointers",
    finds: "calls the exporter cannot trace or bakes in (`zlib`, `os`, `subprocess`, `data_ptr`, a \
        DTensor built in `forward`, `open` in a hook under strict)",
    severity: Severity::Warning,
    is_static: true,
    doc: r#"## What it does
Finds calls from traced code that the exporter cannot trace or freezes:
- C code Dynamo skips (`zlib`, `hashlib`, `pickle`, `json`, `time`, `random`, `subprocess`,
  `socket`, most of `os`, `scipy`, `pandas`, `cv2`, `PIL`) and I/O builtins (`open`, `input`, `eval`): a warning, an
  error under `strict = true`;
- reads of the environment (`os.getenv`, `os.environ`, `sys`): a warning in both modes, since
  the value read at trace time becomes a constant (where the value of a clock, `random` or
  environment call reaches a tensor, PT601 reports it there instead, unless strict export
  rejects the call);
- a tensor passed to a library that reads its data (`scipy`, `sklearn`, `pandas`, `cv2`), and
  `Tensor.data_ptr()`: an error in both modes;
- a DTensor built from a plain tensor in traced code (`DTensor.from_local`,
  `distribute_tensor`): an error in both modes (measured with torch 2.15 on a one-process gloo
  group: "found non-fx-graphable type `DTensorSpec`"; DTensor parameters and inputs built before
  export export, and the program agrees with eager);
- under `strict = true`, `open` called in a forward hook or pre-hook the file registers on the
  model: strict export traces hooks and fails there (measured with torch 2.15: "Failed to trace
  builtin operator", GB0059; non-strict export runs the hook once, while tracing: PT601).

## Why export fails
Strict export (Dynamo) refuses functions it cannot inline: `Unsupported: Attempted to call
function marked as skipped`. Non-strict export runs them once at trace time and bakes their
result into the graph as a constant, so the exported program silently stops calling them; with a
tensor argument, or `data_ptr()`, it fails there too.

## Example
```python
def forward(self, x):
    return x + zlib.crc32(b"salt")
```

## Fix
Compute the value outside the model and pass it in (an input or a buffer), or replace the call
with torch operations.
"#,
}

use crate::registry::Rule;
use crate::rules::Checker;
use crate::rules::baked_in_value::{hook_registrations, hook_strict_failures};
use crate::catalogue;
use crate::semantic::EventKind;

/// Calls PT203 reports instead.
fn is_side_effect(qualified: &str) -> bool {
    qualified == "print"
        || qualified == "warnings.warn"
        || qualified.starts_with("logging.")
        || qualified.starts_with("torch._dynamo.")
}

/// Calls into C code that Dynamo skips, and builtins that do I/O: strict export fails.
pub(crate) fn is_strict_failure(qualified: &str) -> bool {
    let top = qualified.split('.').next().unwrap_or_default();
    // Most of `os` is C (`posix.getcwd`, `os.path.exists`), but its environment helpers are
    // Python that Dynamo runs, baking the result in (measured: `os.getenv` exports in strict).
    let python_os = qualified.starts_with("os.environ") || qualified == "os.getenv";
    catalogue::STRICT_UNTRACEABLE_MODULES.contains(&top)
        || catalogue::UNTRACEABLE_BUILTINS.contains(&qualified)
        || (top == "os" && !python_os)
}

pub(crate) fn check(checker: &mut Checker) {
    let strict_only = checker.strict_only();
    let strict = checker.strict();
    // Calls whose value reaches a tensor: PT601 says so where it does, unless strict export
    // fails on the call itself.
    let frozen: Vec<ruff_text_size::TextRange> = checker
        .model
        .events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::BakedIntoTensor { read_at, .. } => Some(*read_at),
            _ => None,
        })
        .collect();
    for event in &checker.model.events {
        let (severity, message) = match &event.kind {
            EventKind::Call {
                qualified,
                tensor_argument,
            } if !is_side_effect(qualified)
                && !(frozen.contains(&event.range)
                    && !(strict && is_strict_failure(qualified))) =>
            {
                if *tensor_argument {
                    (
                        Severity::Error,
                        format!(
                            "`{qualified}` is called with a tensor; the exporter's tensors have no data for it to read"
                        ),
                    )
                } else if !is_strict_failure(qualified) {
                    (
                        Severity::Warning,
                        format!(
                            "`{qualified}` runs once while tracing and its result is baked into the exported program as a constant"
                        ),
                    )
                } else {
                    (
                        strict_only,
                        format!(
                            "`{qualified}` cannot be traced: strict export rejects it, and non-strict export runs it once and bakes its result in as a constant"
                        ),
                    )
                }
            }
            EventKind::DTensorBuilt { qualified } => (
                Checker::failure_severity(event),
                format!(
                    "`{qualified}` builds a DTensor inside traced code: export cannot put its placement (`DTensorSpec`) in the graph, and fails in both modes. Give the model DTensor parameters or inputs, built before export (`distribute_tensor` outside `forward`)"
                ),
            ),
            EventKind::UntraceableMethod { method } => (
                Severity::Error,
                format!(
                    "`Tensor.{method}()` needs real storage, which tensors have no data for while exporting"
                ),
            ),
            _ => continue,
        };
        checker.report(Rule::UntraceableCall, severity, event.range, message);
    }
    if strict {
        check_hooks(checker);
    }
}

/// Under strict export, the calls in a hook the model registers that Dynamo cannot trace: strict
/// export traces hooks with the module, and fails there (measured with torch 2.15: `open`,
/// GB0059; non-strict export runs them once, PT601).
fn check_hooks(checker: &mut Checker) {
    let mut found = Vec::new();
    for registration in hook_registrations(&checker.parsed.module.body) {
        let Some(definition) = registration.definition else {
            continue;
        };
        for (range, call_of) in hook_strict_failures(definition) {
            found.push((
                range,
                format!(
                    "`{}`, a {} of the model, calls {call_of}: strict export traces the hook with Dynamo, which cannot trace it, and fails. Do it outside the model (after the call), or export non-strict, where the hook runs only while tracing",
                    registration.hook, registration.kind
                ),
            ));
        }
    }
    found.sort_by_key(|(range, _)| range.start());
    found.dedup_by_key(|(range, _)| *range);
    for (range, message) in found {
        checker.report(Rule::UntraceableCall, Severity::Error, range, message);
    }
}
