//! Where a branch on a tensor's value is, and what the fixes for it share: the `if` sites a
//! function holds (`BranchSites`), the predicate and what it reads (`Predicate`), what the
//! interpreter learnt about the function's names (`TensorNames`, `FunctionFacts`), and small
//! readers of the syntax around them. The `torch.cond` rewrite (`cond`) and the `torch.where`
//! rewrite (`where_rewrite`) both build on it.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use ruff_text_size::{Ranged, TextRange, TextSize};

use super::{ModuleImports, line_end};
use crate::SourceFile;
use crate::syntax::ast::visitor::{self, Visitor};
use crate::syntax::ast::{self, Expr, Stmt};

/// An `if` on a tensor's value and the code around it.
pub(crate) struct BranchSite<'a> {
    pub(crate) stmt: &'a ast::StmtIf,
    /// The function whose code holds it.
    pub(crate) function: &'a ast::StmtFunctionDef,
    /// The statements after the `if` in its block.
    pub(crate) rest: &'a [Stmt],
    /// Other statements come before the `if` in its block.
    pub(crate) follows_statements: bool,
    /// The block is the function's own body: falling off its end returns `None`.
    pub(crate) at_function_level: bool,
}

/// Every `if` inside a function, found in one walk of the module: a diagnostic looks its `if`
/// up here instead of searching from the module's top, which was quadratic in nesting depth.
pub(crate) struct BranchSites<'a> {
    /// In source order of their conditions, which never overlap.
    pub(crate) sites: Vec<BranchSite<'a>>,
}

impl<'a> BranchSites<'a> {
    pub(crate) fn new(body: &'a [Stmt]) -> Self {
        let mut sites = Vec::new();
        collect(body, None, false, &mut sites);
        sites.sort_by_key(|site| site.stmt.test.start());
        BranchSites { sites }
    }

    /// The `if` statement (inside a function) whose condition holds `condition`.
    pub(crate) fn find(&self, condition: TextRange) -> Option<&BranchSite<'a>> {
        let after = self
            .sites
            .partition_point(|site| site.stmt.test.start() <= condition.start());
        let site = self.sites[..after].last()?;
        site.stmt
            .test
            .range()
            .contains_range(condition)
            .then_some(site)
    }
}

fn collect<'a>(
    block: &'a [Stmt],
    function: Option<&'a ast::StmtFunctionDef>,
    at_function_level: bool,
    sites: &mut Vec<BranchSite<'a>>,
) {
    for (index, stmt) in block.iter().enumerate() {
        let mut nested = |body: &'a [Stmt]| collect(body, function, false, sites);
        match stmt {
            Stmt::If(if_stmt) => {
                nested(&if_stmt.body);
                for clause in &if_stmt.elif_else_clauses {
                    nested(&clause.body);
                }
                if let Some(function) = function {
                    sites.push(BranchSite {
                        stmt: if_stmt,
                        function,
                        rest: &block[index + 1..],
                        follows_statements: index > 0,
                        at_function_level,
                    });
                }
            }
            Stmt::FunctionDef(def) => collect(&def.body, Some(def), true, sites),
            Stmt::ClassDef(class) => collect(&class.body, None, false, sites),
            Stmt::For(for_stmt) => {
                nested(&for_stmt.body);
                nested(&for_stmt.orelse);
            }
            Stmt::While(while_stmt) => {
                nested(&while_stmt.body);
                nested(&while_stmt.orelse);
            }
            Stmt::With(with) => nested(&with.body),
            Stmt::Try(try_stmt) => {
                nested(&try_stmt.body);
                for handler in &try_stmt.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    nested(&handler.body);
                }
                nested(&try_stmt.orelse);
                nested(&try_stmt.finalbody);
            }
            _ => {}
        }
    }
}

impl BranchSite<'_> {
    /// The text a rewrite of this `if` reads: the statement, and the rest of its function when
    /// its body returns (the rest may become the other branch). Bounding this bounds the work.
    pub(crate) fn extent(&self) -> TextRange {
        let takes_rest = self.at_function_level
            && self.stmt.elif_else_clauses.is_empty()
            && !returns_in(&self.stmt.body).is_empty();
        match self.rest.last() {
            Some(last) if takes_rest => TextRange::new(self.stmt.start(), last.end()),
            _ => self.stmt.range(),
        }
    }
}

