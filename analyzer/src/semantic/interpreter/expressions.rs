//! The interpreter's expressions: names, attributes, subscripts and slices, comparisons,
//! arithmetic.

use std::rc::Rc;

use ruff_text_size::{Ranged, TextRange};

use crate::catalogue;
use crate::names;
use crate::syntax::ast::{self, Expr};

use super::statements::attribute_key;
use super::{
    AttributeResult, BoolContext, CompareOp, Env, EventKind, Interpreter, Interval, MAX_UNROLL,
    ScalarUse, SizeOrigin, TensorInfo, Value, binary, data_guard, element_of, exact_items,
    is_boolean_mask, module_parameter, number_of, self_attribute, size_guard, sym_arithmetic,
    sym_operand,
};

impl Interpreter<'_, '_> {
    /// `left <op> right` on two values: the one meaning of an arithmetic operation, whatever
    /// form the call takes (`a @ b`, `a.matmul(b)` and `torch.matmul(a, b)` all come here):
    /// the result's kind and marks from `binary`, the shape and the sizes it forces equal from
    /// `combine_shapes`, and a value baked in at export time that meets a tensor.
    pub(super) fn operation(
        &mut self,
        left: &Value,
        op: ast::Operator,
        right: &Value,
        right_number: Option<f64>,
        range: TextRange,
    ) -> Value {
        self.note_devices([left, right].into_iter(), range);
        let mut result = binary(left, op, right, right_number);
        if let (Value::Baked(source), Value::Tensor(info))
        | (Value::Tensor(info), Value::Baked(source)) = (left, right)
        {
            if !info.assumed {
                let kind = EventKind::BakedIntoTensor {
                    source: source.call.clone(),
                    read_at: source.range,
                };
                self.record(kind, range);
            }
        }
        if let (Value::Tensor(a), Value::Tensor(b), Value::Tensor(info)) =
            (left, right, &mut result)
        {
            info.dims = self.combine_shapes(a, b, op, range);
        }
        result
    }

    // ---------------------------------------------------------------------------------------
    // Expressions

    pub(super) fn lookup(&self, name: &str, env: &Env) -> Value {
        if let Some(value) = env.locals.get(name) {
            // A function-local import of a workspace function or class.
            if let Value::Qualified(qualified) = value {
                if let Some(resolved) = self.model.resolve_qualified(qualified) {
                    return resolved;
                }
            }
            return value.clone();
        }
        if let Some(value) = env.outer.as_ref().and_then(|outer| outer.get(name)) {
            return value.clone();
        }
        if let Some(value) = self.model.globals_in(self.file).get(name) {
            if let Value::Qualified(qualified) = value {
                if let Some(resolved) = self.model.resolve_qualified(qualified) {
                    return resolved;
                }
            }
            return value.clone();
        }
        Value::Qualified(Rc::from(format!("builtins.{name}")))
    }

    /// Records a read in traced code of a module-level container a function changes.
    fn note_mutated_read(
        &mut self,
        name: &str,
        mutated: Option<&crate::semantic::mutated_globals::MutatedGlobal>,
        range: ruff_text_size::TextRange,
    ) {
        if let Some(mutated) = mutated {
            let kind = EventKind::MutatedGlobalRead {
                name: name.to_owned(),
                kind: mutated.kind,
                function: mutated.function.clone(),
            };
            self.record(kind, range);
        }
    }

    pub(super) fn eval(&mut self, expr: &Expr, env: &mut Env) -> Value {
        // Generated code nests expressions tens of thousands deep (`'s0' + 's1' + …`): past a
        // depth no model writes, the value is unknown rather than the stack exhausted.
        if self.expression_depth >= super::MAX_EXPRESSION_DEPTH {
            return Value::Unknown;
        }
        self.expression_depth += 1;
        let value = self.eval_expression(expr, env);
        self.expression_depth -= 1;
        value
    }

