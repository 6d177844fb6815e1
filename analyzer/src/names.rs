//! Import resolution: which qualified name a module-level binding refers to.

use crate::SourceFile;
use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::syntax::ast::{self, Stmt};

/// The package a relative import of `level` dots starts from, for a file at `module`; from
/// its namespace name when the import climbs above `module`'s packages
/// ([`SourceFile::namespace`]).
fn relative_base(file: SourceFile<'_>, level: u32) -> Option<String> {
    // In `pkg/mod.py` one dot means `pkg`; in `pkg/__init__.py` it means `pkg` itself.
    let drop = if file.is_package { level - 1 } else { level };
    let base = |module: &str| {
        let mut parts: Vec<&str> = module.split('.').collect();
        for _ in 0..drop {
            parts.pop()?;
        }
        Some(parts.join("."))
    };
    base(file.module?).or_else(|| base(file.namespace?))
}

/// Every name an import statement binds, with the qualified name it refers to.
pub(crate) fn import_bindings(stmt: &Stmt, file: SourceFile<'_>) -> Vec<(String, String)> {
    match stmt {
        Stmt::Import(import) => import
            .names
            .iter()
            .map(|alias| {
                if let Some(asname) = &alias.asname {
                    return (asname.id.to_string(), alias.name.id.to_string());
                }
                // `import a.b.c` binds `a`, which refers to the package `a`.
                let head = alias
                    .name
                    .id
                    .split('.')
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                (head.clone(), head)
            })
            .collect(),
        Stmt::ImportFrom(import) => {
            let Some(base) = import_from_base(import, file) else {
                return Vec::new();
            };
            // `from wrap import Wrapper` inside `wrap.py` itself (a `__main__` demo) names what
            // the module already binds: no new binding, and none that would refer to itself.
            // (A package's `from . import sub` imports a submodule: a binding.)
            let own_module = !file.is_package && file.module.is_some_and(|module| module == base);
            import
                .names
                .iter()
                .filter(|alias| alias.name.id.as_str() != "*")
                .filter(|alias| !(own_module && alias.asname.is_none()))
                .map(|alias| {
                    let local = alias.asname.as_ref().unwrap_or(&alias.name).id.to_string();
                    let qualified = if base.is_empty() {
                        alias.name.id.to_string()
                    } else {
                        format!("{base}.{}", alias.name.id)
                    };
                    (local, qualified)
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The module a `from ... import` statement imports from, its relative dots resolved.
fn import_from_base(import: &ast::StmtImportFrom, file: SourceFile<'_>) -> Option<String> {
    let module = import.module.as_ref().map(|m| m.id.to_string());
    if import.level == 0 {
        return module;
    }
    let package = relative_base(file, import.level)?;
    Some(match module {
        Some(module) if package.is_empty() => module,
        Some(module) => format!("{package}.{module}"),
        None => package,
    })
}

/// The module `from module import *` binds every public name of, for a star import.
pub(crate) fn star_import(stmt: &Stmt, file: SourceFile<'_>) -> Option<String> {
    match stmt {
        Stmt::ImportFrom(import)
            if import
                .names
                .iter()
                .any(|alias| alias.name.id.as_str() == "*") =>
        {
            import_from_base(import, file).filter(|base| !base.is_empty())
        }
        _ => None,
    }
}

/// What a module says of its `__all__`, the names `from module import *` binds.
pub(crate) enum DeclaredAll {
    /// No `__all__`: every public module-level name is star-exported.
    Undeclared,
    /// A literal list or tuple of names, with what `__all__ += [...]` adds.
    Listed(Vec<String>),
    /// An `__all__` the analysis cannot read (computed, changed by a call).
    Computed,
}

/// The names `body`'s module-level `__all__` lists.
pub(crate) fn declared_all(body: &[Stmt]) -> DeclaredAll {
    fn literal_names(expr: &ast::Expr) -> Option<Vec<String>> {
        let elements = match expr {
            ast::Expr::List(list) => &list.elts,
            ast::Expr::Tuple(tuple) => &tuple.elts,
            _ => return None,
        };
        elements
            .iter()
            .map(|element| string_literal(element).map(str::to_owned))
            .collect()
    }
    let is_all =
        |expr: &ast::Expr| matches!(expr, ast::Expr::Name(name) if name.id.as_str() == "__all__");
    let mut declared = DeclaredAll::Undeclared;
    for stmt in module_level_statements(body) {
        let written = match stmt {
            Stmt::Assign(assign) if assign.targets.iter().any(is_all) => {
                match (assign.targets.len(), literal_names(&assign.value)) {
                    (1, Some(names)) => Some(names),
                    _ => None,
                }
            }
            Stmt::AugAssign(assign) if is_all(&assign.target) => {
                match (&declared, literal_names(&assign.value)) {
                    (DeclaredAll::Listed(before), Some(added)) => {
                        Some(before.iter().cloned().chain(added).collect())
                    }
                    _ => None,
                }
            }
            Stmt::AnnAssign(assign) if is_all(&assign.target) => {
                assign.value.as_deref().and_then(literal_names)
            }
            // `__all__.append(...)`, `__all__.extend(...)`.
            Stmt::Expr(ast::StmtExpr { value, .. }) => match &**value {
                ast::Expr::Call(call) if matches!(&*call.func, ast::Expr::Attribute(method) if is_all(&method.value)) => {
                    None
                }
                _ => continue,
            },
            _ => continue,
        };
        declared = written.map_or(DeclaredAll::Computed, DeclaredAll::Listed);
    }
    declared
}

/// The statements that run at module level, including those nested in `if`, `try` and `with`
/// blocks (`if TYPE_CHECKING:`, `try: import x except ImportError:`, `if __name__ == ...`).
pub(crate) fn module_level_statements(body: &[Stmt]) -> Vec<&Stmt> {
    let mut out = Vec::new();
    collect(body, &mut out);
    out
}

fn collect<'a>(body: &'a [Stmt], out: &mut Vec<&'a Stmt>) {
    for stmt in body {
        out.push(stmt);
        match stmt {
            Stmt::If(if_stmt) => {
                collect(&if_stmt.body, out);
                for clause in &if_stmt.elif_else_clauses {
                    collect(&clause.body, out);
                }
            }
            Stmt::Try(try_stmt) => {
                collect(&try_stmt.body, out);
                for ast::ExceptHandler::ExceptHandler(handler) in &try_stmt.handlers {
                    collect(&handler.body, out);
                }
                collect(&try_stmt.orelse, out);
                collect(&try_stmt.finalbody, out);
            }
            Stmt::With(with) => collect(&with.body, out),
            _ => {}
        }
    }
}

/// A qualified name split after the longest proper prefix that `is_module` accepts:
/// `pkg.mod.Cls.method` is `("pkg.mod", "Cls.method")` when `pkg.mod` is a module.
pub(crate) fn split_at_module(
    name: &str,
    is_module: impl Fn(&str) -> bool,
) -> Option<(&str, &str)> {
    let mut end = name.len();
    while let Some(dot) = name[..end].rfind('.') {
        if is_module(&name[..dot]) {
            return Some((&name[..dot], &name[dot + 1..]));
        }
        end = dot;
    }
    None
}

/// The dotted name an expression spells, if it is a chain of names: `torch.nn.Module`.
pub(crate) fn dotted(expr: &ast::Expr) -> Option<String> {
    match expr {
        ast::Expr::Name(name) => Some(name.id.to_string()),
        ast::Expr::Attribute(attribute) => {
            let mut head = dotted(&attribute.value)?;
            head.push('.');
            head.push_str(attribute.attr.as_str());
            Some(head)
        }
        _ => None,
    }
}

/// What the names of one file refer to through its imports: how analyses that look for
/// particular functions (`torch.library.custom_op`, `torch.export.export`) recognise them
/// however the file imports them.
pub(crate) trait Resolve {
    /// The dotted name `expr` stands for, its first name replaced by the qualified name the
    /// file binds it to: `F.relu` is `torch.nn.functional.relu`; an unbound name stays as is.
    fn qualified(&self, expr: &ast::Expr) -> Option<String>;

    /// The last name of what `expr` refers to, without building the qualified name: a test
    /// that rules out most calls of a file before [`Self::qualified`] allocates.
    fn last_name<'s>(&'s self, expr: &'s ast::Expr) -> Option<&'s str> {
        match expr {
            ast::Expr::Attribute(attribute) => Some(attribute.attr.as_str()),
            ast::Expr::Name(name) => Some(
                self.binding(name.id.as_str())
                    .map_or(name.id.as_str(), |qualified| {
                        qualified.rsplit('.').next().unwrap_or(qualified)
                    }),
            ),
            _ => None,
        }
    }

    /// The qualified name a module-level `name` is bound to, when it is one.
    fn binding(&self, name: &str) -> Option<&str>;
}

/// [`Resolve::qualified`] from a file's bindings.
pub(crate) fn qualified_through(resolve: &dyn Resolve, expr: &ast::Expr) -> Option<String> {
    let dotted = dotted(expr)?;
    let (head, rest) = dotted
        .split_once('.')
        .map_or((dotted.as_str(), None), |(head, rest)| (head, Some(rest)));
    Some(match (resolve.binding(head), rest) {
        (Some(qualified), Some(rest)) => format!("{qualified}.{rest}"),
        (Some(qualified), None) => qualified.to_owned(),
        (None, _) => dotted,
    })
}

/// A string literal's value.
pub(crate) fn string_literal(expr: &ast::Expr) -> Option<&str> {
    match expr {
        ast::Expr::StringLiteral(literal) => Some(literal.value.to_str()),
        _ => None,
    }
}

/// An integer literal's value, with a leading minus sign.
pub(crate) fn int_literal(expr: &ast::Expr) -> Option<i64> {
    match expr {
        ast::Expr::NumberLiteral(ast::ExprNumberLiteral {
            value: ast::Number::Int(int),
            ..
        }) => int.as_i64(),
        ast::Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::USub,
            operand,
            ..
        }) => int_literal(operand).map(|value| -value),
        _ => None,
    }
}

/// A numeric literal's value as a float.
#[allow(clippy::cast_precision_loss)] // Literal bounds in model code are small.
pub(crate) fn number_literal(expr: &ast::Expr) -> Option<f64> {
    match expr {
        ast::Expr::NumberLiteral(ast::ExprNumberLiteral {
            value: ast::Number::Float(value),
            ..
        }) => Some(*value),
        ast::Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::USub,
            operand,
            ..
        }) => number_literal(operand).map(|value| -value),
        _ => int_literal(expr).map(|value| value as f64),
    }
}

