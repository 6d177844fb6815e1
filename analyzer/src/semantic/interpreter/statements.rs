//! The interpreter's statements (blocks, `if`, loops, assignments) and the conditions that
//! decide them (truthiness of tensors, sizes and data).

use std::rc::Rc;

use ruff_text_size::Ranged;

use crate::names;
use crate::semantic::symbolic::SymSize;
use crate::semantic::value::{DimDecl, SizeOrigin};
use crate::syntax::ast::{self, Expr, Stmt};
use crate::syntax::is_number_literal;

use super::{
    BoolContext, CompareOp, Env, EventKind, Guard, GuardKind, Interpreter, Interval, MAX_UNROLL,
    TensorInfo, TensorNames, Value, compare_op, element_of, exact_items, narrow, number_of,
    raises_only, self_attribute, size_guard, tensor_locals,
};

impl Interpreter<'_, '_> {
    /// A method of a traced module that assigns `self.<name>` (`self.src_mask = mask`, a cache
    /// built on first use) reads back, later in the same call, what it assigned: each such
    /// attribute starts as a local holding what `self.<name>` was before the call, so branches
    /// that assign it and branches that do not join as Python's do.
    pub(super) fn seed_module_attributes(
        &mut self,
        def: &ast::StmtFunctionDef,
        parameters: &[&ast::ParameterWithDefault],
        env: &mut Env,
    ) {
        let Some(receiver) = parameters.first().map(|p| p.parameter.name.as_str()) else {
            return;
        };
        let Some(module @ Value::Module(..)) = env.locals.get(receiver).cloned() else {
            return;
        };
        let mut assigned = Vec::new();
        assigned_attributes(&def.body, receiver, &mut assigned);
        let emit = std::mem::replace(&mut self.emit, false);
        let class = match &module {
            Value::Module(Some(class), _) => Some(*class),
            _ => None,
        };
        // The script ran the model before exporting it (a warm-up, a check of its outputs):
        // the export starts from the state those calls left.
        let ran_before = !self.constructing
            && class.is_some_and(|class| self.run_before_export.contains(&class));
        for name in assigned {
            let warmed = class
                .and_then(|class| self.warmed.get(&class))
                .and_then(|fields| fields.get(&name))
                .cloned();
            // A cache `__init__` leaves `None` (`self.src_mask = None`) is `None` on the model
            // an export script builds and exports: the call that fills it is the one traced.
            let lazily_filled = class.is_some_and(|class| {
                self.constructed
                    .get(&class)
                    .is_some_and(|fields| fields.get(&name) == Some(&Value::None))
            });
            let key = attribute_key(receiver, &name);
            let before = match warmed {
                // What the calls before left, as the construction pass followed them.
                Some(value) => value,
                // Calls the analysis did not follow: filled or not, it cannot tell.
                None if ran_before => Value::Unknown,
                None if lazily_filled => Value::None,
                None => self.attribute(&module, &name),
            };
            if ran_before {
                env.warmed.push(key.clone());
            }
            env.locals.insert(key, before);
        }
        self.emit = emit;
    }

    // ---------------------------------------------------------------------------------------
    // Statements

    /// Runs a block; returns whether control can fall off its end.
    pub(super) fn exec_block(&mut self, body: &[Stmt], env: &mut Env) -> bool {
        for stmt in body {
            if !self.exec(stmt, env) {
                return false;
            }
        }
        true
    }

