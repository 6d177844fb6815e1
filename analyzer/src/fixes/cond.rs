//! The `torch.cond` rewrite of an `if` on a tensor's value (PT101).
//!
//! Each branch becomes a nested function taking as operands the tensors it reads; the `if`
//! becomes `torch.cond(pred, true_fn, false_fn, (operands…))`. Two shapes are rewritten: both
//! branches return (an `if` whose body returns may take the rest of the function as its other
//! branch), or both assign names that the code after it reads (an `if` without `else` takes
//! the identity as its other branch). What torch 2.15 refuses inside a branch, measured:
//! returning an operand or a view of one as it is ("Higher order ops do not support aliasing",
//! so such outputs get `.clone()`), mutating an operand, a buffer or `self`, non-tensor
//! operands in non-strict export, and outputs of different shapes or dtypes. Branches that
//! would need one of those, or that return in one branch only, get an explanation instead.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write;

use ruff_text_size::{Ranged, TextRange, TextSize};

use super::branches::{
    BranchSite, Context, FunctionFacts, Names, Predicate, TensorNames, dotted, predicate_problem,
    returns_in, trailing_comment,
};
use super::{indentation_at, line_end, line_start, reindent};
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::syntax::ast::visitor::{self, Visitor};
use crate::syntax::ast::{Expr, Stmt};

/// How the branches end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Every path of both branches returns: the `if` becomes `return torch.cond(...)`.
    Returns,
    /// Neither branch returns: the names they assign become the cond's outputs.
    Assigns,
}

/// One branch's statements and the text that holds them (comments included).
struct Branch<'a> {
    body: &'a [Stmt],
    /// Whole lines from the first statement (or the comments before it) to the last.
    text: TextRange,
    /// The body sits on its header's line (`else: return x`).
    inline: bool,
}

impl<'a> Branch<'a> {
    fn new(text: &str, body: &'a [Stmt], header_end: TextSize, end: TextSize) -> Option<Self> {
        let (first, last) = (body.first()?, body.last()?);
        let inline = first.start() < line_end(text, header_end);
        let mut start = if inline {
            first.start()
        } else {
            line_end(text, header_end)
        };
        // Blank lines between the header and the body are not the body's.
        while start < first.start()
            && text[start.to_usize()..line_end(text, start).to_usize()]
                .trim()
                .is_empty()
        {
            start = line_end(text, start);
        }
        let end = if inline { last.end() } else { end };
        // Blank lines before the next clause stay where they are.
        let trimmed = text[start.to_usize()..end.to_usize()].trim_end();
        let end = start + TextSize::try_from(trimmed.len()).ok()?;
        let end = if inline { end } else { line_end(text, end) };
        Some(Branch {
            body,
            text: TextRange::new(start, end.max(start)),
            inline,
        })
    }
}

/// Which names a block reads and writes, in the order Python runs them.
#[derive(Default)]
struct NameUse {
    /// Names read where the block has not yet assigned them: they come from outside.
    free: Vec<(String, TextSize)>,
    /// Names the block assigns anywhere (outside nested scopes).
    assigned: BTreeSet<String>,
}

impl NameUse {
    fn of(body: &[Stmt]) -> Self {
        let mut result = NameUse::default();
        result.add_block(body, HashSet::new());
        result
    }

    /// Adds what `body` reads and writes, where `bound` holds for sure on entry.
    fn add_block(&mut self, body: &[Stmt], mut bound: HashSet<String>) {
        let result = self;
        for stmt in body {
            // An `if` reads its condition first, then each clause on its own: a name a clause
            // assigns before reading it is the clause's, not the outside's.
            if let Stmt::If(if_stmt) = stmt {
                let tests = std::iter::once(&*if_stmt.test).chain(
                    if_stmt
                        .elif_else_clauses
                        .iter()
                        .filter_map(|clause| clause.test.as_ref()),
                );
                for test in tests {
                    let mut names = Names::default();
                    names.visit_expr(test);
                    for (name, offset) in names.loads {
                        if !bound.contains(&name) {
                            result.free.push((name, offset));
                        }
                    }
                    result.assigned.extend(names.stores);
                }
                result.add_block(&if_stmt.body, bound.clone());
                for clause in &if_stmt.elif_else_clauses {
                    result.add_block(&clause.body, bound.clone());
                }
                continue;
            }
            let mut names = Names::default();
            names.visit_stmt(stmt);
            for (name, offset) in names.loads {
                if !bound.contains(&name) {
                    result.free.push((name, offset));
                }
            }
            // Only a simple statement binds for sure; a compound one may skip its body.
            let simple = !matches!(
                stmt,
                Stmt::If(_)
                    | Stmt::For(_)
                    | Stmt::While(_)
                    | Stmt::With(_)
                    | Stmt::Try(_)
                    | Stmt::Match(_)
            );
            for name in names.stores {
                if simple {
                    bound.insert(name.clone());
                }
                result.assigned.insert(name);
            }
        }
    }

