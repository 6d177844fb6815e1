//! The one catalogue of torch semantics: which calls return tensors, which return Python
//! values, which make sizes depend on data, which base classes are modules, and what each op
//! does to its tensors' shapes ([`shape_rule`]). The interpreter, the `register_fake` writer and
//! the `torch.where` rewrite all read it, so they agree on what an op is.

/// Classes that make a subclass an `nn.Module`, besides `torch.nn.*`: package and class.
const EXTERNAL_MODULE_BASES: &[(&str, &str)] = &[
    ("torch.jit", "ScriptModule"),
    ("pytorch_lightning", "LightningModule"),
    ("pytorch_lightning.core", "LightningModule"),
    ("lightning", "LightningModule"),
    ("lightning.pytorch", "LightningModule"),
    ("lightning.pytorch.core", "LightningModule"),
    ("transformers", "PreTrainedModel"),
    ("transformers.modeling_utils", "PreTrainedModel"),
    ("transformers.modeling_layers", "GradientCheckpointingLayer"),
    ("transformers", "GradientCheckpointingLayer"),
];

/// Whether a base class given by its qualified name makes a class an `nn.Module`.
pub(crate) fn is_module_base(qualified: &str) -> bool {
    match qualified.rsplit_once('.') {
        Some((package, class)) => is_module_base_in(package, class),
        None => false,
    }
}

/// [`is_module_base`] of `package.class`, for callers that hold the two parts.
pub(crate) fn is_module_base_in(package: &str, class: &str) -> bool {
    if EXTERNAL_MODULE_BASES.contains(&(package, class)) {
        return true;
    }
    let capitalised = class.starts_with(|c: char| c.is_ascii_uppercase());
    let module_package = package == "torch.nn"
        || package.starts_with("torch.nn.modules")
        || package.starts_with("torch.ao.nn")
        || package == "torchvision.models"
        || package.starts_with("torchvision.ops")
        || package.starts_with("timm.layers")
        || package.starts_with("timm.models");
    module_package
        && capitalised
        && !matches!(class, "Parameter" | "Buffer" | "UninitializedParameter")
}

/// What constructing a `torch.nn` class gives.
pub(crate) enum Constructed {
    Module,
    Modules,
    Parameter,
}

pub(crate) fn constructed(qualified: &str) -> Option<Constructed> {
    match qualified {
        "torch.nn.Parameter" | "torch.nn.parameter.Parameter" | "torch.nn.Buffer" => {
            Some(Constructed::Parameter)
        }
        "torch.nn.ModuleList" | "torch.nn.ModuleDict" => Some(Constructed::Modules),
        "torch.nn.Sequential" => Some(Constructed::Module),
        _ if is_module_base(qualified) => Some(Constructed::Module),
        _ => None,
    }
}

/// Wrappers that return the module they are given, reparametrised but of the same shapes
/// (`nn.utils.weight_norm(nn.Conv1d(...))`).
pub(crate) fn returns_its_module(qualified: &str) -> bool {
    matches!(
        qualified,
        "torch.nn.utils.weight_norm"
            | "torch.nn.utils.spectral_norm"
            | "torch.nn.utils.parametrizations.weight_norm"
            | "torch.nn.utils.parametrizations.spectral_norm"
            | "torch.nn.utils.parametrizations.orthogonal"
            | "torch.nn.utils.weight_norm.weight_norm"
            | "torch.nn.utils.spectral_norm.spectral_norm"
    )
}

/// Arguments of a torch function that must be Python integers while tracing, by position and
/// keyword: a dynamic size there is specialised to the example's (measured, torch 2.15:
/// `torch.linspace(-1, 1, steps=x.shape[1])` and `F.max_pool1d(x, x.size(2))` fix the
/// dimension; `torch.arange(n)` does not).
pub(crate) fn concrete_int_arguments(qualified: &str) -> &'static [(usize, &'static str)] {
    match qualified {
        "torch.linspace" | "torch.logspace" => &[(2, "steps")],
        "torch.nn.functional.max_pool1d"
        | "torch.nn.functional.max_pool2d"
        | "torch.nn.functional.max_pool3d"
        | "torch.nn.functional.avg_pool1d"
        | "torch.nn.functional.avg_pool2d"
        | "torch.nn.functional.avg_pool3d" => &[(1, "kernel_size"), (2, "stride")],
        _ => &[],
    }
}

