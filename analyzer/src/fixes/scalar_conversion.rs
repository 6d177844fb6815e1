//! The PT102 fixes for a Python number made from a tensor's value: `int()`/`float()` become
//! `torch.sym_int`/`torch.sym_float`, and a `math` function of a tensor becomes torch's.
//!
//! Measured with torch 2.15 (non-strict export, the mode that fails on them; strict export
//! accepts the originals and the rewrites alike):
//!
//! - `int(n)` of an `.item()` asks the unbacked symbol for its value and fails
//!   ("Could not extract specialized integer"); `torch.sym_int(n)` keeps it symbolic, and the
//!   result exports as a factor, a size (`torch.zeros(n)`, `x[:n]`) or a returned number with no
//!   `torch._check` needed. `torch.sym_int` of a Python number is `int()` itself, so the rewrite
//!   is safe.
//! - `int(t)`/`float(t)` of a tensor fails the same way; `torch.sym_int(t.item())` exports, and
//!   in eager it returns what `int(t)` returns for every dtype (truncation, `bool`, NaN and
//!   overflow errors compared): safe too.
//! - `math.sqrt(t)` fails in both modes, and `math.sqrt(t.item())` still fails non-strict (the
//!   `math` module asks for a concrete float). `torch.sqrt(t)` exports, but it is a 0-d tensor
//!   computed in the tensor's precision instead of a Python float in double precision, and a
//!   domain error becomes NaN: unsafe, and offered only for functions torch spells the same
//!   that map one float to one float (not `floor`/`ceil`, which return `int`, nor `isnan`).
//!
//! What no rewrite fixes: a branch, a loop count or a list index on the number needs its value
//! whatever it is cast with; those keep their own diagnostics.

use ruff_text_size::{Ranged, TextRange};

use super::{ModuleImports, as_primary};
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::syntax::ast::{Expr, ExprCall};
use crate::syntax::parse_expression;

/// `math` functions whose torch function of the same name maps a float to a float.
const MATH_IN_TORCH: &[&str] = &[
    "sqrt", "exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "lgamma",
];

/// The fix for `int(...)`/`float(...)` at `call`: `torch.sym_int(...)`, with `.item()` added
/// when the argument is a tensor (`of_tensor`). `None` for another call shape (`int(s, 16)`).
pub(crate) fn symbolic_cast_fix(
    call: TextRange,
    of_tensor: bool,
    text: &str,
    imports: &ModuleImports,
) -> Option<Fix> {
    let (source, parsed) = parse_call(call, text)?;
    let Expr::Name(function) = &*parsed.func else {
        return None;
    };
    let cast = match function.id.as_str() {
        "int" => "sym_int",
        "float" => "sym_float",
        _ => return None,
    };
    let argument = single_argument(&parsed)?;
    let torch = imports.member("torch", cast);
    let mut edits: Vec<Edit> = torch.edit.into_iter().collect();
    edits.push(Edit {
        range: parsed.func.range() + call.start(),
        content: torch.name.clone(),
    });
    // Only the name changes and `.item()` is added: a comment inside the call stays.
    let written = &source[argument.range()];
    let number = if of_tensor {
        let primary = as_primary(argument, source);
        let (range, content) = if primary == written {
            (TextRange::empty(argument.end()), ".item()".to_owned())
        } else {
            (argument.range(), format!("{primary}.item()"))
        };
        edits.push(Edit {
            range: range + call.start(),
            content,
        });
        format!("{primary}.item()")
    } else {
        written.to_owned()
    };
    let shown = format!("{}({})", torch.name, one_line(&number));
    let title = if of_tensor {
        format!("Read the number with `.item()` and keep it symbolic: `{shown}`")
    } else {
        format!("Keep the number symbolic: `{shown}`")
    };
    Some(Fix {
        title,
        edits,
        applicability: Applicability::Safe,
    })
}

/// The fix for `math.<function>(t)` of a tensor at `call`: torch's function of the same name,
/// for the functions in [`MATH_IN_TORCH`].
pub(crate) fn torch_math_fix(call: TextRange, text: &str, imports: &ModuleImports) -> Option<Fix> {
    let (source, parsed) = parse_call(call, text)?;
    let name = match &*parsed.func {
        Expr::Attribute(attribute) => attribute.attr.as_str(),
        Expr::Name(name) => name.id.as_str(),
        _ => return None,
    };
    let name = *MATH_IN_TORCH.iter().find(|known| **known == name)?;
    let argument = single_argument(&parsed)?;
    let torch = imports.member("torch", name);
    let shown = format!("{}({})", torch.name, one_line(&source[argument.range()]));
    let mut edits: Vec<Edit> = torch.edit.into_iter().collect();
    edits.push(Edit {
        range: parsed.func.range() + call.start(),
        content: torch.name,
    });
    Some(Fix {
        title: format!(
            "Compute it in torch: `{shown}` (a 0-d tensor in the tensor's precision instead of a Python float)"
        ),
        edits,
        applicability: Applicability::Unsafe,
    })
}

/// The call at `call`: its source text, and its syntax with ranges relative to that text.
fn parse_call(call: TextRange, text: &str) -> Option<(&str, ExprCall)> {
    let source = text.get(call.start().to_usize()..call.end().to_usize())?;
    let Expr::Call(parsed) = parse_expression(source)? else {
        return None;
    };
    Some((source, parsed))
}

/// The call's one positional argument, when it has exactly that.
fn single_argument(call: &ExprCall) -> Option<&Expr> {
    match (&*call.arguments.args, &*call.arguments.keywords) {
        ([argument], []) if !argument.is_starred_expr() => Some(argument),
        _ => None,
    }
}

/// `code` on one line, for a fix's title.
fn one_line(code: &str) -> String {
    code.split_whitespace().collect::<Vec<_>>().join(" ")
}
