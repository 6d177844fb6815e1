//! Runs every fixture under `fixtures/` through the analyzer and compares the diagnostics with
//! the expectations written inline: `# error[PT101]`, `# warning[PT402] info[PT203]`.
//!
//! A fixture with no marks must produce no diagnostics. Every mismatch of every file is listed
//! before the test fails, so one run shows the whole picture.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pt2lsp_analyzer::{
    Distribution, LibraryIndex, LineIndex, ModuleSource, Report, Rule, Settings, SourceFile,
    WorkspaceIndex, WorkspaceSources, check, check_file, summarize_and_check_alone, summarize_file,
};

/// One expected or actual diagnostic: one-based line, severity, code.
type Mark = (u32, String, String);

fn fixture_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("fixtures directory is readable")
        .flatten()
        .collect();
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            // A directory under `projects/` is one multi-file fixture, a workspace of its own;
            // its files are not fixtures one by one.
            if path
                .parent()
                .is_some_and(|parent| parent.ends_with("projects"))
            {
                continue;
            }
            fixture_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "py") {
            out.push(path);
        }
    }
}

/// The marks written in a comment at the end of each line.
fn expected_marks(text: &str) -> BTreeSet<Mark> {
    let mut marks = BTreeSet::new();
    for (number, line) in text.lines().enumerate() {
        let Some(comment) = line.rfind('#').map(|index| &line[index..]) else {
            continue;
        };
        for severity in ["error", "warning", "info"] {
            let mut rest = comment;
            let pattern = format!("{severity}[");
            while let Some(start) = rest.find(&pattern) {
                let after = &rest[start + pattern.len()..];
                let end = after.find(']').unwrap_or(after.len());
                for code in after[..end].split(',') {
                    marks.insert((
                        number as u32 + 1,
                        severity.to_owned(),
                        code.trim().to_owned(),
                    ));
                }
                rest = &after[end..];
            }
        }
    }
    marks
}

