//! Building fixes: the text helpers every rule's fix needs (indentation, imports).
//!
//! A rule decides *what* to change; the helpers here decide how the change is spelled in the
//! file, so that all fixes indent, import and place code the same way.

pub(crate) mod autograd_grad;
pub(crate) mod branches;
pub(crate) mod compiled_module;
pub(crate) mod cond;
pub(crate) mod data_attribute;
pub(crate) mod dims;
pub(crate) mod module_buffer;
pub(crate) mod numpy_tensor;
pub(crate) mod register_fake;
pub(crate) mod scalar_conversion;
pub(crate) mod torch_check;
pub(crate) mod torch_random;
pub(crate) mod where_rewrite;

use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::SourceFile;
use crate::diagnostic::Edit;
use crate::names::import_bindings;
use crate::syntax::ast::{self, Expr, Stmt};

/// The offset where the line holding `offset` starts.
///
/// `offset` may fall inside a multi-byte character (`stmt.end() - 1` after an `é`): the search
/// runs over bytes, and a `\n` byte never occurs inside a UTF-8 sequence, so the result is
/// always a character boundary.
pub(crate) fn line_start(text: &str, offset: TextSize) -> TextSize {
    let offset = offset.to_usize().min(text.len());
    let start = text.as_bytes()[..offset]
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |newline| newline + 1);
    TextSize::try_from(start).unwrap_or_default()
}

/// The offset just past the line holding `offset` (after its newline, or the end of the text);
/// like [`line_start`], safe for an offset inside a character.
pub(crate) fn line_end(text: &str, offset: TextSize) -> TextSize {
    let offset = offset.to_usize().min(text.len());
    let end = text.as_bytes()[offset..]
        .iter()
        .position(|&byte| byte == b'\n')
        .map_or(text.len(), |newline| offset + newline + 1);
    TextSize::try_from(end).unwrap_or_default()
}

/// The leading whitespace of the line holding `offset`.
pub(crate) fn indentation_at(text: &str, offset: TextSize) -> &str {
    let start = line_start(text, offset).to_usize();
    let line = &text[start..];
    let width = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..width]
}

/// `block` (whole lines) moved from indentation `from` to indentation `to`; blank lines stay
/// blank, and a line indented less than `from` (inside a string, say) keeps its own.
pub(crate) fn reindent(block: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(block.len());
    for line in block.split_inclusive('\n') {
        if line.trim().is_empty() {
            out.push_str(if line.ends_with('\n') { "\n" } else { "" });
        } else if let Some(rest) = line.strip_prefix(from) {
            out.push_str(to);
            out.push_str(rest);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The innermost statement that holds `range`, inside compound statements, functions and
/// classes alike; `None` where no statement does.
pub(crate) fn innermost_statement(body: &[Stmt], range: TextRange) -> Option<&Stmt> {
    let stmt = body
        .iter()
        .find(|stmt| stmt.range().contains_range(range))?;
    let inner = match stmt {
        Stmt::FunctionDef(def) => innermost_statement(&def.body, range),
        Stmt::ClassDef(def) => innermost_statement(&def.body, range),
        Stmt::If(if_stmt) => innermost_statement(&if_stmt.body, range).or_else(|| {
            if_stmt
                .elif_else_clauses
                .iter()
                .find_map(|clause| innermost_statement(&clause.body, range))
        }),
        Stmt::For(for_stmt) => innermost_statement(&for_stmt.body, range)
            .or_else(|| innermost_statement(&for_stmt.orelse, range)),
        Stmt::While(while_stmt) => innermost_statement(&while_stmt.body, range)
            .or_else(|| innermost_statement(&while_stmt.orelse, range)),
        Stmt::With(with) => innermost_statement(&with.body, range),
        Stmt::Try(try_stmt) => innermost_statement(&try_stmt.body, range)
            .or_else(|| {
                try_stmt
                    .handlers
                    .iter()
                    .find_map(|ast::ExceptHandler::ExceptHandler(handler)| {
                        innermost_statement(&handler.body, range)
                    })
            })
            .or_else(|| innermost_statement(&try_stmt.orelse, range))
            .or_else(|| innermost_statement(&try_stmt.finalbody, range)),
        _ => None,
    };
    inner.or(Some(stmt))
}

/// Whether `stmt` has its lines to itself: only indentation before it and at most a comment
/// after it, so it can be replaced by a block (`x.data = y; z()` cannot).
pub(crate) fn stands_alone(stmt: &Stmt, text: &str) -> bool {
    let before = &text[line_start(text, stmt.start()).to_usize()..stmt.start().to_usize()];
    let after = &text[stmt.end().to_usize()..line_end(text, stmt.end()).to_usize()];
    let after = after.trim_start_matches([' ', '\t']);
    before.trim_start_matches([' ', '\t']).is_empty()
        && (after.trim().is_empty() || after.starts_with('#'))
}

/// The source of `expr` written so that an attribute can follow it (`….item()`) or it can stand
/// where a call stood: as is for a name, attribute, call or subscript on one line, else in
/// parentheses (`(a + b).item()`; a line break outside brackets would end the statement).
pub(crate) fn as_primary(expr: &Expr, text: &str) -> String {
    let source = &text[expr.range()];
    let primary = matches!(
        expr,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_)
    );
    if primary && !source.contains('\n') {
        source.to_owned()
    } else {
        format!("({source})")
    }
}

/// How fixed code names an imported object, and the import to add when the file lacks one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Imported {
    /// The expression that refers to the object in this file (`Dim`, `torch.export.Dim`).
    pub(crate) name: String,
    /// An import statement to insert, when no binding in the file reaches the object.
    pub(crate) edit: Option<Edit>,
}

/// The module-level import bindings of a file, gathered once: a file with thousands of
/// diagnostics asks for `torch.cond` or `torch._check` once per fix, and scanning every
/// top-level statement each time made such files quadratic.
#[derive(Debug, Clone)]
pub(crate) struct ModuleImports {
    /// (local name, qualified target) of every module-level import, in file order.
    bindings: Vec<(String, String)>,
    insertion_point: TextSize,
}

impl ModuleImports {
    pub(crate) fn of(body: &[Stmt], file: SourceFile<'_>) -> Self {
        let bindings = body
            .iter()
            .filter(|stmt| matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)))
            .flat_map(|stmt| import_bindings(stmt, file))
            .collect();
        Self {
            bindings,
            insertion_point: import_insertion_point(body, file.text),
        }
    }

    /// How to refer to `module.member` (`torch.export`, `Dim`) at module level, adding
    /// `from module import member` when no import of the file reaches it. A plain
    /// `import torch` reaches `torch.export.Dim` as `torch.export.Dim`: torch imports its
    /// submodules.
    pub(crate) fn member(&self, module: &str, member: &str) -> Imported {
        let qualified = format!("{module}.{member}");
        let mut module_alias = None;
        for (local, target) in &self.bindings {
            if *target == qualified {
                return Imported {
                    name: local.clone(),
                    edit: None,
                };
            }
            if module_alias.is_none() && qualified.starts_with(&format!("{target}.")) {
                module_alias = Some(format!("{local}{}", &qualified[target.len()..]));
            }
        }
        if let Some(name) = module_alias {
            return Imported { name, edit: None };
        }
        Imported {
            name: member.to_owned(),
            edit: Some(Edit {
                range: TextRange::empty(self.insertion_point),
                content: format!("from {module} import {member}\n"),
            }),
        }
    }
}

