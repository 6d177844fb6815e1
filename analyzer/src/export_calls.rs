//! The export calls a file makes, as the user wrote them: each is an entrypoint the tracer can
//! reach by running the user's own code path (the script, or the function around the call).
//!
//! What is found: calls of `torch.export.export`, `torch.export.draft_export` and
//! `torch.onnx.export` (the dynamo exporter, unless `dynamo=False` is written), however the file
//! imports them. Calls that wrap an export (`aoti_compile_and_package(torch.export.export(...))`,
//! ExecuTorch's `to_edge(...)`) are found through the export call they wrap. For each, how the
//! program reaches it ([`CallReach`]), whether it sits in a loop, and the path a
//! `torch.export.save` next to it writes.

use ruff_text_size::{Ranged, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::SourceFile;
use crate::names;
use crate::syntax::{
    self,
    ast::{self, Expr, Stmt},
};

/// The functions whose call is an export, by qualified name.
const EXPORT_FUNCTIONS: &[&str] = &[
    "torch.export.export",
    "torch.export.draft_export",
    "torch.export._trace._export",
    "torch._export.export",
    "torch.onnx.export",
];

/// The functions that write an exported program to a path, and the parameter that names it.
const SAVE_FUNCTIONS: &[(&str, usize, &str)] = &[
    ("torch.export.save", 1, "f"),
    (
        "torch._inductor.aoti_compile_and_package",
        1,
        "package_path",
    ),
];

/// One export call of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportCall {
    /// The whole call expression.
    pub range: TextRange,
    /// The export function called, by qualified name (`torch.export.export`).
    pub function: String,
    /// The function (or `Class.method`) the call is written in; `None` at module level.
    pub scope: Option<String>,
    /// How the tracer can make the program reach the call.
    pub reach: CallReach,
    /// The call is in a `for` or `while` loop: each iteration exports, the first is traced.
    pub in_loop: bool,
    /// The path a `torch.export.save` (or AOTInductor packaging) of the same scope writes,
    /// when it is a string literal or an `argparse` default.
    pub save_path: Option<String>,
}

/// How running the user's code reaches an export call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallReach {
    /// Running the file as a script does: the call is in module-level code (the
    /// `if __name__ == "__main__":` block included), or in a function or class that code
    /// names, directly or through other functions of the file.
    Script,
    /// The file is imported and `name` called with no arguments: a module-level function (a
    /// pytest test, an `export()` helper) or a method of a class built with no arguments
    /// (`TestExport.test_export`), that running the script does not reach.
    Call { name: String },
    /// Nothing in the file runs the call on its own: the sentence says why.
    Unreachable { why: String },
}

/// The export calls of `file`, in source order.
pub fn export_calls(file: SourceFile<'_>) -> Vec<ExportCall> {
    // Nearly every file calls no export function: the text says so without a parse.
    if !(file.text.contains("export") && file.text.contains('(')) {
        return Vec::new();
    }
    let parsed = syntax::parse(file.text);
    let body = &parsed.module.body;
    let imports = FileImports::new(body, file);
    let mut finder = Finder {
        imports: &imports,
        scopes: Vec::new(),
        loops: 0,
        found: Vec::new(),
        saves: Vec::new(),
        argparse_defaults: FxHashMap::default(),
    };
    finder.body(body);
    let reached = script_reached_names(body);
    let Finder {
        found,
        saves,
        argparse_defaults,
        ..
    } = finder;
    found
        .into_iter()
        .map(|site| {
            let reach = reach_of(&site, &reached);
            let save_path = saves
                .iter()
                .filter(|save| {
                    save.scope == site.scope_path()
                        && (save.range.start() > site.range.end()
                            || save.range.contains_range(site.range))
                })
                .find_map(|save| save.path.resolve(&argparse_defaults));
            let scope = site.scope_path().map(|scope| scope.join("."));
            ExportCall {
                range: site.range,
                function: site.function,
                scope,
                reach,
                in_loop: site.in_loop,
                save_path,
            }
        })
        .collect()
}

