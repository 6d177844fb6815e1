//! What operations do to tensor shapes, over symbolic sizes: broadcasting, concatenation,
//! views, transposes, slices and reductions; and which sizes an operation forces to be equal,
//! for the constraint checks. Every function answers `None` where it cannot tell: a shape it
//! does not know stays unknown.

use std::rc::Rc;

use crate::catalogue;
use crate::names;
use crate::semantic::EventKind;
use crate::semantic::events::Forcing;
use crate::semantic::symbolic::SymSize;
use crate::semantic::value::TensorInfo;
use crate::semantic::value::{DimDecl, DimSize, SizeOrigin, TensorDims, Value};
use crate::syntax::ast::comparable::ComparableExpr;
use crate::syntax::ast::{self, Expr};
use ruff_text_size::{Ranged, TextRange};

/// The result of broadcasting two shapes, and the pairs of sizes it requires to be equal.
pub(super) struct Broadcast {
    pub(super) dims: Option<TensorDims>,
    pub(super) forced: Vec<(SymSize, SymSize)>,
}

/// Broadcasts `a` against `b` from the right, as elementwise operations do.
pub(super) fn broadcast(a: &TensorDims, b: &TensorDims) -> Broadcast {
    if a == b {
        return Broadcast {
            dims: Some(a.clone()),
            forced: Vec::new(),
        };
    }
    let (Some(sizes_a), Some(sizes_b)) = (a.all_sizes(), b.all_sizes()) else {
        return Broadcast {
            dims: None,
            forced: Vec::new(),
        };
    };
    let rank = sizes_a.len().max(sizes_b.len());
    let at = |sizes: &[Option<DimSize>], index: usize| -> Option<Option<DimSize>> {
        let offset = rank - sizes.len();
        index.checked_sub(offset).map(|index| sizes[index].clone())
    };
    let mut forced = Vec::new();
    let mut result = Vec::with_capacity(rank);
    for index in 0..rank {
        let size = match (at(&sizes_a, index), at(&sizes_b, index)) {
            (None, None) => None,
            (Some(only), None) | (None, Some(only)) => only,
            (Some(left), Some(right)) => broadcast_pair(left, right, &mut forced),
        };
        result.push(size);
    }
    Broadcast {
        dims: Some(TensorDims::from_sizes(result)),
        forced,
    }
}

fn broadcast_pair(
    left: Option<DimSize>,
    right: Option<DimSize>,
    forced: &mut Vec<(SymSize, SymSize)>,
) -> Option<DimSize> {
    let is_one = |size: &DimSize| size.sym().and_then(SymSize::as_constant) == Some(1);
    match (left, right) {
        (Some(left), Some(right)) if left == right => Some(left),
        (Some(one), other) | (other, Some(one)) if is_one(&one) => other,
        (Some(DimSize::Sym(left)), Some(DimSize::Sym(right))) => {
            let result = if left.as_constant().is_some() || right.is_dynamic() && !left.is_dynamic()
            {
                left.clone()
            } else if right.as_constant().is_some() || right.as_dim().is_some() {
                right.clone()
            } else {
                left.clone()
            };
            forced.push((left, right));
            Some(DimSize::Sym(result))
        }
        // A static size the analysis does not know may be 1 (then the result is the other) or
        // not (then both are equal): the result is dynamic, in a way it cannot write.
        (Some(known), None) | (None, Some(known)) => match known.dynamic_dim() {
            Some(dim) => Some(DimSize::derived_from(dim)),
            None => Some(known),
        },
        (Some(DimSize::Derived(dim)), _) | (_, Some(DimSize::Derived(dim))) => {
            Some(DimSize::Derived(dim))
        }
        (None, None) => None,
    }
}

/// The sizes a call passes as a shape: `view(b, -1, 4)`, `view((b, -1, 4))`, `expand(n, -1)`.
fn shape_arguments<'v>(args: &'v [Value], exprs: &[Expr]) -> Option<Vec<ShapeArgument>> {
    let (values, exprs): (Vec<&'v Value>, Vec<&Expr>) = match (args, exprs) {
        (
            [Value::Tuple(items)],
            [Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })],
        ) => (items.iter().collect(), elts.iter().collect()),
        ([Value::Shape(info)], [_]) => {
            let sizes = info.dims.as_ref()?.all_sizes()?;
            return Some(sizes.into_iter().map(ShapeArgument::Size).collect());
        }
        _ => (args.iter().collect(), exprs.iter().collect()),
    };
    // `x.reshape(b, c, *spatial)`: the one starred argument stands for the values it unpacked.
    let exprs: Vec<Option<&Expr>> = match exprs.iter().filter(|e| e.is_starred_expr()).count() {
        0 => exprs.into_iter().map(Some).collect(),
        1 if values.len() + 1 >= exprs.len() => {
            let unpacked = values.len() + 1 - exprs.len();
            exprs
                .into_iter()
                .flat_map(|expr| {
                    let count = if expr.is_starred_expr() { unpacked } else { 1 };
                    std::iter::repeat_n((!expr.is_starred_expr()).then_some(expr), count)
                })
                .collect()
        }
        _ => return None,
    };
    if values.len() != exprs.len() {
        return None;
    }
    Some(
        values
            .iter()
            .zip(exprs)
            .map(|(value, expr)| {
                match expr.map_or_else(
                    || value.as_sym().and_then(|sym| sym.as_constant()),
                    names::int_literal,
                ) {
                    Some(-1) => ShapeArgument::Inferred,
                    Some(literal) => {
                        ShapeArgument::Size(Some(DimSize::Sym(SymSize::constant(literal))))
                    }
                    None => ShapeArgument::Size(match value {
                        Value::Size { sym: Some(sym), .. } => Some(DimSize::Sym((**sym).clone())),
                        Value::Number(_) => match value.as_sym() {
                            Some(sym) => Some(DimSize::Sym(sym)),
                            None => return ShapeArgument::Unknown,
                        },
                        Value::Size {
                            origin: SizeOrigin::Static,
                            ..
                        } => None,
                        Value::Size {
                            origin: SizeOrigin::Dynamic { dim, .. },
                            ..
                        } => Some(DimSize::Derived(dim.clone())),
                        _ => return ShapeArgument::Unknown,
                    }),
                }
            })
            .collect(),
    )
}