    fn reads_from_outside(&self, name: &str) -> bool {
        self.free.iter().any(|(free, _)| free == name)
    }
}

/// The first construct in a branch that a `torch.cond` branch function cannot hold.
struct Forbidden<'b> {
    use_: &'b NameUse,
    loop_depth: usize,
    reason: Option<String>,
}

impl Forbidden<'_> {
    fn outer_base(&self, expr: &Expr) -> Option<String> {
        let mut current = expr;
        loop {
            match current {
                Expr::Attribute(attribute) => current = &attribute.value,
                Expr::Subscript(subscript) => current = &subscript.value,
                Expr::Name(name) if !self.use_.assigned.contains(name.id.as_str()) => {
                    return Some(name.id.to_string());
                }
                _ => return None,
            }
        }
    }

    fn fail(&mut self, reason: String) {
        if self.reason.is_none() {
            self.reason = Some(reason);
        }
    }

    fn check_target(&mut self, target: &Expr) {
        match target {
            Expr::Attribute(_) | Expr::Subscript(_) => {
                if let Some(base) = self.outer_base(target) {
                    self.fail(format!(
                        "a branch writes into `{base}`, and `torch.cond` branches must not mutate their inputs or `self`"
                    ));
                }
            }
            Expr::Tuple(tuple) => tuple.elts.iter().for_each(|elt| self.check_target(elt)),
            Expr::List(list) => list.elts.iter().for_each(|elt| self.check_target(elt)),
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for Forbidden<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => return,
            Stmt::Global(_) | Stmt::Nonlocal(_) => {
                self.fail("a branch declares `global`/`nonlocal` names".to_owned());
            }
            Stmt::Raise(_) => self.fail(
                "a branch raises; check the condition with `torch._check` instead".to_owned(),
            ),
            Stmt::Delete(_) => self.fail("a branch deletes names".to_owned()),
            Stmt::Break(_) | Stmt::Continue(_) if self.loop_depth == 0 => {
                self.fail("a branch leaves the enclosing loop".to_owned());
            }
            Stmt::Assign(assign) => assign.targets.iter().for_each(|t| self.check_target(t)),
            Stmt::AnnAssign(assign) => self.check_target(&assign.target),
            Stmt::AugAssign(assign) => match &*assign.target {
                Expr::Name(name) if self.use_.reads_from_outside(name.id.as_str()) => {
                    self.fail(format!(
                        "`{} {}= …` updates `{}` in place, and `torch.cond` branches must not mutate their inputs",
                        name.id,
                        assign.op.as_str(),
                        name.id
                    ));
                }
                target => self.check_target(target),
            },
            Stmt::For(_) | Stmt::While(_) => {
                self.loop_depth += 1;
                visitor::walk_stmt(self, stmt);
                self.loop_depth -= 1;
                return;
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Lambda(_) => return,
            Expr::Yield(_) | Expr::YieldFrom(_) | Expr::Await(_) => {
                self.fail("a branch yields or awaits".to_owned());
            }
            Expr::Named(named) => self.check_target(&named.target),
            Expr::Call(call) => {
                if let Expr::Attribute(method) = &*call.func {
                    let name = method.attr.as_str();
                    let in_place = name.ends_with('_') && !name.starts_with('_');
                    let container = matches!(
                        name,
                        "append"
                            | "extend"
                            | "insert"
                            | "pop"
                            | "remove"
                            | "clear"
                            | "update"
                            | "setdefault"
                            | "add"
                            | "discard"
                    );
                    if in_place || container {
                        if let Some(base) = self.outer_base(&method.value) {
                            let receiver = dotted(&method.value).unwrap_or(base);
                            self.fail(format!(
                                "`{receiver}.{name}(…)` in a branch mutates `{receiver}`, and `torch.cond` branches must not mutate their inputs or `self`"
                            ));
                        }
                    }
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

/// Tensor methods and `torch` functions whose result may share storage with their first
/// tensor: returning one of an operand from a branch is aliasing, which `torch.cond` refuses.
const VIEW_LIKE: &[&str] = &[
    "view",
    "view_as",
    "reshape",
    "reshape_as",
    "flatten",
    "unflatten",
    "contiguous",
    "detach",
    "to",
    "type",
    "type_as",
    "float",
    "double",
    "half",
    "bfloat16",
    "int",
    "long",
    "bool",
    "squeeze",
    "unsqueeze",
    "expand",
    "expand_as",
    "permute",
    "transpose",
    "t",
    "narrow",
    "select",
    "movedim",
    "swapaxes",
    "swapdims",
    "as_strided",
    "diagonal",
    "real",
    "imag",
    "split",
    "chunk",
    "unbind",
    "view_as_real",
    "view_as_complex",
    "alias",
    "data",
    "T",
    "mT",
];

/// Whether `expr`, returned from a branch, may be an operand, closed-over tensor, parameter
/// or a view of one, judged from its syntax and the branch's own assignments.
fn may_alias(expr: &Expr, body: &[Stmt], depth: usize) -> bool {
    match expr {
        Expr::Name(name) => {
            depth > 4
                || fresh_assignment(name.id.as_str(), body)
                    .is_none_or(|value| may_alias(value, body, depth + 1))
        }
        Expr::Attribute(attribute) => {
            VIEW_LIKE.contains(&attribute.attr.as_str())
                || !matches!(&*attribute.value, Expr::Call(_))
        }
        Expr::Subscript(subscript) => may_alias(&subscript.value, body, depth),
        Expr::Call(call) => match &*call.func {
            Expr::Attribute(method) if VIEW_LIKE.contains(&method.attr.as_str()) => {
                let receiver_is_module =
                    matches!(&*method.value, Expr::Name(name) if name.id.as_str() == "torch");
                if receiver_is_module {
                    call.arguments
                        .args
                        .first()
                        .is_some_and(|first| may_alias(first, body, depth))
                } else {
                    may_alias(&method.value, body, depth)
                }
            }
            _ => false,
        },
        Expr::Starred(_) | Expr::Tuple(_) | Expr::List(_) => true,
        _ => false,
    }
}

/// The value of the one top-level `name = value` that last binds `name` in `body`, when no
/// nested statement binds it too.
fn fresh_assignment<'b>(name: &str, body: &'b [Stmt]) -> Option<&'b Expr> {
    let mut found = None;
    for stmt in body {
        let mut names = Names::default();
        names.visit_stmt(stmt);
        if !names.stores.iter().any(|stored| stored == name) {
            continue;
        }
        found = match stmt {
            Stmt::Assign(assign) if matches!(assign.targets.as_slice(), [Expr::Name(target)] if target.id.as_str() == name) => {
                Some(&*assign.value)
            }
            _ => None,
        };
    }
    found
}

/// `expr` followed by `.clone()`, parenthesised when needed.
fn cloned(text: &str) -> String {
    let atom = text
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    if atom || text.ends_with(')') || text.ends_with(']') {
        format!("{text}.clone()")
    } else {
        format!("({text}).clone()")
    }
}

/// Whether every path through `body` ends in a `return`.
fn always_returns(body: &[Stmt]) -> bool {
    body.iter().any(|stmt| match stmt {
        Stmt::Return(_) => true,
        Stmt::If(if_stmt) => {
            always_returns(&if_stmt.body)
                && if_stmt
                    .elif_else_clauses
                    .iter()
                    .all(|clause| always_returns(&clause.body))
                && if_stmt
                    .elif_else_clauses
                    .last()
                    .is_some_and(|clause| clause.test.is_none())
        }
        Stmt::With(with) => always_returns(&with.body),
        _ => false,
    })
}

/// The two branches of an `if`, its shape, and the range the rewrite replaces.
struct Branches<'a> {
    shape: Shape,
    true_branch: Branch<'a>,
    /// `None`: the identity (an `if` without `else` that assigns).
    false_branch: Option<Branch<'a>>,
    /// Whole lines: the `if` statement, and the rest of the function when that is the false
    /// branch.
    replaced: TextRange,
}

fn branches<'a>(site: &BranchSite<'a>, text: &str) -> Result<Branches<'a>, String> {
    let stmt = site.stmt;
    if stmt
        .elif_else_clauses
        .iter()
        .any(|clause| clause.test.is_some())
    {
        return Err(
            "an `elif` chain needs one `torch.cond` per condition, nested by hand".to_owned(),
        );
    }
    let header_end = stmt.test.end();
    let else_clause = stmt.elif_else_clauses.first();
    let true_end = else_clause.map_or_else(
        || line_end(text, stmt.body.last().map_or(header_end, Ranged::end)),
        |clause| line_start(text, clause.start()),
    );
    let true_branch =
        Branch::new(text, &stmt.body, header_end, true_end).ok_or("an empty branch")?;
    let if_range = TextRange::new(
        line_start(text, stmt.start()),
        line_end(text, stmt.end() - TextSize::new(1)),
    );
    let true_returns = always_returns(&stmt.body);
    let true_has_return = !returns_in(&stmt.body).is_empty();
    if let Some(clause) = else_clause {
        let false_branch = Branch::new(
            text,
            &clause.body,
            clause.start(),
            line_end(text, clause.end() - TextSize::new(1)),
        )
        .ok_or("an empty branch")?;
        let false_returns = always_returns(&clause.body);
        let false_has_return = !returns_in(&clause.body).is_empty();
        let shape = match (
            true_returns,
            false_returns,
            true_has_return,
            false_has_return,
        ) {
            (true, true, _, _) => Shape::Returns,
            (_, _, false, false) => Shape::Assigns,
            _ => return Err("only one branch returns on every path".to_owned()),
        };
        return Ok(Branches {
            shape,
            true_branch,
            false_branch: Some(false_branch),
            replaced: if_range,
        });
    }
    if !true_has_return {
        return Ok(Branches {
            shape: Shape::Assigns,
            true_branch,
            false_branch: None,
            replaced: if_range,
        });
    }
    // `if c: return a` then `return b`: the rest of the function is the other branch.
    let rest_returns = site.at_function_level && always_returns(site.rest);
    if !true_returns || !rest_returns {
        return Err("only one branch returns".to_owned());
    }
    let last = site.rest.last().ok_or("only one branch returns")?;
    let end = line_end(text, last.end() - TextSize::new(1));
    let rest_start = stmt.body.last().map_or(header_end, Ranged::end);
    let false_branch = Branch::new(text, site.rest, rest_start, end).ok_or("an empty branch")?;
    Ok(Branches {
        shape: Shape::Returns,
        true_branch,
        false_branch: Some(false_branch),
        replaced: TextRange::new(if_range.start(), end),
    })
}

