//! The abstract values the interpreter tracks: what a Python expression in traced code is.

use std::rc::Rc;

use ruff_text_size::TextRange;

use super::symbolic::SymSize;

/// A closed range of numbers a value may take; `None` ends are unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Interval {
    pub(crate) low: Option<f64>,
    pub(crate) high: Option<f64>,
}

impl Interval {
    pub(crate) fn at_least(low: f64) -> Self {
        Self {
            low: Some(low),
            high: None,
        }
    }

    pub(crate) fn intersect(self, other: Interval) -> Interval {
        let low = match (self.low, other.low) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let high = match (self.high, other.high) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Interval { low, high }
    }

    /// Whether `value <op> constant` holds for every value in the range (`Some(true)`), for
    /// none (`Some(false)`), or depends on the value (`None`).
    pub(crate) fn decide(self, op: CompareOp, constant: f64) -> Option<bool> {
        let low = self.low.unwrap_or(f64::NEG_INFINITY);
        let high = self.high.unwrap_or(f64::INFINITY);
        let always_never = |always: bool, never: bool| {
            if always {
                Some(true)
            } else if never {
                Some(false)
            } else {
                None
            }
        };
        match op {
            CompareOp::Lt => always_never(high < constant, low >= constant),
            CompareOp::LtE => always_never(high <= constant, low > constant),
            CompareOp::Gt => always_never(low > constant, high <= constant),
            CompareOp::GtE => always_never(low >= constant, high < constant),
            #[allow(clippy::float_cmp)] // Sizes and checked bounds are small integers.
            CompareOp::Eq => always_never(
                low == high && low == constant,
                constant < low || constant > high,
            ),
            #[allow(clippy::float_cmp)]
            CompareOp::NotEq => always_never(
                constant < low || constant > high,
                low == high && low == constant,
            ),
        }
    }

    /// The range of values for which `value <op> constant` holds, to narrow it after a check.
    pub(crate) fn satisfying(op: CompareOp, constant: f64) -> Interval {
        match op {
            CompareOp::Lt | CompareOp::LtE => Interval {
                low: None,
                high: Some(constant),
            },
            CompareOp::Gt | CompareOp::GtE => Interval {
                low: Some(constant),
                high: None,
            },
            CompareOp::Eq => Interval {
                low: Some(constant),
                high: Some(constant),
            },
            CompareOp::NotEq => Interval::default(),
        }
    }
}

/// The ordering comparisons the interpreter reasons about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompareOp {
    Lt,
    LtE,
    Gt,
    GtE,
    Eq,
    NotEq,
}

impl CompareOp {
    /// The same comparison with its operands swapped: `3 < n` is `n > 3`.
    pub(crate) fn flipped(self) -> CompareOp {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::LtE => CompareOp::GtE,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::GtE => CompareOp::LtE,
            CompareOp::Eq => CompareOp::Eq,
            CompareOp::NotEq => CompareOp::NotEq,
        }
    }
}

/// A `Dim` declared in `dynamic_shapes`.
// Its flags are independent facts about one declaration, each read on its own.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DimDecl {
    pub(crate) name: String,
    pub(crate) min: Option<i64>,
    pub(crate) max: Option<i64>,
    /// A `min` or `max` is written but the analysis cannot read its value (`max=cfg.max_len`):
    /// the range is not known, so nothing that depends on it is an error.
    pub(crate) bounds_unknown: bool,
    /// `Dim.AUTO` / `Dim.DYNAMIC`: the exporter refines the range itself instead of failing.
    pub(crate) automatic: bool,
    /// A `ShapeVar` of `@dynamic_spec` / `ShapesSpec`: the exporter gives it an unbacked symbol
    /// (measured, torch 2.15), so a branch on it is a data-dependent error, an equality or an
    /// `assert` a runtime check, and its range starts at 0 unless declared.
    pub(crate) unbacked: bool,
    /// Where the `Dim` is made, for fixes and messages.
    pub(crate) range: TextRange,
    /// A copy of the declaration standing for one size computed from it in a way the shapes do
    /// not write ([`DimSize::derived_from`]): the copy is that size's identity, so two reads of
    /// it are one size and anything computed from it is another.
    pub(crate) derived: bool,
}

impl DimDecl {
    /// Whether `a` and `b` are one size computed from a dimension: the same derived copy.
    pub(crate) fn same_derived(a: &Rc<DimDecl>, b: &Rc<DimDecl>) -> bool {
        a.derived && Rc::ptr_eq(a, b)
    }

    /// `Dim.AUTO`: export makes it static where the code needs one size, with no error.
    pub(crate) fn is_auto(&self) -> bool {
        self.automatic && self.name == "AUTO"
    }