/// What a name of the file is bound to through any of its imports, at module level or in a
/// function (`from torch.export import export` inside `main()` is common in scripts).
struct FileImports {
    bindings: FxHashMap<String, String>,
}

impl FileImports {
    fn new(body: &[Stmt], file: SourceFile<'_>) -> Self {
        let mut bindings = FxHashMap::default();
        let mut stack: Vec<&[Stmt]> = vec![body];
        while let Some(block) = stack.pop() {
            for stmt in block {
                for (local, qualified) in names::import_bindings(stmt, file) {
                    bindings.insert(local, qualified);
                }
                stack.extend(nested_blocks(stmt));
            }
        }
        Self { bindings }
    }
}

impl names::Resolve for FileImports {
    fn qualified(&self, expr: &Expr) -> Option<String> {
        names::qualified_through(self, expr)
    }

    fn binding(&self, name: &str) -> Option<&str> {
        self.bindings.get(name).map(String::as_str)
    }
}

/// The statement blocks nested in `stmt`, function and class bodies included.
fn nested_blocks(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::FunctionDef(def) => vec![&def.body],
        Stmt::ClassDef(class) => vec![&class.body],
        Stmt::If(if_stmt) => std::iter::once(if_stmt.body.as_slice())
            .chain(if_stmt.elif_else_clauses.iter().map(|c| c.body.as_slice()))
            .collect(),
        Stmt::For(for_stmt) => vec![&for_stmt.body, &for_stmt.orelse],
        Stmt::While(while_stmt) => vec![&while_stmt.body, &while_stmt.orelse],
        Stmt::With(with) => vec![&with.body],
        Stmt::Try(try_stmt) => {
            let mut blocks = vec![
                try_stmt.body.as_slice(),
                &try_stmt.orelse,
                &try_stmt.finalbody,
            ];
            for ast::ExceptHandler::ExceptHandler(handler) in &try_stmt.handlers {
                blocks.push(&handler.body);
            }
            blocks
        }
        Stmt::Match(match_stmt) => match_stmt.cases.iter().map(|c| c.body.as_slice()).collect(),
        _ => Vec::new(),
    }
}

/// A scope the walk is in: a function or a class, with what running it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Scope {
    name: String,
    kind: ScopeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScopeKind {
    Class {
        /// `unittest.TestCase` style: built with the test's name.
        test_case: bool,
    },
    Function {
        /// Parameters without a default, `self` and `cls` not counted.
        required: usize,
        /// A method: its first parameter is the instance.
        method: bool,
    },
}

struct Site {
    range: TextRange,
    function: String,
    scopes: Vec<Scope>,
    in_loop: bool,
}

impl Site {
    fn scope_path(&self) -> Option<Vec<String>> {
        (!self.scopes.is_empty()).then(|| self.scopes.iter().map(|s| s.name.clone()).collect())
    }
}

/// Where a save writes: a literal, or `args.<name>` of an argparse namespace.
enum SavePath {
    Literal(String),
    Argument(String),
}

impl SavePath {
    fn resolve(&self, defaults: &FxHashMap<String, String>) -> Option<String> {
        match self {
            SavePath::Literal(path) => Some(path.clone()),
            SavePath::Argument(name) => defaults.get(name).cloned(),
        }
    }
}

struct Save {
    range: TextRange,
    scope: Option<Vec<String>>,
    path: SavePath,
}

struct Finder<'i> {
    imports: &'i FileImports,
    scopes: Vec<Scope>,
    loops: usize,
    found: Vec<Site>,
    saves: Vec<Save>,
    /// `dest -> default` of every `add_argument("--name", default="...")` of the file.
    argparse_defaults: FxHashMap<String, String>,
}