/// The layer class whose window a functional pooling applies (`F.max_pool2d(x, 2)` is
/// `nn.MaxPool2d(2)(x)`): its arguments after the input are the constructor's, in order.
pub(crate) fn functional_window(qualified: &str) -> Option<&'static str> {
    Some(match qualified.strip_prefix("torch.nn.functional.")? {
        "max_pool1d" => "torch.nn.MaxPool1d",
        "max_pool2d" => "torch.nn.MaxPool2d",
        "max_pool3d" => "torch.nn.MaxPool3d",
        "avg_pool1d" => "torch.nn.AvgPool1d",
        "avg_pool2d" => "torch.nn.AvgPool2d",
        "avg_pool3d" => "torch.nn.AvgPool3d",
        "adaptive_avg_pool1d" => "torch.nn.AdaptiveAvgPool1d",
        "adaptive_avg_pool2d" => "torch.nn.AdaptiveAvgPool2d",
        "adaptive_avg_pool3d" => "torch.nn.AdaptiveAvgPool3d",
        "adaptive_max_pool1d" => "torch.nn.AdaptiveMaxPool1d",
        _ => return None,
    })
}

/// The kind of result of a call to a `torch` function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TorchResult {
    Tensor,
    /// A tuple of tensors (`chunk`, `split`, `sort`).
    Tensors,
    /// A tensor whose size depends on data (`nonzero`).
    DataDependentShape,
    /// A Python integer computed from sizes (`torch.numel`).
    Size,
    /// Not a tensor: a flag, a dtype, a context manager.
    Other,
    /// Not a torch function the table knows to return a tensor.
    Unknown,
}

/// `torch.cuda.FloatTensor(...)` and its kin: legacy constructors of a tensor on CUDA, of the
/// sizes given (or of the data given, a list).
pub(crate) fn is_legacy_cuda_constructor(qualified: &str) -> bool {
    qualified.strip_prefix("torch.cuda.").is_some_and(|class| {
        matches!(
            class,
            "FloatTensor"
                | "DoubleTensor"
                | "HalfTensor"
                | "BFloat16Tensor"
                | "LongTensor"
                | "IntTensor"
                | "ShortTensor"
                | "CharTensor"
                | "ByteTensor"
                | "BoolTensor"
        )
    })
}

/// Namespaces of torch whose functions do not compute tensors from tensors.
const NON_TENSOR_NAMESPACES: &[&str] = &[
    "torch.jit.",
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.compiler.",
    "torch.onnx.",
    "torch._C.",
    "torch.fx.",
    "torch._dynamo.",
    "torch.library.",
    "torch.utils.",
    "torch.export.",
    "torch.overrides.",
    "torch.testing.",
    "torch.hub.",
    "torch.amp.",
    "torch.cpu.",
    "torch.mps.",
    "torch.xpu.",
    "torch.autograd.",
    "torch.nn.utils.",
    "torch.nn.modules.",
    "torch.multiprocessing.",
    "torch.profiler.",
    "torch.random.",
    "torch.serialization.",
    "torch.package.",
    "torch.quantization.",
    "torch.ao.",
    "torch._logging.",
    "torch._inductor.",
];

/// Functions in tensor-computing namespaces that return something else.
const NON_TENSOR_FUNCTIONS: &[&str] = &[
    "is_tensor",
    "is_storage",
    "is_floating_point",
    "is_complex",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "is_autocast_enabled",
    "is_autocast_cpu_enabled",
    "get_default_dtype",
    "set_default_dtype",
    "typename",
    "result_type",
    "promote_types",
    "can_cast",
    "finfo",
    "iinfo",
    "broadcast_shapes",
    "get_num_threads",
    "set_num_threads",
    "manual_seed",
    "seed",
    "initial_seed",
    "set_grad_enabled",
    "no_grad",
    "enable_grad",
    "inference_mode",
    "autocast",
    "device",
    "dtype",
    "compile",
    "export",
    "_assert",
    "_assert_async",
    "_check",
    "_check_is_size",
    "_check_with",
    "_check_value",
    "_check_index",
    "_check_type",
    "_check_not_implemented",
    "sym_int",
    "sym_float",
    "sym_max",
    "sym_min",
    "sym_not",
    "sym_ite",
    "is_same_size",
    "are_deterministic_algorithms_enabled",
    "use_deterministic_algorithms",
    "set_printoptions",
    "get_rng_state",
    "set_rng_state",
    "is_nonzero_",
    "is_warn_always_enabled",
    "is_vulkan_available",
    "vmap",
    "cond",
    "while_loop",
    "save",
    "load",
    "set_float32_matmul_precision",
    "get_float32_matmul_precision",
    "is_deterministic_algorithms_warn_only_enabled",
];

const DATA_DEPENDENT_SHAPE_FUNCTIONS: &[&str] = &[
    "nonzero",
    "unique",
    "unique_consecutive",
    "masked_select",
    "argwhere",
    "nonzero_static_",
];