    /// The dimension as messages name it: the `Dim`'s name, or `Dim.DYNAMIC`, which has none.
    pub(crate) fn shown(&self) -> &str {
        if self.is_dynamic_hint() {
            "Dim.DYNAMIC"
        } else {
            &self.name
        }
    }

    /// What follows "Constraints violated" in torch's error: ` (batch)` for a named `Dim`; for
    /// `Dim.DYNAMIC` torch names the input's source (`L['x'].size()[0]`), which the static pass
    /// does not spell.
    pub(crate) fn violated_suffix(&self) -> String {
        if self.is_dynamic_hint() {
            String::new()
        } else {
            format!(" ({})", self.name)
        }
    }

    /// A dimension export fixes to one size without an error where the code needs one size:
    /// `Dim.AUTO` (made static) or a `ShapeVar` (its range narrowed), PT406.
    pub(crate) fn fixed_silently(&self) -> bool {
        self.is_auto() || self.unbacked
    }

    /// `Dim.DYNAMIC`: export refines its range, and fails where the code needs one size, as
    /// for a named `Dim` (measured, torch 2.15).
    pub(crate) fn is_dynamic_hint(&self) -> bool {
        self.automatic && self.name == "DYNAMIC"
    }

    /// The least size the exporter allows: a backed dimension is at least 2 (0 and 1 are
    /// specialised), an unbacked one its declared `min`, else 0.
    pub(crate) fn low(&self) -> i64 {
        if self.unbacked {
            self.min.unwrap_or(0)
        } else {
            self.min.unwrap_or(2).max(2)
        }
    }
}

/// One dimension of a tensor whose dimensions are tracked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DimSize {
    /// A literal, a declared `Dim`, or an expression over `Dim`s (`dx + dy`, `(dz + 1)//2`).
    Sym(SymSize),
    /// Dynamic through `Dim` in a way the expressions do not follow (a product of two `Dim`s).
    Derived(Rc<DimDecl>),
}

impl DimSize {
    /// A new size computed from dynamic dimension `dim` (or from such a size) in a way the
    /// shape expressions do not write: dynamic through `dim`, and a size of its own.
    pub(crate) fn derived_from(dim: &Rc<DimDecl>) -> DimSize {
        DimSize::Derived(Rc::new(DimDecl {
            derived: true,
            ..(**dim).clone()
        }))
    }

    /// The declared dimension this size depends on first, when it is dynamic.
    pub(crate) fn dynamic_dim(&self) -> Option<&Rc<DimDecl>> {
        match self {
            DimSize::Sym(sym) => sym.dims().next(),
            DimSize::Derived(dim) => Some(dim),
        }
    }

    pub(crate) fn sym(&self) -> Option<&SymSize> {
        match self {
            DimSize::Sym(sym) => Some(sym),
            DimSize::Derived(_) => None,
        }
    }
}

/// What is known of a tensor's dimensions. An index not listed in `sizes` is static: its size
/// does not depend on a declared `Dim`, though the analysis may not know it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct TensorDims {
    /// From the example input, when the file gives one.
    pub(crate) rank: Option<usize>,
    /// Known or dynamic sizes by non-negative index, in index order.
    pub(crate) sizes: Vec<(usize, DimSize)>,
}

impl TensorDims {
    /// The shape two paths give one tensor (`if dim % 2: args = cat([args, pad], -1)`): the
    /// sizes they agree on, and a static size where both are static; `None` when the ranks
    /// differ or a dynamic size meets another size, which no shape here can say.
    pub(crate) fn join(a: &TensorDims, b: &TensorDims) -> Option<TensorDims> {
        let (sizes_a, sizes_b) = (a.all_sizes()?, b.all_sizes()?);
        if sizes_a.len() != sizes_b.len() {
            return None;
        }
        let joined: Option<Vec<Option<DimSize>>> = sizes_a
            .into_iter()
            .zip(sizes_b)
            .map(|(a, b)| match (a, b) {
                (a, b) if a == b => Some(a),
                (a, b)
                    if [&a, &b].iter().all(|size| {
                        size.as_ref()
                            .is_none_or(|size| size.dynamic_dim().is_none())
                    }) =>
                {
                    Some(None)
                }
                _ => None,
            })
            .collect();
        Some(TensorDims::from_sizes(joined?))
    }

    /// A tensor of rank `sizes.len()`, each dimension known (`Some`) or static (`None`).
    pub(crate) fn from_sizes(sizes: Vec<Option<DimSize>>) -> TensorDims {
        TensorDims {
            rank: Some(sizes.len()),
            sizes: sizes
                .into_iter()
                .enumerate()
                .filter_map(|(index, size)| Some((index, size?)))
                .collect(),
        }
    }