enum ShapeArgument {
    Size(Option<DimSize>),
    /// `-1`: the size that keeps the element count.
    Inferred,
    Unknown,
}

/// The first of the sizes given to an op (`args`, or one tuple or list of them, with the
/// expressions that wrote them) that is a Python number with a fractional part, and the range
/// of the argument that gives it (the call's, `call`, where the arguments are not written one
/// by one). Torch takes only ints as sizes. A whole number is never said: the analysis does
/// not tell the float `7.0` from the int `7`.
pub(super) fn fractional_size(
    args: &[Value],
    exprs: &[Expr],
    call: TextRange,
) -> Option<(f64, TextRange)> {
    let (values, exprs): (&[Value], Vec<&Expr>) = match (args, exprs) {
        (
            [Value::Tuple(items)],
            [Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })],
        ) => (items, elts.iter().collect()),
        ([Value::Tuple(items)], _) => (items, Vec::new()),
        _ => (args, exprs.iter().collect()),
    };
    let (position, value) =
        values
            .iter()
            .enumerate()
            .find_map(|(position, value)| match value {
                Value::Number(number) if number.is_finite() && number.fract() != 0.0 => {
                    Some((position, *number))
                }
                _ => None,
            })?;
    let written_one_by_one =
        exprs.len() == values.len() && !exprs.iter().any(|expr| expr.is_starred_expr());
    let range = if written_one_by_one {
        exprs[position].range()
    } else {
        call
    };
    Some((value, range))
}

/// The element count as a product of factors, when every dimension is written.
fn element_factors(sizes: &[Option<DimSize>]) -> Option<Vec<SymSize>> {
    sizes
        .iter()
        .map(|size| size.as_ref()?.sym().cloned())
        .collect()
}

/// `x.view(...)` / `x.reshape(...)`: the sizes given, with `-1` solved from the element count
/// when the other factors cancel out of it.
fn reshape(input: &TensorDims, args: &[Value], exprs: &[Expr]) -> Option<TensorDims> {
    let arguments = shape_arguments(args, exprs)?;
    let mut sizes = Vec::with_capacity(arguments.len());
    let mut inferred_at = None;
    for argument in &arguments {
        match argument {
            ShapeArgument::Size(size) => sizes.push(size.clone()),
            ShapeArgument::Inferred if inferred_at.is_none() => {
                inferred_at = Some(sizes.len());
                sizes.push(None);
            }
            _ => return None,
        }
    }
    if let Some(at) = inferred_at {
        sizes[at] = infer_size(input, &sizes, at);
    }
    Some(TensorDims::from_sizes(sizes))
}

fn infer_size(input: &TensorDims, sizes: &[Option<DimSize>], at: usize) -> Option<DimSize> {
    let mut remaining = element_factors(&input.all_sizes()?)?;
    let mut divisor: i64 = 1;
    for (index, size) in sizes.iter().enumerate() {
        if index == at {
            continue;
        }
        let sym = size.as_ref()?.sym()?;
        if let Some(constant) = sym.as_constant() {
            divisor = divisor.checked_mul(constant)?;
        } else {
            let found = remaining.iter().position(|factor| factor == sym)?;
            remaining.swap_remove(found);
        }
    }
    let mut product = SymSize::constant(1);
    let mut symbolic = 0;
    for factor in remaining {
        if factor.is_dynamic() {
            symbolic += 1;
        }
        product = product.mul(&factor).or_else(|| factor.mul(&product))?;
    }
    if symbolic > 1 || divisor <= 0 {
        return None;
    }
    let (terms, constant, one) = product.linear();
    let divides = one == 1
        && constant % divisor == 0
        && terms
            .iter()
            .all(|(_, coefficient)| coefficient % divisor == 0);
    divides
        .then(|| product.floor_div(&SymSize::constant(divisor)))
        .flatten()
        .map(DimSize::Sym)
}

