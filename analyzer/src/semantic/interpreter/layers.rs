//! Layers over symbolic shapes: what a module layer (`nn.Linear`, `nn.Conv2d`, pooling,
//! `nn.Embedding`, recurrent layers) does to its input's shape, built from its constructor's
//! arguments, and the sizes it forces or guards.

use std::rc::Rc;

use super::shape_ops::{argument, unknown_like};
use crate::catalogue::{self, LayerShape};
use crate::names;
use crate::semantic::symbolic::SymSize;
use crate::semantic::value::{DimSize, LayerInfo, TensorDims, Value};
use crate::syntax::ast::{self, Expr};

/// The size a layer forces its input to have, and the shape of its output.
pub(super) struct LayerApplied {
    pub(super) dims: Option<TensorDims>,
    /// The input's size that must equal the constructor's argument, and the argument's name.
    pub(super) forced: Option<(SymSize, i64, &'static str)>,
}

/// Applies layer `layer` to an input of shape `input`.
pub(super) fn apply_layer(layer: &LayerInfo, input: &TensorDims) -> LayerApplied {
    let batch_only = || {
        let sizes = input
            .sizes
            .iter()
            .filter(|(index, _)| *index == 0)
            .cloned()
            .collect();
        Some(TensorDims { rank: None, sizes })
    };
    let Some(shape) = catalogue::layer_shape(&layer.qualified) else {
        return LayerApplied {
            dims: batch_only(),
            forced: None,
        };
    };
    let sizes = input.all_sizes();
    let last_forced = |parameter: &'static str| {
        let expected = layer.size(parameter)?;
        let last = input.size(input.rank?.checked_sub(1)?)?.sym()?.clone();
        Some((last, expected, parameter))
    };
    match shape {
        LayerShape::Same => LayerApplied {
            dims: Some(input.clone()),
            forced: None,
        },
        LayerShape::LastNorm => LayerApplied {
            dims: Some(input.clone()),
            forced: last_forced("normalized_shape"),
        },
        LayerShape::ChannelNorm => LayerApplied {
            dims: Some(input.clone()),
            forced: (input.rank.is_some_and(|rank| rank >= 2))
                .then(|| {
                    let expected = layer.size("num_features")?;
                    Some((input.size(1)?.sym()?.clone(), expected, "num_features"))
                })
                .flatten(),
        },
        LayerShape::Linear => {
            // Features the analysis cannot read (a wrapper class built with several widths)
            // leave the other sizes known.
            let dims = sizes.and_then(|mut sizes| {
                *sizes.last_mut()? = layer
                    .size("out_features")
                    .map(|out| DimSize::Sym(SymSize::constant(out)));
                Some(TensorDims::from_sizes(sizes))
            });
            LayerApplied {
                dims: dims.or_else(batch_only),
                forced: last_forced("in_features"),
            }
        }
        LayerShape::Embedding => {
            let dims = sizes.map(|mut sizes| {
                sizes.push(
                    layer
                        .size("embedding_dim")
                        .map(|width| DimSize::Sym(SymSize::constant(width))),
                );
                TensorDims::from_sizes(sizes)
            });
            LayerApplied {
                dims: dims.or_else(batch_only),
                forced: None,
            }
        }
        LayerShape::Conv { spatial } | LayerShape::ConvTranspose { spatial } => {
            let channel = input
                .rank
                .filter(|rank| *rank == spatial + 2)
                .and_then(|_| Some((input.size(1)?.sym()?.clone(), layer.size("in_channels")?)))
                .map(|(size, expected)| (size, expected, "in_channels"));
            let dims = sizes.and_then(|mut sizes| {
                if sizes.len() != spatial + 2 {
                    return None;
                }
                // Channels the analysis cannot read (a layer built with several widths) leave
                // the spatial sizes known.
                sizes[1] = layer
                    .size("out_channels")
                    .map(|channels| DimSize::Sym(SymSize::constant(channels)));
                let transposed = matches!(shape, LayerShape::ConvTranspose { .. });
                if layer.same_padding && !transposed {
                    return Some(TensorDims::from_sizes(sizes));
                }
                for (axis, size) in sizes[2..].iter_mut().enumerate() {
                    let window = layer
                        .axis_size("kernel_size", axis)
                        .and_then(|kernel| Window::of(layer, axis, kernel, 1));
                    *size = if transposed {
                        let output_padding = layer.axis_size_or("output_padding", axis, 0);
                        let window = window.as_ref().zip(output_padding);
                        Window::transposed_output_of(window, size.take())
                    } else {
                        Window::output_of(window.as_ref(), size.take())
                    };
                }
                Some(TensorDims::from_sizes(sizes))
            });
            LayerApplied {
                dims: dims.or_else(batch_only),
                forced: channel,
            }
        }
        LayerShape::Pad { spatial, .. } => {
            // An integer `padding` on every side; a tuple of sides is not followed.
            let dims = sizes.and_then(|mut sizes| {
                let first = sizes
                    .len()
                    .checked_sub(spatial)
                    .filter(|first| *first >= 1)?;
                let grown = SymSize::constant(2 * layer.size("padding")?);
                resize_each(&mut sizes[first..], |sym| sym.add(&grown));
                Some(TensorDims::from_sizes(sizes))
            });
            LayerApplied {
                dims: dims.or_else(batch_only),
                forced: None,
            }
        }
        LayerShape::Upsample => {
            // Only an integer factor is followed: a `size` or a fractional factor is unknown.
            let dims = sizes.and_then(|mut sizes| {
                if sizes.len() < 3 || layer.sizes.iter().any(|(name, _)| *name == "size") {
                    return None;
                }
                let factor = SymSize::constant(layer.size("scale_factor")?);
                resize_each(&mut sizes[2..], |sym| sym.mul(&factor));
                Some(TensorDims::from_sizes(sizes))
            });
            LayerApplied {
                dims: dims.or_else(batch_only),
                forced: None,
            }
        }
        LayerShape::Pool { spatial } | LayerShape::AdaptivePool { spatial } => {
            // Each of the last `spatial` sizes through the window, or to the output size.
            let pooled = |axis: usize, size: Option<DimSize>| match shape {
                LayerShape::Pool { .. } => {
                    let window = layer
                        .axis_size("kernel_size", axis)
                        .and_then(|kernel| Window::of(layer, axis, kernel, kernel));
                    Window::output_of(window.as_ref(), size)
                }
                _ => Some(DimSize::Sym(SymSize::constant(
                    layer.axis_size("output_size", axis)?,
                ))),
            };
            let dims = sizes.and_then(|mut sizes| {
                let first = sizes
                    .len()
                    .checked_sub(spatial)
                    .filter(|first| *first >= 1)?;
                // Without its size argument the layer's output is not known: no shape.
                let parameter = match shape {
                    LayerShape::Pool { .. } => "kernel_size",
                    _ => "output_size",
                };
                if (0..spatial).all(|axis| layer.axis_size(parameter, axis).is_none()) {
                    return None;
                }
                for (axis, size) in sizes[first..].iter_mut().enumerate() {
                    *size = pooled(axis, size.take());
                }
                Some(TensorDims::from_sizes(sizes))
            });
            LayerApplied {
                dims: dims.or_else(batch_only),
                forced: None,
            }
        }
        LayerShape::BatchOnly => LayerApplied {
            dims: batch_only(),
            forced: None,
        },
        // Their outputs are pairs; `recurrent_call` and `attention_call` compute them.
        LayerShape::Recurrent | LayerShape::Attention => LayerApplied {
            dims: None,
            forced: None,
        },
    }
}