    /// Each dimension, known or static (`None`), when the rank is known.
    pub(crate) fn all_sizes(&self) -> Option<Vec<Option<DimSize>>> {
        let rank = self.rank?;
        if self.sizes.iter().any(|(index, _)| *index >= rank) {
            return None;
        }
        Some((0..rank).map(|index| self.size(index).cloned()).collect())
    }

    pub(crate) fn size(&self, index: usize) -> Option<&DimSize> {
        self.sizes
            .iter()
            .find(|(at, _)| *at == index)
            .map(|(_, size)| size)
    }

    /// The index a possibly negative dimension argument names.
    pub(crate) fn index(&self, position: i64) -> Option<usize> {
        if position >= 0 {
            usize::try_from(position).ok()
        } else {
            usize::try_from(i64::try_from(self.rank?).ok()? + position).ok()
        }
    }

    /// The literal size at `index`.
    pub(crate) fn literal(&self, index: usize) -> Option<i64> {
        self.size(index)?.sym()?.as_constant()
    }

    /// Dimensions that are exactly one declared `Dim`, by index.
    pub(crate) fn declared(&self) -> impl Iterator<Item = (usize, &Rc<DimDecl>)> {
        self.sizes
            .iter()
            .filter_map(|(index, size)| Some((*index, size.sym()?.as_dim()?)))
    }

    /// Whether some dimension depends on a declared `Dim`.
    pub(crate) fn is_dynamic(&self) -> bool {
        self.sizes
            .iter()
            .any(|(_, size)| size.dynamic_dim().is_some())
    }

    /// The first declared `Dim` some dimension depends on.
    pub(crate) fn first_dynamic(&self) -> Option<&Rc<DimDecl>> {
        self.sizes.iter().find_map(|(_, size)| size.dynamic_dim())
    }

    /// The dimensions that depend on a `Dim`, by index.
    pub(crate) fn dynamic(&self) -> impl Iterator<Item = (usize, &DimSize)> {
        self.sizes
            .iter()
            .filter(|(_, size)| size.dynamic_dim().is_some())
            .map(|(index, size)| (*index, size))
    }

    /// As the editor shows it: `[batch, dx + dy, 64]`; a static size it does not know is `_`,
    /// a dynamic one it cannot write `?`.
    pub(crate) fn render(&self) -> Option<String> {
        let sizes = self.all_sizes()?;
        let parts: Vec<String> = sizes
            .iter()
            .map(|size| match size {
                Some(DimSize::Sym(sym)) => sym.to_string(),
                Some(DimSize::Derived(_)) => "?".to_owned(),
                None => "_".to_owned(),
            })
            .collect();
        Some(format!("[{}]", parts.join(", ")))
    }
}

/// Where a Python integer that came from a shape came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SizeOrigin {
    /// A dimension that is not dynamic: the exporter specialises on it.
    Static,
    /// A dimension declared dynamic; `exact` when the value is that size itself, not derived.
    Dynamic { dim: Rc<DimDecl>, exact: bool },
    /// The size of a data-dependent result (`nonzero`, boolean masks).
    Unbacked,
    /// A size of a tensor whose dimensions the model does not track.
    Unknown,
}

impl SizeOrigin {
    /// Arithmetic on two sizes: the less predictable origin wins.
    pub(crate) fn combine(&self, other: &SizeOrigin) -> SizeOrigin {
        let rank = |origin: &SizeOrigin| match origin {
            SizeOrigin::Static => 0,
            SizeOrigin::Unknown => 1,
            SizeOrigin::Dynamic { .. } => 2,
            SizeOrigin::Unbacked => 3,
        };
        let winner = if rank(other) > rank(self) {
            other
        } else {
            self
        };
        match winner {
            SizeOrigin::Dynamic { dim, .. } => SizeOrigin::Dynamic {
                // A size computed from a derived size is another one.
                dim: if dim.derived {
                    Rc::new(DimDecl::clone(dim))
                } else {
                    dim.clone()
                },
                exact: false,
            },
            other => other.clone(),
        }
    }
}

/// What a condition that was not a tensor depends on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GuardKind {
    /// A Python number read from tensor data.
    Data,
    /// A size of a data-dependent result.
    Unbacked,
    /// A dimension declared dynamic.
    Dynamic(Rc<DimDecl>),
    /// A static dimension.
    Static,
}

