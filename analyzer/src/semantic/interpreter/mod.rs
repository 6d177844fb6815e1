//! The abstract interpreter: runs traced functions over [`Value`]s instead of data.
//!
//! Each module class's `forward` is a root. Calls to methods and functions of the same file are
//! followed inline (memoised by arguments, bounded in depth and count), so a helper sees the
//! values its caller passes. Branches are both taken and their bindings joined; loop bodies run
//! twice so values assigned late in the body reach its start. Events are recorded where a value
//! meets a construct the exporter cannot trace.

use rustc_hash::{FxHashMap, FxHashSet};
use std::rc::Rc;

use ruff_text_size::{Ranged, TextRange};

use super::events::Forcing;
use super::events::{BoolContext, Event, EventKind, ScalarUse};
use super::symbolic::SymSize;
use super::value::{
    BuiltFields, CompareOp, Compared, DimDecl, Guard, GuardKind, Interval, SizeComparison,
    SizeOrigin, TensorDevice, TensorDims, TensorInfo, Value,
};
use super::{SemanticModel, ShapesSpec, Site};
use crate::catalogue::{AttributeResult, Constructed, MethodResult, TorchResult};
use crate::custom_ops::OpDefinition;
use crate::names;
use crate::syntax::ast::{self, Expr, Stmt};

mod builtins;
mod calls;
mod construction;
mod devices;
mod expressions;
mod layers;
mod modules;
mod sequences;
mod shape_ops;
mod statements;
mod tensor_sizes;
mod torch_shapes;
mod used_classes;

pub(crate) use used_classes::classes_used_across;
use used_classes::classes_used_from;

/// Calls followed inline from one root before the interpreter stops following.
const INLINE_BUDGET: usize = 400;
/// How deep inline calls may nest.
const MAX_DEPTH: usize = 8;
/// How deep one expression may nest before its value is unknown.
const MAX_EXPRESSION_DEPTH: usize = 4_000;

/// Local bindings of one function activation.
#[derive(Clone, Default)]
struct Env {
    locals: FxHashMap<String, Value>,
    /// The enclosing function's bindings, for nested functions (closures).
    outer: Option<Rc<FxHashMap<String, Value>>>,
    /// The class whose method is running, for `super()`.
    class: Option<usize>,
    /// Comparisons known to hold here (`torch._check(idx.shape[0] != 0)`, `assert a <= b`).
    checked: Vec<CheckedComparison>,
    /// The attributes (`self.cache`, as `statements::attribute_key` names them) that started
    /// this call with what the script's own calls before the export left: a branch on them the
    /// analysis cannot decide may not run at export, so what it finds there is a warning.
    warmed: Vec<String>,
}

/// A comparison stated by `torch._check` or `assert`, which decides the same comparison (or
/// its negation) later on, as the exporter's runtime assertions do.
#[derive(Debug, Clone, PartialEq)]
struct CheckedComparison {
    left: u64,
    op: CompareOp,
    right: u64,
    /// The names the operands read: assigning one forgets the fact.
    names: Vec<String>,
}

impl CheckedComparison {
    fn new(left: &Expr, op: CompareOp, right: &Expr) -> Self {
        let mut names = Vec::new();
        for operand in [left, right] {
            collect_names(operand, &mut names);
        }
        Self {
            left: expression_key(left),
            op,
            right: expression_key(right),
            names,
        }
    }

    /// Whether this fact decides `left <op> right`, one way or the other.
    fn decides(&self, left: &Expr, op: CompareOp, right: &Expr) -> bool {
        let (left, right) = (expression_key(left), expression_key(right));
        let fact = if (self.left, self.right) == (left, right) {
            self.op
        } else if (self.left, self.right) == (right, left) {
            self.op.flipped()
        } else {
            return false;
        };
        match fact {
            CompareOp::Lt | CompareOp::Gt | CompareOp::Eq => true,
            CompareOp::LtE => matches!(op, CompareOp::LtE | CompareOp::Gt),
            CompareOp::GtE => matches!(op, CompareOp::GtE | CompareOp::Lt),
            CompareOp::NotEq => matches!(op, CompareOp::NotEq | CompareOp::Eq),
        }
    }
}

/// A structural key of an expression: equal for `idx.shape[0]` and `idx.shape[ 0 ]`.
fn expression_key(expr: &Expr) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    crate::syntax::ast::comparable::ComparableExpr::from(expr).hash(&mut hasher);
    hasher.finish()
}

fn collect_names(expr: &Expr, names: &mut Vec<String>) {
    use crate::syntax::ast::visitor::{self, Visitor};
    struct Names<'n>(&'n mut Vec<String>);
    impl<'a> Visitor<'a> for Names<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Name(name) = expr {
                self.0.push(name.id.to_string());
            }
            visitor::walk_expr(self, expr);
        }
    }
    Names(names).visit_expr(expr);
}

impl Env {
    /// Whether `name` is a local of the running function or of an enclosing one (not a global).
    fn binds(&self, name: &str) -> bool {
        self.locals.contains_key(name)
            || self
                .outer
                .as_ref()
                .is_some_and(|outer| outer.contains_key(name))
    }

    fn join(branches: Vec<Env>) -> Env {
        let mut iter = branches.into_iter();
        let Some(mut joined) = iter.next() else {
            return Env::default();
        };
        for branch in iter {
            joined.checked.retain(|fact| branch.checked.contains(fact));
            for (name, value) in branch.locals {
                let merged = match joined.locals.get(&name) {
                    Some(existing) => existing.join(&value),
                    None => value,
                };
                joined.locals.insert(name, merged);
            }
        }
        joined
    }
}

/// The shape of a tensor a name held while tracing, for the editor.
struct NamedShape {
    /// `None`: a tensor whose rank the analysis does not know.
    dims: Option<Rc<TensorDims>>,
    binding: bool,
    changed: bool,
}

