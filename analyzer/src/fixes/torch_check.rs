//! The PT102/PT103 fix: `torch._check` the condition under which an input-validation `if` on a
//! data-dependent number does not raise.
//!
//! Measured with torch 2.15: a data-dependent number or size used in allocation, slicing,
//! `view`, `narrow`, `expand`, `split` or arithmetic already exports (the exporter adds runtime
//! assertions itself), so no check is needed there; `range()`, indexing a Python list, `int(t)`
//! and `len(t)` (non-strict) fail whatever is checked. What a check does fix is a branch it
//! decides. Deciding an ordinary two-sided branch would delete the side other inputs take, so
//! the fix is offered only for `if <condition>: raise ...`: the checks state exactly what the
//! code after the `if` already assumes, so every input that did not raise behaves the same,
//! and one that did still raises (a `RuntimeError` from `torch._check` instead of the user's
//! exception, which is why the fix is unsafe).

use std::fmt::Write;

use ruff_text_size::{Ranged, TextRange};

use super::{ModuleImports, indentation_at, line_start};
use crate::SourceFile;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::semantic::{Event, EventKind, ScalarUse};
use crate::syntax::ast::{self, Expr, Stmt};

/// The fix for a data-dependent condition at `condition` (an operand of an `if` test whose body
/// only raises): a `torch._check` per comparison the non-raising path needs, before the `if`.
/// `None` when the test's negation is not a conjunction of comparisons (`if a < 0 and b < 0`),
/// or when it holds a construct that fails whatever is checked (`unsupported`).
pub(crate) fn validation_check_fix(
    condition: TextRange,
    unsupported: &[TextRange],
    body: &[Stmt],
    file: SourceFile<'_>,
    imports: &ModuleImports,
) -> Option<Fix> {
    let if_stmt = enclosing_if(body, condition)?;
    let test = &*if_stmt.test;
    if unsupported
        .iter()
        .any(|range| test.range().contains_range(*range))
    {
        return None;
    }
    let mut conditions = Vec::new();
    negation(test, file.text, &mut conditions)?;
    if conditions.is_empty() {
        return None;
    }
    let check = imports.member("torch", "_check");
    let indentation = indentation_at(file.text, if_stmt.start());
    let content = conditions
        .iter()
        .fold(String::new(), |mut content, condition| {
            let _ = writeln!(content, "{indentation}{}({condition})", check.name);
            content
        });
    let mut edits: Vec<Edit> = check.edit.into_iter().collect();
    edits.push(Edit {
        range: TextRange::empty(line_start(file.text, if_stmt.start())),
        content,
    });
    let stated = conditions
        .iter()
        .map(|condition| format!("`{condition}`"))
        .collect::<Vec<_>>()
        .join(" and ");
    Some(Fix {
        title: format!("Assert {stated} with `torch._check` before the `if`"),
        edits,
        applicability: Applicability::Unsafe,
    })
}

/// The `if` statement (not an `elif`: nothing can go between clauses) whose test holds `range`.
fn enclosing_if(body: &[Stmt], range: TextRange) -> Option<&ast::StmtIf> {
    for stmt in body {
        if !stmt.range().contains_range(range) {
            continue;
        }
        return match stmt {
            Stmt::If(if_stmt) if if_stmt.test.range().contains_range(range) => Some(if_stmt),
            Stmt::If(if_stmt) => enclosing_if(&if_stmt.body, range).or_else(|| {
                if_stmt
                    .elif_else_clauses
                    .iter()
                    .find_map(|clause| enclosing_if(&clause.body, range))
            }),
            Stmt::FunctionDef(def) => enclosing_if(&def.body, range),
            Stmt::ClassDef(def) => enclosing_if(&def.body, range),
            Stmt::For(for_stmt) => enclosing_if(&for_stmt.body, range)
                .or_else(|| enclosing_if(&for_stmt.orelse, range)),
            Stmt::While(while_stmt) => enclosing_if(&while_stmt.body, range)
                .or_else(|| enclosing_if(&while_stmt.orelse, range)),
            Stmt::With(with) => enclosing_if(&with.body, range),
            Stmt::Try(try_stmt) => enclosing_if(&try_stmt.body, range)
                .or_else(|| {
                    try_stmt.handlers.iter().find_map(
                        |ast::ExceptHandler::ExceptHandler(handler)| {
                            enclosing_if(&handler.body, range)
                        },
                    )
                })
                .or_else(|| enclosing_if(&try_stmt.orelse, range))
                .or_else(|| enclosing_if(&try_stmt.finalbody, range)),
            _ => None,
        };
    }
    None
}