/// A boolean made by comparing sizes or data-dependent numbers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Guard {
    pub(crate) kind: GuardKind,
    /// The exporter can decide it from the known ranges, so it adds no guard.
    pub(crate) decided: bool,
    /// The comparison of a dynamic dimension itself (not arithmetic on it) that a `Dim`
    /// constraint could decide: `Dim("batch", max=16)` for `batch > 16`, `b = a` for `b == a`.
    pub(crate) suggestion: Option<SizeComparison>,
}

/// A dynamic dimension compared with a literal or another dynamic dimension.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SizeComparison {
    pub(crate) op: CompareOp,
    pub(crate) against: Compared,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Compared {
    Constant(f64),
    Dim(Rc<DimDecl>),
}

/// Facts about one tensor value.
// Independent facts, each read by different rules; an enum of their combinations would not be clearer.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct TensorInfo {
    /// Declared dynamic dimensions; `None` when not tracked.
    pub(crate) dims: Option<Rc<TensorDims>>,
    /// Its size depends on data (`nonzero`, `x[mask]`).
    pub(crate) data_dependent_shape: bool,
    /// The value may be `None` (an optional parameter): its truthiness is a `None` check.
    pub(crate) maybe_none: bool,
    /// Only assumed to be a tensor: an unannotated extra parameter of a submodule's `forward`
    /// (`def forward(self, x, height, width)`), which is as often a Python number. Operations
    /// on it are followed, but nothing is reported on its account alone.
    pub(crate) assumed: bool,
    /// The result of calling a submodule or an unknown callable: a tensor, or a tuple of
    /// things that may not all be tensors. Its parts are only assumed to be tensors.
    pub(crate) opaque: bool,
    /// The device it is on, as far as traced code moved it.
    pub(crate) device: TensorDevice,
}

/// Where a tensor is, for the device mismatch the exporter refuses (PT604).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) enum TensorDevice {
    /// With the inputs and the parameters: built without a device, or computed from them.
    #[default]
    Inputs,
    /// Moved to CUDA by the call in file `.0` at `.1` (`.cuda()`, `device="cuda"`).
    Cuda(u32, TextRange),
    /// On a device the analysis cannot read (`.to(h.device)`, `device=x.device`).
    Unknown,
}

impl TensorDevice {
    /// The device of a value that is `a` on one path and `b` on another, or the result of an
    /// operation on both.
    pub(crate) fn join(self, other: TensorDevice) -> TensorDevice {
        match (self, other) {
            (a, b) if a == b => a,
            (cuda @ TensorDevice::Cuda(..), TensorDevice::Cuda(..)) => cuda,
            _ => TensorDevice::Unknown,
        }
    }
}

