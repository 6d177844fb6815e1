//! The PT601 fix for a number drawn from Python's `random` that reaches a tensor: the same draw
//! made by torch, so that it happens in the exported graph on every call instead of once while
//! exporting (`random.uniform(0.9, 1.1)` → `torch.empty(()).uniform_(0.9, 1.1)`).
//!
//! Measured with torch 2.15: the replacement exports (non-strict) and the exported program
//! draws a new value on each call. The value becomes a 0-d float tensor: arithmetic with
//! tensors is unchanged, but code that uses it as a Python number (a branch on it, a size) would
//! not be, which is why the fix is unsafe.

use ruff_text_size::{Ranged, TextRange};

use super::ModuleImports;
use crate::catalogue::RANDOM_IN_TORCH;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::syntax::{ast::Expr, parse_expression};

/// The fix for the `random` call `qualified` (`random.uniform`) at `call` in `text`; `None` for
/// a draw torch has no same-distribution op for, or a call written with keywords or `*args`.
pub(crate) fn torch_draw_fix(
    qualified: &str,
    call: TextRange,
    text: &str,
    imports: &ModuleImports,
) -> Option<Fix> {
    let &(_, arity, function, template) = RANDOM_IN_TORCH
        .iter()
        .find(|(name, ..)| *name == qualified)?;
    let source = text.get(call.start().to_usize()..call.end().to_usize())?;
    let Expr::Call(parsed) = parse_expression(source)? else {
        return None;
    };
    let arguments = &parsed.arguments;
    if !arguments.keywords.is_empty()
        || arguments.args.len() != arity
        || arguments.args.iter().any(Expr::is_starred_expr)
    {
        return None;
    }
    let torch = imports.member("torch", function);
    let mut replacement = template.replace("{f}", &torch.name);
    for (index, argument) in arguments.args.iter().enumerate() {
        let argument =
            &source[argument.range().start().to_usize()..argument.range().end().to_usize()];
        replacement = replacement.replace(&format!("{{{index}}}"), argument);
    }
    let mut edits: Vec<Edit> = torch.edit.into_iter().collect();
    edits.push(Edit {
        range: call,
        content: replacement.clone(),
    });
    Some(Fix {
        title: format!("Draw it in the graph on every call: `{replacement}`"),
        edits,
        applicability: Applicability::Unsafe,
    })
}
