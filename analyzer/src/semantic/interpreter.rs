//! The abstract interpreter: runs traced functions over [`Value`]s instead of data.
//!
//! Each module class's `forward` is a root. Calls to methods and functions of the same file are
//! followed inline (memoised by arguments, bounded in depth and count), so a helper sees the
//! values its caller passes. Branches are both taken and their bindings joined; loop bodies run
//! twice so values assigned late in the body reach its start. Events are recorded where a value
//! meets a construct the exporter cannot trace.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use ruff_text_size::{Ranged, TextRange};

use super::events::{BoolContext, Event, EventKind, ScalarUse};
use super::names;
use super::shapes::literal_shape;
use super::torch_api::{self, AttributeResult, Constructed, MethodResult, TorchResult};
use super::value::{
    CompareOp, Compared, DimDecl, Guard, GuardKind, Interval, SizeComparison, SizeOrigin,
    TensorDims, TensorInfo, Value,
};
use super::{OpDefinition, SemanticModel, ShapesSpec, Site};
use crate::syntax::ast::{self, Expr, Stmt};

/// Calls followed inline from one root before the interpreter stops following.
const INLINE_BUDGET: usize = 400;
/// How deep inline calls may nest.
const MAX_DEPTH: usize = 8;

/// Local bindings of one function activation.
#[derive(Clone, Default)]
struct Env {
    locals: HashMap<String, Value>,
    /// The enclosing function's bindings, for nested functions (closures).
    outer: Option<Rc<HashMap<String, Value>>>,
    /// The class whose method is running, for `super()`.
    class: Option<usize>,
    /// Comparisons known to hold here (`torch._check(idx.shape[0] != 0)`, `assert a <= b`).
    checked: Vec<CheckedComparison>,
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

pub(crate) struct Interpreter<'m, 'a> {
    model: &'m SemanticModel<'a>,
    events: Vec<Event>,
    /// False while learning globals and attributes: that code is not traced.
    emit: bool,
    stack: Vec<usize>,
    returns: Vec<Value>,
    memo: HashMap<String, Value>,
    budget: usize,
    /// Above zero while interpreting operands that run only if an earlier `and`/`or` operand,
    /// which the analysis cannot decide, lets them.
    conditional: usize,
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
    reached: HashSet<Site>,
}

impl<'m, 'a> Interpreter<'m, 'a> {
    fn new(model: &'m SemanticModel<'a>, emit: bool) -> Self {
        Self {
            model,
            events: Vec::new(),
            emit,
            stack: Vec::new(),
            returns: Vec::new(),
            memo: HashMap::new(),
            budget: INLINE_BUDGET,
            untracked: SizeOrigin::Static,
            conditional: 0,
            file: 0,
            sites: Vec::new(),
            frames: Vec::new(),
            reached: HashSet::new(),
        }
    }

    /// Interprets every module class's `forward` and returns what happened, with the
    /// functions of other files it entered.
    pub(crate) fn run(model: &'m SemanticModel<'a>) -> (Vec<Event>, HashSet<Site>) {
        let mut interpreter = Interpreter::new(model, true);
        let declares_dynamic = model
            .spec
            .as_ref()
            .is_some_and(ShapesSpec::has_dynamic_dims);
        let entry_class = model.entry.as_ref().and_then(|entry| entry.model_class);
        for (class, info) in model.classes.iter().enumerate() {
            // Other files' classes run only as the entrypoint's model or when called.
            if !info.is_module || (info.file != 0 && entry_class != Some(class)) {
                continue;
            }
            let Some(&forward) = info.methods.get("forward") else {
                continue;
            };
            let spec = model.spec.as_ref().filter(|_| {
                model
                    .entry
                    .as_ref()
                    .is_some_and(|entry| entry.model_class == Some(class))
            });
            interpreter.untracked = if declares_dynamic {
                SizeOrigin::Unknown
            } else {
                SizeOrigin::Static
            };
            interpreter.budget = INLINE_BUDGET;
            interpreter.memo.clear();
            let def = model.functions[forward].def;
            let mut env = Env {
                class: Some(class),
                ..Env::default()
            };
            let parameters = all_parameters(&def.parameters);
            let entry = model
                .entry
                .as_ref()
                .filter(|entry| entry.model_class == Some(class));
            for (position, parameter) in parameters.iter().enumerate() {
                let value = if position == 0 {
                    Value::Module(Some(class))
                } else {
                    let dims = spec
                        .map(|spec| spec.dims_for(parameter.parameter.name.as_str(), position - 1));
                    let role = match entry {
                        Some(entry) => entry.role(parameter.parameter.name.as_str(), position - 1),
                        None if position == 1 => ParameterRole::Input,
                        None => ParameterRole::Extra,
                    };
                    root_parameter(parameter, dims.as_ref(), role)
                };
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
            if interpreter.file != 0 {
                if let Some(site) = model.entry_site {
                    interpreter.frames.push((0, site));
                }
                interpreter.reached.insert((interpreter.file, def.range()));
            }
            let replaced = model.classes[class].replaced;
            interpreter.conditional += usize::from(replaced);
            interpreter.stack.push(forward);
            interpreter.returns.push(Value::Bottom);
            interpreter.exec_block(&def.body, &mut env);
            interpreter.returns.pop();
            interpreter.stack.pop();
            interpreter.conditional -= usize::from(replaced);
            interpreter.frames.clear();
            interpreter.file = 0;
        }
        (interpreter.events, interpreter.reached)
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
        attributes: &mut HashMap<String, Value>,
        file: u32,
    ) {
        let mut interpreter = Interpreter::new(model, false);
        interpreter.file = file;
        interpreter.attributes_in(body, attributes);
    }

    fn attributes_in(&mut self, body: &[Stmt], attributes: &mut HashMap<String, Value>) {
        fn record(attributes: &mut HashMap<String, Value>, name: &str, value: Value) {
            let value = match value {
                Value::Tensor(_)
                | Value::Module(_)
                | Value::Layer(_)
                | Value::Modules
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
                            record(attributes, name, Value::Module(None));
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
                file: self.file,
                chain,
            });
        }
    }

    // ---------------------------------------------------------------------------------------
    // Statements

    /// Runs a block; returns whether control can fall off its end.
    fn exec_block(&mut self, body: &[Stmt], env: &mut Env) -> bool {
        for stmt in body {
            if !self.exec(stmt, env) {
                return false;
            }
        }
        true
    }