/// A `torch.nn` layer and the sizes its constructor was given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LayerInfo {
    pub(crate) qualified: Rc<str>,
    /// The arguments given, by the names of [`crate::catalogue::layer_parameters`]: their
    /// literal integer, or `None` for one the analysis cannot read (`padding="same"`,
    /// `stride=(2, 1)`, a constructor's own parameter). A tuple argument (`kernel_size=(3, 3)`)
    /// counts when its items are equal.
    pub(crate) sizes: Vec<(&'static str, Option<i64>)>,
    /// Tuple arguments whose items differ (`kernel_size=(3, 128)`), item by item for each
    /// spatial axis; `sizes` holds `None` for them.
    pub(crate) per_axis: Vec<(&'static str, Vec<Option<i64>>)>,
    /// `padding="same"`: a convolution that keeps each spatial size.
    pub(crate) same_padding: bool,
    /// einops' `Rearrange(pattern, **axes)` layer: what it does to its input.
    pub(crate) rearrange: Option<Rc<super::einops::Rearrangement>>,
}

impl LayerInfo {
    /// The literal size given for `name`; `None` when it was not given or cannot be read.
    pub(crate) fn size(&self, name: &str) -> Option<i64> {
        self.argument(name).and_then(|(_, size)| *size)
    }

    /// The size of `name`, or `default` when the constructor does not give it; `None` when it
    /// is given and cannot be read.
    pub(crate) fn size_or(&self, name: &str, default: i64) -> Option<i64> {
        match self.argument(name) {
            None => Some(default),
            Some((_, size)) => *size,
        }
    }

    /// The size given for `name` on spatial axis `axis`: its own item of a tuple argument,
    /// else the size every axis shares.
    pub(crate) fn axis_size(&self, name: &str, axis: usize) -> Option<i64> {
        match self
            .per_axis
            .iter()
            .find(|(parameter, _)| *parameter == name)
        {
            Some((_, items)) => items.get(axis).copied().flatten(),
            None => self.size(name),
        }
    }

    /// [`Self::axis_size`], or `default` when the constructor does not give it.
    pub(crate) fn axis_size_or(&self, name: &str, axis: usize, default: i64) -> Option<i64> {
        match self
            .per_axis
            .iter()
            .find(|(parameter, _)| *parameter == name)
        {
            Some((_, items)) => items.get(axis).copied().flatten(),
            None => self.size_or(name, default),
        }
    }

    fn argument(&self, name: &str) -> Option<&(&'static str, Option<i64>)> {
        self.sizes.iter().find(|(parameter, _)| *parameter == name)
    }
}

/// An abstract Python value in traced code.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// No value yet: the identity of `join`.
    Bottom,
    /// Anything not tracked: configuration, Python containers, unknown calls.
    Unknown,
    None,
    Tensor(TensorInfo),
    /// A tuple or list of tensors (`chunk`, `split`, `unbind`).
    Tensors(TensorInfo),
    /// A Python number read from tensor data, with the bounds `torch._check` gave it.
    DataScalar(Interval),
    /// `.tolist()`: a list of data-dependent numbers.
    DataScalars,
    /// `x.shape` / `x.size()` of a tensor.
    Shape(TensorInfo),
    /// A Python integer computed from sizes; `sym` when it is an expression over `Dim`s and
    /// literals the analysis follows (`x.shape[0]`, `c // 4`).
    Size {
        origin: SizeOrigin,
        interval: Interval,
        sym: Option<Rc<SymSize>>,
    },
    /// A Python number the program computes without tensors, known exactly: a literal, a
    /// configuration field, a constructor argument, arithmetic on them. `True` is 1. The
    /// exporter runs such code in Python and records the result as a constant.
    Number(f64),
    /// A Python string known exactly: a literal, a configuration field, an argparse default.
    Str(Rc<str>),
    /// A comparison of sizes or data-dependent numbers.
    Guard(Guard),
    /// An `nn.Module` instance (`self`, a submodule, a layer taken from a `ModuleList`): its
    /// class, and, for one the construction pass built, what its `__init__` stored on it. The
    /// class alone answers with the join of every construction of the class, which loses the
    /// submodule each instance holds (`Residual(module=Attention())` beside
    /// `Residual(module=FeedForward())`).
    Module(Option<usize>, Option<Rc<BuiltFields>>),
    /// A container of modules (`nn.ModuleList`, `nn.ModuleDict`): what each element is (the
    /// join of them; `Module(None)` when not known), so a loop over it runs their `forward`;
    /// and the elements in order when the code that filled it ran once per element (a display,
    /// appends in straight-line code or in a loop the interpreter unrolled), so a loop over it
    /// runs each once, in order, and `len` is a number.
    Modules(Rc<Value>, Option<Rc<[Value]>>),
    /// `nn.Sequential(a, b, c)` of modules and layers the analysis knows, in order: calling it
    /// runs each on the previous one's output.
    Sequential(Rc<[Value]>),
    /// A `torch.nn` layer that keeps its input's first dimension (`nn.Linear`, `nn.Conv2d`).
    Layer(Rc<LayerInfo>),
    /// A module-level object known by its qualified name: `torch.nn.functional`, `np.mean`.
    Qualified(Rc<str>),
    /// A function defined in this file, by its index in the model's function table.
    Function(usize),
    /// A class defined in this file, by index.
    Class(usize),
    /// `Function.apply` of a workspace `torch.autograd.Function` subclass, by class: calling
    /// it runs the class's `forward` with an unknown `ctx`, as the exporter traces it.
    AutogradApply(usize),
    /// A method looked up on a module instance: its class, function index and, when known,
    /// what that instance's `__init__` stored (`checkpoint(self._forward, ...)` runs on the
    /// block that passed it, not on the join of every block of its class).
    Method(Option<usize>, usize, Option<Rc<BuiltFields>>),
    /// A tuple or list display with known elements.
    Tuple(Rc<[Value]>),
    /// An instance of a plain class, a dataclass or a `SimpleNamespace` (a configuration
    /// object): its fields as its construction set them.
    Object(Rc<Instance>),
    /// The instance an `__init__` is building, by its place on the interpreter's stack of
    /// constructions: `self.<name> = ...` writes its fields as the body runs.
    Building(usize),
    /// Something iterable whose elements are the inner value (`zip`, `enumerate`, `range`).
    Iter(Rc<Value>),
    /// A Python value read at trace time from the clock, `random`, the environment (`time.time`,
    /// `random.uniform`, `os.getenv`), or computed from one: the export keeps it as a constant.
    Baked(Rc<BakedRead>),
}