/// The sequence dimension a recurrent layer runs over, and its output's shape: `(seq, batch,
/// D·hidden)` (batch first with `batch_first`), `D` being 2 when bidirectional.
fn recurrent_state(layer: &LayerInfo, input: &TensorDims) -> Option<TensorDims> {
    let batch_first = layer.size("batch_first") == Some(1);
    let directions = if layer.size("bidirectional") == Some(1) {
        2
    } else {
        1
    };
    let layers = layer.size("num_layers").unwrap_or(1);
    let hidden = layer.size("hidden_size")?;
    let sizes = input.all_sizes()?;
    let constant = |size: i64| Some(DimSize::Sym(SymSize::constant(size)));
    let state = match (sizes.len(), batch_first) {
        (2, _) => vec![constant(layers * directions), constant(hidden)],
        (3, false) => vec![
            constant(layers * directions),
            sizes[1].clone(),
            constant(hidden),
        ],
        (3, true) => vec![
            constant(layers * directions),
            sizes[0].clone(),
            constant(hidden),
        ],
        _ => return None,
    };
    Some(TensorDims::from_sizes(state))
}

fn recurrent_output(
    layer: &LayerInfo,
    input: &TensorDims,
) -> (Option<DimSize>, Option<TensorDims>) {
    let batch_first = layer.size("batch_first") == Some(1);
    let Some(rank) = input.rank else {
        return (None, None);
    };
    let sequence = match (rank, batch_first) {
        (2, _) | (3, false) => 0,
        (3, true) => 1,
        _ => return (None, None),
    };
    let Some(sizes) = input.all_sizes() else {
        return (None, None);
    };
    let directions = if layer.size("bidirectional") == Some(1) {
        2
    } else {
        1
    };
    let mut output = sizes.clone();
    if let Some(last) = output.last_mut() {
        *last = layer
            .size("hidden_size")
            .map(|hidden| DimSize::Sym(SymSize::constant(hidden * directions)));
    }
    (
        sizes[sequence].clone(),
        Some(TensorDims::from_sizes(output)),
    )
}