/// The names `self.<name>` that `body` assigns anywhere (nested blocks included, nested
/// functions not), appended to `assigned` once each.
pub(crate) fn self_attributes_assigned(body: &[Stmt], assigned: &mut Vec<String>) {
    use crate::syntax::ast::visitor::{self, Visitor};
    struct Targets<'v>(&'v mut Vec<String>);
    impl Targets<'_> {
        fn target(&mut self, target: &ast::Expr) {
            match target {
                ast::Expr::Attribute(attribute) if matches!(&*attribute.value, ast::Expr::Name(name) if name.id.as_str() == "self") =>
                {
                    let name = attribute.attr.to_string();
                    if !self.0.contains(&name) {
                        self.0.push(name);
                    }
                }
                ast::Expr::Tuple(ast::ExprTuple { elts, .. })
                | ast::Expr::List(ast::ExprList { elts, .. }) => {
                    for element in elts {
                        self.target(element);
                    }
                }
                _ => {}
            }
        }
    }
    impl<'a> Visitor<'a> for Targets<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => return,
                Stmt::Assign(assign) => {
                    for target in &assign.targets {
                        self.target(target);
                    }
                }
                Stmt::AugAssign(assign) => self.target(&assign.target),
                Stmt::AnnAssign(assign) => self.target(&assign.target),
                _ => {}
            }
            visitor::walk_stmt(self, stmt);
        }
    }
    let mut targets = Targets(assigned);
    for stmt in body {
        targets.visit_stmt(stmt);
    }
}

