//! The PT603 fix for `torch.func.grad(f)(x)` in traced code: the same derivative taken with
//! `torch.autograd.grad` on a detached copy of `x` that requires grad, under
//! `torch.enable_grad()`.
//!
//! Measured with torch 2.15: non-strict export traces `torch.autograd.grad` into the program,
//! which agrees with eager, where `torch.func.grad` leaves a fake tensor of the trace as a
//! constant; strict export rejects `torch.autograd.grad` (a graph break, GB9186), so the fix is
//! offered for non-strict export only. Unsafe: it needs the mode to stay non-strict.
//!
//! Only `grad` of one argument with no options (`argnums`, `has_aux` change what it returns),
//! as the value of an assignment or a `return` on its own lines. The other transforms
//! (`jacrev`, `jacfwd`, `hessian`, `vjp`, `jvp`, `linearize`, `grad_and_value`) have no edit
//! that keeps their meaning in one expression: none is offered.

use ruff_text_size::{Ranged, TextRange};

use super::{ModuleImports, as_primary, indentation_at, innermost_statement, stands_alone};
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::syntax::ast::{Expr, Stmt};

/// The name the fix gives the detached input when the function is not a lambda.
const PRIMAL: &str = "primal";

/// The fix for the transform call at `transform` (`torch.func.grad(f)`), applied to one
/// argument; `None` where no edit keeps the meaning.
pub(crate) fn autograd_fix(
    transform: TextRange,
    name: &str,
    body: &[Stmt],
    text: &str,
    imports: &ModuleImports,
) -> Option<Fix> {
    if !matches!(name, "torch.func.grad" | "functorch.grad") {
        return None;
    }
    let stmt = innermost_statement(body, transform)?;
    let (target, value) = match stmt {
        Stmt::Assign(assign) if assign.targets.len() == 1 => {
            (Some(&text[assign.targets[0].range()]), &*assign.value)
        }
        Stmt::Return(ret) => (None, ret.value.as_deref()?),
        _ => return None,
    };
    let Expr::Call(applied) = value else {
        return None;
    };
    let Expr::Call(made) = &*applied.func else {
        return None;
    };
    if made.range() != transform
        || !stands_alone(stmt, text)
        || !applied.arguments.keywords.is_empty()
        || !made.arguments.keywords.is_empty()
    {
        return None;
    }
    let ([function], [input]) = (&*made.arguments.args, &*applied.arguments.args) else {
        return None;
    };
    if matches!(input, Expr::Starred(_)) {
        return None;
    }
    let (primal, output) = match function {
        Expr::Lambda(lambda) => {
            let parameters = lambda.parameters.as_deref()?;
            let [only] = &*parameters.args else {
                return None;
            };
            let plain = parameters.posonlyargs.is_empty()
                && parameters.kwonlyargs.is_empty()
                && parameters.vararg.is_none()
                && parameters.kwarg.is_none()
                && only.default.is_none();
            if !plain {
                return None;
            }
            (
                only.parameter.name.as_str().to_owned(),
                text[lambda.body.range()].to_owned(),
            )
        }
        Expr::Name(_) | Expr::Attribute(_) => (
            PRIMAL.to_owned(),
            format!("{}({PRIMAL})", &text[function.range()]),
        ),
        _ => return None,
    };
    // The name the detached input is bound to must be free in the function around it.
    let function_text =
        enclosing_function(body, transform).map_or(&text[stmt.range()], |range| &text[range]);
    let outside = function_text.replace(&text[function.range()], "");
    if mentions(&outside, &primal) {
        return None;
    }
    let enable_grad = imports.member("torch", "enable_grad");
    let grad = imports.member("torch.autograd", "grad");
    if grad.edit.is_some() {
        // A bare `grad` would collide with the `grad` the file imports from `torch.func`.
        return None;
    }
    let indent = indentation_at(text, stmt.start());
    let input = as_primary(input, text);
    let derivative = format!("{}({output}, {primal})[0]", grad.name);
    let last = match target {
        Some(target) => format!("{target} = {derivative}"),
        None => format!("return {derivative}"),
    };
    let mut edits: Vec<Edit> = enable_grad.edit.into_iter().collect();
    edits.push(Edit {
        range: stmt.range(),
        content: format!(
            "with {}():\n{indent}    {primal} = {input}.detach().requires_grad_(True)\n{indent}    {last}",
            enable_grad.name
        ),
    });
    Some(Fix {
        title: format!(
            "Take the derivative with `{}` under `torch.enable_grad()` (non-strict export traces it)",
            grad.name
        ),
        edits,
        applicability: Applicability::Unsafe,
    })
}