impl NamedShape {
    /// The hint for the name at `range`.
    fn hint(self, range: TextRange) -> crate::ShapeHint {
        let shape = match &self.dims {
            Some(dims) => dims
                .render()
                .unwrap_or_else(|| crate::UNKNOWN_SHAPE.to_owned()),
            None => crate::UNKNOWN_SHAPE.to_owned(),
        };
        let mut dims: Vec<(String, TextRange)> = Vec::new();
        let sizes = self
            .dims
            .as_ref()
            .map(|dims| dims.sizes.as_slice())
            .unwrap_or_default();
        for (_, size) in sizes {
            let declared: Vec<&Rc<DimDecl>> = match size {
                super::value::DimSize::Sym(sym) => sym.dims().collect(),
                super::value::DimSize::Derived(dim) => vec![dim],
            };
            for dim in declared {
                if !dims.iter().any(|(name, _)| *name == dim.name) {
                    dims.push((dim.name.clone(), dim.range));
                }
            }
        }
        crate::ShapeHint {
            range,
            shape,
            binding: self.binding,
            changed: self.changed,
            dims,
            traced: false,
        }
    }
}

pub(crate) struct Interpreter<'m, 'a> {
    model: &'m SemanticModel<'a>,
    events: Vec<Event>,
    /// False while learning globals and attributes: that code is not traced.
    emit: bool,
    /// The functions being interpreted, innermost last, each with the module instance it runs
    /// on: a `Residual` wrapping a block of `Residual`s runs one `forward` inside another, on
    /// another instance, which is no recursion.
    stack: Vec<(usize, Option<*const BuiltFields>)>,
    returns: Vec<Value>,
    /// `self.<name>` attributes traced code sets outright (`self.pooling_mult = 1`): state reset
    /// on every call, which a later `self.<name> *= 2` changes within the call only.
    reset_in_trace: FxHashSet<String>,
    memo: FxHashMap<String, Value>,
    budget: usize,
    /// Above zero while interpreting operands that run only if an earlier `and`/`or` operand,
    /// which the analysis cannot decide, lets them.
    conditional: usize,
    /// How many enclosing `if` clauses run only on a path the analysis cannot decide.
    pub(super) undecided: usize,
    /// How many enclosing loops run abstractly (their body for any number of iterations).
    pub(super) looping: usize,
    /// Iterations unrolled loops may still run (see `UNROLL_BUDGET`).
    pub(super) unroll_budget: usize,
    /// What a size of a tensor with untracked dimensions is: static when the model declares no
    /// dynamic dimension, unknown otherwise.
    untracked: SizeOrigin,
    /// The file of the code being interpreted (see [`super::FunctionInfo::file`]).
    file: u32,
    /// Call sites being evaluated, innermost last.
    sites: Vec<Site>,
    /// The call sites of the inlined calls on the stack: an event's chain.
    frames: Vec<Site>,
    /// Functions of other files entered.
    reached: FxHashSet<Site>,
    /// The shapes of tensors named in file 0, by the name's range; `None` where evaluations
    /// disagree (a helper called with different shapes).
    shapes: FxHashMap<TextRange, Option<NamedShape>>,
    /// In the construction pass: calling a module class runs its `__init__`.
    constructing: bool,
    /// The instances whose `__init__` is running, innermost last.
    building: Vec<construction::Building>,
    /// What the construction pass stored on each module class's instances, by class.
    constructed: FxHashMap<usize, std::collections::BTreeMap<String, Value>>,
    /// Module classes the construction pass saw called outside any `__init__` (the script runs
    /// the model itself), whose state may differ from what `__init__` left.
    run_before_export: FxHashSet<usize>,
    /// What the calls the construction pass followed outside any `__init__` left in the
    /// attributes their methods assign, by class (`self.scale = int(x.shape[0])` on a first
    /// call): the state the export starts from.
    warmed: FxHashMap<usize, std::collections::BTreeMap<String, Value>>,
    /// The analysed file's module-level statements, where its `add_argument` calls are found.
    module_body: &'a [Stmt],
    /// The options the `add_argument` calls the construction pass ran declared, by
    /// destination, with their defaults: calls in loops and helpers of other files
    /// (`for key, value in defaults.items(): parser.add_argument(f"--{key}", default=value)`).
    /// `None` once a `set_defaults(**unknown)` ran: then no option's value is known.
    parser_options: Option<std::collections::BTreeMap<String, Value>>,
    /// The module class the construction pass saw passed to an export call: the entrypoint's
    /// model when the model expression names no class the resolver knows.
    exported: Option<usize>,
    /// The model instance the construction pass built for export (passed to the export call,
    /// or the module-level `model`): its `forward` reads what its own `__init__` stored.
    exported_instance: Option<Value>,
    /// The export call of the analysed file the construction pass ran: where an exported
    /// `nn.Sequential`'s steps are applied when no module-level `model = ...` names it.
    export_site: Option<TextRange>,
    /// A module call the analysis could not follow ran while tracing (a submodule it does not
    /// know): the classes the model runs are then not all known.
    ran_unknown_module: bool,
    /// Expressions being evaluated, nested (see `MAX_EXPRESSION_DEPTH`).
    expression_depth: usize,
}

impl<'m, 'a> Interpreter<'m, 'a> {
    fn new(model: &'m SemanticModel<'a>, emit: bool) -> Self {
        Self {
            model,
            events: Vec::new(),
            emit,
            stack: Vec::new(),
            returns: Vec::new(),
            reset_in_trace: FxHashSet::default(),
            memo: FxHashMap::default(),
            budget: INLINE_BUDGET,
            untracked: SizeOrigin::Static,
            conditional: 0,
            undecided: 0,
            looping: 0,
            unroll_budget: UNROLL_BUDGET,
            file: 0,
            sites: Vec::new(),
            frames: Vec::new(),
            reached: FxHashSet::default(),
            shapes: FxHashMap::default(),
            constructing: false,
            building: Vec::new(),
            constructed: FxHashMap::default(),
            run_before_export: FxHashSet::default(),
            warmed: FxHashMap::default(),
            module_body: &[],
            parser_options: Some(std::collections::BTreeMap::new()),
            exported: None,
            exported_instance: None,
            export_site: None,
            ran_unknown_module: false,
            expression_depth: 0,
        }
    }

