//! Shapes of torch calls the interpreter computes from their tensors and size arguments:
//! concatenation and stacking, factories (`torch.zeros(b, 4)`, `torch.arange(n)`), splits,
//! broadcasts of elementwise functions, and the methods that move dimensions.

use std::rc::Rc;

use ruff_text_size::Ranged;

use crate::catalogue;
use crate::names;
use crate::syntax::ast::{self, Expr};

use super::{Interpreter, SizeOrigin, TensorInfo, Value, shape_ops};
use crate::semantic::events::Forcing;
use crate::semantic::symbolic::SymSize;
use crate::semantic::value::{DimSize, TensorDims};

impl Interpreter<'_, '_> {
    /// The broadcast shape of an elementwise function's tensor arguments.
    pub(super) fn broadcast_all(
        &mut self,
        args: &[Value],
        range: ruff_text_size::TextRange,
    ) -> Option<Rc<TensorDims>> {
        let mut shape: Option<Rc<TensorDims>> = None;
        for arg in args {
            let Value::Tensor(info) = arg else { continue };
            shape = match shape {
                None => Some(info.dims.clone()?),
                Some(dims) => {
                    let current = TensorInfo {
                        dims: Some(dims),
                        ..TensorInfo::default()
                    };
                    Some(self.combine_shapes(&current, info, ast::Operator::Add, range)?)
                }
            };
        }
        shape
    }