/// The `torch.cond` rewrite of the `if` at `site`, or why there is none.
pub(crate) fn rewrite(site: &BranchSite<'_>, context: &Context<'_>) -> Result<Fix, String> {
    let text = context.file.text;
    let predicate =
        Predicate::of(&site.stmt.test).ok_or_else(|| predicate_problem(&site.stmt.test))?;
    let branches = branches(site, text)?;
    let true_use = NameUse::of(branches.true_branch.body);
    let false_use = branches
        .false_branch
        .as_ref()
        .map_or_else(NameUse::default, |branch| NameUse::of(branch.body));
    for (branch, use_) in [
        (Some(&branches.true_branch), &true_use),
        (branches.false_branch.as_ref(), &false_use),
    ] {
        let Some(branch) = branch else { continue };
        let mut forbidden = Forbidden {
            use_,
            loop_depth: 0,
            reason: None,
        };
        forbidden.visit_body(branch.body);
        if let Some(reason) = forbidden.reason {
            return Err(reason);
        }
    }
    let before = &context.tensors.before;
    let outputs = match branches.shape {
        Shape::Returns => {
            check_return_structures(&branches)?;
            Vec::new()
        }
        Shape::Assigns => {
            let function = context.functions.facts(site.function, text);
            outputs(&function, &branches, &true_use, &false_use, context.tensors)?
        }
    };
    // A name a branch reads from outside and also assigns is local to the branch function:
    // it must come in as a parameter, which only a tensor can be.
    for use_ in [&true_use, &false_use] {
        for (name, _) in &use_.free {
            if use_.assigned.contains(name) && !before.contains(name) {
                return Err(format!(
                    "a branch reads and reassigns `{name}`, which is not known to be a tensor; `torch.cond` operands must be tensors"
                ));
            }
        }
    }
    let mut operands: Vec<(&str, TextSize)> = Vec::new();
    for (name, offset) in true_use.free.iter().chain(&false_use.free) {
        if before.contains(name) && !operands.iter().any(|(seen, _)| seen == name) {
            operands.push((name, *offset));
        }
    }
    if branches.false_branch.is_none() {
        for name in &outputs {
            if !operands.iter().any(|(seen, _)| seen == name) {
                operands.push((name, TextSize::new(u32::MAX)));
            }
        }
    }
    operands.sort_by_key(|(_, offset)| *offset);
    let operands: Vec<&str> = operands.into_iter().map(|(name, _)| name).collect();
    let fix = render(site, context, &predicate, &branches, &operands, &outputs);
    Ok(fix)
}

