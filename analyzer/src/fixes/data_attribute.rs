//! The PT602 fixes for `.data` of a tensor in traced code.
//!
//! Measured with torch 2.15 (strict and not, eager compared on two calls; see
//! `docs/measured/torch-2.15-failure-kinds.md`):
//!
//! - a read, `x * self.weight.data`, becomes `x * self.weight.detach()`: export traces it, and
//!   in eager it is the same tensor's values (storage shared, no autograd history), so the fix
//!   is safe;
//! - an in-place update, `self.weight.data.add_(1.0)` as a statement, becomes the same update
//!   of the tensor itself under `with torch.no_grad():`, which export keeps in the program
//!   (`wrap_with_set_grad_enabled(False, ...)`) and which agrees call after call. Unsafe: the
//!   tensor's autograd version counter now moves, which a backward through an earlier use
//!   would notice;
//! - an assignment, `self.weight.data = value`, becomes `self.weight.copy_(value)` under
//!   `torch.no_grad()`, its `.data` reads made `.detach()`. Unsafe: `copy_` keeps the tensor's
//!   shape and dtype (it broadcasts and casts `value`), where `.data = ...` may change them.
//!
//! What no edit fixes: a `.data` read written as an assignment target (`x.data[0] = 1`), an
//! in-place method whose statement holds more than the call, a statement sharing its line.

use ruff_text_size::{Ranged, TextRange};

use super::{ModuleImports, indentation_at, innermost_statement, stands_alone};
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::syntax::ast::{Expr, Stmt};

/// The fix for `tensor.data` read at `read` (the attribute expression).
pub(crate) fn read_fix(
    read: TextRange,
    tensor: &str,
    body: &[Stmt],
    text: &str,
    imports: &ModuleImports,
) -> Option<Fix> {
    let stmt = innermost_statement(body, read)?;
    let after = &text[read.end().to_usize()..];
    if let Some(method) = in_place_method(after) {
        return in_place_fix(stmt, read, tensor, method, text, imports);
    }
    // A store through `.data` (`x.data[0] = 1`, `x.data += 1`) writes the tensor: no read.
    let stored = match stmt {
        Stmt::Assign(assign) => assign
            .targets
            .iter()
            .any(|target| target.range().contains_range(read)),
        Stmt::AugAssign(assign) => assign.target.range().contains_range(read),
        _ => false,
    };
    if stored {
        return None;
    }
    Some(Fix {
        title: format!("Read it with `{tensor}.detach()`"),
        edits: vec![Edit {
            range: read,
            content: format!("{tensor}.detach()"),
        }],
        applicability: Applicability::Safe,
    })
}

/// The fix for `tensor.data = value` at `target`: `tensor.copy_(value)` under `no_grad`, with
/// the `.data` reads of `value` (`reads`, attribute ranges and tensors) made `.detach()`.
pub(crate) fn assignment_fix(
    target: TextRange,
    tensor: &str,
    reads: &[(TextRange, &str)],
    body: &[Stmt],
    text: &str,
    imports: &ModuleImports,
) -> Option<Fix> {
    let Stmt::Assign(assign) = innermost_statement(body, target)? else {
        return None;
    };
    if assign.targets.len() != 1 || !stands_alone(innermost_statement(body, target)?, text) {
        return None;
    }
    let value = assign.value.range();
    let mut written = String::new();
    let mut at = value.start();
    let mut inside: Vec<&(TextRange, &str)> = reads
        .iter()
        .filter(|(range, _)| value.contains_range(*range))
        .collect();
    inside.sort_by_key(|(range, _)| range.start());
    for (range, read) in inside {
        if range.start() < at {
            continue;
        }
        written.push_str(&text[TextRange::new(at, range.start())]);
        written.push_str(read);
        written.push_str(".detach()");
        at = range.end();
    }
    written.push_str(&text[TextRange::new(at, value.end())]);
    let update = format!("{tensor}.copy_({written})");
    Some(no_grad_block(
        assign.range(),
        &update,
        format!("Update `{tensor}` in place under `torch.no_grad()`: `{tensor}.copy_(...)`"),
        text,
        imports,
    ))
}

/// `self.w.data.add_(1.0)` as a statement: `self.w.add_(1.0)` under `no_grad`.
fn in_place_fix(
    stmt: &Stmt,
    read: TextRange,
    tensor: &str,
    method: &str,
    text: &str,
    imports: &ModuleImports,
) -> Option<Fix> {
    let Stmt::Expr(statement) = stmt else {
        return None;
    };
    let Expr::Call(call) = &*statement.value else {
        return None;
    };
    // The statement is the call itself, on the `.data` read: `t.data.add_(...)`.
    let Expr::Attribute(method_of) = &*call.func else {
        return None;
    };
    if method_of.value.range() != read || !stands_alone(stmt, text) {
        return None;
    }
    let update = format!(
        "{tensor}{}",
        &text[TextRange::new(read.end(), statement.end())]
    );
    Some(no_grad_block(
        statement.range(),
        &update,
        format!("Update `{tensor}` itself under `torch.no_grad()`: `{tensor}.{method}(...)`"),
        text,
        imports,
    ))
}