/// The shape of a shape-moving call on a tensor of shape `input`: a method of the tensor, or
/// the torch function of the same name with the tensor first (its other arguments follow).
pub(super) fn method_shape(
    input: &TensorDims,
    name: &str,
    call: &ast::ExprCall,
    args: &[Value],
    exprs: &[Expr],
) -> Option<TensorDims> {
    let int_arg = |position: usize, keyword: &str| {
        argument(exprs, call, position, &[keyword]).and_then(names::int_literal)
    };
    let sizes = || input.all_sizes();
    match name {
        "view" | "reshape" => reshape(input, args, exprs),
        "transpose" | "swapaxes" => {
            let mut sizes = sizes()?;
            let first = input.index(int_arg(0, "dim0")?)?;
            let second = input.index(int_arg(1, "dim1")?)?;
            if first >= sizes.len() || second >= sizes.len() {
                return None;
            }
            sizes.swap(first, second);
            Some(TensorDims::from_sizes(sizes))
        }
        "t" => {
            let mut sizes = sizes()?;
            sizes.reverse();
            Some(TensorDims::from_sizes(sizes))
        }
        "permute" => {
            let sizes = sizes()?;
            let order: Option<Vec<i64>> = match exprs {
                [
                    Expr::Tuple(ast::ExprTuple { elts, .. })
                    | Expr::List(ast::ExprList { elts, .. }),
                ] => elts.iter().map(names::int_literal).collect(),
                exprs => exprs.iter().map(names::int_literal).collect(),
            };
            let order = order?;
            if order.len() != sizes.len() {
                return None;
            }
            let permuted: Option<Vec<Option<DimSize>>> = order
                .iter()
                .map(|position| sizes.get(input.index(*position)?).cloned())
                .collect();
            Some(TensorDims::from_sizes(permuted?))
        }
        "unsqueeze" => {
            let mut sizes = sizes()?;
            let position = int_arg(0, "dim")?;
            let index = if position < 0 {
                usize::try_from(i64::try_from(sizes.len()).ok()? + 1 + position).ok()?
            } else {
                usize::try_from(position).ok()?
            };
            if index > sizes.len() {
                return None;
            }
            sizes.insert(index, Some(DimSize::Sym(SymSize::constant(1))));
            Some(TensorDims::from_sizes(sizes))
        }
        "squeeze" => {
            let mut sizes = sizes()?;
            if let Some(position) = int_arg(0, "dim") {
                let index = input.index(position)?;
                let size = sizes.get(index)?.as_ref()?.sym()?.as_constant()?;
                if size == 1 {
                    sizes.remove(index);
                }
            } else {
                // Every size must be known to tell which are 1; a dynamic one never is.
                if sizes.iter().any(|size| {
                    size.as_ref()
                        .and_then(DimSize::sym)
                        .is_none_or(|sym| sym.as_constant().is_none() && !sym.is_dynamic())
                }) {
                    return None;
                }
                sizes.retain(|size| {
                    size.as_ref()
                        .and_then(DimSize::sym)
                        .and_then(SymSize::as_constant)
                        != Some(1)
                });
            }
            Some(TensorDims::from_sizes(sizes))
        }
        "flatten" => {
            let sizes = sizes()?;
            if sizes.is_empty() {
                return Some(TensorDims::from_sizes(vec![Some(DimSize::Sym(
                    SymSize::constant(1),
                ))]));
            }
            let start = input.index(int_arg(0, "start_dim").unwrap_or(0))?;
            let end = input.index(int_arg(1, "end_dim").unwrap_or(-1))?;
            if start > end || end >= sizes.len() {
                return None;
            }
            let merged = product(&sizes[start..=end]);
            let mut result: Vec<Option<DimSize>> = sizes[..start].to_vec();
            result.push(merged);
            result.extend_from_slice(&sizes[end + 1..]);
            Some(TensorDims::from_sizes(result))
        }
        // `x.repeat(a, b, c)`: each size times its count, leading counts as new dimensions.
        "repeat" => {
            let sizes = sizes()?;
            let arguments = shape_arguments(args, exprs)?;
            if arguments.len() < sizes.len() {
                return None;
            }
            let offset = arguments.len() - sizes.len();
            let repeated: Vec<Option<DimSize>> = arguments
                .into_iter()
                .enumerate()
                .map(|(index, argument)| {
                    let ShapeArgument::Size(Some(DimSize::Sym(count))) = argument else {
                        return None;
                    };
                    match index.checked_sub(offset) {
                        None => Some(DimSize::Sym(count)),
                        Some(at) => match sizes[at].as_ref()? {
                            DimSize::Sym(size) => size.mul(&count).map(DimSize::Sym),
                            DimSize::Derived(dim) if count.as_constant() == Some(1) => {
                                Some(DimSize::Derived(dim.clone()))
                            }
                            DimSize::Derived(dim) => Some(DimSize::derived_from(dim)),
                        },
                    }
                })
                .collect();
            Some(TensorDims::from_sizes(repeated))
        }
        "expand" => {
            let sizes = sizes()?;
            let arguments = shape_arguments(args, exprs)?;
            if arguments.len() < sizes.len() {
                return None;
            }
            let offset = arguments.len() - sizes.len();
            let expanded: Option<Vec<Option<DimSize>>> = arguments
                .into_iter()
                .enumerate()
                .map(|(index, argument)| match argument {
                    ShapeArgument::Inferred => {
                        index.checked_sub(offset).map(|at| sizes[at].clone())
                    }
                    ShapeArgument::Size(size) => Some(size),
                    ShapeArgument::Unknown => None,
                })
                .collect();
            Some(TensorDims::from_sizes(expanded?))
        }
        _ => reduction(input, name, call, exprs),
    }
}

/// The product of sizes, when at most one of them is dynamic.
fn product(sizes: &[Option<DimSize>]) -> Option<DimSize> {
    // One size is itself (a derived one keeps its identity).
    if let [size] = sizes {
        return size.clone();
    }
    let mut total = SymSize::constant(1);
    let mut derived = None;
    for size in sizes {
        match size.as_ref()? {
            DimSize::Sym(sym) => match total.mul(sym) {
                Some(product) => total = product,
                None => derived = sym.dims().next().or_else(|| total.dims().next()).cloned(),
            },
            DimSize::Derived(dim) => derived = Some(dim.clone()),
        }
    }
    match derived {
        Some(dim) => Some(DimSize::derived_from(&dim)),
        None => Some(DimSize::Sym(total)),
    }
}

/// A reduction over `dim` (every dimension without one), keeping reduced dimensions as 1 under
/// `keepdim=True`.
fn reduction(
    input: &TensorDims,
    name: &str,
    call: &ast::ExprCall,
    exprs: &[Expr],
) -> Option<TensorDims> {
    let catalogue::ShapeRule::Reduction {
        indices_with_dim, ..
    } = catalogue::shape_rule(name)?
    else {
        return None;
    };
    let sizes = input.all_sizes()?;
    let keepdim = call
        .arguments
        .find_keyword("keepdim")
        .map(|keyword| &keyword.value)
        .or_else(|| exprs.get(1))
        .is_some_and(|value| matches!(value, Expr::BooleanLiteral(literal) if literal.value));
    let dim_expr = call
        .arguments
        .find_keyword("dim")
        .map(|keyword| &keyword.value)
        .or_else(|| exprs.first().filter(|_| name != "norm"));
    let reduced: Vec<usize> = match dim_expr {
        None => (0..sizes.len()).collect(),
        Some(Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })) => {
            elts.iter()
                .map(|elt| input.index(names::int_literal(elt)?))
                .collect::<Option<_>>()?
        }
        Some(expr) => vec![input.index(names::int_literal(expr)?)?],
    };
    // `x.max(dim=1)` is a `(values, indices)` pair, not one tensor.
    if indices_with_dim && dim_expr.is_some() {
        return None;
    }
    if dim_expr.is_none() && !keepdim {
        return Some(TensorDims::from_sizes(Vec::new()));
    }
    let one = || Some(DimSize::Sym(SymSize::constant(1)));
    let result = sizes
        .into_iter()
        .enumerate()
        .filter_map(|(index, size)| match (reduced.contains(&index), keepdim) {
            (false, _) => Some(size),
            (true, true) => Some(one()),
            (true, false) => None,
        })
        .collect();
    Some(TensorDims::from_sizes(result))
}

