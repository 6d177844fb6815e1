//! Companions of PT401 fixes on `Dim`s another module declares: an info diagnostic on the
//! `Dim(...)` call, in the module that binds it, carrying the edit of that call.
//!
//! A [`Fix`](crate::Fix) never edits another file than its diagnostic's, and a guard's file
//! rarely holds the `Dim` it violates (`BATCH = Dim("batch")` in `pkg/dims.py`, imported by the
//! export script, guarded in `pkg/model.py`). So the declaring module's own report carries the
//! fix, as the tracer's companion does (`TraceDiagnostic::declaration_of` in the server): every
//! consumer (`check --fix`, `--diff`, the editor's code action) applies it as a same-file fix,
//! and the error stays on the guard. The declaring module's report is made from the analyses
//! of the entrypoints whose spec reads its `Dim`s, so it does not depend on which files a check
//! is given.

use crate::diagnostic::{Applicability, Diagnostic, Related, Severity};
use crate::fixes::dims::constraint_fix_of;
use crate::registry::Rule;
use crate::semantic::SemanticModel;
use crate::settings::Settings;
use crate::syntax::Parsed;
use crate::{LineIndex, SourceFile, rules};

/// The companions `entry`'s analysis gives `module` (parsed as `parsed`, its text `file`):
/// one per guard whose constraints name only `Dim`s that `module` binds and that the
/// entrypoint's spec takes from it, when the constraints are edits `module` can hold.
pub(crate) fn of_entry(
    module: &str,
    parsed: &Parsed,
    file: SourceFile<'_>,
    entry_parsed: &Parsed,
    entry: &SemanticModel<'_>,
    entry_path: &std::path::Path,
    settings: &Settings,
) -> Vec<Diagnostic> {
    let Some(spec) = &entry.spec else {
        return Vec::new();
    };
    let here: Vec<_> = spec
        .imported_dims
        .iter()
        .filter(|dim| dim.module == module)
        .collect();
    if here.is_empty() {
        return Vec::new();
    }
    let mut companions = Vec::new();
    let mut lines: std::collections::HashMap<u32, LineIndex> = std::collections::HashMap::new();
    for rules::JudgedGuard {
        file: guard_file,
        range,
        message,
        constraints,
    } in rules::dim_guard_constraints(entry_parsed, entry, settings)
    {
        // A constraint on a `Dim` of another module, or of the entrypoint's own, is not this
        // module's to carry out: the fix would be partial.
        let declared = |name: &str| here.iter().find(|dim| dim.name == name);
        if !constraints
            .iter()
            .all(|constraint| declared(constraint.name()).is_some())
        {
            continue;
        }
        let Some(dim) = constraints
            .first()
            .and_then(|constraint| declared(constraint.name()))
        else {
            continue;
        };
        let Some(fix) = constraint_fix_of(
            &parsed.module.body,
            file,
            dim.spec.as_deref(),
            &constraints,
            Applicability::Unsafe,
        ) else {
            continue;
        };
        let text = entry.source_in(guard_file).text;
        let index = lines
            .entry(guard_file)
            .or_insert_with(|| LineIndex::new(text));
        let (line, column) = index.line_char_column(range.start(), text);
        let path = match guard_file {
            0 => entry_path.to_path_buf(),
            _ => entry.foreign[guard_file as usize - 1].path.to_path_buf(),
        };
        companions.push(Diagnostic {
            rule: Rule::DynamicDimGuard,
            severity: Severity::Info,
            message: format!(
                "the dimensions declared here are violated by a guard in another file (see the \
                 related place): {message}"
            ),
            range: dim.range,
            fix: Some(fix),
            related: vec![Related {
                file: path,
                line: line + 1,
                column: column + 1,
                message: "the guard that needs the fix".to_owned(),
            }],
        });
    }
    companions
}