/// Calls a `MultiheadAttention` on `(query, key, value)`: `(output, weights)`. The output has
/// the query's shape; the weights (averaged over the heads, torch's default) are
/// `(batch, L, S)` from the query's length `L` and the key's `S` (`(L, S)` unbatched), the
/// batch at dimension 1 of the inputs unless `batch_first`. The key defaults to the query for
/// a call that names fewer.
fn attention_call(layer: &LayerInfo, args: &[Value]) -> Value {
    let tensor = |value: Option<&Value>| match value {
        Some(Value::Tensor(info)) => Some(info.clone()),
        _ => None,
    };
    let Some(query) = tensor(args.first()) else {
        return Value::Tuple(Rc::from(vec![
            Value::opaque_tensor(),
            Value::opaque_tensor(),
        ]));
    };
    let key = tensor(args.get(1)).unwrap_or_else(|| query.clone());
    let batch_first = layer.size("batch_first") == Some(1);
    let weights = (|| {
        let query_sizes = query.dims.as_ref()?.all_sizes()?;
        let key_sizes = key.dims.as_ref()?.all_sizes()?;
        let sizes = match (query_sizes.len(), key_sizes.len(), batch_first) {
            (2, 2, _) => vec![query_sizes[0].clone(), key_sizes[0].clone()],
            (3, 3, false) => vec![
                query_sizes[1].clone(),
                query_sizes[0].clone(),
                key_sizes[0].clone(),
            ],
            (3, 3, true) => vec![
                query_sizes[0].clone(),
                query_sizes[1].clone(),
                key_sizes[1].clone(),
            ],
            _ => return None,
        };
        Some(Rc::new(TensorDims::from_sizes(sizes)))
    })();
    let output = Value::Tensor(super::TensorInfo {
        dims: query.dims.clone(),
        assumed: query.assumed,
        ..super::TensorInfo::default()
    });
    let weights = Value::Tensor(super::TensorInfo {
        dims: weights,
        assumed: query.assumed || key.assumed,
        ..super::TensorInfo::default()
    });
    Value::Tuple(Rc::from(vec![output, weights]))
}

/// A convolution's or pooling's sliding window along one spatial dimension.
struct Window {
    kernel: i64,
    stride: i64,
    padding: i64,
    dilation: i64,
}

impl Window {
    /// The window of `layer`; `None` when one of its sizes is given and cannot be read
    /// (`padding="same"`): then the output's size is not known.
    /// The window of `layer` over spatial axis `axis` (a tuple argument gives each axis its own).
    fn of(layer: &LayerInfo, axis: usize, kernel: i64, default_stride: i64) -> Option<Window> {
        Some(Window {
            kernel,
            stride: layer.axis_size_or("stride", axis, default_stride)?,
            padding: layer.axis_size_or("padding", axis, 0)?,
            dilation: layer.axis_size_or("dilation", axis, 1)?,
        })
    }

    /// The output size of `window` for an input of `size`; through a window whose sizes are
    /// not known, a size that depends on the same `Dim`s (or a static one) all the same.
    fn output_of(window: Option<&Window>, size: Option<DimSize>) -> Option<DimSize> {
        match (window, size?) {
            (Some(window), size) => window.output(Some(size)),
            (None, DimSize::Sym(sym)) => unknown_like(&sym),
            (None, DimSize::Derived(dim)) => Some(DimSize::derived_from(&dim)),
        }
    }