    /// A torch function that moves dimensions: `torch.cat`, `torch.stack`, `torch.matmul`, and
    /// the functions named as tensor methods with the tensor first (`torch.flatten(x, 1)`).
    pub(super) fn torch_shape_call(
        &mut self,
        name: &str,
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
        assumed: bool,
    ) -> Option<Value> {
        match name {
            "cat" | "concat" | "concatenate" | "stack" => {
                let Some(Value::Tuple(items)) = args.first() else {
                    return None;
                };
                let parts: Option<Vec<&TensorDims>> = items
                    .iter()
                    .map(|item| match item {
                        Value::Tensor(info) if !info.data_dependent_shape => info.dims.as_deref(),
                        _ => None,
                    })
                    .collect();
                let dim = shape_ops::argument(&call.arguments.args, call, 1, &["dim", "axis"])
                    .map_or(Some(0), names::int_literal);
                let mut forced = Vec::new();
                let dims = parts.zip(dim).and_then(|(parts, dim)| {
                    shape_ops::concatenate(&parts, dim, name == "stack", &mut forced)
                });
                self.record_forced(forced, &Forcing::Concatenation, call.range());
                // The parts are in a list: they are certain tensors when one of them is.
                let assumed = !items.iter().any(Value::is_certain_tensor);
                Some(Value::Tensor(TensorInfo {
                    dims: dims.map(Rc::new),
                    assumed,
                    ..TensorInfo::default()
                }))
            }
            // `torch.arange(end)`, `arange(start, end[, step])`: a vector of the count.
            "arange" => {
                let length = match args {
                    [end] => end.as_sym(),
                    [start, end] => end.as_sym()?.sub(&start.as_sym()?),
                    [start, end, step] => {
                        let (start, end, step) = (
                            start.known_constant()?,
                            end.known_constant()?,
                            step.known_constant()?,
                        );
                        let count = ((end - start) / step).ceil().max(0.0);
                        crate::semantic::value::integer(count).map(SymSize::constant)
                    }
                    _ => None,
                };
                let length = length
                    .filter(|length| length.as_constant().is_none_or(|length| length >= 0))?;
                Some(Value::Tensor(TensorInfo {
                    dims: Some(Rc::new(TensorDims::from_sizes(vec![Some(DimSize::Sym(
                        length,
                    ))]))),
                    assumed,
                    ..TensorInfo::default()
                }))
            }
            "chunk" | "split" | "unbind" | "tensor_split" => {
                let Some(Value::Tensor(info)) = args.first() else {
                    return None;
                };
                let exprs = call.arguments.args.get(1..)?;
                if let Some(dims) = info.dims.as_deref() {
                    self.note_unbacked_cut(dims, name, call, exprs, &args[1..]);
                }
                split_into_tuple(info, name, call, exprs, &args[1..], kwargs)
            }
            "einsum" => {
                let equation = names::string_literal(call.arguments.args.first()?)?;
                let operands: Vec<&Value> = match args.get(1..)? {
                    [Value::Tuple(items)] => items.iter().collect(),
                    rest => rest.iter().collect(),
                };
                let operands: Option<Vec<&TensorInfo>> = operands
                    .into_iter()
                    .map(|operand| match operand {
                        Value::Tensor(info) if !info.data_dependent_shape => Some(info),
                        _ => None,
                    })
                    .collect();
                let operands = operands?;
                let shapes: Option<Vec<&TensorDims>> =
                    operands.iter().map(|info| info.dims.as_deref()).collect();
                let dims = shapes.and_then(|shapes| shape_ops::einsum(equation, &shapes));
                Some(Value::Tensor(TensorInfo {
                    dims: dims.map(Rc::new),
                    assumed: operands.iter().all(|info| info.assumed),
                    ..TensorInfo::default()
                }))
            }
            "interpolate" | "pad" => {
                let Some(Value::Tensor(info)) = args.first() else {
                    return None;
                };
                let exprs = call.arguments.args.get(1..).unwrap_or_default();
                let dims = info
                    .dims
                    .as_deref()
                    .filter(|_| !info.data_dependent_shape)
                    .and_then(|dims| {
                        if name == "pad" {
                            shape_ops::pad(dims, call, exprs)
                        } else {
                            shape_ops::interpolate(
                                dims,
                                call,
                                args.get(1..).unwrap_or_default(),
                                exprs,
                            )
                        }
                    });
                Some(Value::Tensor(TensorInfo {
                    dims: dims.map(Rc::new),
                    assumed: assumed || info.assumed,
                    data_dependent_shape: info.data_dependent_shape,
                    ..TensorInfo::default()
                }))
            }
            // The same product as `a @ b` and `a.matmul(b)` (`Interpreter::operation`).
            "matmul" | "mm" | "bmm" => {
                let (Some(a @ Value::Tensor(_)), Some(b @ Value::Tensor(_))) =
                    (args.first(), args.get(1))
                else {
                    return None;
                };
                Some(self.operation(a, ast::Operator::MatMult, b, None, call.range()))
            }
            _ if moves_dimensions(name) => {
                let Some(Value::Tensor(info)) = args.first() else {
                    return None;
                };
                if info.data_dependent_shape {
                    return None;
                }
                let dims = info.dims.as_ref().and_then(|dims| {
                    shape_ops::method_shape(
                        dims,
                        name,
                        call,
                        args.get(1..).unwrap_or_default(),
                        call.arguments.args.get(1..).unwrap_or_default(),
                    )
                })?;
                Some(Value::Tensor(TensorInfo {
                    dims: Some(Rc::new(dims)),
                    assumed: assumed || info.assumed,
                    ..TensorInfo::default()
                }))
            }
            _ => None,
        }
    }
}

/// A method that moves dimensions or reduces (`x.view(b, -1)`, `x.sum(dim=1)`) on a tensor of
/// known shape: the tensor it returns, when its shape can be computed.
pub(super) fn shaped_method(
    info: &TensorInfo,
    name: &str,
    call: &ast::ExprCall,
    args: &[Value],
) -> Option<Value> {
    if info.data_dependent_shape || !moves_dimensions(name) {
        return None;
    }
    // `t.reshape(b, c, *spatial)` gives the sizes written whatever `t`'s shape was; only a
    // `-1` among them needs it.
    let unknown = crate::semantic::value::TensorDims {
        rank: None,
        sizes: Vec::new(),
    };
    let input = match info.dims.as_deref() {
        Some(dims) => dims,
        None if matches!(name, "view" | "reshape") => &unknown,
        None => return None,
    };
    let dims = shape_ops::method_shape(input, name, call, args, &call.arguments.args)?;
    Some(Value::Tensor(TensorInfo {
        dims: Some(Rc::new(dims)),
        maybe_none: false,
        opaque: false,
        ..info.clone()
    }))
}