/// `torch.cat(tensors, dim)`: the sizes along `dim` add up; the others must agree (the first
/// tensor's are kept). `torch.stack` inserts a new dimension of the count instead.
pub(super) fn concatenate(
    parts: &[&TensorDims],
    dim: i64,
    stack: bool,
    forced: &mut Vec<(SymSize, SymSize)>,
) -> Option<TensorDims> {
    let first = parts.first()?;
    let sizes = first.all_sizes()?;
    if stack {
        let count = i64::try_from(parts.len()).ok()?;
        let rank = i64::try_from(sizes.len()).ok()?;
        let index = usize::try_from(if dim < 0 { rank + 1 + dim } else { dim }).ok()?;
        if index > sizes.len()
            || parts
                .iter()
                .any(|part| part.all_sizes().is_none_or(|other| other != sizes))
        {
            return None;
        }
        let mut sizes = sizes;
        sizes.insert(index, Some(DimSize::Sym(SymSize::constant(count))));
        return Some(TensorDims::from_sizes(sizes));
    }
    let index = first.index(dim)?;
    if index >= sizes.len() {
        return None;
    }
    // The other dimensions must agree whether or not the concatenated one is known (a
    // channel count the analysis cannot read leaves the spatial sizes it follows).
    let mut total = sizes[index].as_ref().and_then(DimSize::sym).cloned();
    for part in &parts[1..] {
        let other = part.all_sizes()?;
        if other.len() != sizes.len() {
            return None;
        }
        for (at, (mine, theirs)) in sizes.iter().zip(&other).enumerate() {
            if at == index {
                continue;
            }
            if let (Some(DimSize::Sym(mine)), Some(DimSize::Sym(theirs))) = (mine, theirs) {
                if mine != theirs {
                    forced.push((mine.clone(), theirs.clone()));
                }
            }
        }
        total = total
            .zip(other[index].as_ref().and_then(DimSize::sym))
            .and_then(|(total, size)| total.add(size));
    }
    let mut sizes = sizes;
    sizes[index] = total.map(DimSize::Sym);
    Some(TensorDims::from_sizes(sizes))
}

/// `a @ b` / `torch.matmul(a, b)`: the contracted sizes must agree; batch dimensions broadcast.
pub(super) fn matmul(
    a: &TensorDims,
    b: &TensorDims,
    forced: &mut Vec<(SymSize, SymSize)>,
) -> Option<TensorDims> {
    let (left, right) = (a.all_sizes()?, b.all_sizes()?);
    if left.len() < 2 || right.len() < 2 {
        return None;
    }
    let (left_batch, left_matrix) = left.split_at(left.len() - 2);
    let (right_batch, right_matrix) = right.split_at(right.len() - 2);
    if let (Some(DimSize::Sym(inner_left)), Some(DimSize::Sym(inner_right))) =
        (&left_matrix[1], &right_matrix[0])
    {
        if inner_left != inner_right {
            forced.push((inner_left.clone(), inner_right.clone()));
        }
    }
    let batch = broadcast(
        &TensorDims::from_sizes(left_batch.to_vec()),
        &TensorDims::from_sizes(right_batch.to_vec()),
    );
    forced.extend(batch.forced);
    let mut sizes = batch.dims?.all_sizes()?;
    sizes.push(left_matrix[0].clone());
    sizes.push(right_matrix[1].clone());
    Some(TensorDims::from_sizes(sizes))
}

/// What slicing asks of the sizes it slices, beside the view's shape.
#[derive(Default)]
pub(super) struct SliceGuards {
    /// The dynamic sizes a slice with a step makes (non-strict export guards each `!= 1`).
    pub(super) strided: Vec<SymSize>,
    /// `(size, length)` of each window taken at an offset computed from sizes
    /// (`skip[:, :, dy:dy + t]`): the exporter guards that it stays within `size`.
    pub(super) within: Vec<(SymSize, SymSize)>,
}

/// `x[...]` with integers, slices, `None` and `...`: the shape of the view. `None` for an index
/// by a tensor (a gather or a mask), which the caller handles. What the slices guard goes to
/// `guards`.
pub(super) fn index_shape(
    input: &TensorDims,
    slice: &Expr,
    bound: &mut dyn FnMut(&Expr) -> Value,
    guards: &mut SliceGuards,
) -> Option<TensorDims> {
    let sizes = input.all_sizes()?;
    let items: Vec<&Expr> = match slice {
        Expr::Tuple(tuple) => tuple.elts.iter().collect(),
        single => vec![single],
    };
    let consumed = items
        .iter()
        .filter(|item| !matches!(item, Expr::NoneLiteral(_) | Expr::EllipsisLiteral(_)))
        .count();
    if consumed > sizes.len() {
        return None;
    }
    let mut result = Vec::new();
    let mut position = 0;
    for item in items {
        match item {
            Expr::NoneLiteral(_) => result.push(Some(DimSize::Sym(SymSize::constant(1)))),
            Expr::EllipsisLiteral(_) => {
                let skipped = sizes.len() - consumed;
                result.extend_from_slice(&sizes[position..position + skipped]);
                position += skipped;
            }
            Expr::Slice(range) => {
                let size = sizes.get(position)?.clone();
                let sliced = slice_size(size, range, bound, &mut guards.within)?.0;
                if let (Some(DimSize::Sym(sym)), Some(_)) = (&sliced, &range.step) {
                    if sym.is_dynamic() && sym.linear().2 > 1 {
                        guards.strided.push(sym.clone());
                    }
                }
                result.push(sliced);
                position += 1;
            }
            item if names::int_literal(item).is_some() => position += 1,
            _ => return None,
        }
    }
    result.extend_from_slice(sizes.get(position..)?);
    Some(TensorDims::from_sizes(result))
}

/// The length of `start:stop:step` over a dimension of `size`; `Some(None)` is a static size
/// the analysis does not know.
/// The size of a sliced dimension: known or dynamic (`Some`), or static of a size the analysis
/// does not know (`None`).
struct Sliced(Option<DimSize>);

