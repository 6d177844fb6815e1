//! Static analysis of PyTorch model code for `torch.export`: Python source in, diagnostics out.
//!
//! The crate is pure: it reads no files, starts no processes and knows nothing of LSP. Offsets
//! are byte offsets ([`TextRange`]); the server converts them to protocol positions.
//!
//! [`check`] is the one entry point for the CLI and the language server. Analysis never fails:
//! a syntax error is a diagnostic and the rest of the file is still analysed. Facts that cross
//! files (a `Module` base class imported from a sibling file, a fake kernel registered in
//! another file) come in through a [`WorkspaceIndex`] built from each file's [`ModuleSummary`].

mod diagnostic;
mod fix;
mod fixes;
mod line_index;
mod registry;
mod rules;
mod semantic;
mod settings;
mod suppression;
mod syntax;
mod workspace;

pub use diagnostic::{Applicability, Diagnostic, Edit, Fix, Related, Report, Severity};
pub use fix::{FixMode, apply_fixes, compatible_fixes};
pub use fixes::dims::DimConstraint;
pub use line_index::{LineColumn, LineIndex};
pub use registry::Rule;
pub use ruff_text_size::{TextRange, TextSize};
pub use settings::{RuleSelector, Settings};
pub use workspace::{ModuleSummary, WorkspaceIndex, summarize};

/// One Python file as the analyzer sees it.
#[derive(Debug, Clone, Copy)]
pub struct SourceFile<'a> {
    /// The file's text.
    pub text: &'a str,
    /// The dotted module name (`models.encoder`), when the file sits in a package the caller
    /// could resolve. Relative imports and workspace look-ups need it.
    pub module: Option<&'a str>,
    /// True for a package's `__init__.py`, whose relative imports start one level lower.
    pub is_package: bool,
}

impl<'a> SourceFile<'a> {
    /// A file with no known place in a package.
    pub fn detached(text: &'a str) -> Self {
        Self {
            text,
            module: None,
            is_package: false,
        }
    }
}

/// Analyses one file on its own, with no workspace facts.
pub fn check(source: &str, settings: &Settings) -> Report {
    check_file(
        SourceFile::detached(source),
        settings,
        &WorkspaceIndex::default(),
    )
}

/// The fix that carries out `constraints` on the file's `dynamic_shapes` and the `Dim`s it
/// uses (torch's `Suggested fixes:`, or what the static pass derives), or `None` when the file
/// does not define a named dim in a form that can be edited.
pub fn dim_constraint_fix(
    source: &str,
    constraints: &[DimConstraint],
    applicability: Applicability,
) -> Option<Fix> {
    let parsed = syntax::parse(source);
    fixes::dims::constraint_fix(
        &parsed.module.body,
        SourceFile::detached(source),
        constraints,
        applicability,
    )
}

/// The fix for a dimension declared dynamic that the exporter made the constant `constant`
/// because the file's example inputs have that size (0 or 1, or outside the `Dim`'s range):
/// it gives those examples a size that keeps the `Dim` dynamic. `None` when no example of
/// `dim` has that size, so the constant comes from the model's code.
pub fn example_size_fix(source: &str, dim: &str, constant: i64) -> Option<Fix> {
    let parsed = syntax::parse(source);
    let workspace = WorkspaceIndex::default();
    let model = semantic::SemanticModel::build(&parsed, SourceFile::detached(source), &workspace);
    rules::specializing_example_size::fix_for_dim(model.spec.as_ref()?, dim, constant)
}

/// Analyses one file with the facts gathered from the rest of the workspace.
pub fn check_file(file: SourceFile<'_>, settings: &Settings, workspace: &WorkspaceIndex) -> Report {
    let parsed = syntax::parse(file.text);
    let model = semantic::SemanticModel::build(&parsed, file, workspace);
    report(&parsed, &model, file, settings)
}

/// Analyses one file without workspace facts and summarises it, from one parse.
///
/// A whole-workspace check calls this first for every file, builds the [`WorkspaceIndex`]
/// from the summaries, and runs [`check_file`] again only for the files whose summary says
/// [`ModuleSummary::needs_workspace`]: the others' reports cannot change.
pub fn check_and_summarize(file: SourceFile<'_>, settings: &Settings) -> (Report, ModuleSummary) {
    let parsed = syntax::parse(file.text);
    let empty = WorkspaceIndex::default();
    let model = semantic::SemanticModel::build(&parsed, file, &empty);
    let mut summary = workspace::summarize_parsed(&parsed.module.body, file);
    summary.needs_workspace = model.depends_on_workspace();
    (report(&parsed, &model, file, settings), summary)
}

fn report(
    parsed: &syntax::Parsed,
    model: &semantic::SemanticModel<'_>,
    file: SourceFile<'_>,
    settings: &Settings,
) -> Report {
    let mut diagnostics = rules::run_all(parsed, model, settings);
    diagnostics.retain(|diagnostic| settings.is_enabled(diagnostic.rule));
    suppression::apply(file.text, &mut diagnostics);
    diagnostics.sort_by_key(|diagnostic| (diagnostic.range.start(), diagnostic.rule));
    diagnostics.dedup_by(|a, b| a.rule == b.rule && a.range == b.range);
    Report { diagnostics }
}