#[test]
fn fixtures_match_their_inline_expectations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    assert!(
        files.len() >= 30,
        "expected the fixture corpus under {}, found {} files",
        root.display(),
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("fixture is UTF-8");
        let report = check(&text, &Settings::default());
        let index = LineIndex::new(&text);
        let actual: BTreeSet<Mark> = report
            .diagnostics
            .iter()
            .map(|diagnostic| {
                let line = index.line_column(diagnostic.range.start()).line + 1;
                (
                    line,
                    diagnostic.severity.as_str().to_owned(),
                    diagnostic.rule.code().to_owned(),
                )
            })
            .collect();
        // A mark of a rule only the tracer reports (a deployment target's, PT7xx) is the tracer
        // tests' to check; the static pass must report nothing else there.
        let expected: BTreeSet<Mark> = expected_marks(&text)
            .into_iter()
            .filter(|(_, _, code)| Rule::from_code_or_name(code).is_none_or(Rule::is_static))
            .collect();
        let relative = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        // Code the analysis runs more than once (a loop body, a helper two callers run) must
        // not report the same finding twice.
        let mut seen = BTreeSet::new();
        for diagnostic in &report.diagnostics {
            let (start, end) = (diagnostic.range.start(), diagnostic.range.end());
            if !seen.insert((diagnostic.rule.code(), start, end)) {
                let line = index.line_column(start).line + 1;
                failures.push(format!(
                    "{relative}:{line}: reported twice: {}[{}] {}",
                    diagnostic.severity.as_str(),
                    diagnostic.rule.code(),
                    diagnostic.message
                ));
            }
        }
        for (line, severity, code) in expected.difference(&actual) {
            failures.push(format!("{relative}:{line}: missing {severity}[{code}]"));
        }
        for (line, severity, code) in actual.difference(&expected) {
            let message = report
                .diagnostics
                .iter()
                .find(|d| {
                    d.rule.code() == code && index.line_column(d.range.start()).line + 1 == *line
                })
                .map(|d| d.message.as_str())
                .unwrap_or_default();
            failures.push(format!(
                "{relative}:{line}: unexpected {severity}[{code}] {message}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A project's virtual environment: what `venv/lib/python*/site-packages` holds is installed
/// libraries, followed by the analysis and never reported on.
const VENV: &str = "venv";

/// Every file of a multi-file fixture, with its dotted module name and whether it is a
/// package's `__init__.py`, in path order; not its virtual environment's. Modules are named as
/// `pt2lsp check` names them (`walk::module_name`): through the packages above them, so a
/// file in a directory without `__init__.py` is named by its own name, and its dotted path from
/// the project's root is one of its namespace names ([`namespace_names`]).
fn project_files(root: &Path) -> Vec<(PathBuf, String, bool)> {
    python_files(root, &[root.join(VENV)])
        .into_iter()
        .map(|(path, dotted, is_package)| {
            let parts: Vec<&str> = dotted.split('.').collect();
            // The packages above the file: the directories, innermost first, that hold an
            // `__init__.py`.
            let directories = path.ancestors().skip(1 + usize::from(is_package));
            let packages = directories
                .take(parts.len() - 1)
                .take_while(|directory| directory.join("__init__.py").is_file())
                .count();
            let module = parts[parts.len() - 1 - packages..].join(".");
            (path, module, is_package)
        })
        .collect()
}

/// The other names Python imports a project file by from the project's root, through the
/// namespace packages (directories without `__init__.py`) above its module's directory
/// (`pt2lsp_project::walk::namespace_names`): `audio.vocoder` for `audio/vocoder.py`, named
/// `vocoder`.
fn namespace_names(
    root: &Path,
    (path, module, is_package): &(PathBuf, String, bool),
) -> Vec<String> {
    let relative = path.strip_prefix(root).expect("inside the project");
    let mut dotted: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if *is_package {
        dotted.pop();
    }
    let own = module.split('.').count();
    (own + 1..=dotted.len())
        .map(|parts| dotted[dotted.len() - parts..].join("."))
        .collect()
}

/// The Python files under `root`, outside `skipped`, with their dotted module names relative
/// to `root`.
fn python_files(root: &Path, skipped: &[PathBuf]) -> Vec<(PathBuf, String, bool)> {
    let mut paths = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("project is readable")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                if !skipped.contains(&path) {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "py") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(root).expect("inside the project");
            let mut parts: Vec<String> = relative
                .with_extension("")
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect();
            let is_package = parts.last().is_some_and(|last| last == "__init__");
            if is_package {
                parts.pop();
            }
            (path, parts.join("."), is_package)
        })
        .collect()
}

/// The texts of a fixture project, as the CLI hands them to the analysis.
struct ProjectSources(HashMap<String, ModuleSource>);

impl WorkspaceSources for ProjectSources {
    fn source(&self, module: &str) -> Option<ModuleSource> {
        self.0.get(module).cloned()
    }
}

/// A project file as the analysis sees it; `namespace` is its longest namespace name
/// ([`namespace_names`]).
fn source_file<'a>(
    (_, module, is_package): &'a (PathBuf, String, bool),
    text: &'a str,
    namespace: Option<&'a str>,
) -> SourceFile<'a> {
    SourceFile {
        text,
        module: Some(module),
        is_package: *is_package,
        namespace,
    }
}

/// One file of a fixture project, checked with the whole project as its workspace.
struct CheckedFile {
    path: PathBuf,
    module: String,
    text: String,
    report: Report,
}

/// Installed distributions with their files' summaries, and those files.
type InstalledLibraries = (
    Vec<(Distribution, Vec<pt2lsp_analyzer::ModuleSummary>)>,
    Vec<(PathBuf, String, bool)>,
);

