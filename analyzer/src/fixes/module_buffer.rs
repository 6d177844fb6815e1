//! The PT601 fix for a Python number on the module that `forward` changes on every call
//! (`self.steps += 1`): the number, set in `__init__` (`self.steps = 0`), becomes a buffer
//! (`self.register_buffer("steps", torch.tensor(0), persistent=False)`), which the exported
//! program carries and updates on each call as eager does.
//!
//! Measured with torch 2.15: `self.steps += 1` on such a buffer exports (non-strict) as a buffer
//! mutation, and the exported module counts 1, 2, 3 over three calls like eager. The buffer is
//! not persistent, so the model's `state_dict` (its checkpoints) stays as it was. The fix is
//! unsafe: code that reads the count as a Python number (a branch on it) now reads a tensor. It
//! is offered only where the rewrite is sure to run: the number is a literal assigned after
//! `super().__init__()`, and no other method assigns the attribute (assigning a Python number to
//! a buffer's name raises).

use ruff_text_size::{Ranged, TextRange};

use super::ModuleImports;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::syntax::ast::visitor::{self, Visitor};
use crate::syntax::ast::{Expr, Stmt};
use crate::syntax::is_number_literal;

/// The fix for `self.<attribute>`, changed in traced code at `changed_at`, in the module `body`.
pub(crate) fn buffer_fix(
    attribute: &str,
    changed_at: TextRange,
    body: &[Stmt],
    text: &str,
    imports: &ModuleImports,
) -> Option<Fix> {
    let class = body.iter().find_map(|stmt| match stmt {
        Stmt::ClassDef(class) if class.range().contains_range(changed_at) => Some(class),
        _ => None,
    })?;
    let init = class.body.iter().find_map(|stmt| match stmt {
        Stmt::FunctionDef(function) if function.name.as_str() == "__init__" => Some(function),
        _ => None,
    })?;
    let super_init = init.body.iter().position(is_super_init)?;
    let (assignment, value) = init.body[super_init + 1..]
        .iter()
        .find_map(|stmt| match stmt {
            Stmt::Assign(assign)
                if assign.targets.len() == 1
                    && is_self_attribute(&assign.targets[0], attribute) =>
            {
                Some((assign, &*assign.value))
            }
            _ => None,
        })?;
    if !is_number_literal(value) {
        return None;
    }
    let mut assignments = Assignments {
        attribute,
        count: 0,
    };
    assignments.visit_body(&class.body);
    if assignments.count != 1 {
        return None;
    }
    let literal = text.get(value.range().start().to_usize()..value.range().end().to_usize())?;
    let tensor = imports.member("torch", "tensor");
    let content = format!(
        "self.register_buffer(\"{attribute}\", {}({literal}), persistent=False)",
        tensor.name
    );
    let mut edits: Vec<Edit> = tensor.edit.into_iter().collect();
    edits.push(Edit {
        range: assignment.range(),
        content,
    });
    Some(Fix {
        title: format!(
            "Keep `self.{attribute}` in a buffer the exported program updates on every call"
        ),
        edits,
        applicability: Applicability::Unsafe,
    })
}

/// `super().__init__(...)` or `nn.Module.__init__(self, ...)` as a statement.
fn is_super_init(stmt: &Stmt) -> bool {
    let Stmt::Expr(expression) = stmt else {
        return false;
    };
    let Expr::Call(call) = &*expression.value else {
        return false;
    };
    let Expr::Attribute(attribute) = &*call.func else {
        return false;
    };
    attribute.attr.as_str() == "__init__"
        && match &*attribute.value {
            Expr::Call(inner) => {
                matches!(&*inner.func, Expr::Name(name) if name.id.as_str() == "super")
            }
            Expr::Attribute(base) => base.attr.as_str() == "Module",
            _ => false,
        }
}

fn is_self_attribute(target: &Expr, attribute: &str) -> bool {
    matches!(target, Expr::Attribute(target)
        if target.attr.as_str() == attribute
            && matches!(&*target.value, Expr::Name(name) if name.id.as_str() == "self"))
}

/// Counts the plain assignments (`=`, `: T =`) to `self.<attribute>`, in nested blocks and
/// functions too; `+=` is not one.
struct Assignments<'a> {
    attribute: &'a str,
    count: usize,
}

impl<'a> Visitor<'a> for Assignments<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assign(assign) => {
                self.count += assign
                    .targets
                    .iter()
                    .filter(|target| is_self_attribute(target, self.attribute))
                    .count();
            }
            Stmt::AnnAssign(assign) if is_self_attribute(&assign.target, self.attribute) => {
                self.count += 1;
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }
}