    /// Interprets every module class's `forward` and returns what happened, with the
    /// functions of other files it entered, and the class the file exports when it is known
    /// (from the entrypoint's model expression, else from what the construction pass saw
    /// passed to an export call).
    pub(crate) fn run(
        model: &'m SemanticModel<'a>,
        body: &'a [Stmt],
    ) -> (
        Vec<Event>,
        FxHashSet<Site>,
        Vec<crate::ShapeHint>,
        Option<usize>,
        bool,
    ) {
        let mut interpreter = Interpreter::new(model, true);
        interpreter.module_body = body;
        let mut entry_class = model.entry.as_ref().and_then(|entry| entry.model_class);
        if let Some(entry) = &model.entry {
            let mut builder = Interpreter::new(model, false);
            builder.module_body = body;
            builder.run_construction(body, entry.model_class, entry.scope);
            interpreter.constructed = builder.constructed;
            interpreter.run_before_export = builder.run_before_export;
            interpreter.warmed = builder.warmed;
            interpreter.exported_instance = builder.exported_instance;
            interpreter.export_site = builder.export_site;
            entry_class = entry_class.or(builder.exported);
        }
        let declares_dynamic = model
            .spec
            .as_ref()
            .is_some_and(ShapesSpec::has_dynamic_dims);
        let used = entry_class.map(|entry| classes_used_from(model, entry));
        for (class, info) in model.classes.iter().enumerate() {
            // Other files' classes run only as the entrypoint's model or when called.
            if !info.is_module || (info.file != 0 && entry_class != Some(class)) {
                continue;
            }
            let Some(&forward) = info.methods.get("forward") else {
                continue;
            };
            // In a file that exports a model, a module class its model never names (directly or
            // through the classes it names) may never be exported: what it would do is a
            // warning at most.
            let unreached = used.as_ref().is_some_and(|used| !used.contains(&class));
            let spec = model.spec.as_ref().filter(|_| entry_class == Some(class));
            interpreter.start_root(declares_dynamic);
            let def = model.functions[forward].def;
            let mut env = Env {
                class: Some(class),
                ..Env::default()
            };
            let parameters = all_parameters(&def.parameters);
            let entry = model.entry.as_ref().filter(|_| entry_class == Some(class));
            let mut root_instance = None;
            for (position, parameter) in parameters.iter().enumerate() {
                let value = if position == 0 {
                    match &interpreter.exported_instance {
                        Some(instance @ Value::Module(Some(built), Some(fields)))
                            if *built == class && entry.is_some() =>
                        {
                            root_instance = Some(Rc::as_ptr(fields));
                            instance.clone()
                        }
                        _ => Value::Module(Some(class), None),
                    }
                } else {
                    let dims = spec.and_then(|spec| {
                        spec.dims_for(parameter.parameter.name.as_str(), position - 1)
                    });
                    let role = match entry {
                        Some(entry) => entry.role(parameter.parameter.name.as_str(), position - 1),
                        None if position == 1 => ParameterRole::Input,
                        None => ParameterRole::Extra,
                    };
                    root_parameter(parameter, dims.as_ref(), role)
                };
                interpreter.note_shape(parameter.parameter.name.range(), &value, None, true);
                env.locals
                    .insert(parameter.parameter.name.to_string(), value);
            }
            for vararg in [&def.parameters.vararg, &def.parameters.kwarg]
                .into_iter()
                .flatten()
            {
                env.locals.insert(vararg.name.to_string(), Value::Unknown);
            }
            interpreter.file = model.functions[forward].file;
            interpreter.seed_module_attributes(def, &parameters, &mut env);
            if interpreter.file != 0 {
                if let Some(site) = model.entry_site {
                    interpreter.frames.push((0, site));
                }
                interpreter.reached.insert((interpreter.file, def.range()));
            }
            let replaced = model.classes[class].replaced || unreached;
            interpreter.conditional += usize::from(replaced);
            interpreter.stack.push((forward, root_instance));
            interpreter.returns.push(Value::Bottom);
            interpreter.exec_block(&def.body, &mut env);
            interpreter.returns.pop();
            interpreter.stack.pop();
            interpreter.conditional -= usize::from(replaced);
            interpreter.frames.clear();
            interpreter.file = 0;
        }
        // The exported model is an `nn.Sequential` of modules the analysis knows (built by a
        // factory function, or in the script): its steps run on the example input in order.
        if let (Some(_), Some(Value::Sequential(steps))) =
            (&model.entry, interpreter.exported_instance.clone())
        {
            interpreter.start_root(declares_dynamic);
            let dims = model
                .spec
                .as_ref()
                .and_then(|spec| spec.dims_for("input", 0));
            let input = Value::Tensor(TensorInfo {
                dims,
                ..TensorInfo::default()
            });
            // A step has no call of its own: what it finds is where the tracer puts a guard
            // torch raises in installed code, the export call or the module-level
            // `dynamic_shapes` that declares the dimensions, else at the model's statement.
            let site = interpreter
                .export_site
                .or_else(|| module_level_site(body, "dynamic_shapes"))
                .or(model.entry_site);
            if let Some(site) = site {
                interpreter.frames.push((0, site));
                interpreter.sites.push((0, site));
            }
            interpreter.run_sequential(&steps, &[input]);
            interpreter.sites.clear();
            interpreter.frames.clear();
            interpreter.file = 0;
        }
        let mut shapes: Vec<crate::ShapeHint> = interpreter
            .shapes
            .into_iter()
            .filter_map(|(range, seen)| Some(seen?.hint(range)))
            .collect();
        shapes.sort_by_key(|hint| hint.range.start());
        (
            interpreter.events,
            interpreter.reached,
            shapes,
            entry_class,
            interpreter.ran_unknown_module,
        )
    }

    /// Resets what one root's run may use up or learn: each root starts with the whole budget
    /// and no memo, and sizes the analysis does not track are unknown in a file that declares
    /// dynamic dimensions, static otherwise.
    fn start_root(&mut self, declares_dynamic: bool) {
        self.untracked = if declares_dynamic {
            SizeOrigin::Unknown
        } else {
            SizeOrigin::Static
        };
        self.budget = INLINE_BUDGET;
        self.unroll_budget = UNROLL_BUDGET;
        self.memo.clear();
    }

