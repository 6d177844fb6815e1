//! The module class an entrypoint's model expression builds: `M(...)`, `M(...).eval()`, a
//! name bound to one, a builder function that returns one, a classmethod of the class.

use ruff_text_size::Ranged;

use super::Gathered;
use crate::names;
use crate::semantic::SemanticModel;
use crate::semantic::value::Value;
use crate::syntax::ast::{self, Expr, Stmt};

/// Methods of `nn.Module` that return the module itself, so `M().eval().to(device)` is an `M`.
const RETURNS_SELF: &[&str] = &[
    "eval",
    "train",
    "to",
    "cpu",
    "cuda",
    "float",
    "double",
    "half",
    "bfloat16",
    "requires_grad_",
    "type",
    "share_memory",
    "to_empty",
    "apply",
    "xpu",
    "mps",
];

/// Finds the module class an expression builds: `M(...)`, `M(...).eval().to(device)`, a name
/// bound to one, a same-file builder function that returns one, or a classmethod of the class.
///
/// The resolution reads this file only; a builder or class imported from another file is left
/// to the workspace (where the cross-file resolution plugs in, at the `Value::Qualified` case).
pub(super) struct ModelResolver<'g, 'm, 'a> {
    pub(super) model: &'m SemanticModel<'a>,
    pub(super) gathered: &'g Gathered<'a>,
}

impl<'a> ModelResolver<'_, '_, 'a> {
    pub(super) fn class_of(&self, expr: &'a Expr, depth: usize) -> Option<usize> {
        if depth > 12 {
            return None;
        }
        match expr {
            Expr::Name(name) => {
                let bound = self.gathered.binding_at(name.id.as_str(), name.start())?;
                self.class_of(bound, depth + 1)
            }
            Expr::Call(call) => {
                if let Expr::Attribute(attribute) = &*call.func {
                    if RETURNS_SELF.contains(&attribute.attr.as_str()) {
                        if let Some(class) = self.class_of(&attribute.value, depth + 1) {
                            return Some(class);
                        }
                    }
                }
                self.callee_class(&call.func, depth)
            }
            _ => None,
        }
    }

    /// The class a call of `func` returns.
    fn callee_class(&self, func: &'a Expr, depth: usize) -> Option<usize> {
        let dotted = names::dotted(func)?;
        let global = match self.model.globals.get(dotted.as_str()) {
            Some(value) => Some(match value {
                // A class or function imported from another file of the program.
                Value::Qualified(qualified) => self
                    .model
                    .resolve_qualified(qualified)
                    .unwrap_or_else(|| value.clone()),
                other => other.clone(),
            }),
            // Spelled through an imported module: `torchvision.models.resnet18(...)`.
            None if dotted.contains('.') => names::Resolve::qualified(self.model, func)
                .and_then(|qualified| self.model.resolve_qualified(&qualified)),
            None => None,
        };
        match global {
            Some(Value::Class(class)) if self.model.classes[class].is_module => {
                return Some(class);
            }
            // `model = build(cfg)`, where `build` (here or in another file) returns `M(...)`.
            Some(Value::Function(function)) => {
                return self
                    .returned_class(function, depth)
                    .or_else(|| self.model.class_returned_by(function));
            }
            _ => {}
        }
        // `M.from_config(cfg)`: a classmethod of a module class builds that class.
        if let Expr::Attribute(attribute) = func {
            if let Some(Value::Class(class)) = names::dotted(&attribute.value)
                .and_then(|owner| self.model.globals.get(owner.as_str()))
            {
                let is_classmethod =
                    self.model
                        .find_method(*class, attribute.attr.as_str())
                        .is_some_and(|method| {
                            self.model.functions[method].def.decorator_list.iter().any(
                                |decorator| {
                                    names::dotted(&decorator.expression)
                                        .is_some_and(|name| name == "classmethod")
                                },
                            )
                        });
                if is_classmethod && self.model.classes[*class].is_module {
                    return Some(*class);
                }
            }
        }
        // `Outer.Inner()`: a nested class, found by its own name when that is unique.
        let last = dotted.rsplit('.').next()?;
        let mut matching = self
            .model
            .classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.def.name.as_str() == last);
        match (matching.next(), matching.next()) {
            (Some((index, class)), None) if class.is_module => Some(index),
            _ => None,
        }
    }

    /// The module class a same-file function returns, when every `return` that builds one
    /// agrees.
    fn returned_class(&self, function: usize, depth: usize) -> Option<usize> {
        let mut returns = Vec::new();
        collect_returns(&self.model.functions[function].def.body, &mut returns);
        let mut found = None;
        for value in returns {
            match self.class_of(value, depth + 1) {
                Some(class) if found.is_none_or(|known| known == class) => found = Some(class),
                Some(_) => return None,
                None => {}
            }
        }
        found
    }
}

/// The values of the `return` statements of a function body, outside nested functions.
fn collect_returns<'a>(body: &'a [Stmt], out: &mut Vec<&'a Expr>) {
    for stmt in body {
        match stmt {
            Stmt::Return(ret) => out.extend(ret.value.as_deref()),
            Stmt::If(if_stmt) => {
                collect_returns(&if_stmt.body, out);
                for clause in &if_stmt.elif_else_clauses {
                    collect_returns(&clause.body, out);
                }
            }
            Stmt::With(with) => collect_returns(&with.body, out),
            Stmt::For(for_stmt) => collect_returns(&for_stmt.body, out),
            Stmt::While(while_stmt) => collect_returns(&while_stmt.body, out),
            Stmt::Try(try_stmt) => {
                collect_returns(&try_stmt.body, out);
                for ast::ExceptHandler::ExceptHandler(handler) in &try_stmt.handlers {
                    collect_returns(&handler.body, out);
                }
                collect_returns(&try_stmt.orelse, out);
                collect_returns(&try_stmt.finalbody, out);
            }
            _ => {}
        }
    }
}