/// The attribute an `add_argument("--max-len", ...)` call stores its value in on the parsed
/// namespace: `dest=`, else the first long option, else the first name, dashes as underscores.
pub(crate) fn argparse_destination(call: &ast::ExprCall) -> Option<String> {
    if let Some(dest) = call
        .arguments
        .find_keyword("dest")
        .and_then(|keyword| string_literal(&keyword.value))
    {
        return Some(dest.to_owned());
    }
    let flags: Vec<&str> = call
        .arguments
        .args
        .iter()
        .filter_map(string_literal)
        .collect();
    option_destination(&flags)
}

/// The attribute argparse stores an option of these flags in: the first long flag's, or the
/// first flag's, with dashes as underscores (`--block-size` is `block_size`).
pub(crate) fn option_destination<S: AsRef<str>>(flags: &[S]) -> Option<String> {
    let long = flags
        .iter()
        .map(AsRef::as_ref)
        .find(|flag| flag.starts_with("--"))
        .or_else(|| flags.first().map(AsRef::as_ref))?;
    Some(long.trim_start_matches('-').replace('-', "_"))
}

/// Whether a class is decorated `@dataclass` / `@dataclasses.dataclass(...)`.
pub(crate) fn is_dataclass(def: &ast::StmtClassDef) -> bool {
    def.decorator_list.iter().any(|decorator| {
        let callee = match &decorator.expression {
            ast::Expr::Call(call) => &*call.func,
            other => other,
        };
        dotted(callee).is_some_and(|name| name == "dataclass" || name.ends_with(".dataclass"))
    })
}