impl Finder<'_> {
    fn scope_path(&self) -> Option<Vec<String>> {
        (!self.scopes.is_empty()).then(|| self.scopes.iter().map(|s| s.name.clone()).collect())
    }

    fn body(&mut self, body: &[Stmt]) {
        for stmt in body {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                for decorator in &def.decorator_list {
                    self.expr(&decorator.expression);
                }
                let method = matches!(
                    self.scopes.last(),
                    Some(Scope {
                        kind: ScopeKind::Class { .. },
                        ..
                    })
                );
                let parameters = &def.parameters;
                let positional: Vec<&ast::ParameterWithDefault> = parameters
                    .posonlyargs
                    .iter()
                    .chain(&parameters.args)
                    .collect();
                let skipped = usize::from(method && !positional.is_empty());
                let required = positional
                    .iter()
                    .skip(skipped)
                    .filter(|p| p.default.is_none())
                    .count()
                    + parameters
                        .kwonlyargs
                        .iter()
                        .filter(|p| p.default.is_none())
                        .count();
                self.scopes.push(Scope {
                    name: def.name.to_string(),
                    kind: ScopeKind::Function { required, method },
                });
                let loops = std::mem::take(&mut self.loops);
                self.body(&def.body);
                self.loops = loops;
                self.scopes.pop();
            }
            Stmt::ClassDef(class) => {
                let test_case = class.arguments.as_ref().is_some_and(|arguments| {
                    arguments.args.iter().any(|base| {
                        names::dotted(base).is_some_and(|base| base.ends_with("TestCase"))
                    })
                });
                self.scopes.push(Scope {
                    name: class.name.to_string(),
                    kind: ScopeKind::Class { test_case },
                });
                self.body(&class.body);
                self.scopes.pop();
            }
            Stmt::For(_) | Stmt::While(_) => {
                self.loops += 1;
                self.walk_children(stmt);
                self.loops -= 1;
            }
            _ => self.walk_children(stmt),
        }
    }

    /// The expressions of `stmt` and its nested blocks.
    fn walk_children(&mut self, stmt: &Stmt) {
        struct Expressions<'e>(Vec<&'e Expr>);
        impl<'e> ast::visitor::Visitor<'e> for Expressions<'e> {
            fn visit_stmt(&mut self, _stmt: &'e Stmt) {}
            fn visit_expr(&mut self, expr: &'e Expr) {
                self.0.push(expr);
            }
        }
        let mut expressions = Expressions(Vec::new());
        ast::visitor::walk_stmt(&mut expressions, stmt);
        for expr in expressions.0 {
            self.expr(expr);
        }
        for block in nested_blocks(stmt) {
            self.body(block);
        }
    }

    fn expr(&mut self, expr: &Expr) {
        struct Calls<'e>(Vec<&'e ast::ExprCall>);
        impl<'e> ast::visitor::Visitor<'e> for Calls<'e> {
            fn visit_expr(&mut self, expr: &'e Expr) {
                if let Expr::Call(call) = expr {
                    self.0.push(call);
                }
                ast::visitor::walk_expr(self, expr);
            }
        }
        let mut calls = Calls(Vec::new());
        ast::visitor::Visitor::visit_expr(&mut calls, expr);
        for call in calls.0 {
            self.call(call);
        }
    }

    fn call(&mut self, call: &ast::ExprCall) {
        use names::Resolve;
        if let Some(last) = self.imports.last_name(&call.func) {
            if last == "add_argument" {
                self.note_argument(call);
                return;
            }
            if !matches!(
                last,
                "export" | "draft_export" | "_export" | "save" | "aoti_compile_and_package"
            ) {
                return;
            }
        }
        let Some(function) = self.imports.qualified(&call.func) else {
            return;
        };
        if let Some((_, position, keyword)) =
            SAVE_FUNCTIONS.iter().find(|(name, _, _)| *name == function)
        {
            let path = call
                .arguments
                .find_keyword(keyword)
                .map(|k| &k.value)
                .or_else(|| call.arguments.args.get(*position));
            let path = match path {
                Some(expr) => match (names::string_literal(expr), expr) {
                    (Some(literal), _) => Some(SavePath::Literal(literal.to_owned())),
                    (None, Expr::Attribute(attribute)) => {
                        Some(SavePath::Argument(attribute.attr.to_string()))
                    }
                    _ => None,
                },
                None => None,
            };
            if let Some(path) = path {
                self.saves.push(Save {
                    range: call.range(),
                    scope: self.scope_path(),
                    path,
                });
            }
            return;
        }
        if !EXPORT_FUNCTIONS.contains(&function.as_str()) {
            return;
        }
        let legacy_onnx = function == "torch.onnx.export"
            && call.arguments.find_keyword("dynamo").is_some_and(
                |k| matches!(&k.value, Expr::BooleanLiteral(literal) if !literal.value),
            );
        if legacy_onnx {
            return;
        }
        self.found.push(Site {
            range: call.range(),
            function,
            scopes: self.scopes.clone(),
            in_loop: self.loops > 0,
        });
    }

    /// `parser.add_argument("--out", default="model.pt2")`: `out` defaults to the path.
    fn note_argument(&mut self, call: &ast::ExprCall) {
        let Some(default) = call
            .arguments
            .find_keyword("default")
            .and_then(|k| names::string_literal(&k.value))
        else {
            return;
        };
        let dest = names::argparse_destination(call);
        if let Some(dest) = dest {
            self.argparse_defaults.insert(dest, default.to_owned());
        }
    }
}