fn slice_size(
    size: Option<DimSize>,
    range: &ast::ExprSlice,
    bound: &mut dyn FnMut(&Expr) -> Value,
    within: &mut Vec<(SymSize, SymSize)>,
) -> Option<Sliced> {
    let stride = match &range.step {
        None => 1,
        Some(step) => names::int_literal(step).filter(|step| *step > 0)?,
    };
    let sym = match size {
        Some(DimSize::Sym(sym)) => sym,
        // A size the analysis cannot write: the whole of it, up to itself (`values[:, :L]` with
        // `L` read from it), or up to a dynamic size is what it was or that size; any other
        // slice is another size of the same kind.
        Some(DimSize::Derived(dim)) => {
            let from_start = range.lower.is_none() && range.step.is_none();
            let upper = range.upper.as_deref().map(&mut *bound);
            return Some(Sliced(Some(match upper {
                None if from_start => DimSize::Derived(dim),
                Some(Value::Size {
                    origin: SizeOrigin::Dynamic { dim: other, .. },
                    ..
                }) if from_start && DimDecl::same_derived(&dim, &other) => DimSize::Derived(dim),
                Some(Value::Size { sym: Some(end), .. }) if from_start && end.is_dynamic() => {
                    DimSize::Sym((*end).clone())
                }
                _ => DimSize::derived_from(&dim),
            })));
        }
        // A static size the analysis does not know leaves one.
        None => return Some(Sliced(None)),
    };
    let start = match range.lower.as_deref().map(names::int_literal) {
        None => 0,
        Some(Some(start)) => start,
        Some(None) => {
            let window = (stride == 1).then(|| offset_window(range, bound)).flatten();
            return Some(Sliced(match window {
                Some(length) => {
                    if sym.is_dynamic() {
                        within.push((sym, length.clone()));
                    }
                    Some(DimSize::Sym(length))
                }
                None => unknown_like(&sym),
            }));
        }
    };
    let end = match &range.upper {
        None => None,
        Some(upper) => match names::int_literal(upper) {
            Some(end) => Some(SymSize::constant(end)),
            None => match bound(upper).as_sym() {
                Some(end) => Some(end),
                None => return Some(Sliced(unknown_like(&sym))),
            },
        },
    };
    let length = match (sym.as_constant(), &end) {
        (Some(total), end) => {
            let end = match end {
                None => total,
                Some(end) => match end.as_constant() {
                    Some(end) if end < 0 => (total + end).max(0),
                    Some(end) => end.min(total),
                    // Up to a dynamic size: at most `total`, which the exporter guards.
                    None => return Some(Sliced(Some(DimSize::Sym(end.clone())))),
                },
            };
            let start = if start < 0 {
                (total + start).max(0)
            } else {
                start.min(total)
            };
            SymSize::constant((end - start).max(0))
        }
        (None, None) if start >= 0 => sym.sub(&SymSize::constant(start))?,
        // `x[:, :n]` with `n` a dynamic size: `n` (the exporter guards `n <= size`).
        (None, Some(end)) if start == 0 && end.is_dynamic() => end.clone(),
        // A literal bound on a dynamic size is `min(bound, size)`, a negative start
        // `min(-start, size)`: not linear.
        _ => return Some(Sliced(unknown_like(&sym))),
    };
    let length = if stride == 1 {
        length
    } else {
        length
            .add(&SymSize::constant(stride - 1))?
            .floor_div(&SymSize::constant(stride))?
    };
    Some(Sliced(Some(DimSize::Sym(length))))
}

/// The length of `start:start + length`, a window at an offset the analysis need not know
/// (`dy:dy + t`, a centre crop): `length`, as long as the window stays within the dimension,
/// which the exporter guards.
fn offset_window(range: &ast::ExprSlice, bound: &mut dyn FnMut(&Expr) -> Value) -> Option<SymSize> {
    let start = ComparableExpr::from(range.lower.as_deref()?);
    let Expr::BinOp(ast::ExprBinOp {
        left,
        op: ast::Operator::Add,
        right,
        ..
    }) = range.upper.as_deref()?
    else {
        return None;
    };
    let length = if ComparableExpr::from(left.as_ref()) == start {
        right
    } else if ComparableExpr::from(right.as_ref()) == start {
        left
    } else {
        return None;
    };
    names::int_literal(length)
        .map(SymSize::constant)
        .or_else(|| bound(length).as_sym())
}

/// The positional argument at `position` or the keyword `keyword` of a call (arguments after
/// the tensor itself, as the method form passes them).
pub(super) fn argument<'e>(
    exprs: &'e [Expr],
    call: &'e ast::ExprCall,
    position: usize,
    keywords: &[&str],
) -> Option<&'e Expr> {
    exprs.get(position).or_else(|| {
        keywords
            .iter()
            .find_map(|keyword| call.arguments.find_keyword(keyword))
            .map(|keyword| &keyword.value)
    })
}

/// The parts `chunk`, `split` and `unbind` cut `input` into, each with its shape, when their
/// number and sizes are known: the dimension cut has a literal size, the counts are literal or
/// numbers the program computes (`[config.dt_rank, config.d_state]`). `exprs` are the call's
/// positional arguments after the tensor, `values` what they evaluated to, and `keywords` what
/// its keyword arguments did (`split_size=[self.h, self.h]`).
pub(super) fn split_parts(
    input: &TensorDims,
    name: &str,
    call: &ast::ExprCall,
    exprs: &[Expr],
    values: &[Value],
    keywords: &[(String, Value)],
) -> Option<Vec<TensorDims>> {
    // The most parts followed: beyond that the parts are one unknown tensor each.
    const MOST_PARTS: i64 = 64;
    // A count or size: written, or the first positional argument's value.
    let number = |expr: &Expr, value: Option<&Value>| {
        names::int_literal(expr).or_else(|| value?.as_sym()?.as_constant())
    };
    // The count or sizes: the first positional argument, or the keyword that gives them.
    let first_value = values.first().filter(|_| !exprs.is_empty()).or_else(|| {
        keywords
            .iter()
            .find(|(keyword, _)| {
                matches!(
                    keyword.as_str(),
                    "chunks" | "split_size_or_sections" | "split_size"
                )
            })
            .map(|(_, value)| value)
    });
    let sizes = input.all_sizes()?;
    let dim_position = usize::from(name != "unbind");
    let dim = argument(exprs, call, dim_position, &["dim"]).map_or(Some(0), names::int_literal)?;
    let index = input.index(dim)?;
    let length = input.literal(index)?;
    let parts: Vec<Option<i64>> = match name {
        "unbind" => {
            if length > MOST_PARTS {
                return None;
            }
            let mut rest = sizes;
            rest.remove(index);
            return Some(
                (0..length)
                    .map(|_| TensorDims::from_sizes(rest.clone()))
                    .collect(),
            );
        }
        "chunk" => {
            let chunks = number(argument(exprs, call, 0, &["chunks"])?, first_value)?;
            if chunks <= 0 || length == 0 {
                return None;
            }
            let each = (length + chunks - 1) / chunks;
            let count = (length + each - 1) / each;
            (0..count)
                .map(|part| Some(each.min(length - part * each)))
                .collect()
        }
        "split" => {
            let given = argument(exprs, call, 0, &["split_size_or_sections", "split_size"])?;
            // The sections, written (`[4, 16]`) or held in a list the program built.
            let sections: Option<Vec<i64>> = match (given, first_value) {
                (
                    Expr::List(ast::ExprList { elts, .. })
                    | Expr::Tuple(ast::ExprTuple { elts, .. }),
                    value,
                ) => {
                    let items = match value {
                        Some(Value::Tuple(items)) if items.len() == elts.len() => Some(items),
                        _ => None,
                    };
                    elts.iter()
                        .enumerate()
                        .map(|(at, expr)| number(expr, items.and_then(|items| items.get(at))))
                        .collect()
                }
                (_, Some(Value::Tuple(items))) => items
                    .iter()
                    .map(|item| item.as_sym()?.as_constant())
                    .collect(),
                _ => None,
            };
            if let Some(sections) = sections {
                if sections.iter().sum::<i64>() != length {
                    return None;
                }
                sections.into_iter().map(Some).collect()
            } else {
                let each = number(given, first_value)?;
                if each <= 0 || length == 0 {
                    return None;
                }
                let count = (length + each - 1) / each;
                (0..count)
                    .map(|part| Some(each.min(length - part * each)))
                    .collect()
            }
        }
        _ => return None,
    };
    if parts.len() as i64 > MOST_PARTS {
        return None;
    }
    Some(
        parts
            .into_iter()
            .map(|part| {
                let mut sizes = sizes.clone();
                sizes[index] = part.map(|size| DimSize::Sym(SymSize::constant(size)));
                TensorDims::from_sizes(sizes)
            })
            .collect(),
    )
}