    pub(super) fn exec(&mut self, stmt: &Stmt, env: &mut Env) -> bool {
        match stmt {
            Stmt::Expr(expr) => {
                self.eval(&expr.value, env);
            }
            // `del stages["c"]`: the key is gone from the mapping.
            Stmt::Delete(delete) => {
                for target in &delete.targets {
                    let Expr::Subscript(subscript) = target else {
                        continue;
                    };
                    if let Value::Object(mapping) = self.eval(&subscript.value, env) {
                        match self.eval(&subscript.slice, env) {
                            Value::Str(key) => mapping.remove(&key),
                            _ => mapping.forget(),
                        }
                    }
                }
            }
            Stmt::Assign(assign) => {
                let value = self.eval(&assign.value, env);
                for target in &assign.targets {
                    if let (Some(attribute), true) = (self_attribute(target), self.emit) {
                        self.reset_in_trace.insert(attribute.to_owned());
                    }
                    if let Some(attribute) = data_of_self_attribute(target) {
                        self.record(
                            EventKind::DataAttribute {
                                tensor: format!("self.{attribute}"),
                                assigned: true,
                            },
                            target.range(),
                        );
                    }
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
                // A counter on the module: a Python number, not a buffer or a parameter (those
                // are tensors, updated in the graph).
                if let Some(attribute) = self_attribute(&assign.target) {
                    let python_value = matches!(
                        left,
                        Value::Size { .. }
                            | Value::DataScalar(_)
                            | Value::Unknown
                            | Value::Number(_)
                    ) && !matches!(right, Value::Tensor(_) | Value::Tensors(_));
                    if python_value
                        && !self.reset_in_trace.contains(attribute)
                        && self.starts_as_number(attribute, env)
                    {
                        self.record(
                            EventKind::ModuleStateChanged {
                                attribute: attribute.to_owned(),
                            },
                            assign.target.range(),
                        );
                    }
                }
                let right_number = number_of(&assign.value).or_else(|| right.known_constant());
                // `out += x` of tensors broadcasts as `out + x` does, and keeps the shape.
                let value = self.operation(&left, assign.op, &right, right_number, assign.range());
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
                // While its condition is decided on Python numbers (`while size > 4:` halving a
                // known size in `__init__`), the loop runs one iteration at a time, as Python
                // does; from the first condition it cannot decide, it runs abstractly.
                if !leaves_iteration(&while_stmt.body) {
                    let mut iterations = 0;
                    while iterations < MAX_UNROLL && self.unroll_budget > 0 {
                        match self.static_truth(&while_stmt.test, env) {
                            Some(true) => {
                                iterations += 1;
                                self.unroll_budget -= 1;
                                if !self.exec_block(&while_stmt.body, env) {
                                    return false;
                                }
                            }
                            Some(false) => return self.exec_block(&while_stmt.orelse, env),
                            None => break,
                        }
                    }
                }
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
                // A loop over items known one by one runs once per item, in order, as Python
                // does: `for i in range(depth)` building layers, `for down in self.down_path`
                // halving a map at each level. (A `break` or `continue` would need the state
                // of the iterations it skips: such a loop runs abstractly.)
                if let Some(items) = exact_items(&iterable).filter(|items| {
                    items.len() <= MAX_UNROLL.min(self.unroll_budget)
                        && !leaves_iteration(&for_stmt.body)
                }) {
                    self.unroll_budget -= items.len();
                    for item in items.iter() {
                        self.bind(&for_stmt.target, item.clone(), env);
                        if !self.exec_block(&for_stmt.body, env) {
                            return false;
                        }
                    }
                    return self.exec_block(&for_stmt.orelse, env);
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
                    let qualified = self
                        .model
                        .imported_from_outside(&qualified)
                        .unwrap_or(qualified);
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

    pub(super) fn exec_if(&mut self, if_stmt: &ast::StmtIf, env: &mut Env) -> bool {
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
        // Whether a clause runs depends on a condition the analysis cannot decide.
        let mut undecided = false;
        // ... on the state the script's calls before the export left (see `Env::warmed`).
        let mut on_warmed_state = false;
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
            undecided |= taken.is_none();
            on_warmed_state |= taken.is_none() && test.is_some_and(|test| reads_warmed(test, env));
            let mut branch_env = env.clone();
            self.undecided += usize::from(undecided);
            self.conditional += usize::from(on_warmed_state);
            let falls_through = self.exec_block(body, &mut branch_env);
            self.conditional -= usize::from(on_warmed_state);
            self.undecided -= usize::from(undecided);
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

    /// What `expr` is, evaluated for its value only (no finding recorded), when it is a Python
    /// constant the program computes: a number, a string, `None`, or a tuple of those.
    fn known_value(&mut self, expr: &Expr, env: &mut Env) -> Option<Value> {
        let value = self.quiet_eval(expr, env);
        known_constant(&value).cloned()
    }

    /// `expr`'s value, evaluated again without recording events (the statement evaluates it
    /// with its events in its turn).
    fn quiet_eval(&mut self, expr: &Expr, env: &mut Env) -> Value {
        let emit = std::mem::replace(&mut self.emit, false);
        let value = self.eval(expr, env);
        self.emit = emit;
        value
    }

    /// The truth of a condition the exporter decides the same way on every trace: `self.training`
    /// (models are exported in eval mode), `torch.jit.is_scripting()`, `x is None` for a value
    /// known to be `None` or known not to be, a flag or comparison of values the program
    /// computed (`config.use_cuda`, `rnn_type in ["LSTM", "GRU"]`).
    pub(super) fn static_truth(&mut self, expr: &Expr, env: &mut Env) -> Option<bool> {
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
            Expr::Attribute(attribute)
                if matches!(&*attribute.value, Expr::Name(name) if name.id.as_str() == "self")
                    && attribute.attr.as_str() == "training" =>
            {
                Some(false)
            }
            // A flag or a name the program set to a known value (`config.use_bias`,
            // `up_mode`): Python decides it the same way on every trace.
            // ... or arithmetic on them (`if dim % 2:` with `dim` a known number).
            Expr::Name(_) | Expr::Attribute(_) | Expr::BinOp(_) | Expr::Subscript(_)
                if plain_operand(expr) =>
            {
                match self.known_value(expr, env)? {
                    Value::Number(number) => Some(number != 0.0),
                    Value::Str(text) => Some(!text.is_empty()),
                    Value::None => Some(false),
                    _ => None,
                }
            }
            // An entry script whose export call the tracer reaches runs as `__main__`, and
            // its `if __name__ == "__main__":` block is what reaches the call: the values it
            // computes are not joined with a path on which it did not run. (A file of
            // module-level `model` and `example_args` is imported: the block does not run.)
            Expr::Compare(compare)
                if self.constructing
                    && self.file == 0
                    && self
                        .model
                        .entry
                        .as_ref()
                        .is_some_and(|entry| entry.runs_as_main)
                    && !env.binds("__name__")
                    && main_guard_truth(compare).is_some() =>
            {
                main_guard_truth(compare)
            }
            Expr::Compare(compare) if self.torch_version_truth(compare, env).is_some() => {
                self.torch_version_truth(compare, env)
            }
            Expr::Compare(compare) if known_comparison(compare) => {
                let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
                    return None;
                };
                let left = self.quiet_eval(&compare.left, env);
                let right = self.quiet_eval(right, env);
                match (known_constant(&left), known_constant(&right)) {
                    (Some(left), Some(right)) => compare_known(left, *op, right),
                    _ => size_truth(&left, *op, &right),
                }
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
                    Value::Module(..)
                    | Value::Sequential(_)
                    | Value::Modules(..)
                    | Value::Tuple(_)
                    | Value::Shape(_)
                    | Value::Size { .. } => Some(!is),
                    _ => None,
                }
            }
            Expr::Call(call) if call.arguments.keywords.is_empty() => {
                let qualified = match self.eval(&call.func, env) {
                    Value::Qualified(qualified) => qualified.to_string(),
                    // A function of a followed library (transformers' `is_tracing`), by its
                    // module and name.
                    Value::Function(index) => {
                        let function = &self.model.functions[index];
                        let module = self.model.source_in(function.file).module?;
                        format!("{module}.{}", function.def.name)
                    }
                    _ => return None,
                };
                if qualified == "builtins.isinstance" {
                    let [object, classes] = &call.arguments.args[..] else {
                        return None;
                    };
                    return self.isinstance_truth(object, classes, env);
                }
                let last = qualified.rsplit('.').next().unwrap_or_default();
                // transformers' `is_tracing(tensor=None)` is true under dynamo and export (it
                // asks `is_torchdynamo_compiling()`, and whether the tensor is fake); torch.jit's
                // `is_tracing()` is false there.
                if last == "is_tracing" && qualified.starts_with("transformers.") {
                    return (call.arguments.args.len() <= 1).then_some(true);
                }
                if !call.arguments.args.is_empty() {
                    return None;
                }
                match last {
                    "is_scripting" | "is_tracing" | "_is_tracing" | "_get_tracing_state"
                    | "is_in_onnx_export" => Some(false),
                    "is_compiling"
                    | "is_dynamo_compiling"
                    | "is_torchdynamo_compiling"
                    | "is_torchdynamo_exporting"
                    | "is_exporting" => Some(true),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `torch.__version__ >= "1.5.0"` (or through `packaging.version.parse` on both sides)
    /// against a version older than 2.1: every torch that has `torch.export` is newer, so
    /// Python decides it the same way wherever the model exports. A newer version is the
    /// user's installation, which the analysis does not read.
    fn torch_version_truth(&mut self, compare: &ast::ExprCompare, env: &mut Env) -> Option<bool> {
        let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
            return None;
        };
        let (op, literal) = if self.is_torch_version(&compare.left, env) {
            (compare_op(*op)?, right)
        } else if self.is_torch_version(right, env) {
            (compare_op(*op)?.flipped(), &*compare.left)
        } else {
            return None;
        };
        let older = version_literal(self, literal, env)? < (2, 1);
        if !older {
            return None;
        }
        match op {
            CompareOp::Gt | CompareOp::GtE | CompareOp::NotEq => Some(true),
            CompareOp::Lt | CompareOp::LtE | CompareOp::Eq => Some(false),
        }
    }

    /// `torch.__version__`, `torch.version.__version__`, or a version parser applied to one.
    fn is_torch_version(&mut self, expr: &Expr, env: &mut Env) -> bool {
        match expr {
            Expr::Attribute(attribute) if attribute.attr.as_str() == "__version__" => matches!(
                self.eval(expr, env),
                Value::Qualified(qualified)
                    if matches!(&*qualified, "torch.__version__" | "torch.version.__version__")
            ),
            Expr::Call(call) => match &*call.arguments.args {
                [argument] => {
                    self.is_torch_version(argument, env) && self.version_parser(call, env)
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `call` is a version parser (`packaging.version.parse`, `Version`, `LooseVersion`).
    fn version_parser(&mut self, call: &ast::ExprCall, env: &mut Env) -> bool {
        matches!(
            self.eval(&call.func, env),
            Value::Qualified(qualified) if matches!(
                &*qualified,
                "packaging.version.parse"
                    | "packaging.version.Version"
                    | "distutils.version.LooseVersion"
                    | "pkg_resources.parse_version"
            )
        )
    }

    /// `isinstance(object, classes)` when the object is a value the program built from a
    /// class the analysis knows and `classes` names workspace classes: a model that builds its
    /// backbone by the configuration's class (`if isinstance(config, MambaConfig)`) takes the
    /// branch its configuration selects, as Python does on every trace.
    fn isinstance_truth(&mut self, object: &Expr, classes: &Expr, env: &mut Env) -> Option<bool> {
        let emit = std::mem::replace(&mut self.emit, false);
        let object = self.eval(object, env);
        let classes = self.eval(classes, env);
        self.emit = emit;
        let targets: Vec<usize> = match classes {
            Value::Tuple(items) => items
                .iter()
                .map(|item| self.workspace_class(item))
                .collect::<Option<_>>()?,
            single => vec![self.workspace_class(&single)?],
        };
        // The class the object was built from; `None` for one that is no workspace class's
        // instance (a `SimpleNamespace`, a number, a string, `None`), which no workspace class
        // can describe.
        let class = match object {
            Value::Object(instance) => instance.class,
            Value::Module(Some(class), _) => Some(class),
            Value::Building(index) => Some(self.building[index].class?),
            // A `torch.nn` layer is no workspace class's instance either.
            Value::Number(_)
            | Value::Str(_)
            | Value::None
            | Value::Layer(_)
            | Value::Sequential(_) => None,
            _ => return None,
        };
        let Some(class) = class else {
            return Some(false);
        };
        let lineage = self.model.lineage(class);
        if targets.iter().any(|target| lineage.contains(target)) {
            return Some(true);
        }
        // A base of an installed library's (`nn.Module`) never derives from the user's classes;
        // a base the analysis could not resolve, or a lineage cut at its bound, might.
        let complete = lineage.len() < crate::semantic::SemanticModel::MAX_LINEAGE
            && lineage.iter().all(|class| {
                self.model.classes[*class]
                    .bases
                    .iter()
                    .all(|base| matches!(base, Value::Class(_) | Value::Qualified(_)))
            });
        complete.then_some(false)
    }

    /// The workspace class a value names (`MambaConfig`, imported from another file).
    fn workspace_class(&self, value: &Value) -> Option<usize> {
        match value {
            Value::Class(class) => Some(*class),
            Value::Qualified(name) => match self.model.resolve_qualified(name)? {
                Value::Class(class) => Some(class),
                _ => None,
            },
            _ => None,
        }
    }

    /// Runs a loop body twice, so bindings made late in one iteration reach the next.
    pub(super) fn exec_loop(
        &mut self,
        body: &[Stmt],
        env: &mut Env,
        mut before: impl FnMut(&mut Self, &mut Env),
    ) {
        self.looping += 1;
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
        self.looping -= 1;
    }

    /// `b, *spatial, c = x.shape` / `first, *rest = items`: the names before and after the
    /// star take the sequence's first and last items, the starred name a tuple of the middle
    /// ones, when the sequence's length is known. Whether it bound the targets.
    fn bind_starred(&mut self, elts: &[Expr], value: &Value, env: &mut Env) -> bool {
        let Some(star) = elts.iter().position(Expr::is_starred_expr) else {
            return false;
        };
        if elts
            .iter()
            .filter(|element| element.is_starred_expr())
            .count()
            > 1
        {
            return false;
        }
        let items: Vec<Value> = match value {
            Value::Tuple(items) | Value::Modules(_, Some(items)) => items.to_vec(),
            Value::Shape(info) => match info.dims.as_ref().and_then(|dims| dims.rank) {
                Some(rank) => (0..rank)
                    .map(|index| self.size_of(info, index as i64))
                    .collect(),
                None => return false,
            },
            _ => return false,
        };
        let after = elts.len() - star - 1;
        if items.len() < star + after {
            return false;
        }
        let middle = items.len() - after;
        for (index, element) in elts.iter().enumerate() {
            match element {
                Expr::Starred(starred) => {
                    let rest = Value::Tuple(items[star..middle].iter().cloned().collect());
                    self.bind(&starred.value, rest, env);
                }
                element if index < star => self.bind(element, items[index].clone(), env),
                element => self.bind(element, items[middle + index - star - 1].clone(), env),
            }
        }
        true
    }

    pub(super) fn bind(&mut self, target: &Expr, value: Value, env: &mut Env) {
        match target {
            Expr::Name(name) => {
                env.checked
                    .retain(|fact| !fact.names.iter().any(|read| read == name.id.as_str()));
                self.note_shape(name.range(), &value, env.locals.get(name.id.as_str()), true);
                env.locals.insert(name.id.to_string(), value);
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })
                if self.bind_starred(elts, &value, env) => {}
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let has_star = elts.iter().any(Expr::is_starred_expr);
                for (index, element) in elts.iter().enumerate() {
                    let item = match &value {
                        // `for attn, ff in self.layers:` over `ModuleList([Attn(), FF()])`s too.
                        Value::Tuple(items) | Value::Modules(_, Some(items))
                            if !has_star && items.len() == elts.len() =>
                        {
                            items[index].clone()
                        }
                        Value::Modules(element, None) if !has_star => (**element).clone(),
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
            // `self.<name> = ...` in an `__init__` the construction pass runs; `config.x = ...`
            // on a configuration object, which every holder of it then reads.
            Expr::Attribute(attribute) => {
                if let Expr::Name(receiver) = &*attribute.value {
                    if let Some(&Value::Building(index)) = env.locals.get(receiver.id.as_str()) {
                        self.write_field(index, attribute.attr.as_str(), value);
                        return;
                    }
                    // `self.src_mask = mask` in traced code: what this call reads back.
                    let key = attribute_key(receiver.id.as_str(), attribute.attr.as_str());
                    if let Some(held) = env.locals.get_mut(&key) {
                        *held = value;
                        return;
                    }
                }
                let emit = std::mem::replace(&mut self.emit, false);
                let receiver = self.eval(&attribute.value, env);
                self.emit = emit;
                if let Value::Object(instance) = receiver {
                    self.set_field(&instance, Some(attribute.attr.as_str()), value);
                }
            }
            // `config["max_len"] = 64` on a mapping: what every holder of it then reads.
            Expr::Subscript(subscript) => {
                let receiver = self.eval(&subscript.value, env);
                let key = self.eval(&subscript.slice, env);
                match receiver {
                    Value::Object(mapping) => {
                        let key = match &key {
                            Value::Str(key) => Some(key.as_ref()),
                            _ => None,
                        };
                        self.set_field(&mapping, key, value);
                    }
                    // `feats[i] = conv(feats[i])` on a list whose items are known: that item
                    // (any of them, at an index the analysis cannot read) is the new value.
                    Value::Tuple(items) => {
                        if let Expr::Name(list) = &*subscript.value {
                            let position = key
                                .known_constant()
                                .and_then(crate::semantic::value::integer)
                                .and_then(|index| {
                                    let length = i64::try_from(items.len()).ok()?;
                                    let index = if index < 0 { index + length } else { index };
                                    usize::try_from(index).ok()
                                })
                                .filter(|index| *index < items.len());
                            let updated: Vec<Value> = items
                                .iter()
                                .enumerate()
                                .map(|(index, item)| match position {
                                    Some(position) if position == index => value.clone(),
                                    Some(_) => item.clone(),
                                    None => item.join(&value),
                                })
                                .collect();
                            env.locals
                                .insert(list.id.to_string(), Value::Tuple(Rc::from(updated)));
                        }
                    }
                    // `self.blocks[0] = nn.Identity()` in `__init__`: the modules are no longer
                    // the ones appended.
                    Value::Modules(element, Some(_)) => {
                        if let Expr::Attribute(field) = &*subscript.value {
                            if let Expr::Name(owner) = &*field.value {
                                if let Some(&Value::Building(index)) =
                                    env.locals.get(owner.id.as_str())
                                {
                                    let element = Rc::new(element.join(&value));
                                    let modules = Value::Modules(element, None);
                                    self.write_field(index, field.attr.as_str(), modules);
                                }
                            }
                        }
                    }
                    // `self[0] = nn.Identity()` in a subclass of `nn.Sequential`, or
                    // `self.features[0] = ...`: a step replaced, which the analysis does not
                    // place.
                    Value::Building(index) => {
                        if let Some(building) = self.building.get_mut(index) {
                            building
                                .fields
                                .remove(super::construction::SEQUENTIAL_FIELD);
                        }
                    }
                    Value::Sequential(_) => match &*subscript.value {
                        Expr::Name(name) => {
                            env.locals
                                .insert(name.id.to_string(), Value::Module(None, None));
                        }
                        Expr::Attribute(field) => {
                            if let Expr::Name(owner) = &*field.value {
                                if let Some(&Value::Building(index)) =
                                    env.locals.get(owner.id.as_str())
                                {
                                    self.write_field(
                                        index,
                                        field.attr.as_str(),
                                        Value::Module(None, None),
                                    );
                                }
                            }
                        }
                        _ => {}
                    },
                    // `self.cache[:b] = x`: writing through a slice of a fixed-size tensor
                    // takes the same view a read does, with the same guard.
                    Value::Tensor(_) if self_attribute(&subscript.value).is_some() => {
                        self.check_buffer_slice(&subscript.slice, env);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    // ---------------------------------------------------------------------------------------
    // Conditions

    /// Evaluates an expression whose truth value Python takes.
    pub(super) fn truthiness(&mut self, expr: &Expr, context: BoolContext, env: &mut Env) {
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
    pub(super) fn truthiness_value(
        &mut self,
        expr: &Expr,
        context: BoolContext,
        env: &mut Env,
    ) -> Value {
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

    pub(super) fn record_truthiness(&mut self, value: Value, expr: &Expr, context: BoolContext) {
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
            Value::Size {
                origin, interval, ..
            } => match size_guard(
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

    /// Whether the class of `self` sets `self.<attribute>` to a number literal somewhere
    /// (`self.steps = 0` in `__init__`): then the attribute is a Python number, not a tensor.
    pub(super) fn starts_as_number(&self, attribute: &str, env: &Env) -> bool {
        let Some(class) = env.class else {
            return false;
        };
        self.model.classes[class].methods.values().any(|&function| {
            self.model.functions[function].def.body.iter().any(|stmt| {
                let Stmt::Assign(assign) = stmt else {
                    return false;
                };
                (is_number_literal(&assign.value)
                    || matches!(&*assign.value, Expr::BooleanLiteral(_)))
                    && assign
                        .targets
                        .iter()
                        .any(|target| self_attribute(target) == Some(attribute))
            })
        })
    }
}

/// A comparison whose operands may be Python constants: no tensor or size is spelled in it (a
/// size compared with a number is a guard, decided elsewhere).
fn known_comparison(compare: &ast::ExprCompare) -> bool {
    let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
        return false;
    };
    !matches!(op, ast::CmpOp::Is | ast::CmpOp::IsNot)
        && plain_operand(&compare.left)
        && plain_operand(right)
}

/// An operand of a comparison that may be a Python constant: a name, an attribute, a literal,
/// a display, an item, arithmetic on those, `len` of one (`i != len(self.blocks) - 1`), or a
/// size read (`x.size(1)`, `x.dim()`); no other call, whose effects evaluating it to decide the
/// branch would repeat.
fn plain_operand(expr: &Expr) -> bool {
    match expr {
        Expr::Name(_)
        | Expr::Attribute(_)
        | Expr::StringLiteral(_)
        | Expr::NumberLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::Tuple(_)
        | Expr::List(_)
        | Expr::Set(_)
        | Expr::Subscript(_) => true,
        Expr::BinOp(binary) => plain_operand(&binary.left) && plain_operand(&binary.right),
        Expr::UnaryOp(unary) => plain_operand(&unary.operand),
        Expr::Call(call) if call.arguments.keywords.is_empty() => match &*call.func {
            Expr::Name(name) => {
                name.id.as_str() == "len"
                    && matches!(call.arguments.args.as_ref(), [argument] if plain_operand(argument))
            }
            // `x.size(1)`, `x.dim()`: a size read, as `x.shape[1]` is.
            Expr::Attribute(method) => {
                matches!(method.attr.as_str(), "size" | "dim")
                    && plain_operand(&method.value)
                    && call.arguments.args.iter().all(is_number_literal)
                    && call.arguments.args.len() <= 1
            }
            _ => false,
        },
        _ => false,
    }
}

/// `value` when it is a Python constant (or a tuple of them) the program computed.
fn known_constant(value: &Value) -> Option<&Value> {
    let constant = |value: &Value| matches!(value, Value::Number(_) | Value::Str(_) | Value::None);
    match value {
        Value::Tuple(items) if items.iter().all(constant) => Some(value),
        value if constant(value) => Some(value),
        _ => None,
    }
}

/// `left <op> right` on sizes the exporter decides without a guard: their difference is the
/// same at every size the declared ranges allow (`L > S` of one length read twice), or keeps
/// one sign over them (`n > 1` under `min=32`), for a size of a dynamic dimension. The exporter then traces only the branch taken,
/// and so does the analysis. A `Dim.AUTO`, a `ShapeVar` or a bound it cannot read decides
/// nothing here.
fn size_truth(left: &Value, op: ast::CmpOp, right: &Value) -> Option<bool> {
    let op = compare_op(op)?;
    // One size computed from a dimension, read twice: equal.
    if let (
        Value::Size {
            origin: SizeOrigin::Dynamic { dim: a, .. },
            sym: None,
            ..
        },
        Value::Size {
            origin: SizeOrigin::Dynamic { dim: b, .. },
            sym: None,
            ..
        },
    ) = (left, right)
    {
        if DimDecl::same_derived(a, b) {
            return Some(matches!(
                op,
                CompareOp::Eq | CompareOp::GtE | CompareOp::LtE
            ));
        }
    }
    let sym = |value: &Value| match value {
        Value::Size { sym: Some(sym), .. } => Some((**sym).clone()),
        Value::Number(number) => crate::semantic::value::integer(*number).map(SymSize::constant),
        _ => None,
    };
    let (left, right) = (sym(left)?, sym(right)?);
    // Static sizes keep their own finding: the graph keeps the example's side (PT402).
    if !left.is_dynamic() && !right.is_dynamic() {
        return None;
    }
    if left
        .dims()
        .chain(right.dims())
        .any(|dim| dim.automatic || dim.unbacked || dim.bounds_unknown)
    {
        return None;
    }
    let (low, high) = left.sub(&right)?.range();
    let positive = low.is_some_and(|low| low > 0);
    let non_negative = low.is_some_and(|low| low >= 0);
    let negative = high.is_some_and(|high| high < 0);
    let non_positive = high.is_some_and(|high| high <= 0);
    match op {
        CompareOp::Gt => (positive || non_positive).then_some(positive),
        CompareOp::GtE => (non_negative || negative).then_some(non_negative),
        CompareOp::Lt => (negative || non_negative).then_some(negative),
        CompareOp::LtE => (non_positive || positive).then_some(non_positive),
        CompareOp::Eq => (non_negative && non_positive || positive || negative)
            .then_some(non_negative && non_positive),
        CompareOp::NotEq => {
            (non_negative && non_positive || positive || negative).then_some(positive || negative)
        }
    }
}

/// `left <op> right` on Python constants, as Python decides it; `None` where it cannot tell.
fn compare_known(left: &Value, op: ast::CmpOp, right: &Value) -> Option<bool> {
    #[allow(clippy::float_cmp)] // Configuration numbers compared as Python compares them.
    let equal = |a: &Value, b: &Value| match (a, b) {
        (Value::Number(a), Value::Number(b)) => Some(a == b),
        (Value::Str(a), Value::Str(b)) => Some(a == b),
        (Value::None, Value::None) => Some(true),
        (
            Value::Number(_) | Value::Str(_) | Value::None,
            Value::Number(_) | Value::Str(_) | Value::None,
        ) => Some(false),
        _ => None,
    };
    let member = |item: &Value, container: &Value| match container {
        Value::Tuple(items) => {
            let found: Option<Vec<bool>> = items.iter().map(|other| equal(item, other)).collect();
            found.map(|found| found.contains(&true))
        }
        _ => None,
    };
    match (op, left, right) {
        (ast::CmpOp::Eq, ..) => equal(left, right),
        (ast::CmpOp::NotEq, ..) => equal(left, right).map(|equal| !equal),
        (ast::CmpOp::In, ..) => member(left, right),
        (ast::CmpOp::NotIn, ..) => member(left, right).map(|found| !found),
        (ast::CmpOp::Lt, Value::Number(a), Value::Number(b)) => Some(a < b),
        (ast::CmpOp::LtE, Value::Number(a), Value::Number(b)) => Some(a <= b),
        (ast::CmpOp::Gt, Value::Number(a), Value::Number(b)) => Some(a > b),
        (ast::CmpOp::GtE, Value::Number(a), Value::Number(b)) => Some(a >= b),
        _ => None,
    }
}

/// `<attribute>` of an assignment target `self.<attribute>.data`.
fn data_of_self_attribute(target: &Expr) -> Option<&str> {
    let Expr::Attribute(data) = target else {
        return None;
    };
    if data.attr.as_str() != "data" {
        return None;
    }
    self_attribute(&data.value)
}

/// Whether a loop body leaves an iteration early (`break`, `continue`) other than inside a
/// nested loop or function, which those statements leave instead.
fn leaves_iteration(body: &[Stmt]) -> bool {
    body.iter().any(|stmt| match stmt {
        Stmt::Break(_) | Stmt::Continue(_) => true,
        Stmt::If(if_stmt) => {
            leaves_iteration(&if_stmt.body)
                || if_stmt
                    .elif_else_clauses
                    .iter()
                    .any(|clause| leaves_iteration(&clause.body))
        }
        Stmt::With(with) => leaves_iteration(&with.body),
        Stmt::Try(try_stmt) => {
            leaves_iteration(&try_stmt.body)
                || leaves_iteration(&try_stmt.orelse)
                || leaves_iteration(&try_stmt.finalbody)
                || try_stmt.handlers.iter().any(|handler| {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    leaves_iteration(&handler.body)
                })
        }
        Stmt::Match(match_stmt) => match_stmt
            .cases
            .iter()
            .any(|case| leaves_iteration(&case.body)),
        // A nested loop's `else` runs in this iteration.
        Stmt::For(inner) => leaves_iteration(&inner.orelse),
        Stmt::While(inner) => leaves_iteration(&inner.orelse),
        _ => false,
    })
}

/// `__name__ == "__main__"` (either way round, or `!=`) in a script run as `__main__`.
fn main_guard_truth(compare: &ast::ExprCompare) -> Option<bool> {
    let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
        return None;
    };
    let is_name = |expr: &Expr| matches!(expr, Expr::Name(name) if name.id.as_str() == "__name__");
    let is_main = |expr: &Expr| names::string_literal(expr) == Some("__main__");
    if !(is_name(&compare.left) && is_main(right) || is_main(&compare.left) && is_name(right)) {
        return None;
    }
    match op {
        ast::CmpOp::Eq => Some(true),
        ast::CmpOp::NotEq => Some(false),
        _ => None,
    }
}

/// Whether `test` reads an attribute whose state the script's calls before the export left.
fn reads_warmed(test: &Expr, env: &Env) -> bool {
    !env.warmed.is_empty()
        && crate::syntax::ast::helpers::any_over_expr(test, &|expr: &Expr| match expr {
            Expr::Attribute(attribute) => match &*attribute.value {
                Expr::Name(receiver) => env.warmed.contains(&attribute_key(
                    receiver.id.as_str(),
                    attribute.attr.as_str(),
                )),
                _ => false,
            },
            _ => false,
        })
}

/// The local that holds `receiver.name` while a method assigns it; not a Python name, so it
/// never meets one.
pub(super) fn attribute_key(receiver: &str, name: &str) -> String {
    format!("{receiver}.{name}")
}

/// The attributes of `receiver` that a body assigns (`self.x = ...`, `self.x += ...`), outside
/// nested functions and classes.
pub(super) fn assigned_attributes(body: &[Stmt], receiver: &str, out: &mut Vec<String>) {
    let target = |target: &Expr, out: &mut Vec<String>| {
        let mut targets = vec![target];
        while let Some(target) = targets.pop() {
            match target {
                Expr::Attribute(attribute)
                    if matches!(&*attribute.value, Expr::Name(name) if name.id.as_str() == receiver)
                        && !out.iter().any(|seen| seen == attribute.attr.as_str()) =>
                {
                    out.push(attribute.attr.to_string());
                }
                Expr::Tuple(ast::ExprTuple { elts, .. })
                | Expr::List(ast::ExprList { elts, .. }) => {
                    targets.extend(elts.iter());
                }
                Expr::Starred(starred) => targets.push(&starred.value),
                _ => {}
            }
        }
    };
    for stmt in body {
        match stmt {
            Stmt::Assign(assign) => {
                for assigned in &assign.targets {
                    target(assigned, out);
                }
            }
            Stmt::AnnAssign(assign) => target(&assign.target, out),
            Stmt::AugAssign(assign) => target(&assign.target, out),
            Stmt::If(if_stmt) => {
                assigned_attributes(&if_stmt.body, receiver, out);
                for clause in &if_stmt.elif_else_clauses {
                    assigned_attributes(&clause.body, receiver, out);
                }
            }
            Stmt::For(for_stmt) => {
                target(&for_stmt.target, out);
                assigned_attributes(&for_stmt.body, receiver, out);
                assigned_attributes(&for_stmt.orelse, receiver, out);
            }
            Stmt::While(while_stmt) => {
                assigned_attributes(&while_stmt.body, receiver, out);
                assigned_attributes(&while_stmt.orelse, receiver, out);
            }
            Stmt::With(with) => assigned_attributes(&with.body, receiver, out),
            Stmt::Try(try_stmt) => {
                assigned_attributes(&try_stmt.body, receiver, out);
                assigned_attributes(&try_stmt.orelse, receiver, out);
                assigned_attributes(&try_stmt.finalbody, receiver, out);
                for ast::ExceptHandler::ExceptHandler(handler) in &try_stmt.handlers {
                    assigned_attributes(&handler.body, receiver, out);
                }
            }
            Stmt::Match(match_stmt) => {
                for case in &match_stmt.cases {
                    assigned_attributes(&case.body, receiver, out);
                }
            }
            _ => {}
        }
    }
}

/// The major and minor version a literal names: `"1.5.0"`, or a version parser applied to it.
fn version_literal(
    interpreter: &mut Interpreter<'_, '_>,
    expr: &Expr,
    env: &mut Env,
) -> Option<(u32, u32)> {
    match expr {
        Expr::StringLiteral(literal) => {
            let text = literal.value.to_str();
            let mut parts = text.split('.').map(|part| {
                let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
                digits.parse::<u32>().ok()
            });
            let major = parts.next()??;
            let minor = parts.next().flatten().unwrap_or(0);
            Some((major, minor))
        }
        Expr::Call(call) if interpreter.version_parser(call, env) => match &*call.arguments.args {
            [argument] => version_literal(interpreter, argument, env),
            _ => None,
        },
        _ => None,
    }
}