/// What the `__init__` of one module instance stored on `self`, by name. Equal when the same
/// object, or when built with the same fields (the blocks of a `ModuleList` made in a loop).
pub(crate) struct BuiltFields(pub(crate) std::collections::BTreeMap<String, Value>);

/// The instance's identity, not its fields: a call's memo key prints its receiver, and the
/// fields of a model's root hold every module of the model. Instances live as long as the
/// interpreter that built them, so no two of them share an address while a key is kept.
impl std::fmt::Debug for BuiltFields {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "BuiltFields({self:p})")
    }
}

impl PartialEq for BuiltFields {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other) || self.0 == other.0
    }
}

/// `number` as an integer, when it is one (a size, a count) small enough to be exact.
pub(crate) fn integer(number: f64) -> Option<i64> {
    #[allow(clippy::cast_possible_truncation)] // Checked: the round trip is exact.
    let integer = number as i64;
    #[allow(clippy::cast_precision_loss, clippy::float_cmp)]
    (number.is_finite() && integer as f64 == number && integer.abs() < 1 << 53).then_some(integer)
}

/// The fields of a constructed object, by name (ordered, so that equal objects print alike).
/// Shared, as Python objects are: `config.block_size = 64` (or an override helper that does
/// it) changes what every holder of the object reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Instance {
    /// Its class, when it is one of the workspace's (`None` for a `SimpleNamespace`).
    pub(crate) class: Option<usize>,
    pub(crate) fields: std::cell::RefCell<std::collections::BTreeMap<String, Value>>,
    /// The order a mapping's keys were first written in, which Python dicts keep and a loop
    /// over `items()` follows; `None` when some key's place is not known.
    order: std::cell::RefCell<Option<Vec<String>>>,
}

impl Instance {
    pub(crate) fn new(
        class: Option<usize>,
        fields: std::collections::BTreeMap<String, Value>,
    ) -> Rc<Instance> {
        Rc::new(Instance {
            class,
            fields: std::cell::RefCell::new(fields),
            order: std::cell::RefCell::new(None),
        })
    }

    /// A mapping of these entries in the order written (a later entry of one key replaces the
    /// earlier value and keeps its place, as in a dict display).
    pub(crate) fn mapping(entries: impl IntoIterator<Item = (String, Value)>) -> Rc<Instance> {
        let instance = Instance {
            class: None,
            fields: std::cell::RefCell::default(),
            order: std::cell::RefCell::new(Some(Vec::new())),
        };
        for (key, value) in entries {
            instance.insert(&key, value);
        }
        Rc::new(instance)
    }

    /// The field `name`, when the object has it.
    pub(crate) fn field(&self, name: &str) -> Option<Value> {
        self.fields.borrow().get(name).cloned()
    }

    /// Writes the field `name`; a new key goes last in the mapping's order.
    pub(crate) fn insert(&self, name: &str, value: Value) {
        let new = self
            .fields
            .borrow_mut()
            .insert(name.to_owned(), value)
            .is_none();
        if let (true, Some(order)) = (new, self.order.borrow_mut().as_mut()) {
            order.push(name.to_owned());
        }
    }

    /// `del mapping[name]`.
    pub(crate) fn remove(&self, name: &str) {
        self.fields.borrow_mut().remove(name);
        if let Some(order) = self.order.borrow_mut().as_mut() {
            order.retain(|key| key != name);
        }
    }

    /// A key the analysis cannot read was written: every value is unknown, and so is the
    /// order.
    pub(crate) fn forget(&self) {
        for value in self.fields.borrow_mut().values_mut() {
            *value = Value::Unknown;
        }
        *self.order.borrow_mut() = None;
    }

    /// Keys were merged in an order the analysis does not know.
    pub(crate) fn forget_order(&self) {
        *self.order.borrow_mut() = None;
    }

    /// The entries in the order Python iterates them, when that order is known.
    pub(crate) fn ordered_entries(&self) -> Option<Vec<(String, Value)>> {
        let fields = self.fields.borrow();
        let order = self.order.borrow();
        let order = order.as_ref().filter(|order| order.len() == fields.len())?;
        order
            .iter()
            .map(|key| Some((key.clone(), fields.get(key)?.clone())))
            .collect()
    }
}

/// Where a value read at trace time comes from: the call, as written, and its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BakedRead {
    pub(crate) call: String,
    pub(crate) range: TextRange,
}

impl Value {
    pub(crate) fn tensor() -> Value {
        Value::Tensor(TensorInfo::default())
    }

