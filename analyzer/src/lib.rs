//! Static analysis of PyTorch model code for `torch.export`: Python source in, diagnostics out.
//!
//! The crate is pure: it reads no files, starts no processes and knows nothing of LSP. Offsets
//! are byte offsets ([`TextRange`]); the server converts them to protocol positions.
//!
//! [`check`] is the one entry point for the CLI and the language server. Analysis never fails:
//! a syntax error is a diagnostic and the rest of the file is still analysed. Facts that cross
//! files (a `Module` base class imported from a sibling file, a fake kernel registered in
//! another file) come in through a [`WorkspaceIndex`] built from each file's [`ModuleSummary`].

mod catalogue;
mod custom_ops;
mod diagnostic;
mod dim_companions;
mod export_calls;
mod fix;
mod fixes;
mod library;
mod line_index;
mod names;
mod registry;
mod rules;
mod semantic;
mod settings;
mod summary;
mod suppression;
mod syntax;
mod workspace;

pub use diagnostic::{
    Applicability, Diagnostic, Edit, Fix, Related, Report, Severity, ShapeHint, UNKNOWN_SHAPE,
};
pub use export_calls::{CallReach, ExportCall, export_calls};
pub use fix::{FixMode, MAX_FIX_ROUNDS, apply_fixes, compatible_fixes, fix_round, fix_to_fixpoint};
pub use fixes::dims::DimConstraint;
pub use library::{Distribution, LibraryIndex};
pub use line_index::{LineColumn, LineIndex};
pub use registry::Rule;
pub use ruff_text_size::{TextRange, TextSize};
pub use settings::{RuleSelector, Settings};
pub use summary::{ModuleSummary, SUMMARY_FORMAT, import_targets, summarize};
pub use suppression::silences as suppression_silences;
pub use workspace::{ModuleSource, ParseCache, WorkspaceIndex, WorkspaceSources, link_namespaces};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use workspace::EntryProgram;

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
    /// The file's dotted name through the namespace packages above it (PEP 420), when it lies
    /// in one: the longest of [`ModuleSummary::namespace_names`] (`wavenet.utils.data` for
    /// `wavenet/utils/data.py`, whose `module` is `data`). A relative import that climbs above
    /// `module`'s packages (`from ..networks import WaveNet` there) starts from it, as Python
    /// resolves it in the file imported by that name, the only way such an import runs.
    pub namespace: Option<&'a str>,
}

impl<'a> SourceFile<'a> {
    /// A file with no known place in a package.
    pub fn detached(text: &'a str) -> Self {
        Self {
            text,
            module: None,
            is_package: false,
            namespace: None,
        }
    }
}

/// Only the syntax errors of a file (PT001), without the semantic pass: what an editor shows
/// for a file too large to analyse as you type.
pub fn check_syntax(source: &str) -> Report {
    let parsed = syntax::parse(source);
    let diagnostics = parsed
        .errors
        .iter()
        .map(|error| Diagnostic {
            rule: Rule::SyntaxError,
            severity: Severity::Error,
            message: format!("Syntax error: {}", error.message),
            range: error.range,
            fix: None,
            related: Vec::new(),
        })
        .collect();
    Report {
        diagnostics,
        shapes: Vec::new(),
        unproven: Vec::new(),
    }
}

