//! Module-level mutable containers (lists, dicts, sets) that a function of their file changes.
//! Traced code that reads one gets the value it had while exporting: the exported program keeps
//! it as a constant, whatever the function does to it later (PT601). A container changed only
//! by module-level statements (filled once, on import) is a constant and is not listed.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::syntax::ast::visitor::{self, Visitor};
use crate::syntax::ast::{self, Expr, Stmt};

/// Methods that change a list, dict or set in place.
const MUTATING_METHODS: &[&str] = &[
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "sort",
    "reverse",
    "update",
    "setdefault",
    "popitem",
    "add",
    "discard",
    "difference_update",
    "intersection_update",
    "symmetric_difference_update",
];

/// A module-level container that a function changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MutatedGlobal {
    /// `list`, `dict` or `set`.
    pub(crate) kind: &'static str,
    /// The first function that changes it, by name.
    pub(crate) function: String,
}

/// The module-level containers of `body` that a function (or method) of the file changes;
/// `text` is the file's source.
pub(crate) fn collect(body: &[Stmt], text: &str) -> FxHashMap<String, MutatedGlobal> {
    let containers: FxHashMap<&str, &'static str> = body
        .iter()
        .filter_map(|stmt| match stmt {
            Stmt::Assign(assign) => match assign.targets.as_slice() {
                [Expr::Name(name)] => Some((name.id.as_str(), container_kind(&assign.value)?)),
                _ => None,
            },
            Stmt::AnnAssign(assign) => match (&*assign.target, assign.value.as_deref()) {
                (Expr::Name(name), Some(value)) => Some((name.id.as_str(), container_kind(value)?)),
                _ => None,
            },
            _ => None,
        })
        // A function that changes a container names it; a name written once in the whole
        // text (`__all__ = [...]`) is only its definition.
        .filter(|(name, _)| {
            text.find(name)
                .is_some_and(|first| text[first + name.len()..].contains(name))
        })
        .collect();
    if containers.is_empty() {
        return FxHashMap::default();
    }
    let mut finder = Mutations {
        containers: &containers,
        functions: Vec::new(),
        found: FxHashMap::default(),
    };
    for stmt in body {
        finder.visit_stmt(stmt);
    }
    finder.found
}

/// The kind of container a module-level value makes: a display, a comprehension or a
/// constructor call.
fn container_kind(value: &Expr) -> Option<&'static str> {
    match value {
        Expr::List(_) | Expr::ListComp(_) => Some("list"),
        Expr::Dict(_) | Expr::DictComp(_) => Some("dict"),
        Expr::Set(_) | Expr::SetComp(_) => Some("set"),
        Expr::Call(call) => {
            let callee = match &*call.func {
                Expr::Name(name) => name.id.as_str(),
                Expr::Attribute(attribute) => attribute.attr.as_str(),
                _ => return None,
            };
            match callee {
                "list" | "deque" => Some("list"),
                "dict" | "defaultdict" | "OrderedDict" | "Counter" => Some("dict"),
                "set" => Some("set"),
                _ => None,
            }
        }
        _ => None,
    }
}

/// One function being walked, with its scope once a change to a container needs it.
struct Function<'a> {
    def: &'a ast::StmtFunctionDef,
    scope: Option<Scope>,
}

impl Function<'_> {
    /// The names the function declares `global` and its own locals (parameters and names it
    /// assigns without `global`), which shadow the module's. Walked on the first change to a
    /// container only: most functions change none.
    fn scope(&mut self) -> &Scope {
        let def = self.def;
        self.scope.get_or_insert_with(|| {
            let mut scope = Scope::default();
            for parameter in &*def.parameters {
                scope.locals.insert(parameter.name().to_string());
            }
            for inner in &def.body {
                scope.visit_stmt(inner);
            }
            scope
        })
    }
}

struct Mutations<'c, 'a> {
    containers: &'c FxHashMap<&'c str, &'static str>,
    functions: Vec<Function<'a>>,
    found: FxHashMap<String, MutatedGlobal>,
}