/// The parts of `chunk`, `split` or `unbind` as a tuple of tensors of known shapes, when their
/// number and sizes are known (`exprs`: the arguments after the tensor).
pub(super) fn split_into_tuple(
    info: &TensorInfo,
    name: &str,
    call: &ast::ExprCall,
    exprs: &[Expr],
    values: &[Value],
    keywords: &[(String, Value)],
) -> Option<Value> {
    if info.data_dependent_shape {
        return None;
    }
    let parts = shape_ops::split_parts(info.dims.as_deref()?, name, call, exprs, values, keywords)?;
    Some(Value::Tuple(
        parts
            .into_iter()
            .map(|dims| {
                Value::Tensor(TensorInfo {
                    dims: Some(Rc::new(dims)),
                    assumed: info.assumed,
                    ..TensorInfo::default()
                })
            })
            .collect(),
    ))
}

/// Whether `shape_ops::method_shape` may compute what op `name` does to shapes.
pub(super) fn moves_dimensions(name: &str) -> bool {
    catalogue::SHAPE_OPS.contains(&name)
        || matches!(
            catalogue::shape_rule(name),
            Some(catalogue::ShapeRule::Reduction { .. })
        )
}

/// The first dimension of `dims`, the others untracked: what a layer that keeps the batch
/// does to shapes when the catalogue does not follow the rest.
pub(super) fn batch_of(dims: &TensorDims) -> TensorDims {
    TensorDims {
        rank: None,
        sizes: dims
            .sizes
            .iter()
            .filter(|(index, _)| *index == 0)
            .cloned()
            .collect(),
    }
}

/// The shape a factory makes from its size arguments: `torch.zeros(x.shape[0], 4)`.
pub(super) fn factory_dims(name: &str, call: &ast::ExprCall, args: &[Value]) -> Option<TensorDims> {
    let first = call.arguments.args.first();
    let exprs: Vec<&Expr> = match (name, first) {
        (
            "full",
            Some(Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })),
        ) => elts.iter().collect(),
        ("full", _) => return None,
        (
            _,
            Some(Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })),
        ) if call.arguments.args.len() == 1 => elts.iter().collect(),
        _ => call.arguments.args.iter().collect(),
    };
    let values: Vec<&Value> = factory_sizes(name, args).collect();
    if values.len() != exprs.len() || exprs.is_empty() {
        return None;
    }
    let sizes: Option<Vec<Option<DimSize>>> = values
        .iter()
        .zip(&exprs)
        .map(|(value, expr)| match names::int_literal(expr) {
            Some(size) => Some(Some(DimSize::Sym(SymSize::constant(size)))),
            None => match value {
                Value::Size { sym: Some(sym), .. } => Some(Some(DimSize::Sym((**sym).clone()))),
                Value::Number(_) => Some(value.as_sym().map(DimSize::Sym)),
                Value::Size {
                    origin: SizeOrigin::Static,
                    ..
                } => Some(None),
                Value::Size {
                    origin: SizeOrigin::Dynamic { dim, .. },
                    ..
                } => Some(Some(DimSize::Derived(dim.clone()))),
                _ => None,
            },
        })
        .collect();
    Some(TensorDims::from_sizes(sizes?))
}

/// The size arguments of a factory call: `torch.zeros(a, b)`, `torch.zeros((a, b))`,
/// `torch.full((a, b), value)`.
pub(super) fn factory_sizes<'v>(name: &str, args: &'v [Value]) -> impl Iterator<Item = &'v Value> {
    let sizes: &'v [Value] = match args.first() {
        Some(Value::Tuple(items)) if name == "full" || args.len() == 1 => items,
        _ if name == "full" => &[],
        _ => args,
    };
    sizes.iter()
}