/// A diagnostic in code that no entrypoint of the project exports (`why`, from
/// [`WorkspaceIndex::unexported`]): the exporter never runs it, so an error there is a warning
/// that says so. A syntax error stays an error: the file cannot be imported at all.
pub fn as_unexported(diagnostic: &mut Diagnostic, why: &str) {
    if diagnostic.severity == Severity::Error && diagnostic.rule != Rule::SyntaxError {
        diagnostic.severity = Severity::Warning;
        diagnostic.message = format!("{} ({why})", diagnostic.message);
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
    dim_constraint_fix_of(source, None, constraints, applicability)
}

/// [`dim_constraint_fix`] of the spec bound to the module-level name `spec` (`DYNAMIC_SHAPES`,
/// which an entrypoint table or another file's export call names), or of the file's own spec
/// when `spec` is `None`.
pub fn dim_constraint_fix_of(
    source: &str,
    spec: Option<&str>,
    constraints: &[DimConstraint],
    applicability: Applicability,
) -> Option<Fix> {
    let parsed = syntax::parse(source);
    fixes::dims::constraint_fix_of(
        &parsed.module.body,
        SourceFile::detached(source),
        spec,
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
///
/// With workspace sources ([`WorkspaceIndex::with_sources`]), an entrypoint's analysis
/// follows its model into the files it imports, and a file that entrypoints reach is analysed
/// with the values they pass: its report holds what their analyses find in it, each with the
/// path that reaches it in [`Diagnostic::related`].
pub fn check_file(file: SourceFile<'_>, settings: &Settings, workspace: &WorkspaceIndex) -> Report {
    let parsed = workspace.parse_checked(file);
    check_parsed(&parsed, file, settings, workspace)
}

/// [`check_file`], and the file's summary made from the same parse, as [`summarize`] makes it:
/// for a caller that keeps the index in step with texts that change, an editor's buffers.
pub fn check_file_summarized(
    file: SourceFile<'_>,
    settings: &Settings,
    workspace: &WorkspaceIndex,
) -> (Report, ModuleSummary) {
    let parsed = workspace.parse_checked(file);
    let report = check_parsed(&parsed, file, settings, workspace);
    let summary = summary::summarize_parsed(
        &parsed.module.body,
        SourceFile {
            is_package: false,
            ..file
        },
    );
    (report, summary)
}

fn check_parsed(
    parsed: &syntax::Parsed,
    file: SourceFile<'_>,
    settings: &Settings,
    workspace: &WorkspaceIndex,
) -> Report {
    let entry_program = file
        .module
        .filter(|module| workspace.is_entrypoint(module))
        .map(|module| program_of(workspace, module));
    let program: &[workspace::LoadedFile] = entry_program.as_ref().map_or(&[], |p| &p.files);
    let mut model = semantic::SemanticModel::build_run(
        parsed,
        file,
        workspace,
        program,
        settings.runs_with_arguments(file.module),
    );
    // What this file's own entrypoint is lowered for goes with the calls its analysis found,
    // here and in installed libraries.
    let lowered_for = semantic::target_ops::of_entrypoint(
        settings,
        file.module,
        &parsed.module.body,
        model.entry.is_some(),
    );
    semantic::target_ops::stamp(
        model.events.iter_mut().chain(&mut model.foreign_events),
        &lowered_for,
    );
    // This analysis is the entrypoint's own over the program's text, so what it entered is
    // what any other would enter: noted, it spares the files it reaches one analysis.
    if let Some(program) = &entry_program {
        if program.entry_text.as_deref() == Some(file.text) {
            program.note_entered(model.entered_modules());
        }
    }
    let mut related: HashMap<TextRange, Vec<Related>> = HashMap::new();
    let mut from_libraries = Vec::new();
    if !program.is_empty() {
        let own_path = own_path(workspace, file);
        let mut places = Places::new(&model, &own_path);
        for event in &model.events {
            if !event.chain.is_empty() {
                related
                    .entry(event.range)
                    .or_insert_with(|| places.chain(&event.chain));
            }
        }
        from_libraries = library_diagnostics(&model, 0, program, settings, &own_path);
        // A guard in another file of the program on a `Dim` this file writes: the fix is here.
        from_libraries.extend(dim_companions::of_own_entry(
            parsed, &model, settings, &own_path,
        ));
    }
    let mut unexported = Vec::new();
    if let Some(module) = file.module {
        unexported = import_events(
            (module, parsed),
            workspace,
            settings,
            &mut model,
            &mut related,
            &mut from_libraries,
        );
        // The file's own entrypoint runs the code other entrypoints' analyses replaced too.
        semantic::target_ops::stamp(&mut model.events, &lowered_for);
    }
    let mut report = report(parsed, &model, file, settings, from_libraries);
    for diagnostic in &mut report.diagnostics {
        if let Some((_, why)) = unexported
            .iter()
            .find(|(class, _)| class.contains_range(diagnostic.range))
        {
            as_unexported(diagnostic, why);
        }
        if let (Some(places), true) = (
            related.get(&diagnostic.range),
            diagnostic.related.is_empty(),
        ) {
            diagnostic.related.clone_from(places);
        }
    }
    report
}

/// The path the workspace sources give for the checked file, for related locations.
fn own_path(workspace: &WorkspaceIndex, file: SourceFile<'_>) -> PathBuf {
    file.module
        .and_then(|module| workspace.source(module))
        .map(|source| source.path)
        .unwrap_or_default()
}

/// What `model`'s analysis found in installed libraries' files, placed in file `target` of
/// the model: each finding lands on the last call of its chain that is in a workspace file
/// (the user's line that reaches the library), when that file is `target`. Its message says
/// where in the library it happens, its related locations are the chain and the library's
/// line, and it has no fix: the library's code is not the user's to edit.
fn library_diagnostics(
    model: &semantic::SemanticModel<'_>,
    target: u32,
    program: &[workspace::LoadedFile],
    settings: &Settings,
    own_path: &std::path::Path,
) -> Vec<Diagnostic> {
    let workspace = model.workspace;
    let Some(libraries) = workspace.libraries() else {
        return Vec::new();
    };
    let is_library = |file: u32| {
        file != 0
            && model
                .source_in(file)
                .module
                .is_some_and(|module| workspace.is_library(module))
    };
    // The library events whose workspace call is in `target`, by library file.
    let mut by_file: std::collections::BTreeMap<u32, Vec<(&semantic::Event, semantic::Site)>> =
        std::collections::BTreeMap::new();
    for event in &model.foreign_events {
        if !is_library(event.file) {
            continue;
        }
        let Some(&site) = event
            .chain
            .iter()
            .rev()
            .find(|(file, _)| !is_library(*file))
        else {
            continue;
        };
        if site.0 == target {
            by_file.entry(event.file).or_default().push((event, site));
        }
    }
    let mut places = Places::new(model, own_path);
    let mut found = Vec::new();
    for (library_file, events) in by_file {
        let Some(loaded) = program.get(library_file as usize - 1) else {
            continue;
        };
        let file = workspace.file(
            &loaded.source.text,
            &loaded.module,
            loaded.source.is_package,
        );
        // The library file's rules judge its events, as they would in the workspace.
        let mut library_model =
            semantic::SemanticModel::declarations(&loaded.parsed, file, workspace, &[]);
        library_model.events = events.iter().map(|(event, _)| event.portable()).collect();
        let judged = report(&loaded.parsed, &library_model, file, settings, Vec::new());
        let lines = LineIndex::new(file.text);
        let distribution = libraries
            .distribution_of(&loaded.module)
            .map(|d| format!("{} {}", d.name, d.version))
            .unwrap_or_default();
        for diagnostic in judged.diagnostics {
            let (line, column) = lines.line_char_column(diagnostic.range.start(), file.text);
            for (event, site) in events.iter().filter(|(event, _)| {
                event.range.contains_range(diagnostic.range)
                    || diagnostic.range.contains_range(event.range)
            }) {
                // Library code alone, from the exported model down, constrains a dimension the
                // entrypoint declares dynamic: the `Dim` is the user's line to change (where
                // the tracer reports it too).
                let on_dim = event.kind.dynamic_dim().filter(|dim| {
                    site.0 == 0
                        && model.entry_site == Some(site.1)
                        && dim.range.end().to_usize() <= model.file.text.len()
                });
                let (range, reach) = match on_dim {
                    Some(dim) => (dim.range, "which the exported model runs"),
                    None => (site.1, "which this line reaches"),
                };
                // The call the diagnostic sits on is not repeated among its related places.
                let chain: Vec<semantic::Site> = event
                    .chain
                    .iter()
                    .copied()
                    .filter(|place| on_dim.is_some() || place != site)
                    .collect();
                let mut related = places.chain(&chain);
                related.push(Related {
                    file: loaded.source.path.clone(),
                    line: line + 1,
                    column: column + 1,
                    message: format!("here, in installed {distribution}"),
                });
                // Library code branches on what the analysis cannot see (the device, a
                // tracing flag, sizes it lost): a problem on such a branch may never run, and
                // the user cannot change the branch, so it is a warning at most.
                let (severity, path) = if event.undecided_path {
                    (
                        diagnostic.severity.max(Severity::Warning),
                        ", on a branch the analysis cannot decide",
                    )
                } else {
                    (diagnostic.severity, "")
                };
                found.push(Diagnostic {
                    rule: diagnostic.rule,
                    severity,
                    message: format!(
                        "{} (in `{}`, line {}, of installed {distribution}{path}, {reach})",
                        diagnostic.message,
                        loaded.module,
                        line + 1
                    ),
                    range,
                    fix: None,
                    related,
                });
            }
        }
    }
    found
}

/// Entrypoint `entry`'s program, as the workspace keeps it while its texts are unchanged.
fn program_of(workspace: &WorkspaceIndex, entry: &str) -> Arc<EntryProgram> {
    workspace.program(entry, || {
        let text = workspace.source(entry).map(|source| source.text);
        EntryProgram::new(entry, text, load_program(workspace, entry))
    })
}

/// Whether `module`'s report may change with whole-program analysis: it is an entrypoint that
/// imports workspace files, or the analysis of an entrypoint that may reach it enters it.
/// Runs, once per entrypoint and program, the analyses that say what they enter.
pub fn takes_part_in_program(workspace: &WorkspaceIndex, module: &str) -> bool {
    if workspace.is_entrypoint(module) && workspace.may_take_part_in_program(module) {
        return true;
    }
    workspace.entrypoints_reaching(module).iter().any(|entry| {
        entered_by(workspace, entry)
            .is_none_or(|program| program.entered().is_none_or(|e| e.contains(module)))
    })
}

/// The modules `entry`'s analysis enters, analysing it when no check has yet; `None` when the
/// sources have no text for it.
fn entered_by(workspace: &WorkspaceIndex, entry: &str) -> Option<Arc<EntryProgram>> {
    let program = program_of(workspace, entry);
    if program.entered().is_none() {
        let text = program.entry_text.as_ref()?;
        let parsed = workspace.parse(entry, text);
        let is_package = workspace
            .source(entry)
            .is_some_and(|source| source.is_package);
        let file = workspace.file(text, entry, is_package);
        let model =
            semantic::SemanticModel::build_program(&parsed, file, workspace, &program.files);
        program.note_entered(model.entered_modules());
    }
    Some(program)
}

/// The other files of `module`'s program, read through the workspace sources and parsed:
/// the workspace files it imports, then the installed libraries' files they use.
fn load_program(workspace: &WorkspaceIndex, module: &str) -> Vec<workspace::LoadedFile> {
    let load = |name: String| {
        let source = workspace.source(&name)?;
        let parsed = workspace.parse(&name, &source.text);
        Some(workspace::LoadedFile {
            module: name,
            source,
            parsed,
        })
    };
    let mut names = workspace.program_of(module);
    let entry = names.remove(0);
    let mut program: Vec<workspace::LoadedFile> = names.into_iter().filter_map(load).collect();
    let Some(libraries) = workspace.libraries() else {
        return program;
    };
    let entry = load(entry);
    let used = {
        let bodies = entry.iter().chain(&program).map(|loaded| {
            let file = workspace.file(
                &loaded.source.text,
                &loaded.module,
                loaded.source.is_package,
            );
            (&loaded.parsed.module.body[..], file)
        });
        libraries.modules_used_by(bodies, |name| !workspace.is_library(name))
    };
    program.extend(used.into_iter().filter_map(load));
    program
}

/// Replaces what the stand-alone analysis of `module` found in the functions that
/// entrypoints reach with what the entrypoints' analyses find there; adds to `extra` what they
/// find in installed libraries from here, and the companions of fixes on the `Dim`s `module`
/// declares for them (`dim_companions`).
fn import_events(
    (module, module_parsed): (&str, &syntax::Parsed),
    workspace: &WorkspaceIndex,
    settings: &Settings,
    model: &mut semantic::SemanticModel<'_>,
    related: &mut HashMap<TextRange, Vec<Related>>,
    extra: &mut Vec<Diagnostic>,
) -> Vec<(TextRange, String)> {
    let mut reached: Vec<TextRange> = Vec::new();
    // The module classes of this file that the models of the entrypoints entering it may run
    // (by their definitions' ranges), with those entrypoints; `None` once one of them exports a
    // model the analysis does not know.
    let mut exported: Option<(Vec<TextRange>, Vec<&str>)> = Some((Vec::new(), Vec::new()));
    let mut imported: Vec<semantic::Event> = Vec::new();
    // The ranges whose related path an entrypoint making the guard dynamic already gave.
    let mut outranked: std::collections::HashSet<TextRange> = std::collections::HashSet::new();
    for entry in workspace.entrypoints_reaching(module) {
        let program = program_of(workspace, entry);
        if program
            .entered()
            .is_some_and(|entered| !entered.contains(module))
        {
            continue;
        }
        let Some(source) = workspace.source(entry) else {
            continue;
        };
        let parsed = workspace.parse(entry, &source.text);
        let entry_file = workspace.file(&source.text, entry, source.is_package);
        let mut entry_model = semantic::SemanticModel::build_run(
            &parsed,
            entry_file,
            workspace,
            &program.files,
            settings.runs_with_arguments(Some(entry)),
        );
        // Whether this analysis or an earlier one noted what the entrypoint enters, the answer
        // is the same: a module it does not enter gets nothing from it.
        if !program
            .note_entered(entry_model.entered_modules())
            .contains(module)
        {
            continue;
        }
        exported = exported.and_then(|(mut classes, mut entries)| {
            let used = entry_model.exported_classes()?;
            let target = entry_model.file_id(module)?;
            classes.extend(
                used.iter()
                    .map(|&class| &entry_model.classes[class])
                    .filter(|class| class.file == target)
                    .map(|class| class.def.range),
            );
            entries.push(entry);
            Some((classes, entries))
        });
        // A call the entrypoint reaches here is lowered for the targets it names, wherever
        // they are written (its configuration, its table, its own `targets = [...]`).
        let lowered_for = semantic::target_ops::of_entrypoint(
            settings,
            Some(entry),
            &parsed.module.body,
            entry_model.entry.is_some(),
        );
        semantic::target_ops::stamp(&mut entry_model.foreign_events, &lowered_for);
        extra.extend(dim_companions::of_entry(
            module,
            module_parsed,
            model.file,
            &parsed,
            &entry_model,
            &source.path,
            settings,
        ));
        let Some(target) = entry_model.file_id(module) else {
            continue;
        };
        // What the entrypoint's analysis found in the functions it entered replaces what
        // the file alone found there; a `forward` it found superseded never runs at all.
        reached.extend(
            entry_model
                .reached
                .iter()
                .chain(&entry_model.superseded)
                .filter(|(file, _)| *file == target)
                .map(|(_, range)| *range),
        );
        extra.extend(library_diagnostics(
            &entry_model,
            target,
            &program.files,
            settings,
            &source.path,
        ));
        let mut places = Places::new(&entry_model, &source.path);
        for event in entry_model
            .foreign_events
            .iter()
            .filter(|event| event.file == target)
        {
            // The path of an entrypoint whose analysis settled the guard there is not the
            // path of a finding another entrypoint makes on that line.
            // Where several reach it, the entrypoint that makes a guard's dimension dynamic
            // is the path shown: its finding is the one kept (`keep_strongest_guards`).
            if event.outranks_on_its_construct() && outranked.insert(event.range) {
                related.insert(event.range, places.chain(&event.chain));
            } else if !event.is_settled() {
                related
                    .entry(event.range)
                    .or_insert_with(|| places.chain(&event.chain));
            }
            imported.push(event.portable());
        }
    }
    let unexported = match exported {
        Some((classes, entries)) => unexported_classes(model, &classes, &entries),
        None => Vec::new(),
    };
    if reached.is_empty() {
        return unexported;
    }
    model.events.retain(|event| {
        !reached
            .iter()
            .any(|range| range.contains_range(event.range))
    });
    model.events.extend(imported);
    semantic::Event::keep_strongest_guards(&mut model.events);
    unexported
}

/// The module classes of a file that the entrypoints entering it (`entries`) never export:
/// their models, known, name none of them, directly or through the classes they name (the
/// sparse variant of a layer beside the dense one the model builds, a training-only head).
/// What the file's own analysis finds there is a warning at most, saying so ([`as_unexported`]).
/// None when no entrypoint enters the file, and for a file that is an entrypoint itself (its
/// own model decides, see the interpreter's `unreached`).
fn unexported_classes(
    model: &semantic::SemanticModel<'_>,
    exported: &[TextRange],
    entries: &[&str],
) -> Vec<(TextRange, String)> {
    if model.entry.is_some() || entries.is_empty() {
        return Vec::new();
    }
    let shown = entries
        .iter()
        .take(3)
        .map(|entry| format!("`{entry}`"))
        .collect::<Vec<_>>()
        .join(", ");
    model
        .classes
        .iter()
        .filter(|class| class.file == 0 && class.is_module)
        .filter(|class| !exported.contains(&class.def.range))
        .map(|class| {
            (
                class.def.range,
                format!(
                    "no entrypoint exports this: the model {shown} exports never uses `{}`",
                    class.def.name
                ),
            )
        })
        .collect()
}

/// Turns an event's call chain into related locations, with each file's line index built
/// once.
struct Places<'m, 'a> {
    model: &'m semantic::SemanticModel<'a>,
    own_path: &'m std::path::Path,
    lines: HashMap<u32, LineIndex>,
}

impl<'m, 'a> Places<'m, 'a> {
    fn new(model: &'m semantic::SemanticModel<'a>, own_path: &'m std::path::Path) -> Self {
        Self {
            model,
            own_path,
            lines: HashMap::new(),
        }
    }

    fn chain(&mut self, chain: &[semantic::Site]) -> Vec<Related> {
        chain
            .iter()
            .enumerate()
            .map(|(position, &(file, range))| {
                let text = self.model.source_in(file).text;
                let index = self
                    .lines
                    .entry(file)
                    .or_insert_with(|| LineIndex::new(text));
                let (line, column) = index.line_char_column(range.start(), text);
                let path = match file {
                    0 => self.own_path.to_path_buf(),
                    _ => self.model.foreign[file as usize - 1].path.to_path_buf(),
                };
                let shown = self.model.text_in(file, range);
                let message = if position == 0 && file == 0 && self.model.entry_site == Some(range)
                {
                    format!("the entrypoint exports `{shown}`")
                } else {
                    format!("reached through `{shown}`")
                };
                Related {
                    file: if path.as_os_str().is_empty() {
                        PathBuf::from(self.model.source_in(file).module.unwrap_or_default())
                    } else {
                        path
                    },
                    line: line + 1,
                    column: column + 1,
                    message,
                }
            })
            .collect()
    }
}

/// Summarises one file and analyses it without workspace facts, from one parse.
///
/// A whole-workspace check calls this first for every file, builds the [`WorkspaceIndex`]
/// from the summaries, and runs [`check_file`] again only for the files whose summary says
/// [`ModuleSummary::needs_workspace`]: the others' reports cannot change. For those it gives
/// [`Alone::NeedsWorkspace`] instead of a report: what the file declares already says that
/// other files' facts could change it (a class whose bases are imported, a custom op whose
/// fake kernel may be elsewhere), so its traced code is followed once, in
/// [`check_parsed_file`], not twice.
pub fn summarize_and_check_alone(
    file: SourceFile<'_>,
    settings: &Settings,
) -> (Alone, ModuleSummary) {
    let parsed = syntax::parse(file.text);
    let empty = WorkspaceIndex::default();
    let mut model = semantic::SemanticModel::classes_and_globals(&parsed, file, &empty, &[]);
    let mut summary = summary::summarize_parsed(&parsed.module.body, file);
    // Most files that depend on the workspace are known to from their classes: the rest of
    // their declarations would be built again in phase 2, against the workspace.
    summary.needs_workspace = model.has_open_class() || {
        model.finish_declarations(&parsed);
        model.depends_on_workspace()
    };
    if summary.needs_workspace {
        drop(model);
        return (Alone::NeedsWorkspace(ParsedFile(Arc::new(parsed))), summary);
    }
    model.arguments_given = settings.runs_with_arguments(file.module);
    model.interpret(&parsed);
    let lowered_for = semantic::target_ops::of_entrypoint(
        settings,
        file.module,
        &parsed.module.body,
        model.entry.is_some(),
    );
    semantic::target_ops::stamp(&mut model.events, &lowered_for);
    (
        Alone::Report(report(&parsed, &model, file, settings, Vec::new())),
        summary,
    )
}

/// What [`summarize_and_check_alone`] gives besides the summary.
#[derive(Debug)]
pub enum Alone {
    /// The file's report: other files cannot change it.
    Report(Report),
    /// The file's report depends on the workspace: [`check_parsed_file`] makes it from this
    /// parse once the index exists.
    NeedsWorkspace(ParsedFile),
}

/// A file's syntax tree, kept between the two phases of a workspace check so the file is not
/// parsed twice. Valid only for the text it was parsed from.
pub struct ParsedFile(Arc<syntax::Parsed>);

impl ParsedFile {
    /// Keeps this tree in `cache` as `module`'s, parsed from `text` (the text it was parsed
    /// from, shared): the entrypoints' programs that load the file then do not parse it again.
    pub fn keep_in(&self, cache: &ParseCache, module: &str, text: Arc<str>) {
        cache.keep(module, text, Arc::clone(&self.0));
    }
}

impl std::fmt::Debug for ParsedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParsedFile").finish_non_exhaustive()
    }
}

/// [`check_file`] from the tree [`summarize_and_check_alone`] parsed from the same text.
pub fn check_parsed_file(
    parsed: &ParsedFile,
    file: SourceFile<'_>,
    settings: &Settings,
    workspace: &WorkspaceIndex,
) -> Report {
    check_parsed(&parsed.0, file, settings, workspace)
}

/// Summarises a file without analysing it: for project files that are not checked, whose
/// cross-file facts still count (a pre-commit hook passes only the changed files).
pub fn summarize_file(file: SourceFile<'_>) -> ModuleSummary {
    let parsed = syntax::parse(file.text);
    summary::summarize_parsed(&parsed.module.body, file)
}

/// The rules' diagnostics for `model`, with `extra` ones found elsewhere for this file,
/// filtered by the settings and the file's suppression comments.
fn report(
    parsed: &syntax::Parsed,
    model: &semantic::SemanticModel<'_>,
    file: SourceFile<'_>,
    settings: &Settings,
    extra: Vec<Diagnostic>,
) -> Report {
    let mut diagnostics = rules::run_all(parsed, model, settings);
    diagnostics.extend(extra);
    diagnostics.retain(|diagnostic| settings.is_enabled(diagnostic.rule));
    // What a file that does not parse reports is not all there is to find on its lines.
    let mut unproven = suppression::apply(file.text, &parsed.comments, &mut diagnostics, settings);
    if !parsed.errors.is_empty() {
        unproven.clear();
    }
    let unproven = unproven
        .iter()
        .map(|suppression| rules::unused_suppression::unproven(file.text, suppression))
        .collect();
    // One diagnostic per rule and range: code analysed more than once (a loop body, a helper
    // each caller runs) finds the same thing again, and the end orders ranges that share a
    // start so that the copies sit together.
    diagnostics.sort_by_key(|diagnostic| {
        (
            diagnostic.range.start(),
            diagnostic.rule,
            diagnostic.range.end(),
        )
    });
    diagnostics.dedup_by(|a, b| a.rule == b.rule && a.range == b.range);
    Report {
        diagnostics,
        shapes: model.shapes.clone(),
        unproven,
    }
}

/// One entry of a file's outline, for an editor's symbol list. Byte offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineSymbol {
    pub name: String,
    pub kind: OutlineKind,
    /// The whole definition or statement.
    pub range: TextRange,
    /// The name itself.
    pub name_range: TextRange,
    /// A class's methods, in source order.
    pub children: Vec<OutlineSymbol>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutlineKind {
    /// A module-level class that is an `nn.Module`, by its bases here or in the workspace.
    ModuleClass,
    /// A function defined in a module class's body.
    Method,
    /// A module-level binding the export file convention reads: `model`, `example_args`,
    /// `example_kwargs`, `dynamic_shapes`.
    Entrypoint,
}

/// The names the file convention reads from an entrypoint file's module level.
const ENTRYPOINT_BINDINGS: [&str; 4] =
    ["model", "example_args", "example_kwargs", "dynamic_shapes"];

/// The outline of one file: its module-level `nn.Module` classes with their methods, and the
/// bindings of the export file convention. Pure; a file that does not parse gives what its
/// recovered tree holds.
pub fn outline(file: SourceFile<'_>, workspace: &WorkspaceIndex) -> Vec<OutlineSymbol> {
    use syntax::ast;
    let parsed = syntax::parse(file.text);
    let summary = summary::summarize_parsed(&parsed.module.body, file);
    let module = file.module.unwrap_or_default();
    // Local classes found to be modules so far: a class may derive from one defined above it.
    let mut local_modules: Vec<String> = Vec::new();
    let mut is_module = |name: &str| {
        let Some((_, bases)) = summary.classes.iter().find(|(class, _)| class == name) else {
            return false;
        };
        let found = bases.iter().any(|base| {
            catalogue::is_module_base(base)
                || workspace.is_module_class(base)
                || local_modules.iter().any(|local| {
                    base == local
                        || base
                            .strip_prefix(module)
                            .and_then(|rest| rest.strip_prefix('.'))
                            == Some(local.as_str())
                })
        });
        if found {
            local_modules.push(name.to_owned());
        }
        found
    };
    let mut symbols = Vec::new();
    for stmt in &parsed.module.body {
        match stmt {
            ast::Stmt::ClassDef(class) if is_module(class.name.as_str()) => {
                let children = class
                    .body
                    .iter()
                    .filter_map(|stmt| match stmt {
                        ast::Stmt::FunctionDef(function) => Some(OutlineSymbol {
                            name: function.name.to_string(),
                            kind: OutlineKind::Method,
                            range: ruff_text_size::Ranged::range(function),
                            name_range: function.name.range,
                            children: Vec::new(),
                        }),
                        _ => None,
                    })
                    .collect();
                symbols.push(OutlineSymbol {
                    name: class.name.to_string(),
                    kind: OutlineKind::ModuleClass,
                    range: ruff_text_size::Ranged::range(class),
                    name_range: class.name.range,
                    children,
                });
            }
            ast::Stmt::Assign(ast::StmtAssign { targets, range, .. }) => {
                entrypoint_bindings(targets.iter(), *range, &mut symbols);
            }
            ast::Stmt::AnnAssign(ast::StmtAnnAssign { target, range, .. }) => {
                entrypoint_bindings(std::iter::once(target.as_ref()), *range, &mut symbols);
            }
            _ => {}
        }
    }
    symbols
}

/// The entrypoint names (`model`, `example_args`, ...) that an assignment's `targets` bind.
fn entrypoint_bindings<'a>(
    targets: impl Iterator<Item = &'a syntax::ast::Expr>,
    range: TextRange,
    symbols: &mut Vec<OutlineSymbol>,
) {
    for target in targets {
        if let syntax::ast::Expr::Name(name) = target {
            if ENTRYPOINT_BINDINGS.contains(&name.id.as_str()) {
                symbols.push(OutlineSymbol {
                    name: name.id.to_string(),
                    kind: OutlineKind::Entrypoint,
                    range,
                    name_range: name.range,
                    children: Vec::new(),
                });
            }
        }
    }
}