    /// What calling a submodule or an unknown callable on tensors returns.
    pub(crate) fn opaque_tensor() -> Value {
        Value::Tensor(TensorInfo {
            opaque: true,
            ..TensorInfo::default()
        })
    }

    pub(crate) fn is_tensor(&self) -> bool {
        matches!(self, Value::Tensor(_))
    }

    /// A tensor known from evidence, not only assumed.
    pub(crate) fn is_certain_tensor(&self) -> bool {
        matches!(self, Value::Tensor(info) | Value::Tensors(info) if !info.assumed)
    }

    /// The number a static size is known to be exactly.
    pub(crate) fn known_constant(&self) -> Option<f64> {
        match self {
            Value::Number(number) => Some(*number),
            Value::Size {
                origin: SizeOrigin::Static,
                interval,
                sym,
            } => sym
                .as_ref()
                .and_then(|sym| sym.as_constant())
                .and_then(|constant| i32::try_from(constant).ok())
                .map(f64::from)
                .or_else(|| interval.low.filter(|low| Some(*low) == interval.high)),
            _ => None,
        }
    }

    pub(crate) fn static_size() -> Value {
        Value::Size {
            origin: SizeOrigin::Static,
            interval: Interval::at_least(0.0),
            sym: None,
        }
    }

    /// A size that is `sym`: a literal is static and exact, an expression over `Dim`s is
    /// dynamic through its first `Dim`, with the range the `Dim`s give it.
    pub(crate) fn sym_size(sym: SymSize) -> Value {
        let (low, high) = sym.range();
        #[allow(clippy::cast_precision_loss)] // Sizes are small.
        let interval = Interval {
            low: low.map(|low| low as f64),
            high: high.map(|high| high as f64),
        };
        let origin = match sym.dims().next() {
            None => SizeOrigin::Static,
            Some(dim) => SizeOrigin::Dynamic {
                dim: dim.clone(),
                exact: sym.as_dim().is_some(),
            },
        };
        Value::Size {
            origin,
            interval,
            sym: Some(Rc::new(sym)),
        }
    }

    /// The symbolic size of a Python integer: a literal, or a size the analysis followed.
    pub(crate) fn as_sym(&self) -> Option<SymSize> {
        match self {
            Value::Size { sym: Some(sym), .. } => Some((**sym).clone()),
            Value::Number(number) => integer(*number).map(SymSize::constant),
            _ => None,
        }
    }

    /// The value without indexes into the model it was computed in.
    pub(crate) fn portable(&self) -> Value {
        match self {
            Value::Module(..) | Value::Sequential(_) => Value::Module(None, None),
            Value::Function(_)
            | Value::Class(_)
            | Value::Method(..)
            | Value::Building(_)
            | Value::AutogradApply(_) => Value::Unknown,
            Value::Object(instance) => {
                let portable = Instance::new(None, std::collections::BTreeMap::new());
                portable
                    .order
                    .borrow_mut()
                    .clone_from(&instance.order.borrow());
                *portable.fields.borrow_mut() = instance
                    .fields
                    .borrow()
                    .iter()
                    .map(|(name, value)| (name.clone(), value.portable()))
                    .collect();
                Value::Object(portable)
            }
            Value::Tuple(items) => Value::Tuple(items.iter().map(Value::portable).collect()),
            Value::Iter(inner) => Value::Iter(Rc::new(inner.portable())),
            Value::Modules(element, items) => Value::Modules(
                Rc::new(element.portable()),
                items
                    .as_ref()
                    .map(|items| items.iter().map(Value::portable).collect()),
            ),
            other => other.clone(),
        }
    }

    /// Two sequences of different lengths: the tensors both hold as one `Tensors`, the modules
    /// as one `Modules` of unknown length; anything else is unknown.
    fn sequence_join(&self, other: &Value) -> Value {
        let elements = |value: &Value| -> Vec<Value> {
            match value {
                Value::Tuple(items) => items.to_vec(),
                tensors => vec![tensors.clone()],
            }
        };
        let all = elements(self).into_iter().chain(elements(other));
        let joined = all.fold(Value::Bottom, |acc, item| match (acc, item) {
            (Value::Unknown, _) => Value::Unknown,
            (Value::Bottom, Value::Tensors(info)) => Value::Tensor(info),
            (acc, Value::Tensors(info)) => acc.join(&Value::Tensor(info)),
            (acc, item) => acc.join(&item),
        });
        match joined {
            Value::Bottom => Value::Tuple(Rc::from(Vec::new())),
            Value::Tensor(info) => Value::Tensors(info),
            module @ (Value::Module(..) | Value::Layer(_)) => Value::Modules(Rc::new(module), None),
            _ => Value::Unknown,
        }
    }

