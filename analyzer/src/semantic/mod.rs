//! The semantic model: what the names in a file mean, which code is traced, which values are
//! tensors, and what happens to them.
//!
//! Building it runs three passes over the parsed file: module-level bindings and classes,
//! `nn.Module` detection and attributes, then an abstract interpreter over every traced
//! function (each `forward` and what it calls). The interpreter records [`Event`]s — a tensor
//! used as a condition, a data-dependent number used as a loop count — and the rules turn
//! events into diagnostics.

mod custom_ops;
mod events;
mod interpreter;
pub(crate) mod names;
mod shapes;
pub(crate) mod torch_api;

/// Whether a qualified base class name makes a class an `nn.Module` (for the workspace index).
pub(crate) fn torch_api_is_module_base(qualified: &str) -> bool {
    torch_api::is_module_base(qualified)
}
pub(crate) mod value;

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use ruff_text_size::{Ranged, TextSize};

pub(crate) use custom_ops::{CustomOp, Implementation, OpDefinition, registrations};
pub(crate) use events::{BoolContext, Event, EventKind, ScalarUse};
use interpreter::Interpreter;
pub(crate) use shapes::{Boundary, Entrypoint, ShapesSpec, UnregisteredValue};
use value::Value;

use crate::SourceFile;
use crate::syntax::Parsed;
use crate::syntax::ast::{self, Stmt};
use crate::workspace::WorkspaceIndex;

/// A function or method defined anywhere in the file.
pub(crate) struct FunctionInfo<'a> {
    pub(crate) def: &'a ast::StmtFunctionDef,
    /// The class whose body defines it directly.
    pub(crate) class: Option<usize>,
}

/// A class defined at module level.
pub(crate) struct ClassInfo<'a> {
    pub(crate) def: &'a ast::StmtClassDef,
    pub(crate) bases: Vec<Value>,
    pub(crate) is_module: bool,
    pub(crate) methods: HashMap<&'a str, usize>,
    /// What `self.<name>` holds, from assignments in any method.
    pub(crate) attributes: HashMap<String, Value>,
}

pub(crate) struct SemanticModel<'a> {
    pub(crate) file: SourceFile<'a>,
    pub(crate) workspace: &'a WorkspaceIndex,
    /// The file exports with `strict=True` (module-level `strict = True` or an export call).
    pub(crate) strict: bool,
    pub(crate) globals: HashMap<String, Value>,
    pub(crate) functions: Vec<FunctionInfo<'a>>,
    function_by_start: HashMap<TextSize, usize>,
    pub(crate) classes: Vec<ClassInfo<'a>>,
    pub(crate) events: Vec<Event>,
    pub(crate) custom_ops: Vec<CustomOp<'a>>,
    pub(crate) spec: Option<ShapesSpec>,
    pub(crate) entry: Option<Entrypoint>,
}

impl<'a> SemanticModel<'a> {
    pub(crate) fn build(
        parsed: &'a Parsed,
        file: SourceFile<'a>,
        workspace: &'a WorkspaceIndex,
    ) -> Self {
        let body: &'a [Stmt] = &parsed.module.body;
        let mut model = SemanticModel {
            file,
            workspace,
            strict: false,
            globals: HashMap::new(),
            functions: Vec::new(),
            function_by_start: HashMap::new(),
            classes: Vec::new(),
            events: Vec::new(),
            custom_ops: Vec::new(),
            spec: None,
            entry: None,
        };
        model.collect_functions(body, None);
        model.collect_globals(body);
        model.resolve_modules();
        model.collect_attributes();
        model.custom_ops = custom_ops::collect(body, &model);
        // Files that define no module class and no custom op have nothing traced.
        if model.classes.iter().any(|class| class.is_module) {
            (model.entry, model.spec) = shapes::collect(body, &model);
            model.strict = shapes::declares_strict(body);
            model.events = Interpreter::run(&model);
        }
        model
    }