const TENSORS_FUNCTIONS: &[&str] = &[
    "chunk",
    "split",
    "unbind",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "meshgrid",
    "broadcast_tensors",
    "split_with_sizes",
    "sort",
    "topk",
    "kthvalue",
    "aminmax",
    "frexp",
    "var_mean",
    "std_mean",
    "histogram",
    "unique_consecutive_",
    "slogdet",
    "lu",
    "qr",
    "svd",
    "eig",
    "eigh",
    "lstsq",
    "cummax",
    "cummin",
    "mode",
    "median_",
];

/// Classifies a call to a qualified name under `torch`.
pub(crate) fn torch_function(qualified: &str, positional_args: usize) -> TorchResult {
    if !qualified.starts_with("torch.") {
        return TorchResult::Unknown;
    }
    // A `PackedSequence` holds `sum(lengths)` steps, and its batch sizes are tensor data.
    if let Some(name) = qualified.strip_prefix("torch.nn.utils.rnn.")
        && ["pack_padded_sequence", "pack_sequence"].contains(&name)
    {
        return TorchResult::DataDependentShape;
    }
    if NON_TENSOR_NAMESPACES
        .iter()
        .any(|namespace| qualified.starts_with(namespace))
    {
        return TorchResult::Other;
    }
    if qualified.starts_with("torch.ops.") {
        return TorchResult::Tensor;
    }
    let name = qualified.rsplit('.').next().unwrap_or(qualified);
    if name.starts_with(|c: char| c.is_ascii_uppercase()) {
        // `torch.Tensor(...)`, `torch.LongTensor(...)` build tensors; other classes do not.
        return if name.ends_with("Tensor") {
            TorchResult::Tensor
        } else {
            TorchResult::Other
        };
    }
    if NON_TENSOR_FUNCTIONS.contains(&name) {
        return TorchResult::Other;
    }
    // Accessors and flags: `torch.get_autocast_dtype`, `torch.is_autocast_enabled`, ...
    let accessor = ["get_", "is_", "set_", "has_", "use_", "are_"]
        .iter()
        .any(|prefix| name.starts_with(prefix));
    if accessor && name != "is_nonzero" {
        return TorchResult::Other;
    }
    if name == "numel" {
        return TorchResult::Size;
    }
    if DATA_DEPENDENT_SHAPE_FUNCTIONS.contains(&name) || (name == "where" && positional_args == 1) {
        return TorchResult::DataDependentShape;
    }
    if TENSORS_FUNCTIONS.contains(&name) {
        return TorchResult::Tensors;
    }
    TorchResult::Tensor
}

/// The kind of result of a method called on a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MethodResult {
    /// A tensor with the receiver's dimensions.
    SameShape,
    Tensor,
    Tensors,
    DataDependentShape,
    /// `.item()`: a data-dependent Python number.
    DataScalar,
    /// `.tolist()`.
    DataScalars,
    /// `.size()` / `.size(i)`.
    Size,
    /// `.numel()`: the product of all sizes.
    Numel,
    Other,
}

const OTHER_METHODS: &[&str] = &[
    "dim",
    "ndimension",
    "get_device",
    "element_size",
    "is_contiguous",
    "is_floating_point",
    "is_complex",
    "is_signed",
    "data_ptr",
    "storage_offset",
    "stride",
    "is_pinned",
    "is_shared",
    "is_set_to",
    "register_hook",
    "backward",
    "untyped_storage",
    "storage",
    "numpy",
    "type",
    "is_inference",
    "has_names",
    "is_coalesced",
    "dense_dim",
    "sparse_dim",
    "retain_grad",
    "__len__",
    "tolist_",
    "apply_",
    "map_",
    "copy_",
    "record_stream",
    "share_memory_",
    // Not tensor methods at all: a value assumed to be a tensor that has them is a dict, a list
    // or a string, so what they return is not a tensor either.
    "items",
    "keys",
    "values",
    "get",
    "append",
    "extend",
    "update",
    "pop",
    "insert",
    "startswith",
    "endswith",
    "format",
    "join",
    "lower",
    "upper",
    "strip",
    "replace",
    "encode",
    "decode",
    "setdefault",
];

pub(crate) fn tensor_method(method: &str) -> MethodResult {
    match method {
        "item" => MethodResult::DataScalar,
        "tolist" => MethodResult::DataScalars,
        "size" => MethodResult::Size,
        "numel" | "nelement" => MethodResult::Numel,
        "nonzero" | "unique" | "unique_consecutive" | "masked_select" | "argwhere" => {
            MethodResult::DataDependentShape
        }
        "chunk" | "split" | "unbind" | "tensor_split" | "sort" | "topk" | "kthvalue"
        | "split_with_sizes" | "aminmax" | "var_mean" | "std_mean" | "cummax" | "cummin" => {
            MethodResult::Tensors
        }
        _ if OTHER_METHODS.contains(&method) => MethodResult::Other,
        _ if keeps_shape(method) => MethodResult::SameShape,
        _ => MethodResult::Tensor,
    }
}