    /// The output size of a transposed convolution's `window` (with its output padding) for
    /// an input of `size`: `(L − 1)·stride − 2·padding + dilation·(kernel − 1) + output_padding
    /// + 1`, linear in `L`.
    fn transposed_output_of(
        window: Option<(&Window, i64)>,
        size: Option<DimSize>,
    ) -> Option<DimSize> {
        let sym = match size? {
            DimSize::Sym(sym) => sym,
            DimSize::Derived(dim) => return Some(DimSize::derived_from(&dim)),
        };
        let computed = window.and_then(|(window, output_padding)| {
            let offset = -window.stride - 2 * window.padding
                + window.dilation * (window.kernel - 1)
                + output_padding
                + 1;
            sym.mul(&SymSize::constant(window.stride))?
                .add(&SymSize::constant(offset))
        });
        match computed {
            Some(sym) => Some(DimSize::Sym(sym)),
            None => unknown_like(&sym),
        }
    }

    /// `(L + 2·padding − dilation·(kernel − 1) − 1) // stride + 1`.
    fn output(&self, size: Option<DimSize>) -> Option<DimSize> {
        let sym = match size? {
            DimSize::Sym(sym) => sym,
            DimSize::Derived(dim) => return Some(DimSize::derived_from(&dim)),
        };
        let offset = 2 * self.padding - self.dilation * (self.kernel - 1) - 1;
        let computed = sym
            .add(&SymSize::constant(offset))
            .and_then(|sum| sum.floor_div(&SymSize::constant(self.stride)))
            .and_then(|quotient| quotient.add(&SymSize::constant(1)));
        Some(match computed {
            Some(sym) => DimSize::Sym(sym),
            None => DimSize::derived_from(sym.dims().next()?),
        })
    }
}

/// The shape of a layer's parameter or buffer (`linear.weight`: `(out_features,
/// in_features)`), from its constructor's sizes; `None` where they do not say it.
pub(super) fn parameter_shape(layer: &LayerInfo, name: &str) -> Option<TensorDims> {
    let sizes = |sizes: &[Option<i64>]| -> Option<TensorDims> {
        let sizes: Option<Vec<Option<DimSize>>> = sizes
            .iter()
            .map(|size| size.map(|size| Some(DimSize::Sym(SymSize::constant(size)))))
            .collect();
        Some(TensorDims::from_sizes(sizes?))
    };
    match (catalogue::layer_shape(&layer.qualified)?, name) {
        (LayerShape::Linear, "weight") => {
            sizes(&[layer.size("out_features"), layer.size("in_features")])
        }
        (LayerShape::Linear, "bias") => sizes(&[layer.size("out_features")]),
        (LayerShape::Embedding, "weight") => {
            sizes(&[layer.size("num_embeddings"), layer.size("embedding_dim")])
        }
        (LayerShape::LastNorm, "weight" | "bias") => sizes(&[layer.size("normalized_shape")]),
        (LayerShape::ChannelNorm, "weight" | "bias" | "running_mean" | "running_var") => {
            sizes(&[layer.size("num_features")])
        }
        _ => None,
    }
}