/// Both branches return the same structure: tuples of one length, or single values.
fn check_return_structures(branches: &Branches<'_>) -> Result<(), String> {
    let mut arity = None;
    let bodies = std::iter::once(branches.true_branch.body)
        .chain(branches.false_branch.as_ref().map(|branch| branch.body));
    for body in bodies {
        for ret in returns_in(body) {
            let this = match ret.value.as_deref() {
                None | Some(Expr::NoneLiteral(_)) => {
                    return Err(
                        "a branch returns `None`; `torch.cond` branches return tensors".to_owned(),
                    );
                }
                Some(
                    Expr::NumberLiteral(_)
                    | Expr::StringLiteral(_)
                    | Expr::BooleanLiteral(_)
                    | Expr::Dict(_)
                    | Expr::Set(_),
                ) => {
                    return Err(
                        "a branch returns a Python value; `torch.cond` branches return tensors"
                            .to_owned(),
                    );
                }
                Some(Expr::Tuple(tuple)) => tuple.elts.len(),
                Some(_) => 1,
            };
            if arity.is_some_and(|arity| arity != this) {
                return Err("the branches return different structures".to_owned());
            }
            arity = Some(this);
        }
    }
    Ok(())
}

/// The names both branches hand to the code after the `if`, which must all be tensors.
fn outputs(
    function: &FunctionFacts,
    branches: &Branches<'_>,
    true_use: &NameUse,
    false_use: &NameUse,
    tensors: &TensorNames,
) -> Result<Vec<String>, String> {
    // Names read anywhere in the function outside the rewritten range are live after it (a
    // superset: a loop may read them again before the `if`).
    let mut outputs: Vec<String> = true_use
        .assigned
        .union(&false_use.assigned)
        .filter(|name| function.reads_outside(name, branches.replaced))
        .cloned()
        .collect();
    outputs.sort_by_key(|name| {
        let position = |body: &[Stmt]| {
            body.iter().position(|stmt| {
                let mut names = Names::default();
                names.visit_stmt(stmt);
                names.stores.contains(name)
            })
        };
        (
            position(branches.true_branch.body).unwrap_or(usize::MAX),
            branches
                .false_branch
                .as_ref()
                .and_then(|branch| position(branch.body))
                .unwrap_or(usize::MAX),
        )
    });
    if outputs.is_empty() {
        return Err("the branches assign nothing the code after them reads".to_owned());
    }
    let after_true = tensors.after.first().cloned().flatten().unwrap_or_default();
    let after_false = if branches.false_branch.is_some() {
        tensors.after.get(1).cloned().flatten().unwrap_or_default()
    } else {
        tensors.before.clone()
    };
    for name in &outputs {
        for (use_, after) in [(true_use, &after_true), (false_use, &after_false)] {
            let is_tensor = if use_.assigned.contains(name) {
                after.contains(name)
            } else {
                tensors.before.contains(name)
            };
            if !is_tensor {
                return Err(format!(
                    "`{name}` is not known to be a tensor on both sides; `torch.cond` returns only tensors"
                ));
            }
        }
    }
    Ok(outputs)
}