/// The module-level names that running the file as a script uses: those its module-level code
/// reads (the `__main__` block included), then, transitively, those read by the bodies of the
/// functions and classes so named.
fn script_reached_names(body: &[Stmt]) -> FxHashSet<String> {
    let mut definitions: FxHashMap<&str, &Stmt> = FxHashMap::default();
    let mut script_code: Vec<&Stmt> = Vec::new();
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(def) => {
                definitions.insert(def.name.as_str(), stmt);
            }
            Stmt::ClassDef(class) => {
                definitions.insert(class.name.as_str(), stmt);
            }
            other => script_code.push(other),
        }
    }
    let mut reached: FxHashSet<String> = FxHashSet::default();
    let mut queue: Vec<&Stmt> = script_code;
    // Decorators and default values run when the definition runs.
    for stmt in body {
        if let Stmt::FunctionDef(def) = stmt {
            for decorator in &def.decorator_list {
                names_read_in_expr(&decorator.expression, &mut reached);
            }
        }
    }
    let mut expanded: FxHashSet<&str> = FxHashSet::default();
    loop {
        for stmt in queue.drain(..) {
            names_read(stmt, &mut reached);
        }
        let next: Vec<&str> = reached
            .iter()
            .filter_map(|name| definitions.get_key_value(name.as_str()).map(|(k, _)| *k))
            .filter(|name| !expanded.contains(name))
            .collect();
        if next.is_empty() {
            return reached;
        }
        for name in next {
            expanded.insert(name);
            match definitions[name] {
                Stmt::FunctionDef(def) => queue.extend(def.body.iter()),
                Stmt::ClassDef(class) => queue.extend(class.body.iter()),
                _ => {}
            }
        }
    }
}

fn names_read(stmt: &Stmt, out: &mut FxHashSet<String>) {
    struct Reads<'o>(&'o mut FxHashSet<String>);
    impl<'e> ast::visitor::Visitor<'e> for Reads<'_> {
        fn visit_expr(&mut self, expr: &'e Expr) {
            if let Expr::Name(name) = expr {
                self.0.insert(name.id.to_string());
            }
            ast::visitor::walk_expr(self, expr);
        }
    }
    ast::visitor::Visitor::visit_stmt(&mut Reads(out), stmt);
}

fn names_read_in_expr(expr: &Expr, out: &mut FxHashSet<String>) {
    let stmt = Stmt::Expr(ast::StmtExpr {
        node_index: ast::AtomicNodeIndex::default(),
        range: expr.range(),
        value: Box::new(expr.clone()),
    });
    names_read(&stmt, out);
}