    fn eval_expression(&mut self, expr: &Expr, env: &mut Env) -> Value {
        match expr {
            Expr::Name(name) => {
                let id = name.id.as_str();
                let value = self.lookup(id, env);
                self.note_shape(name.range(), &value, None, false);
                if !env.binds(id) {
                    // The file's own container, or another file's imported by name.
                    let mutated = self.model.mutated_in(self.file).get(id).or_else(|| {
                        match self.model.globals_in(self.file).get(id) {
                            Some(Value::Qualified(qualified)) => {
                                let (module, member) = qualified.rsplit_once('.')?;
                                self.model.mutated_global(module, member)
                            }
                            _ => None,
                        }
                    });
                    self.note_mutated_read(id, mutated, name.range());
                }
                value
            }
            Expr::NoneLiteral(_) => Value::None,
            Expr::NumberLiteral(_) => number_of(expr).map_or(Value::Unknown, Value::Number),
            Expr::StringLiteral(_) => names::string_literal(expr)
                .map_or(Value::Unknown, |text| Value::Str(Rc::from(text))),
            Expr::BooleanLiteral(literal) => Value::Number(f64::from(u8::from(literal.value))),
            Expr::Attribute(attribute) => {
                // `self.src_mask` after this call assigned it.
                if let Expr::Name(receiver) = &*attribute.value {
                    let key = attribute_key(receiver.id.as_str(), attribute.attr.as_str());
                    if let Some(value) = env.locals.get(&key) {
                        return value.clone();
                    }
                }
                let receiver = self.eval(&attribute.value, env);
                if attribute.attr.as_str() == "data" && receiver.is_certain_tensor() {
                    self.record(
                        EventKind::DataAttribute {
                            tensor: names::dotted(&attribute.value)
                                .unwrap_or_else(|| "a tensor".to_owned()),
                            assigned: false,
                        },
                        attribute.range(),
                    );
                }
                // `config.SCALES`: another file's container, through its module.
                if let Value::Qualified(module) = &receiver {
                    let mutated = self.model.mutated_global(module, attribute.attr.as_str());
                    self.note_mutated_read(attribute.attr.as_str(), mutated, attribute.range());
                }
                self.attribute(&receiver, attribute.attr.as_str())
            }
            Expr::Call(call) => self.call(call, env),
            Expr::Subscript(subscript) => self.subscript(subscript, env),
            Expr::BinOp(operation) => {
                let left = self.eval(&operation.left, env);
                let right = self.eval(&operation.right, env);
                let right_number = number_of(&operation.right).or_else(|| right.known_constant());
                let mut result =
                    self.operation(&left, operation.op, &right, right_number, expr.range());
                if let Value::Size { sym, .. } = &mut result {
                    *sym = sym_operand(&left, &operation.left)
                        .zip(sym_operand(&right, &operation.right))
                        .and_then(|(a, b)| sym_arithmetic(&a, operation.op, &b))
                        .map(Rc::new);
                }
                result
            }
            Expr::UnaryOp(unary) => {
                if unary.op == ast::UnaryOp::Not {
                    self.truthiness(&unary.operand, BoolContext::Not, env);
                    return Value::Unknown;
                }
                match self.eval(&unary.operand, env) {
                    value @ (Value::Tensor(_) | Value::DataScalar(_)) => value,
                    Value::Number(number) => match unary.op {
                        ast::UnaryOp::USub => Value::Number(-number),
                        ast::UnaryOp::UAdd => Value::Number(number),
                        _ => Value::Unknown,
                    },
                    Value::Size { origin, .. } => Value::Size {
                        origin,
                        interval: Interval::default(),
                        sym: None,
                    },
                    _ => Value::Unknown,
                }
            }
            Expr::BoolOp(bool_op) => {
                // Python's short circuit over operands whose truth the program decides
                // (`d_keys or d_model // n_heads` with `d_keys=None`): the value is the first
                // operand that decides it, else the last.
                let decides = matches!(bool_op.op, ast::BoolOp::Or);
                let mut undecided_from = None;
                for (index, value) in bool_op.values.iter().enumerate() {
                    if index + 1 == bool_op.values.len() {
                        return self.eval(value, env);
                    }
                    match self.static_truth(value, env) {
                        Some(truth) if truth == decides => return self.eval(value, env),
                        Some(_) => {}
                        None => {
                            undecided_from = Some(index);
                            break;
                        }
                    }
                }
                let operands = &bool_op.values[undecided_from.unwrap_or(0)..];
                let (last, rest) = operands
                    .split_last()
                    .expect("a boolean operation has operands");
                for value in rest {
                    self.truthiness(value, BoolContext::BoolOperator, env);
                }
                let mut result = self.eval(last, env);
                for value in rest {
                    let value = self.eval(value, env);
                    result = result.join(&value);
                }
                result
            }
            Expr::Compare(compare) => self.compare(compare, env),
            Expr::If(ternary) => {
                match self.static_truth(&ternary.test, env) {
                    Some(true) => return self.eval(&ternary.body, env),
                    Some(false) => return self.eval(&ternary.orelse, env),
                    None => self.truthiness(&ternary.test, BoolContext::Ternary, env),
                }
                let body = self.eval(&ternary.body, env);
                let orelse = self.eval(&ternary.orelse, env);
                body.join(&orelse)
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let mut items: Vec<Value> = Vec::with_capacity(elts.len());
                for element in elts {
                    let Expr::Starred(starred) = element else {
                        items.push(self.eval(element, env));
                        continue;
                    };
                    // `(*x.shape, self.dim_head)`: the items it unpacks, when their number is
                    // known.
                    match self.eval(&starred.value, env) {
                        Value::Shape(info) => {
                            let Some(rank) = info.dims.as_ref().and_then(|dims| dims.rank) else {
                                items.push(Value::Unknown);
                                continue;
                            };
                            for position in 0..rank {
                                let position = i64::try_from(position).unwrap_or(i64::MAX);
                                items.push(self.size_of(&info, position));
                            }
                        }
                        Value::Tuple(unpacked) | Value::Modules(_, Some(unpacked)) => {
                            items.extend(unpacked.iter().cloned());
                        }
                        _ => items.push(Value::Unknown),
                    }
                }
                Value::Tuple(Rc::from(items))
            }
            Expr::Named(named) => {
                let value = self.eval(&named.value, env);
                self.bind(&named.target, value.clone(), env);
                value
            }
            // `[Block(config) for _ in range(n_layer)]` over items known one by one: each
            // element in order, as a display would give them.
            Expr::ListComp(ast::ExprListComp {
                elt, generators, ..
            })
            | Expr::Generator(ast::ExprGenerator {
                elt, generators, ..
            }) if matches!(generators.as_slice(), [generator] if generator.ifs.is_empty() && !generator.is_async) =>
            {
                let generator = &generators[0];
                let iterable = self.eval(&generator.iter, env);
                if let Some(items) = exact_items(&iterable)
                    .filter(|items| items.len() <= MAX_UNROLL.min(self.unroll_budget))
                {
                    self.unroll_budget -= items.len();
                    let mut elements = Vec::with_capacity(items.len());
                    for item in items.iter() {
                        let mut inner = env.clone();
                        self.bind(&generator.target, item.clone(), &mut inner);
                        elements.push(self.eval(elt, &mut inner));
                    }
                    Value::Tuple(Rc::from(elements))
                } else {
                    let mut inner = env.clone();
                    self.bind(&generator.target, element_of(&iterable), &mut inner);
                    comprehension_value(self.eval(elt, &mut inner))
                }
            }
            Expr::ListComp(ast::ExprListComp {
                elt, generators, ..
            })
            | Expr::SetComp(ast::ExprSetComp {
                elt, generators, ..
            })
            | Expr::Generator(ast::ExprGenerator {
                elt, generators, ..
            }) => {
                let mut inner = env.clone();
                self.comprehension(generators, &mut inner);
                comprehension_value(self.eval(elt, &mut inner))
            }
            // `{key: getattr(args, key) for key in keys}` over keys known one by one: a mapping
            // of those entries.
            Expr::DictComp(comprehension)
                if comprehension.key.is_some()
                    && matches!(comprehension.generators.as_slice(), [generator] if generator.ifs.is_empty() && !generator.is_async) =>
            {
                self.dict_comprehension(comprehension, env)
            }
            Expr::DictComp(comprehension) => {
                let mut inner = env.clone();
                self.comprehension(&comprehension.generators, &mut inner);
                if let Some(key) = &comprehension.key {
                    self.eval(key, &mut inner);
                }
                self.eval(&comprehension.value, &mut inner);
                Value::Unknown
            }
            // A mapping with string keys (a configuration dict) is an object of those fields.
            Expr::Dict(dict) => self.dict_display(dict, env),
            Expr::Starred(starred) => {
                self.eval(&starred.value, env);
                Value::Unknown
            }
            Expr::Await(await_expr) => self.eval(&await_expr.value, env),
            Expr::FString(fstring) => self.fstring(fstring, env),
            _ => Value::Unknown,
        }
    }

