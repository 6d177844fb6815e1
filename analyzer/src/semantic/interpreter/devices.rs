//! Devices in traced code: a tensor the code moves to CUDA (`.cuda()`, `.to("cuda")`,
//! `device="cuda"`), followed through the operations that keep it there, and the operation
//! where it meets tensors on the inputs' device, which the exporter refuses (PT604).

use crate::syntax::ast;
use ruff_text_size::Ranged;

use super::{EventKind, Interpreter, TensorInfo, Value};

impl Interpreter<'_, '_> {
    /// `value`, a tensor, moved to CUDA by `call`.
    pub(super) fn moved_to_cuda(&self, value: Value, call: &ast::ExprCall) -> Value {
        match value {
            Value::Tensor(info) => Value::Tensor(TensorInfo {
                on_cuda: Some((self.file, call.range())),
                maybe_none: false,
                ..info
            }),
            value => value,
        }
    }

    /// One operation over `values`: a tensor moved to CUDA among tensors on the inputs' device
    /// is the device mismatch the exporter raises here.
    pub(super) fn note_devices<'v>(
        &mut self,
        values: impl Iterator<Item = &'v Value>,
        range: ruff_text_size::TextRange,
    ) {
        let mut moved = None;
        let mut on_inputs_device = false;
        let mut visit = |value: &Value| {
            if let Value::Tensor(info) = value {
                match info.on_cuda {
                    Some(at) => moved = moved.or(Some(at)),
                    None => on_inputs_device |= !info.assumed && !info.opaque,
                }
            }
        };
        for value in values {
            match value {
                Value::Tuple(items) => items.iter().for_each(&mut visit),
                value => visit(value),
            }
        }
        // With inputs on CUDA, or on a device the analysis cannot read, the move may be right.
        let inputs_on_cpu = self
            .model
            .entry
            .as_ref()
            .is_some_and(|entry| entry.examples_on_cpu);
        if let (Some((file, at)), true, true) = (moved, on_inputs_device, inputs_on_cpu) {
            let moved = self.model.text_in(file, at);
            self.record(EventKind::DeviceMismatch { moved }, range);
        }
    }

    /// `result`, on CUDA when every tensor among `operands` is: `torch.triu(ones_on_cuda)`.
    pub(super) fn kept_on_cuda<'v>(
        result: Value,
        operands: impl Iterator<Item = &'v Value>,
    ) -> Value {
        let mut on_cuda = None;
        for operand in operands {
            match operand {
                Value::Tensor(TensorInfo {
                    on_cuda: Some(at), ..
                }) => on_cuda = on_cuda.or(Some(*at)),
                Value::Tensor(_) => return result,
                _ => {}
            }
        }
        match (result, on_cuda) {
            (Value::Tensor(info), Some(at)) => Value::Tensor(TensorInfo {
                on_cuda: Some(at),
                ..info
            }),
            (result, _) => result,
        }
    }
}

/// Whether a `.to(...)` or a factory's `device=` names a CUDA device as a string the program
/// computed (`"cuda"`, `"cuda:0"`).
pub(super) fn names_cuda_device(args: &[Value], kwargs: &[(String, Value)]) -> bool {
    let cuda = |value: &Value| matches!(value, Value::Str(device) if device.as_ref() == "cuda" || device.starts_with("cuda:"));
    args.first().is_some_and(cuda)
        || kwargs
            .iter()
            .any(|(name, value)| name == "device" && cuda(value))
}
