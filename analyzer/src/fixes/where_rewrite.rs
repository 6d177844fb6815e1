//! The `torch.where` rewrite of an `if` on a tensor's value (PT101), offered before the
//! `torch.cond` one where it is valid.
//!
//! Valid when each branch is one `return <expr>`, or one assignment of the same name (an `if`
//! without `else` keeps the name's old value), both expressions elementwise over the same
//! tensors (so of the same shape), and the condition a boolean scalar: a full reduction
//! (`x.sum() > 0`, `mask.any()`) broadcasts over any shape. `torch.where` then runs both sides
//! and picks per element, which gives the branch's result whenever neither side can raise —
//! elementwise arithmetic never does.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;
use std::fmt::Write;

use ruff_text_size::{Ranged, TextRange, TextSize};

use super::branches::{BranchSite, Context, Predicate, callee_name, dotted, trailing_comment};
use super::{indentation_at, line_end, line_start};
use crate::catalogue::{self, ShapeRule};
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::semantic::value::Value;
use crate::syntax::ast::{self, Expr, Stmt};

/// Namespaces whose elementwise functions (in the catalogue) the rewrite reads.
const FUNCTION_NAMESPACES: &[&str] = &["torch", "torch.nn.functional", "torch.special"];

/// The `torch.where` rewrite of the `if` at `site`, when valid.
pub(crate) fn rewrite(
    site: &BranchSite<'_>,
    context: &Context<'_>,
    globals: &FxHashMap<String, Value>,
) -> Option<Fix> {
    let text = context.file.text;
    let stmt = site.stmt;
    let predicate = Predicate::of(&stmt.test)?;
    let before = &context.tensors.before;
    if !is_scalar_boolean(predicate.expr, before, globals) {
        return None;
    }
    if stmt
        .elif_else_clauses
        .iter()
        .any(|clause| clause.test.is_some())
    {
        return None;
    }
    let else_body = stmt
        .elif_else_clauses
        .first()
        .map(|clause| &clause.body[..]);
    let [true_stmt] = &stmt.body[..] else {
        return None;
    };
    let if_lines = TextRange::new(
        line_start(text, stmt.start()),
        line_end(text, stmt.end() - TextSize::new(1)),
    );
    let (target, true_value, false_value, false_stmt, replaced) = match true_stmt {
        Stmt::Return(ast::StmtReturn {
            value: Some(true_value),
            ..
        }) => {
            let (false_stmt, replaced) = match else_body {
                Some([false_stmt]) => (false_stmt, if_lines),
                None if site.at_function_level => match site.rest {
                    [false_stmt] => (
                        false_stmt,
                        TextRange::new(
                            if_lines.start(),
                            line_end(text, false_stmt.end() - TextSize::new(1)),
                        ),
                    ),
                    _ => return None,
                },
                _ => return None,
            };
            let Stmt::Return(ast::StmtReturn {
                value: Some(false_value),
                ..
            }) = false_stmt
            else {
                return None;
            };
            (
                None,
                &**true_value,
                &**false_value,
                Some(false_stmt),
                replaced,
            )
        }
        Stmt::Assign(assign) => {
            let [Expr::Name(name)] = assign.targets.as_slice() else {
                return None;
            };
            let (false_value, false_stmt) = match else_body {
                Some([false_stmt @ Stmt::Assign(other)]) => {
                    let [Expr::Name(other_name)] = other.targets.as_slice() else {
                        return None;
                    };
                    if other_name.id != name.id {
                        return None;
                    }
                    (&*other.value, Some(false_stmt))
                }
                // No `else`: the name keeps the tensor it held.
                None if before.contains(name.id.as_str()) => (&assign.targets[0], None),
                _ => return None,
            };
            (
                Some(name.id.as_str()),
                &*assign.value,
                false_value,
                false_stmt,
                if_lines,
            )
        }
        _ => return None,
    };
    let true_leaves = elementwise_leaves(true_value, globals)?;
    let false_leaves = elementwise_leaves(false_value, globals)?;
    if true_leaves.is_empty() || true_leaves != false_leaves {
        return None;
    }
    // Comments inside the branches move above the new line; a statement spread over lines
    // with comments inside it would lose them, so it keeps its `if`.
    let mut comments = Vec::new();
    for branch_stmt in std::iter::once(true_stmt).chain(false_stmt) {
        if text[branch_stmt.range()].contains('#') {
            return None;
        }
        if let Some(comment) = trailing_comment(text, branch_stmt.end()) {
            comments.push(comment);
        }
    }
    for line in text[replaced].lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            comments.push(trimmed);
        }
    }
    let (true_value, false_value) = if predicate.negated {
        (false_value, true_value)
    } else {
        (true_value, false_value)
    };
    let indent = indentation_at(text, stmt.start());
    let function = context.imports.member("torch", "where");
    let head_comment = trailing_comment(text, stmt.test.end())
        .map(|comment| format!("  {comment}"))
        .unwrap_or_default();
    let mut replacement = String::new();
    for comment in comments {
        let _ = writeln!(replacement, "{indent}{comment}");
    }
    let target = target.map_or_else(|| "return ".to_owned(), |name| format!("{name} = "));
    let _ = writeln!(
        replacement,
        "{indent}{target}{}({}, {}, {}){head_comment}",
        function.name,
        &text[predicate.expr.range()],
        &text[true_value.range()],
        &text[false_value.range()],
    );
    let mut edits = vec![Edit {
        range: replaced,
        content: replacement,
    }];
    edits.extend(function.edit);
    Some(Fix {
        title: "Rewrite the `if` as `torch.where`".to_owned(),
        edits,
        applicability: Applicability::Unsafe,
    })
}