    /// The least value that is at least as general as both: where control flow merges.
    pub(crate) fn join(&self, other: &Value) -> Value {
        match (self, other) {
            (Value::Bottom, value) | (value, Value::Bottom) => value.clone(),
            (a, b) if a == b => a.clone(),
            (Value::Tensor(a), Value::Tensor(b)) => Value::Tensor(TensorInfo {
                dims: match (&a.dims, &b.dims) {
                    (a, b) if a == b => a.clone(),
                    (Some(a), Some(b)) => TensorDims::join(a, b).map(Rc::new),
                    _ => None,
                },
                data_dependent_shape: a.data_dependent_shape || b.data_dependent_shape,
                maybe_none: a.maybe_none || b.maybe_none,
                assumed: a.assumed || b.assumed,
                opaque: a.opaque || b.opaque,
                device: a.device.join(b.device),
            }),
            (Value::Tensor(info), Value::None) | (Value::None, Value::Tensor(info)) => {
                Value::Tensor(TensorInfo {
                    maybe_none: true,
                    ..info.clone()
                })
            }
            (Value::DataScalar(_), Value::DataScalar(_)) => Value::DataScalar(Interval::default()),
            (Value::Size { origin: a, .. }, Value::Size { origin: b, .. }) => Value::Size {
                origin: a.combine(b),
                interval: Interval::at_least(0.0),
                sym: None,
            },
            // One kind of layer built with different sizes: the sizes both give it.
            (Value::Layer(a), Value::Layer(b))
                if a.qualified == b.qualified
                    && a.same_padding == b.same_padding
                    && a.rearrange == b.rearrange
                    && a.sizes.len() == b.sizes.len()
                    && a.sizes.iter().zip(&b.sizes).all(|(x, y)| x.0 == y.0) =>
            {
                Value::Layer(Rc::new(LayerInfo {
                    qualified: a.qualified.clone(),
                    sizes: a
                        .sizes
                        .iter()
                        .zip(&b.sizes)
                        .map(|((name, x), (_, y))| (*name, if x == y { *x } else { None }))
                        .collect(),
                    per_axis: if a.per_axis == b.per_axis {
                        a.per_axis.clone()
                    } else {
                        Vec::new()
                    },
                    same_padding: a.same_padding,
                    rearrange: a.rearrange.clone(),
                }))
            }
            // One stack built with different sizes (a block class constructed at each level):
            // each step keeps what both give it.
            (Value::Sequential(a), Value::Sequential(b)) if a.len() == b.len() => {
                let steps: Vec<Value> = a.iter().zip(b.iter()).map(|(a, b)| a.join(b)).collect();
                if steps.iter().all(|step| {
                    matches!(
                        step,
                        Value::Layer(_) | Value::Module(Some(_), _) | Value::Sequential(_)
                    )
                }) {
                    Value::Sequential(Rc::from(steps))
                } else {
                    Value::Module(None, None)
                }
            }
            // Two instances of one class: what the class's constructions stored, joined.
            (Value::Module(Some(a), _), Value::Module(Some(b), _)) if a == b => {
                Value::Module(Some(*a), None)
            }
            (
                Value::Module(..) | Value::Layer(_) | Value::Sequential(_),
                Value::Module(..) | Value::Layer(_) | Value::Sequential(_),
            ) => Value::Module(None, None),
            (Value::Modules(a, items), Value::Modules(b, other)) => Value::Modules(
                Rc::new(a.join(b)),
                if items == other { items.clone() } else { None },
            ),
            (Value::Tuple(a), Value::Tuple(b)) if a.len() == b.len() => {
                Value::Tuple(a.iter().zip(b.iter()).map(|(a, b)| a.join(b)).collect())
            }
            // A list filled by a different number of appends on two paths (an abstract loop's
            // iterations): a list of tensors, or of modules, of unknown length.
            (Value::Tuple(_) | Value::Tensors(_), Value::Tuple(_) | Value::Tensors(_)) => {
                self.sequence_join(other)
            }
            // Two constructions of one class: a field keeps what both give it.
            (Value::Object(a), Value::Object(b)) if a.class == b.class => {
                let other = b.fields.borrow();
                let joined = Instance::new(
                    a.class,
                    a.fields
                        .borrow()
                        .iter()
                        .filter_map(|(name, value)| {
                            Some((name.clone(), value.join(other.get(name)?)))
                        })
                        .collect(),
                );
                if a.order == b.order {
                    joined.order.borrow_mut().clone_from(&a.order.borrow());
                }
                Value::Object(joined)
            }
            _ => Value::Unknown,
        }
    }
}
