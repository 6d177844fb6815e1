//! Construction: the values a model is built with, followed from the code that builds it.
//!
//! `GPT(GPTConfig(block_size=32))` runs `GPT.__init__` with a configuration object whose
//! `block_size` is 32, and what `__init__` stores on `self` (numbers, layers sized from the
//! configuration, buffers, submodules that are built the same way) is what `forward` reads. The
//! construction pass runs the entry file's module-level code, and the function that holds the
//! export call when that code never reaches it, without tracing anything. Each module instance
//! it builds keeps what its own `__init__` stored (`Residual(module=Attention())` beside
//! `Residual(module=FeedForward())`), and its class keeps the join of all of them, for values
//! that lost the instance. Configuration objects (dataclasses, plain classes, `SimpleNamespace`)
//! are values wherever they are built.

use std::collections::BTreeMap;
use std::rc::Rc;

use ruff_text_size::Ranged;

use crate::semantic::value::LayerInfo;
use crate::semantic::value::{BuiltFields, Instance};
use crate::syntax::ast::{self, Expr, Stmt};
use crate::{catalogue, names};

use super::{Env, Interpreter, Value, layers};

/// Inline calls the construction pass may follow: building a model runs every submodule's
/// `__init__`, many more calls than one `forward` makes.
pub(super) const CONSTRUCTION_BUDGET: usize = 4000;

/// The field holding the layer a subclass of a `torch.nn` layer is (`class MyLinear(nn.Linear)`,
/// built from the arguments torch's own `__init__` received): not a Python name, so no
/// attribute of the user's can be it.
pub(super) const LAYER_FIELD: &str = "<torch.nn layer>";

/// The field holding the steps of a subclass of `nn.Sequential` (`class Block(nn.Sequential)`,
/// built from the layers torch's own `__init__` received): not a Python name either.
pub(super) const SEQUENTIAL_FIELD: &str = "<torch.nn.Sequential steps>";

/// `nn.Sequential(conv, act)` and its subclasses' `super().__init__(*layers)`: the steps, when
/// each is a layer or a module the analysis knows.
pub(super) fn sequential_steps(args: &[Value], kwargs: &[(String, Value)]) -> Option<Value> {
    let known = kwargs.is_empty()
        && args.iter().all(|step| {
            matches!(
                step,
                Value::Layer(_) | Value::Module(Some(_), _) | Value::Sequential(_)
            )
        });
    known.then(|| Value::Sequential(Rc::from(args)))
}

/// An instance whose `__init__` is running.
pub(super) struct Building {
    pub(super) class: Option<usize>,
    pub(super) fields: BTreeMap<String, Value>,
    /// How many undecided `if` clauses enclosed the construction when it began: a field
    /// written under more of them may or may not be written, and is joined with what it held.
    undecided: usize,
}

impl Interpreter<'_, '_> {
    /// Runs the code that builds the entrypoint's model: the entry file's module-level
    /// statements, then, when they did not build the entry class (the export call is in a
    /// function that is called some other way), the function that holds the export call.
    pub(crate) fn run_construction(
        &mut self,
        body: &[Stmt],
        entry_class: Option<usize>,
        scope: Option<usize>,
    ) {
        self.constructing = true;
        self.budget = CONSTRUCTION_BUDGET;
        self.unroll_budget = super::UNROLL_BUDGET;
        self.returns.push(Value::Bottom);
        let mut module_level = Env::default();
        self.exec_block(body, &mut module_level);
        self.returns.pop();
        // The tracer's convention: the module-level `model` is what is exported.
        if self.exported_instance.is_none() {
            self.exported_instance = module_level
                .locals
                .get("model")
                .filter(|model| {
                    matches!(
                        model,
                        Value::Module(Some(_), Some(_)) | Value::Sequential(_)
                    )
                })
                .cloned();
        }
        let built = |interpreter: &Self| {
            entry_class.is_none_or(|class| interpreter.constructed.contains_key(&class))
        };
        if let Some(function) = scope.filter(|_| !built(self)) {
            self.budget = CONSTRUCTION_BUDGET;
            self.inline(function, None, &[], &[], None);
        }
        self.constructing = false;
    }