/// The libraries installed in a project's `venv/`: each distribution (from its `.dist-info`
/// directory's name) with its files' summaries, and the files.
fn installed_libraries(root: &Path) -> InstalledLibraries {
    let Ok(versions) = std::fs::read_dir(root.join(VENV).join("lib")) else {
        return (Vec::new(), Vec::new());
    };
    let mut libraries = Vec::new();
    let mut all_files = Vec::new();
    for version in versions.flatten() {
        let site = version.path().join("site-packages");
        let Ok(entries) = std::fs::read_dir(&site) else {
            continue;
        };
        let files = python_files(&site, &[]);
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some((name, version)) = name
                .strip_suffix(".dist-info")
                .and_then(|stem| stem.split_once('-'))
            else {
                continue;
            };
            let summaries = files
                .iter()
                .filter(|(_, module, _)| module.split('.').next() == Some(name))
                .map(|file| {
                    let text = std::fs::read_to_string(&file.0).expect("library file is UTF-8");
                    summarize_file(source_file(file, &text, None))
                })
                .collect();
            let distribution = Distribution {
                name: name.to_owned(),
                version: version.to_owned(),
            };
            libraries.push((distribution, summaries));
        }
        all_files.extend(files);
    }
    (libraries, all_files)
}

/// Checks one project as a workspace the way the CLI does: every file summarised, then every
/// file checked against the index with the others' texts at hand, and the libraries
/// installed in its `venv/` followed.
fn check_project(root: &Path) -> Vec<CheckedFile> {
    let files = project_files(root);
    let texts: Vec<String> = files
        .iter()
        .map(|(path, _, _)| std::fs::read_to_string(path).expect("fixture is UTF-8"))
        .collect();
    let settings = Settings::default();
    let names: Vec<Vec<String>> = files
        .iter()
        .map(|file| namespace_names(root, file))
        .collect();
    // The names go nearest first: the last is the longest.
    let longest = |at: usize| names[at].last().map(String::as_str);
    let summaries: Vec<_> = files
        .iter()
        .zip(&texts)
        .enumerate()
        .map(|(at, (file, text))| {
            let file = source_file(file, text, longest(at));
            let mut summary = summarize_and_check_alone(file, &settings).1;
            summary.namespace_names.clone_from(&names[at]);
            summary
        })
        .collect();
    let (libraries, library_files) = installed_libraries(root);
    for (path, _, _) in &library_files {
        let text = std::fs::read_to_string(path).expect("library file is UTF-8");
        assert!(
            expected_marks(&text).is_empty(),
            "{}: a library file carries marks, but nothing is ever reported in one",
            path.display()
        );
    }
    let library_texts = library_files.iter().map(|file| {
        let text = std::fs::read_to_string(&file.0).expect("library file is UTF-8");
        (file, text)
    });
    let sources = ProjectSources(
        files
            .iter()
            .zip(texts.iter().cloned())
            .chain(library_texts)
            .map(|((path, module, is_package), text)| {
                let source = ModuleSource {
                    text: Arc::from(text.as_str()),
                    is_package: *is_package,
                    path: path.clone(),
                };
                (module.clone(), source)
            })
            .collect(),
    );
    let libraries = (!libraries.is_empty()).then(|| Arc::new(LibraryIndex::new(&libraries)));
    let workspace =
        WorkspaceIndex::with_libraries(&summaries, libraries).with_sources(Arc::new(sources));
    // Code no entrypoint of the project exports is a warning that says so, as `pt2lsp check`
    // and the editor report it (`WorkspaceIndex::unexported`).
    let reports: Vec<Report> = files
        .iter()
        .zip(&texts)
        .enumerate()
        .map(|(at, (file, text))| {
            let file_at = source_file(file, text, longest(at));
            let mut report = check_file(file_at, &settings, &workspace);
            if let Some(why) = workspace.unexported(&file.1) {
                for diagnostic in &mut report.diagnostics {
                    pt2lsp_analyzer::as_unexported(diagnostic, &why);
                }
            }
            report
        })
        .collect();
    files
        .into_iter()
        .zip(texts)
        .zip(reports)
        .map(|(((path, module, _), text), report)| CheckedFile {
            path,
            module,
            text,
            report,
        })
        .collect()
}