/// `torch.einsum("bqd,bkd->bqk", q, k)`: each output letter takes its size from the first
/// operand that has it. Equations with `...` are not followed.
pub(super) fn einsum(equation: &str, operands: &[&TensorDims]) -> Option<TensorDims> {
    let equation: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    if equation.contains("...") {
        return None;
    }
    let (inputs, output) = match equation.split_once("->") {
        Some((inputs, output)) => (inputs, Some(output.to_owned())),
        None => (equation.as_str(), None),
    };
    let terms: Vec<&str> = inputs.split(',').collect();
    if terms.len() != operands.len() {
        return None;
    }
    let mut letters: Vec<(char, Option<DimSize>, usize)> = Vec::new();
    for (term, operand) in terms.iter().zip(operands) {
        let sizes = operand.all_sizes()?;
        if sizes.len() != term.chars().count() {
            return None;
        }
        for (letter, size) in term.chars().zip(sizes) {
            match letters.iter_mut().find(|(known, ..)| *known == letter) {
                Some((_, _, count)) => *count += 1,
                None => letters.push((letter, size, 1)),
            }
        }
    }
    // Without `->`, the output is the letters that appear once, in alphabetical order.
    let output = output.unwrap_or_else(|| {
        let mut once: Vec<char> = letters
            .iter()
            .filter(|(_, _, count)| *count == 1)
            .map(|(letter, ..)| *letter)
            .collect();
        once.sort_unstable();
        once.into_iter().collect()
    });
    let sizes: Option<Vec<Option<DimSize>>> = output
        .chars()
        .map(|letter| {
            letters
                .iter()
                .find(|(known, ..)| *known == letter)
                .map(|(_, size, _)| size.clone())
        })
        .collect();
    Some(TensorDims::from_sizes(sizes?))
}

/// `F.interpolate(x, size=..., scale_factor=...)`: the first two dimensions kept, each spatial
/// one the given size, or scaled by an integer factor.
pub(super) fn interpolate(
    input: &TensorDims,
    call: &ast::ExprCall,
    args: &[Value],
    exprs: &[Expr],
) -> Option<TensorDims> {
    let mut sizes = input.all_sizes()?;
    let spatial = sizes.len().checked_sub(2).filter(|spatial| *spatial >= 1)?;
    let size_value = |expr: &Expr, value: Option<&Value>| -> Option<Option<DimSize>> {
        match names::int_literal(expr) {
            Some(size) => Some(Some(DimSize::Sym(SymSize::constant(size)))),
            None => value?.as_sym().map(|sym| Some(DimSize::Sym(sym))),
        }
    };
    if let Some(expr) =
        argument(exprs, call, 0, &["size"]).filter(|expr| !expr.is_none_literal_expr())
    {
        let value = exprs.first().and_then(|_| args.first());
        let targets: Vec<Option<DimSize>> = match expr {
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let items: Option<Vec<&Value>> = match value {
                    Some(Value::Tuple(items)) => Some(items.iter().collect()),
                    _ => None,
                };
                let sizes: Option<Vec<Option<DimSize>>> = elts
                    .iter()
                    .enumerate()
                    .map(|(position, elt)| {
                        size_value(
                            elt,
                            items
                                .as_ref()
                                .and_then(|items| items.get(position).copied()),
                        )
                    })
                    .collect();
                sizes?
            }
            expr => vec![size_value(expr, value)?; spatial],
        };
        if targets.len() != spatial {
            return None;
        }
        for (size, target) in sizes[2..].iter_mut().zip(targets) {
            *size = target;
        }
        return Some(TensorDims::from_sizes(sizes));
    }
    let factor = argument(exprs, call, 1, &["scale_factor"])?;
    let factor = names::int_literal(factor).or_else(|| match factor {
        Expr::NumberLiteral(ast::ExprNumberLiteral {
            value: ast::Number::Float(value),
            ..
        }) if value.fract() == 0.0 && *value >= 1.0 && *value <= 1024.0 => {
            // An integral float: `L * 2.0` floors to `2 * L`.
            #[allow(clippy::cast_possible_truncation)]
            Some(*value as i64)
        }
        _ => None,
    });
    for size in &mut sizes[2..] {
        *size = match (size.take(), factor) {
            (Some(DimSize::Sym(sym)), Some(factor)) => {
                sym.mul(&SymSize::constant(factor)).map(DimSize::Sym)
            }
            (Some(DimSize::Sym(sym)), None) => unknown_like(&sym),
            (Some(DimSize::Derived(dim)), _) => Some(DimSize::derived_from(&dim)),
            (None, _) => None,
        };
    }
    Some(TensorDims::from_sizes(sizes))
}