/// A name the function's text never spells as an identifier: `base`, `base_1`, `base_2`, ….
fn unique_name(base: &str, function: &FunctionFacts) -> String {
    let mut name = base.to_owned();
    let mut suffix = 0;
    while function.words.contains(&name) {
        suffix += 1;
        name = format!("{base}_{suffix}");
    }
    name
}

/// The text of `range` with `edits` (inside it) applied.
fn splice(text: &str, range: TextRange, edits: &mut [(TextRange, String)]) -> String {
    edits.sort_by_key(|(edit, _)| edit.start());
    let mut out = String::new();
    let mut copied = range.start();
    for (edit, content) in edits.iter() {
        if edit.start() < copied || edit.end() > range.end() {
            continue;
        }
        out.push_str(&text[TextRange::new(copied, edit.start())]);
        out.push_str(content);
        copied = edit.end();
    }
    out.push_str(&text[TextRange::new(copied, range.end())]);
    out
}

/// One branch function: `def name(operands):` and the branch's body, reindented, with
/// aliasing returns cloned, then (for assigning branches) the `return` of the outputs.
/// What both branch functions share: the file, their parameters and results, where they sit.
struct Layout<'l> {
    text: &'l str,
    operands: &'l [&'l str],
    shape: Shape,
    outputs: &'l [String],
    /// The `if`'s indentation, where the `def`s go.
    indent: &'l str,
    /// Their bodies' indentation.
    inner: &'l str,
}

