//! The semantic model: what the names in a file mean, which code is traced, which values are
//! tensors, and what happens to them.
//!
//! Building it runs three passes over the parsed file: module-level bindings and classes,
//! `nn.Module` detection and attributes, then an abstract interpreter over every traced
//! function (each `forward` and what it calls). The interpreter records [`Event`]s — a tensor
//! used as a condition, a data-dependent number used as a loop count — and the rules turn
//! events into diagnostics.

mod einops;
mod events;
mod interpreter;
pub(crate) mod mutated_globals;
mod shapes;
pub(crate) mod symbolic;
pub(crate) mod target_ops;

pub(crate) mod value;

use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;
use std::rc::Rc;

use ruff_text_size::{Ranged, TextRange, TextSize};

pub(crate) use events::{BoolContext, Event, EventKind, Forcing, ScalarUse};
use interpreter::Interpreter;
pub(crate) use shapes::{Boundary, Entrypoint, ShapesSpec, UnregisteredValue};
use value::Value;

use crate::SourceFile;
use crate::custom_ops::{self, CustomOp};
use crate::syntax::Parsed;
use crate::syntax::ast::{self, Stmt};
use crate::workspace::{LoadedFile, WorkspaceIndex};
use crate::{catalogue, names};

/// A function or method defined anywhere in the file.
pub(crate) struct FunctionInfo<'a> {
    pub(crate) def: &'a ast::StmtFunctionDef,
    /// The class whose body defines it directly.
    pub(crate) class: Option<usize>,
    /// The file that defines it: 0 for the analysed file, `k` for `foreign[k - 1]`.
    pub(crate) file: u32,
}

/// Another workspace file whose functions and classes the analysis may enter: the files an
/// entrypoint's model is made of.
pub(crate) struct ForeignFile<'a> {
    pub(crate) file: SourceFile<'a>,
    pub(crate) path: &'a Path,
    /// Its module-level statements.
    pub(crate) body: &'a [Stmt],
    pub(crate) globals: FxHashMap<String, Value>,
    /// The modules its `from module import *` statements import, last first.
    stars: Vec<String>,
    /// Its module-level containers that a function of it changes.
    pub(crate) mutated: FxHashMap<String, mutated_globals::MutatedGlobal>,
    /// Its module-level names, found on first demand ([`SemanticModel::imported_from_outside`]).
    names: std::cell::OnceCell<ModuleNames>,
}

/// What a file's module-level statements bind: indexed once, since every import of a program
/// asks about one name of the file it imports from.
struct ModuleNames {
    /// What each name bound by an import refers to, the last import that binds it winning, as
    /// Python leaves it.
    imported: FxHashMap<String, String>,
    /// The names a def, a class or an assignment binds. Owned: a cell of the model holds
    /// them, and borrowing the tree there would tie the model's lifetime down.
    otherwise: FxHashSet<String>,
}

impl ModuleNames {
    fn of(body: &[Stmt], file: SourceFile<'_>) -> Self {
        let mut imported = FxHashMap::default();
        let mut otherwise = FxHashSet::default();
        for stmt in names::module_level_statements(body) {
            match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) => {
                    imported.extend(names::import_bindings(stmt, file));
                }
                _ => otherwise.extend(bound_otherwise(stmt).map(str::to_owned)),
            }
        }
        Self {
            imported,
            otherwise,
        }
    }
}

/// A place on the way to an event: a call site, or the entrypoint, in some file.
pub(crate) type Site = (u32, TextRange);

/// A class defined at module level.
pub(crate) struct ClassInfo<'a> {
    pub(crate) def: &'a ast::StmtClassDef,
    pub(crate) bases: Vec<Value>,
    pub(crate) is_module: bool,
    pub(crate) file: u32,
    /// A class decorator or a module-level `Cls.forward = ...` may replace the methods with
    /// code the analysis does not see: what it finds in them is a warning at most.
    pub(crate) replaced: bool,
    pub(crate) methods: FxHashMap<&'a str, usize>,
    /// What `self.<name>` holds, from assignments in any method.
    pub(crate) attributes: FxHashMap<String, Value>,
    /// The `self.<name>` that a method other than `__init__` assigns.
    pub(crate) assigned_outside_init: Vec<String>,
}

pub(crate) struct SemanticModel<'a> {
    pub(crate) file: SourceFile<'a>,
    pub(crate) workspace: &'a WorkspaceIndex,
    /// The file exports with `strict=True` (module-level `strict = True` or an export call).
    pub(crate) strict: bool,
    pub(crate) globals: FxHashMap<String, Value>,
    /// The module-level containers that a function of the file changes (PT601 when read in
    /// traced code).
    pub(crate) mutated: FxHashMap<String, mutated_globals::MutatedGlobal>,
    pub(crate) functions: Vec<FunctionInfo<'a>>,
    function_by_start: FxHashMap<(u32, TextSize), usize>,
    /// Other workspace files the analysis may enter (empty unless this file is an entrypoint
    /// checked with workspace sources).
    pub(crate) foreign: Vec<ForeignFile<'a>>,
    /// File ids by dotted module name, this file's included.
    modules: FxHashMap<&'a str, u32>,
    /// The modules the analysed file's `from module import *` statements import, last first.
    stars: Vec<String>,
    /// Events the analysis found in foreign files, each with its file id.
    pub(crate) foreign_events: Vec<Event>,
    /// The tracer runs this file with command-line arguments an entrypoint table gives
    /// (`args = [...]`): `parse_args()` does not return the defaults.
    pub(crate) arguments_given: bool,
    /// Functions of foreign files the analysis entered: (file, the function's range).
    pub(crate) reached: FxHashSet<Site>,
    /// The module class the file's entrypoint exports, once the analysis ran, when known.
    pub(crate) exported_class: Option<usize>,
    /// The analysis called a module it did not know while following the model: which classes
    /// the model runs is then not known.
    pub(crate) ran_unknown_module: bool,
    /// Each class's own `forward` that a followed replacement supersedes (see
    /// `mark_replaced_methods`): it never runs, so what it would do is reported nowhere.
    pub(crate) superseded: Vec<Site>,
    /// The module-level `model = ...` statement, where the call chains of events start.
    pub(crate) entry_site: Option<TextRange>,
    pub(crate) classes: Vec<ClassInfo<'a>>,
    pub(crate) events: Vec<Event>,
    /// The shapes of the tensors named in the analysed file's traced code, by position.
    pub(crate) shapes: Vec<crate::ShapeHint>,
    pub(crate) custom_ops: Vec<CustomOp<'a>>,
    pub(crate) spec: Option<ShapesSpec>,
    pub(crate) entry: Option<Entrypoint>,
}

