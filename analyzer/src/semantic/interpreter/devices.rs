//! Devices in traced code: a tensor the code moves to CUDA (`.cuda()`, `.to("cuda")`,
//! `device="cuda"`), followed through the operations that keep it there, and the operation
//! where it meets tensors on the inputs' device, which the exporter refuses (PT604). A device
//! the program does not spell (`.to(h.device)`, `device=x.device`) is unknown, and a tensor
//! on an unknown device meets nothing.

use crate::semantic::value::TensorDevice;
use crate::syntax::ast;
use ruff_text_size::Ranged;

use super::{EventKind, Interpreter, TensorInfo, Value};

impl Interpreter<'_, '_> {
    /// `value`, a tensor, moved to CUDA by `call`.
    pub(super) fn moved_to_cuda(&self, value: Value, call: &ast::ExprCall) -> Value {
        with_device(value, TensorDevice::Cuda(self.file, call.range()))
    }

    /// The device `device` (a `.to(...)` argument or a `device=` keyword, as the program
    /// computed it) names: CUDA, the CPU (where the inputs are), or one the analysis cannot
    /// read.
    pub(super) fn device_named(&self, device: &Value, call: &ast::ExprCall) -> TensorDevice {
        match device {
            Value::Str(name) if name.as_ref() == "cuda" || name.starts_with("cuda:") => {
                TensorDevice::Cuda(self.file, call.range())
            }
            Value::Str(name) if name.as_ref() == "cpu" => TensorDevice::Inputs,
            _ => TensorDevice::Unknown,
        }
    }

    /// One operation over `values`: a tensor moved to CUDA among tensors on the inputs' device
    /// is the device mismatch the exporter raises here. A tensor of no dimensions (`x.sum()`,
    /// `torch.tensor(2.0)`) goes with tensors on any device.
    pub(super) fn note_devices<'v>(
        &mut self,
        values: impl Iterator<Item = &'v Value>,
        range: ruff_text_size::TextRange,
    ) {
        let mut moved = None;
        let mut on_inputs_device = false;
        let mut visit = |value: &Value| {
            if let Value::Tensor(info) = value {
                match info.device {
                    TensorDevice::Cuda(file, at) => moved = moved.or(Some((file, at))),
                    TensorDevice::Inputs => {
                        let rank = info.dims.as_ref().and_then(|dims| dims.rank);
                        on_inputs_device |= !info.assumed && !info.opaque && rank != Some(0);
                    }
                    TensorDevice::Unknown => {}
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
}

/// The device of an operation's result from its tensor operands (and those of a list among
/// them): CUDA when every one is
/// there, unknown when one is on a device the analysis cannot read or they differ (the
/// mismatch itself is [`Interpreter::note_devices`]'s), and the result's own otherwise.
pub(super) fn device_of_result<'v>(
    result: Value,
    operands: impl Iterator<Item = &'v Value>,
) -> Value {
    let mut joined: Option<TensorDevice> = None;
    let mut visit = |operand: &Value| {
        if let Value::Tensor(info) = operand {
            joined = Some(joined.map_or(info.device, |device| device.join(info.device)));
        }
    };
    // `torch.cat([a, b])`: the tensors of a list argument too.
    for operand in operands {
        match operand {
            Value::Tuple(items) => items.iter().for_each(&mut visit),
            operand => visit(operand),
        }
    }
    match joined {
        Some(device @ (TensorDevice::Cuda(..) | TensorDevice::Unknown)) => {
            with_device(result, device)
        }
        _ => result,
    }
}

/// `value` on `device`, when it is a tensor.
pub(super) fn with_device(value: Value, device: TensorDevice) -> Value {
    match value {
        Value::Tensor(info) => Value::Tensor(TensorInfo {
            device,
            maybe_none: false,
            ..info
        }),
        value => value,
    }
}

/// The `device=` keyword of a call, when it has one.
pub(super) fn device_keyword(kwargs: &[(String, Value)]) -> Option<&Value> {
    kwargs
        .iter()
        .find(|(name, _)| name == "device")
        .map(|(_, value)| value)
}