fn branch_function(layout: &Layout<'_>, name: &str, branch: Option<&Branch<'_>>) -> String {
    let Layout {
        text,
        operands,
        shape,
        outputs,
        indent,
        inner,
    } = *layout;
    let mut out = format!("{indent}def {name}({}):\n", operands.join(", "));
    let mut body = String::new();
    if let Some(branch) = branch {
        let mut edits = Vec::new();
        if shape == Shape::Returns {
            for ret in returns_in(branch.body) {
                let Some(value) = ret.value.as_deref() else {
                    continue;
                };
                let elements: Vec<&Expr> = match value {
                    Expr::Tuple(tuple) => tuple.elts.iter().collect(),
                    value => vec![value],
                };
                for element in elements {
                    if may_alias(element, branch.body, 0) {
                        edits.push((element.range(), cloned(&text[element.range()])));
                    }
                }
            }
        }
        let own = splice(text, branch.text, &mut edits);
        if branch.inline {
            body = format!("{inner}{}\n", own.trim());
        } else {
            let from = branch
                .body
                .first()
                .map_or("", |first| indentation_at(text, first.start()));
            body = reindent(&own, from, inner);
        }
    }
    out.push_str(&body);
    if shape == Shape::Assigns {
        let values: Vec<String> = outputs
            .iter()
            .map(|output| {
                let assigned =
                    branch.is_some_and(|branch| NameUse::of(branch.body).assigned.contains(output));
                let aliases = !assigned
                    || branch.is_some_and(|branch| {
                        fresh_assignment(output, branch.body)
                            .is_none_or(|value| may_alias(value, branch.body, 1))
                    });
                if aliases {
                    cloned(output)
                } else {
                    output.clone()
                }
            })
            .collect();
        let _ = writeln!(out, "{inner}return {}", values.join(", "));
    }
    out
}

