//! The PT204 fix: export the module itself, not its `torch.compile` wrapper, by unwrapping the
//! call: `torch.compile(net, backend="eager")` becomes `net`.
//!
//! Measured with torch 2.15 (strict and not): the wrapper's program agrees with eager but
//! renames its input `args_0` and its parameters `_orig_mod.*`, and `dynamic_shapes` keyed by
//! `forward`'s names fails; the module itself exports under its own names. Unsafe: the name
//! that held the compiled module now holds the module, so code that runs it eagerly runs it
//! uncompiled (the same values, without the speed).

use ruff_text_size::TextRange;

use super::as_primary;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::syntax::ast::Expr;
use crate::syntax::parse_expression;

/// The fix for the `torch.compile(...)` call at `call`: its first argument in its place.
/// `None` when no argument is the module (`torch.compile(*mods)`).
pub(crate) fn unwrap_compile_fix(call: TextRange, text: &str) -> Option<Fix> {
    let source = &text[call];
    let Expr::Call(parsed) = parse_expression(source)? else {
        return None;
    };
    let module = parsed.arguments.args.first().or_else(|| {
        parsed
            .arguments
            .find_keyword("model")
            .map(|keyword| &keyword.value)
    })?;
    if matches!(module, Expr::Starred(_)) {
        return None;
    }
    let module = as_primary(module, source);
    Some(Fix {
        title: format!("Export the module itself: `{module}` in place of `torch.compile(...)`"),
        edits: vec![Edit {
            range: call,
            content: module,
        }],
        applicability: Applicability::Unsafe,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(text: &str) -> Option<String> {
        let start = text.find("torch.compile").unwrap();
        let end = text.rfind(')').unwrap() + 1;
        let range = TextRange::new(
            u32::try_from(start).unwrap().into(),
            u32::try_from(end).unwrap().into(),
        );
        let fix = unwrap_compile_fix(range, text)?;
        assert_eq!(fix.applicability, Applicability::Unsafe);
        let edit = &fix.edits[0];
        let mut out = text.to_owned();
        out.replace_range(
            edit.range.start().to_usize()..edit.range.end().to_usize(),
            &edit.content,
        );
        Some(out)
    }

    #[test]
    fn the_module_takes_the_call_s_place() {
        assert_eq!(
            fixed("model = torch.compile(Net(), backend=\"eager\")").as_deref(),
            Some("model = Net()")
        );
        assert_eq!(
            fixed("model = torch.compile(\n    a\n    + b\n)").as_deref(),
            Some("model = (a\n    + b)")
        );
    }

    #[test]
    fn the_module_by_keyword_or_none() {
        assert_eq!(fixed("model = torch.compile(*mods)"), None);
        assert_eq!(
            fixed("model = torch.compile(model=net, mode=\"max-autotune\")").as_deref(),
            Some("model = net")
        );
    }
}