/// How the program reaches `site`, given the names running the script uses.
fn reach_of(site: &Site, reached: &FxHashSet<String>) -> CallReach {
    let Some(outer) = site.scopes.first() else {
        return CallReach::Script;
    };
    if reached.contains(&outer.name) {
        return CallReach::Script;
    }
    let path: Vec<&str> = site.scopes.iter().map(|s| s.name.as_str()).collect();
    let dotted = path.join(".");
    match site.scopes.as_slice() {
        [
            Scope {
                kind: ScopeKind::Function { required: 0, .. },
                ..
            },
        ]
        | [
            Scope {
                kind: ScopeKind::Class { .. },
                ..
            },
            Scope {
                kind:
                    ScopeKind::Function {
                        required: 0,
                        method: true,
                    },
                ..
            },
        ] => CallReach::Call { name: dotted },
        [
            Scope {
                kind: ScopeKind::Function { required, .. },
                name,
            },
        ] => CallReach::Unreachable {
            why: format!(
                "`{name}` takes {required} required argument{} and nothing in the file calls it",
                if *required == 1 { "" } else { "s" }
            ),
        },
        _ => CallReach::Unreachable {
            why: format!("nothing in the file runs `{dotted}` on its own"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(text: &str) -> Vec<ExportCall> {
        export_calls(SourceFile::detached(text))
    }

    fn line_of(text: &str, call: &ExportCall) -> usize {
        text[..call.range.start().to_usize()].matches('\n').count() + 1
    }

    #[test]
    fn a_script_with_main_reaches_its_export_through_main() {
        let text = r#"import argparse
import torch
from torch.export import Dim


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="classifier.pt2")
    args = parser.parse_args()
    model = build().eval()
    ep = torch.export.export(model, (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim("batch")}})
    torch.export.save(ep, args.out)


if __name__ == "__main__":
    main()
"#;
        let found = calls(text);
        assert_eq!(found.len(), 1, "{found:?}");
        let call = &found[0];
        assert_eq!(call.function, "torch.export.export");
        assert_eq!(call.scope.as_deref(), Some("main"));
        assert_eq!(call.reach, CallReach::Script);
        assert_eq!(call.save_path.as_deref(), Some("classifier.pt2"));
        assert!(!call.in_loop);
        assert_eq!(line_of(text, call), 11);
    }

    #[test]
    fn imports_in_any_scope_and_aliases_are_followed() {
        let text = "import torch\n\ndef test_export():\n    from torch.export import export as ex\n    ex(M(), (torch.randn(2),))\n\ndef helper(model, x):\n    return torch.export.draft_export(model, (x,))\n";
        let found = calls(text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            found[0].reach,
            CallReach::Call {
                name: "test_export".to_owned()
            }
        );
        assert_eq!(found[1].function, "torch.export.draft_export");
        assert!(
            matches!(&found[1].reach, CallReach::Unreachable { why } if why.contains("2 required arguments")),
            "{:?}",
            found[1].reach
        );
    }

    #[test]
    fn loops_methods_wrappers_and_the_legacy_onnx_exporter() {
        let text = r#"import torch
from torch._inductor import aoti_compile_and_package


class TestExport:
    def test_all(self):
        for width in (8, 16):
            aoti_compile_and_package(torch.export.export(M(width), (x,)), package_path="m.pt2")


class Exporter:
    def run(self):
        torch.onnx.export(self.model, (x,), dynamo=True)
        torch.onnx.export(self.model, (x,), "m.onnx", dynamo=False)


Exporter().run()
"#;
        let found = calls(text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            found[0].reach,
            CallReach::Call {
                name: "TestExport.test_all".to_owned()
            }
        );
        assert!(found[0].in_loop);
        assert_eq!(found[0].save_path.as_deref(), Some("m.pt2"));
        assert_eq!(found[1].function, "torch.onnx.export");
        assert_eq!(found[1].reach, CallReach::Script);
    }

    #[test]
    fn files_without_export_calls_have_none() {
        assert!(calls("import torch\nx = torch.randn(2)\n").is_empty());
        assert!(calls("def export(x):\n    return x\nexport(1)\n").is_empty());
    }
}