    /// `f"down{i}"` of known numbers and strings, in an unrolled loop that names submodules
    /// (`setattr(self, f"down{i}", ...)`, `getattr(self, f"down{i}")`): the string.
    #[inline(never)]
    fn fstring(&mut self, fstring: &ast::ExprFString, env: &mut Env) -> Value {
        let mut text = Some(String::new());
        for part in &fstring.value {
            let elements = match part {
                ast::FStringPart::Literal(literal) => {
                    if let Some(text) = text.as_mut() {
                        text.push_str(&literal.value);
                    }
                    continue;
                }
                ast::FStringPart::FString(fstring) => &fstring.elements,
            };
            for element in elements {
                match element {
                    ast::InterpolatedStringElement::Literal(literal) => {
                        if let Some(text) = text.as_mut() {
                            text.push_str(&literal.value);
                        }
                    }
                    ast::InterpolatedStringElement::Interpolation(interpolation) => {
                        let value = self.eval(&interpolation.expression, env);
                        let plain = interpolation.format_spec.is_none()
                            && interpolation.debug_text.is_none()
                            && interpolation.conversion == ast::ConversionFlag::None;
                        let shown = match value {
                            Value::Str(string) if plain => Some(string.to_string()),
                            Value::Number(number) if plain => {
                                crate::semantic::value::integer(number).map(|n| n.to_string())
                            }
                            _ => None,
                        };
                        text = text.zip(shown).map(|(text, shown)| text + &shown);
                    }
                }
            }
        }
        text.map_or(Value::Unknown, |text| Value::Str(Rc::from(text)))
    }

