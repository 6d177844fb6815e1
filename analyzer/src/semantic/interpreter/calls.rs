//! The interpreter's calls: to tensor and module methods, torch functions, builtins, and the
//! user's own functions (followed inline, within budgets).

use rustc_hash::FxHashMap;
use std::rc::Rc;

use ruff_text_size::Ranged;

use crate::catalogue;
use crate::names;
use crate::semantic::target_ops;
use crate::syntax::ast::{self, Expr};

use super::torch_shapes::{batch_of, factory_dims, factory_sizes, shaped_method, split_into_tuple};
use super::{
    AnnotationKind, BoolContext, Constructed, Env, EventKind, GuardKind, Interpreter, Interval,
    MAX_DEPTH, MethodResult, OpDefinition, ScalarUse, SizeOrigin, TensorInfo, TorchResult, Value,
    all_parameters, annotation_kind, default_value, narrow,
};
use super::{devices, layers, sequences, shape_ops, statements, tensor_sizes};
use crate::semantic::value::TensorDevice;
use crate::semantic::value::{BakedRead, LayerInfo};

impl Interpreter<'_, '_> {
    // ---------------------------------------------------------------------------------------
    // Calls

    pub(super) fn call(&mut self, call: &ast::ExprCall, env: &mut Env) -> Value {
        self.sites.push((self.file, call.range()));
        let value = self.call_site(call, env);
        self.sites.pop();
        value
    }

    /// A call of `callee` (a torch function, or a method of `receiver`) that passes a value read
    /// at trace time (`baked`) to torch: the value becomes a constant of the exported program.
    fn note_baked_call(
        &mut self,
        call: &ast::ExprCall,
        baked: Option<&BakedRead>,
        receiver: &Value,
    ) {
        let Some(source) = baked else { return };
        let to_torch = match receiver {
            Value::Tensor(info) => !info.assumed,
            Value::Qualified(qualified) => {
                qualified.as_ref() == "torch" || qualified.starts_with("torch.")
            }
            _ => false,
        };
        if to_torch {
            self.record(
                EventKind::BakedIntoTensor {
                    source: source.call.clone(),
                    read_at: source.range,
                },
                call.range(),
            );
        }
    }

    pub(super) fn call_site(&mut self, call: &ast::ExprCall, env: &mut Env) -> Value {
        // `f(*items)` of a list whose items are known passes them one by one.
        let mut args: Vec<Value> = Vec::with_capacity(call.arguments.args.len());
        let mut unpacked_unknown = false;
        for arg in &call.arguments.args {
            match arg {
                Expr::Starred(starred) => match self.eval(&starred.value, env) {
                    Value::Tuple(items) | Value::Modules(_, Some(items)) => {
                        args.extend(items.iter().cloned());
                    }
                    // `x.view(*input.shape[:-1])`: the sizes of a shape of known rank.
                    Value::Shape(info)
                        if info.dims.as_ref().is_some_and(|dims| dims.rank.is_some()) =>
                    {
                        let rank = info.dims.as_ref().and_then(|dims| dims.rank).unwrap_or(0);
                        for position in 0..rank {
                            let size = i64::try_from(position)
                                .map_or(Value::Unknown, |position| self.size_of(&info, position));
                            args.push(size);
                        }
                    }
                    _ => {
                        unpacked_unknown = true;
                        args.push(Value::Unknown);
                    }
                },
                arg => args.push(self.eval(arg, env)),
            }
        }
        let mut kwargs: Vec<(String, Value)> = Vec::new();
        for keyword in &call.arguments.keywords {
            let value = self.eval(&keyword.value, env);
            match (&keyword.arg, value) {
                (Some(name), value) => kwargs.push((name.to_string(), value)),
                // `Model(**config)`: the mapping's fields are the keywords.
                (None, Value::Object(mapping)) => kwargs.extend(
                    mapping
                        .fields
                        .borrow()
                        .iter()
                        .map(|(name, value)| (name.clone(), value.clone())),
                ),
                (None, value) => kwargs.push((String::new(), value)),
            }
        }
        // `f(*args)`: which parameters the call fills is unknown; an unnamed keyword says so
        // (as `**kwargs` of unknown keys does), and no parameter takes its default.
        if unpacked_unknown && !kwargs.iter().any(|(name, _)| name.is_empty()) {
            kwargs.push((String::new(), Value::Unknown));
        }
        let any_tensor = args
            .iter()
            .chain(kwargs.iter().map(|(_, value)| value))
            .any(|value| {
                matches!(value, Value::Tensor(_) | Value::Tensors(_))
                    || matches!(value, Value::Tuple(items) if items.iter().any(Value::is_tensor))
            });
        let baked = args
            .iter()
            .chain(kwargs.iter().map(|(_, value)| value))
            .find_map(|value| match value {
                Value::Baked(source) => Some(source.clone()),
                Value::Tuple(items) => items.iter().find_map(|item| match item {
                    Value::Baked(source) => Some(source.clone()),
                    _ => None,
                }),
                _ => None,
            });
        if let Expr::Attribute(attribute) = &*call.func {
            let name = attribute.attr.as_str();
            // `self.blocks.append(Block(...))` in an `__init__` the construction pass runs.
            if let (Expr::Attribute(field), "append" | "extend" | "insert" | "add_module") =
                (&*attribute.value, name)
            {
                if let Expr::Name(receiver) = &*field.value {
                    if let Some(&Value::Building(index)) = env.locals.get(receiver.id.as_str()) {
                        let current = self.building_attribute(index, field.attr.as_str());
                        let grown = match current {
                            Value::Modules(element, items) if name != "add_module" => {
                                Some(self.grown_modules(&element, items, name, &args))
                            }
                            Value::Sequential(steps) => {
                                Some(self.grown_sequential(&steps, name, &args))
                            }
                            _ => None,
                        };
                        if let Some(grown) = grown {
                            self.write_field(index, field.attr.as_str(), grown);
                            return Value::None;
                        }
                    }
                }
            }
            // `skips.pop()`: the last item (or the one at a known index) leaves the list.
            if let (Expr::Name(list), "pop") = (&*attribute.value, name) {
                if let Some(Value::Tuple(items)) = env.locals.get(list.id.as_str()) {
                    let (item, rest) = sequences::popped(items, &args);
                    env.locals.insert(list.id.to_string(), rest);
                    return item;
                }
            }
            if let (Expr::Name(list), "append" | "extend" | "insert") = (&*attribute.value, name) {
                if let Some(value) = env
                    .locals
                    .get(list.id.as_str())
                    .filter(|value| !matches!(value, Value::Building(_)))
                {
                    // `layers = nn.ModuleList()` filled in a loop, then stored on `self`.
                    let grown = match value {
                        Value::Modules(element, items) => {
                            self.grown_modules(element, items.clone(), name, &args)
                        }
                        Value::Sequential(steps) if name != "insert" => {
                            self.grown_sequential(steps, name, &args)
                        }
                        value => sequences::grown_list(value, name, &args),
                    };
                    env.locals.insert(list.id.to_string(), grown);
                    return Value::None;
                }
            }
            if let Expr::Call(inner) = &*attribute.value {
                if matches!(&*inner.func, Expr::Name(callee) if callee.id.as_str() == "super") {
                    return self.super_call(call, name, &args, &kwargs, any_tensor, env);
                }
            }
            let receiver = self.eval(&attribute.value, env);
            self.note_baked_call(call, baked.as_deref(), &receiver);
            return match receiver {
                // `PScan.apply(a, x)`, `Helper.static_method(x)`: the class's own attribute.
                class @ Value::Class(_) => {
                    let callee = self.attribute(&class, name);
                    self.call_value(&callee, call, &args, &kwargs, any_tensor, env)
                }
                Value::Tensor(info) | Value::Tensors(info) => {
                    self.tensor_method(&info, name, call, &args, &kwargs)
                }
                module @ Value::Module(..) => {
                    self.module_method(&module, name, &args, &kwargs, any_tensor)
                }
                Value::Layer(layer) if name == "forward" => {
                    self.transformer_masks(&layer, &args, &kwargs, call.range());
                    self.layer_call(&layer, &args, call.range())
                }
                Value::Layer(_) => {
                    self.module_method(&Value::Module(None, None), name, &args, &kwargs, any_tensor)
                }
                // `model = build().eval()`: an `nn.Sequential` is still itself after the calls
                // that return the module, and runs its steps when called.
                Value::Sequential(steps) => match name {
                    "forward" => self.run_sequential(&steps, &args),
                    "train" | "eval" | "to" | "float" | "half" | "double" | "cpu" | "cuda"
                    | "requires_grad_"
                        if !any_tensor =>
                    {
                        Value::Sequential(steps)
                    }
                    _ => self.module_method(
                        &Value::Module(None, None),
                        name,
                        &args,
                        &kwargs,
                        any_tensor,
                    ),
                },
                Value::Modules(element, items) => match name {
                    "values" | "children" | "modules" => Value::Modules(element, items),
                    _ => Value::Unknown,
                },
                Value::Qualified(qualified) => self.qualified_call(
                    &format!("{qualified}.{name}"),
                    call,
                    &args,
                    &kwargs,
                    any_tensor,
                    env,
                ),
                Value::Shape(info) if matches!(name, "numel") => self.numel_of(&info),
                Value::Building(index) => self.building_method(index, name, &args, &kwargs, call),
                Value::Object(instance) => {
                    self.object_method(&instance, name, &args, &kwargs, call)
                }
                Value::Str(text) if kwargs.is_empty() => {
                    super::builtins::string_method(&text, name, &args)
                }
                _ => Value::Unknown,
            };
        }
        let callee = self.eval(&call.func, env);
        self.note_baked_call(call, baked.as_deref(), &callee);
        self.call_value(&callee, call, &args, &kwargs, any_tensor, env)
    }

