//! What the interpreter saw happen in traced code, for the rules to judge.

use ruff_text_size::TextRange;

use std::rc::Rc;

use super::symbolic::SymSize;
use super::value::{DimDecl, TensorInfo, Value};

/// Where a value was turned into a Python `bool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoolContext {
    /// `if` / `elif`; `raises_only` when the body only raises (input validation).
    If {
        raises_only: bool,
    },
    While,
    Ternary,
    Assert,
    /// `torch._check(...)` on a size: like `assert`, a guard the exporter must prove.
    Check,
    Not,
    /// An operand of `and` / `or` that decides which operand is the result.
    BoolOperator,
    /// `bool(...)`.
    BoolCall,
    /// A comprehension's `if` filter.
    Comprehension,
}

impl BoolContext {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            BoolContext::If { .. } => "`if`",
            BoolContext::While => "`while`",
            BoolContext::Ternary => "a conditional expression",
            BoolContext::Assert => "`assert`",
            BoolContext::Check => "`torch._check`",
            BoolContext::Not => "`not`",
            BoolContext::BoolOperator => "`and`/`or`",
            BoolContext::BoolCall => "`bool()`",
            BoolContext::Comprehension => "a comprehension filter",
        }
    }

    /// Branches whose other side the exported graph loses (PT402 cares only about these).
    pub(crate) fn is_branch(self) -> bool {
        matches!(
            self,
            BoolContext::If { raises_only: false } | BoolContext::While | BoolContext::Ternary
        )
    }
}

/// How a data-dependent number or size was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScalarUse {
    /// An argument of `range()`: the loop count must be concrete.
    Range,
    /// An index into a Python list or tuple.
    ListIndex,
    /// `int(t)` / `float(t)` on a tensor.
    Conversion,
    /// A `math` function applied to a tensor.
    MathCall,
    /// `len(t)`: Python needs a concrete integer back.
    Len,
    /// An argument torch needs as a Python integer (`steps` of `torch.linspace`, the window of
    /// `F.max_pool1d`): the parameter's name.
    ConcreteArgument(&'static str),
}