    /// `{"dim": 64, **base}`: an object of those fields when every key is a known string.
    /// Apart from `eval`, whose frame every nested expression pays for.
    #[inline(never)]
    fn dict_display(&mut self, dict: &ast::ExprDict, env: &mut Env) -> Value {
        let mut entries = Some(Vec::new());
        let mut ordered = true;
        for item in &dict.items {
            let value = self.eval(&item.value, env);
            match (&item.key, value) {
                (Some(key), value) => {
                    let key = match self.eval(key, env) {
                        Value::Str(key) => Some(key.to_string()),
                        _ => names::string_literal(key).map(str::to_owned),
                    };
                    match (key, entries.as_mut()) {
                        (Some(key), Some(entries)) => entries.push((key, value)),
                        _ => entries = None,
                    }
                }
                (None, Value::Object(unpacked)) if unpacked.class.is_none() => {
                    if let Some(entries) = entries.as_mut() {
                        if let Some(unpacked) = unpacked.ordered_entries() {
                            entries.extend(unpacked);
                        } else {
                            ordered = false;
                            entries.extend(unpacked.fields.borrow().clone());
                        }
                    }
                }
                (None, _) => entries = None,
            }
        }
        entries.map_or(Value::Unknown, |entries| {
            let mapping = crate::semantic::value::Instance::mapping(entries);
            if !ordered {
                mapping.forget_order();
            }
            Value::Object(mapping)
        })
    }

    /// A dict comprehension of one generator: unrolled over items known one by one, a mapping
    /// when every key is a known string; otherwise run once abstractly, unknown.
    #[inline(never)]
    fn dict_comprehension(&mut self, comprehension: &ast::ExprDictComp, env: &mut Env) -> Value {
        let generator = &comprehension.generators[0];
        let Some(key) = comprehension.key.as_deref() else {
            return Value::Unknown;
        };
        let iterable = self.eval(&generator.iter, env);
        let Some(items) = exact_items(&iterable)
            .filter(|items| items.len() <= MAX_UNROLL.min(self.unroll_budget))
        else {
            let mut inner = env.clone();
            self.bind(&generator.target, element_of(&iterable), &mut inner);
            self.eval(key, &mut inner);
            self.eval(&comprehension.value, &mut inner);
            return Value::Unknown;
        };
        self.unroll_budget -= items.len();
        let mut entries = Some(Vec::with_capacity(items.len()));
        for item in items.iter() {
            let mut inner = env.clone();
            self.bind(&generator.target, item.clone(), &mut inner);
            let key = self.eval(key, &mut inner);
            let value = self.eval(&comprehension.value, &mut inner);
            match (key, entries.as_mut()) {
                (Value::Str(key), Some(entries)) => entries.push((key.to_string(), value)),
                _ => entries = None,
            }
        }
        entries.map_or(Value::Unknown, |entries| {
            Value::Object(crate::semantic::value::Instance::mapping(entries))
        })
    }