impl Mutations<'_, '_> {
    /// Records that the current function changes the module-level container `name`, unless a
    /// local of the function shadows it.
    fn changes(&mut self, name: &str) {
        let Some(kind) = self.containers.get(name) else {
            return;
        };
        let Some(function) = self.functions.last_mut() else {
            return; // A module-level statement: run once, on import.
        };
        let scope = function.scope();
        if scope.locals.contains(name) && !scope.globals.contains(name) {
            return;
        }
        let function = function.def.name.to_string();
        self.found
            .entry(name.to_owned())
            .or_insert_with(|| MutatedGlobal { kind, function });
    }

    /// A store to `target`: `NAME[...] = `, or `NAME = ` under `global NAME`.
    fn store(&mut self, target: &Expr) {
        match target {
            Expr::Subscript(subscript) => {
                if let Expr::Name(name) = &*subscript.value {
                    self.changes(name.id.as_str());
                }
            }
            Expr::Name(name) => {
                if !self.containers.contains_key(name.id.as_str()) {
                    return;
                }
                let declared = self
                    .functions
                    .last_mut()
                    .is_some_and(|function| function.scope().globals.contains(name.id.as_str()));
                if declared {
                    self.changes(name.id.as_str());
                }
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                for element in elts {
                    self.store(element);
                }
            }
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for Mutations<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                self.functions.push(Function { def, scope: None });
                for inner in &def.body {
                    self.visit_stmt(inner);
                }
                self.functions.pop();
                return;
            }
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    self.store(target);
                }
            }
            Stmt::AugAssign(assign) => self.store(&assign.target),
            Stmt::AnnAssign(assign) if assign.value.is_some() => self.store(&assign.target),
            Stmt::Delete(delete) => {
                for target in &delete.targets {
                    if let Expr::Subscript(subscript) = target {
                        if let Expr::Name(name) = &*subscript.value {
                            self.changes(name.id.as_str());
                        }
                    }
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            if let Expr::Attribute(attribute) = &*call.func {
                if let Expr::Name(name) = &*attribute.value {
                    if MUTATING_METHODS.contains(&attribute.attr.as_str()) {
                        self.changes(name.id.as_str());
                    }
                }
            }
        }
        visitor::walk_expr(self, expr);
    }
}

/// The names one function's own body declares `global` and binds (nested functions and
/// classes have scopes of their own).
#[derive(Default)]
struct Scope {
    globals: FxHashSet<String>,
    locals: FxHashSet<String>,
}

impl<'a> Visitor<'a> for Scope {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                self.locals.insert(def.name.to_string());
                return;
            }
            Stmt::ClassDef(class) => {
                self.locals.insert(class.name.to_string());
                return;
            }
            Stmt::Global(global) => {
                self.globals
                    .extend(global.names.iter().map(ToString::to_string));
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(name) = expr {
            if name.ctx == ast::ExprContext::Store {
                self.locals.insert(name.id.to_string());
            }
        }
        visitor::walk_expr(self, expr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(source: &str) -> Vec<(String, &'static str, String)> {
        let parsed = crate::syntax::parse(source);
        let mut found: Vec<_> = collect(&parsed.module.body, source)
            .into_iter()
            .map(|(name, global)| (name, global.kind, global.function))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn a_container_a_function_changes_is_found_with_the_function() {
        let source = "\
SCALES = [1.0, 2.0]
TABLE = {}
SEEN = set()
FIXED = [1, 2]
FIXED.append(3)
COUNT = [0]

def set_scales(values):
    SCALES.clear()
    SCALES.extend(values)

class Registry:
    def register(self, key, value):
        TABLE[key] = value

def remember(x):
    SEEN.add(x)

def rebinds():
    global COUNT
    COUNT = [1]

def shadows(FIXED):
    FIXED.append(4)
";
        assert_eq!(
            found(source),
            [
                ("COUNT".to_owned(), "list", "rebinds".to_owned()),
                ("SCALES".to_owned(), "list", "set_scales".to_owned()),
                ("SEEN".to_owned(), "set", "remember".to_owned()),
                ("TABLE".to_owned(), "dict", "register".to_owned()),
            ]
        );
    }

    #[test]
    fn a_local_of_the_same_name_and_a_read_are_not_changes() {
        let source = "\
NAMES = ['a']

def local():
    NAMES = []
    NAMES.append('b')
    return NAMES

def reads():
    return len(NAMES) + NAMES.count('a')
";
        assert_eq!(found(source), []);
    }
}