    /// Notes the shape of the tensor `value` named at `range`. Only the shape is kept here (a
    /// name is read on every evaluation); it is written out once, at the end of the run.
    pub(super) fn note_shape(
        &mut self,
        range: TextRange,
        value: &Value,
        previous: Option<&Value>,
        binding: bool,
    ) {
        if !self.emit || self.file != 0 {
            return;
        }
        let Value::Tensor(TensorInfo {
            dims,
            assumed: false,
            opaque: false,
            ..
        }) = value
        else {
            return;
        };
        // A shape of unknown rank is kept too: a trace may tell it (`UNKNOWN_SHAPE`).
        let dims = dims.as_ref().filter(|dims| dims.rank.is_some());
        let changed = binding
            && !matches!(previous, Some(Value::Tensor(TensorInfo { dims: before, .. })) if before.as_ref().filter(|before| before.rank.is_some()) == dims);
        self.shapes
            .entry(range)
            .and_modify(|seen| {
                if seen.as_ref().is_some_and(|seen| seen.dims.as_ref() != dims) {
                    *seen = None;
                }
            })
            .or_insert_with(|| {
                Some(NamedShape {
                    dims: dims.cloned(),
                    binding,
                    changed,
                })
            });
    }

    /// Evaluates a module-level expression (an alias, a base class) of file `file` without
    /// tracing anything.
    pub(crate) fn evaluate_global_in(
        model: &'m SemanticModel<'a>,
        expr: &Expr,
        file: u32,
    ) -> Value {
        let mut interpreter = Interpreter::new(model, false);
        interpreter.file = file;
        interpreter.eval(expr, &mut Env::default())
    }

    /// Records what each `self.<name> = ...` in a method body of file `file` assigns.
    pub(crate) fn collect_attributes(
        model: &'m SemanticModel<'a>,
        body: &[Stmt],
        attributes: &mut FxHashMap<String, Value>,
        file: u32,
    ) {
        let mut interpreter = Interpreter::new(model, false);
        interpreter.file = file;
        interpreter.attributes_in(body, attributes);
    }

    fn attributes_in(&mut self, body: &[Stmt], attributes: &mut FxHashMap<String, Value>) {
        fn record(attributes: &mut FxHashMap<String, Value>, name: &str, value: Value) {
            let value = match value {
                Value::Tensor(_)
                | Value::Module(..)
                | Value::Layer(_)
                | Value::Sequential(_)
                | Value::Modules(..)
                | Value::Tuple(_) => value,
                Value::None => Value::None,
                _ => Value::Unknown,
            };
            let merged = match attributes.get(name) {
                Some(existing) => existing.join(&value),
                None => value,
            };
            attributes.insert(name.to_owned(), merged);
        }
        for stmt in body {
            match stmt {
                Stmt::Assign(assign) => {
                    for target in &assign.targets {
                        if let Some(name) = self_attribute(target) {
                            let value = self.eval(&assign.value, &mut Env::default());
                            record(attributes, name, value);
                        }
                    }
                }
                Stmt::AnnAssign(assign) => {
                    if let (Some(name), Some(value)) =
                        (self_attribute(&assign.target), &assign.value)
                    {
                        let value = self.eval(value, &mut Env::default());
                        record(attributes, name, value);
                    }
                }
                Stmt::Expr(expr) => {
                    let Expr::Call(call) = &*expr.value else {
                        continue;
                    };
                    let Expr::Attribute(method) = &*call.func else {
                        continue;
                    };
                    if !matches!(&*method.value, Expr::Name(name) if name.id.as_str() == "self") {
                        continue;
                    }
                    let Some(name) = call.arguments.args.first().and_then(names::string_literal)
                    else {
                        continue;
                    };
                    match method.attr.as_str() {
                        "register_buffer" | "register_parameter" => {
                            record(attributes, name, Value::tensor());
                        }
                        "add_module" | "register_module" => {
                            record(attributes, name, Value::Module(None, None));
                        }
                        _ => {}
                    }
                }
                Stmt::If(if_stmt) => {
                    self.attributes_in(&if_stmt.body, attributes);
                    for clause in &if_stmt.elif_else_clauses {
                        self.attributes_in(&clause.body, attributes);
                    }
                }
                Stmt::For(for_stmt) => self.attributes_in(&for_stmt.body, attributes),
                Stmt::With(with) => self.attributes_in(&with.body, attributes),
                Stmt::Try(try_stmt) => {
                    self.attributes_in(&try_stmt.body, attributes);
                    self.attributes_in(&try_stmt.orelse, attributes);
                }
                _ => {}
            }
        }
    }

    /// Records a cut of a `ShapeVar` into parts its size decides, or into sections that fix its
    /// size ([`shape_ops::unbacked_cut`]).
    fn note_unbacked_cut(
        &mut self,
        dims: &TensorDims,
        name: &str,
        call: &ast::ExprCall,
        exprs: &[Expr],
        values: &[Value],
    ) {
        let event = match shape_ops::unbacked_cut(dims, name, call, exprs, values) {
            Some(shape_ops::UnbackedCut::Counted(dim)) => EventKind::CutsUnbackedDim {
                dim,
                op: name.to_owned(),
            },
            Some(shape_ops::UnbackedCut::Sections(dim, size)) => EventKind::DimFixed { dim, size },
            None => return,
        };
        self.record(event, call.range());
    }

    fn record(&mut self, kind: EventKind, range: TextRange) {
        if self.emit {
            let conditional = self.conditional > 0;
            let chain = if self.model.foreign.is_empty() {
                Vec::new()
            } else {
                self.frames.clone()
            };
            self.events.push(Event {
                kind,
                range,
                conditional,
                undecided_path: self.undecided > 0,
                file: self.file,
                chain,
            });
        }
    }
}

impl SemanticModel<'_> {
    /// Constructing a module class from another workspace file gives a module instance.
    fn workspace_module_class(&self, qualified: &str) -> Option<Value> {
        self.workspace
            .is_module_class(qualified)
            .then_some(Value::Module(None, None))
    }
}

// -------------------------------------------------------------------------------------------
// Helpers