/// The kind of a tensor attribute.
pub(crate) enum AttributeResult {
    Tensor,
    Shape,
    Other,
}

pub(crate) fn tensor_attribute(attribute: &str) -> AttributeResult {
    match attribute {
        "shape" => AttributeResult::Shape,
        "T" | "mT" | "H" | "mH" | "data" | "grad" | "real" | "imag" | "values" | "indices" => {
            AttributeResult::Tensor
        }
        _ => AttributeResult::Other,
    }
}

/// Top-level modules implemented in C (or wrapping C libraries) that Dynamo skips: strict
/// export fails on a call into them. NumPy is not here: PT201 owns it.
pub(crate) const STRICT_UNTRACEABLE_MODULES: &[&str] = &[
    "zlib",
    "hashlib",
    "binascii",
    "pickle",
    "marshal",
    "subprocess",
    "socket",
    "sqlite3",
    "ctypes",
    "multiprocessing",
    "scipy",
    "sklearn",
    "pandas",
    "cv2",
    "PIL",
    "numba",
    "gzip",
    "bz2",
    "lzma",
    // Measured on torch 2.15: `json.dumps`, `time.time()` and `random.random()` fail strict export.
    "json",
    "time",
    "random",
];

/// Libraries that read a tensor's data when given one (through `__array__`): with a tensor
/// argument they fail in both modes.
pub(crate) const DATA_READING_MODULES: &[&str] =
    &["scipy", "sklearn", "pandas", "cv2", "PIL", "numba"];

/// Top-level modules whose results, read at trace time, become constants of the exported
/// program (environment, clocks, files): both modes succeed, silently.
pub(crate) const BAKED_IN_MODULES: &[&str] = &[
    "os", "sys", "datetime", "pathlib", "tempfile", "shutil", "uuid", "secrets", "requests",
    "urllib", "http",
];

/// Top-level modules whose calls read a value at trace time that changes from run to run (the
/// clock, `random`, the environment): where it reaches a tensor, the exported program keeps the
/// value the export read (PT601).
pub(crate) const READ_AT_TRACE_TIME: &[&str] =
    &["random", "time", "datetime", "os", "uuid", "secrets"];

/// Draws from Python's `random` and the same draw made by torch, in the exported graph: (the
/// `random` function, its positional arguments, the torch function, the replacement with `{f}`
/// for that function and `{0}`, `{1}` for the arguments). Each draws from the same distribution
/// (`uniform(a, b)` is `uniform_(a, b)`, `gauss(mu, sigma)` is `normal(mu, sigma)`), as a 0-d
/// float tensor instead of a Python float.
pub(crate) const RANDOM_IN_TORCH: &[(&str, usize, &str, &str)] = &[
    ("random.random", 0, "rand", "{f}(())"),
    ("random.uniform", 2, "empty", "{f}(()).uniform_({0}, {1})"),
    ("random.gauss", 2, "normal", "{f}({0}, {1}, ())"),
    ("random.normalvariate", 2, "normal", "{f}({0}, {1}, ())"),
    (
        "random.expovariate",
        1,
        "empty",
        "{f}(()).exponential_({0})",
    ),
];

/// Builtins that do I/O or run code; Dynamo refuses them.
/// The calls that build a DTensor from a plain tensor. Measured with torch 2.15: in traced code
/// export fails in both modes (non-strict: "Expected all pytree.tree_leaves of (args, kwargs) to
/// be graphable types, but found non-fx-graphable type `DTensorSpec`"; strict: the same, or
/// `Unsupported method call` inside `distributed_c10d`), where DTensor parameters and inputs
/// built outside the model export.
pub(crate) fn builds_dtensor(qualified: &str) -> bool {
    let name = qualified
        .strip_prefix("torch.distributed.tensor.")
        .or_else(|| qualified.strip_prefix("torch.distributed._tensor."));
    matches!(name, Some("DTensor.from_local" | "distribute_tensor"))
}

pub(crate) const UNTRACEABLE_BUILTINS: &[&str] =
    &["open", "input", "eval", "exec", "compile", "breakpoint"];

/// Whether a qualified name is a NumPy function.
pub(crate) fn is_numpy(qualified: &str) -> bool {
    qualified.starts_with("numpy.")
}