/// A layer value from its constructor call: the literal sizes it was given.
pub(super) fn layer_info(
    qualified: &str,
    call: &ast::ExprCall,
    args: &[Value],
    kwargs: &[(String, Value)],
) -> LayerInfo {
    let parameters = catalogue::layer_shape(qualified).map_or(&[][..], catalogue::layer_parameters);
    let single = |expr: &Expr, value: Option<&Value>| {
        names::int_literal(expr).or_else(|| value?.as_sym()?.as_constant())
    };
    // A tuple or a list (`kernel_size=(3, 3)`, `(K, embed_dim)`, `[2, 2]`, a name bound to
    // one): its items, literal or computed.
    let items = |expr: &Expr, value: Option<&Value>| -> Option<Vec<Option<i64>>> {
        let elts = match expr {
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                Some(elts)
            }
            _ => None,
        };
        match (elts, value) {
            (Some(elts), Some(Value::Tuple(values))) if values.len() == elts.len() => Some(
                elts.iter()
                    .zip(values.iter())
                    .map(|(expr, value)| single(expr, Some(value)))
                    .collect(),
            ),
            (Some(elts), _) => Some(elts.iter().map(|expr| single(expr, None)).collect()),
            (None, Some(Value::Tuple(values))) => Some(
                values
                    .iter()
                    .map(|value| value.as_sym()?.as_constant())
                    .collect(),
            ),
            (None, _) => None,
        }
    };
    let mut per_axis = Vec::new();
    let mut literal = |parameter: &'static str, expr: &Expr, value: Option<&Value>| {
        let Some(items) = items(expr, value) else {
            return single(expr, value);
        };
        let first = *items.first()?;
        if items.iter().all(|item| *item == first) {
            return first;
        }
        // Each axis its own size, unknown where the analysis cannot read the item; a `None`
        // item (an adaptive pool keeping that size) leaves the whole argument unknown.
        let keeps_a_size = match (expr, value) {
            (
                Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }),
                _,
            ) => elts.iter().any(Expr::is_none_literal_expr),
            (_, Some(Value::Tuple(values))) => values.contains(&Value::None),
            _ => false,
        };
        if !keeps_a_size {
            per_axis.push((parameter, items));
        }
        None
    };
    let mut sizes = Vec::new();
    // `nn.Conv2d(*args, **kwargs)` with the arguments known (a factory passing its own on):
    // the values, by position and by name, stand where no expression does.
    let unpacked = call.arguments.args.iter().any(Expr::is_starred_expr)
        || call
            .arguments
            .keywords
            .iter()
            .any(|keyword| keyword.arg.is_none());
    let mut unpacked_axes = Vec::new();
    if unpacked {
        for (position, parameter) in parameters.iter().enumerate() {
            let value = args.get(position).or_else(|| {
                kwargs
                    .iter()
                    .find(|(name, _)| name == parameter)
                    .map(|(_, value)| value)
            });
            let Some(value) = value else { continue };
            let size = match value {
                Value::Tuple(items) => {
                    let items: Vec<Option<i64>> = items
                        .iter()
                        .map(|item| item.as_sym()?.as_constant())
                        .collect();
                    match items.first() {
                        Some(first) if items.iter().all(|item| item == first) => *first,
                        _ => {
                            unpacked_axes.push((*parameter, items));
                            None
                        }
                    }
                }
                value => value.as_sym().and_then(|sym| sym.as_constant()),
            };
            sizes.push((*parameter, size));
        }
    }
    for (position, parameter) in parameters.iter().enumerate().filter(|_| !unpacked) {
        let expr = call
            .arguments
            .args
            .get(position)
            .map(|expr| (expr, args.get(position)))
            .or_else(|| {
                call.arguments.find_keyword(parameter).map(|keyword| {
                    let value = kwargs
                        .iter()
                        .find(|(name, _)| name == parameter)
                        .map(|(_, value)| value);
                    (&keyword.value, value)
                })
            });
        if let Some((expr, value)) = expr {
            sizes.push((*parameter, literal(parameter, expr, value)));
        }
    }
    per_axis.extend(unpacked_axes);
    // `padding="valid"` is no padding; `padding="same"` keeps the sizes (stride 1 only).
    let mut same_padding = false;
    if let Some(position) = sizes
        .iter()
        .position(|(parameter, _)| *parameter == "padding")
    {
        let given = parameters
            .iter()
            .position(|parameter| *parameter == "padding")
            .and_then(|position| argument(&call.arguments.args, call, position, &["padding"]));
        match given.and_then(names::string_literal) {
            Some("valid") => sizes[position].1 = Some(0),
            Some("same") => same_padding = true,
            _ => {}
        }
    }
    // `ceil_mode=True` rounds the count of windows up, which the floor formula does not state:
    // the size of its output is not known.
    let ceil_mode = call
        .arguments
        .find_keyword("ceil_mode")
        .is_some_and(|keyword| {
            !matches!(
                keyword.value,
                Expr::BooleanLiteral(ast::ExprBooleanLiteral { value: false, .. })
            )
        });
    if ceil_mode {
        sizes.retain(|(parameter, _)| *parameter != "kernel_size");
        sizes.push(("kernel_size", None));
    }
    LayerInfo {
        qualified: Rc::from(qualified),
        sizes,
        per_axis,
        same_padding,
        rearrange: None,
    }
}

impl super::Interpreter<'_, '_> {
    /// Calls a layer on `args`: its output's shape, and the size its constructor forces.
    /// A transformer called with a mask and no flag saying whether it is causal: an event
    /// (see [`catalogue::causal_masks`]). Only a mask known to be a tensor counts; a flag the
    /// analysis cannot read counts as given.
    pub(super) fn transformer_masks(
        &mut self,
        layer: &LayerInfo,
        args: &[Value],
        kwargs: &[(String, Value)],
        range: ruff_text_size::TextRange,
    ) {
        let argument = |position: usize, name: &str| {
            args.get(position).or_else(|| {
                kwargs
                    .iter()
                    .find(|(keyword, _)| keyword == name)
                    .map(|(_, value)| value)
            })
        };
        for &(mask_at, mask, flag_at, flag) in catalogue::causal_masks(&layer.qualified) {
            let given_mask = matches!(argument(mask_at, mask), Some(Value::Tensor(_)));
            let undecided = matches!(argument(flag_at, flag), None | Some(Value::None));
            if given_mask && undecided {
                let class = layer.qualified.rsplit('.').next().unwrap_or_default();
                self.record(
                    super::EventKind::CausalMaskDetection {
                        layer: class.to_owned(),
                        mask,
                        flag,
                    },
                    range,
                );
            }
        }
    }