/// The guard `size <op> other` adds, and whether the known ranges already decide it.
fn size_guard(
    origin: &SizeOrigin,
    interval: Interval,
    op: CompareOp,
    other: &Value,
    constant: Option<f64>,
) -> Value {
    match origin {
        SizeOrigin::Unknown => Value::Unknown,
        SizeOrigin::Static => match other {
            Value::Size {
                origin: other_origin @ (SizeOrigin::Dynamic { .. } | SizeOrigin::Unbacked),
                interval,
                ..
            } => size_guard(
                other_origin,
                *interval,
                op.flipped(),
                &Value::static_size(),
                None,
            ),
            // A size of a tensor whose shape the analysis lost may be a dynamic one.
            Value::Size {
                origin: SizeOrigin::Unknown,
                ..
            } => Value::Unknown,
            _ => Value::Guard(Guard {
                kind: GuardKind::Static,
                decided: false,
                suggestion: None,
            }),
        },
        SizeOrigin::Unbacked => Value::Guard(Guard {
            kind: GuardKind::Unbacked,
            decided: constant.is_some_and(|constant| interval.decide(op, constant).is_some()),
            suggestion: None,
        }),
        SizeOrigin::Dynamic { dim, exact } => {
            if dim.automatic {
                return Value::Unknown;
            }
            // A size of a tensor whose shape the analysis lost may be this very dimension
            // (`batch != position_ids.shape[0]`, where the ids are `(batch, seq)` or
            // `(1, seq)`): whether the exporter guards anything cannot be told.
            if constant.is_none()
                && matches!(
                    other,
                    Value::Size {
                        origin: SizeOrigin::Unknown,
                        ..
                    }
                )
            {
                return Value::Unknown;
            }
            let (decided, suggestion) = match (constant, other) {
                (Some(constant), _) => {
                    let decided = interval.decide(op, constant).is_some();
                    let suggestion = (!decided && *exact).then_some(SizeComparison {
                        op,
                        against: Compared::Constant(constant),
                    });
                    (decided, suggestion)
                }
                (
                    None,
                    Value::Size {
                        origin:
                            SizeOrigin::Dynamic {
                                dim: other_dim,
                                exact: other_exact,
                            },
                        ..
                    },
                ) => {
                    // One size computed from a dimension, read twice (`L` and `S` of one
                    // tensor after a convolution whose padding the analysis lost): equal.
                    if DimDecl::same_derived(dim, other_dim) {
                        return Value::Guard(Guard {
                            kind: GuardKind::Dynamic(dim.clone()),
                            decided: true,
                            suggestion: None,
                        });
                    }
                    // Two sizes derived from one dimension in ways the analysis does not follow
                    // may be the same size. The dimension itself against such a size stays a
                    // guard (`L == npo2(L)`).
                    if other_dim.name == dim.name && !*exact && !*other_exact {
                        return Value::Unknown;
                    }
                    let same = *exact && *other_exact && other_dim.name == dim.name;
                    let suggestion = (!same && *exact && *other_exact).then(|| SizeComparison {
                        op,
                        against: Compared::Dim(other_dim.clone()),
                    });
                    (same, suggestion)
                }
                _ => (false, None),
            };
            // An unreadable bound: whether the guard cuts the range cannot be told.
            if !decided && dim.bounds_unknown {
                return Value::Unknown;
            }
            Value::Guard(Guard {
                kind: GuardKind::Dynamic(dim.clone()),
                decided,
                suggestion,
            })
        }
    }
}

fn binary(left: &Value, op: ast::Operator, right: &Value, right_number: Option<f64>) -> Value {
    match (left, right) {
        // `(3,) + channels[:-1]`, `[block] * depth`: a sequence whose items are known.
        (Value::Tuple(a), Value::Tuple(b)) if op == ast::Operator::Add => {
            Value::Tuple(a.iter().chain(b.iter()).cloned().collect())
        }
        (Value::Tuple(items), Value::Number(times))
        | (Value::Number(times), Value::Tuple(items))
            if op == ast::Operator::Mult =>
        {
            match super::value::integer(*times)
                .and_then(|times| usize::try_from(times.max(0)).ok())
                .filter(|times| items.len() * times <= MAX_UNROLL)
            {
                Some(times) => Value::Tuple(
                    std::iter::repeat_n(items.iter(), times)
                        .flatten()
                        .cloned()
                        .collect(),
                ),
                None => Value::Unknown,
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            number_arithmetic(*a, op, *b).map_or(Value::Unknown, Value::Number)
        }
        // The caller computes the shape of two tensors' broadcast or product.
        (Value::Tensor(a), Value::Tensor(b)) => Value::Tensor(TensorInfo {
            dims: None,
            data_dependent_shape: a.data_dependent_shape || b.data_dependent_shape,
            maybe_none: false,
            assumed: a.assumed && b.assumed,
            opaque: false,
            device: a.device.join(b.device),
        }),
        (Value::Tensor(info), other) | (other, Value::Tensor(info)) => Value::Tensor(TensorInfo {
            // An operand the analysis lost may be a tensor that broadcasts the shape larger.
            dims: if matches!(other, Value::Unknown | Value::Tensors(_)) {
                None
            } else {
                info.dims.clone()
            },
            data_dependent_shape: info.data_dependent_shape,
            maybe_none: false,
            assumed: info.assumed,
            opaque: false,
            // A Python number goes to the tensor's device; what else the operand is, is not
            // known.
            device: if matches!(other, Value::Number(_) | Value::Size { .. }) {
                info.device
            } else {
                TensorDevice::Unknown
            },
        }),
        (Value::Tensors(_), _) | (_, Value::Tensors(_)) => Value::Unknown,
        // Arithmetic on a value read at trace time is read at trace time too.
        (Value::Baked(source), _) | (_, Value::Baked(source)) => Value::Baked(source.clone()),
        (Value::DataScalar(_), _) | (_, Value::DataScalar(_)) => {
            Value::DataScalar(Interval::default())
        }
        (
            Value::Size {
                origin, interval, ..
            },
            other,
        ) => {
            let origin = match other {
                Value::Size {
                    origin: other_origin,
                    ..
                } => origin.combine(other_origin),
                _ => origin.combine(&SizeOrigin::Static),
            };
            let interval = shift_interval(*interval, op, right_number);
            Value::Size {
                origin,
                interval,
                sym: None,
            }
        }
        (
            _,
            Value::Size {
                origin, interval, ..
            },
        ) => Value::Size {
            origin: origin.combine(&SizeOrigin::Static),
            // `K - (L % K)`, `P + L % K`: a number and a size.
            interval: match left {
                Value::Number(number) => interval_of_number_and(*number, op, *interval),
                _ => Interval::default(),
            },
            sym: None,
        },
        _ => Value::Unknown,
    }
}

fn all_parameters(parameters: &ast::Parameters) -> Vec<&ast::ParameterWithDefault> {
    parameters
        .posonlyargs
        .iter()
        .chain(parameters.args.iter())
        .chain(parameters.kwonlyargs.iter())
        .collect()
}

/// How a root `forward` parameter is fed when the model is exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParameterRole {
    /// The example inputs give it a value (or, with no entrypoint, it is the first input).
    Input,
    /// The example inputs leave it out: it takes its default.
    Defaulted,
    /// The example inputs pass a tensor: it is one while tracing, whatever its default.
    PassedTensor,
    /// The example inputs pass `None`: `if mask is not None:` is decided.
    PassedNone,
    /// A further parameter of a module whose callers the file does not show.
    Extra,
}