/// `F.pad(x, (left, right, top, bottom, ...))`: the last dimensions grow by their literal
/// padding, pairs from the last dimension backwards.
pub(super) fn pad(input: &TensorDims, call: &ast::ExprCall, exprs: &[Expr]) -> Option<TensorDims> {
    let mut sizes = input.all_sizes()?;
    let (Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })) =
        argument(exprs, call, 0, &["pad"])?
    else {
        return None;
    };
    let amounts: Option<Vec<i64>> = elts.iter().map(names::int_literal).collect();
    let amounts = amounts?;
    if amounts.len() % 2 != 0 || amounts.len() / 2 > sizes.len() {
        return None;
    }
    for (pair, amount) in amounts.chunks(2).enumerate() {
        let index = sizes.len() - 1 - pair;
        let grown = amount[0] + amount[1];
        sizes[index] = match sizes[index].take() {
            Some(DimSize::Sym(sym)) => match sym.add(&SymSize::constant(grown)) {
                Some(sum) => Some(DimSize::Sym(sum)),
                None => unknown_like(&sym),
            },
            Some(DimSize::Derived(dim)) if grown != 0 => Some(DimSize::derived_from(&dim)),
            other => other,
        };
    }
    Some(TensorDims::from_sizes(sizes))
}

/// A size computed from `sym` that the expressions cannot write: static if `sym` is.
pub(super) fn unknown_like(sym: &SymSize) -> Option<DimSize> {
    sym.dims().next().map(DimSize::derived_from)
}

// -------------------------------------------------------------------------------------------
// The interpreter's side: shapes of the values it computes, and the events of forced sizes.

impl super::Interpreter<'_, '_> {
    /// Records what `forced` requires, on the operation at `range`.
    pub(super) fn record_forced(
        &mut self,
        forced: Vec<(SymSize, SymSize)>,
        by: &super::Forcing,
        range: ruff_text_size::TextRange,
    ) {
        for event in forced_events(forced, by) {
            self.record(event, range);
        }
    }

    /// The shape of `a <op> b` on two tensors: their broadcast, or their matrix product.
    pub(super) fn combine_shapes(
        &mut self,
        a: &super::TensorInfo,
        b: &super::TensorInfo,
        op: ast::Operator,
        range: ruff_text_size::TextRange,
    ) -> Option<Rc<TensorDims>> {
        let (Some(left), Some(right)) = (&a.dims, &b.dims) else {
            return None;
        };
        if op == ast::Operator::MatMult {
            let mut forced = Vec::new();
            let dims = matmul(left, right, &mut forced);
            self.record_forced(forced, &super::Forcing::Contraction, range);
            return dims.map(Rc::new);
        }
        let Broadcast { dims, forced } = broadcast(left, right);
        self.record_forced(forced, &super::Forcing::Broadcast, range);
        dims.map(Rc::new)
    }

    /// The shape of `tensor[slice]`, following slice bounds that are sizes (`:x.shape[1]`).
    /// The shape of a subscript at `range` of a tensor of shape `dims`; a step slice whose
    /// size the declared ranges allow to be 1 is an event (non-strict export guards it).
    pub(super) fn index_dims(
        &mut self,
        dims: &TensorDims,
        slice: &Expr,
        range: ruff_text_size::TextRange,
        env: &mut super::Env,
    ) -> Option<TensorDims> {
        // The bounds were evaluated already, with their events: read them again silently.
        let emit = std::mem::replace(&mut self.emit, false);
        let mut guards = SliceGuards::default();
        let dims = index_shape(dims, slice, &mut |bound| self.eval(bound, env), &mut guards);
        self.emit = emit;
        for size in guards.strided {
            if size.range().0.is_some_and(|low| low <= 1) && !size.is_automatic() {
                self.record(EventKind::StridedSlice { size }, range);
            }
        }
        for (size, length) in guards.within {
            if size != length && !size.is_automatic() && !length.is_automatic() {
                self.record(EventKind::SliceWithin { size, length }, range);
            }
        }
        dims
    }
}

/// What cutting a `ShapeVar` of `@dynamic_spec` into parts does (measured with torch 2.15,
/// strict and not).
pub(super) enum UnbackedCut {
    /// `chunk(n)`, `split(n)`, `unbind`, `tensor_split(n)` along it: torch decides how many parts
    /// there are from its size, a guard on an unbacked symbol ("Could not guard on
    /// data-dependent expression Eq(u0, 0)"), and export fails.
    Counted(Rc<crate::semantic::value::DimDecl>),
    /// `split([4, 4])` along it: the sections must add up to its size, a runtime assert that
    /// narrows its range to that one size (`VR[8, 8]`); export succeeds (PT406).
    Sections(Rc<crate::semantic::value::DimDecl>, i64),
}

/// What `chunk`, `split`, `unbind` or `tensor_split` does to the `ShapeVar` it cuts `input`
/// along, when the count, size or sections of the parts are numbers. A cut along a static
/// dimension exports, and a count the analysis cannot read says nothing: both are `None`.
pub(super) fn unbacked_cut(
    input: &TensorDims,
    name: &str,
    call: &ast::ExprCall,
    exprs: &[Expr],
    values: &[Value],
) -> Option<UnbackedCut> {
    let dim_position = usize::from(name != "unbind");
    let dim = argument(exprs, call, dim_position, &["dim"]).map_or(Some(0), names::int_literal)?;
    let size = input.size(input.index(dim)?)?;
    let unbacked = match size {
        DimSize::Sym(sym) => sym.dims().find(|dim| dim.unbacked)?,
        DimSize::Derived(dim) => Some(dim).filter(|dim| dim.unbacked)?,
    };
    let count_keywords: &[&str] = match name {
        "unbind" => return Some(UnbackedCut::Counted(unbacked.clone())),
        "chunk" => &["chunks"],
        "split" => &["split_size_or_sections", "split_size"],
        "tensor_split" => &["sections", "indices_or_sections"],
        _ => return None,
    };
    let given = argument(exprs, call, 0, count_keywords)?;
    let first_value = values.first().filter(|_| !exprs.is_empty());
    if let (
        "split",
        Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }),
    ) = (name, given)
    {
        // The sections fix the size only where it is the `ShapeVar` itself (`B`, not `2*B`).
        let (terms, constant, divisor) = size.sym()?.linear();
        let itself = matches!(terms, [(_, 1)]) && constant == 0 && divisor == 1;
        let total: Option<i64> = elts.iter().map(names::int_literal).sum();
        return total
            .filter(|_| itself)
            .map(|total| UnbackedCut::Sections(unbacked.clone(), total));
    }
    let number = names::int_literal(given).or_else(|| first_value?.as_sym()?.as_constant());
    number.map(|_| UnbackedCut::Counted(unbacked.clone()))
}