    pub(super) fn comprehension(&mut self, generators: &[ast::Comprehension], env: &mut Env) {
        for generator in generators {
            let iterable = self.eval(&generator.iter, env);
            self.bind(&generator.target, element_of(&iterable), env);
            for condition in &generator.ifs {
                self.truthiness(condition, BoolContext::Comprehension, env);
            }
        }
    }

    pub(super) fn attribute(&mut self, receiver: &Value, name: &str) -> Value {
        match receiver {
            Value::Tensor(info) if name == "ndim" => super::tensor_sizes::rank_of(info),
            Value::Tensor(info) | Value::Tensors(info) => match catalogue::tensor_attribute(name) {
                AttributeResult::Shape => Value::Shape(info.clone()),
                AttributeResult::Tensor => Value::Tensor(TensorInfo {
                    data_dependent_shape: info.data_dependent_shape,
                    ..TensorInfo::default()
                }),
                AttributeResult::Other => Value::Unknown,
            },
            Value::Building(index) => self.building_attribute(*index, name),
            // `PScan.apply`, `Helper.static_method`: looked up on the class itself.
            Value::Class(class) => {
                let info = &self.model.classes[*class];
                let autograd = info.def.arguments.as_ref().is_some_and(|arguments| {
                    arguments.args.iter().any(|base| {
                        names::dotted(base)
                            .is_some_and(|base| base.rsplit('.').next() == Some("Function"))
                    })
                });
                match self.model.find_method(*class, name) {
                    _ if autograd && name == "apply" => Value::AutogradApply(*class),
                    // `Model.from_config(cfg)`: bound to the class.
                    Some(method) if self.is_classmethod(method) => {
                        Value::Method(Some(*class), method, None)
                    }
                    Some(method) => Value::Function(method),
                    None => Value::Unknown,
                }
            }
            Value::Object(instance) => self.object_attribute(instance, name),
            Value::Module(Some(class), _) => {
                if let Some(value) = self
                    .built_field(receiver, name)
                    .or_else(|| self.constructed_attribute(*class, name))
                {
                    return value;
                }
                if let Some(value) = self.model.find_attribute(*class, name) {
                    return value.clone();
                }
                if let Some(method) = self.model.find_method(*class, name) {
                    let fields = match receiver {
                        Value::Module(_, fields) => fields.clone(),
                        _ => None,
                    };
                    return Value::Method(Some(*class), method, fields);
                }
                module_parameter(name)
            }
            // `self.proj.weight`: its shape where the constructor's sizes say it.
            Value::Layer(layer) => super::layers::parameter_shape(layer, name).map_or_else(
                || module_parameter(name),
                |dims| {
                    Value::Tensor(TensorInfo {
                        dims: Some(Rc::new(dims)),
                        ..TensorInfo::default()
                    })
                },
            ),
            Value::Module(None, _) => module_parameter(name),
            Value::Qualified(qualified) => {
                let qualified = format!("{qualified}.{name}");
                self.model
                    .resolve_qualified(&qualified)
                    .unwrap_or_else(|| Value::Qualified(Rc::from(qualified)))
            }
            _ => Value::Unknown,
        }
    }