    pub(super) fn layer_call(
        &mut self,
        layer: &LayerInfo,
        args: &[Value],
        range: ruff_text_size::TextRange,
    ) -> Value {
        if let Some(rearrangement) = &layer.rearrange {
            return self.rearranged(args.first(), rearrangement, range);
        }
        // A layer with parameters holds them on the model's device, the inputs' one.
        if matches!(
            catalogue::layer_shape(&layer.qualified),
            Some(
                LayerShape::Linear
                    | LayerShape::Embedding
                    | LayerShape::Conv { .. }
                    | LayerShape::ConvTranspose { .. }
                    | LayerShape::ChannelNorm
                    | LayerShape::Recurrent
            )
        ) {
            // A weight: on the inputs' device, of two dimensions or more.
            let parameters = Value::Tensor(crate::semantic::value::TensorInfo {
                dims: Some(Rc::new(crate::semantic::value::TensorDims {
                    rank: Some(2),
                    sizes: Vec::new(),
                })),
                ..crate::semantic::value::TensorInfo::default()
            });
            self.note_devices(args.iter().chain([&parameters]), range);
        }
        match catalogue::layer_shape(&layer.qualified) {
            Some(catalogue::LayerShape::Recurrent) => {
                return self.recurrent_call(layer, args, range);
            }
            Some(catalogue::LayerShape::Attention) => return attention_call(layer, args),
            _ => {}
        }
        match args.first() {
            Some(Value::Tensor(info)) => {
                let applied = info.dims.as_ref().map(|dims| apply_layer(layer, dims));
                let mut dims = None;
                if let Some(LayerApplied {
                    dims: output,
                    forced,
                }) = applied
                {
                    if let Some((size, expected, parameter)) = forced {
                        if !info.assumed {
                            let class = layer.qualified.rsplit('.').next().unwrap_or_default();
                            self.record_forced(
                                vec![(size, SymSize::constant(expected))],
                                &super::Forcing::Layer {
                                    class: class.to_owned(),
                                    parameter,
                                },
                                range,
                            );
                        }
                    }
                    if !info.assumed {
                        self.record_small_windows(
                            layer,
                            info.dims.as_deref(),
                            output.as_ref(),
                            range,
                        );
                    }
                    dims = output.map(Rc::new);
                }
                Value::Tensor(super::TensorInfo {
                    dims,
                    assumed: info.assumed,
                    ..super::TensorInfo::default()
                })
            }
            _ => Value::opaque_tensor(),
        }
    }

    /// Adaptive pooling over a `ShapeVar` of `@dynamic_spec` that tests its size: measured with
    /// torch 2.15, strict and not, global average pooling (every output size 1, the classifier
    /// head's `AdaptiveAvgPool2d((1, 1))`) fails with "Could not guard on data-dependent
    /// expression Eq(u0*u1, 0)", and `AdaptiveMaxPool1d` with `u0 > 0`, while the range
    /// includes 0; an average to another size, `AdaptiveMaxPool2d`, a `ShapeVar` batch, and a
    /// range that excludes 0 (a declared `min=1`, a convolution before) export.
    fn record_adaptive_pool(
        &mut self,
        layer: &LayerInfo,
        input: Option<&TensorDims>,
        spatial: usize,
        range: ruff_text_size::TextRange,
    ) {
        let class = layer.qualified.rsplit('.').next().unwrap_or_default();
        let tests_size = class == "AdaptiveMaxPool1d"
            || (class.starts_with("AdaptiveAvgPool") && layer.size("output_size") == Some(1));
        let Some(rank) = input.and_then(|input| input.rank).filter(|_| tests_size) else {
            return;
        };
        let unbacked = (1..=spatial)
            .filter_map(|offset| rank.checked_sub(offset))
            .filter_map(|at| input?.size(at))
            .find_map(|size| match size {
                DimSize::Sym(sym) => sym.dims().find(|dim| dim.unbacked).cloned(),
                DimSize::Derived(dim) => dim.unbacked.then(|| dim.clone()),
            })
            // A range that excludes 0 (`ShapeVar("h", min=1)`) decides the test (measured).
            .filter(|dim| dim.min.unwrap_or(0) <= 0);
        if let Some(dim) = unbacked {
            let layer = format!("nn.{class}");
            self.record(super::EventKind::AdaptivePoolUnbacked { dim, layer }, range);
        }
    }