/// `torch.nn` layers whose output keeps the input's first dimension (the batch): linear maps,
/// convolutions, norms, pooling, dropout, activations, embeddings.
pub(crate) fn keeps_batch_dim(qualified: &str) -> bool {
    let Some(layer) = qualified
        .strip_prefix("torch.nn.")
        .filter(|rest| !rest.contains('.'))
    else {
        return false;
    };
    let family = layer.trim_end_matches(|c: char| c.is_ascii_digit() || c == 'd');
    matches!(
        family,
        "Linear"
            | "LazyLinear"
            | "Conv"
            | "ConvTranspose"
            | "LayerNorm"
            | "RMSNorm"
            | "GroupNorm"
            | "BatchNorm"
            | "InstanceNorm"
            | "Dropout"
            | "Dropout1"
            | "Dropout2"
            | "Dropout3"
            | "MaxPool"
            | "AvgPool"
            | "AdaptiveAvgPool"
            | "AdaptiveMaxPool"
            | "Upsample"
            | "UpsamplingNearest"
            | "UpsamplingBilinear"
            | "Embedding"
            | "Identity"
            | "ReLU"
            | "GELU"
            | "SiLU"
            | "Tanh"
            | "Sigmoid"
            | "LeakyReLU"
            | "ELU"
            | "Mish"
            | "Softmax"
            | "LogSoftmax"
            | "Hardswish"
            | "Hardsigmoid"
            | "Softplus"
            | "PReLU"
            | "TransformerEncoder"
            | "TransformerDecoder"
            | "MultiheadAttention"
    ) || [
        "ReflectionPad",
        "ReplicationPad",
        "ZeroPad",
        "ConstantPad",
        "CircularPad",
    ]
    .iter()
    .any(|padding| layer.starts_with(padding))
}

/// The masks a `torch.nn` transformer's `forward` takes with the flag that says whether each is
/// causal, as (mask's position, mask's name, flag's position, flag's name). Given a mask and no
/// flag, torch compares the mask's values with a causal mask (`_detect_is_causal_mask`), which
/// the exporter cannot do. Measured with torch 2.15: `nn.TransformerEncoderLayer` does not.
pub(crate) fn causal_masks(
    qualified: &str,
) -> &'static [(usize, &'static str, usize, &'static str)] {
    match qualified {
        "torch.nn.TransformerEncoder" => &[(1, "mask", 3, "is_causal")],
        "torch.nn.TransformerDecoder" => &[(2, "tgt_mask", 6, "tgt_is_causal")],
        "torch.nn.Transformer" => &[
            (2, "src_mask", 8, "src_is_causal"),
            (3, "tgt_mask", 9, "tgt_is_causal"),
        ],
        _ => &[],
    }
}

/// The submodules a `torch.nn` class's own `__init__` builds, as (attribute, class): a subclass
/// (`class Model(nn.Transformer)`) that calls `super().__init__(...)` and then `self.encoder`
/// calls that layer.
pub(crate) fn base_submodules(qualified: &str) -> &'static [(&'static str, &'static str)] {
    match qualified {
        "torch.nn.Transformer" => &[
            ("encoder", "torch.nn.TransformerEncoder"),
            ("decoder", "torch.nn.TransformerDecoder"),
        ],
        _ => &[],
    }
}

/// What a `torch.nn` layer does to the shape of its input, from its constructor's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LayerShape {
    /// The same shape: activations, dropout, norms over the last dimensions.
    Same,
    /// `Linear(in_features, out_features)`: the last dimension must be `in_features` and
    /// becomes `out_features`.
    Linear,
    /// `Embedding(num_embeddings, embedding_dim)`: a new last dimension of `embedding_dim`.
    Embedding,
    /// `Conv{n}d(in_channels, out_channels, kernel_size, stride, padding, dilation)`: the
    /// channel dimension must be `in_channels`, each spatial size
    /// `(L + 2·padding − dilation·(kernel − 1) − 1) // stride + 1`.
    Conv { spatial: usize },
    /// `ConvTranspose{n}d(in_channels, out_channels, kernel_size, stride, padding,
    /// output_padding, groups, bias, dilation)`: each spatial size
    /// `(L − 1)·stride − 2·padding + dilation·(kernel − 1) + output_padding + 1`.
    ConvTranspose { spatial: usize },
    /// `MaxPool{n}d(kernel_size, stride=kernel_size, padding, dilation)`, `AvgPool{n}d`.
    Pool { spatial: usize },
    /// `AdaptiveAvgPool{n}d(output_size)`: each spatial size becomes `output_size`.
    AdaptivePool { spatial: usize },
    /// `ReflectionPad{n}d(padding)` (and `ReplicationPad`, `ZeroPad`, `ConstantPad`,
    /// `CircularPad`): each of the last `spatial` sizes grows by twice an integer `padding`.
    /// Reflection needs each padded size above `padding` (measured, torch 2.15:
    /// `ReflectionPad1d(3)` over a dynamic length guards it `>= 4`).
    Pad { spatial: usize, reflect: bool },
    /// `Upsample(size, scale_factor)`, `UpsamplingNearest2d`, `UpsamplingBilinear2d`: every
    /// dimension after the channels scaled by an integer `scale_factor` (as `F.interpolate`).
    Upsample,
    /// `BatchNorm{n}d(num_features)`: dimension 1 must be `num_features`.
    ChannelNorm,
    /// `LayerNorm(normalized_shape)`: the last dimension must be `normalized_shape`.
    LastNorm,
    /// Keeps the first dimension; the catalogue does not follow the others.
    BatchOnly,
    /// `LSTM` / `GRU` / `RNN(input_size, hidden_size, num_layers, bias, batch_first, dropout,
    /// bidirectional)`: runs over the sequence dimension (0, or 1 with `batch_first`) step by
    /// step; the output's last dimension is `hidden_size` (twice that, bidirectional).
    /// Measured with torch 2.15, strict and not: a dynamic sequence length is specialised.
    Recurrent,
    /// `MultiheadAttention(embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn,
    /// kdim, vdim, batch_first)` called on `(query, key, value)`: `(output, weights)`, the
    /// output of the query's shape and the weights `(batch, L, S)` (`(L, S)` unbatched), `L`
    /// the query's length and `S` the key's. Measured with torch 2.15, strict and not: a
    /// dynamic batch and length pass through it.
    Attention,
}