    pub(super) fn call_value(
        &mut self,
        callee: &Value,
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
        any_tensor: bool,
        env: &mut Env,
    ) -> Value {
        match callee {
            Value::Qualified(qualified) => {
                self.qualified_call(qualified, call, args, kwargs, any_tensor, env)
            }
            Value::Function(function) => {
                let outer = self.closure_of(*function, env);
                self.inline(*function, None, args, kwargs, outer)
            }
            Value::Method(class, method, fields) => self.inline(
                *method,
                Some(Value::Module(*class, fields.clone())),
                args,
                kwargs,
                None,
            ),
            Value::AutogradApply(class) => match self.model.find_method(*class, "forward") {
                Some(forward) => {
                    let with_context: Vec<Value> = std::iter::once(Value::Unknown)
                        .chain(args.iter().cloned())
                        .collect();
                    self.inline(forward, None, &with_context, kwargs, None)
                }
                None => Value::Unknown,
            },
            Value::Class(class) => match self.construct(*class, call, args, kwargs) {
                Some(value) => value,
                None if self.model.classes[*class].is_module => Value::Module(Some(*class), None),
                None => Value::Unknown,
            },
            module @ Value::Module(..) => self.call_module(module, args, kwargs),
            Value::Sequential(steps) => self.run_sequential(steps, args),
            Value::Layer(layer) => {
                self.transformer_masks(layer, args, kwargs, call.range());
                self.layer_call(layer, args, call.range())
            }
            _ => Value::Unknown,
        }
    }