    /// A reflection padding wider than a padded dynamic size may be: torch needs each padded
    /// size above the padding (measured, torch 2.15: `nn.ReflectionPad1d(3)` over `Dim("t")`
    /// fails with "Constraints violated (t)", `t >= 4`).
    fn record_reflection(
        &mut self,
        layer: &LayerInfo,
        input: Option<&TensorDims>,
        spatial: usize,
        range: ruff_text_size::TextRange,
    ) {
        let (Some(input), Some(padding)) = (input, layer.size("padding")) else {
            return;
        };
        let Some(rank) = input.rank else {
            return;
        };
        let class = layer.qualified.rsplit('.').next().unwrap_or_default();
        for at in rank.saturating_sub(spatial)..rank {
            let Some(DimSize::Sym(size)) = input.size(at) else {
                continue;
            };
            let allows_narrow = size.range().0.is_some_and(|low| low <= padding);
            if size.is_dynamic() && !size.is_automatic() && allows_narrow {
                self.record(
                    super::EventKind::ReflectionTooWide {
                        size: size.clone(),
                        padding,
                        layer: format!("nn.{class}"),
                    },
                    range,
                );
            }
        }
    }

    /// The spatial sizes a convolution or pooling window made from a dynamic dimension that
    /// its declared range allows to be 1 or less: each is an event (the exporter guards it).
    fn record_small_windows(
        &mut self,
        layer: &LayerInfo,
        input: Option<&TensorDims>,
        output: Option<&TensorDims>,
        range: ruff_text_size::TextRange,
    ) {
        if let Some(LayerShape::AdaptivePool { spatial }) = catalogue::layer_shape(&layer.qualified)
        {
            self.record_adaptive_pool(layer, input, spatial, range);
            return;
        }
        if let Some(LayerShape::Pad {
            spatial,
            reflect: true,
        }) = catalogue::layer_shape(&layer.qualified)
        {
            self.record_reflection(layer, input, spatial, range);
            return;
        }
        let Some(LayerShape::Conv { spatial } | LayerShape::Pool { spatial }) =
            catalogue::layer_shape(&layer.qualified)
        else {
            return;
        };
        let (Some(input), Some(output)) = (input, output) else {
            return;
        };
        let (Some(input_rank), Some(output_rank)) = (input.rank, output.rank) else {
            return;
        };
        if layer.qualified.as_ref() == "torch.nn.MaxPool1d" {
            // The length is fixed whatever the window makes of it: that is the finding.
            let length = input_rank
                .checked_sub(1)
                .and_then(|at| input.size(at))
                .and_then(DimSize::dynamic_dim);
            if let Some(dim) = length.filter(|dim| !dim.automatic) {
                self.record(
                    super::EventKind::PoolFixesLength {
                        dim: dim.clone(),
                        kernel: layer.size("kernel_size"),
                    },
                    range,
                );
            }
            return;
        }
        let class = layer.qualified.rsplit('.').next().unwrap_or_default();
        for offset in 1..=spatial {
            let (Some(before), Some(after)) = (
                input_rank.checked_sub(offset).and_then(|at| input.size(at)),
                output_rank
                    .checked_sub(offset)
                    .and_then(|at| output.size(at)),
            ) else {
                continue;
            };
            let (Some(before), Some(after)) = (before.sym(), after.sym()) else {
                continue;
            };
            if before == after || after.is_automatic() || after.dims().count() != 1 {
                continue;
            }
            if after.range().0.is_some_and(|low| low <= 1) {
                self.record(
                    super::EventKind::WindowOutput {
                        size: after.clone(),
                        layer: class.to_owned(),
                    },
                    range,
                );
            }
        }
    }