/// Recurrent layers, which the exporter unrolls over the sequence.
pub(crate) fn is_recurrent(qualified: &str) -> bool {
    matches!(qualified, "torch.nn.LSTM" | "torch.nn.GRU" | "torch.nn.RNN")
}

/// What layer `qualified` does to shapes, for the layers that keep the batch dimension.
pub(crate) fn layer_shape(qualified: &str) -> Option<LayerShape> {
    if is_recurrent(qualified) {
        return Some(LayerShape::Recurrent);
    }
    if !keeps_batch_dim(qualified) {
        return None;
    }
    let layer = qualified.rsplit('.').next().unwrap_or(qualified);
    let spatial = |prefix: &str| {
        layer
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix('d'))
            .and_then(|digits| digits.parse::<usize>().ok())
    };
    Some(match layer {
        "Linear" => LayerShape::Linear,
        "Embedding" => LayerShape::Embedding,
        "MultiheadAttention" => LayerShape::Attention,
        "Upsample" | "UpsamplingNearest2d" | "UpsamplingBilinear2d" => LayerShape::Upsample,
        "LayerNorm" | "RMSNorm" => LayerShape::LastNorm,
        "BatchNorm1d" | "BatchNorm2d" | "BatchNorm3d" => LayerShape::ChannelNorm,
        "GroupNorm" | "Identity" | "ReLU" | "GELU" | "SiLU" | "Tanh" | "Sigmoid" | "LeakyReLU"
        | "ELU" | "Mish" | "Softmax" | "LogSoftmax" | "Hardswish" | "Hardsigmoid" | "Softplus"
        | "PReLU" | "Dropout" | "Dropout1d" | "Dropout2d" | "Dropout3d" | "InstanceNorm1d"
        | "InstanceNorm2d" | "InstanceNorm3d" | "TransformerEncoder" | "TransformerDecoder" => {
            LayerShape::Same
        }
        _ => {
            if let Some(spatial) = spatial("Conv") {
                LayerShape::Conv { spatial }
            } else if let Some(spatial) = spatial("ConvTranspose") {
                LayerShape::ConvTranspose { spatial }
            } else if let Some(spatial) = spatial("MaxPool").or_else(|| spatial("AvgPool")) {
                LayerShape::Pool { spatial }
            } else if let Some(spatial) =
                spatial("AdaptiveAvgPool").or_else(|| spatial("AdaptiveMaxPool"))
            {
                LayerShape::AdaptivePool { spatial }
            } else if let Some(spatial) = spatial("ReflectionPad") {
                LayerShape::Pad {
                    spatial,
                    reflect: true,
                }
            } else if let Some(spatial) = spatial("ReplicationPad")
                .or_else(|| spatial("ZeroPad"))
                .or_else(|| spatial("ConstantPad"))
                .or_else(|| spatial("CircularPad"))
            {
                LayerShape::Pad {
                    spatial,
                    reflect: false,
                }
            } else {
                LayerShape::BatchOnly
            }
        }
    })
}

