//! What a tensor's size queries give the interpreter: `x.size(i)` / `x.shape[i]`, `numel()`,
//! and the rank (`x.dim()`, `x.ndim`, `len(x.shape)`).

use super::{Interpreter, Interval, SizeOrigin, TensorInfo, Value};
use crate::semantic::value::DimSize;

impl Interpreter<'_, '_> {
    pub(super) fn untracked_for(&self, info: &TensorInfo) -> SizeOrigin {
        match &info.dims {
            Some(dims) if !dims.is_dynamic() => SizeOrigin::Static,
            _ => self.untracked.clone(),
        }
    }

    pub(super) fn size_of(&self, info: &TensorInfo, position: i64) -> Value {
        let untracked = |origin: SizeOrigin| Value::Size {
            origin,
            interval: Interval::at_least(0.0),
            sym: None,
        };
        if info.data_dependent_shape {
            return untracked(if position == 0 {
                SizeOrigin::Unbacked
            } else {
                self.untracked.clone()
            });
        }
        let Some(dims) = &info.dims else {
            return untracked(self.untracked.clone());
        };
        match dims.index(position) {
            Some(index) => match dims.size(index) {
                Some(DimSize::Sym(sym)) => Value::sym_size(sym.clone()),
                Some(DimSize::Derived(dim)) => Value::Size {
                    origin: SizeOrigin::Dynamic {
                        dim: dim.clone(),
                        exact: false,
                    },
                    interval: Interval::at_least(0.0),
                    sym: None,
                },
                None => Value::static_size(),
            },
            None if !dims.is_dynamic() => Value::static_size(),
            None => Value::Size {
                origin: SizeOrigin::Unknown,
                interval: Interval::default(),
                sym: None,
            },
        }
    }

    pub(super) fn numel_of(&self, info: &TensorInfo) -> Value {
        let size = |origin: SizeOrigin| Value::Size {
            origin,
            interval: Interval::at_least(0.0),
            sym: None,
        };
        if info.data_dependent_shape {
            return size(SizeOrigin::Unbacked);
        }
        match &info.dims {
            Some(dims) => match dims.first_dynamic() {
                Some(dim) => size(SizeOrigin::Dynamic {
                    dim: dim.clone(),
                    exact: false,
                }),
                None => Value::static_size(),
            },
            None => size(self.untracked.clone()),
        }
    }
}

/// A tensor's rank (`x.dim()`, `x.ndim`, `len(x.shape)`): a Python number, which export never
/// makes symbolic, when the shape knows it.
pub(super) fn rank_of(info: &TensorInfo) -> Value {
    #[allow(clippy::cast_precision_loss)] // A rank is small.
    info.dims
        .as_ref()
        .and_then(|dims| dims.rank)
        .map_or(Value::Unknown, |rank| Value::Number(rank as f64))
}