/// What one project's files report that their marks do not say, and the reverse.
fn project_mismatches(root: &Path, name: &str, failures: &mut Vec<String>) {
    for checked in check_project(root) {
        let (path, text, report) = (&checked.path, checked.text.as_str(), &checked.report);
        let index = LineIndex::new(text);
        let actual: BTreeSet<Mark> = report
            .diagnostics
            .iter()
            .map(|diagnostic| {
                (
                    index.line_column(diagnostic.range.start()).line + 1,
                    diagnostic.severity.as_str().to_owned(),
                    diagnostic.rule.code().to_owned(),
                )
            })
            .collect();
        let expected = expected_marks(text);
        let relative = format!(
            "{name}/{}",
            path.strip_prefix(root).unwrap_or(path).display()
        );
        for (line, severity, code) in expected.difference(&actual) {
            failures.push(format!("{relative}:{line}: missing {severity}[{code}]"));
        }
        for (line, severity, code) in actual.difference(&expected) {
            let message = report
                .diagnostics
                .iter()
                .find(|d| {
                    d.rule.code() == code && index.line_column(d.range.start()).line + 1 == *line
                })
                .map(|d| d.message.as_str())
                .unwrap_or_default();
            failures.push(format!(
                "{relative}:{line}: unexpected {severity}[{code}] {message}"
            ));
        }
        // A diagnostic found through another file says how it is reached.
        for diagnostic in &report.diagnostics {
            if diagnostic
                .related
                .iter()
                .any(|related| !related.file.exists())
            {
                failures.push(format!(
                    "{relative}: related location in a file that does not exist: {:?}",
                    diagnostic.related
                ));
            }
        }
    }
}

#[test]
fn projects_match_their_inline_expectations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects");
    let mut projects: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("projects directory is readable")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    projects.sort();
    assert!(
        projects.len() >= 2,
        "expected projects under {}",
        root.display()
    );
    let mut failures = Vec::new();
    for project in &projects {
        let name = project.file_name().unwrap_or_default().to_string_lossy();
        project_mismatches(project, &name, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} project fixture mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_diagnostic_in_a_helper_names_the_path_from_the_entrypoint() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects/three_files");
    let helper = check_project(&root)
        .into_iter()
        .find(|checked| checked.module == "mymodels.helpers")
        .expect("the helper file");
    let report = &helper.report;
    let related = &report.diagnostics[0].related;
    let shown: Vec<(String, u32)> = related
        .iter()
        .map(|related| {
            let name = related.file.file_name().unwrap_or_default();
            (name.to_string_lossy().into_owned(), related.line)
        })
        .collect();
    assert_eq!(
        shown,
        vec![("export_net.py".to_owned(), 8), ("net.py".to_owned(), 15)],
        "{related:?}"
    );
}

/// Two entrypoints export the same model, one with the batch dynamic (`export_dynamic.py`),
/// one without `dynamic_shapes` (`export_at_batch_4.py`, first by name): the guard on the
/// batch gets one finding, the strongest (PT401, not also PT402 "static shape"), and its path
/// starts at the entrypoint that makes the batch dynamic.
#[test]
fn one_guard_gets_the_strongest_finding_of_the_entrypoints_reaching_it() {
    let root =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects/dynamic_and_static");
    let model = check_project(&root)
        .into_iter()
        .find(|checked| checked.module == "gatepkg.model")
        .expect("the model file");
    let found: Vec<(&str, Option<String>)> = model
        .report
        .diagnostics
        .iter()
        .map(|diagnostic| {
            (
                diagnostic.rule.code(),
                diagnostic.related.first().map(|related| {
                    related
                        .file
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned()
                }),
            )
        })
        .collect();
    assert_eq!(
        found,
        [("PT401", Some("export_dynamic.py".to_owned()))],
        "{:#?}",
        model.report.diagnostics
    );
}