/// The deployment targets a file names for its entrypoint (`targets = ["executorch"]`, a tuple,
/// or one string), as the worker reads them; none when it names none or not as literals.
pub(crate) fn declared_targets(body: &[Stmt]) -> Vec<String> {
    let literal = |expr: &ast::Expr| match expr {
        ast::Expr::StringLiteral(text) => Some(text.value.to_str().to_ascii_lowercase()),
        _ => None,
    };
    match single_assignment(body, "targets") {
        Some(ast::Expr::List(list)) => list.elts.iter().filter_map(literal).collect(),
        Some(ast::Expr::Tuple(tuple)) => tuple.elts.iter().filter_map(literal).collect(),
        Some(other) => literal(other).into_iter().collect(),
        None => Vec::new(),
    }
}

/// The value of the one assignment to `name` among `body`'s statements (not those of nested
/// blocks or functions), when it is assigned exactly once there.
fn single_assignment<'b>(body: &'b [Stmt], name: &str) -> Option<&'b ast::Expr> {
    let mut found = None;
    for stmt in body {
        if let Stmt::Assign(assign) = stmt {
            if assign.targets.iter().any(
                |target| matches!(target, ast::Expr::Name(target) if target.id.as_str() == name),
            ) {
                if found.is_some() {
                    return None;
                }
                found = Some(&*assign.value);
            }
        }
    }
    found
}

/// Whether a statement of `body` (not of nested functions) binds `name`: a `def`, a `class`,
/// an assignment (annotated or not) or an import; `file` is the file `body` is in, for relative imports.
fn binds_locally(body: &[Stmt], name: &str, file: SourceFile<'_>) -> bool {
    body.iter().any(|stmt| match stmt {
        Stmt::Import(_) | Stmt::ImportFrom(_) => names::import_bindings(stmt, file)
            .iter()
            .any(|(local, _)| local == name),
        _ => binds_otherwise(stmt, name),
    })
}

/// Whether module-level statement `stmt` binds `name` other than by an import.
fn binds_otherwise(stmt: &Stmt, name: &str) -> bool {
    bound_otherwise(stmt).any(|bound| bound == name)
}

/// The names module-level statement `stmt` binds other than by an import: a def's, a class's,
/// an assignment's (annotated or not) to plain names.
fn bound_otherwise(stmt: &Stmt) -> impl Iterator<Item = &str> {
    let (one, targets): (Option<&str>, &[ast::Expr]) = match stmt {
        Stmt::FunctionDef(def) => (Some(def.name.as_str()), &[]),
        Stmt::ClassDef(def) => (Some(def.name.as_str()), &[]),
        Stmt::Assign(assign) => (None, &assign.targets),
        Stmt::AnnAssign(assign) => (None, std::slice::from_ref(assign.target.as_ref())),
        _ => (None, &[]),
    };
    one.into_iter()
        .chain(targets.iter().filter_map(|target| match target {
            ast::Expr::Name(target) => Some(target.id.as_str()),
            _ => None,
        }))
}

/// The analysed file's module-level bindings: `import torch.nn.functional as F` binds `F`.
impl names::Resolve for SemanticModel<'_> {
    fn qualified(&self, expr: &ast::Expr) -> Option<String> {
        names::qualified_through(self, expr)
    }

    fn binding(&self, name: &str) -> Option<&str> {
        match self.globals.get(name) {
            Some(Value::Qualified(qualified)) => Some(qualified),
            _ => None,
        }
    }
}

impl<'a> SemanticModel<'a> {
    pub(crate) fn build(
        parsed: &'a Parsed,
        file: SourceFile<'a>,
        workspace: &'a WorkspaceIndex,
    ) -> Self {
        Self::build_program(parsed, file, workspace, &[])
    }

    /// Builds the model of `parsed` with the other files of its program, whose functions and
    /// classes the interpreter enters when the analysed code calls them.
    pub(crate) fn build_program(
        parsed: &'a Parsed,
        file: SourceFile<'a>,
        workspace: &'a WorkspaceIndex,
        program: &'a [LoadedFile],
    ) -> Self {
        Self::build_run(parsed, file, workspace, program, false)
    }

    /// [`Self::build_program`] of a script the tracer runs with command-line arguments of its
    /// entrypoint table (`arguments_given`), which `parse_args()` returns instead of the
    /// defaults.
    pub(crate) fn build_run(
        parsed: &'a Parsed,
        file: SourceFile<'a>,
        workspace: &'a WorkspaceIndex,
        program: &'a [LoadedFile],
        arguments_given: bool,
    ) -> Self {
        let mut model = Self::declarations(parsed, file, workspace, program);
        model.arguments_given = arguments_given;
        model.interpret(parsed);
        model
    }