/// `statement` replaced by `with torch.no_grad():` and `update` inside it.
fn no_grad_block(
    statement: TextRange,
    update: &str,
    title: String,
    text: &str,
    imports: &ModuleImports,
) -> Fix {
    let indent = indentation_at(text, statement.start());
    let no_grad = imports.member("torch", "no_grad");
    let mut edits: Vec<Edit> = no_grad.edit.into_iter().collect();
    edits.push(Edit {
        range: statement,
        content: format!("with {}():\n{indent}    {update}", no_grad.name),
    });
    Fix {
        title,
        edits,
        applicability: Applicability::Unsafe,
    }
}

/// The in-place method called on what `after` follows: `.add_(` gives `add_`.
fn in_place_method(after: &str) -> Option<&str> {
    let rest = after.strip_prefix('.')?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let name = &rest[..end];
    (name.ends_with('_') && !name.starts_with('_') && rest[end..].starts_with('(')).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SourceFile;
    use crate::syntax::parse;

    fn apply(text: &str, fix: &Fix) -> String {
        let mut edits = fix.edits.clone();
        edits.sort_by_key(|edit| std::cmp::Reverse(edit.range.start()));
        let mut out = text.to_owned();
        for edit in edits {
            out.replace_range(
                edit.range.start().to_usize()..edit.range.end().to_usize(),
                &edit.content,
            );
        }
        out
    }

    fn range_of(text: &str, needle: &str, nth: usize) -> TextRange {
        let start = text.match_indices(needle).nth(nth).unwrap().0;
        TextRange::at(
            u32::try_from(start).unwrap().into(),
            u32::try_from(needle.len()).unwrap().into(),
        )
    }

    fn with_file<T>(text: &str, run: impl FnOnce(&[Stmt], &ModuleImports) -> T) -> T {
        let parsed = parse(text);
        let file = SourceFile::detached(text);
        let imports = ModuleImports::of(&parsed.module.body, file);
        run(&parsed.module.body, &imports)
    }

    const HEAD: &str = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n";

    #[test]
    fn a_read_becomes_detach_and_is_safe() {
        let text = format!("{HEAD}        return x * self.w.data.clone()\n");
        let fix = with_file(&text, |body, imports| {
            read_fix(
                range_of(&text, "self.w.data", 0),
                "self.w",
                body,
                &text,
                imports,
            )
        })
        .unwrap();
        assert_eq!(fix.applicability, Applicability::Safe);
        assert!(apply(&text, &fix).ends_with("return x * self.w.detach().clone()\n"));
    }

    #[test]
    fn an_in_place_update_goes_under_no_grad() {
        let text = format!("{HEAD}        self.w.data.add_(1.0)  # decay\n        return x\n");
        let fix = with_file(&text, |body, imports| {
            read_fix(
                range_of(&text, "self.w.data", 0),
                "self.w",
                body,
                &text,
                imports,
            )
        })
        .unwrap();
        assert_eq!(fix.applicability, Applicability::Unsafe);
        assert!(
            apply(&text, &fix)
                .contains("        with torch.no_grad():\n            self.w.add_(1.0)  # decay\n")
        );
    }

    #[test]
    fn an_assignment_becomes_copy_with_its_reads_detached() {
        let text = format!("{HEAD}        self.w.data = self.w.data * 0.9 + x\n        return x\n");
        let reads = [(range_of(&text, "self.w.data", 1), "self.w")];
        let fix = with_file(&text, |body, imports| {
            assignment_fix(
                range_of(&text, "self.w.data", 0),
                "self.w",
                &reads,
                body,
                &text,
                imports,
            )
        })
        .unwrap();
        assert!(apply(&text, &fix).contains(
            "        with torch.no_grad():\n            self.w.copy_(self.w.detach() * 0.9 + x)\n"
        ));
    }

    #[test]
    fn stores_and_shared_lines_get_no_fix() {
        let text =
            format!("{HEAD}        self.w.data[0] = 1.0\n        y = 1; self.w.data.add_(1.0)\n");
        with_file(&text, |body, imports| {
            assert_eq!(
                read_fix(
                    range_of(&text, "self.w.data", 0),
                    "self.w",
                    body,
                    &text,
                    imports
                ),
                None
            );
            assert_eq!(
                read_fix(
                    range_of(&text, "self.w.data", 1),
                    "self.w",
                    body,
                    &text,
                    imports
                ),
                None
            );
        });
    }
}