    /// Calls a recurrent layer: `(output, state)`. A dynamic sequence length is unrolled.
    fn recurrent_call(
        &mut self,
        layer: &LayerInfo,
        args: &[Value],
        range: ruff_text_size::TextRange,
    ) -> Value {
        let Some(Value::Tensor(info)) = args.first() else {
            return Value::Tuple(Rc::from(vec![
                Value::opaque_tensor(),
                Value::opaque_tensor(),
            ]));
        };
        if info.data_dependent_shape {
            let class = layer.qualified.rsplit('.').next().unwrap_or_default();
            self.record(
                super::EventKind::DataDependentRecurrent {
                    layer: class.to_owned(),
                },
                range,
            );
        }
        // `h` (and `c` for an LSTM): `(num_layers·D, batch, hidden)`.
        let hidden = Value::Tensor(super::TensorInfo {
            dims: info
                .dims
                .as_ref()
                .and_then(|dims| recurrent_state(layer, dims))
                .map(Rc::new),
            assumed: info.assumed,
            ..super::TensorInfo::default()
        });
        let state = if layer.qualified.as_ref() == "torch.nn.LSTM" {
            Value::Tuple(Rc::from(vec![hidden.clone(), hidden]))
        } else {
            hidden
        };
        let (sequence, output) = info
            .dims
            .as_ref()
            .map_or((None, None), |dims| recurrent_output(layer, dims));
        if let Some(dim) = sequence.as_ref().and_then(DimSize::dynamic_dim) {
            if !dim.automatic && !info.assumed {
                let class = layer.qualified.rsplit('.').next().unwrap_or_default();
                self.record(
                    super::EventKind::Unrolled {
                        dim: dim.clone(),
                        layer: class.to_owned(),
                    },
                    range,
                );
            }
        }
        let output = Value::Tensor(super::TensorInfo {
            dims: output.map(Rc::new),
            assumed: info.assumed,
            ..super::TensorInfo::default()
        });
        Value::Tuple(Rc::from(vec![output, state]))
    }
}

impl super::Interpreter<'_, '_> {
    /// einops' pattern and axis sizes from a call: the pattern at `pattern_at` (a literal or a
    /// string the program computed), each keyword a known number or a size.
    pub(super) fn rearrangement(
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
        pattern_at: usize,
        reduces: bool,
    ) -> Option<crate::semantic::einops::Rearrangement> {
        let text = match args.get(pattern_at) {
            Some(Value::Str(text)) => text.to_string(),
            _ => names::string_literal(call.arguments.args.get(pattern_at)?)?.to_owned(),
        };
        let pattern = if reduces {
            crate::semantic::einops::Pattern::parse_reduction(&text)?
        } else {
            crate::semantic::einops::Pattern::parse(&text)?
        };
        let given: Option<Vec<(String, SymSize)>> = kwargs
            .iter()
            .filter(|(name, _)| name != "reduction")
            .map(|(name, value)| Some((name.clone(), value.as_sym()?)))
            .collect();
        Some(crate::semantic::einops::Rearrangement {
            pattern,
            given: given?,
        })
    }

    /// A tensor rearranged by an einops pattern: its new shape, and the divisibility the
    /// pattern asks of a dynamic dimension it splits (the exporter's guard).
    pub(super) fn rearranged(
        &mut self,
        input: Option<&Value>,
        rearrangement: &crate::semantic::einops::Rearrangement,
        range: ruff_text_size::TextRange,
    ) -> Value {
        let Some(Value::Tensor(info)) = input else {
            return Value::opaque_tensor();
        };
        let Some(rearranged) = info
            .dims
            .as_deref()
            .and_then(|dims| rearrangement.apply(dims))
        else {
            return Value::Tensor(super::TensorInfo {
                assumed: info.assumed,
                data_dependent_shape: info.data_dependent_shape,
                ..super::TensorInfo::default()
            });
        };
        if !info.assumed {
            for (dim, multiple) in rearranged.divisibility {
                self.record(super::EventKind::ReshapeGuard { dim, multiple }, range);
            }
        }
        Value::Tensor(super::TensorInfo {
            dims: Some(Rc::new(rearranged.dims)),
            assumed: info.assumed,
            data_dependent_shape: info.data_dependent_shape,
            ..super::TensorInfo::default()
        })
    }
}

/// Each of `sizes` through `resize`: a size it cannot write stays dynamic through its `Dim`s
/// (a new derived size), never static; a derived size gives a new one; a static one stays.
fn resize_each(sizes: &mut [Option<DimSize>], resize: impl Fn(&SymSize) -> Option<SymSize>) {
    for size in sizes {
        *size = match size.take() {
            Some(DimSize::Sym(sym)) => resize(&sym)
                .map(DimSize::Sym)
                .or_else(|| super::shape_ops::unknown_like(&sym)),
            Some(DimSize::Derived(dim)) => Some(DimSize::derived_from(&dim)),
            None => None,
        };
    }
}