    fn exec(&mut self, stmt: &Stmt, env: &mut Env) -> bool {
        match stmt {
            Stmt::Expr(expr) => {
                self.eval(&expr.value, env);
            }
            Stmt::Assign(assign) => {
                let value = self.eval(&assign.value, env);
                for target in &assign.targets {
                    self.bind(target, value.clone(), env);
                }
            }
            Stmt::AnnAssign(assign) => {
                if let Some(value) = &assign.value {
                    let value = self.eval(value, env);
                    self.bind(&assign.target, value, env);
                }
            }
            Stmt::AugAssign(assign) => {
                let left = self.eval(&assign.target, env);
                let right = self.eval(&assign.value, env);
                let value = binary(&left, assign.op, &right, number_of(&assign.value));
                self.bind(&assign.target, value, env);
            }
            Stmt::Return(ret) => {
                let value = ret
                    .value
                    .as_ref()
                    .map_or(Value::None, |value| self.eval(value, env));
                if let Some(returned) = self.returns.last_mut() {
                    *returned = returned.join(&value);
                }
                return false;
            }
            Stmt::Raise(_) | Stmt::Break(_) | Stmt::Continue(_) => return false,
            Stmt::If(if_stmt) => return self.exec_if(if_stmt, env),
            Stmt::While(while_stmt) => {
                self.truthiness(&while_stmt.test, BoolContext::While, env);
                self.exec_loop(&while_stmt.body, env, |interpreter, env| {
                    interpreter.truthiness(&while_stmt.test, BoolContext::While, env);
                });
                self.exec_block(&while_stmt.orelse, env);
            }
            Stmt::For(for_stmt) => {
                let iterable = self.eval(&for_stmt.iter, env);
                if let Value::Tensor(info) = &iterable {
                    let size = self.size_of(info, 0);
                    self.record(
                        EventKind::IterateTensor {
                            tensor: info.clone(),
                            size,
                        },
                        for_stmt.iter.range(),
                    );
                }
                let element = element_of(&iterable);
                self.exec_loop(&for_stmt.body, env, |interpreter, env| {
                    interpreter.bind(&for_stmt.target, element.clone(), env);
                });
                self.exec_block(&for_stmt.orelse, env);
            }
            Stmt::With(with) => {
                for item in &with.items {
                    self.eval(&item.context_expr, env);
                    if let Some(target) = &item.optional_vars {
                        self.bind(target, Value::Unknown, env);
                    }
                }
                return self.exec_block(&with.body, env);
            }
            Stmt::Try(try_stmt) => {
                let mut branches = Vec::new();
                let mut body_env = env.clone();
                if self.exec_block(&try_stmt.body, &mut body_env)
                    && self.exec_block(&try_stmt.orelse, &mut body_env)
                {
                    branches.push(body_env);
                }
                for ast::ExceptHandler::ExceptHandler(handler) in &try_stmt.handlers {
                    let mut handler_env = env.clone();
                    if let Some(name) = &handler.name {
                        handler_env.locals.insert(name.to_string(), Value::Unknown);
                    }
                    if self.exec_block(&handler.body, &mut handler_env) {
                        branches.push(handler_env);
                    }
                }
                let falls_through = !branches.is_empty();
                if falls_through {
                    *env = Env {
                        class: env.class,
                        outer: env.outer.clone(),
                        ..Env::join(branches)
                    };
                }
                return self.exec_block(&try_stmt.finalbody, env) && falls_through;
            }
            Stmt::Assert(assert) => {
                self.truthiness(&assert.test, BoolContext::Assert, env);
                // Past the assert, the condition holds, as after `torch._check`.
                narrow(&assert.test, false, env);
            }
            Stmt::FunctionDef(def) => {
                if let Some(index) = self.model.function_at_in(self.file, def) {
                    env.locals
                        .insert(def.name.to_string(), Value::Function(index));
                }
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => {
                for (local, qualified) in
                    names::import_bindings(stmt, self.model.source_in(self.file))
                {
                    env.locals
                        .insert(local, Value::Qualified(Rc::from(qualified)));
                }
            }
            Stmt::Match(match_stmt) => {
                self.eval(&match_stmt.subject, env);
                let mut branches = vec![env.clone()];
                for case in &match_stmt.cases {
                    let mut case_env = env.clone();
                    if self.exec_block(&case.body, &mut case_env) {
                        branches.push(case_env);
                    }
                }
                *env = Env {
                    class: env.class,
                    outer: env.outer.clone(),
                    ..Env::join(branches)
                };
            }
            _ => {}
        }
        true
    }

    fn exec_if(&mut self, if_stmt: &ast::StmtIf, env: &mut Env) -> bool {
        let clauses = std::iter::once((Some(&*if_stmt.test), &if_stmt.body[..])).chain(
            if_stmt
                .elif_else_clauses
                .iter()
                .map(|clause| (clause.test.as_ref(), &clause.body[..])),
        );
        let mut branches = Vec::new();
        let mut may_skip_all = true;
        // Which names hold tensors around an `if` on a tensor, for the `torch.cond` rewrite:
        // where it starts, and where each clause ends.
        let mut tensor_if: Option<(TensorNames, Vec<Option<TensorNames>>)> = None;
        for (test, body) in clauses {
            let taken = match test {
                None => Some(true),
                Some(test) => {
                    let truth = self.static_truth(test, env);
                    if truth.is_none() {
                        let recorded = self.events.len();
                        self.truthiness(
                            test,
                            BoolContext::If {
                                raises_only: raises_only(body),
                            },
                            env,
                        );
                        let on_tensor = self.events[recorded..].iter().any(|event| {
                            matches!(
                                event.kind,
                                EventKind::Truthiness {
                                    value: Value::Tensor(_),
                                    ..
                                }
                            )
                        });
                        if on_tensor && std::ptr::eq(test, if_stmt.test.as_ref()) {
                            tensor_if = Some((tensor_locals(env), Vec::new()));
                        }
                    }
                    truth
                }
            };
            if taken == Some(false) {
                continue;
            }
            let mut branch_env = env.clone();
            let falls_through = self.exec_block(body, &mut branch_env);
            if let Some((_, after)) = &mut tensor_if {
                after.push(falls_through.then(|| tensor_locals(&branch_env)));
            }
            if falls_through {
                branches.push(branch_env);
            }
            if taken == Some(true) {
                may_skip_all = false;
                break;
            }
        }
        if let Some((before, after)) = tensor_if {
            // At the condition, where PT101's diagnostic is: the statement may be long, and
            // every rule renders each event's text.
            self.record(EventKind::TensorIf { before, after }, if_stmt.test.range());
        }
        if may_skip_all {
            branches.push(env.clone());
        }
        if branches.is_empty() {
            return false;
        }
        *env = Env {
            class: env.class,
            outer: env.outer.clone(),
            ..Env::join(branches)
        };
        true
    }

    /// The truth of a condition the exporter decides the same way on every trace: `self.training`
    /// (models are exported in eval mode), `torch.jit.is_scripting()`, `x is None` for a value
    /// known to be `None` or known not to be.
    fn static_truth(&mut self, expr: &Expr, env: &mut Env) -> Option<bool> {
        match expr {
            Expr::BooleanLiteral(literal) => Some(literal.value),
            Expr::UnaryOp(ast::ExprUnaryOp {
                op: ast::UnaryOp::Not,
                operand,
                ..
            }) => self.static_truth(operand, env).map(|truth| !truth),
            Expr::BoolOp(bool_op) => {
                let truths: Vec<Option<bool>> = bool_op
                    .values
                    .iter()
                    .map(|value| self.static_truth(value, env))
                    .collect();
                let (absorbing, identity) = match bool_op.op {
                    ast::BoolOp::And => (false, true),
                    ast::BoolOp::Or => (true, false),
                };
                if truths.contains(&Some(absorbing)) {
                    Some(absorbing)
                } else if truths.iter().all(|truth| *truth == Some(identity)) {
                    Some(identity)
                } else {
                    None
                }
            }
            Expr::Attribute(attribute) => {
                let is_self =
                    matches!(&*attribute.value, Expr::Name(name) if name.id.as_str() == "self");
                (is_self && attribute.attr.as_str() == "training").then_some(false)
            }
            Expr::Compare(compare) => {
                let ([op], [Expr::NoneLiteral(_)]) = (&*compare.ops, &*compare.comparators) else {
                    return None;
                };
                let is = match op {
                    ast::CmpOp::Is => true,
                    ast::CmpOp::IsNot => false,
                    _ => return None,
                };
                match self.eval(&compare.left, env) {
                    Value::None => Some(is),
                    Value::Tensor(info) if !info.maybe_none && !info.assumed => Some(!is),
                    Value::Module(_)
                    | Value::Modules
                    | Value::Tuple(_)
                    | Value::Shape(_)
                    | Value::Size { .. } => Some(!is),
                    _ => None,
                }
            }
            Expr::Call(call) if call.arguments.args.is_empty() => {
                let Value::Qualified(qualified) = self.eval(&call.func, env) else {
                    return None;
                };
                match qualified.rsplit('.').next().unwrap_or_default() {
                    "is_scripting" | "is_tracing" | "_is_tracing" | "_get_tracing_state"
                    | "is_in_onnx_export" => Some(false),
                    "is_compiling"
                    | "is_dynamo_compiling"
                    | "is_torchdynamo_compiling"
                    | "is_exporting" => Some(true),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Runs a loop body twice, so bindings made late in one iteration reach the next.
    fn exec_loop(
        &mut self,
        body: &[Stmt],
        env: &mut Env,
        mut before: impl FnMut(&mut Self, &mut Env),
    ) {
        for _ in 0..2 {
            let mut body_env = env.clone();
            before(self, &mut body_env);
            self.exec_block(body, &mut body_env);
            let merged = Env::join(vec![env.clone(), body_env]);
            *env = Env {
                class: env.class,
                outer: env.outer.clone(),
                ..merged
            };
        }
    }

    fn bind(&mut self, target: &Expr, value: Value, env: &mut Env) {
        match target {
            Expr::Name(name) => {
                env.checked
                    .retain(|fact| !fact.names.iter().any(|read| read == name.id.as_str()));
                env.locals.insert(name.id.to_string(), value);
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let has_star = elts.iter().any(Expr::is_starred_expr);
                for (index, element) in elts.iter().enumerate() {
                    let item = match &value {
                        Value::Tuple(items) if !has_star && items.len() == elts.len() => {
                            items[index].clone()
                        }
                        Value::Shape(info) if !has_star => self.size_of(info, index as i64),
                        Value::Tensor(info) | Value::Tensors(info) => Value::Tensor(TensorInfo {
                            assumed: info.opaque || info.assumed,
                            ..TensorInfo::default()
                        }),
                        Value::DataScalars => Value::DataScalar(Interval::default()),
                        _ => Value::Unknown,
                    };
                    let item = if element.is_starred_expr() {
                        Value::Unknown
                    } else {
                        item
                    };
                    self.bind(element, item, env);
                }
            }
            Expr::Starred(starred) => self.bind(&starred.value, Value::Unknown, env),
            Expr::Subscript(subscript) => {
                self.eval(&subscript.value, env);
                self.eval(&subscript.slice, env);
            }
            _ => {}
        }
    }

    // ---------------------------------------------------------------------------------------
    // Conditions

    /// Evaluates an expression whose truth value Python takes.
    fn truthiness(&mut self, expr: &Expr, context: BoolContext, env: &mut Env) {
        match expr {
            Expr::BoolOp(bool_op) => {
                // `x.dtype == torch.float16 and not torch.isfinite(x).all()`: operands after one
                // the exporter decides from something the analysis cannot see (a dtype, a
                // config flag) may never run, so what they do is reported as conditional.
                let outer = self.conditional;
                for value in &bool_op.values {
                    let decided = self.static_truth(value, env).is_some();
                    let evaluated = self.truthiness_value(value, context, env);
                    let opaque_condition = !matches!(
                        evaluated,
                        Value::Tensor(_)
                            | Value::Guard(_)
                            | Value::DataScalar(_)
                            | Value::Size { .. }
                    );
                    if !decided && opaque_condition && self.conditional == outer {
                        self.conditional += 1;
                    }
                }
                self.conditional = outer;
            }
            Expr::UnaryOp(ast::ExprUnaryOp {
                op: ast::UnaryOp::Not,
                operand,
                ..
            }) => {
                self.truthiness(operand, context, env);
            }
            _ => {
                let value = self.eval(expr, env);
                self.record_truthiness(value, expr, context);
            }
        }
    }

    /// [`Self::truthiness`] that also returns what a plain operand evaluated to.
    fn truthiness_value(&mut self, expr: &Expr, context: BoolContext, env: &mut Env) -> Value {
        match expr {
            Expr::BoolOp(_)
            | Expr::UnaryOp(ast::ExprUnaryOp {
                op: ast::UnaryOp::Not,
                ..
            }) => {
                self.truthiness(expr, context, env);
                Value::Unknown
            }
            _ => {
                let value = self.eval(expr, env);
                self.record_truthiness(value.clone(), expr, context);
                value
            }
        }
    }

    fn record_truthiness(&mut self, value: Value, expr: &Expr, context: BoolContext) {
        let value = match value {
            // A bare optional parameter's truthiness is a `None` check in practice.
            Value::Tensor(info) if info.maybe_none && matches!(expr, Expr::Name(_)) => return,
            Value::Tensor(info) if info.assumed => return,
            Value::Tensor(_) | Value::Guard(_) => value,
            Value::DataScalar(interval) => Value::Guard(Guard {
                kind: GuardKind::Data,
                decided: interval.decide(CompareOp::NotEq, 0.0).is_some(),
                suggestion: None,
            }),
            Value::Size { origin, interval } => match size_guard(
                &origin,
                interval,
                CompareOp::NotEq,
                &Value::Unknown,
                Some(0.0),
            ) {
                Value::Guard(guard) => Value::Guard(guard),
                _ => return,
            },
            _ => return,
        };
        self.record(EventKind::Truthiness { value, context }, expr.range());
    }

    // ---------------------------------------------------------------------------------------
    // Expressions

    fn lookup(&self, name: &str, env: &Env) -> Value {
        if let Some(value) = env.locals.get(name) {
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

    fn eval(&mut self, expr: &Expr, env: &mut Env) -> Value {
        match expr {
            Expr::Name(name) => self.lookup(name.id.as_str(), env),
            Expr::NoneLiteral(_) => Value::None,
            Expr::Attribute(attribute) => {
                let receiver = self.eval(&attribute.value, env);
                self.attribute(&receiver, attribute.attr.as_str())
            }
            Expr::Call(call) => self.call(call, env),
            Expr::Subscript(subscript) => self.subscript(subscript, env),
            Expr::BinOp(operation) => {
                let left = self.eval(&operation.left, env);
                let right = self.eval(&operation.right, env);
                if let (Value::Tensor(a), Value::Tensor(b)) = (&left, &right) {
                    if operation.op != ast::Operator::MatMult {
                        let kind = match broadcast_conflict(a, b) {
                            Some(BroadcastConflict::Dims(left, right)) => {
                                Some(EventKind::DimMismatch { left, right })
                            }
                            Some(BroadcastConflict::Constant(dim, size)) => {
                                Some(EventKind::DimSpecialized { dim, size })
                            }
                            None => None,
                        };
                        if let Some(kind) = kind {
                            self.record(kind, expr.range());
                        }
                    }
                }
                binary(&left, operation.op, &right, number_of(&operation.right))
            }
            Expr::UnaryOp(unary) => {
                if unary.op == ast::UnaryOp::Not {
                    self.truthiness(&unary.operand, BoolContext::Not, env);
                    return Value::Unknown;
                }
                match self.eval(&unary.operand, env) {
                    value @ (Value::Tensor(_) | Value::DataScalar(_)) => value,
                    Value::Size { origin, .. } => Value::Size {
                        origin,
                        interval: Interval::default(),
                    },
                    _ => Value::Unknown,
                }
            }
            Expr::BoolOp(bool_op) => {
                let (last, rest) = bool_op
                    .values
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
                let items: Vec<Value> =
                    elts.iter().map(|element| self.eval(element, env)).collect();
                Value::Tuple(Rc::from(items))
            }
            Expr::Named(named) => {
                let value = self.eval(&named.value, env);
                self.bind(&named.target, value.clone(), env);
                value
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
                match self.eval(elt, &mut inner) {
                    Value::Tensor(info) => Value::Tensors(info),
                    Value::Module(_) => Value::Modules,
                    _ => Value::Unknown,
                }
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
            Expr::Dict(dict) => {
                for item in &dict.items {
                    if let Some(key) = &item.key {
                        self.eval(key, env);
                    }
                    self.eval(&item.value, env);
                }
                Value::Unknown
            }
            Expr::Starred(starred) => {
                self.eval(&starred.value, env);
                Value::Unknown
            }
            Expr::Await(await_expr) => self.eval(&await_expr.value, env),
            _ => Value::Unknown,
        }
    }

    fn comprehension(&mut self, generators: &[ast::Comprehension], env: &mut Env) {
        for generator in generators {
            let iterable = self.eval(&generator.iter, env);
            self.bind(&generator.target, element_of(&iterable), env);
            for condition in &generator.ifs {
                self.truthiness(condition, BoolContext::Comprehension, env);
            }
        }
    }

    fn attribute(&mut self, receiver: &Value, name: &str) -> Value {
        match receiver {
            Value::Tensor(info) | Value::Tensors(info) => match torch_api::tensor_attribute(name) {
                AttributeResult::Shape => Value::Shape(info.clone()),
                AttributeResult::Tensor => Value::Tensor(TensorInfo {
                    data_dependent_shape: info.data_dependent_shape,
                    ..TensorInfo::default()
                }),
                AttributeResult::Other => Value::Unknown,
            },
            Value::Module(Some(class)) => {
                if let Some(value) = self.model.find_attribute(*class, name) {
                    return value.clone();
                }
                if let Some(method) = self.model.find_method(*class, name) {
                    return Value::Method(Some(*class), method);
                }
                module_parameter(name)
            }
            Value::Module(None) | Value::Layer(_) => module_parameter(name),
            Value::Qualified(qualified) => {
                let qualified = format!("{qualified}.{name}");
                self.model
                    .resolve_qualified(&qualified)
                    .unwrap_or_else(|| Value::Qualified(Rc::from(qualified)))
            }
            _ => Value::Unknown,
        }
    }

    fn subscript(&mut self, subscript: &ast::ExprSubscript, env: &mut Env) -> Value {
        let receiver = self.eval(&subscript.value, env);
        if receiver.is_tensor() && self_attribute(&subscript.value).is_some() {
            self.check_buffer_slice(&subscript.slice, env);
        }
        let index = self.eval(&subscript.slice, env);
        if let Value::DataScalar(_) = index {
            if matches!(
                receiver,
                Value::Tuple(_) | Value::Tensors(_) | Value::Shape(_) | Value::Modules
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
                Value::Tensor(TensorInfo {
                    data_dependent_shape: masked || info.data_dependent_shape,
                    assumed: info.assumed || element_of_opaque,
                    ..TensorInfo::default()
                })
            }
            Value::Tensors(info) => Value::Tensor(TensorInfo { dims: None, ..info }),
            Value::Shape(info) => match &*subscript.slice {
                Expr::Slice(_) => {
                    let keeps_dims = info
                        .dims
                        .as_ref()
                        .is_some_and(|dims| dims.dynamic.is_empty());
                    Value::Shape(TensorInfo {
                        dims: if keeps_dims { info.dims.clone() } else { None },
                        ..info
                    })
                }
                slice => match names::int_literal(slice) {
                    Some(position) => self.size_of(&info, position),
                    None => Value::Size {
                        origin: self.untracked_for(&info),
                        interval: Interval::at_least(0.0),
                    },
                },
            },
            Value::Tuple(items) => match names::int_literal(&subscript.slice) {
                Some(position) => {
                    let position = if position < 0 {
                        items.len() as i64 + position
                    } else {
                        position
                    };
                    usize::try_from(position)
                        .ok()
                        .and_then(|p| items.get(p))
                        .cloned()
                        .unwrap_or(Value::Unknown)
                }
                None => Value::Unknown,
            },
            Value::DataScalars => Value::DataScalar(Interval::default()),
            Value::Modules => Value::Module(None),
            _ => Value::Unknown,
        }
    }

    /// `self.pos[:x.shape[1]]`: slicing a parameter or buffer, whose size is fixed, up to a
    /// dynamic size adds the guard `size <= len(buffer)`, which a `Dim` without `max` violates.
    fn check_buffer_slice(&mut self, slice: &Expr, env: &mut Env) {
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
                if !dim.automatic && dim.max.is_none() {
                    self.record(EventKind::BufferSlice { dim }, upper.range());
                }
            }
        }
    }

    fn compare(&mut self, compare: &ast::ExprCompare, env: &mut Env) -> Value {
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
        let left_number = number_of(&compare.left);
        let right_number = number_of(right_expr);
        let guard = match (&left, right) {
            (Value::DataScalar(interval), _) => data_guard(*interval, op, right_number),
            (_, Value::DataScalar(interval)) => data_guard(*interval, op.flipped(), left_number),
            (Value::Size { origin, interval }, other) => {
                size_guard(origin, *interval, op, other, right_number)
            }
            (other, Value::Size { origin, interval }) => {
                size_guard(origin, *interval, op.flipped(), other, left_number)
            }
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

    // ---------------------------------------------------------------------------------------
    // Calls

    fn call(&mut self, call: &ast::ExprCall, env: &mut Env) -> Value {
        self.sites.push((self.file, call.range()));
        let value = self.call_site(call, env);
        self.sites.pop();
        value
    }

    fn call_site(&mut self, call: &ast::ExprCall, env: &mut Env) -> Value {
        let args: Vec<Value> = call
            .arguments
            .args
            .iter()
            .map(|arg| self.eval(arg, env))
            .collect();
        let kwargs: Vec<(String, Value)> = call
            .arguments
            .keywords
            .iter()
            .map(|keyword| {
                let value = self.eval(&keyword.value, env);
                (
                    keyword
                        .arg
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    value,
                )
            })
            .collect();
        let any_tensor = args
            .iter()
            .chain(kwargs.iter().map(|(_, value)| value))
            .any(|value| {
                matches!(value, Value::Tensor(_) | Value::Tensors(_))
                    || matches!(value, Value::Tuple(items) if items.iter().any(Value::is_tensor))
            });
        if let Expr::Attribute(attribute) = &*call.func {
            let name = attribute.attr.as_str();
            if let Expr::Call(inner) = &*attribute.value {
                if matches!(&*inner.func, Expr::Name(callee) if callee.id.as_str() == "super") {
                    return self.super_call(name, &args, &kwargs, any_tensor, env);
                }
            }
            let receiver = self.eval(&attribute.value, env);
            return match receiver {
                Value::Tensor(info) | Value::Tensors(info) => {
                    self.tensor_method(&info, name, call, &args, &kwargs)
                }
                Value::Module(class) => self.module_method(class, name, &args, &kwargs, any_tensor),
                Value::Layer(_) => self.module_method(None, name, &args, &kwargs, any_tensor),
                Value::Modules => match name {
                    "values" | "children" | "modules" => Value::Modules,
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
                _ => Value::Unknown,
            };
        }
        let callee = self.eval(&call.func, env);
        self.call_value(&callee, call, &args, &kwargs, any_tensor, env)
    }

    fn call_value(
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
            Value::Method(class, method) => {
                self.inline(*method, Some(Value::Module(*class)), args, kwargs, None)
            }
            Value::Class(class) if self.model.classes[*class].is_module => {
                Value::Module(Some(*class))
            }
            Value::Module(submodule) => self.call_module(*submodule, args, kwargs),
            Value::Layer(_) => layer_call(args),
            _ => Value::Unknown,
        }
    }

    /// Calls a module: a class of this file runs its `forward` on the caller's values, so shapes
    /// and dynamic dimensions flow into submodules; any other module returns an opaque tensor.
    fn call_module(
        &mut self,
        class: Option<usize>,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Value {
        match class.and_then(|class| Some((class, self.model.find_method(class, "forward")?))) {
            Some((class, forward)) => match self.inline(
                forward,
                Some(Value::Module(Some(class))),
                args,
                kwargs,
                None,
            ) {
                Value::Unknown | Value::Bottom => Value::opaque_tensor(),
                value => value,
            },
            None => Value::opaque_tensor(),
        }
    }

    /// A nested function sees its parent's bindings; a module-level one does not.
    fn closure_of(&self, function: usize, env: &Env) -> Option<Rc<HashMap<String, Value>>> {
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

    fn super_call(
        &mut self,
        name: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
        any_tensor: bool,
        env: &Env,
    ) -> Value {
        let Some(class) = env.class else {
            return Value::Unknown;
        };
        for base in &self.model.classes[class].bases {
            if let Value::Class(base) = base {
                if let Some(method) = self.model.find_method(*base, name) {
                    return self.inline(
                        method,
                        Some(Value::Module(Some(class))),
                        args,
                        kwargs,
                        None,
                    );
                }
            }
        }
        if any_tensor && name == "forward" {
            Value::opaque_tensor()
        } else {
            Value::Unknown
        }
    }

    fn tensor_method(
        &mut self,
        info: &TensorInfo,
        name: &str,
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
    ) -> Value {
        match name {
            "numpy" => {
                if !info.assumed {
                    self.record(
                        EventKind::Numpy {
                            call: ".numpy()".to_owned(),
                        },
                        call.range(),
                    );
                }
                return Value::Unknown;
            }
            "view" | "reshape" => {
                if let Some((dim, multiple)) = reshape_guard(info, &call.arguments.args) {
                    self.record(EventKind::ReshapeGuard { dim, multiple }, call.range());
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
                if dim.and_then(names::int_literal).is_some_and(|dim| dim != 0) {
                    return layer_call(&[Value::Tensor(info.clone())]);
                }
            }
            _ => {}
        }
        let _ = (args, kwargs);
        match torch_api::tensor_method(name) {
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

    fn module_method(
        &mut self,
        class: Option<usize>,
        name: &str,
        args: &[Value],
        kwargs: &[(String, Value)],
        any_tensor: bool,
    ) -> Value {
        if let Some(class) = class {
            if let Some(method) = self.model.find_method(class, name) {
                return self.inline(method, Some(Value::Module(Some(class))), args, kwargs, None);
            }
            match self.model.find_attribute(class, name) {
                Some(Value::Module(submodule)) => {
                    let submodule = *submodule;
                    return self.call_module(submodule, args, kwargs);
                }
                Some(Value::Layer(_)) => return layer_call(args),
                Some(Value::Tensor(_) | Value::Modules) => return Value::Unknown,
                _ => {}
            }
        }
        match name {
            "children" | "modules" => Value::Modules,
            "get_submodule" => Value::Module(None),
            "get_parameter" | "get_buffer" => Value::tensor(),
            "parameters" | "named_parameters" | "buffers" | "named_buffers" | "state_dict"
            | "train" | "eval" | "to" | "apply" | "register_buffer" | "register_parameter"
            | "add_module" | "named_children" | "named_modules" | "zero_grad"
            | "requires_grad_" | "extra_repr" => Value::Unknown,
            // A callable attribute the model cannot see (a submodule chosen at run time, an
            // activation from a table): applied to tensors, it returns one.
            _ if any_tensor => Value::opaque_tensor(),
            _ => Value::Unknown,
        }
    }

    fn qualified_call(
        &mut self,
        qualified: &str,
        call: &ast::ExprCall,
        args: &[Value],
        kwargs: &[(String, Value)],
        any_tensor: bool,
        env: &mut Env,
    ) -> Value {
        if let Some(builtin) = qualified.strip_prefix("builtins.") {
            return self.builtin_call(builtin, call, args, env);
        }
        // A function or class of another file of the program: followed like a local one.
        if let Some(resolved) = self.model.resolve_qualified(qualified) {
            return self.call_value(&resolved, call, args, kwargs, any_tensor, env);
        }
        let top = qualified.split('.').next().unwrap_or_default();
        match qualified {
            "torch._check" | "torch._check_is_size" => {
                if let Some(condition) = call.arguments.args.first() {
                    narrow(condition, qualified == "torch._check_is_size", env);
                }
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
                Some(Value::Size { origin, .. }) => Value::Size {
                    origin: origin.combine(&SizeOrigin::Static),
                    interval: Interval::default(),
                },
                _ => Value::Unknown,
            };
        }
        let any_certain_tensor = args
            .iter()
            .chain(kwargs.iter().map(|(_, value)| value))
            .any(Value::is_certain_tensor);
        if torch_api::is_numpy(qualified) {
            if any_certain_tensor {
                self.record(
                    EventKind::Numpy {
                        call: qualified.to_owned(),
                    },
                    call.range(),
                );
            }
            return Value::Unknown;
        }
        if torch_api::STRICT_UNTRACEABLE_MODULES.contains(&top)
            || torch_api::BAKED_IN_MODULES.contains(&top)
        {
            let tensor_argument =
                any_certain_tensor && torch_api::DATA_READING_MODULES.contains(&top);
            self.record(
                EventKind::Call {
                    qualified: qualified.to_owned(),
                    tensor_argument,
                },
                call.range(),
            );
            return Value::Unknown;
        }
        if let Some(constructed) = torch_api::constructed(qualified) {
            return match constructed {
                Constructed::Module if keeps_batch_dim(qualified) => {
                    Value::Layer(Rc::from(qualified))
                }
                Constructed::Module => Value::Module(None),
                Constructed::Modules => Value::Modules,
                Constructed::Parameter => Value::tensor(),
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
        if let Some(dims) = literal_shape(name, call) {
            return Value::Tensor(TensorInfo {
                dims: Some(Rc::new(dims)),
                ..TensorInfo::default()
            });
        }
        match torch_api::torch_function(qualified, call.arguments.args.len()) {
            TorchResult::Tensor => {
                let keeps_dims = torch_api::tensor_method(name) == MethodResult::SameShape;
                match first_tensor {
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

    fn builtin_call(
        &mut self,
        name: &str,
        call: &ast::ExprCall,
        args: &[Value],
        env: &mut Env,
    ) -> Value {
        let first = args.first().cloned().unwrap_or(Value::Unknown);
        match name {
            "int" | "float" => match first {
                Value::Tensor(info) if info.assumed => Value::Unknown,
                Value::Tensor(_) => {
                    self.record(
                        EventKind::Scalar {
                            value: first,
                            usage: ScalarUse::Conversion,
                        },
                        call.range(),
                    );
                    Value::DataScalar(Interval::default())
                }
                // `int()` of a number read from tensor data asks the symbolic integer for its
                // value: non-strict export fails there (the rule knows the mode).
                Value::DataScalar(interval) if name == "int" => {
                    self.record(
                        EventKind::Scalar {
                            value: Value::DataScalar(interval),
                            usage: ScalarUse::Conversion,
                        },
                        call.range(),
                    );
                    Value::DataScalar(interval)
                }
                Value::DataScalar(interval) => Value::DataScalar(interval),
                size @ Value::Size { .. } => size,
                _ => Value::Unknown,
            },
            "bool" => {
                // Non-strict export fails at `bool()` itself (the rules say so from the event);
                // strict export captures a symbolic boolean, which fails only where it decides
                // control flow: the result carries the guard to that use.
                let result = match &first {
                    Value::DataScalar(interval) => Value::Guard(Guard {
                        kind: GuardKind::Data,
                        decided: interval.decide(CompareOp::NotEq, 0.0).is_some(),
                        suggestion: None,
                    }),
                    Value::Guard(guard) if matches!(guard.kind, GuardKind::Data) => first.clone(),
                    _ => Value::Unknown,
                };
                if let Some(argument) = call.arguments.args.first() {
                    self.record_truthiness(first, argument, BoolContext::BoolCall);
                }
                result
            }
            "len" => match first {
                Value::Tensor(info) => {
                    let size = self.size_of(&info, 0);
                    self.record(
                        EventKind::Scalar {
                            value: size.clone(),
                            usage: ScalarUse::Len,
                        },
                        call.range(),
                    );
                    size
                }
                _ => Value::Unknown,
            },
            "range" => {
                for (value, expr) in args.iter().zip(call.arguments.args.iter()) {
                    if matches!(value, Value::DataScalar(_) | Value::Size { .. }) {
                        self.record(
                            EventKind::Scalar {
                                value: value.clone(),
                                usage: ScalarUse::Range,
                            },
                            expr.range(),
                        );
                    }
                }
                Value::Iter(Rc::new(Value::Unknown))
            }
            "min" | "max" => {
                if args.iter().any(Value::is_tensor) {
                    Value::tensor()
                } else if args.iter().any(|arg| matches!(arg, Value::DataScalar(_))) {
                    Value::DataScalar(Interval::default())
                } else {
                    args.iter()
                        .fold(Value::Bottom, |acc, arg| match (acc, arg) {
                            (Value::Size { origin, .. }, Value::Size { origin: other, .. }) => {
                                Value::Size {
                                    origin: origin.combine(other),
                                    interval: Interval::default(),
                                }
                            }
                            (size @ Value::Size { .. }, _) => size,
                            (_, size @ Value::Size { .. }) => size.clone(),
                            _ => Value::Unknown,
                        })
                }
            }
            "abs" | "round" => match first {
                value @ (Value::Tensor(_) | Value::DataScalar(_) | Value::Size { .. }) => value,
                _ => Value::Unknown,
            },
            "sum" => match first {
                Value::Tensors(_) => Value::tensor(),
                Value::Tuple(items) if items.iter().any(Value::is_tensor) => Value::tensor(),
                _ => Value::Unknown,
            },
            "tuple" | "list" => match first {
                value @ (Value::Shape(_)
                | Value::Tensors(_)
                | Value::Tuple(_)
                | Value::DataScalars
                | Value::Modules) => value,
                _ => Value::Unknown,
            },
            "zip" => Value::Iter(Rc::new(Value::Tuple(args.iter().map(element_of).collect()))),
            "enumerate" => Value::Iter(Rc::new(Value::Tuple(Rc::from(vec![
                Value::Unknown,
                element_of(&first),
            ])))),
            "reversed" | "iter" => Value::Iter(Rc::new(element_of(&first))),
            "print" => {
                self.record(
                    EventKind::Call {
                        qualified: "print".to_owned(),
                        tensor_argument: false,
                    },
                    call.range(),
                );
                Value::Unknown
            }
            _ if torch_api::UNTRACEABLE_BUILTINS.contains(&name) => {
                self.record(
                    EventKind::Call {
                        qualified: name.to_owned(),
                        tensor_argument: false,
                    },
                    call.range(),
                );
                Value::Unknown
            }
            _ => {
                let _ = env;
                Value::Unknown
            }
        }
    }

    /// Calls a function value (a `torch.cond` branch, a checkpointed function).
    fn call_callable(&mut self, callee: &Value, args: &[Value], env: &Env) -> Value {
        match callee {
            Value::Function(function) => {
                let outer = self.closure_of(*function, env);
                self.inline(*function, None, args, &[], outer)
            }
            Value::Method(class, method) => {
                self.inline(*method, Some(Value::Module(*class)), args, &[], None)
            }
            Value::Module(_) => Value::opaque_tensor(),
            Value::Layer(_) => layer_call(args),
            _ => Value::Unknown,
        }
    }

    /// Interprets a call to a function of this file with the caller's argument values.
    fn inline(
        &mut self,
        function: usize,
        receiver: Option<Value>,
        args: &[Value],
        kwargs: &[(String, Value)],
        outer: Option<Rc<HashMap<String, Value>>>,
    ) -> Value {
        if self.stack.contains(&function) || self.stack.len() >= MAX_DEPTH || self.budget == 0 {
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
        let key = outer
            .is_none()
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
            receiver.map(|_| Value::Unknown)
        } else {
            receiver
        };
        let mut positional = receiver.into_iter().chain(args.iter().cloned());
        for parameter in &parameters {
            let name = parameter.parameter.name.as_str();
            let mut value = positional
                .next()
                .or_else(|| {
                    kwargs
                        .iter()
                        .find(|(key, _)| key == name)
                        .map(|(_, value)| value.clone())
                })
                .unwrap_or_else(|| default_value(parameter));
            // A parameter annotated `int`, `tuple[int, int]`, ... is trusted over a caller the
            // interpreter may have misjudged.
            if let Some(annotation) = &parameter.parameter.annotation {
                let keeps = matches!(
                    value,
                    Value::Size { .. } | Value::DataScalar(_) | Value::None
                );
                if matches!(annotation_kind(annotation), AnnotationKind::Other) && !keeps {
                    value = Value::Unknown;
                }
            }
            env.locals.insert(name.to_owned(), value);
        }
        for vararg in [&def.parameters.vararg, &def.parameters.kwarg]
            .into_iter()
            .flatten()
        {
            env.locals.insert(vararg.name.to_string(), Value::Unknown);
        }
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
        self.stack.push(function);
        self.returns.push(Value::Bottom);
        let falls_through = self.exec_block(&def.body, &mut env);
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

    // ---------------------------------------------------------------------------------------
    // Sizes

    fn untracked_for(&self, info: &TensorInfo) -> SizeOrigin {
        match &info.dims {
            Some(dims) if dims.dynamic.is_empty() => SizeOrigin::Static,
            _ => self.untracked.clone(),
        }
    }

    fn size_of(&self, info: &TensorInfo, position: i64) -> Value {
        if info.data_dependent_shape {
            return if position == 0 {
                Value::Size {
                    origin: SizeOrigin::Unbacked,
                    interval: Interval::at_least(0.0),
                }
            } else {
                Value::Size {
                    origin: self.untracked.clone(),
                    interval: Interval::at_least(0.0),
                }
            };
        }
        let Some(dims) = &info.dims else {
            return Value::Size {
                origin: self.untracked.clone(),
                interval: Interval::at_least(0.0),
            };
        };
        let index = if position >= 0 {
            usize::try_from(position).ok()
        } else {
            dims.rank
                .and_then(|rank| usize::try_from(rank as i64 + position).ok())
        };
        match index {
            Some(index) => match dims
                .dynamic
                .iter()
                .find(|(dim_index, _)| *dim_index == index)
            {
                Some((_, dim)) => Value::Size {
                    origin: SizeOrigin::Dynamic {
                        dim: dim.clone(),
                        exact: true,
                    },
                    interval: dim.assumed_interval(),
                },
                None => Value::static_size(),
            },
            None if dims.dynamic.is_empty() => Value::static_size(),
            None => Value::Size {
                origin: SizeOrigin::Unknown,
                interval: Interval::default(),
            },
        }
    }

    fn numel_of(&self, info: &TensorInfo) -> Value {
        if info.data_dependent_shape {
            return Value::Size {
                origin: SizeOrigin::Unbacked,
                interval: Interval::at_least(0.0),
            };
        }
        match &info.dims {
            Some(dims) => match dims.dynamic.first() {
                Some((_, dim)) => Value::Size {
                    origin: SizeOrigin::Dynamic {
                        dim: dim.clone(),
                        exact: false,
                    },
                    interval: Interval::at_least(0.0),
                },
                None => Value::static_size(),
            },
            None => Value::Size {
                origin: self.untracked.clone(),
                interval: Interval::at_least(0.0),
            },
        }
    }
}

impl SemanticModel<'_> {
    /// Constructing a module class from another workspace file gives a module instance.
    fn workspace_module_class(&self, qualified: &str) -> Option<Value> {
        self.workspace
            .is_module_class(qualified)
            .then_some(Value::Module(None))
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
            } => size_guard(
                other_origin,
                *interval,
                op.flipped(),
                &Value::static_size(),
                None,
            ),
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
                    let same = *exact && *other_exact && other_dim.name == dim.name;
                    let suggestion = (!same && *exact && *other_exact).then(|| SizeComparison {
                        op,
                        against: Compared::Dim(other_dim.clone()),
                    });
                    (same, suggestion)
                }
                _ => (false, None),
            };
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
        (Value::Tensor(a), Value::Tensor(b)) => Value::Tensor(TensorInfo {
            dims: if a.dims == b.dims && op != ast::Operator::MatMult {
                a.dims.clone()
            } else {
                None
            },
            data_dependent_shape: a.data_dependent_shape || b.data_dependent_shape,
            maybe_none: false,
            assumed: a.assumed && b.assumed,
            opaque: false,
        }),
        (Value::Tensor(info), _) | (_, Value::Tensor(info)) => Value::Tensor(TensorInfo {
            dims: info.dims.clone(),
            data_dependent_shape: info.data_dependent_shape,
            maybe_none: false,
            assumed: info.assumed,
            opaque: false,
        }),
        (Value::Tensors(_), _) | (_, Value::Tensors(_)) => Value::Unknown,
        (Value::DataScalar(_), _) | (_, Value::DataScalar(_)) => {
            Value::DataScalar(Interval::default())
        }
        (Value::Size { origin, interval }, other) => {
            let origin = match other {
                Value::Size {
                    origin: other_origin,
                    ..
                } => origin.combine(other_origin),
                _ => origin.combine(&SizeOrigin::Static),
            };
            let interval = shift_interval(*interval, op, right_number);
            Value::Size { origin, interval }
        }
        (_, Value::Size { origin, .. }) => Value::Size {
            origin: origin.combine(&SizeOrigin::Static),
            interval: Interval::default(),
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

fn default_value(parameter: &ast::ParameterWithDefault) -> Value {
    match parameter.default.as_deref() {
        Some(Expr::NoneLiteral(_)) => Value::None,
        _ => Value::Unknown,
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

/// The elements a `for` loop over the value binds.
fn element_of(value: &Value) -> Value {
    match value {
        // The rows of an opaque or assumed value may be anything: only assumed to be tensors.
        Value::Tensor(info) | Value::Tensors(info) => Value::Tensor(TensorInfo {
            assumed: info.assumed || info.opaque,
            ..TensorInfo::default()
        }),
        Value::Tuple(items) => items.iter().fold(Value::Bottom, |acc, item| acc.join(item)),
        Value::DataScalars => Value::DataScalar(Interval::default()),
        Value::Modules => Value::Module(None),
        Value::Iter(inner) => (**inner).clone(),
        _ => Value::Unknown,
    }
}

/// What broadcasting two tensors with known dimensions forces on a dynamic dimension.
enum BroadcastConflict {
    /// Two different `Dim`s line up: they must be equal.
    Dims(Rc<DimDecl>, Rc<DimDecl>),
    /// A `Dim` lines up with a literal size other than 1: it is specialised to that size.
    Constant(Rc<DimDecl>, i64),
}

/// Aligns the dimensions of `a` and `b` from the right, as broadcasting does, when both ranks
/// are known, and finds the first dynamic dimension the operation constrains.
fn broadcast_conflict(a: &TensorInfo, b: &TensorInfo) -> Option<BroadcastConflict> {
    let (a, b) = (a.dims.as_ref()?, b.dims.as_ref()?);
    let (rank_a, rank_b) = (a.rank?, b.rank?);
    let aligned = |index: usize, from: usize, to: usize| to.checked_sub(from.checked_sub(index)?);
    let one_way = |x: &TensorDims, rank_x: usize, y: &TensorDims, rank_y: usize| {
        x.dynamic.iter().find_map(|(index, dim)| {
            if dim.automatic {
                return None;
            }
            let other = aligned(*index, rank_x, rank_y)?;
            if let Some((_, other_dim)) = y.dynamic.iter().find(|(i, _)| *i == other) {
                return (other_dim.name != dim.name && !other_dim.automatic)
                    .then(|| BroadcastConflict::Dims(dim.clone(), other_dim.clone()));
            }
            let (_, size) = y.literal.iter().find(|(i, _)| *i == other)?;
            (*size != 1).then(|| BroadcastConflict::Constant(dim.clone(), *size))
        })
    };
    one_way(a, rank_a, b, rank_b).or_else(|| one_way(b, rank_b, a, rank_a))
}

/// `x.reshape(-1, 4)` on `x: [batch, 2]`: the element count `2 * batch` must divide by 4, a guard
/// on the dynamic dimension unless its coefficient already does. Returns the dimension and the
/// multiple it would have to be.
fn reshape_guard(info: &TensorInfo, args: &[Expr]) -> Option<(Rc<DimDecl>, i64)> {
    let dims = info.dims.as_ref()?;
    let rank = dims.rank?;
    let [(dynamic_index, dim)] = dims.dynamic.as_slice() else {
        return None;
    };
    if dim.automatic {
        return None;
    }
    let mut coefficient: i64 = 1;
    for index in (0..rank).filter(|index| index != dynamic_index) {
        let (_, size) = dims.literal.iter().find(|(literal, _)| *literal == index)?;
        coefficient = coefficient.checked_mul(*size)?;
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
    if inferred == 0 || coefficient % fixed != 0 {
        let multiple = fixed / gcd(coefficient, fixed);
        return (multiple > 1 || inferred == 0).then(|| (dim.clone(), multiple));
    }
    None
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
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

fn compare_op(op: ast::CmpOp) -> Option<CompareOp> {
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
        .filter(
            |(_, value)| matches!(value, Value::Tensor(info) if !info.assumed && !info.maybe_none),
        )
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

/// `torch.nn` layers whose output keeps the input's first dimension (the batch): linear maps,
/// convolutions, norms, pooling, dropout, activations, embeddings.
fn keeps_batch_dim(qualified: &str) -> bool {
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
    )
}

/// Calling a layer that keeps the batch dimension: a tensor whose first dimension is the
/// input's (dynamic or not); nothing else is known of its dimensions.
fn layer_call(args: &[Value]) -> Value {
    match args.first() {
        Some(Value::Tensor(info)) => {
            let dims = info.dims.as_ref().map(|dims| {
                Rc::new(TensorDims {
                    rank: None,
                    dynamic: dims
                        .dynamic
                        .iter()
                        .filter(|(index, _)| *index == 0)
                        .cloned()
                        .collect(),
                    literal: Vec::new(),
                })
            });
            Value::Tensor(TensorInfo {
                dims,
                assumed: info.assumed,
                ..TensorInfo::default()
            })
        }
        _ => Value::opaque_tensor(),
    }
}
