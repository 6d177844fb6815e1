//! Companions of PT401 fixes on `Dim`s declared in another file than the guard: an info
//! diagnostic on the `Dim(...)` call, in the file that writes it (a module that binds it, or
//! the entry file itself), carrying the edit there.
//!
//! A [`Fix`](crate::Fix) never edits another file than its diagnostic's, and a guard's file
//! rarely holds the `Dim` it violates (`BATCH = Dim("batch")` in `pkg/dims.py`, imported by the
//! export script, guarded in `pkg/model.py`). So the declaring module's own report carries the
//! fix, as the tracer's companion does (`TraceDiagnostic::declaration_of` in the server): every
//! consumer (`check --fix`, `--diff`, the editor's code action) applies it as a same-file fix,
//! and the error stays on the guard. The declaring module's report is made from the analyses
//! of the entrypoints whose spec reads its `Dim`s, so it does not depend on which files a check
//! is given.

use crate::diagnostic::{Applicability, Diagnostic, Fix, Related, Severity};
use crate::fixes::dims::{DimConstraint, constraint_fix, constraint_fix_of};
use crate::registry::Rule;
use crate::semantic::SemanticModel;
use crate::settings::Settings;
use crate::syntax::Parsed;
use crate::{LineIndex, SourceFile, TextRange, rules};

/// The companions an entry file's own analysis (`model`, of `parsed`) gives it: one per guard
/// in another workspace file of its program whose constraints name only `Dim`s the entry file
/// writes (in `main()`, at module level, in the spec's dict), when the entry file can hold the
/// edit. The guard's file has the error and no fix; this is where the fix is.
pub(crate) fn of_own_entry(
    parsed: &Parsed,
    model: &SemanticModel<'_>,
    settings: &Settings,
    entry_path: &std::path::Path,
) -> Vec<Diagnostic> {
    let Some(spec) = &model.spec else {
        return Vec::new();
    };
    let imported = |name: &str| spec.imported_dims.iter().any(|dim| dim.name == name);
    let workspace = model.workspace;
    let mut companions = Vec::new();
    let mut places = Places::default();
    for rules::JudgedGuard {
        file: guard_file,
        range,
        message,
        constraints,
    } in rules::dim_guard_constraints(parsed, model, settings)
    {
        // The entry file's own guards carry their fix; an installed library's are reported
        // on the `Dim` already, and its code is not the user's.
        let in_library = model
            .source_in(guard_file)
            .module
            .is_some_and(|module| workspace.is_library(module));
        if guard_file == 0 || in_library {
            continue;
        }
        // A `Dim` another module binds is fixed there (`of_entry`), the whole fix or none.
        let names_imported = constraints.iter().any(|constraint| {
            imported(constraint.name())
                || matches!(constraint, DimConstraint::Equal { to, .. } if imported(to))
        });
        if names_imported {
            continue;
        }
        let Some(fix) = constraint_fix(
            &parsed.module.body,
            model.file,
            &constraints,
            Applicability::Unsafe,
        ) else {
            continue;
        };
        // On the declaration the fix edits, as the tracer's companion stands: the two meet on
        // one line after `--trace`.
        let Some(on) = fix.edits.first().map(|edit| edit.range) else {
            continue;
        };
        companions.push(companion(
            on,
            fix,
            &message,
            places.related(model, entry_path, guard_file, range),
        ));
    }
    companions
}

/// The info diagnostic on a `Dim(...)` declaration `on` that carries `fix` for a guard in
/// another file, which `guard` names.
fn companion(on: TextRange, fix: Fix, message: &str, guard: Related) -> Diagnostic {
    Diagnostic {
        rule: Rule::DynamicDimGuard,
        severity: Severity::Info,
        message: format!(
            "the dimensions declared here are violated by a guard in another file (see the \
             related place): {message}"
        ),
        range: on,
        fix: Some(fix),
        related: vec![guard],
    }
}

/// The guards' places as related locations, each file's line index built once.
#[derive(Default)]
struct Places {
    lines: std::collections::HashMap<u32, LineIndex>,
}

impl Places {
    /// `range` of file `file` of `entry`'s program (0: the entry file, at `entry_path`).
    fn related(
        &mut self,
        entry: &SemanticModel<'_>,
        entry_path: &std::path::Path,
        file: u32,
        range: TextRange,
    ) -> Related {
        let text = entry.source_in(file).text;
        let index = self
            .lines
            .entry(file)
            .or_insert_with(|| LineIndex::new(text));
        let (line, column) = index.line_char_column(range.start(), text);
        let path = match file {
            0 => entry_path.to_path_buf(),
            _ => entry.foreign[file as usize - 1].path.to_path_buf(),
        };
        Related {
            file: path,
            line: line + 1,
            column: column + 1,
            message: "the guard that needs the fix".to_owned(),
        }
    }
}

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
    let mut places = Places::default();
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
        companions.push(companion(
            dim.range,
            fix,
            &message,
            places.related(entry, entry_path, guard_file, range),
        ));
    }
    companions
}