/// The dotted name an expression refers to through the file's imports: `F.relu` is
/// `torch.nn.functional.relu`.
fn qualified(expr: &Expr, globals: &FxHashMap<String, Value>) -> Option<String> {
    match expr {
        Expr::Name(name) => match globals.get(name.id.as_str()) {
            Some(Value::Qualified(qualified)) => Some(qualified.to_string()),
            _ => None,
        },
        Expr::Attribute(attribute) => {
            qualified(&attribute.value, globals).map(|head| format!("{head}.{}", attribute.attr))
        }
        _ => None,
    }
}

/// The tensors (by their source text) an elementwise expression reads, or `None` when the
/// expression is not elementwise.
fn elementwise_leaves(expr: &Expr, globals: &FxHashMap<String, Value>) -> Option<BTreeSet<String>> {
    fn walk(
        expr: &Expr,
        globals: &FxHashMap<String, Value>,
        leaves: &mut BTreeSet<String>,
    ) -> bool {
        match expr {
            Expr::NumberLiteral(_) => true,
            Expr::Name(name) => {
                leaves.insert(name.id.to_string());
                true
            }
            Expr::Attribute(attribute) => {
                if qualified(expr, globals).is_some()
                    || matches!(attribute.attr.as_str(), "T" | "mT")
                {
                    return false;
                }
                // `self.weight`: a parameter or buffer, the same tensor on both sides.
                match dotted(expr) {
                    Some(path) => leaves.insert(path),
                    None => return false,
                };
                true
            }
            Expr::UnaryOp(unary) => {
                matches!(unary.op, ast::UnaryOp::USub | ast::UnaryOp::UAdd)
                    && walk(&unary.operand, globals, leaves)
            }
            Expr::BinOp(binary) => {
                matches!(
                    binary.op,
                    ast::Operator::Add
                        | ast::Operator::Sub
                        | ast::Operator::Mult
                        | ast::Operator::Div
                        | ast::Operator::FloorDiv
                        | ast::Operator::Mod
                        | ast::Operator::Pow
                ) && walk(&binary.left, globals, leaves)
                    && walk(&binary.right, globals, leaves)
            }
            Expr::Call(call) => {
                let arguments_elementwise = |leaves: &mut BTreeSet<String>| {
                    call.arguments
                        .args
                        .iter()
                        .all(|arg| walk(arg, globals, leaves))
                        && call.arguments.keywords.iter().all(|keyword| {
                            keyword.arg.is_some()
                                && (matches!(
                                    keyword.value,
                                    Expr::StringLiteral(_)
                                        | Expr::BooleanLiteral(_)
                                        | Expr::NoneLiteral(_)
                                ) || walk(&keyword.value, globals, leaves))
                        })
                };
                match qualified(&call.func, globals) {
                    Some(function) => {
                        let Some((namespace, name)) = function.rsplit_once('.') else {
                            return false;
                        };
                        FUNCTION_NAMESPACES.contains(&namespace)
                            && catalogue::is_elementwise(name)
                            && arguments_elementwise(leaves)
                    }
                    None => match &*call.func {
                        Expr::Attribute(method) => {
                            catalogue::is_elementwise(method.attr.as_str())
                                && walk(&method.value, globals, leaves)
                                && arguments_elementwise(leaves)
                        }
                        _ => false,
                    },
                }
            }
            _ => false,
        }
    }
    let mut leaves = BTreeSet::new();
    walk(expr, globals, &mut leaves).then_some(leaves)
}