/// `x.reshape(-1, 4)` on `x: [batch, 2]`: the element count `2 * batch` must divide by 4, a guard
/// on the dynamic dimension unless its coefficient already does. Returns the dimension and the
/// multiple it would have to be.
pub(super) fn reshape_guard(info: &TensorInfo, args: &[Expr]) -> Option<EventKind> {
    let dims = info.dims.as_ref()?;
    let rank = dims.rank?;
    let mut dynamic = dims.dynamic();
    let (Some((dynamic_index, size)), None) = (dynamic.next(), dynamic.next()) else {
        return None;
    };
    let dim = size.sym()?.as_dim()?;
    if dim.automatic && !dim.is_auto() && !dim.is_dynamic_hint() {
        return None;
    }
    let mut coefficient: i64 = 1;
    for index in (0..rank).filter(|index| *index != dynamic_index) {
        coefficient = coefficient.checked_mul(dims.literal(index)?)?;
    }
    let targets: Vec<&Expr> = match args {
        [Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })] => {
            elts.iter().collect()
        }
        args => args.iter().collect(),
    };
    let sizes: Option<Vec<i64>> = targets
        .iter()
        .map(|target| names::int_literal(target))
        .collect();
    let sizes = sizes?;
    let inferred = sizes.iter().filter(|size| **size == -1).count();
    if sizes.is_empty() || inferred > 1 || sizes.iter().any(|size| *size == 0 || *size < -1) {
        return None;
    }
    let fixed: i64 = sizes
        .iter()
        .filter(|size| **size > 0)
        .try_fold(1_i64, |product, size| product.checked_mul(*size))?;
    // Literal sizes alone fix the element count, so the dimension must be one size.
    if inferred == 0 {
        return (fixed % coefficient == 0).then(|| EventKind::DimFixed {
            dim: dim.clone(),
            size: fixed / coefficient,
        });
    }
    // `Dim.AUTO`, `Dim.DYNAMIC` and `ShapeVar` dimensions get a divisibility refined or
    // checked at run time, not a failure.
    if dim.automatic || dim.unbacked {
        return None;
    }
    if coefficient % fixed != 0 {
        let multiple = fixed / gcd(coefficient, fixed);
        return (multiple > 1).then(|| EventKind::ReshapeGuard {
            dim: dim.clone(),
            multiple,
        });
    }
    None
}

/// A dimension that a broadcast against a literal size fixes with no relation to report:
/// `Dim.AUTO` (made static), a `ShapeVar` (its range narrowed) or `Dim.DYNAMIC` (a failure).
fn fixed_by_literal(dim: &DimDecl) -> bool {
    dim.fixed_silently() || dim.is_dynamic_hint()
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// The sizes an operation requires equal, as the events the exporter's checks would fail with:
/// a `Dim` against another `Dim` or a literal, a relation over several, or a size that may be 1.
fn forced_events(forced: Vec<(SymSize, SymSize)>, by: &Forcing) -> Vec<EventKind> {
    let mut events = Vec::new();
    for (left, right) in forced {
        // One of those dimensions against a literal size: fixed to it, with no error.
        let fixed = match (left.as_dim(), right.as_dim()) {
            (Some(dim), _) if fixed_by_literal(dim) => right.as_constant().map(|size| (dim, size)),
            (_, Some(dim)) if fixed_by_literal(dim) => left.as_constant().map(|size| (dim, size)),
            _ => None,
        };
        if let Some((dim, size)) = fixed {
            let event = EventKind::DimFixed {
                dim: dim.clone(),
                size,
            };
            if !events.contains(&event) {
                events.push(event);
            }
            continue;
        }
        if left.is_automatic()
            || right.is_automatic()
            || (!left.is_dynamic() && !right.is_dynamic())
        {
            continue;
        }
        let floor_division = |size: &SymSize| size.linear().2 > 1;
        if floor_division(&left) || floor_division(&right) {
            // Equal only at some sizes (`2*(h//2) == h` at even ones): a guard on the `Dim`.
            if crate::semantic::symbolic::periodic_relation(&left, &right).is_some() {
                let event = EventKind::SizeEquality {
                    left: left.clone(),
                    right: right.clone(),
                    by: by.clone(),
                };
                if !events.contains(&event) {
                    events.push(event);
                }
            }
            // The relation is not linear: the exporter keeps it as a runtime assertion. But a
            // broadcast size it cannot rule out being 1 gets a guard `!= 1`.
            if *by == Forcing::Broadcast {
                for (size, other) in [(&left, &right), (&right, &left)] {
                    if floor_division(size) && size.range().0.is_some_and(|low| low <= 1) {
                        events.push(EventKind::MaybeOne {
                            size: size.clone(),
                            other: other.clone(),
                        });
                    }
                }
            }
            continue;
        }
        let event = match (
            left.as_dim(),
            right.as_dim(),
            left.as_constant(),
            right.as_constant(),
        ) {
            (Some(a), Some(b), _, _) if *by == Forcing::Broadcast => EventKind::DimMismatch {
                left: a.clone(),
                right: b.clone(),
            },
            (Some(dim), _, _, Some(size)) | (_, Some(dim), Some(size), _)
                if *by == Forcing::Broadcast =>
            {
                EventKind::DimSpecialized {
                    dim: dim.clone(),
                    size,
                }
            }
            _ => EventKind::SizeEquality {
                left,
                right,
                by: by.clone(),
            },
        };
        if !events.contains(&event) {
            events.push(event);
        }
    }
    events
}