/// A `forward` parameter's value: a tensor unless its annotation or default says otherwise.
fn root_parameter(
    parameter: &ast::ParameterWithDefault,
    dims: Option<&Rc<TensorDims>>,
    role: ParameterRole,
) -> Value {
    let default = parameter.default.as_deref();
    if role == ParameterRole::PassedNone {
        return Value::None;
    }
    // An input left at its default `None` is `None` while tracing: the exporter never enters
    // `if mask is not None:`.
    if role == ParameterRole::Defaulted || (role == ParameterRole::Extra && default.is_some()) {
        return match default {
            Some(Expr::NoneLiteral(_)) => Value::None,
            _ => Value::Unknown,
        };
    }
    let tensor = |maybe_none: bool, assumed: bool| {
        Value::Tensor(TensorInfo {
            dims: dims.cloned(),
            maybe_none,
            assumed,
            ..TensorInfo::default()
        })
    };
    if role == ParameterRole::PassedTensor {
        return tensor(false, false);
    }
    if let Some(annotation) = &parameter.parameter.annotation {
        return match annotation_kind(annotation) {
            AnnotationKind::Tensor { optional } => tensor(
                optional || matches!(default, Some(Expr::NoneLiteral(_))),
                false,
            ),
            AnnotationKind::Tensors => Value::Tensors(TensorInfo::default()),
            AnnotationKind::Other => Value::Unknown,
        };
    }
    match default {
        None => tensor(false, role == ParameterRole::Extra),
        // DESIGN.md: parameters defaulted to a literal (None, a number, a flag, a string) are
        // configuration, not inputs.
        Some(_) => Value::Unknown,
    }
}

enum AnnotationKind {
    Tensor { optional: bool },
    Tensors,
    Other,
}

fn annotation_kind(annotation: &Expr) -> AnnotationKind {
    let text_of = |expr: &Expr| names::dotted(expr).unwrap_or_default();
    match annotation {
        Expr::Name(_) | Expr::Attribute(_) => {
            let name = text_of(annotation);
            if name == "Tensor"
                || name.ends_with(".Tensor")
                || name.ends_with("Tensor") && name.starts_with("torch.")
            {
                AnnotationKind::Tensor { optional: false }
            } else {
                AnnotationKind::Other
            }
        }
        Expr::StringLiteral(literal) => {
            let text = literal.value.to_str();
            if text == "Tensor" || text == "torch.Tensor" {
                AnnotationKind::Tensor { optional: false }
            } else {
                AnnotationKind::Other
            }
        }
        Expr::Subscript(subscript) => {
            let head = text_of(&subscript.value);
            let head = head.rsplit('.').next().unwrap_or_default();
            match head {
                "Optional" => match annotation_kind(&subscript.slice) {
                    AnnotationKind::Tensor { .. } => AnnotationKind::Tensor { optional: true },
                    other => other,
                },
                "Union" => union_kind(&subscript.slice),
                "List" | "list" | "Tuple" | "tuple" | "Sequence" => {
                    let elements: Vec<&Expr> = match &*subscript.slice {
                        Expr::Tuple(tuple) => tuple.elts.iter().collect(),
                        other => vec![other],
                    };
                    if elements.iter().all(|element| {
                        matches!(annotation_kind(element), AnnotationKind::Tensor { .. })
                            || matches!(element, Expr::EllipsisLiteral(_))
                    }) {
                        AnnotationKind::Tensors
                    } else {
                        AnnotationKind::Other
                    }
                }
                _ => AnnotationKind::Other,
            }
        }
        Expr::BinOp(binary) if binary.op == ast::Operator::BitOr => {
            let sides = [&*binary.left, &*binary.right];
            let tensor = sides
                .iter()
                .any(|side| matches!(annotation_kind(side), AnnotationKind::Tensor { .. }));
            let none = sides
                .iter()
                .any(|side| matches!(side, Expr::NoneLiteral(_)));
            let others = sides.iter().all(|side| {
                matches!(annotation_kind(side), AnnotationKind::Tensor { .. })
                    || matches!(side, Expr::NoneLiteral(_))
            });
            if tensor && others {
                AnnotationKind::Tensor { optional: none }
            } else {
                AnnotationKind::Other
            }
        }
        _ => AnnotationKind::Other,
    }
}

fn union_kind(slice: &Expr) -> AnnotationKind {
    let Expr::Tuple(tuple) = slice else {
        return annotation_kind(slice);
    };
    let mut optional = false;
    for element in &tuple.elts {
        match element {
            Expr::NoneLiteral(_) => optional = true,
            element if matches!(annotation_kind(element), AnnotationKind::Tensor { .. }) => {}
            _ => return AnnotationKind::Other,
        }
    }
    AnnotationKind::Tensor { optional }
}