    /// The model of what the file and its program declare (functions, classes and whether
    /// they are modules, globals, custom operators, the entrypoint), before the interpreter
    /// follows the traced code: enough for [`Self::depends_on_workspace`].
    pub(crate) fn declarations(
        parsed: &'a Parsed,
        file: SourceFile<'a>,
        workspace: &'a WorkspaceIndex,
        program: &'a [LoadedFile],
    ) -> Self {
        let mut model = Self::classes_and_globals(parsed, file, workspace, program);
        model.finish_declarations(parsed);
        model
    }

    /// The first part of [`Self::declarations`]: functions, classes with their bases and
    /// whether they are modules, globals. Enough for [`Self::has_open_class`], which decides
    /// most files that depend on the workspace without the rest.
    pub(crate) fn classes_and_globals(
        parsed: &'a Parsed,
        file: SourceFile<'a>,
        workspace: &'a WorkspaceIndex,
        program: &'a [LoadedFile],
    ) -> Self {
        let body: &'a [Stmt] = &parsed.module.body;
        let mut model = SemanticModel {
            file,
            workspace,
            strict: false,
            globals: FxHashMap::default(),
            mutated: mutated_globals::collect(body, file.text),
            functions: Vec::new(),
            function_by_start: FxHashMap::default(),
            foreign: Vec::new(),
            modules: FxHashMap::default(),
            stars: Vec::new(),
            foreign_events: Vec::new(),
            arguments_given: false,
            reached: FxHashSet::default(),
            exported_class: None,
            ran_unknown_module: false,
            superseded: Vec::new(),
            entry_site: None,
            classes: Vec::new(),
            events: Vec::new(),
            shapes: Vec::new(),
            custom_ops: Vec::new(),
            spec: None,
            entry: None,
        };
        if let Some(module) = file.module {
            model.modules.insert(module, 0);
            for name in workspace.namespace_names(module) {
                model.modules.insert(name.as_str(), 0);
            }
        }
        for loaded in program {
            let id = u32::try_from(model.foreign.len() + 1).unwrap_or(u32::MAX);
            model.modules.entry(loaded.module.as_str()).or_insert(id);
            // `wavenet.networks.WaveNet` names a class of `networks` too (PEP 420).
            for name in workspace.namespace_names(&loaded.module) {
                model.modules.entry(name.as_str()).or_insert(id);
            }
            model.foreign.push(ForeignFile {
                file: workspace.file(
                    &loaded.source.text,
                    &loaded.module,
                    loaded.source.is_package,
                ),
                path: &loaded.source.path,
                body: &loaded.parsed.module.body,
                globals: FxHashMap::default(),
                stars: Vec::new(),
                mutated: mutated_globals::collect(&loaded.parsed.module.body, &loaded.source.text),
                names: std::cell::OnceCell::new(),
            });
        }
        model.collect_functions(body, None, 0);
        for (index, loaded) in program.iter().enumerate() {
            let id = u32::try_from(index + 1).unwrap_or(u32::MAX);
            model.collect_functions(&loaded.parsed.module.body, None, id);
        }
        // Foreign globals first: the analysed file's aliases may resolve through them.
        for (index, loaded) in program.iter().enumerate() {
            let id = u32::try_from(index + 1).unwrap_or(u32::MAX);
            model.collect_globals(&loaded.parsed.module.body, id);
        }
        model.collect_globals(body, 0);
        model.resolve_modules();
        model.mark_replaced_methods(body, 0);
        for (index, loaded) in program.iter().enumerate() {
            let id = u32::try_from(index + 1).unwrap_or(u32::MAX);
            model.mark_replaced_methods(&loaded.parsed.module.body, id);
        }
        model
    }

    /// The rest of [`Self::declarations`] after [`Self::classes_and_globals`]: what module
    /// classes' methods assign to `self`, custom operators, the entrypoint.
    pub(crate) fn finish_declarations(&mut self, parsed: &'a Parsed) {
        let body: &'a [Stmt] = &parsed.module.body;
        self.collect_attributes();
        self.custom_ops = custom_ops_of(body, self);
        self.entry_site = entry_site(body);
        // The entrypoint's own checks (example sizes, pytree registration, the spec's shape)
        // need no model class: a library model (`torchvision.models.resnet50()`) is exported
        // from files that define none.
        (self.entry, self.spec) = shapes::collect(body, self);
    }

    /// Follows the traced code of the model [`Self::declarations`] built from `parsed`.
    pub(crate) fn interpret(&mut self, parsed: &'a Parsed) {
        // Files that define no module class and no custom op have nothing traced, unless they
        // export a model defined in another file or built of torch's layers alone
        // (`model = nn.Sequential(...)`).
        let local_module = self
            .classes
            .iter()
            .any(|class| class.is_module && class.file == 0);
        if local_module || !self.foreign.is_empty() || self.entry.is_some() {
            self.strict = shapes::declares_strict(&parsed.module.body);
            let (events, reached, shapes, exported, ran_unknown_module) =
                Interpreter::run(self, &parsed.module.body);
            self.shapes = shapes;
            self.exported_class = exported;
            self.ran_unknown_module = ran_unknown_module;
            let (own, foreign): (Vec<Event>, Vec<Event>) =
                events.into_iter().partition(|event| event.file == 0);
            self.events = own;
            self.foreign_events = foreign;
            self.reached = reached;
        }
    }