/// The order of a layer's constructor parameters whose literal sizes decide its output shape.
pub(crate) fn layer_parameters(shape: LayerShape) -> &'static [&'static str] {
    match shape {
        LayerShape::Linear => &["in_features", "out_features"],
        LayerShape::Embedding => &["num_embeddings", "embedding_dim"],
        LayerShape::Conv { .. } => &[
            "in_channels",
            "out_channels",
            "kernel_size",
            "stride",
            "padding",
            "dilation",
        ],
        LayerShape::ConvTranspose { .. } => &[
            "in_channels",
            "out_channels",
            "kernel_size",
            "stride",
            "padding",
            "output_padding",
            "groups",
            "bias",
            "dilation",
        ],
        LayerShape::Pool { .. } => &["kernel_size", "stride", "padding", "dilation"],
        LayerShape::AdaptivePool { .. } => &["output_size"],
        LayerShape::Pad { .. } => &["padding"],
        LayerShape::Upsample => &["size", "scale_factor"],
        LayerShape::Recurrent => &[
            "input_size",
            "hidden_size",
            "num_layers",
            "bias",
            "batch_first",
            "dropout",
            "bidirectional",
        ],
        LayerShape::Attention => &[
            "embed_dim",
            "num_heads",
            "dropout",
            "bias",
            "add_bias_kv",
            "add_zero_attn",
            "kdim",
            "vdim",
            "batch_first",
        ],
        LayerShape::ChannelNorm => &["num_features"],
        LayerShape::LastNorm => &["normalized_shape"],
        LayerShape::Same | LayerShape::BatchOnly => &[],
    }
}

/// Tensor methods that move dimensions, and the torch functions of the same name with the
/// tensor first, whose result shape the interpreter computes from the arguments (`x.view`,
/// `torch.flatten(x, 1)`). Concatenation and matrix products are followed on their own, with
/// the sizes they force equal.
pub(crate) const SHAPE_OPS: &[&str] = &[
    "view",
    "reshape",
    "transpose",
    "swapaxes",
    "t",
    "permute",
    "unsqueeze",
    "squeeze",
    "flatten",
    "expand",
    "repeat",
];

/// Tensor methods whose arguments are sizes, as ints (`x.view(b, -1)`, `x.new_zeros(n, 4)`):
/// `new_full`'s only its first, the size tuple.
pub(crate) fn method_takes_sizes(method: &str) -> bool {
    matches!(
        method,
        "view"
            | "reshape"
            | "expand"
            | "repeat"
            | "new_zeros"
            | "new_ones"
            | "new_empty"
            | "new_full"
    )
}

/// Functions that make a tensor of the sizes they are given.
pub(crate) fn is_factory(name: &str) -> bool {
    matches!(name, "ones" | "zeros" | "randn" | "rand" | "empty" | "full")
}

/// What an op does to the shapes of its tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShapeRule {
    /// Each output element comes from the same element of its (broadcast) tensor arguments:
    /// the output has their broadcast shape (`add`, `sigmoid`, `where`).
    Elementwise,
    /// The first tensor's shape, its values converted (`float`, `to`, `clone`) or computed
    /// along it (`softmax`, `cumsum`, `flip`).
    SameAsInput,
    /// Over `dim` (every dim without one; `keepdim` keeps them as 1). `dtype` is the result's
    /// when it is not the input's; `indices_with_dim`: with a `dim` the result is a
    /// `(values, indices)` pair (`max`, `min`, `median`).
    Reduction {
        dtype: Option<&'static str>,
        indices_with_dim: bool,
    },
}

/// Functions and methods computing each output element from the same element of their inputs.
const ELEMENTWISE: &[&str] = &[
    "abs",
    "absolute",
    "neg",
    "negative",
    "positive",
    "sgn",
    "sign",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "square",
    "reciprocal",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "atan2",
    "arctan2",
    "sinc",
    "deg2rad",
    "rad2deg",
    "erf",
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "polygamma",
    "i0",
    "sigmoid",
    "logit",
    "logsigmoid",
    "relu",
    "relu6",
    "gelu",
    "silu",
    "mish",
    "elu",
    "selu",
    "celu",
    "softplus",
    "softsign",
    "tanhshrink",
    "threshold",
    "leaky_relu",
    "hardtanh",
    "hardswish",
    "hardsigmoid",
    "clamp",
    "clip",
    "clamp_min",
    "clamp_max",
    "pow",
    "float_power",
    "floor",
    "ceil",
    "round",
    "trunc",
    "frac",
    "add",
    "sub",
    "subtract",
    "mul",
    "multiply",
    "div",
    "divide",
    "true_divide",
    "fmod",
    "remainder",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "hypot",
    "copysign",
    "heaviside",
    "nextafter",
    "logaddexp",
    "xlogy",
    "lerp",
    "addcmul",
    "addcdiv",
    "nan_to_num",
    "where",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "logical_not",
    "logical_and",
    "logical_or",
    "logical_xor",
    "isnan",
    "isinf",
    "isfinite",
    "masked_fill",
];

/// Functions and methods whose result has their (first) tensor's shape without being
/// elementwise: conversions, and ops computed along a dimension.
const SAME_AS_INPUT: &[&str] = &[
    "float",
    "half",
    "double",
    "int",
    "long",
    "bool",
    "bfloat16",
    "short",
    "byte",
    "char",
    "to",
    "type_as",
    "contiguous",
    "clone",
    "detach",
    "cpu",
    "cuda",
    "pin_memory",
    "requires_grad_",
    "zero_",
    "fill_",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "new_zeros_like",
    "softmax",
    "log_softmax",
    "cumsum",
    "cumprod",
    "flip",
    "roll",
    "layer_norm",
    "normalize",
    "dropout",
];