/// What the rewrites of every `if` in one function need to know about the whole function,
/// computed once per function: reading the function for each `if` was quadratic.
#[derive(Default)]
pub(crate) struct FunctionFacts {
    /// Where each name is read, in source order (closures included).
    pub(crate) loads: HashMap<String, Vec<TextSize>>,
    /// Every identifier the function's text spells (in code, strings or comments).
    pub(crate) words: HashSet<String>,
}

impl FunctionFacts {
    pub(crate) fn of(function: &ast::StmtFunctionDef, text: &str) -> Self {
        let mut names = Names::default();
        for stmt in &function.body {
            names.visit_stmt(stmt);
        }
        let mut loads: HashMap<String, Vec<TextSize>> = HashMap::new();
        for (name, offset) in names.loads {
            loads.entry(name).or_default().push(offset);
        }
        for offsets in loads.values_mut() {
            offsets.sort_unstable();
        }
        let words = text[function.range()]
            .split(|c: char| !is_word_char(c))
            .filter(|word| !word.is_empty())
            .map(str::to_owned)
            .collect();
        FunctionFacts { loads, words }
    }

    /// Whether the function reads `name` outside `range`.
    pub(crate) fn reads_outside(&self, name: &str, range: TextRange) -> bool {
        self.loads.get(name).is_some_and(|offsets| {
            offsets.first().is_some_and(|first| *first < range.start())
                || offsets.last().is_some_and(|last| *last >= range.end())
        })
    }
}

/// [`FunctionFacts`] by function, filled as rewrites ask.
#[derive(Default)]
pub(crate) struct FunctionCache {
    pub(crate) facts: RefCell<HashMap<TextSize, Rc<FunctionFacts>>>,
}

impl FunctionCache {
    pub(crate) fn facts(&self, function: &ast::StmtFunctionDef, text: &str) -> Rc<FunctionFacts> {
        self.facts
            .borrow_mut()
            .entry(function.start())
            .or_insert_with(|| Rc::new(FunctionFacts::of(function, text)))
            .clone()
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Which local names hold tensors around the `if` (from the interpreter's `TensorIf` events).
#[derive(Debug, Default)]
pub(crate) struct TensorNames {
    pub(crate) before: BTreeSet<String>,
    /// At the end of each clause in source order; `None` where the clause never falls through.
    pub(crate) after: Vec<Option<BTreeSet<String>>>,
}

/// An `if`'s condition as a `torch.cond` predicate: a boolean tensor expression, with the
/// branches swapped for `if not …`.
pub(crate) struct Predicate<'a> {
    pub(crate) expr: &'a Expr,
    pub(crate) negated: bool,
}

impl<'a> Predicate<'a> {
    /// `None` when the condition is not known to be a boolean tensor (a bare float tensor, an
    /// `and`/`or` of conditions): `torch.cond` and `torch.where` need a boolean predicate.
    pub(crate) fn of(test: &'a Expr) -> Option<Self> {
        match test {
            Expr::UnaryOp(unary) if unary.op == ast::UnaryOp::Not => Predicate::of(&unary.operand)
                .map(|inner| Predicate {
                    expr: inner.expr,
                    negated: !inner.negated,
                }),
            _ if is_boolean_tensor(test) => Some(Predicate {
                expr: test,
                negated: false,
            }),
            _ => None,
        }
    }
}

/// Why a condition is not a predicate `torch.cond` takes.
pub(crate) fn predicate_problem(test: &Expr) -> String {
    match test {
        Expr::UnaryOp(unary) if unary.op == ast::UnaryOp::Not => predicate_problem(&unary.operand),
        Expr::BoolOp(_) => "the condition joins tests with `and`/`or`, which need Python bools; `torch.cond` takes one boolean tensor (`&` and `|` combine tensors)".to_owned(),
        Expr::Call(call) if callee_name(&call.func) == Some("equal") => {
            "`torch.equal` returns a Python bool; `torch.cond` takes a boolean tensor such as `(a == b).all()`".to_owned()
        }
        _ => "the condition is not a boolean tensor; `torch.cond` takes a comparison, `.any()` or `.all()`".to_owned(),
    }
}

/// A comparison, `.any()` / `.all()`, or `&`, `|`, `~` of those: a boolean tensor.
fn is_boolean_tensor(expr: &Expr) -> bool {
    match expr {
        Expr::Compare(_) => true,
        Expr::Call(call) => matches!(
            callee_name(&call.func),
            Some(
                "any"
                    | "all"
                    | "isnan"
                    | "isinf"
                    | "isfinite"
                    | "logical_and"
                    | "logical_or"
                    | "logical_not"
            )
        ),
        Expr::BinOp(binary) => {
            matches!(
                binary.op,
                ast::Operator::BitAnd | ast::Operator::BitOr | ast::Operator::BitXor
            ) && is_boolean_tensor(&binary.left)
                && is_boolean_tensor(&binary.right)
        }
        Expr::UnaryOp(unary) => {
            unary.op == ast::UnaryOp::Invert && is_boolean_tensor(&unary.operand)
        }
        _ => false,
    }
}

/// The last segment of a callee: `any` for `x.any`, `torch.any` and `any`.
pub(crate) fn callee_name(func: &Expr) -> Option<&str> {
    match func {
        Expr::Attribute(attribute) => Some(attribute.attr.as_str()),
        Expr::Name(name) => Some(name.id.as_str()),
        _ => None,
    }
}

/// The rewrite's context: the file and what the interpreter learnt.
pub(crate) struct Context<'a> {
    pub(crate) file: SourceFile<'a>,
    pub(crate) imports: &'a ModuleImports,
    pub(crate) tensors: &'a TensorNames,
    pub(crate) functions: &'a FunctionCache,
}

/// `self.hits` for a chain of attributes on a name.
pub(crate) fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(name) => Some(name.id.to_string()),
        Expr::Attribute(attribute) => {
            dotted(&attribute.value).map(|head| format!("{head}.{}", attribute.attr))
        }
        _ => None,
    }
}