/// The comparisons that together say `not expr`, in source text; `None` when that is no
/// conjunction of comparisons. A check must be a plain comparison: `not`, `and` and `or` on the
/// exporter's symbolic booleans would ask for the very value it does not have.
fn negation(expr: &Expr, text: &str, out: &mut Vec<String>) -> Option<()> {
    match expr {
        Expr::Compare(compare) => {
            let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
                return None;
            };
            out.push(comparison(&compare.left, negated(*op)?, right, text));
            Some(())
        }
        Expr::BoolOp(ast::ExprBoolOp {
            op: ast::BoolOp::Or,
            values,
            ..
        }) => values
            .iter()
            .try_for_each(|value| negation(value, text, out)),
        Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::Not,
            operand,
            ..
        }) => affirmation(operand, text, out),
        _ => None,
    }
}

/// The comparisons that together say `expr`.
fn affirmation(expr: &Expr, text: &str, out: &mut Vec<String>) -> Option<()> {
    match expr {
        Expr::Compare(compare) => {
            let mut left = &*compare.left;
            for (op, right) in compare.ops.iter().zip(&compare.comparators) {
                negated(*op)?;
                out.push(comparison(left, *op, right, text));
                left = right;
            }
            Some(())
        }
        Expr::BoolOp(ast::ExprBoolOp {
            op: ast::BoolOp::And,
            values,
            ..
        }) => values
            .iter()
            .try_for_each(|value| affirmation(value, text, out)),
        Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::Not,
            operand,
            ..
        }) => negation(operand, text, out),
        _ => None,
    }
}

fn comparison(left: &Expr, op: ast::CmpOp, right: &Expr, text: &str) -> String {
    format!(
        "{} {} {}",
        &text[left.range()],
        op.as_str(),
        &text[right.range()]
    )
}

/// The comparison that holds exactly when `op` does not; identity and membership tests have
/// none the exporter can check.
fn negated(op: ast::CmpOp) -> Option<ast::CmpOp> {
    Some(match op {
        ast::CmpOp::Lt => ast::CmpOp::GtE,
        ast::CmpOp::LtE => ast::CmpOp::Gt,
        ast::CmpOp::Gt => ast::CmpOp::LtE,
        ast::CmpOp::GtE => ast::CmpOp::Lt,
        ast::CmpOp::Eq => ast::CmpOp::NotEq,
        ast::CmpOp::NotEq => ast::CmpOp::Eq,
        ast::CmpOp::Is | ast::CmpOp::IsNot | ast::CmpOp::In | ast::CmpOp::NotIn => return None,
    })
}

/// Where a data-dependent value is used in a way no check can make exportable: `len()`,
/// `int(t)` and `float(t)` in non-strict export, `math` functions on tensors, loops and list
/// indices. A condition holding one of these gets no check.
pub(crate) fn unexportable_uses(events: &[Event], strict: bool) -> Vec<TextRange> {
    events
        .iter()
        .filter(|event| match &event.kind {
            EventKind::Scalar { usage, .. } => match usage {
                ScalarUse::Len | ScalarUse::Conversion => !strict,
                ScalarUse::MathCall
                | ScalarUse::Range
                | ScalarUse::ListIndex
                | ScalarUse::ConcreteArgument(_) => true,
            },
            _ => false,
        })
        .map(|event| event.range)
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::{Rule, Settings, check};

    /// The title of the check fix on the PT102 of `validation`, placed in a model's `forward`
    /// after `n = t.item()`.
    fn fix_title(validation: &str) -> Option<String> {
        let mut body = String::new();
        for line in validation.lines() {
            body.push_str("        ");
            body.push_str(line);
            body.push('\n');
        }
        let source = format!(
            "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n    def forward(self, x, t, u):\n        n = t.item()\n        m = u.item()\n{body}        return x * n\n"
        );
        let report = check(&source, &Settings::default());
        let diagnostic = report
            .diagnostics
            .iter()
            .find(|diagnostic| diagnostic.rule == Rule::DataDependentScalar)
            .unwrap_or_else(|| panic!("no PT102 in:\n{source}"));
        diagnostic.fix.as_ref().map(|fix| fix.title.clone())
    }

    #[test]
    fn the_negation_of_a_validation_becomes_checks() {
        assert_eq!(
            fix_title("if n >= 10 or m != 2:\n    raise ValueError()").as_deref(),
            Some("Assert `n < 10` and `m == 2` with `torch._check` before the `if`")
        );
        assert_eq!(
            fix_title("if not (n > 0 and m < n):\n    raise ValueError()").as_deref(),
            Some("Assert `n > 0` and `m < n` with `torch._check` before the `if`")
        );
    }

    #[test]
    fn no_check_where_none_can_decide_the_branch() {
        // The negation of `and` is an `or`, which the exporter cannot check.
        assert_eq!(
            fix_title("if n < 0 and m < 0:\n    raise ValueError()"),
            None
        );
        // A chained comparison's negation is an `or` too.
        assert_eq!(fix_title("if 0 < n < 10:\n    raise ValueError()"), None);
        // A branch with a normal path on both sides.
        assert_eq!(fix_title("if n < 0:\n    x = -x"), None);
        // An `elif` has no place for a statement before it.
        assert_eq!(
            fix_title("if x.shape[0] > 3:\n    x = x[:3]\nelif n < 0:\n    raise ValueError()"),
            None
        );
    }
}