/// Reductions: (name, result dtype when not the input's, returns indices too given a `dim`).
const REDUCTIONS: &[(&str, Option<&str>, bool)] = &[
    ("sum", None, false),
    ("mean", None, false),
    ("prod", None, false),
    ("amax", None, false),
    ("amin", None, false),
    ("logsumexp", None, false),
    ("norm", None, false),
    ("std", None, false),
    ("var", None, false),
    ("nansum", None, false),
    ("nanmean", None, false),
    ("max", None, true),
    ("min", None, true),
    ("median", None, true),
    ("all", Some("bool"), false),
    ("any", Some("bool"), false),
    ("argmax", Some("int64"), false),
    ("argmin", Some("int64"), false),
    ("count_nonzero", Some("int64"), false),
];

/// What op `name` (a function's or method's last name; an in-place `add_` is `add`) does to
/// shapes, when the catalogue knows.
pub(crate) fn shape_rule(name: &str) -> Option<ShapeRule> {
    let lookup = |name: &str| {
        if ELEMENTWISE.contains(&name) {
            Some(ShapeRule::Elementwise)
        } else if SAME_AS_INPUT.contains(&name) {
            Some(ShapeRule::SameAsInput)
        } else {
            REDUCTIONS
                .iter()
                .find(|(reduction, _, _)| *reduction == name)
                .map(|(_, dtype, indices_with_dim)| ShapeRule::Reduction {
                    dtype: *dtype,
                    indices_with_dim: *indices_with_dim,
                })
        }
    };
    lookup(name).or_else(|| {
        let base = name.strip_suffix('_')?;
        lookup(base).filter(|rule| !matches!(rule, ShapeRule::Reduction { .. }))
    })
}

/// Whether op `name` computes each output element from the same input element.
pub(crate) fn is_elementwise(name: &str) -> bool {
    shape_rule(name) == Some(ShapeRule::Elementwise)
}

/// Whether op `name`'s result has its (first, or broadcast) tensor's shape.
pub(crate) fn keeps_shape(name: &str) -> bool {
    matches!(
        shape_rule(name),
        Some(ShapeRule::Elementwise | ShapeRule::SameAsInput)
    )
}

/// What einops call `qualified` is: `rearrange` / `reduce` (functions, the tensor first), or
/// the `Rearrange` / `Reduce` layers; with whether it reduces.
pub(crate) fn einops_call(qualified: &str) -> Option<(EinopsCall, bool)> {
    let (module, name) = qualified.rsplit_once('.')?;
    let call = match module {
        "einops" | "einops.einops" => EinopsCall::Function,
        "einops.layers.torch" => EinopsCall::Layer,
        _ => return None,
    };
    match (call, name) {
        (EinopsCall::Function, "rearrange") | (EinopsCall::Layer, "Rearrange") => {
            Some((call, false))
        }
        (EinopsCall::Function, "reduce") | (EinopsCall::Layer, "Reduce") => Some((call, true)),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum EinopsCall {
    /// `rearrange(x, pattern, **axes)`, `reduce(x, pattern, reduction, **axes)`.
    Function,
    /// `Rearrange(pattern, **axes)`, `Reduce(pattern, reduction, **axes)`.
    Layer,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_op_has_one_rule() {
        let mut seen = std::collections::HashSet::new();
        let reductions = REDUCTIONS.iter().map(|(name, _, _)| name);
        for name in ELEMENTWISE.iter().chain(SAME_AS_INPUT).chain(reductions) {
            assert!(seen.insert(name), "{name} is in the catalogue twice");
        }
    }

    #[test]
    fn rules_of_the_families() {
        assert!(is_elementwise("add") && is_elementwise("add_") && is_elementwise("where"));
        assert!(keeps_shape("softmax") && !is_elementwise("softmax"));
        assert!(keeps_shape("float") && keeps_shape("masked_fill_"));
        assert_eq!(
            shape_rule("argmax"),
            Some(ShapeRule::Reduction {
                dtype: Some("int64"),
                indices_with_dim: false
            })
        );
        assert!(matches!(
            shape_rule("max"),
            Some(ShapeRule::Reduction {
                indices_with_dim: true,
                ..
            })
        ));
        // In-place forms of reductions do not exist; unknown ops are unknown.
        assert_eq!(shape_rule("sum_"), None);
        assert_eq!(shape_rule("matmul"), None);
        assert_eq!(tensor_method("cumsum"), MethodResult::SameShape);
        assert_eq!(tensor_method("sum"), MethodResult::Tensor);
    }
}