    fn collect_functions(&mut self, body: &'a [Stmt], class: Option<usize>, file: u32) {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(def) => {
                    self.function_by_start
                        .insert((file, def.start()), self.functions.len());
                    self.functions.push(FunctionInfo { def, class, file });
                    self.collect_functions(&def.body, None, file);
                }
                Stmt::ClassDef(def) => {
                    // Every class gets an entry, nested ones included (a model class defined
                    // inside a test function or another class is still traced).
                    self.classes.push(ClassInfo {
                        def,
                        bases: Vec::new(),
                        is_module: false,
                        methods: FxHashMap::default(),
                        attributes: FxHashMap::default(),
                        assigned_outside_init: Vec::new(),
                        file,
                        replaced: false,
                    });
                    let index = self.classes.len() - 1;
                    let first = self.functions.len();
                    self.collect_functions(&def.body, Some(index), file);
                    for function in first..self.functions.len() {
                        if self.functions[function].class == Some(index) {
                            let name = self.functions[function].def.name.as_str();
                            self.classes[index].methods.insert(name, function);
                        }
                    }
                }
                Stmt::If(if_stmt) => {
                    self.collect_functions(&if_stmt.body, class, file);
                    for clause in &if_stmt.elif_else_clauses {
                        self.collect_functions(&clause.body, class, file);
                    }
                }
                Stmt::Try(try_stmt) => {
                    self.collect_functions(&try_stmt.body, class, file);
                    for ast::ExceptHandler::ExceptHandler(handler) in &try_stmt.handlers {
                        self.collect_functions(&handler.body, class, file);
                    }
                    self.collect_functions(&try_stmt.orelse, class, file);
                    self.collect_functions(&try_stmt.finalbody, class, file);
                }
                Stmt::With(with) => self.collect_functions(&with.body, class, file),
                Stmt::For(for_stmt) => self.collect_functions(&for_stmt.body, class, file),
                Stmt::While(while_stmt) => self.collect_functions(&while_stmt.body, class, file),
                _ => {}
            }
        }
    }

    /// The module class a factory function returns (`def build(cfg): return Net(cfg)`), when
    /// all its `return`s that construct a known module class agree on one. A return may go
    /// through another factory (`return _resnet(BasicBlock, ...)`) or a local name bound once
    /// to a construction (`model = ResNet(...)` ... `return model`).
    pub(crate) fn class_returned_by(&self, function: usize) -> Option<usize> {
        self.class_returned_within(function, 0)
    }

    fn class_returned_within(&self, function: usize, depth: usize) -> Option<usize> {
        fn returns<'s>(body: &'s [Stmt], out: &mut Vec<&'s ast::Expr>) {
            for stmt in body {
                match stmt {
                    Stmt::Return(ast::StmtReturn {
                        value: Some(value), ..
                    }) => out.push(value),
                    Stmt::If(if_stmt) => {
                        returns(&if_stmt.body, out);
                        for clause in &if_stmt.elif_else_clauses {
                            returns(&clause.body, out);
                        }
                    }
                    Stmt::With(with) => returns(&with.body, out),
                    Stmt::Try(try_stmt) => returns(&try_stmt.body, out),
                    _ => {}
                }
            }
        }
        if depth > 6 {
            return None;
        }
        let info = &self.functions[function];
        let mut values = Vec::new();
        returns(&info.def.body, &mut values);
        let mut found = None;
        for value in values {
            // `return model`, with `model = ResNet(...)` the name's one binding in the body.
            let value = match value {
                ast::Expr::Name(name) => {
                    match single_assignment(&info.def.body, name.id.as_str()) {
                        Some(bound) => bound,
                        None => continue,
                    }
                }
                other => other,
            };
            // `return Net(cfg).eval()`: methods of a module that return it.
            let mut value = value;
            while let ast::Expr::Call(call) = value {
                match &*call.func {
                    ast::Expr::Attribute(attribute)
                        if matches!(&*attribute.value, ast::Expr::Call(_))
                            && matches!(
                                attribute.attr.as_str(),
                                "eval" | "train" | "to" | "float" | "half" | "cpu" | "cuda"
                            ) =>
                    {
                        value = &attribute.value;
                    }
                    _ => break,
                }
            }
            let ast::Expr::Call(call) = value else {
                continue;
            };
            let Some(name) = names::dotted(&call.func) else {
                continue;
            };
            let (head, rest) = name.split_once('.').unwrap_or((&name, ""));
            let callee = match self.globals_in(info.file).get(head) {
                Some(Value::Qualified(qualified)) => {
                    let qualified = if rest.is_empty() {
                        qualified.to_string()
                    } else {
                        format!("{qualified}.{rest}")
                    };
                    self.resolve_qualified(&qualified)
                }
                Some(value) if rest.is_empty() => Some(value.clone()),
                _ => None,
            };
            let class = match callee {
                Some(Value::Class(class)) => Some(class),
                Some(Value::Function(builder)) if builder != function => {
                    self.class_returned_within(builder, depth + 1)
                }
                _ => None,
            };
            match (class, found) {
                (Some(class), None) if self.classes[class].is_module => found = Some(class),
                (Some(class), Some(earlier)) if class != earlier => return None,
                _ => {}
            }
        }
        found
    }

    /// The module classes the exported model may run, in every file of the program
    /// ([`interpreter::classes_used_across`] of the exported class); `None` when the analysis
    /// does not know which class is exported, or called a module it did not know.
    pub(crate) fn exported_classes(&self) -> Option<FxHashSet<usize>> {
        let root = self.exported_class.filter(|_| !self.ran_unknown_module)?;
        // A class the code building the model passes in (`Residual(module=Attention())`) is
        // named there, not in the model's classes: a class whose method the analysis entered
        // runs, and so do the classes it names.
        let entered = self.classes.iter().enumerate().filter(|(_, class)| {
            class.methods.values().any(|&method| {
                self.reached
                    .contains(&(class.file, self.functions[method].def.range))
            })
        });
        let roots = std::iter::once(root).chain(entered.map(|(index, _)| index));
        Some(interpreter::classes_used_across(self, roots))
    }

    /// The dotted names of the foreign files whose functions the analysis entered, and of
    /// those whose `Dim`s the spec reads: the fixes of their guards are edits there.
    pub(crate) fn entered_modules(&self) -> FxHashSet<String> {
        self.reached
            .iter()
            .filter_map(|(file, _)| self.source_in(*file).module)
            .map(str::to_owned)
            .chain(
                self.spec
                    .iter()
                    .flat_map(|spec| spec.imported_dims.iter().map(|dim| dim.module.clone())),
            )
            .collect()
    }

    /// The id of the program's file for dotted module `module`.
    pub(crate) fn file_id(&self, module: &str) -> Option<u32> {
        self.modules.get(module).copied()
    }

    pub(crate) fn function_at_in(&self, file: u32, def: &ast::StmtFunctionDef) -> Option<usize> {
        self.function_by_start.get(&(file, def.start())).copied()
    }

    /// The module-level bindings of file `file`.
    pub(crate) fn globals_in(&self, file: u32) -> &FxHashMap<String, Value> {
        match file.checked_sub(1) {
            Some(index) => &self.foreign[index as usize].globals,
            None => &self.globals,
        }
    }

    /// The module-level statements of foreign file `file`; none for the analysed file, whose
    /// syntax tree its caller holds.
    pub(crate) fn body_in(&self, file: u32) -> &'a [Stmt] {
        match file.checked_sub(1) {
            Some(index) => self.foreign[index as usize].body,
            None => &[],
        }
    }

    /// The module-level containers a function of file `file` changes.
    pub(crate) fn mutated_in(
        &self,
        file: u32,
    ) -> &FxHashMap<String, mutated_globals::MutatedGlobal> {
        match file.checked_sub(1) {
            Some(index) => &self.foreign[index as usize].mutated,
            None => &self.mutated,
        }
    }

    fn globals_in_mut(&mut self, file: u32) -> &mut FxHashMap<String, Value> {
        match file.checked_sub(1) {
            Some(index) => &mut self.foreign[index as usize].globals,
            None => &mut self.globals,
        }
    }

    /// File `file` as the analysis sees it.
    pub(crate) fn source_in(&self, file: u32) -> SourceFile<'a> {
        match file.checked_sub(1) {
            Some(index) => self.foreign[index as usize].file,
            None => self.file,
        }
    }

    /// What a qualified name means when it names a function or class of a file in the
    /// program (`mymodels.helpers.normalize`, or `mymodels.Net` re-exported by a package's
    /// `__init__`); `None` for anything else, which stays a qualified name.
    pub(crate) fn resolve_qualified(&self, name: &str) -> Option<Value> {
        if self.foreign.is_empty() {
            return None;
        }
        let mut name = name.to_owned();
        // An installed library's name is spelled through packages the program need not
        // load (`transformers.BertModel`): its definition's module is the one loaded.
        let library_definition = |name: &str| {
            self.workspace
                .libraries()?
                .definition(name)
                .filter(|defined| defined != name)
        };
        // Each step follows one re-export; cycles end at the bound.
        for _ in 0..8 {
            let Some((file, rest)) = self.split_module(&name) else {
                name = library_definition(&name)?;
                continue;
            };
            let (head, tail) = match rest.split_once('.') {
                Some((head, tail)) => (head, Some(tail)),
                None => (rest, None),
            };
            let Some(value) = self.globals_in(file).get(head) else {
                // `from .resnet import *`: the later star import binds the name, as in Python.
                name = match self
                    .stars_in(file)
                    .iter()
                    .find(|star| self.binds_at_module_level(star, head))
                {
                    Some(star) => format!("{star}.{rest}"),
                    None => library_definition(&name)?,
                };
                continue;
            };
            match (value, tail) {
                (Value::Qualified(target), tail) => {
                    name = match tail {
                        Some(tail) => format!("{target}.{tail}"),
                        None => target.to_string(),
                    };
                }
                (value, None) => return Some(value.clone()),
                (Value::Class(class), Some(method)) if !method.contains('.') => {
                    return self.find_method(*class, method).map(Value::Function);
                }
                _ => return None,
            }
        }
        None
    }

    /// The modules file `file` star-imports, last first.
    fn stars_in(&self, file: u32) -> &[String] {
        match file.checked_sub(1) {
            Some(index) => &self.foreign[index as usize].stars,
            None => &self.stars,
        }
    }

    /// Whether program module `module` binds `name` at module level, itself or through its
    /// own star imports; private names are not star-exported.
    fn binds_at_module_level(&self, module: &str, name: &str) -> bool {
        fn binds(model: &SemanticModel<'_>, module: &str, name: &str, depth: usize) -> bool {
            let Some(&file) = model.modules.get(module) else {
                return false;
            };
            model.globals_in(file).contains_key(name)
                || (depth < 4
                    && model
                        .stars_in(file)
                        .iter()
                        .any(|star| binds(model, star, name, depth + 1)))
        }
        !name.starts_with('_') && binds(self, module, name, 0)
    }

    /// The module-level container `member` of workspace module `module` (`config`, `SCALES`),
    /// when a function of its file changes it.
    pub(crate) fn mutated_global(
        &self,
        module: &str,
        member: &str,
    ) -> Option<&mutated_globals::MutatedGlobal> {
        let file = *self.modules.get(module)?;
        self.mutated_in(file).get(member)
    }

    /// The program file a qualified name lies in, with the rest of the name; `None` when no
    /// proper prefix of it is a module of the program.
    /// What a name that a program module imports from outside the program stands for:
    /// `mymodels.torch`, where `mymodels/__init__.py` says `import torch`, is `torch`, and
    /// `mymodels.F.relu` with `import torch.nn.functional as F` there is
    /// `torch.nn.functional.relu`, so `from mymodels import torch` (what an entrypoint table's
    /// expression over `mymodels` reads) means torch. `None` for a name the program defines or
    /// does not know, which resolves as it did ([`Self::resolve_qualified`]).
    pub(crate) fn imported_from_outside(&self, name: &str) -> Option<String> {
        let mut name = name.to_owned();
        let mut followed = false;
        // Each step follows one module-level import of a program module; cycles end at the
        // bound.
        for _ in 0..8 {
            let Some((file, rest)) = self.split_module(&name) else {
                return followed.then_some(name);
            };
            let (head, tail) = match rest.split_once('.') {
                Some((head, tail)) => (head, Some(tail)),
                None => (rest, None),
            };
            // The analysed file's own statements are not followed (it is not in `foreign`).
            let foreign = self.foreign.get(file.checked_sub(1)? as usize)?;
            let bound = foreign
                .names
                .get_or_init(|| ModuleNames::of(foreign.body, foreign.file));
            // The last import that binds it, as Python leaves it.
            let target = bound.imported.get(head)?;
            // Another binding of the name at module level (a def, a class, an assignment)
            // may replace the import: left as the program defines it.
            if bound.otherwise.contains(head) {
                return None;
            }
            followed = true;
            name = match tail {
                Some(tail) => format!("{target}.{tail}"),
                None => target.clone(),
            };
        }
        None
    }

    /// The names `from module import *` binds, each with the qualified name it refers to:
    /// those `module`'s `__all__` lists, or without one every public name it binds at module
    /// level (its defs, classes, assignments, and what it imports, star imports of its own
    /// included). `None` when the analysis cannot tell: `module` is not a workspace file of the
    /// program (an installed library's star import keeps binding nothing), or its `__all__` is
    /// not a literal list of names. `visiting` holds the modules whose star imports are being
    /// followed: a cycle back to one of them binds nothing more.
    fn star_exported(
        &self,
        module: &str,
        visiting: &mut Vec<String>,
    ) -> Option<Vec<(String, String)>> {
        let &file = self.modules.get(module)?;
        let foreign = self.foreign.get(file.checked_sub(1)? as usize)?;
        if self.workspace.is_library(module) {
            return None;
        }
        let listed = match names::declared_all(foreign.body) {
            names::DeclaredAll::Listed(listed) => Some(listed),
            names::DeclaredAll::Undeclared => None,
            names::DeclaredAll::Computed => return None,
        };
        if visiting.iter().any(|seen| seen == module) || visiting.len() > 8 {
            return Some(Vec::new());
        }
        visiting.push(module.to_owned());
        // The last binding of a name wins, as Python leaves the module.
        let mut bound: FxHashMap<String, String> = FxHashMap::default();
        for stmt in names::module_level_statements(foreign.body) {
            match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) => {
                    if let Some(star) = names::star_import(stmt, foreign.file) {
                        bound.extend(self.star_exported(&star, visiting).unwrap_or_default());
                    }
                    bound.extend(names::import_bindings(stmt, foreign.file));
                }
                _ => bound.extend(
                    bound_otherwise(stmt).map(|name| (name.to_owned(), format!("{module}.{name}"))),
                ),
            }
        }
        visiting.pop();
        Some(match listed {
            // A listed name the module does not bind is its submodule (`__all__ = ["resnet"]`).
            Some(listed) => listed
                .into_iter()
                .map(|name| {
                    let qualified = bound
                        .get(&name)
                        .cloned()
                        .unwrap_or_else(|| format!("{module}.{name}"));
                    (name, qualified)
                })
                .collect(),
            None => bound
                .into_iter()
                .filter(|(name, _)| !name.starts_with('_'))
                .collect(),
        })
    }

    fn split_module<'n>(&self, name: &'n str) -> Option<(u32, &'n str)> {
        let (module, rest) =
            names::split_at_module(name, |module| self.modules.contains_key(module))?;
        Some((self.modules[module], rest))
    }

    fn collect_globals(&mut self, body: &'a [Stmt], file: u32) {
        // By start offset, which no two class statements of one file share: a scan of
        // `classes` per class made files with tens of thousands of classes quadratic.
        let class_by_start: FxHashMap<TextSize, usize> = self
            .classes
            .iter()
            .enumerate()
            .filter(|(_, class)| class.file == file)
            .map(|(index, class)| (class.def.start(), index))
            .collect();
        let source = self.source_in(file);
        // A module-level value the code changes after binding it (`CONFIG["k"] = v`,
        // `global N` in a function) is not what its assignment says. Found by a walk of the
        // whole file, so only for a constant whose name the text writes again: a name written
        // once (`__all__ = [...]`) is only its binding.
        let mut rebound: Option<FxHashSet<&str>> = None;
        let written_again = |name: &str| {
            source
                .text
                .find(name)
                .is_some_and(|first| source.text[first + name.len()..].contains(name))
        };
        for stmt in names::module_level_statements(body) {
            match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) => {
                    if let Some(star) = names::star_import(stmt, source) {
                        // What the star import binds here, at its place among the file's
                        // statements: a later def of the same name replaces it, as in Python.
                        let mut visiting: Vec<String> =
                            source.module.map(str::to_owned).into_iter().collect();
                        for (local, qualified) in
                            self.star_exported(&star, &mut visiting).unwrap_or_default()
                        {
                            let qualified =
                                self.imported_from_outside(&qualified).unwrap_or(qualified);
                            self.globals_in_mut(file)
                                .insert(local, Value::Qualified(Rc::from(qualified)));
                        }
                        match file.checked_sub(1) {
                            Some(index) => self.foreign[index as usize].stars.insert(0, star),
                            None => self.stars.insert(0, star),
                        }
                    }
                    for (local, qualified) in names::import_bindings(stmt, source) {
                        let qualified = self.imported_from_outside(&qualified).unwrap_or(qualified);
                        self.globals_in_mut(file)
                            .insert(local, Value::Qualified(Rc::from(qualified)));
                    }
                }
                Stmt::ClassDef(def) => {
                    if let Some(&index) = class_by_start.get(&def.start()) {
                        self.globals_in_mut(file)
                            .insert(def.name.to_string(), Value::Class(index));
                    }
                }
                // `module_level_statements` enters no function or class body, so a def found
                // here is a module-level function.
                Stmt::FunctionDef(def) => {
                    if let Some(index) = self.function_at_in(file, def) {
                        if self.functions[index].class.is_none() {
                            self.globals_in_mut(file)
                                .insert(def.name.to_string(), Value::Function(index));
                        }
                    }
                }
                Stmt::Assign(assign) => {
                    if let [ast::Expr::Name(target)] = assign.targets.as_slice() {
                        let value = Interpreter::evaluate_global_in(self, &assign.value, file);
                        let constant = matches!(
                            value,
                            Value::Number(_) | Value::Str(_) | Value::Object(_) | Value::Tuple(_)
                        );
                        if constant
                            && written_again(target.id.as_str())
                            && rebound
                                .get_or_insert_with(|| names::changed_after_binding(body))
                                .contains(target.id.as_str())
                        {
                            continue;
                        }
                        if !matches!(value, Value::Unknown) {
                            self.globals_in_mut(file)
                                .insert(target.id.to_string(), value);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Follows what replaces a class's `forward` at class level. A module-level
    /// `Cls.forward = f`, or a class decorator of the workspace whose body does
    /// `cls.forward = f` unconditionally, makes the workspace function `f` the class's
    /// `forward`: that is the body export traces. Any other class decorator not known to keep
    /// the class's methods (`@use_experts_implementation`, whose `forward` chooses an
    /// implementation at run time), and an assignment of something else, marks the class
    /// `replaced`: what runs cannot be decided, and what its own `forward` does is a warning
    /// at most.
    fn mark_replaced_methods(&mut self, body: &'a [Stmt], file: u32) {
        for stmt in names::module_level_statements(body) {
            match stmt {
                Stmt::ClassDef(def) => {
                    let Some(index) = self
                        .classes
                        .iter()
                        .position(|class| class.file == file && class.def.range() == def.range())
                    else {
                        continue;
                    };
                    // In the order Python applies them: the one nearest the class first, so
                    // what the outermost one does is what stays.
                    for decorator in def.decorator_list.iter().rev() {
                        let name = names::dotted(match &decorator.expression {
                            ast::Expr::Call(call) => &call.func,
                            other => other,
                        })
                        .unwrap_or_default();
                        let last = name.rsplit('.').next().unwrap_or_default();
                        // Decorators that keep the class's own methods.
                        if matches!(
                            last,
                            "dataclass"
                                | "final"
                                | "total_ordering"
                                | "unique"
                                | "runtime_checkable"
                                | "auto_docstring"
                                | "add_start_docstrings"
                                | "register"
                                | "compile_ignored"
                        ) {
                            continue;
                        }
                        match self.forward_set_by_decorator(&decorator.expression, file) {
                            Some(forward) => self.replace_forward(index, forward),
                            None => self.classes[index].replaced = true,
                        }
                    }
                }
                Stmt::Assign(assign) => {
                    for target in &assign.targets {
                        let ast::Expr::Attribute(attribute) = target else {
                            continue;
                        };
                        if attribute.attr.as_str() != "forward" {
                            continue;
                        }
                        let Value::Class(index) =
                            Interpreter::evaluate_global_in(self, &attribute.value, file)
                        else {
                            continue;
                        };
                        match Interpreter::evaluate_global_in(self, &assign.value, file) {
                            Value::Function(forward) => self.replace_forward(index, forward),
                            _ => self.classes[index].replaced = true,
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Makes the workspace function `forward` the `forward` of class `class`.
    fn replace_forward(&mut self, class: usize, forward: usize) {
        if let Some(own) = self.classes[class].methods.insert("forward", forward) {
            let own = &self.functions[own];
            self.superseded.push((own.file, own.def.range()));
        }
        self.classes[class].replaced = false;
    }

    /// The workspace function a class decorator makes the class's `forward`: the decorator is
    /// a workspace function (used bare, `@use_fast_forward`) whose body sets
    /// `<its parameter>.forward = f` outside any condition, `f` a function of its file.
    fn forward_set_by_decorator(&self, decorator: &ast::Expr, file: u32) -> Option<usize> {
        // A decorator made by a call (`@patch_forward("fast")`) would have to be run to know.
        if matches!(decorator, ast::Expr::Call(_)) {
            return None;
        }
        let Value::Function(function) = Interpreter::evaluate_global_in(self, decorator, file)
        else {
            return None;
        };
        let info = &self.functions[function];
        let parameter = info.def.parameters.iter().next()?.name().as_str();
        info.def.body.iter().find_map(|stmt| {
            let Stmt::Assign(assign) = stmt else {
                return None;
            };
            let [ast::Expr::Attribute(attribute)] = assign.targets.as_slice() else {
                return None;
            };
            let is_parameter =
                matches!(&*attribute.value, ast::Expr::Name(name) if name.id.as_str() == parameter);
            if !is_parameter || attribute.attr.as_str() != "forward" {
                return None;
            }
            // A function the decorator defines itself (a wrapper closing over the original)
            // is not the module-level function of the same name.
            if let ast::Expr::Name(value) = &*assign.value {
                if binds_locally(&info.def.body, value.id.as_str(), self.source_in(info.file)) {
                    return None;
                }
            }
            match Interpreter::evaluate_global_in(self, &assign.value, info.file) {
                Value::Function(forward) => Some(forward),
                _ => None,
            }
        })
    }

    /// Marks every class that derives from `nn.Module`, through local and workspace bases.
    fn resolve_modules(&mut self) {
        for index in 0..self.classes.len() {
            let file = self.classes[index].file;
            let bases: Vec<Value> = self.classes[index]
                .def
                .arguments
                .iter()
                .flat_map(|arguments| arguments.args.iter())
                .map(|base| Interpreter::evaluate_global_in(self, base, file))
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
                        if catalogue::is_module_base(name)
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
            let file = self.classes[index].file;
            let mut attributes: FxHashMap<String, Value> = FxHashMap::default();
            let mut assigned_outside_init = Vec::new();
            for method in methods {
                let def = self.functions[method].def;
                Interpreter::collect_attributes(self, &def.body, &mut attributes, file);
                if def.name.as_str() != "__init__" {
                    names::self_attributes_assigned(&def.body, &mut assigned_outside_init);
                }
            }
            self.classes[index].attributes = attributes;
            self.classes[index].assigned_outside_init = assigned_outside_init;
        }
    }

    /// Whether facts from other files could change this file's report (see
    /// [`crate::ModuleSummary::needs_workspace`]).
    pub(crate) fn depends_on_workspace(&self) -> bool {
        // A file that exports a model is followed into the code it imports (`pscan` of another
        // module called from a local model's `forward`), whatever its classes' bases.
        self.has_open_class()
            || self.entry.is_some()
            || self.custom_ops.iter().any(|op| !op.has_fake)
    }

    /// Whether a class with a `forward` may be a module through a base from another file:
    /// known from [`Self::classes_and_globals`] already.
    pub(crate) fn has_open_class(&self) -> bool {
        let undetermined = |class: usize| self.is_undetermined(class, 0);
        self.classes
            .iter()
            .enumerate()
            .any(|(index, class)| class.methods.contains_key("forward") && undetermined(index))
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

    /// Hand-written hierarchies are a few classes deep; generated chains of thousands made
    /// every `self.<name>` walk all of them, quadratic in the file. Past the bound, a
    /// method or attribute is unknown.
    pub(crate) const MAX_LINEAGE: usize = 64;

    /// The class and its local bases, depth first, left to right: the order Python's method
    /// resolution takes for the single-inheritance and simple mixin cases that model code uses.
    pub(crate) fn lineage(&self, class: usize) -> Vec<usize> {
        let mut order = Vec::new();
        let mut seen = FxHashSet::default();
        let mut stack = vec![class];
        while let Some(current) = stack.pop() {
            if order.len() == Self::MAX_LINEAGE {
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

    /// The `torch.nn` layer that class `class` extends through its local bases
    /// (`class MyLinear(nn.Linear)`): what the catalogue knows of its shapes applies to it.
    pub(crate) fn layer_base(&self, class: usize) -> Option<&str> {
        self.lineage(class).into_iter().find_map(|current| {
            self.classes[current]
                .bases
                .iter()
                .find_map(catalogue_layer)
                .map(AsRef::as_ref)
        })
    }

    /// Whether `class` or one of its local bases names the installed class `qualified` as a
    /// base (`class Block(nn.Sequential)`).
    pub(crate) fn derives_from(&self, class: usize, qualified: &str) -> bool {
        self.lineage(class).into_iter().any(|current| {
            self.classes[current]
                .bases
                .iter()
                .any(|base| matches!(base, Value::Qualified(name) if name.as_ref() == qualified))
        })
    }

    /// The method `name` of class `class` or of its local bases.
    pub(crate) fn find_method(&self, class: usize, name: &str) -> Option<usize> {
        self.lineage(class)
            .into_iter()
            .find_map(|current| self.classes[current].methods.get(name).copied())
    }

    /// Whether a method of `class` or its local bases other than `__init__` assigns
    /// `self.<name>`: then what the construction left there is not what `forward` reads.
    pub(crate) fn assigned_after_construction(&self, class: usize, name: &str) -> bool {
        self.lineage(class).into_iter().any(|current| {
            self.classes[current]
                .assigned_outside_init
                .iter()
                .any(|assigned| assigned == name)
        })
    }

    /// What `self.<name>` holds in class `class` or its local bases.
    pub(crate) fn find_attribute(&self, class: usize, name: &str) -> Option<&Value> {
        self.lineage(class)
            .into_iter()
            .find_map(|current| self.classes[current].attributes.get(name))
    }

    /// The source text of a range, for messages: on one line, shortened to fit.
    pub(crate) fn text(&self, ranged: impl Ranged) -> String {
        self.text_in(0, ranged)
    }

    /// The source text of a range of file `file`, for messages.
    pub(crate) fn text_in(&self, file: u32, ranged: impl Ranged) -> String {
        const SHOWN: usize = 60;
        let Some(text) = self
            .source_in(file)
            .text
            .get(std::ops::Range::<usize>::from(ranged.range()))
        else {
            return String::new();
        };
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

/// The module-level `model = ...` statement, where an entrypoint's analysis starts.
fn entry_site(body: &[Stmt]) -> Option<TextRange> {
    names::module_level_statements(body)
        .into_iter()
        .rev()
        .find_map(|stmt| match stmt {
            Stmt::Assign(assign)
                if matches!(assign.targets.as_slice(), [ast::Expr::Name(target)] if target.id.as_str() == "model") =>
            {
                Some(assign.range())
            }
            _ => None,
        })
}

/// The `torch.nn` layer base `base` names, when the catalogue knows its shapes.
pub(crate) fn catalogue_layer(base: &Value) -> Option<&std::rc::Rc<str>> {
    match base {
        Value::Qualified(qualified)
            if catalogue::keeps_batch_dim(qualified) || catalogue::is_recurrent(qualified) =>
        {
            Some(qualified)
        }
        _ => None,
    }
}

/// The custom operators `body` defines, each with whether a fake kernel is registered for it
/// in this file or anywhere in the workspace.
fn custom_ops_of<'a>(body: &'a [Stmt], model: &SemanticModel) -> Vec<CustomOp<'a>> {
    let found = custom_ops::registrations(body, model.file.text, model);
    found
        .definitions
        .into_iter()
        .map(|definition| {
            let has_fake = found.fakes.contains(&definition.name)
                || model.workspace.has_fake_kernel(&definition.name);
            CustomOp {
                name: definition.name,
                range: definition.range,
                has_fake,
                definition: definition.definition,
            }
        })
        .collect()
}