/// A parameter's default when the caller passes none: a literal (a default is evaluated where
/// the function is defined, which the analysis does not re-run).
fn default_value(parameter: &ast::ParameterWithDefault) -> Value {
    parameter
        .default
        .as_deref()
        .map_or(Value::Unknown, literal_value)
}

/// A literal's value: `None`, a boolean, a number, a string, or a tuple or list of those
/// (`channels=(8, 16, 32)`); anything else is unknown.
fn literal_value(literal: &Expr) -> Value {
    match literal {
        Expr::NoneLiteral(_) => Value::None,
        Expr::BooleanLiteral(literal) => Value::Number(f64::from(u8::from(literal.value))),
        Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })
            if !elts.iter().any(Expr::is_starred_expr) =>
        {
            Value::Tuple(elts.iter().map(literal_value).collect())
        }
        literal => number_of(literal).map_or_else(
            || {
                names::string_literal(literal)
                    .map_or(Value::Unknown, |text| Value::Str(Rc::from(text)))
            },
            Value::Number,
        ),
    }
}

/// `self.<name>` as an assignment target.
fn self_attribute(target: &Expr) -> Option<&str> {
    let Expr::Attribute(attribute) = target else {
        return None;
    };
    matches!(&*attribute.value, Expr::Name(name) if name.id.as_str() == "self")
        .then(|| attribute.attr.as_str())
}

/// Parameters and buffers every module of `torch.nn` has under these names.
fn module_parameter(name: &str) -> Value {
    match name {
        "weight" | "bias" | "running_mean" | "running_var" | "in_proj_weight" | "in_proj_bias" => {
            Value::tensor()
        }
        _ => Value::Unknown,
    }
}

/// Whether an index expression is a boolean mask, which makes the result's size data-dependent.
fn is_boolean_mask(slice: &Expr, index: &Value) -> bool {
    if !index.is_tensor() {
        return false;
    }
    match slice {
        Expr::Compare(_)
        | Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::Invert,
            ..
        }) => true,
        Expr::Call(call) => {
            let name = match &*call.func {
                Expr::Attribute(attribute) => attribute.attr.as_str(),
                Expr::Name(name) => name.id.as_str(),
                _ => "",
            };
            matches!(
                name,
                "bool"
                    | "isnan"
                    | "isinf"
                    | "isfinite"
                    | "logical_not"
                    | "logical_and"
                    | "logical_or"
                    | "eq"
                    | "ne"
                    | "gt"
                    | "ge"
                    | "lt"
                    | "le"
            )
        }
        Expr::Name(name) => {
            let name = name.id.as_str();
            name.contains("mask") || name.starts_with("is_") || name == "keep" || name == "valid"
        }
        _ => false,
    }
}

/// The most iterations a loop over known items runs one by one; a longer loop runs abstractly.
pub(super) const MAX_UNROLL: usize = 64;

/// The iterations all unrolled loops of one root (or of the construction) may run together:
/// loops nested in unrolled loops multiply, and past this they run abstractly.
pub(super) const UNROLL_BUDGET: usize = 2048;