/// Module-level names the file changes after binding them, anywhere in it: rebound through
/// `global` in a function, augmented (`N += 1`), or changed in place (`CONFIG["k"] = v`,
/// `config.x = v`, `CONFIG.update(...)`).
pub(crate) fn changed_after_binding(body: &[Stmt]) -> rustc_hash::FxHashSet<&str> {
    use crate::syntax::ast::visitor::{self, Visitor};
    const CHANGES: &[&str] = &[
        "update",
        "pop",
        "popitem",
        "setdefault",
        "clear",
        "append",
        "extend",
        "insert",
        "remove",
    ];
    // The names are borrowed from the tree: every `self.x = ...` of the file passes here.
    struct Changed<'a>(rustc_hash::FxHashSet<&'a str>);
    impl<'a> Changed<'a> {
        fn base(&mut self, target: &'a ast::Expr) {
            match target {
                ast::Expr::Subscript(ast::ExprSubscript { value, .. })
                | ast::Expr::Attribute(ast::ExprAttribute { value, .. }) => self.base(value),
                ast::Expr::Name(name) => {
                    self.0.insert(name.id.as_str());
                }
                _ => {}
            }
        }
        fn target(&mut self, target: &'a ast::Expr) {
            match target {
                ast::Expr::Subscript(_) | ast::Expr::Attribute(_) => self.base(target),
                ast::Expr::Tuple(ast::ExprTuple { elts, .. })
                | ast::Expr::List(ast::ExprList { elts, .. }) => {
                    for element in elts {
                        self.target(element);
                    }
                }
                _ => {}
            }
        }
    }
    impl<'a> Visitor<'a> for Changed<'a> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::Global(global) => {
                    self.0
                        .extend(global.names.iter().map(ast::Identifier::as_str));
                }
                Stmt::Assign(assign) => {
                    for target in &assign.targets {
                        self.target(target);
                    }
                }
                Stmt::AugAssign(assign) => self.base(&assign.target),
                Stmt::AnnAssign(assign) => self.target(&assign.target),
                _ => {}
            }
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'a ast::Expr) {
            if let ast::Expr::Call(call) = expr {
                if let ast::Expr::Attribute(method) = &*call.func {
                    if CHANGES.contains(&method.attr.as_str()) {
                        self.base(&method.value);
                    }
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut changed = Changed(rustc_hash::FxHashSet::default());
    for stmt in body {
        changed.visit_stmt(stmt);
    }
    changed.0
}

/// Where the class around `at` builds its attribute `self.<name>`: an assignment to it
/// (`self.k_cache = torch.zeros(...)`) or a `self.register_buffer("k_cache", ...)` /
/// `register_parameter` call, in `__init__` first, then in the class's other methods.
pub(crate) fn self_attribute_origin(body: &[Stmt], at: TextSize, name: &str) -> Option<TextRange> {
    use crate::syntax::ast::visitor::{self, Visitor};
    struct Origin<'n> {
        name: &'n str,
        found: Option<TextRange>,
    }
    impl<'a> Visitor<'a> for Origin<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if self.found.is_some() {
                return;
            }
            let is_self_name = |target: &ast::Expr| {
                matches!(target, ast::Expr::Attribute(attribute)
                    if attribute.attr.as_str() == self.name
                        && matches!(&*attribute.value, ast::Expr::Name(owner) if owner.id.as_str() == "self"))
            };
            match stmt {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => return,
                Stmt::Assign(assign) if assign.targets.iter().any(is_self_name) => {
                    self.found = Some(stmt.range());
                }
                Stmt::AnnAssign(assign) if is_self_name(&assign.target) => {
                    self.found = Some(stmt.range());
                }
                Stmt::Expr(ast::StmtExpr { value, .. }) => {
                    if let ast::Expr::Call(call) = &**value
                        && let ast::Expr::Attribute(method) = &*call.func
                        && ["register_buffer", "register_parameter"].contains(&method.attr.as_str())
                        && call
                            .arguments
                            .args
                            .first()
                            .and_then(string_literal)
                            .is_some_and(|registered| registered == self.name)
                    {
                        self.found = Some(stmt.range());
                    }
                }
                _ => {}
            }
            visitor::walk_stmt(self, stmt);
        }
    }
    let class = body.iter().find_map(|stmt| match stmt {
        Stmt::ClassDef(class) if class.range().contains(at) => Some(class),
        _ => None,
    })?;
    let methods = class.body.iter().filter_map(|stmt| match stmt {
        Stmt::FunctionDef(def) => Some(def),
        _ => None,
    });
    let (init, others): (Vec<_>, Vec<_>) = methods.partition(|def| def.name.as_str() == "__init__");
    init.into_iter().chain(others).find_map(|def| {
        let mut origin = Origin { name, found: None };
        for stmt in &def.body {
            origin.visit_stmt(stmt);
        }
        origin.found
    })
}