/// What requires two sizes to be equal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Forcing {
    /// An elementwise operation's broadcasting.
    Broadcast,
    /// A layer's constructor argument: the layer's class and the argument's name.
    Layer {
        class: String,
        parameter: &'static str,
    },
    /// `torch.cat`/`torch.stack`: the dimensions not concatenated.
    Concatenation,
    /// `@`/`matmul`: the contracted dimensions.
    Contraction,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EventKind {
    /// A value was used as a condition.
    Truthiness { value: Value, context: BoolContext },
    /// A number or size was used where the exporter needs a concrete value.
    Scalar { value: Value, usage: ScalarUse },
    /// A Python loop over a tensor's first dimension.
    IterateTensor { tensor: TensorInfo, size: Value },
    /// `.numpy()` or a NumPy function applied to a tensor. `static_shape`: the tensor's sizes
    /// are known to depend on no declared `Dim` and on no data (a fix may then ask for its
    /// elements one by one, `.tolist()`, without fixing a dynamic dimension).
    Numpy { call: String, static_shape: bool },
    /// A NumPy function applied to a size of a dynamic dimension (`np.log(x.shape[1])`).
    NumpySize { call: String, dim: Rc<DimDecl> },
    /// A call to a qualified function: `print`, `zlib.crc32`, `torch._dynamo.graph_break`.
    Call {
        qualified: String,
        tensor_argument: bool,
    },
    /// A torch call that some deployment target cannot run (`semantic::target_ops`):
    /// `torch.<name>(...)`, or `tensor.<name>(...)` when `method`. `lowered_for` holds the
    /// targets of the entrypoint whose analysis recorded it (`target_ops::stamp`), empty until
    /// one does: carried with the event when it is imported into a file that entrypoint
    /// reaches.
    TargetOp {
        name: String,
        method: bool,
        lowered_for: Vec<String>,
    },
    /// A tensor method the exporter cannot trace (`data_ptr`).
    UntraceableMethod { method: String },
    /// `self.<attribute> += …` on a Python value in traced code: state that changes from call to
    /// call, which the exported program freezes at its value while exporting.
    ModuleStateChanged { attribute: String },
    /// A value read at trace time from the clock, `random` or the environment (`source`, the
    /// call) reaches a tensor here: the exported program keeps it as a constant.
    BakedIntoTensor { source: String, read_at: TextRange },
    /// `next(self.batches)` in traced code: an iterator kept across calls, advanced by each
    /// eager call; the exported program keeps the element it took while exporting.
    IteratorAdvanced { iterator: String },
    /// Traced code reads a module-level container that a function of its file changes
    /// (`SCALES` of `set_scales`): the exported program keeps the value it had while exporting.
    MutatedGlobalRead {
        name: String,
        kind: &'static str,
        function: String,
    },
    /// An elementwise operation lines up two different dynamic dimensions, which broadcasting
    /// requires to be equal.
    DimMismatch {
        left: Rc<DimDecl>,
        right: Rc<DimDecl>,
    },
    /// An elementwise operation broadcasts a dynamic dimension against a literal size, which
    /// specialises it.
    DimSpecialized { dim: Rc<DimDecl>, size: i64 },
    /// An operation that needs a dimension declared `Dim.AUTO` or by `@dynamic_spec` to be
    /// one size (`size`): a `view`/`reshape` to literal sizes only, a broadcast against a
    /// literal size. Export does not fail: it makes an AUTO dimension static, and fixes a
    /// `ShapeVar`'s range to the one size (measured, torch 2.15).
    DimFixed { dim: Rc<DimDecl>, size: i64 },
    /// `view`/`reshape` to literal sizes that a dynamic dimension's element count must divide
    /// into: `dim` must be a multiple of `multiple`.
    ReshapeGuard { dim: Rc<DimDecl>, multiple: i64 },
    /// An operation requires two sizes, at least one over declared `Dim`s, to be equal: a
    /// layer's `in_features` against its input's last size (`dx + dy == 32`), the two sides of
    /// a broadcast (`2*dx` against `dy`). The exporter turns it into a relation between the
    /// `Dim`s, a constant, or narrower ranges.
    SizeEquality {
        left: SymSize,
        right: SymSize,
        by: Forcing,
    },
    /// A size that the declared ranges allow to be 1 (`(dz + 1)//2` for `dz = 2`) is
    /// broadcast against `other`: the exporter guards it `!= 1`, narrowing the `Dim`.
    MaybeOne { size: SymSize, other: SymSize },
    /// A slice with a step of a dynamic dimension (`x[:, ::2]`) whose size the declared
    /// ranges allow to be 1: non-strict export guards the size `!= 1`.
    StridedSlice { size: SymSize },
    /// A window of `length` taken from a dynamic dimension of `size` at an offset computed
    /// from sizes (`skip[:, :, dy:dy + t]`, a U-Net's centre crop): the exporter guards that
    /// it stays within the dimension (`0 <= dy`, `dy + t <= size`), which its range analysis
    /// cannot prove where the sizes are floor divisions of a `Dim` (measured, torch 2.15).
    SliceWithin { size: SymSize, length: SymSize },
    /// A convolution's or pooling's window (`nn.Conv2d(3, 64, 7, stride=2)`, `F.max_pool2d(x,
    /// 2)`) makes a spatial size of a dynamic dimension that the declared range allows to be 1
    /// or less: the exporter guards it (`!= 1` non-strict, `>= 1` strict), narrowing the `Dim`.
    WindowOutput { size: SymSize, layer: String },
    /// A reflection padding of `padding` over `size`, a size of a dynamic dimension its range
    /// allows at `padding` or less: torch needs the size above the padding and guards it.
    ReflectionTooWide {
        size: SymSize,
        padding: i64,
        layer: String,
    },
    /// `nn.MaxPool1d` / `F.max_pool1d` over a dynamic length: measured with torch 2.15, strict
    /// and not, its decomposition fixes the length to the example's, whatever the range.
    PoolFixesLength {
        dim: Rc<DimDecl>,
        kernel: Option<i64>,
    },
    /// A DTensor built from a plain tensor in traced code (`DTensor.from_local`,
    /// `distribute_tensor`): export cannot put its placement in the graph.
    DTensorBuilt { qualified: String },
    /// `chunk` / `split` / `unbind` / `tensor_split` cuts a `ShapeVar` of `@dynamic_spec` into a
    /// number of parts that its size decides: a guard on an unbacked symbol.
    CutsUnbackedDim { dim: Rc<DimDecl>, op: String },
    /// Adaptive pooling that tests the size of a `ShapeVar` of `@dynamic_spec` it pools over
    /// (global average pooling, `AdaptiveMaxPool1d`): a guard on an unbacked symbol.
    AdaptivePoolUnbacked { dim: Rc<DimDecl>, layer: String },
    /// A recurrent layer runs over a sequence whose sizes depend on data (a `PackedSequence`,
    /// whose batch sizes are tensor data): the layer reads them as Python numbers.
    DataDependentRecurrent { layer: String },
    /// A transformer (`nn.TransformerEncoder`, ...) given a mask and not told whether it is
    /// causal: torch compares the mask's values with a causal one, a branch on data.
    CausalMaskDetection {
        layer: String,
        mask: &'static str,
        flag: &'static str,
    },
    /// A parameter or buffer sliced up to a dynamic size with no declared maximum.
    BufferSlice { dim: Rc<DimDecl> },
    /// A recurrent layer (`nn.LSTM`, `nn.GRU`, `nn.RNN`) runs over a sequence whose length is a
    /// dynamic dimension: the exporter unrolls it step by step, which fixes the length.
    Unrolled { dim: Rc<DimDecl>, layer: String },
    /// An `if` on a tensor's value (the event's range is its condition): the local names
    /// that hold tensors where it starts, and at the end of each clause in source order
    /// (`None` for a clause that returns or raises). The `torch.cond` rewrite passes the first
    /// as operands and returns the others.
    TensorIf {
        before: Rc<[String]>,
        after: Vec<Option<Rc<[String]>>>,
    },
    /// `<tensor>.data` in traced code: read (`self.weight.data`, `x.data.add_(…)`), or
    /// assigned (`self.<attribute>.data = …`, `assigned`). Export traces it as a tensor of the
    /// trace that it keeps as a constant of the program (measured, torch 2.15).
    DataAttribute { tensor: String, assigned: bool },
    /// A `torch.func` transform that differentiates (`grad`, `jacrev`, …) called in traced
    /// code: export lifts the input it differentiates as a constant of the trace.
    GradientTransform { transform: String },
    /// A tensor moved to CUDA in traced code (by the call `moved`, as written) meets tensors
    /// on the device of the inputs, or a layer's parameters, in one operation; recorded only
    /// when the entrypoint's example inputs are built on the CPU.
    DeviceMismatch { moved: String },
    /// A size given to `op`, which takes sizes (`view`, `reshape`, `expand`, `repeat`, a
    /// factory), is a Python number with a fractional part, `value`: torch wants ints there,
    /// and raises a `TypeError` in eager as under export. The event's range is the argument's.
    FloatSize { op: String, value: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub(crate) kind: EventKind,
    pub(crate) range: TextRange,
    /// It happens only if an earlier operand of `and`/`or`, which the analysis cannot decide
    /// (a dtype test, a config flag), lets it run.
    pub(crate) conditional: bool,
    /// It happens inside an `if` clause that runs only when a condition the analysis cannot
    /// decide (a configuration flag, a size it lost) says so.
    pub(crate) undecided_path: bool,
    /// The file it happens in: 0 for the analysed file, `k` for the model's `foreign[k - 1]`.
    pub(crate) file: u32,
    /// The call sites that lead to it from the analysed file's root, outermost first, when
    /// the analysis crossed files on the way (empty otherwise).
    pub(crate) chain: Vec<super::Site>,
}

impl EventKind {
    /// The declared dynamic dimension the event is about, when it is one: a guard on it, a
    /// specialisation of it, a relation it must satisfy.
    pub(crate) fn dynamic_dim(&self) -> Option<&Rc<DimDecl>> {
        match self {
            EventKind::Truthiness {
                value:
                    Value::Guard(super::value::Guard {
                        kind: super::value::GuardKind::Dynamic(dim),
                        ..
                    }),
                ..
            }
            | EventKind::DimSpecialized { dim, .. }
            | EventKind::DimFixed { dim, .. }
            | EventKind::ReshapeGuard { dim, .. }
            | EventKind::BufferSlice { dim }
            | EventKind::Unrolled { dim, .. }
            | EventKind::DimMismatch { left: dim, .. } => Some(dim),
            _ => None,
        }
    }
}

impl EventKind {
    /// Whether the event involves a dimension `@dynamic_spec` declares: an unbacked size, on
    /// which a guard is a data-dependent error (PT103) and an equality a runtime check.
    pub(crate) fn on_unbacked_dim(&self) -> bool {
        let sym = |size: &super::symbolic::SymSize| size.dims().any(|dim| dim.unbacked);
        match self {
            EventKind::SizeEquality { left, right, .. } => sym(left) || sym(right),
            EventKind::MaybeOne { size, other } => sym(size) || sym(other),
            EventKind::StridedSlice { size }
            | EventKind::WindowOutput { size, .. }
            | EventKind::ReflectionTooWide { size, .. } => sym(size),
            EventKind::SliceWithin { size, length } => sym(size) || sym(length),
            EventKind::DimMismatch { left, right } => left.unbacked || right.unbacked,
            EventKind::PoolFixesLength { dim, .. }
            | EventKind::CutsUnbackedDim { dim, .. }
            | EventKind::AdaptivePoolUnbacked { dim, .. }
            | EventKind::Scalar {
                value:
                    Value::Size {
                        origin: super::value::SizeOrigin::Dynamic { dim, .. },
                        ..
                    },
                ..
            }
            | EventKind::IterateTensor {
                size:
                    Value::Size {
                        origin: super::value::SizeOrigin::Dynamic { dim, .. },
                        ..
                    },
                ..
            } => dim.unbacked,
            other => other.dynamic_dim().is_some_and(|dim| dim.unbacked),
        }
    }
}

impl Event {
    /// A guard on a dynamic dimension that the known ranges do not decide (PT401).
    fn is_open_dynamic_guard(&self) -> bool {
        matches!(
            &self.kind,
            EventKind::Truthiness {
                value: Value::Guard(guard),
                ..
            } if matches!(guard.kind, super::value::GuardKind::Dynamic(_)) && !guard.decided
        )
    }

    /// A guard on a static dimension (PT402).
    fn is_static_guard(&self) -> bool {
        matches!(
            &self.kind,
            EventKind::Truthiness {
                value: Value::Guard(guard),
                ..
            } if guard.kind == super::value::GuardKind::Static
        )
    }

    /// Whether this event, found by one entrypoint's analysis, names the strongest finding on
    /// its construct among several entrypoints': a guard on a dimension that one entrypoint
    /// declares dynamic (PT401) over the same guard on a static dimension from another (PT402).
    pub(crate) fn outranks_on_its_construct(&self) -> bool {
        self.is_open_dynamic_guard()
    }

    /// One finding per construct when several entrypoints' analyses reach it: where one of
    /// them makes a guard's dimension dynamic and the range it declares leaves the guard open
    /// (PT401), the same guard as another entrypoint sees it, on a dimension it keeps static
    /// (PT402), is dropped. The export that declares the dimension dynamic fails on it, which
    /// is what needs fixing; "the graph keeps the example's side" is true only of the other
    /// export, and read beside the error it contradicts it.
    pub(crate) fn keep_strongest_guards(events: &mut Vec<Event>) {
        let open: std::collections::HashSet<(u32, TextRange)> = events
            .iter()
            .filter(|event| event.is_open_dynamic_guard())
            .map(|event| (event.file, event.range))
            .collect();
        if open.is_empty() {
            return;
        }
        events.retain(|event| {
            !(event.is_static_guard() && open.contains(&(event.file, event.range)))
        });
    }

    /// A guard the known ranges decide: recorded, but nothing any rule reports.
    pub(crate) fn is_settled(&self) -> bool {
        matches!(
            &self.kind,
            EventKind::Truthiness {
                value: Value::Guard(guard),
                ..
            } if guard.decided
        )
    }

    /// The event as another analysis of its file can use it: values that index the model it
    /// was found in (classes, functions) are forgotten, and it belongs to file 0.
    pub(crate) fn portable(&self) -> Event {
        let kind = match &self.kind {
            EventKind::Truthiness { value, context } => EventKind::Truthiness {
                value: value.portable(),
                context: *context,
            },
            EventKind::Scalar { value, usage } => EventKind::Scalar {
                value: value.portable(),
                usage: *usage,
            },
            EventKind::IterateTensor { tensor, size } => EventKind::IterateTensor {
                tensor: tensor.clone(),
                size: size.portable(),
            },
            other => other.clone(),
        };
        Event {
            kind,
            range: self.range,
            conditional: self.conditional,
            undecided_path: self.undecided_path,
            file: 0,
            chain: Vec::new(),
        }
    }
}