/// The trailing comment on the line where `offset` is, after the code.
pub(crate) fn trailing_comment(text: &str, offset: TextSize) -> Option<&str> {
    let rest = &text[offset.to_usize()..line_end(text, offset).to_usize()];
    let start = rest.find('#')?;
    rest[..start]
        .trim()
        .trim_start_matches(':')
        .trim()
        .is_empty()
        .then(|| rest[start..].trim_end())
}

/// Every name read and written by a statement or expression, outside nested scopes' own
/// bindings (a nested function's or lambda's reads still count: they are closures).
#[derive(Default)]
pub(crate) struct Names {
    pub(crate) loads: Vec<(String, TextSize)>,
    pub(crate) stores: Vec<String>,
}

impl<'a> Visitor<'a> for Names {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                self.stores.push(def.name.to_string());
                let mut inner = Names::default();
                visitor::walk_stmt(&mut inner, stmt);
                self.loads.extend(inner.loads);
            }
            Stmt::ClassDef(class) => self.stores.push(class.name.to_string()),
            Stmt::Import(_) | Stmt::ImportFrom(_) => {
                visitor::walk_stmt(self, stmt);
                if let Stmt::Import(import) = stmt {
                    for alias in &import.names {
                        let local = alias.asname.as_ref().unwrap_or(&alias.name);
                        let head = local.as_str().split('.').next().unwrap_or_default();
                        self.stores.push(head.to_owned());
                    }
                } else if let Stmt::ImportFrom(import) = stmt {
                    for alias in &import.names {
                        let local = alias.asname.as_ref().unwrap_or(&alias.name);
                        self.stores.push(local.to_string());
                    }
                }
            }
            // `x += 1` reads `x` before it writes it.
            Stmt::AugAssign(assign) => {
                if let Expr::Name(name) = &*assign.target {
                    self.loads.push((name.id.to_string(), name.start()));
                }
                visitor::walk_stmt(self, stmt);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) => match name.ctx {
                ast::ExprContext::Load => self.loads.push((name.id.to_string(), name.start())),
                _ => self.stores.push(name.id.to_string()),
            },
            // Comprehension and lambda variables are their own scope's.
            Expr::Lambda(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_)
            | Expr::Generator(_) => {
                let mut inner = Names::default();
                visitor::walk_expr(&mut inner, expr);
                self.loads.extend(inner.loads);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// Every `return` in a block, outside nested functions.
pub(crate) fn returns_in(body: &[Stmt]) -> Vec<&ast::StmtReturn> {
    #[derive(Default)]
    struct Returns<'a>(Vec<&'a ast::StmtReturn>);
    impl<'a> Visitor<'a> for Returns<'a> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::Return(ret) => self.0.push(ret),
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    let mut returns = Returns::default();
    returns.visit_body(body);
    returns.0
}