fn render(
    site: &BranchSite<'_>,
    context: &Context<'_>,
    predicate: &Predicate<'_>,
    branches: &Branches<'_>,
    operands: &[&str],
    outputs: &[String],
) -> Fix {
    let text = context.file.text;
    let indent = indentation_at(text, site.stmt.start());
    let inner = if branches.true_branch.inline {
        format!("{indent}    ")
    } else {
        branches.true_branch.body.first().map_or_else(
            || format!("{indent}    "),
            |first| indentation_at(text, first.start()).to_owned(),
        )
    };
    let function = context.functions.facts(site.function, text);
    let true_name = unique_name("true_fn", &function);
    let false_name = unique_name("false_fn", &function);
    let (first, second) = if predicate.negated {
        (branches.false_branch.as_ref(), Some(&branches.true_branch))
    } else {
        (Some(&branches.true_branch), branches.false_branch.as_ref())
    };
    let cond = context.imports.member("torch", "cond");
    let layout = Layout {
        text,
        operands,
        shape: branches.shape,
        outputs,
        indent,
        inner: &inner,
    };
    let mut replacement = branch_function(&layout, &true_name, first);
    replacement.push('\n');
    replacement.push_str(&branch_function(&layout, &false_name, second));
    replacement.push('\n');
    let target = match branches.shape {
        Shape::Returns => "return ".to_owned(),
        Shape::Assigns => format!("{} = ", outputs.join(", ")),
    };
    let operand_tuple = match operands {
        [one] => format!("({one},)"),
        many => format!("({})", many.join(", ")),
    };
    let comment = trailing_comment(text, site.stmt.test.end())
        .map(|comment| format!("  {comment}"))
        .unwrap_or_default();
    let _ = writeln!(
        replacement,
        "{indent}{target}{}({}, {true_name}, {false_name}, {operand_tuple}){comment}",
        cond.name,
        &text[predicate.expr.range()],
    );
    let mut edits = Vec::new();
    match separation(site, text, branches.replaced.start()) {
        Some(at) if at == branches.replaced.start() => replacement.insert(0, '\n'),
        Some(at) => edits.push(Edit {
            range: TextRange::empty(at),
            content: "\n".to_owned(),
        }),
        None => {}
    }
    edits.push(Edit {
        range: branches.replaced,
        content: replacement,
    });
    edits.extend(cond.edit);
    Fix {
        title: "Rewrite the branches as `torch.cond`".to_owned(),
        edits,
        applicability: Applicability::Unsafe,
    }
}

/// Where the blank line goes that sets the branch functions off from the statements before
/// them, as a formatter puts one before a nested `def`: above the comments that lead into the
/// `if` (they now lead into the functions). `None` when the `if` opens its block or a blank line
/// is already there.
fn separation(site: &BranchSite<'_>, text: &str, if_line: TextSize) -> Option<TextSize> {
    if !site.follows_statements {
        return None;
    }
    let mut start = if_line;
    while start > TextSize::new(0) {
        let above = line_start(text, start - TextSize::new(1));
        let line = text[TextRange::new(above, start)].trim();
        if line.is_empty() {
            return None;
        }
        if !line.starts_with('#') {
            break;
        }
        start = above;
    }
    Some(start)
}

#[cfg(test)]
mod tests {
    use crate::{Settings, apply_fixes, check, compatible_fixes, fix::FixMode};

    /// The source with its unsafe fixes applied, or the explanations offered instead.
    fn rewritten(source: &str) -> String {
        let report = check(source, &Settings::default());
        let fixes = compatible_fixes(&report.diagnostics, FixMode::Unsafe);
        if fixes.is_empty() {
            return report
                .diagnostics
                .iter()
                .filter_map(|diagnostic| diagnostic.fix.as_ref())
                .flat_map(|fix| [fix.title.as_str(), "\n"])
                .collect();
        }
        apply_fixes(source, &fixes)
    }

    #[test]
    fn one_line_branches_views_and_taken_names() {
        let source = r"import torch
import torch.nn as nn


class M(nn.Module):
    def forward(self, x):
        true_fn = 3
        if x.sum() > 0: return x.view(-1)
        else: return x.flatten() * true_fn
";
        insta::assert_snapshot!(rewritten(source));
    }

    #[test]
    fn a_blank_line_sets_the_functions_off_from_the_code_before() {
        // After a statement (above the comment that leads into the `if`), not after a blank
        // line that is there already, and not at the top of a block.
        let source = r"import torch
import torch.nn as nn


class A(nn.Module):
    def forward(self, x):
        y = x.sum()
        # Scale up when positive.
        if y > 0:
            w = x * 2
        else:
            w = x - 1
        return w


class B(nn.Module):
    def forward(self, x):
        y = x.sum()

        if y > 0:
            w = x * 2
        else:
            w = x - 1
        return w


class C(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            z = x * 2
            w = z + 1
        else:
            w = x - 1
        return w
";
        insta::assert_snapshot!(rewritten(source));
    }

    #[test]
    fn refused_branches_are_explained() {
        let source = r"import torch
import torch.nn as nn


class M(nn.Module):
    def forward(self, x, n: int):
        if x.sum() > 0:
            x += 1
        if x.mean() > 0:
            x = x * 2
        elif x.max() > 3:
            x = x * 3
        if x.min() > 0:
            n = n + 1
            y = x * n
        else:
            y = x
        return y
";
        insta::assert_snapshot!(rewritten(source));
    }
}