    pub(super) fn subscript(&mut self, subscript: &ast::ExprSubscript, env: &mut Env) -> Value {
        let receiver = self.eval(&subscript.value, env);
        if receiver.is_tensor() && self_attribute(&subscript.value).is_some() {
            self.check_buffer_slice(&subscript.slice, env);
        }
        let index = self.eval(&subscript.slice, env);
        if let Value::DataScalar(_) = index {
            if matches!(
                receiver,
                Value::Tuple(_) | Value::Tensors(_) | Value::Shape(_) | Value::Modules(..)
            ) {
                self.record(
                    EventKind::Scalar {
                        value: index.clone(),
                        usage: ScalarUse::ListIndex,
                    },
                    subscript.slice.range(),
                );
            }
        }
        // A position the program computes (`blocks[-i - 1]` in an unrolled loop) picks one item
        // as a literal does.
        let position = names::int_literal(&subscript.slice).or_else(|| {
            index
                .known_constant()
                .and_then(crate::semantic::value::integer)
        });
        // `channels[1:]`, `self.blocks[:-1]`, `skips[::-1]`: the items a slice of known bounds
        // keeps, in order.
        if let (
            Value::Tuple(items) | Value::Modules(_, Some(items)) | Value::Sequential(items),
            Expr::Slice(slice),
        ) = (&receiver, &*subscript.slice)
        {
            if let Some(kept) = self.sliced(items, slice, env) {
                return match receiver {
                    Value::Modules(element, _) => Value::Modules(element, Some(kept)),
                    // `self.layers[1:]` of an `nn.Sequential` is one of the steps kept.
                    Value::Sequential(_) => Value::Sequential(kept),
                    _ => Value::Tuple(kept),
                };
            }
        }
        match receiver {
            // `target["boxes"]`: a tensor is never indexed by a string; the value is a mapping.
            Value::Tensor(_) if matches!(&*subscript.slice, Expr::StringLiteral(_)) => {
                Value::Unknown
            }
            Value::Tensor(info) => {
                let masked = is_boolean_mask(&subscript.slice, &index);
                // `outputs[0]` of an opaque call picks an element of what may be a tuple.
                let element_of_opaque =
                    info.opaque && names::int_literal(&subscript.slice).is_some();
                let dims = match &info.dims {
                    Some(dims) if !masked && !info.opaque => {
                        self.index_dims(dims, &subscript.slice, subscript.range(), env)
                    }
                    _ => None,
                };
                Value::Tensor(TensorInfo {
                    dims: dims.map(Rc::new),
                    data_dependent_shape: masked || info.data_dependent_shape,
                    assumed: info.assumed || element_of_opaque,
                    ..TensorInfo::default()
                })
            }
            Value::Tensors(info) => Value::Tensor(TensorInfo { dims: None, ..info }),
            Value::Shape(info) => match &*subscript.slice {
                // `x.shape[2:]`: the sizes at those positions, renumbered from 0, so that
                // `x.shape[2:][0]` is the height, not the batch.
                Expr::Slice(slice) => {
                    let sizes = info.dims.as_ref().and_then(|dims| dims.all_sizes());
                    let dims = sizes.and_then(|sizes| {
                        let kept = self.slice_positions(sizes.len(), slice, env)?;
                        let kept: Vec<_> =
                            kept.into_iter().map(|index| sizes[index].clone()).collect();
                        Some(Rc::new(crate::semantic::value::TensorDims::from_sizes(
                            kept,
                        )))
                    });
                    Value::Shape(TensorInfo { dims, ..info })
                }
                slice => match names::int_literal(slice) {
                    Some(position) => self.size_of(&info, position),
                    None => Value::Size {
                        origin: self.untracked_for(&info),
                        interval: Interval::at_least(0.0),
                        sym: None,
                    },
                },
            },
            // `models.__dict__[arch]`: a module's member chosen by a known name.
            Value::Qualified(dict) if dict.ends_with(".__dict__") => match &index {
                Value::Str(member) => {
                    let module = dict.trim_end_matches(".__dict__");
                    let qualified = format!("{module}.{member}");
                    self.model
                        .resolve_qualified(&qualified)
                        .unwrap_or_else(|| Value::Qualified(Rc::from(qualified)))
                }
                _ => Value::Unknown,
            },
            Value::Object(instance) => match &index {
                Value::Str(key) => instance.field(key),
                _ => None,
            }
            .unwrap_or(Value::Unknown),
            // `self.layers[0]`: a step of an `nn.Sequential`, as of a tuple.
            Value::Tuple(items) | Value::Sequential(items) => position
                .and_then(|position| item_at(&items, position))
                .unwrap_or(Value::Unknown),
            Value::DataScalars => Value::DataScalar(Interval::default()),
            // `self.blocks[i]` at a known index of a list whose modules are known.
            Value::Modules(element, Some(items)) => position
                .and_then(|position| item_at(&items, position))
                .unwrap_or_else(|| element_of(&Value::Modules(element, None))),
            modules @ Value::Modules(..) => element_of(&modules),
            _ => Value::Unknown,
        }
    }