/// [`ModuleImports::member`] for a builder that runs once per file.
pub(crate) fn import_member(
    body: &[Stmt],
    file: SourceFile<'_>,
    module: &str,
    member: &str,
) -> Imported {
    ModuleImports::of(body, file).member(module, member)
}

/// Where a new top-level import goes: after the last top-level import, else after the module
/// docstring and `from __future__` imports, else at the top.
pub(crate) fn import_insertion_point(body: &[Stmt], text: &str) -> TextSize {
    let last_import = body
        .iter()
        .take_while(|stmt| {
            matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) || is_docstring(stmt)
        })
        .last();
    let after = body
        .iter()
        .filter(|stmt| matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)))
        .last()
        .or(last_import);
    after.map_or(TextSize::new(0), |stmt| line_end(text, stmt.end()))
}

fn is_docstring(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Expr(expr) if expr.value.is_string_literal_expr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse;

    fn imported(source: &str, module: &str, member: &str) -> (String, Option<String>) {
        let parsed = parse(source);
        let found = import_member(
            &parsed.module.body,
            SourceFile::detached(source),
            module,
            member,
        );
        let fixed = found.edit.map(|edit| {
            let mut text = source.to_owned();
            text.insert_str(edit.range.start().to_usize(), &edit.content);
            text
        });
        (found.name, fixed)
    }

    #[test]
    fn existing_imports_are_reused() {
        let source = "import torch\nfrom torch.export import Dim as D\n";
        assert_eq!(imported(source, "torch.export", "Dim"), ("D".into(), None));
        let source = "import torch as t\n";
        assert_eq!(
            imported(source, "torch.export", "Dim"),
            ("t.export.Dim".into(), None)
        );
    }

    #[test]
    fn a_missing_import_goes_after_the_last_import() {
        let source = "\"\"\"Doc.\"\"\"\nimport os\n\nx = 1\nimport sys\n";
        let (name, fixed) = imported(source, "torch.export", "Dim");
        assert_eq!(name, "Dim");
        assert_eq!(
            fixed.unwrap(),
            "\"\"\"Doc.\"\"\"\nimport os\n\nx = 1\nimport sys\nfrom torch.export import Dim\n"
        );
        let (_, fixed) = imported("\"\"\"Doc.\"\"\"\nx = 1\n", "torch", "nn");
        assert_eq!(
            fixed.unwrap(),
            "\"\"\"Doc.\"\"\"\nfrom torch import nn\nx = 1\n"
        );
    }

    #[test]
    fn line_bounds_hold_for_offsets_inside_a_character() {
        // `é` is bytes 6..8; offset 7 is inside it (a statement's end minus one byte).
        let text = "a\nx = é\nb\n";
        assert_eq!(line_start(text, TextSize::new(7)), TextSize::new(2));
        assert_eq!(line_end(text, TextSize::new(7)), TextSize::new(9));
        assert_eq!(line_end(text, TextSize::new(100)), TextSize::new(11));
    }

    #[test]
    fn a_compound_or_multi_line_expression_is_parenthesised_as_a_primary() {
        let primary = |source: &str| {
            let expr = crate::syntax::parse_expression(source).unwrap();
            as_primary(&expr, source)
        };
        assert_eq!(primary("x.detach()[0]"), "x.detach()[0]");
        assert_eq!(primary("a + b"), "(a + b)");
        assert_eq!(primary("3"), "(3)");
        assert_eq!(primary("(x\n .detach())"), "(x\n .detach())");
    }

    #[test]
    fn reindent_moves_a_block_and_keeps_blank_lines() {
        let block = "    if a:\n        b()\n\n    c()\n";
        assert_eq!(
            reindent(block, "    ", "        "),
            "        if a:\n            b()\n\n        c()\n"
        );
        let text = "def f():\n    x = 1\n";
        assert_eq!(indentation_at(text, TextSize::new(15)), "    ");
    }
}