    fn collect_functions(&mut self, body: &'a [Stmt], class: Option<usize>) {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(def) => {
                    self.function_by_start
                        .insert(def.start(), self.functions.len());
                    self.functions.push(FunctionInfo { def, class });
                    self.collect_functions(&def.body, None);
                }
                Stmt::ClassDef(def) => {
                    // Every class gets an entry, nested ones included (a model class defined
                    // inside a test function or another class is still traced).
                    self.classes.push(ClassInfo {
                        def,
                        bases: Vec::new(),
                        is_module: false,
                        methods: HashMap::new(),
                        attributes: HashMap::new(),
                    });
                    let index = self.classes.len() - 1;
                    let first = self.functions.len();
                    self.collect_functions(&def.body, Some(index));
                    for function in first..self.functions.len() {
                        if self.functions[function].class == Some(index) {
                            let name = self.functions[function].def.name.as_str();
                            self.classes[index].methods.insert(name, function);
                        }
                    }
                }
                Stmt::If(if_stmt) => {
                    self.collect_functions(&if_stmt.body, class);
                    for clause in &if_stmt.elif_else_clauses {
                        self.collect_functions(&clause.body, class);
                    }
                }
                Stmt::Try(try_stmt) => {
                    self.collect_functions(&try_stmt.body, class);
                    for ast::ExceptHandler::ExceptHandler(handler) in &try_stmt.handlers {
                        self.collect_functions(&handler.body, class);
                    }
                    self.collect_functions(&try_stmt.orelse, class);
                    self.collect_functions(&try_stmt.finalbody, class);
                }
                Stmt::With(with) => self.collect_functions(&with.body, class),
                Stmt::For(for_stmt) => self.collect_functions(&for_stmt.body, class),
                Stmt::While(while_stmt) => self.collect_functions(&while_stmt.body, class),
                _ => {}
            }
        }
    }

    pub(crate) fn function_at(&self, def: &ast::StmtFunctionDef) -> Option<usize> {
        self.function_by_start.get(&def.start()).copied()
    }

    fn collect_globals(&mut self, body: &'a [Stmt]) {
        // By start offset, which no two class statements share: a scan of `classes` per class
        // made files with tens of thousands of classes quadratic.
        let class_by_start: HashMap<TextSize, usize> = self
            .classes
            .iter()
            .enumerate()
            .map(|(index, class)| (class.def.start(), index))
            .collect();
        for stmt in names::module_level_statements(body) {
            match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) => {
                    for (local, qualified) in names::import_bindings(stmt, self.file) {
                        self.globals
                            .insert(local, Value::Qualified(Rc::from(qualified)));
                    }
                }
                Stmt::ClassDef(def) => {
                    if let Some(&index) = class_by_start.get(&def.start()) {
                        self.globals
                            .insert(def.name.to_string(), Value::Class(index));
                    }
                }
                // `module_level_statements` enters no function or class body, so a def found
                // here is a module-level function.
                Stmt::FunctionDef(def) => {
                    if let Some(index) = self.function_at(def) {
                        if self.functions[index].class.is_none() {
                            self.globals
                                .insert(def.name.to_string(), Value::Function(index));
                        }
                    }
                }
                Stmt::Assign(assign) => {
                    if let [ast::Expr::Name(target)] = assign.targets.as_slice() {
                        let value = Interpreter::evaluate_global(self, &assign.value);
                        if !matches!(value, Value::Unknown) {
                            self.globals.insert(target.id.to_string(), value);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Marks every class that derives from `nn.Module`, through local and workspace bases.
    fn resolve_modules(&mut self) {
        for index in 0..self.classes.len() {
            let bases: Vec<Value> = self.classes[index]
                .def
                .arguments
                .iter()
                .flat_map(|arguments| arguments.args.iter())
                .map(|base| Interpreter::evaluate_global(self, base))
                .collect();
            self.classes[index].bases = bases;
        }
        // Local bases may come later in the file: the classes with a torch or workspace base
        // are modules, and so is every class deriving from one, found through a reverse index
        // so that each class is visited once however the file orders them (a fixed-point
        // iteration over all classes was quadratic on long chains declared in reverse).
        let mut derived: Vec<Vec<usize>> = vec![Vec::new(); self.classes.len()];
        let mut pending = Vec::new();
        for (index, class) in self.classes.iter().enumerate() {
            for base in &class.bases {
                match base {
                    Value::Qualified(name)
                        if torch_api::is_module_base(name)
                            || self.workspace.is_module_class(name) =>
                    {
                        pending.push(index);
                    }
                    Value::Class(base) => derived[*base].push(index),
                    _ => {}
                }
            }
        }
        while let Some(index) = pending.pop() {
            if !self.classes[index].is_module {
                self.classes[index].is_module = true;
                pending.extend_from_slice(&derived[index]);
            }
        }
    }

    /// Learns what `self.<name>` holds in each module class from assignments in its methods.
    fn collect_attributes(&mut self) {
        for index in 0..self.classes.len() {
            if !self.classes[index].is_module {
                continue;
            }
            let methods: Vec<usize> = self.classes[index].methods.values().copied().collect();
            let mut attributes: HashMap<String, Value> = HashMap::new();
            for method in methods {
                let def = self.functions[method].def;
                Interpreter::collect_attributes(self, &def.body, &mut attributes);
            }
            self.classes[index].attributes = attributes;
        }
    }

    /// Whether facts from other files could change this file's report (see
    /// [`crate::ModuleSummary::needs_workspace`]).
    pub(crate) fn depends_on_workspace(&self) -> bool {
        let undetermined = |class: usize| self.is_undetermined(class, 0);
        let open_class = self
            .classes
            .iter()
            .enumerate()
            .any(|(index, class)| class.methods.contains_key("forward") && undetermined(index));
        open_class || self.custom_ops.iter().any(|op| !op.has_fake)
    }

    /// A class not known to be a module that has a base from elsewhere.
    fn is_undetermined(&self, class: usize, depth: usize) -> bool {
        let info = &self.classes[class];
        !info.is_module
            && depth < 16
            && info.bases.iter().any(|base| match base {
                // Bases from torch and the standard library are known without the workspace.
                Value::Qualified(name) => {
                    let top = name.split('.').next().unwrap_or_default();
                    !matches!(
                        top,
                        "builtins"
                            | "typing"
                            | "abc"
                            | "enum"
                            | "collections"
                            | "dataclasses"
                            | "torch"
                            | "numpy"
                            | "functools"
                    )
                }
                Value::Class(base) => self.is_undetermined(*base, depth + 1),
                _ => true,
            })
    }

    /// The class and its local bases, depth first, left to right: the order Python's method
    /// resolution takes for the single-inheritance and simple mixin cases that model code uses.
    fn lineage(&self, class: usize) -> Vec<usize> {
        // Hand-written hierarchies are a few classes deep; generated chains of thousands made
        // every `self.<name>` walk all of them, quadratic in the file. Past the bound, a
        // method or attribute is unknown.
        const MAX_LINEAGE: usize = 64;
        let mut order = Vec::new();
        let mut seen = HashSet::new();
        let mut stack = vec![class];
        while let Some(current) = stack.pop() {
            if order.len() == MAX_LINEAGE {
                break;
            }
            if !seen.insert(current) {
                continue;
            }
            order.push(current);
            for base in self.classes[current].bases.iter().rev() {
                if let Value::Class(base) = base {
                    stack.push(*base);
                }
            }
        }
        order
    }

    /// The method `name` of class `class` or of its local bases.
    pub(crate) fn find_method(&self, class: usize, name: &str) -> Option<usize> {
        self.lineage(class)
            .into_iter()
            .find_map(|current| self.classes[current].methods.get(name).copied())
    }

    /// What `self.<name>` holds in class `class` or its local bases.
    pub(crate) fn find_attribute(&self, class: usize, name: &str) -> Option<&Value> {
        self.lineage(class)
            .into_iter()
            .find_map(|current| self.classes[current].attributes.get(name))
    }

    /// The source text of a range, for messages: on one line, shortened to fit.
    pub(crate) fn text(&self, ranged: impl Ranged) -> String {
        const SHOWN: usize = 60;
        let text = &self.file.text[ranged.range()];
        // Only the words that can be shown are collapsed: a range may span a whole generated
        // file (a chain of ten thousand ternaries), and copying it for every message was
        // quadratic. Dropping the spaces inside brackets at most halves the collapsed text, so
        // twice the shown length (plus one) decides whether it fits exactly as the whole would.
        let mut collapsed = String::new();
        let mut chars = 0;
        let mut space = false;
        for c in text.chars() {
            if c.is_whitespace() {
                space = !collapsed.is_empty();
                continue;
            }
            if chars > 2 * (SHOWN + 1) {
                break;
            }
            if space {
                collapsed.push(' ');
                chars += 1;
                space = false;
            }
            collapsed.push(c);
            chars += 1;
        }
        let collapsed = collapsed.replace("( ", "(").replace(" )", ")");
        if collapsed.chars().count() <= SHOWN {
            return collapsed;
        }
        let mut shown: String = collapsed.chars().take(SHOWN - 1).collect();
        shown.push('…');
        shown
    }
}