    /// The items `items[lower:upper:step]` keeps, as Python's slicing does, when each bound
    /// given is a known integer.
    fn sliced(
        &mut self,
        items: &[Value],
        slice: &ast::ExprSlice,
        env: &mut Env,
    ) -> Option<Rc<[Value]>> {
        let kept = self.slice_positions(items.len(), slice, env)?;
        Some(kept.into_iter().map(|index| items[index].clone()).collect())
    }

    /// The positions `[lower:upper:step]` keeps of a sequence of `length` items (Python's
    /// `slice.indices`: negative bounds count from the end, and each is clamped), when each
    /// bound given is a known integer.
    fn slice_positions(
        &mut self,
        length: usize,
        slice: &ast::ExprSlice,
        env: &mut Env,
    ) -> Option<Vec<usize>> {
        let mut bound = |expr: Option<&Expr>| -> Option<Option<i64>> {
            match expr {
                None => Some(None),
                Some(expr) => {
                    let emit = std::mem::replace(&mut self.emit, false);
                    let value = self.eval(expr, env);
                    self.emit = emit;
                    let number = value
                        .known_constant()
                        .and_then(crate::semantic::value::integer)?;
                    Some(Some(number))
                }
            }
        };
        let lower = bound(slice.lower.as_deref())?;
        let upper = bound(slice.upper.as_deref())?;
        let step = bound(slice.step.as_deref())?.unwrap_or(1);
        let length = i64::try_from(length).ok()?;
        if step == 0 {
            return None;
        }
        let clamp = |bound: i64, low: i64, high: i64| {
            let bound = if bound < 0 { bound + length } else { bound };
            bound.clamp(low, high)
        };
        let (first, end) = if step > 0 {
            (
                lower.map_or(0, |lower| clamp(lower, 0, length)),
                upper.map_or(length, |upper| clamp(upper, 0, length)),
            )
        } else {
            (
                lower.map_or(length - 1, |lower| clamp(lower, -1, length - 1)),
                upper.map_or(-1, |upper| clamp(upper, -1, length - 1)),
            )
        };
        let mut kept = Vec::new();
        let mut index = first;
        while (step > 0 && index < end) || (step < 0 && index > end) {
            kept.push(usize::try_from(index).ok()?);
            index += step;
        }
        Some(kept)
    }

    /// `self.pos[:x.shape[1]]`: slicing a parameter or buffer, whose size is fixed, up to a
    /// dynamic size adds the guard `size <= len(buffer)`, which a `Dim` without `max` violates.
    pub(super) fn check_buffer_slice(&mut self, slice: &Expr, env: &mut Env) {
        let slices: Vec<&ast::ExprSlice> = match slice {
            Expr::Slice(single) => vec![single],
            Expr::Tuple(tuple) => tuple.elts.iter().filter_map(Expr::as_slice_expr).collect(),
            _ => Vec::new(),
        };
        for slice in slices {
            let Some(upper) = &slice.upper else { continue };
            let value = self.eval(upper, env);
            if let Value::Size {
                origin: SizeOrigin::Dynamic { dim, exact: true },
                ..
            } = value
            {
                if !dim.automatic && dim.max.is_none() && !dim.bounds_unknown {
                    self.record(EventKind::BufferSlice { dim }, upper.range());
                }
            }
        }
    }