/// The items of a sequence known one by one: a display or a list filled in straight-line
/// code, the numbers of a small `range`, the modules of a `ModuleList` filled the same way.
fn exact_items(value: &Value) -> Option<Rc<[Value]>> {
    match value {
        Value::Tuple(items) | Value::Modules(_, Some(items)) | Value::Sequential(items) => {
            Some(items.clone())
        }
        // `for layer in self:` in a subclass of `nn.Sequential`: its steps.
        Value::Module(Some(_), Some(fields)) => {
            match fields.0.get(construction::SEQUENTIAL_FIELD) {
                Some(Value::Sequential(steps)) => Some(steps.clone()),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The elements a `for` loop over the value binds.
fn element_of(value: &Value) -> Value {
    match value {
        // The rows of an opaque or assumed value may be anything: only assumed to be tensors.
        Value::Tensor(info) => Value::Tensor(TensorInfo {
            assumed: info.assumed || info.opaque,
            ..TensorInfo::default()
        }),
        // An item of a list of tensors (`[conv(x) for conv in self.convs]`) is one of them.
        Value::Tensors(info) => Value::Tensor(TensorInfo {
            assumed: info.assumed || info.opaque,
            opaque: false,
            ..info.clone()
        }),
        Value::Tuple(items) => items.iter().fold(Value::Bottom, |acc, item| acc.join(item)),
        Value::DataScalars => Value::DataScalar(Interval::default()),
        Value::Modules(element, _) => match &**element {
            Value::Bottom => Value::Module(None, None),
            element => element.clone(),
        },
        Value::Iter(inner) => (**inner).clone(),
        _ => Value::Unknown,
    }
}

/// A numeric literal operand.
fn number_of(expr: &Expr) -> Option<f64> {
    names::number_literal(expr)
}

fn data_guard(interval: Interval, op: CompareOp, constant: Option<f64>) -> Value {
    Value::Guard(Guard {
        kind: GuardKind::Data,
        decided: constant.is_some_and(|constant| interval.decide(op, constant).is_some()),
        suggestion: None,
    })
}

/// The interval of `size <op> constant` for `+`, `-` and `*` by a non-negative constant.
fn shift_interval(interval: Interval, op: ast::Operator, constant: Option<f64>) -> Interval {
    let Some(constant) = constant else {
        return Interval::default();
    };
    match op {
        ast::Operator::Add => Interval {
            low: interval.low.map(|low| low + constant),
            high: interval.high.map(|high| high + constant),
        },
        ast::Operator::Sub => Interval {
            low: interval.low.map(|low| low - constant),
            high: interval.high.map(|high| high - constant),
        },
        ast::Operator::Mult if constant >= 0.0 => Interval {
            low: interval.low.map(|low| low * constant),
            high: interval.high.map(|high| high * constant),
        },
        // `L % K` of a size: Python's remainder by a positive number is in `[0, K - 1]`.
        ast::Operator::Mod if constant >= 1.0 && constant.fract() == 0.0 => Interval {
            low: Some(0.0),
            high: Some(constant - 1.0),
        },
        ast::Operator::FloorDiv if constant > 0.0 => Interval {
            low: interval.low.map(|low| (low / constant).floor()),
            high: interval.high.map(|high| (high / constant).floor()),
        },
        _ => Interval::default(),
    }
}

/// The range of `number <op> size` for a size in `interval`.
fn interval_of_number_and(number: f64, op: ast::Operator, interval: Interval) -> Interval {
    match op {
        ast::Operator::Add | ast::Operator::Mult => shift_interval(interval, op, Some(number)),
        // `K - size` runs the other way.
        ast::Operator::Sub => Interval {
            low: interval.high.map(|high| number - high),
            high: interval.low.map(|low| number - low),
        },
        _ => Interval::default(),
    }
}

/// `torch._check(n <= 5)` narrows what the interpreter knows of `n` from here on.
fn narrow(condition: &Expr, is_size: bool, env: &mut Env) {
    if let Expr::Compare(compare) = condition {
        let mut left = &*compare.left;
        for (op, right) in compare.ops.iter().zip(&compare.comparators) {
            if let Some(op) = compare_op(*op) {
                env.checked.push(CheckedComparison::new(left, op, right));
            }
            left = right;
        }
    }
    if is_size {
        if let Expr::Name(name) = condition {
            narrow_name(name.id.as_str(), Interval::at_least(0.0), env);
        }
        return;
    }
    let Expr::Compare(compare) = condition else {
        return;
    };
    let (Some(op), Some(right)) = (compare.ops.first(), compare.comparators.first()) else {
        return;
    };
    let op = match op {
        ast::CmpOp::Lt => CompareOp::Lt,
        ast::CmpOp::LtE => CompareOp::LtE,
        ast::CmpOp::Gt => CompareOp::Gt,
        ast::CmpOp::GtE => CompareOp::GtE,
        ast::CmpOp::Eq => CompareOp::Eq,
        _ => return,
    };
    match (
        &*compare.left,
        number_of(right),
        number_of(&compare.left),
        right,
    ) {
        (Expr::Name(name), Some(constant), _, _) => {
            narrow_name(name.id.as_str(), Interval::satisfying(op, constant), env);
        }
        (_, _, Some(constant), Expr::Name(name)) => {
            narrow_name(
                name.id.as_str(),
                Interval::satisfying(op.flipped(), constant),
                env,
            );
        }
        _ => {}
    }
}

pub(super) fn compare_op(op: ast::CmpOp) -> Option<CompareOp> {
    Some(match op {
        ast::CmpOp::Lt => CompareOp::Lt,
        ast::CmpOp::LtE => CompareOp::LtE,
        ast::CmpOp::Gt => CompareOp::Gt,
        ast::CmpOp::GtE => CompareOp::GtE,
        ast::CmpOp::Eq => CompareOp::Eq,
        ast::CmpOp::NotEq => CompareOp::NotEq,
        _ => return None,
    })
}

fn narrow_name(name: &str, by: Interval, env: &mut Env) {
    let Some(value) = env.locals.get_mut(name) else {
        return;
    };
    if let Value::DataScalar(interval)
    | Value::Size {
        origin: SizeOrigin::Unbacked,
        interval,
        ..
    } = value
    {
        *interval = interval.intersect(by);
    }
}

/// True when a block only raises: input validation, whose other side is the normal path.
/// Local names, sorted.
type TensorNames = Rc<[String]>;

/// The local names that certainly hold tensors (not optional, not only assumed), sorted.
fn tensor_locals(env: &Env) -> TensorNames {
    let mut names: Vec<String> = env
        .locals
        .iter()
        .filter(|(name, value)| {
            // `self.<name>` held while a method assigns it is no local of the code.
            !name.contains('.')
                && matches!(value, Value::Tensor(info) if !info.assumed && !info.maybe_none)
        })
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names.into()
}

fn raises_only(body: &[Stmt]) -> bool {
    !body.is_empty()
        && body.iter().all(|stmt| {
            matches!(stmt, Stmt::Raise(_) | Stmt::Pass(_))
                || matches!(stmt, Stmt::Expr(expr) if matches!(&*expr.value, Expr::StringLiteral(_) | Expr::Call(_)))
        })
        && body.iter().any(|stmt| matches!(stmt, Stmt::Raise(_)))
}

/// `a <op> b` on Python numbers, as Python computes it (`//` and `%` floor towards minus
/// infinity); `None` where Python raises or the analysis does not follow the operator.
fn number_arithmetic(a: f64, op: ast::Operator, b: f64) -> Option<f64> {
    let result = match op {
        ast::Operator::Add => a + b,
        ast::Operator::Sub => a - b,
        ast::Operator::Mult => a * b,
        ast::Operator::Div if b != 0.0 => a / b,
        ast::Operator::FloorDiv if b != 0.0 => (a / b).floor(),
        ast::Operator::Mod if b != 0.0 => a - b * (a / b).floor(),
        ast::Operator::Pow => a.powf(b),
        _ => return None,
    };
    result.is_finite().then_some(result)
}

/// A Python integer operand as a symbolic size: a followed size or an integer literal.
fn sym_operand(value: &Value, expr: &Expr) -> Option<SymSize> {
    value
        .as_sym()
        .or_else(|| names::int_literal(expr).map(SymSize::constant))
}

/// `left <op> right` on symbolic sizes.
fn sym_arithmetic(left: &SymSize, op: ast::Operator, right: &SymSize) -> Option<SymSize> {
    match op {
        ast::Operator::Add => left.add(right),
        ast::Operator::Sub => left.sub(right),
        ast::Operator::Mult => left.mul(right),
        ast::Operator::FloorDiv => left.floor_div(right),
        _ => None,
    }
}

/// The module-level statement that binds `name`, the last one.
fn module_level_site(body: &[Stmt], name: &str) -> Option<TextRange> {
    names::module_level_statements(body)
        .into_iter()
        .rev()
        .find_map(|stmt| match stmt {
            Stmt::Assign(assign)
                if matches!(assign.targets.as_slice(), [Expr::Name(target)] if target.id.as_str() == name) =>
            {
                Some(assign.range())
            }
            _ => None,
        })
}