/// The innermost function definition holding `range`.
fn enclosing_function(body: &[Stmt], range: TextRange) -> Option<TextRange> {
    let mut found = None;
    let mut level = body;
    while let Some(stmt) = level.iter().find(|stmt| stmt.range().contains_range(range)) {
        level = match stmt {
            Stmt::FunctionDef(def) => {
                found = Some(def.range());
                &def.body
            }
            Stmt::ClassDef(def) => &def.body,
            Stmt::If(if_stmt) => &if_stmt.body,
            Stmt::With(with) => &with.body,
            Stmt::For(for_stmt) => &for_stmt.body,
            Stmt::While(while_stmt) => &while_stmt.body,
            Stmt::Try(try_stmt) => &try_stmt.body,
            _ => break,
        };
    }
    found
}

/// Whether `text` holds `name` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(word)
            && !text[at + name.len()..].chars().next().is_some_and(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SourceFile;
    use crate::syntax::parse;

    fn fix_of(text: &str) -> Option<String> {
        let parsed = parse(text);
        let imports = ModuleImports::of(&parsed.module.body, SourceFile::detached(text));
        let start = text.find("torch.func.grad(").unwrap();
        let inner = &text[start..];
        // The transform call ends at the parenthesis matching its first.
        let mut depth = 0;
        let mut end = 0;
        for (at, c) in inner.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let range = TextRange::at(
            u32::try_from(start).unwrap().into(),
            u32::try_from(end).unwrap().into(),
        );
        let fix = autograd_fix(
            range,
            "torch.func.grad",
            &parsed.module.body,
            text,
            &imports,
        )?;
        let mut out = text.to_owned();
        for edit in fix.edits.iter().rev() {
            out.replace_range(
                edit.range.start().to_usize()..edit.range.end().to_usize(),
                &edit.content,
            );
        }
        Some(out)
    }

    const HEAD: &str = "import torch\n\n\ndef forward(x):\n";

    #[test]
    fn a_lambda_s_body_is_differentiated_by_its_parameter() {
        let text = format!("{HEAD}    return torch.func.grad(lambda r: (r ** 2).sum())(x)\n");
        assert_eq!(
            fix_of(&text).unwrap(),
            format!(
                "{HEAD}    with torch.enable_grad():\n        r = x.detach().requires_grad_(True)\n        return torch.autograd.grad((r ** 2).sum(), r)[0]\n"
            )
        );
    }

    #[test]
    fn a_named_function_is_called_on_the_primal() {
        let text = format!("{HEAD}    g = torch.func.grad(energy)(x * 2)\n    return g\n");
        assert!(fix_of(&text).unwrap().contains(
            "    with torch.enable_grad():\n        primal = (x * 2).detach().requires_grad_(True)\n        g = torch.autograd.grad(energy(primal), primal)[0]\n"
        ));
    }

    #[test]
    fn options_and_taken_names_get_no_fix() {
        let options = format!("{HEAD}    return torch.func.grad(f, argnums=0)(x)\n");
        assert_eq!(fix_of(&options), None);
        let taken =
            format!("{HEAD}    r = x + 1\n    return torch.func.grad(lambda r: r.sum())(r)\n");
        assert_eq!(fix_of(&taken), None);
        let shared = format!("{HEAD}    y = 1; g = torch.func.grad(f)(x)\n");
        assert_eq!(fix_of(&shared), None);
    }
}