    pub(super) fn compare(&mut self, compare: &ast::ExprCompare, env: &mut Env) -> Value {
        let left = self.eval(&compare.left, env);
        let rights: Vec<Value> = compare
            .comparators
            .iter()
            .map(|right| self.eval(right, env))
            .collect();
        let (Some(op), Some(right), Some(right_expr)) = (
            compare.ops.first(),
            rights.first(),
            compare.comparators.first(),
        ) else {
            return Value::Unknown;
        };
        let op = match op {
            ast::CmpOp::Lt => CompareOp::Lt,
            ast::CmpOp::LtE => CompareOp::LtE,
            ast::CmpOp::Gt => CompareOp::Gt,
            ast::CmpOp::GtE => CompareOp::GtE,
            ast::CmpOp::Eq => CompareOp::Eq,
            ast::CmpOp::NotEq => CompareOp::NotEq,
            ast::CmpOp::Is | ast::CmpOp::IsNot | ast::CmpOp::In | ast::CmpOp::NotIn => {
                return Value::Unknown;
            }
        };
        if left.is_tensor() || rights.iter().any(Value::is_tensor) {
            // A comparison involving only assumed tensors is as uncertain as they are.
            let assumed = std::iter::once(&left).chain(rights.iter()).all(|value| {
                !value.is_tensor() || matches!(value, Value::Tensor(info) if info.assumed)
            });
            return Value::Tensor(TensorInfo {
                assumed,
                ..TensorInfo::default()
            });
        }
        // A literal, or a size the analysis knows exactly (`ids.shape[0]` of
        // `arange(n).unsqueeze(0)` is 1), is a constant the known ranges may decide against.
        let left_number = number_of(&compare.left).or_else(|| left.known_constant());
        let right_number = number_of(right_expr).or_else(|| right.known_constant());
        let module_level =
            |expr: &Expr| matches!(expr, Expr::Name(name) if !env.binds(name.id.as_str()));
        if ordering_against_configuration(
            op,
            (&left, &compare.left),
            (right, right_expr),
            module_level,
        ) {
            return Value::Unknown;
        }
        let guard = match (&left, right) {
            (Value::DataScalar(interval), _) => data_guard(*interval, op, right_number),
            (_, Value::DataScalar(interval)) => data_guard(*interval, op.flipped(), left_number),
            (
                Value::Size {
                    origin, interval, ..
                },
                other,
            ) => size_guard(origin, *interval, op, other, right_number),
            (
                other,
                Value::Size {
                    origin, interval, ..
                },
            ) => size_guard(origin, *interval, op.flipped(), other, left_number),
            _ => Value::Unknown,
        };
        match guard {
            Value::Guard(mut guard)
                if !guard.decided
                    && env
                        .checked
                        .iter()
                        .any(|fact| fact.decides(&compare.left, op, right_expr)) =>
            {
                guard.decided = true;
                Value::Guard(guard)
            }
            other => other,
        }
    }
}

/// An ordering of a dynamic size against a configuration value the analysis cannot read
/// (`t <= self.config.block_size`, `n < cfg["max_len"]`) under a `Dim` with an upper bound:
/// whether the number lies inside the declared range cannot be told, so the guard is not known
/// to violate it. (Without an upper bound any finite number cuts the range, and the guard stays.)
/// `module_level` tells a bare name the function does not bind (a module's `LIMIT`, perhaps
/// rebound through `global`) from a local one.
fn ordering_against_configuration(
    op: CompareOp,
    (left, left_expr): (&Value, &Expr),
    (right, right_expr): (&Value, &Expr),
    module_level: impl Fn(&Expr) -> bool,
) -> bool {
    if !matches!(
        op,
        CompareOp::Lt | CompareOp::LtE | CompareOp::Gt | CompareOp::GtE
    ) {
        return false;
    }
    let bounded_dynamic = |value: &Value| {
        matches!(
            value,
            Value::Size {
                origin: SizeOrigin::Dynamic { dim, .. },
                ..
            } if dim.max.is_some() || dim.bounds_unknown
        )
    };
    // An attribute, a key or a module-level name the analysis cannot read
    // (`self.config.block_size`, `CONFIG["max_len"]` or `LIMIT` changed after it was written).
    // A local name is not: it is as often a loop counter (`while n < x.shape[0]`), whose guard
    // torch does add.
    let configuration = |value: &Value, expr: &Expr| {
        matches!(value, Value::Unknown | Value::Qualified(_))
            && (matches!(expr, Expr::Attribute(_) | Expr::Subscript(_)) || module_level(expr))
    };
    (bounded_dynamic(left) && configuration(right, right_expr))
        || (bounded_dynamic(right) && configuration(left, left_expr))
}

/// The item at a Python index (negative from the end), when the sequence has it.
fn item_at(items: &[Value], position: i64) -> Option<Value> {
    let position = if position < 0 {
        i64::try_from(items.len()).ok()? + position
    } else {
        position
    };
    usize::try_from(position)
        .ok()
        .and_then(|position| items.get(position))
        .cloned()
}

/// What a comprehension run abstractly makes of its element: tensors or modules of unknown
/// number.
fn comprehension_value(element: Value) -> Value {
    match element {
        Value::Tensor(info) => Value::Tensors(info),
        module @ (Value::Module(..) | Value::Layer(_)) => Value::Modules(Rc::new(module), None),
        _ => Value::Unknown,
    }
}