    /// A nested function sees its parent's bindings; a module-level one does not.
    pub(super) fn closure_of(
        &self,
        function: usize,
        env: &Env,
    ) -> Option<Rc<FxHashMap<String, Value>>> {
        let name = self.model.functions[function].def.name.as_str();
        let file = self.model.functions[function].file;
        let is_global = matches!(self.model.globals_in(file).get(name), Some(Value::Function(index)) if *index == function);
        if is_global {
            return None;
        }
        let mut captured = env.outer.as_deref().cloned().unwrap_or_default();
        captured.extend(
            env.locals
                .iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
        Some(Rc::new(captured))
    }

    /// Whether `info`'s sizes are the same on every call: tracked and free of declared `Dim`s,
    /// or untracked in a file that exports its model with no dynamic dimension; never a size
    /// that depends on data.
    fn static_shape(&self, info: &TensorInfo) -> bool {
        if info.data_dependent_shape {
            return false;
        }
        match &info.dims {
            Some(dims) => !dims.is_dynamic(),
            None => self.untracked == SizeOrigin::Static && self.model.entry.is_some(),
        }
    }

    /// A method called on a tensor. A tensor on CUDA given tensors on the inputs' device says
    /// so (`h.matmul(w)`); its result stays on CUDA when every tensor it takes is there.
    pub(super) fn tensor_method(
        &mut self,
        info: &TensorInfo,
        name: &str,
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Value {
        let receiver = Value::Tensor(info.clone());
        let operands = || std::iter::once(&receiver).chain(args.iter());
        // `x.to(y)`, `x.copy_(y)`, `x.view_as(y)` take `y`'s device or sizes, and
        // `x.new_tensor(y)` copies `y` to `x`'s device: no operation on both.
        let reads_other = matches!(
            name,
            "to" | "type_as"
                | "copy_"
                | "view_as"
                | "reshape_as"
                | "expand_as"
                | "new_tensor"
                | "new_zeros"
                | "new_ones"
                | "new_full"
                | "new_empty"
        );
        if !reads_other && args.iter().any(Value::is_tensor) {
            self.note_devices(operands(), call.range());
        }
        let result = self.tensor_method_inner(info, name, call, args, kwargs);
        let explicit =
            devices::device_keyword(kwargs).map(|device| self.device_named(device, call));
        match (name, explicit) {
            (_, Some(device)) => devices::with_device(result, device),
            ("cuda", _) => self.moved_to_cuda(result, call),
            ("cpu", _) => devices::with_device(result, TensorDevice::Inputs),
            ("to", _) => {
                let device = match args.first() {
                    // `.to(torch.float16)`: the same device.
                    None => info.device,
                    Some(Value::Qualified(dtype)) if dtype.starts_with("torch.") => info.device,
                    // `.to(other)`: `other`'s device.
                    Some(Value::Tensor(other)) => other.device,
                    Some(device) => self.device_named(device, call),
                };
                devices::with_device(result, device)
            }
            ("type_as", _) => match args.first() {
                Some(Value::Tensor(other)) => devices::with_device(result, other.device),
                _ => devices::with_device(result, TensorDevice::Unknown),
            },
            ("new_tensor" | "new_zeros" | "new_ones" | "new_full" | "new_empty", _) => {
                devices::with_device(result, info.device)
            }
            _ => devices::device_of_result(result, operands()),
        }
    }

    /// Records a size among `sizes`, the first arguments of the call to `op`, that is a number
    /// with a fractional part (PT605): `view(b, c, self.pt)` after `self.pt = (p - k) / skip`.
    fn note_fractional_size(&mut self, op: &str, sizes: &[Value], call: &ast::ExprCall) {
        let exprs = call.arguments.args.get(..sizes.len()).unwrap_or_default();
        if let Some((value, range)) = shape_ops::fractional_size(sizes, exprs, call.range()) {
            let op = op.to_owned();
            self.record(EventKind::FloatSize { op, value }, range);
        }
    }

    fn tensor_method_inner(
        &mut self,
        info: &TensorInfo,
        name: &str,
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Value {
        // `x.sum()`, `x.max()`: a reduction over every element is a tensor of no dimensions.
        if call.arguments.is_empty()
            && matches!(
                name,
                "sum"
                    | "mean"
                    | "max"
                    | "min"
                    | "prod"
                    | "norm"
                    | "std"
                    | "var"
                    | "amax"
                    | "amin"
                    | "all"
                    | "any"
                    | "logsumexp"
                    | "median"
            )
        {
            return Value::Tensor(TensorInfo {
                dims: Some(Rc::new(crate::semantic::value::TensorDims {
                    rank: Some(0),
                    sizes: Vec::new(),
                })),
                assumed: info.assumed,
                data_dependent_shape: false,
                ..TensorInfo::default()
            });
        }
        // Only on a value known to be a tensor: a method of that name on anything else is not
        // the op.
        let op = target_ops::call_event(name, true);
        if let Some(event) = op.filter(|_| !info.assumed && !info.opaque) {
            self.record(event, call.range());
        }
        if catalogue::method_takes_sizes(name) && !info.assumed {
            let sizes = if name == "new_full" {
                args.get(..1).unwrap_or_default()
            } else {
                args
            };
            self.note_fractional_size(name, sizes, call);
        }
        match name {
            // `x.dim()`: the rank, a Python number, when the shape knows it.
            "dim" | "ndimension" if args.is_empty() => {
                return tensor_sizes::rank_of(info);
            }
            "numpy" => {
                if !info.assumed {
                    self.record(
                        EventKind::Numpy {
                            call: ".numpy()".to_owned(),
                            static_shape: self.static_shape(info),
                        },
                        call.range(),
                    );
                }
                return Value::Unknown;
            }
            "view" | "reshape" => {
                if let Some(event) = shape_ops::reshape_guard(info, &call.arguments.args) {
                    self.record(event, call.range());
                }
            }
            "matmul" | "mm" | "bmm" => {
                if let Some(other @ Value::Tensor(_)) = args.first() {
                    let receiver = Value::Tensor(info.clone());
                    return self.operation(
                        &receiver,
                        ast::Operator::MatMult,
                        other,
                        None,
                        call.range(),
                    );
                }
            }
            "chunk" | "split" | "unbind" | "tensor_split" => {
                let exprs = &call.arguments.args;
                if let Some(dims) = info.dims.as_deref() {
                    self.note_unbacked_cut(dims, name, call, exprs, args);
                }
                if let Some(parts) = split_into_tuple(info, name, call, exprs, args, kwargs) {
                    return parts;
                }
            }
            "data_ptr" | "storage" | "untyped_storage" => {
                self.record(
                    EventKind::UntraceableMethod {
                        method: name.to_owned(),
                    },
                    call.range(),
                );
                return Value::Unknown;
            }
            // A reduction over a later dimension with `keepdim=True` keeps the first one.
            "sum" | "mean" | "norm" | "amax" | "amin" | "std" | "var" | "logsumexp" | "prod"
                if call.arguments.find_keyword("keepdim").is_some_and(|keyword| {
                    matches!(&keyword.value, Expr::BooleanLiteral(literal) if literal.value)
                }) =>
            {
                let dim = call
                    .arguments
                    .find_keyword("dim")
                    .map(|keyword| &keyword.value)
                    .or_else(|| call.arguments.args.first().filter(|_| name != "norm"));
                if let Some(value) = shaped_method(info, name, call, args) {
                    return value;
                }
                if dim.and_then(names::int_literal).is_some_and(|dim| dim != 0) {
                    return Value::Tensor(TensorInfo {
                        dims: info.dims.as_ref().map(|dims| Rc::new(batch_of(dims))),
                        assumed: info.assumed,
                        ..TensorInfo::default()
                    });
                }
            }
            _ => {}
        }
        let _ = kwargs;
        // `.cuda()`, `.cpu()`, `.to(device)`: the same tensor, on the device `tensor_method`
        // gives it.
        if matches!(name, "cuda" | "cpu") {
            return Value::Tensor(TensorInfo {
                maybe_none: false,
                ..info.clone()
            });
        }
        if let Some(value) = shaped_method(info, name, call, args) {
            return value;
        }
        // `x.type(torch.float32)` converts, keeping the shape; `x.type()` names the type.
        let name = if name == "type" && !args.is_empty() {
            "to"
        } else {
            name
        };
        match catalogue::tensor_method(name) {
            MethodResult::DataScalar => Value::DataScalar(Interval::default()),
            MethodResult::DataScalars => Value::DataScalars,
            MethodResult::Size => {
                let dim = call.arguments.args.first().or_else(|| {
                    call.arguments
                        .find_keyword("dim")
                        .map(|keyword| &keyword.value)
                });
                match dim {
                    None => Value::Shape(info.clone()),
                    Some(dim) => match names::int_literal(dim) {
                        Some(position) => self.size_of(info, position),
                        None => Value::Size {
                            origin: self.untracked_for(info),
                            interval: Interval::at_least(0.0),
                            sym: None,
                        },
                    },
                }
            }
            MethodResult::Numel => self.numel_of(info),
            MethodResult::Other => Value::Unknown,
            MethodResult::SameShape => Value::Tensor(TensorInfo {
                maybe_none: false,
                ..info.clone()
            }),
            MethodResult::Tensor => Value::Tensor(TensorInfo {
                data_dependent_shape: info.data_dependent_shape,
                assumed: info.assumed,
                ..TensorInfo::default()
            }),
            MethodResult::Tensors => Value::Tensors(TensorInfo {
                assumed: info.assumed,
                ..TensorInfo::default()
            }),
            MethodResult::DataDependentShape => Value::Tensor(TensorInfo {
                data_dependent_shape: true,
                ..TensorInfo::default()
            }),
        }
    }

    /// A call of a function or class by qualified name; a torch function given tensors on two
    /// devices, or one building a tensor on CUDA (`torch.zeros(n, device="cuda")`), says so.
    pub(super) fn qualified_call(
        &mut self,
        qualified: &str,
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
        any_tensor: bool,
        env: &mut Env,
    ) -> Value {
        let torch = qualified.starts_with("torch.") && !qualified.starts_with("torch.nn.Module");
        if torch && any_tensor {
            self.note_devices(
                args.iter().chain(kwargs.iter().map(|(_, value)| value)),
                call.range(),
            );
        }
        // `torch.cuda.FloatTensor(b, c, t)`: the legacy constructor of an uninitialised tensor
        // of those sizes, on CUDA.
        if catalogue::is_legacy_cuda_constructor(qualified) {
            let dims = args
                .iter()
                .all(|arg| matches!(arg, Value::Number(_) | Value::Size { .. }))
                .then(|| factory_dims("empty", call, args))
                .flatten();
            let tensor = Value::Tensor(TensorInfo {
                dims: dims.map(Rc::new),
                ..TensorInfo::default()
            });
            return self.moved_to_cuda(tensor, call);
        }
        let result = self.qualified_call_inner(qualified, call, args, kwargs, any_tensor, env);
        if !torch {
            return result;
        }
        // `torch.tensor(2.0)`: a tensor of no dimensions, which goes with tensors on any device.
        let result = match (qualified, args.first(), result) {
            (
                "torch.tensor" | "torch.as_tensor" | "torch.scalar_tensor",
                Some(Value::Number(_)),
                Value::Tensor(info),
            ) => Value::Tensor(TensorInfo {
                dims: Some(Rc::new(crate::semantic::value::TensorDims {
                    rank: Some(0),
                    sizes: Vec::new(),
                })),
                ..info
            }),
            (_, _, result) => result,
        };
        // `torch.zeros(n, device="cuda")`, `torch.zeros_like(h, device=x.device)`.
        if let Some(device) = devices::device_keyword(kwargs) {
            let device = self.device_named(device, call);
            return devices::with_device(result, device);
        }
        if any_tensor {
            return devices::device_of_result(result, args.iter());
        }
        result
    }

    fn qualified_call_inner(
        &mut self,
        qualified: &str,
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
        any_tensor: bool,
        env: &mut Env,
    ) -> Value {
        if qualified == "builtins.dict" {
            return Self::dict_call(args, kwargs);
        }
        if let Some(builtin) = qualified.strip_prefix("builtins.") {
            return self.builtin_call(builtin, call, args, env);
        }
        // A function or class of another file of the program: followed like a local one.
        if let Some(resolved) = self.model.resolve_qualified(qualified) {
            return self.call_value(&resolved, call, args, kwargs, any_tensor, env);
        }
        if self.constructing && crate::semantic::shapes::is_export_function(qualified) {
            let exported = args.first().or_else(|| {
                kwargs
                    .iter()
                    .find(|(name, _)| name == "mod")
                    .map(|(_, value)| value)
            });
            match (self.exported, exported) {
                (None, Some(instance @ Value::Module(Some(class), _))) => {
                    self.exported = Some(*class);
                    self.exported_instance = Some(instance.clone());
                }
                (None, Some(steps @ Value::Sequential(_))) if self.exported_instance.is_none() => {
                    self.exported_instance = Some(steps.clone());
                }
                _ => {}
            }
            if self.file == 0 && self.export_site.is_none() {
                self.export_site = Some(call.range());
            }
        }
        if let Some(number) = super::builtins::math_of_numbers(qualified, args) {
            return Value::Number(number);
        }
        if catalogue::returns_its_module(qualified) {
            if let Some(module @ (Value::Layer(_) | Value::Module(..) | Value::Sequential(_))) =
                args.first()
            {
                return module.clone();
            }
        }
        for (position, parameter) in catalogue::concrete_int_arguments(qualified) {
            let given = args.get(*position).or_else(|| {
                kwargs
                    .iter()
                    .find(|(name, _)| name == parameter)
                    .map(|(_, value)| value)
            });
            if let Some(
                size @ Value::Size {
                    origin: SizeOrigin::Dynamic { .. },
                    ..
                },
            ) = given
            {
                self.record(
                    EventKind::Scalar {
                        value: size.clone(),
                        usage: ScalarUse::ConcreteArgument(parameter),
                    },
                    call.range(),
                );
            }
        }
        // einops: `rearrange(x, pattern, **axes)` / `reduce`, and the `Rearrange` / `Reduce`
        // layers built from a pattern.
        match catalogue::einops_call(qualified) {
            Some((catalogue::EinopsCall::Function, reduces)) => {
                if let Some(rearrangement) = Self::rearrangement(call, args, kwargs, 1, reduces) {
                    return self.rearranged(args.first(), &rearrangement, call.range());
                }
            }
            Some((catalogue::EinopsCall::Layer, reduces)) => {
                if let Some(rearrangement) = Self::rearrangement(call, args, kwargs, 0, reduces) {
                    return Value::Layer(Rc::new(LayerInfo {
                        qualified: Rc::from(qualified),
                        sizes: Vec::new(),
                        per_axis: Vec::new(),
                        same_padding: false,
                        rearrange: Some(Rc::new(rearrangement)),
                    }));
                }
            }
            None => {}
        }
        if catalogue::builds_dtensor(qualified) {
            let qualified = qualified.to_owned();
            self.record(EventKind::DTensorBuilt { qualified }, call.range());
            return Value::Unknown;
        }
        let torch_op = qualified.strip_prefix("torch.");
        if let Some(event) = torch_op.and_then(|name| target_ops::call_event(name, false)) {
            self.record(event, call.range());
        }
        let top = qualified.split('.').next().unwrap_or_default();
        match qualified {
            "types.SimpleNamespace" | "argparse.Namespace" => return Self::namespace(kwargs),
            // `torch.device("cuda")` held in a name: the device's string, which `.to(device)`
            // and `device=device` read.
            "torch.device" => {
                return match (args, kwargs) {
                    ([Value::Str(kind)], []) => Value::Str(kind.clone()),
                    ([Value::Str(kind), Value::Number(index)], []) => {
                        match crate::semantic::value::integer(*index) {
                            Some(index) if !kind.contains(':') => {
                                Value::Str(Rc::from(format!("{kind}:{index}")))
                            }
                            _ => Value::Unknown,
                        }
                    }
                    _ => Value::Unknown,
                };
            }
            // A `Variable` is the tensor itself since torch 0.4.
            "torch.autograd.Variable" | "torch.autograd.variable.Variable" => {
                if let Some(tensor @ Value::Tensor(_)) = args.first() {
                    return tensor.clone();
                }
            }
            // The parser stands for its class: what matters is what `parse_args` returns. An
            // argument group adds its options to the parser.
            "argparse.ArgumentParser"
            | "argparse.ArgumentParser.add_argument_group"
            | "argparse.ArgumentParser.add_mutually_exclusive_group" => {
                return Value::Qualified(Rc::from("argparse.ArgumentParser"));
            }
            "argparse.ArgumentParser.add_argument" => {
                self.declare_option(args, kwargs);
                return Value::Unknown;
            }
            // `parse_args(["--swap", "0"])`: arguments the script gives itself, which the
            // defaults do not say.
            "argparse.ArgumentParser.parse_args"
                if args.iter().any(|arg| *arg != Value::None)
                    || kwargs.iter().any(|(_, value)| *value != Value::None) =>
            {
                return Value::Unknown;
            }
            "argparse.ArgumentParser.parse_args" => return self.parsed_arguments(),
            "argparse.ArgumentParser.set_defaults" => {
                self.set_option_defaults(kwargs);
                return Value::None;
            }
            "argparse.ArgumentParser.parse_known_args" => {
                return Value::Tuple(Rc::from(vec![self.parsed_arguments(), Value::Unknown]));
            }
            "torch._check" | "torch._check_is_size" => {
                if let Some(condition) = call.arguments.args.first() {
                    // A check on a declared dynamic dimension is a guard on it, as an `assert`
                    // is; on data (`.item()`), it is how the exporter is told a bound.
                    if qualified == "torch._check" {
                        let value = self.eval(condition, env);
                        if let Value::Guard(guard) = &value {
                            if matches!(guard.kind, GuardKind::Dynamic(_)) {
                                self.record(
                                    EventKind::Truthiness {
                                        value,
                                        context: BoolContext::Check,
                                    },
                                    condition.range(),
                                );
                            }
                        }
                    }
                    narrow(condition, qualified == "torch._check_is_size", env);
                }
                return Value::Unknown;
            }
            "torch.func.grad"
            | "torch.func.grad_and_value"
            | "torch.func.jacrev"
            | "torch.func.jacfwd"
            | "torch.func.hessian"
            | "torch.func.vjp"
            | "torch.func.jvp"
            | "torch.func.linearize"
            | "functorch.grad"
            | "functorch.grad_and_value"
            | "functorch.jacrev"
            | "functorch.jacfwd"
            | "functorch.hessian"
            | "functorch.vjp"
            | "functorch.jvp" => {
                // Measured (torch 2.15, strict and not): the input it differentiates becomes a
                // constant of the trace, so the exported program returns fake tensors.
                self.record(
                    EventKind::GradientTransform {
                        transform: qualified.to_owned(),
                    },
                    call.range(),
                );
                return Value::Unknown;
            }
            "torch._dynamo.graph_break" | "warnings.warn" => {
                self.record(
                    EventKind::Call {
                        qualified: qualified.to_owned(),
                        tensor_argument: any_tensor,
                    },
                    call.range(),
                );
                return Value::Unknown;
            }
            "logging.getLogger" => return Value::Qualified(Rc::from("logging.Logger")),
            "torch.cond" => {
                let operands = match args.get(3) {
                    Some(Value::Tuple(items)) => items.to_vec(),
                    Some(other) => vec![other.clone()],
                    None => Vec::new(),
                };
                for branch in args.iter().skip(1).take(2) {
                    self.call_callable(branch, &operands, env);
                }
                return Value::tensor();
            }
            "torch.utils.checkpoint.checkpoint" => {
                if let Some((function, rest)) = args.split_first() {
                    return self.call_callable(function, rest, env);
                }
                return Value::Unknown;
            }
            _ => {}
        }
        if top == "logging" {
            self.record(
                EventKind::Call {
                    qualified: qualified.to_owned(),
                    tensor_argument: any_tensor,
                },
                call.range(),
            );
            return Value::Unknown;
        }
        if top == "math" {
            return match args.first() {
                Some(Value::Tensor(info)) if info.assumed => Value::Unknown,
                Some(Value::Tensor(_)) => {
                    self.record(
                        EventKind::Scalar {
                            value: Value::tensor(),
                            usage: ScalarUse::MathCall,
                        },
                        call.range(),
                    );
                    Value::DataScalar(Interval::default())
                }
                Some(Value::DataScalar(_)) => Value::DataScalar(Interval::default()),
                Some(size @ Value::Size { origin, .. }) => {
                    // Measured (torch 2.15): `math.log2`, `sqrt`, `exp`, `isqrt`, `gcd` of a
                    // size ask for a concrete number and fix a dynamic dimension; `ceil`,
                    // `floor`, `trunc` and `prod` keep it symbolic.
                    let keeps_symbolic = matches!(
                        qualified,
                        "math.ceil" | "math.floor" | "math.trunc" | "math.prod" | "math.fsum"
                    );
                    if !keeps_symbolic && matches!(origin, SizeOrigin::Dynamic { .. }) {
                        self.record(
                            EventKind::Scalar {
                                value: size.clone(),
                                usage: ScalarUse::MathCall,
                            },
                            call.range(),
                        );
                    }
                    Value::Size {
                        origin: origin.combine(&SizeOrigin::Static),
                        interval: Interval::default(),
                        sym: None,
                    }
                }
                _ => Value::Unknown,
            };
        }
        let any_certain_tensor = args
            .iter()
            .chain(kwargs.iter().map(|(_, value)| value))
            .any(Value::is_certain_tensor);
        if catalogue::is_numpy(qualified) {
            if any_certain_tensor {
                let static_shape = matches!(
                    args.first(),
                    Some(Value::Tensor(info)) if self.static_shape(info)
                );
                self.record(
                    EventKind::Numpy {
                        call: qualified.to_owned(),
                        static_shape,
                    },
                    call.range(),
                );
            } else if let Some(dim) = args
                .iter()
                .chain(kwargs.iter().map(|(_, value)| value))
                .find_map(|value| match value {
                    Value::Size {
                        origin: SizeOrigin::Dynamic { dim, .. },
                        ..
                    } => Some(dim.clone()),
                    _ => None,
                })
            {
                // A dynamic size is a `SymInt` during export, which NumPy cannot compute on.
                self.record(
                    EventKind::NumpySize {
                        call: qualified.to_owned(),
                        dim,
                    },
                    call.range(),
                );
            }
            return Value::Unknown;
        }
        if catalogue::STRICT_UNTRACEABLE_MODULES.contains(&top)
            || catalogue::BAKED_IN_MODULES.contains(&top)
        {
            let tensor_argument =
                any_certain_tensor && catalogue::DATA_READING_MODULES.contains(&top);
            self.record(
                EventKind::Call {
                    qualified: qualified.to_owned(),
                    tensor_argument,
                },
                call.range(),
            );
            if catalogue::READ_AT_TRACE_TIME.contains(&top) && !tensor_argument {
                return Value::Baked(Rc::new(BakedRead {
                    call: qualified.to_owned(),
                    range: call.range(),
                }));
            }
            return Value::Unknown;
        }
        if let Some(constructed) = catalogue::constructed(qualified) {
            return match constructed {
                Constructed::Module
                    if catalogue::keeps_batch_dim(qualified)
                        || catalogue::is_recurrent(qualified) =>
                {
                    Value::Layer(Rc::new(layers::layer_info(qualified, call, args, kwargs)))
                }
                // `nn.Sequential(conv, relu, pool)`: each step known (`*layers` only of a list
                // whose items are known one by one).
                // `nn.Sequential()`: the identity until `append` / `add_module` fill it.
                Constructed::Module
                    if qualified == "torch.nn.Sequential" && call.arguments.is_empty() =>
                {
                    Value::Sequential(Rc::from(Vec::new()))
                }
                Constructed::Module
                    if qualified == "torch.nn.Sequential"
                        && !args.is_empty()
                        && args.iter().all(|step| {
                            matches!(
                                step,
                                Value::Layer(_) | Value::Module(Some(_), _) | Value::Sequential(_)
                            )
                        }) =>
                {
                    Value::Sequential(Rc::from(args))
                }
                Constructed::Module => Value::Module(None, None),
                Constructed::Modules => Value::Modules(
                    Rc::new(sequences::module_elements(args.first())),
                    sequences::module_items(args.first()),
                ),
                // `nn.Parameter(torch.log(A))`: the tensor it wraps, with its shape.
                Constructed::Parameter => match args.first() {
                    Some(Value::Tensor(info)) => Value::Tensor(TensorInfo {
                        dims: info.dims.clone(),
                        ..TensorInfo::default()
                    }),
                    _ => Value::tensor(),
                },
            };
        }
        if let Some(class) = self.model.workspace_module_class(qualified) {
            return class;
        }
        let first_tensor = args.iter().find_map(|arg| match arg {
            Value::Tensor(info) => Some(info.clone()),
            _ => None,
        });
        let name = qualified.rsplit('.').next().unwrap_or(qualified);
        // A torch function of assumed tensors only is as uncertain as its arguments.
        let assumed = any_tensor && !any_certain_tensor;
        // A factory sized by a data-dependent size (`torch.randn(idx.shape[0], 4)` after a
        // `nonzero`) makes a tensor whose size depends on data too.
        if catalogue::is_factory(name)
            && factory_sizes(name, args).any(|size| {
                matches!(
                    size,
                    Value::Size {
                        origin: SizeOrigin::Unbacked,
                        ..
                    }
                )
            })
        {
            return Value::Tensor(TensorInfo {
                data_dependent_shape: true,
                ..TensorInfo::default()
            });
        }
        if catalogue::is_factory(name) && qualified.starts_with("torch.") {
            let sizes = match args.first() {
                Some(Value::Tuple(_)) => &args[..1],
                _ if name == "full" => &[],
                _ => args,
            };
            self.note_fractional_size(name, sizes, call);
            if let Some(dims) = factory_dims(name, call, args) {
                return Value::Tensor(TensorInfo {
                    dims: Some(Rc::new(dims)),
                    ..TensorInfo::default()
                });
            }
        }
        // `F.embedding(indices, weight)`: a row of the (2-D) weight for each index.
        if qualified == "torch.nn.functional.embedding" {
            if let Some(Value::Tensor(indices)) = args.first() {
                let row = match args.get(1) {
                    Some(Value::Tensor(weight)) => weight
                        .dims
                        .as_deref()
                        .and_then(|dims| dims.size(dims.rank?.checked_sub(1)?).cloned()),
                    _ => None,
                };
                let dims = indices
                    .dims
                    .as_deref()
                    .and_then(crate::semantic::value::TensorDims::all_sizes)
                    .map(|mut sizes| {
                        sizes.push(row);
                        Rc::new(crate::semantic::value::TensorDims::from_sizes(sizes))
                    });
                return Value::Tensor(TensorInfo {
                    dims,
                    assumed: indices.assumed,
                    ..TensorInfo::default()
                });
            }
        }
        // `F.max_pool2d(x, 2)`: the layer's window, its arguments after the input.
        // Only the window's own arguments: `ceil_mode` and `return_indices` change what it gives.
        let window_arguments = call.arguments.args.len() <= 4
            && call.arguments.keywords.iter().all(|keyword| {
                keyword.arg.as_ref().is_some_and(|name| {
                    ["kernel_size", "stride", "padding"].contains(&name.as_str())
                })
            });
        if let (Some(class), Some(input), true) = (
            catalogue::functional_window(qualified),
            args.first(),
            window_arguments,
        ) {
            let mut window_call = call.clone();
            window_call.arguments.args = call.arguments.args.iter().skip(1).cloned().collect();
            let layer = layers::layer_info(class, &window_call, &args[1..], kwargs);
            return self.layer_call(&layer, std::slice::from_ref(input), call.range());
        }
        if qualified.starts_with("torch.") {
            // `torch.arange(start=0, end=n)`: its bounds by name are its bounds in order.
            let by_name: Vec<Value>;
            let args = if name == "arange" && args.is_empty() {
                let named = |key: &str| {
                    kwargs
                        .iter()
                        .find(|(name, _)| name == key)
                        .map(|(_, value)| value.clone())
                };
                by_name = match (named("start"), named("end"), named("step")) {
                    (None, Some(end), None) => vec![end],
                    (Some(start), Some(end), None) => vec![start, end],
                    (start, Some(end), Some(step)) => {
                        vec![start.unwrap_or(Value::Number(0.0)), end, step]
                    }
                    _ => Vec::new(),
                };
                &by_name[..]
            } else {
                args
            };
            if let Some(value) = self.torch_shape_call(name, call, args, kwargs, assumed) {
                return value;
            }
        }
        match catalogue::torch_function(qualified, call.arguments.args.len()) {
            TorchResult::Tensor => {
                let keeps_dims = catalogue::tensor_method(name) == MethodResult::SameShape;
                match first_tensor {
                    Some(info) if keeps_dims && catalogue::is_elementwise(name) => {
                        let dims = self.broadcast_all(args, call.range());
                        Value::Tensor(TensorInfo {
                            dims,
                            maybe_none: false,
                            assumed,
                            ..info
                        })
                    }
                    Some(info) if keeps_dims => Value::Tensor(TensorInfo {
                        maybe_none: false,
                        assumed,
                        ..info
                    }),
                    _ => Value::Tensor(TensorInfo {
                        assumed,
                        ..TensorInfo::default()
                    }),
                }
            }
            TorchResult::Tensors => Value::Tensors(TensorInfo::default()),
            TorchResult::DataDependentShape => Value::Tensor(TensorInfo {
                data_dependent_shape: true,
                ..TensorInfo::default()
            }),
            TorchResult::Size => first_tensor.map_or(Value::Unknown, |info| self.numel_of(&info)),
            TorchResult::Other | TorchResult::Unknown => Value::Unknown,
        }
    }

    /// Calls a function value (a `torch.cond` branch, a checkpointed function).
    pub(super) fn call_callable(&mut self, callee: &Value, args: &[Value], env: &Env) -> Value {
        match callee {
            Value::Function(function) => {
                let outer = self.closure_of(*function, env);
                self.inline(*function, None, args, &[], outer)
            }
            Value::Method(class, method, fields) => self.inline(
                *method,
                Some(Value::Module(*class, fields.clone())),
                args,
                &[],
                None,
            ),
            Value::Module(..) => Value::opaque_tensor(),
            Value::Layer(layer) => {
                let layer = layer.clone();
                self.layer_call(&layer, args, self.call_range())
            }
            _ => Value::Unknown,
        }
    }

    /// Interprets a call to a function of this file with the caller's argument values.
    pub(super) fn inline(
        &mut self,
        function: usize,
        receiver: Option<Value>,
        args: &[Value],
        kwargs: &[(String, Value)],
        outer: Option<Rc<FxHashMap<String, Value>>>,
    ) -> Value {
        let max_depth = if self.constructing {
            2 * MAX_DEPTH
        } else {
            MAX_DEPTH
        };
        let instance = match &receiver {
            Some(Value::Module(_, Some(fields))) => Some(Rc::as_ptr(fields)),
            _ => None,
        };
        let recursion = self.stack.iter().any(|(running, on)| {
            *running == function && (instance.is_none() || on.is_none() || *on == instance)
        });
        if recursion || self.stack.len() >= max_depth || self.budget == 0 {
            return Value::Unknown;
        }
        // The exporter does not trace into a custom operator: it runs its fake kernel.
        let def = self.model.functions[function].def;
        if self.model.custom_ops.iter().any(|op| {
            matches!(op.definition, OpDefinition::Decorated { function, .. } if std::ptr::eq(function, def))
        }) {
            return Value::opaque_tensor();
        }
        // `torch._dynamo.assume_constant_result` runs the function eagerly at trace time and
        // bakes its result in as a constant: the body is not traced, and what the caller
        // decides on the result is decided once, with no guard.
        if def.decorator_list.iter().any(|decorator| {
            let callee = match &decorator.expression {
                Expr::Call(call) => &*call.func,
                other => other,
            };
            names::dotted(callee).is_some_and(|name| name.ends_with("assume_constant_result"))
        }) {
            return Value::Unknown;
        }
        let file = self.model.functions[function].file;
        if file != 0
            && def.decorator_list.iter().any(|decorator| {
                let callee = match &decorator.expression {
                    Expr::Call(call) => &*call.func,
                    other => other,
                };
                names::dotted(callee)
                    .is_some_and(|name| name.ends_with("custom_op") || name.ends_with("triton_op"))
            })
        {
            return Value::opaque_tensor();
        }
        // A closure's result also depends on the values it closes over, which the key does not
        // hold: a nested function called again with other enclosing values is run again.
        // A construction writes its instance's fields as it runs: it is never replayed.
        let key = (outer.is_none() && !matches!(receiver, Some(Value::Building(_))))
            .then(|| format!("{function}:{receiver:?}:{args:?}:{kwargs:?}"));
        if let Some(value) = key.as_ref().and_then(|key| self.memo.get(key)) {
            return value.clone();
        }
        self.budget -= 1;
        let info = &self.model.functions[function];
        let def = info.def;
        let mut env = Env {
            outer,
            class: info.class,
            ..Env::default()
        };
        let parameters = all_parameters(&def.parameters);
        let decorated = |name: &str| {
            def.decorator_list
                .iter()
                .any(|decorator| names::dotted(&decorator.expression).as_deref() == Some(name))
        };
        let receiver = if decorated("staticmethod") {
            None
        } else if decorated("classmethod") {
            receiver.map(|_| info.class.map_or(Value::Unknown, Value::Class))
        } else {
            receiver
        };
        // Arguments of unknown names or number (`f(*args, **kw)`) may fill any parameter.
        let open = kwargs.iter().any(|(key, _)| key.is_empty());
        let mut positional = receiver.into_iter().chain(args.iter().cloned());
        // Keyword-only parameters (after `*args` or `*`) take no positional argument: the
        // extra ones go to `*args`.
        let positional_slots = def.parameters.posonlyargs.len() + def.parameters.args.len();
        for (index, parameter) in parameters.iter().enumerate() {
            let name = parameter.parameter.name.as_str();
            let mut value = (index < positional_slots)
                .then(|| positional.next())
                .flatten()
                .or_else(|| {
                    kwargs
                        .iter()
                        .find(|(key, _)| key == name)
                        .map(|(_, value)| value.clone())
                })
                .unwrap_or_else(|| {
                    if open {
                        Value::Unknown
                    } else {
                        default_value(parameter)
                    }
                });
            // A parameter annotated `int`, `tuple[int, int]`, `Config`, ... is trusted over a
            // caller the interpreter may have misjudged to pass a tensor; any other value (a
            // number, a config object, a module) is what the caller passes.
            if let Some(annotation) = &parameter.parameter.annotation {
                let tensor_like = match &value {
                    Value::Tensor(_) | Value::Tensors(_) | Value::Unknown => true,
                    Value::Tuple(items) => items.iter().any(Value::is_tensor),
                    _ => false,
                };
                if matches!(annotation_kind(annotation), AnnotationKind::Other) && tensor_like {
                    value = Value::Unknown;
                }
            }
            env.locals.insert(name.to_owned(), value);
        }
        // `*args` holds the positional arguments left over, `**kwargs` the keywords no
        // parameter named (`conv_nd(dims, *args, **kwargs)` passing them on to a layer), while
        // every argument is known; otherwise they are unknown.
        let rest: Vec<Value> = positional.collect();
        if let Some(vararg) = &def.parameters.vararg {
            let value = if open {
                Value::Unknown
            } else {
                Value::Tuple(Rc::from(rest))
            };
            env.locals.insert(vararg.name.to_string(), value);
        }
        if let Some(kwarg) = &def.parameters.kwarg {
            let value = if open {
                Value::Unknown
            } else {
                let named: std::collections::BTreeMap<String, Value> = kwargs
                    .iter()
                    .filter(|(key, _)| !parameters.iter().any(|p| p.parameter.name.as_str() == key))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                Value::Object(crate::semantic::value::Instance::new(None, named))
            };
            env.locals.insert(kwarg.name.to_string(), value);
        }
        self.seed_module_attributes(def, &parameters, &mut env);
        // A call the script makes before exporting (outside any `__init__`): what it leaves in
        // the attributes it assigns is the state the export starts from.
        let warm_up = match (
            self.constructing && self.building.is_empty(),
            parameters.first(),
        ) {
            (true, Some(first)) => match env.locals.get(first.parameter.name.as_str()) {
                Some(Value::Module(Some(class), _)) => {
                    Some((*class, first.parameter.name.as_str()))
                }
                _ => None,
            },
            _ => None,
        };
        // Entering another file's code: its globals answer names, its events go to it.
        let caller_file = std::mem::replace(&mut self.file, file);
        let frame = if self.model.foreign.is_empty() {
            None
        } else {
            self.sites.last().copied()
        };
        if let Some(site) = frame {
            self.frames.push(site);
        }
        if file != 0 {
            self.reached.insert((file, def.range()));
        }
        let replaced = info
            .class
            .is_some_and(|class| self.model.classes[class].replaced);
        self.conditional += usize::from(replaced);
        self.stack.push((function, instance));
        self.returns.push(Value::Bottom);
        let falls_through = self.exec_block(&def.body, &mut env);
        if let Some((class, receiver)) = warm_up {
            let mut assigned = Vec::new();
            statements::assigned_attributes(&def.body, receiver, &mut assigned);
            for name in assigned {
                let Some(value) = env.locals.get(&statements::attribute_key(receiver, &name))
                else {
                    continue;
                };
                // A call under a condition the analysis cannot decide may not have run.
                let value = if self.undecided > 0 {
                    let earlier = self
                        .warmed
                        .get(&class)
                        .and_then(|fields| fields.get(&name))
                        .or_else(|| self.constructed.get(&class)?.get(&name))
                        .cloned()
                        .unwrap_or(Value::Unknown);
                    value.join(&earlier)
                } else {
                    value.clone()
                };
                self.warmed.entry(class).or_default().insert(name, value);
            }
        }
        let mut result = self.returns.pop().unwrap_or(Value::Unknown);
        self.stack.pop();
        self.conditional -= usize::from(replaced);
        if frame.is_some() {
            self.frames.pop();
        }
        self.file = caller_file;
        if falls_through {
            result = result.join(&Value::None);
        }
        if let Some(key) = key {
            self.memo.insert(key, result.clone());
        }
        result
    }

    /// The call site being evaluated.
    pub(super) fn call_range(&self) -> ruff_text_size::TextRange {
        self.sites
            .last()
            .map(|(_, range)| *range)
            .unwrap_or_default()
    }
}