/// A boolean tensor with one element whatever the inputs' shapes: comparisons of full
/// reductions and Python numbers, `.any()` / `.all()` of a whole tensor, and `&`, `|`, `~` of
/// those.
fn is_scalar_boolean(
    expr: &Expr,
    tensors: &BTreeSet<String>,
    globals: &FxHashMap<String, Value>,
) -> bool {
    match expr {
        Expr::Compare(compare) => {
            std::iter::once(&*compare.left)
                .chain(compare.comparators.iter())
                .all(|operand| is_scalar(operand, tensors, globals))
                && std::iter::once(&*compare.left)
                    .chain(compare.comparators.iter())
                    .any(|operand| is_reduction(operand, globals))
        }
        Expr::Call(_) => {
            is_reduction(expr, globals)
                && matches!(callee_name(call_func(expr)), Some("any" | "all"))
        }
        Expr::BinOp(binary) => {
            matches!(
                binary.op,
                ast::Operator::BitAnd | ast::Operator::BitOr | ast::Operator::BitXor
            ) && is_scalar_boolean(&binary.left, tensors, globals)
                && is_scalar_boolean(&binary.right, tensors, globals)
        }
        Expr::UnaryOp(unary) => {
            unary.op == ast::UnaryOp::Invert && is_scalar_boolean(&unary.operand, tensors, globals)
        }
        _ => false,
    }
}

fn call_func(expr: &Expr) -> &Expr {
    match expr {
        Expr::Call(call) => &call.func,
        other => other,
    }
}

/// A one-element tensor or a Python number: a full reduction, arithmetic of those, a literal,
/// a name that does not hold a tensor.
fn is_scalar(expr: &Expr, tensors: &BTreeSet<String>, globals: &FxHashMap<String, Value>) -> bool {
    match expr {
        Expr::NumberLiteral(_) => true,
        Expr::Name(name) => !tensors.contains(name.id.as_str()),
        Expr::UnaryOp(unary) => is_scalar(&unary.operand, tensors, globals),
        Expr::BinOp(binary) => {
            is_scalar(&binary.left, tensors, globals) && is_scalar(&binary.right, tensors, globals)
        }
        Expr::Call(_) => is_reduction(expr, globals),
        _ => false,
    }
}

/// `x.sum()`, `x.abs().max()`, `torch.mean(x)`: a reduction over every element.
fn is_reduction(expr: &Expr, globals: &FxHashMap<String, Value>) -> bool {
    let Expr::Call(call) = expr else {
        return false;
    };
    let no_dimension = call
        .arguments
        .keywords
        .iter()
        .all(|keyword| !matches!(keyword.arg.as_deref(), Some("dim" | "axis")));
    match qualified(&call.func, globals) {
        Some(function) => {
            function
                .rsplit_once('.')
                .is_some_and(|(namespace, name)| namespace == "torch" && reduces(name))
                && call.arguments.args.len() == 1
                && no_dimension
        }
        None => match &*call.func {
            Expr::Attribute(method) => {
                reduces(method.attr.as_str()) && call.arguments.args.is_empty() && no_dimension
            }
            _ => false,
        },
    }
}

fn reduces(name: &str) -> bool {
    matches!(
        catalogue::shape_rule(name),
        Some(ShapeRule::Reduction { .. })
    )
}