    /// Calls the workspace class `class`: a configuration object is built wherever it is
    /// called; a module's `__init__` runs only in the construction pass (in traced code a
    /// module built in `forward` is rare, and its `__init__` is not what the exporter reports).
    /// `None` when the call is not followed.
    pub(super) fn construct(
        &mut self,
        class: usize,
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Option<Value> {
        let is_module = self.model.classes[class].is_module;
        if is_module && !self.constructing {
            return None;
        }
        if !is_module && !self.is_plain_class(class, 0) {
            return None;
        }
        let mut fields = self.class_level_fields(class);
        let generated_init = self.is_record_class(class, 0);
        if generated_init {
            let order: Vec<String> = self.record_fields(class, 0);
            // `Config(**loaded)` of unknown keys: no field is known to keep its default.
            if kwargs.iter().any(|(name, _)| name.is_empty()) {
                for name in &order {
                    fields.insert(name.clone(), Value::Unknown);
                }
            }
            for (name, value) in order.iter().zip(args) {
                fields.insert(name.clone(), value.clone());
            }
            for (name, value) in kwargs {
                if order.contains(name) {
                    fields.insert(name.clone(), value.clone());
                }
            }
        }
        self.building.push(Building {
            class: Some(class),
            fields,
            undecided: self.undecided,
        });
        let index = self.building.len() - 1;
        let receiver = Some(Value::Building(index));
        // An object built in traced code is followed for its values only: what its `__init__`
        // does (often library bookkeeping) is not reported on the line that builds it.
        let emit = std::mem::replace(&mut self.emit, false);
        let init = self.model.find_method(class, "__init__");
        match init {
            Some(init)
                if !generated_init
                    || self.model.classes[class].methods.contains_key("__init__") =>
            {
                self.inline(init, receiver.clone(), args, kwargs, None);
            }
            _ => {}
        }
        // A `torch.nn` layer's subclass without an `__init__` of its own: torch's builds the
        // layer from the call's arguments.
        if let (None, Some(base)) = (init, self.model.layer_base(class)) {
            let layer = super::layers::layer_info(base, call, args, kwargs);
            self.building[index]
                .fields
                .insert(LAYER_FIELD.to_owned(), Value::Layer(Rc::new(layer)));
        }
        // ... of `nn.Sequential`: torch's keeps the layers passed as its steps.
        if init.is_none() && self.model.derives_from(class, "torch.nn.Sequential") {
            if let Some(steps) = sequential_steps(args, kwargs) {
                self.building[index]
                    .fields
                    .insert(SEQUENTIAL_FIELD.to_owned(), steps);
            }
        }
        if let Some(post_init) = self.model.find_method(class, "__post_init__") {
            self.inline(post_init, receiver, &[], &[], None);
        }
        self.emit = emit;
        let building = self.building.pop()?;
        if is_module {
            let merged = match self.constructed.remove(&class) {
                Some(earlier) => join_fields(&earlier, &building.fields),
                None => building.fields.clone(),
            };
            self.constructed.insert(class, merged);
            let built = BuiltFields(building.fields);
            Some(Value::Module(Some(class), Some(Rc::new(built))))
        } else {
            Some(Value::Object(Instance::new(Some(class), building.fields)))
        }
    }

    /// `types.SimpleNamespace(a=1, b=2)`: an object with the keywords as fields.
    pub(super) fn namespace(kwargs: &[(String, Value)]) -> Value {
        Value::Object(Instance::mapping(
            kwargs.iter().filter(|(name, _)| !name.is_empty()).cloned(),
        ))
    }

    /// `dict(a=1)`, `dict(base, a=1)`, `dict([("a", 1)])`: a mapping of those string keys, in
    /// order. Unknown when some key is not known (`dict(**loaded)`).
    pub(super) fn dict_call(args: &[Value], kwargs: &[(String, Value)]) -> Value {
        if kwargs.iter().any(|(name, _)| name.is_empty()) {
            return Value::Unknown;
        }
        let mut entries = match args {
            [] => Vec::new(),
            [Value::Object(base)] if base.class.is_none() => match base.ordered_entries() {
                Some(entries) => entries,
                None => return Value::Unknown,
            },
            [pairs] => {
                let Some(items) = super::exact_items(pairs) else {
                    return Value::Unknown;
                };
                let entries: Option<Vec<(String, Value)>> = items
                    .iter()
                    .map(|pair| match pair {
                        Value::Tuple(pair) => match &pair[..] {
                            [Value::Str(key), value] => Some((key.to_string(), value.clone())),
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect();
                match entries {
                    Some(entries) => entries,
                    None => return Value::Unknown,
                }
            }
            _ => return Value::Unknown,
        };
        entries.extend(kwargs.iter().cloned());
        Value::Object(Instance::mapping(entries))
    }

    /// `parser.add_argument("--levels", default=3)` as the construction pass runs it: the
    /// option's destination and the value it holds when the script runs with no arguments
    /// (`store_true` is false, no default is `None`, a required argument is unknown). A
    /// destination the analysis cannot read declares nothing it could name.
    pub(super) fn declare_option(&mut self, args: &[Value], kwargs: &[(String, Value)]) {
        let keyword = |name: &str| {
            kwargs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value)
        };
        let flag = |value: &Value| match value {
            Value::Str(flag) => Some(flag.clone()),
            _ => None,
        };
        let destination = if let Some(dest) = keyword("dest") {
            flag(dest).map(|dest| dest.to_string())
        } else {
            let flags: Option<Vec<Rc<str>>> = args.iter().map(flag).collect();
            flags.and_then(|flags| names::option_destination(&flags))
        };
        let Some(destination) = destination else {
            return;
        };
        let required = matches!(keyword("required"), Some(Value::Number(n)) if *n != 0.0);
        let action = keyword("action").and_then(flag);
        let value = option_value(required, keyword("default").cloned(), action.as_deref());
        let Some(options) = self.parser_options.as_mut() else {
            return;
        };
        let value = match options.get(&destination) {
            Some(earlier) => earlier.join(&value),
            None => value,
        };
        options.insert(destination, value);
    }

    /// `parser.set_defaults(swap=0)`: the defaults `parse_args` then gives, over those of the
    /// options (a keyword of unknown name leaves every option unknown).
    pub(super) fn set_option_defaults(&mut self, kwargs: &[(String, Value)]) {
        for (name, value) in kwargs {
            match self.parser_options.as_mut() {
                Some(_) if name.is_empty() => self.parser_options = None,
                Some(options) => {
                    options.insert(name.clone(), value.clone());
                }
                None => {}
            }
        }
    }

    /// What `parser.parse_args()` returns when the script runs with no arguments: a
    /// namespace of every option the construction pass saw declared, and of every
    /// `add_argument` of the analysed file it did not run (a helper it could not follow),
    /// read from the call as written. The tracer runs export scripts the same way unless an
    /// entrypoint table gives their arguments.
    pub(super) fn parsed_arguments(&mut self) -> Value {
        if self.model.arguments_given {
            return Value::Unknown;
        }
        let mut fields = if self.file == 0 {
            match self.written_arguments() {
                Value::Object(written) => written.fields.borrow().clone(),
                _ => BTreeMap::new(),
            }
        } else {
            BTreeMap::new()
        };
        let Some(options) = self.parser_options.as_ref() else {
            return Value::Unknown;
        };
        fields.extend(options.clone());
        Value::Object(Instance::new(None, fields))
    }

    /// Every `add_argument` default of the analysed file, read from the calls as written
    /// (`store_true` is false, no default is `None`, a required argument is unknown).
    fn written_arguments(&mut self) -> Value {
        use crate::syntax::ast::visitor::{self, Visitor};
        struct Arguments<'b>(Vec<&'b ast::ExprCall>);
        impl<'b> Visitor<'b> for Arguments<'b> {
            fn visit_expr(&mut self, expr: &'b Expr) {
                if let Expr::Call(call) = expr {
                    if matches!(&*call.func, Expr::Attribute(method) if method.attr.as_str() == "add_argument")
                    {
                        self.0.push(call);
                    }
                }
                visitor::walk_expr(self, expr);
            }
        }
        let mut arguments = Arguments(Vec::new());
        arguments.visit_body(self.module_body);
        let emit = std::mem::replace(&mut self.emit, false);
        let mut fields: BTreeMap<String, Value> = BTreeMap::new();
        for call in arguments.0 {
            let Some(dest) = names::argparse_destination(call) else {
                continue;
            };
            let keyword = |name: &str| call.arguments.find_keyword(name).map(|k| &k.value);
            let required = keyword("required").is_some_and(
                |value| matches!(value, Expr::BooleanLiteral(literal) if literal.value),
            );
            let default = keyword("default")
                .filter(|_| !required)
                .map(|default| self.eval(default, &mut Env::default()));
            let action = keyword("action").and_then(names::string_literal);
            let value = option_value(required, default, action);
            let value = match fields.get(&dest) {
                Some(earlier) => earlier.join(&value),
                None => value,
            };
            fields.insert(dest, value);
        }
        self.emit = emit;
        Value::Object(Instance::new(None, fields))
    }

    /// `self.<name> = value` on an instance being built.
    pub(super) fn write_field(&mut self, index: usize, name: &str, value: Value) {
        let undecided = self.undecided;
        let Some(building) = self.building.get_mut(index) else {
            return;
        };
        // Read while the model is built, not while it is exported: eager keeps that one value
        // too, so it is a constant of the model, not one the export bakes in.
        let value = match value {
            Value::Baked(_) => Value::Unknown,
            value => value,
        };
        let value = match building.fields.get(name) {
            Some(existing) if undecided > building.undecided => existing.join(&value),
            _ => value,
        };
        // `self.head = nn.Linear(...)` in a subclass of `nn.Sequential` registers one more
        // step, which its `forward` runs: where, among the others, is not followed.
        if name != SEQUENTIAL_FIELD
            && matches!(
                value,
                Value::Module(..) | Value::Layer(_) | Value::Sequential(_) | Value::Modules(..)
            )
        {
            building.fields.remove(SEQUENTIAL_FIELD);
        }
        building.fields.insert(name.to_owned(), value);
    }

    /// `instance.<name> = value` (`None`: a name the analysis cannot read, as in
    /// `setattr(config, key, value)` over overrides, after which no field is known). Under a
    /// condition the analysis cannot decide, the field keeps what both paths give it.
    pub(super) fn set_field(&self, instance: &Rc<Instance>, name: Option<&str>, value: Value) {
        let Some(name) = name else {
            instance.forget();
            return;
        };
        let value = match instance.field(name) {
            Some(existing) if self.undecided > 0 => existing.join(&value),
            // A key written only on some paths may not be there: the mapping's keys are not
            // known one by one any more.
            None if self.undecided > 0 => {
                instance.forget_order();
                value
            }
            _ => value,
        };
        instance.insert(name, value);
    }

    /// `setattr(self, name, value)` with a name the analysis cannot read: no field written so
    /// far is known any more.
    pub(super) fn forget_fields(&mut self, index: usize) {
        if let Some(building) = self.building.get_mut(index) {
            forget(&mut building.fields);
        }
    }

    /// An attribute of an instance being built: a field written so far, a method of its
    /// class, or what the class's methods store there.
    pub(super) fn building_attribute(&mut self, index: usize, name: &str) -> Value {
        let Some(building) = self.building.get(index) else {
            return Value::Unknown;
        };
        if let Some(value) = building.fields.get(name) {
            return value.clone();
        }
        let Some(class) = building.class else {
            return Value::Unknown;
        };
        if let Some(method) = self.model.find_method(class, name) {
            if self.is_property(method) {
                return self.inline(method, Some(Value::Building(index)), &[], &[], None);
            }
            return Value::Unknown;
        }
        match self.model.find_attribute(class, name) {
            Some(value) => value.clone(),
            None if self.model.classes[class].is_module => super::module_parameter(name),
            None => Value::Unknown,
        }
    }

    /// A method called on an instance being built: followed with the instance as `self`
    /// (`self._build(config)` sets attributes too); `register_buffer` and its kin set one.
    pub(super) fn building_method(
        &mut self,
        index: usize,
        name: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
        call: &ast::ExprCall,
    ) -> Value {
        let class = self.building.get(index).and_then(|building| building.class);
        if let Some(method) = class.and_then(|class| self.model.find_method(class, name)) {
            return self.inline(method, Some(Value::Building(index)), args, kwargs, None);
        }
        // `self.add_module("norm", ...)` in a subclass of `nn.Sequential`: a step after those
        // its constructor received, in order; one the analysis cannot read leaves the steps
        // unknown.
        if let ("add_module" | "register_module" | "append" | "extend" | "insert", Some(building)) =
            (name, self.building.get_mut(index))
        {
            let step = match name {
                "append" => args.first(),
                // A name of a step it already has (`"0"`) replaces that step.
                "add_module" | "register_module" if matches!(args.first(), Some(Value::Str(named)) if named.parse::<usize>().is_err()) => {
                    args.get(1)
                }
                _ => None,
            };
            if let Some(Value::Sequential(steps)) = building.fields.get(SEQUENTIAL_FIELD) {
                let grown = step
                    .and_then(|step| sequential_steps(std::slice::from_ref(step), &[]))
                    .map(|_| Value::Sequential(steps.iter().chain(step).cloned().collect()));
                match grown {
                    Some(grown) => {
                        building.fields.insert(SEQUENTIAL_FIELD.to_owned(), grown);
                    }
                    None => {
                        building.fields.remove(SEQUENTIAL_FIELD);
                    }
                }
            }
        }
        // The name as the program computes it: a literal, or `f"block{i}"` in an unrolled loop.
        let named = match args.first() {
            Some(Value::Str(field)) => Some(field.to_string()),
            _ => call
                .arguments
                .args
                .first()
                .and_then(names::string_literal)
                .map(str::to_owned),
        };
        if let (
            "register_buffer" | "register_parameter" | "add_module" | "register_module",
            Some(field),
        ) = (name, named.as_deref())
        {
            let value = args.get(1).cloned().unwrap_or(Value::Unknown);
            let value = match (name, value) {
                (
                    "add_module" | "register_module",
                    value @ (Value::Module(..) | Value::Layer(_)),
                ) => value,
                ("add_module" | "register_module", _) => Value::Module(None, None),
                (_, value @ Value::Tensor(_)) => value,
                _ => Value::tensor(),
            };
            self.write_field(index, field, value);
        }
        Value::Unknown
    }

    /// A method called on a constructed object: followed with the object as `self`;
    /// `dict.get(key, default)` on a mapping display reads the field; `update`, `pop` and the
    /// like change it (`update` with a known mapping merges it; otherwise no field is known).
    pub(super) fn object_method(
        &mut self,
        instance: &Rc<Instance>,
        name: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
        call: &ast::ExprCall,
    ) -> Value {
        match instance.class {
            Some(class) => match self.model.find_method(class, name) {
                Some(method) => self.inline(
                    method,
                    Some(Value::Object(instance.clone())),
                    args,
                    kwargs,
                    None,
                ),
                None => Value::Unknown,
            },
            // `config.get("dim", 64)` on a mapping.
            None if name == "get" => call
                .arguments
                .args
                .first()
                .and_then(names::string_literal)
                .and_then(|key| instance.field(key))
                .or_else(|| args.get(1).cloned())
                .unwrap_or(Value::None),
            None => {
                let known_keywords = kwargs.iter().all(|(name, _)| !name.is_empty());
                match (name, args) {
                    // `defaults.update(other)`, `defaults.update(size=32)`: merged in order.
                    ("update", [] | [Value::Object(_)]) if known_keywords => {
                        let merged = match args {
                            [Value::Object(other)] if other.class.is_none() => {
                                other.ordered_entries().or_else(|| {
                                    // Known keys in an unknown order: the values still hold.
                                    let fields = other.fields.borrow().clone();
                                    instance.forget_order();
                                    Some(fields.into_iter().collect())
                                })
                            }
                            [] => Some(Vec::new()),
                            _ => None,
                        };
                        let Some(merged) = merged else {
                            self.set_field(instance, None, Value::Unknown);
                            return Value::Unknown;
                        };
                        for (field, value) in merged.into_iter().chain(kwargs.iter().cloned()) {
                            self.set_field(instance, Some(&field), value);
                        }
                    }
                    ("update" | "pop" | "popitem" | "setdefault" | "clear", _) => {
                        self.set_field(instance, None, Value::Unknown);
                    }
                    // A loop over `defaults.items()` runs once per entry, in the dict's order.
                    ("items" | "keys" | "values", []) => {
                        let Some(entries) = instance.ordered_entries() else {
                            return Value::Unknown;
                        };
                        return Value::Tuple(
                            entries
                                .into_iter()
                                .map(|(key, value)| match name {
                                    "items" => Value::Tuple(Rc::from(vec![
                                        Value::Str(Rc::from(key)),
                                        value,
                                    ])),
                                    "keys" => Value::Str(Rc::from(key)),
                                    _ => value,
                                })
                                .collect(),
                        );
                    }
                    _ => {}
                }
                Value::Unknown
            }
        }
    }

    /// An attribute of a constructed object: its field, or a `@property` of its class run on
    /// it.
    pub(super) fn object_attribute(&mut self, instance: &Rc<Instance>, name: &str) -> Value {
        if let Some(value) = instance.field(name) {
            return value;
        }
        let Some(class) = instance.class else {
            return Value::Unknown;
        };
        match self.model.find_method(class, name) {
            Some(method) if self.is_property(method) => self.inline(
                method,
                Some(Value::Object(instance.clone())),
                &[],
                &[],
                None,
            ),
            _ => Value::Unknown,
        }
    }

    /// What the construction pass stored in `self.<name>` of module class `class`, when no
    /// method other than `__init__` assigns it (a counter or a cache that `forward` changes is
    /// not what `__init__` left there).
    /// What the `__init__` of this very instance stored as `name`, unless a method changes it
    /// afterwards (as for [`Self::constructed_attribute`]).
    pub(super) fn built_field(&self, module: &Value, name: &str) -> Option<Value> {
        let Value::Module(Some(class), Some(fields)) = module else {
            return None;
        };
        let value = fields.0.get(name)?;
        (!self.model.assigned_after_construction(*class, name)).then(|| value.clone())
    }

    pub(super) fn constructed_attribute(&self, class: usize, name: &str) -> Option<Value> {
        let fields = self.constructed.get(&class)?;
        let value = fields.get(name)?;
        (!self.model.assigned_after_construction(class, name)).then(|| value.clone())
    }

    pub(super) fn is_classmethod(&self, method: usize) -> bool {
        self.model.functions[method]
            .def
            .decorator_list
            .iter()
            .any(|decorator| names::dotted(&decorator.expression).as_deref() == Some("classmethod"))
    }

    fn is_property(&self, method: usize) -> bool {
        self.model.functions[method]
            .def
            .decorator_list
            .iter()
            .any(|decorator| {
                names::dotted(&decorator.expression).is_some_and(|name| {
                    matches!(name.as_str(), "property" | "functools.cached_property")
                        || name.ends_with("cached_property")
                })
            })
    }

    /// A class whose instances are plain Python objects: no bases but `object`, other plain
    /// classes of the workspace and `typing.NamedTuple`. (A class with another base may be a
    /// module, a pydantic model or anything else whose construction the analysis cannot see.)
    fn is_plain_class(&self, class: usize, depth: usize) -> bool {
        let info = &self.model.classes[class];
        let written = info
            .def
            .arguments
            .as_ref()
            .map_or(0, |arguments| arguments.args.len());
        if info
            .def
            .arguments
            .as_ref()
            .is_some_and(|arguments| !arguments.keywords.is_empty())
        {
            return false;
        }
        // Bases are resolved after module-level names: until then only a class with none is
        // known to be plain.
        depth < 16
            && info.bases.len() == written
            && info.bases.iter().all(|base| match base {
                Value::Class(base) => self.is_plain_class(*base, depth + 1),
                Value::Qualified(name) => matches!(
                    name.as_ref(),
                    "builtins.object" | "typing.NamedTuple" | "typing_extensions.NamedTuple"
                ),
                _ => false,
            })
    }

    /// A class whose `__init__` Python generates from its annotated fields: `@dataclass` (or a
    /// `NamedTuple`), itself or through a base.
    fn is_record_class(&self, class: usize, depth: usize) -> bool {
        let info = &self.model.classes[class];
        names::is_dataclass(info.def)
            || (depth < 16
                && info.bases.iter().any(|base| match base {
                    Value::Class(base) => self.is_record_class(*base, depth + 1),
                    Value::Qualified(name) => name.ends_with("NamedTuple"),
                    _ => false,
                }))
    }

    /// The generated `__init__`'s parameters: annotated class-level names, bases first.
    fn record_fields(&self, class: usize, depth: usize) -> Vec<String> {
        let info = &self.model.classes[class];
        let mut fields = Vec::new();
        if depth < 16 {
            for base in &info.bases {
                if let Value::Class(base) = base {
                    for field in self.record_fields(*base, depth + 1) {
                        if !fields.contains(&field) {
                            fields.push(field);
                        }
                    }
                }
            }
        }
        for stmt in &info.def.body {
            if let Stmt::AnnAssign(assign) = stmt {
                let class_variable = names::dotted(&assign.annotation).is_some_and(|name| {
                    name.starts_with("ClassVar") || name.ends_with(".ClassVar")
                }) || matches!(&*assign.annotation, Expr::Subscript(subscript) if names::dotted(&subscript.value).is_some_and(|name| name.ends_with("ClassVar")));
                if let (Expr::Name(target), false) = (&*assign.target, class_variable) {
                    let name = target.id.to_string();
                    if !fields.contains(&name) {
                        fields.push(name);
                    }
                }
            }
        }
        fields
    }

    /// What the class body (and its bases') binds to plain names: the defaults an instance
    /// reads until it sets its own. `field(default=x)` is `x`; a `default_factory` is unknown.
    fn class_level_fields(&mut self, class: usize) -> BTreeMap<String, Value> {
        let mut fields = BTreeMap::new();
        let lineage: Vec<usize> = self.model.lineage(class).into_iter().rev().collect();
        let caller_file = self.file;
        // Defaults are computed when the class is defined, not traced with the call.
        let emit = std::mem::replace(&mut self.emit, false);
        for current in lineage {
            let info = &self.model.classes[current];
            self.file = info.file;
            for stmt in &info.def.body {
                let (target, value) = match stmt {
                    Stmt::Assign(assign) => match assign.targets.as_slice() {
                        [target] => (target, Some(&*assign.value)),
                        _ => continue,
                    },
                    Stmt::AnnAssign(assign) => (&*assign.target, assign.value.as_deref()),
                    _ => continue,
                };
                let Expr::Name(target) = target else { continue };
                let value = match value {
                    Some(Expr::Call(call))
                        if names::dotted(&call.func)
                            .is_some_and(|name| name.rsplit('.').next() == Some("field")) =>
                    {
                        match call.arguments.find_keyword("default") {
                            Some(keyword) => self.eval(&keyword.value, &mut Env::default()),
                            None => Value::Unknown,
                        }
                    }
                    Some(value) => self.eval(value, &mut Env::default()),
                    None => Value::Unknown,
                };
                fields.insert(target.id.to_string(), value);
            }
        }
        self.file = caller_file;
        self.emit = emit;
        fields
    }
}

/// After a write the analysis cannot place (a `setattr` of an unknown name, `dict.update` of
/// unknown keys): no field is known any more.
fn forget(fields: &mut BTreeMap<String, Value>) {
    for field in fields.values_mut() {
        *field = Value::Unknown;
    }
}

/// The fields two constructions of one class agree on, each joined.
fn join_fields(
    earlier: &BTreeMap<String, Value>,
    later: &BTreeMap<String, Value>,
) -> BTreeMap<String, Value> {
    earlier
        .iter()
        .map(|(name, value)| {
            let joined = match later.get(name) {
                Some(other) => value.join(other),
                None => Value::Unknown,
            };
            (name.clone(), joined)
        })
        .chain(
            later
                .iter()
                .filter(|(name, _)| !earlier.contains_key(*name))
                .map(|(name, _)| (name.clone(), Value::Unknown)),
        )
        .collect()
}

impl Interpreter<'_, '_> {
    /// `super().<name>(...)`: the method of a local base, or what a `torch.nn` base does.
    pub(super) fn super_call(
        &mut self,
        call: &ast::ExprCall,
        name: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
        any_tensor: bool,
        env: &Env,
    ) -> Value {
        let Some(class) = env.class else {
            return Value::Unknown;
        };
        // In a construction, `super().__init__(...)` builds the same instance.
        let receiver = match env.locals.get("self") {
            Some(building @ (Value::Building(_) | Value::Object(_))) => building.clone(),
            Some(module @ Value::Module(Some(_), _)) => module.clone(),
            _ => Value::Module(Some(class), None),
        };
        for base in &self.model.classes[class].bases {
            if let Value::Class(base) = base {
                if let Some(method) = self.model.find_method(*base, name) {
                    return self.inline(method, Some(receiver), args, kwargs, None);
                }
            }
        }
        // `super().forward(x)` of a `torch.nn` layer's subclass: the layer's own.
        if let (Value::Module(Some(_), _), "forward") = (&receiver, name) {
            if let Value::Layer(layer) = self.attribute(&receiver, LAYER_FIELD) {
                self.transformer_masks(&layer, args, kwargs, call.range());
                return self.layer_call(&layer, args, call.range());
            }
        }
        // `super().__init__(d_model=...)` of a `torch.nn` base: the submodules torch builds,
        // and, for a layer, the layer itself from the arguments torch's `__init__` receives.
        if let (Value::Building(index), "__init__") = (&receiver, name) {
            if let Some(base) = self.model.classes[class]
                .bases
                .iter()
                .find_map(crate::semantic::catalogue_layer)
                .cloned()
            {
                let layer = layers::layer_info(&base, call, args, kwargs);
                self.write_field(*index, LAYER_FIELD, Value::Layer(Rc::new(layer)));
            }
            if self.model.derives_from(class, "torch.nn.Sequential") {
                if let Some(steps) = sequential_steps(args, kwargs) {
                    self.write_field(*index, SEQUENTIAL_FIELD, steps);
                }
            }
            let built: Vec<(&str, &str)> = self.model.classes[class]
                .bases
                .iter()
                .filter_map(|base| match base {
                    Value::Qualified(qualified) => Some(catalogue::base_submodules(qualified)),
                    _ => None,
                })
                .flatten()
                .copied()
                .collect();
            for (attribute, layer) in built {
                let layer = Value::Layer(Rc::new(LayerInfo {
                    qualified: Rc::from(layer),
                    sizes: Vec::new(),
                    per_axis: Vec::new(),
                    same_padding: false,
                    rearrange: None,
                }));
                self.write_field(*index, attribute, layer);
            }
        }
        if any_tensor && name == "forward" {
            Value::opaque_tensor()
        } else {
            Value::Unknown
        }
    }
}

/// What an option holds when the script runs with no arguments: unknown when it is required,
/// else its default (`store_true` is false, `store_false` true, no default is `None`).
fn option_value(required: bool, default: Option<Value>, action: Option<&str>) -> Value {
    match (default, action) {
        _ if required => Value::Unknown,
        (Some(default), _) => default,
        (None, Some("store_true")) => Value::Number(0.0),
        (None, Some("store_false")) => Value::Number(1.0),
        (None, _) => Value::None,
    }
}
