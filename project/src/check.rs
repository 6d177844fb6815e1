//! The two-phase check of a project's files: resolves the settings, finds the files, analyses
//! them against the whole workspace.
//!
//! Analysis runs in two phases so that facts crossing files hold whatever order files are
//! visited in: phase 1 reads every file once and summarises it (in parallel), the summaries
//! make one `WorkspaceIndex`, and phase 2 checks every file against that index (in parallel),
//! reusing the text read in phase 1. `pt2lsp check` (`cli::check`), `--fix` (`cli::fix`) and
//! the Python API's `check_paths` (`api`) run it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use pt2lsp_analyzer::{
    Alone, Diagnostic, ModuleSource, ModuleSummary, ParseCache, ParsedFile, Rule, RuleSelector,
    Settings, SourceFile, TextRange, TextSize, WorkspaceIndex, WorkspaceSources,
};
use rayon::prelude::*;

use super::config::{self, Config};
use super::interpreter;
use super::libraries::{self, Libraries, LibrarySources};
use super::report::FileReport;
use super::walk::{self, Exclude, Include};
use super::warn;
use crate::notebook::Notebook;
use crate::tracing::DeploymentTarget;

/// Stack for each analysis thread. The parser and the analyzer recurse on the syntax tree, and
/// generated code can nest expressions tens of thousands deep (`a + a + ... + a`); the memory is
/// only reserved, pages are touched as deep as a file actually goes.
pub const ANALYSIS_STACK_BYTES: usize = 512 << 20;

/// What the caller asks a check for: `pt2lsp check`'s flags, the Python API's arguments. The
/// configuration file fills in what they leave out.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Files or directories [default: the current directory].
    pub paths: Vec<PathBuf>,
    /// Replaces the configuration's `select` and `ignore`.
    pub select: Option<Vec<String>>,
    /// Added to the configuration's `ignore`.
    pub ignore: Option<Vec<String>>,
    /// Overrides the configuration's `strict`.
    pub strict: Option<bool>,
    /// Added to the configuration's `exclude`.
    pub exclude: Vec<String>,
    /// This configuration file instead of the nearest `pyproject.toml`.
    pub config: Option<PathBuf>,
    /// No configuration file at all.
    pub isolated: bool,
    /// No warnings on stderr, except deprecated configuration keys.
    pub quiet: bool,
    /// The interpreter whose installed libraries are followed, over the configuration's
    /// `python` (see [`interpreter::configured_interpreter`]).
    pub python: Option<PathBuf>,
    /// `Some(false)`: no installed library is followed, whatever the configuration says.
    pub follow_libraries: Option<bool>,
    /// Where library summaries are cached, over the configuration's `cache-dir`.
    pub cache_dir: Option<PathBuf>,
    /// No cache is read or written.
    pub no_cache: bool,
    /// `--target`: added to the configuration's `targets`, for the static pass (PT707) as for
    /// a trace's lowerings.
    pub targets: Vec<DeploymentTarget>,
}

/// What to check and how, resolved from the options and the configuration file: everything
/// before the analysis. The Python package's `check_paths` (`crate::api`) starts here too, so
/// the API and the command check the same files with the same settings.
pub struct Prepared {
    pub cwd: PathBuf,
    pub config: Config,
    pub settings: Settings,
    /// The files the walk found.
    pub files: Vec<PathBuf>,
    /// The other files of the project the given files belong to, when files (not
    /// directories) were given: their summaries and texts feed cross-file facts, they are not
    /// reported on.
    pub context: Vec<PathBuf>,
    /// Threads with the analysis stack, for [`Project::load`].
    pub pool: rayon::ThreadPool,
    /// Paths the walk could not read.
    pub io_errors: Vec<String>,
    /// The interpreter whose installed libraries the check follows, and where their
    /// summaries are cached; `None` when no interpreter is named or following is off.
    pub libraries: Option<(PathBuf, Option<PathBuf>)>,
    /// What was walked to find `files` and `context`, for `check --watch`.
    pub walked: walk::Walked,
    /// The project the checked files belong to (see [`project_context`]): the tracer puts it
    /// on `sys.path` and keeps its cache there, however the check was asked.
    pub root: PathBuf,
}

pub fn prepare(options: &CheckOptions) -> Result<Prepared> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let roots = resolve_roots(&options.paths, &cwd)?;

    let config = if options.isolated {
        Config::default()
    } else if let Some(path) = &options.config {
        config::load(&walk::absolute(&cwd, path))?
    } else {
        // The first path's project decides, so `pt2lsp check ../other` uses other's settings.
        let first = &roots[0];
        let start = if first.is_dir() {
            first.as_path()
        } else {
            first.parent().unwrap_or(&cwd)
        };
        config::discover(start)?
    };
    // Old spellings of keys are shown even under -q, or the file never gets fixed.
    for deprecation in &config.deprecations {
        warn(deprecation);
    }
    if !options.quiet {
        for warning in &config.warnings {
            warn(warning);
        }
    }
    let settings = resolve_settings(options, &config)?;
    let patterns: Vec<String> = walk::DEFAULT_EXCLUDE
        .iter()
        .map(|pattern| (*pattern).to_owned())
        .chain(config.exclude.iter().cloned())
        .chain(options.exclude.iter().cloned())
        .collect();
    let base = config.root().unwrap_or(&cwd).to_path_buf();
    let exclude = Exclude::new(&patterns, &base)?;
    let include = Include::new(&config.extend_include, &base)?;

    let discovery = walk::discover(&roots, &exclude, &include);
    if !options.quiet {
        for warning in &discovery.warnings {
            warn(warning);
        }
        if discovery.files.is_empty() && discovery.errors.is_empty() {
            warn("no Python files found under the given paths");
        }
    }
    let io_errors = discovery.errors;
    let libraries = libraries_to_follow(options, &config, &cwd);
    let (root, context_root, context) = project_context(
        &roots,
        &cwd,
        &config,
        (&exclude, &include),
        &discovery.files,
    );
    let walked = walk::Walked {
        roots: roots.into_iter().chain(context_root).collect(),
        exclude: patterns,
        include: config.extend_include.clone(),
        base,
        config: config.path.clone(),
    };
    // Every file is analysed on the pool's threads (rayon runs an unsplit job on the calling
    // thread otherwise), so each gets the large stack.
    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(ANALYSIS_STACK_BYTES)
        .build()
        .context("cannot start the analysis threads")?;
    Ok(Prepared {
        cwd,
        config,
        settings,
        files: discovery.files,
        context,
        pool,
        io_errors,
        libraries,
        walked,
        root,
    })
}

/// The interpreter whose libraries a check follows (one the user named, unless the flag or
/// `follow-libraries = false` says not to), and the directory their summaries are cached in
/// (none under `--no-cache` or `PT2LSP_NO_CACHE`).
fn libraries_to_follow(
    options: &CheckOptions,
    config: &Config,
    cwd: &Path,
) -> Option<(PathBuf, Option<PathBuf>)> {
    if options.follow_libraries == Some(false) || config.follow_libraries == Some(false) {
        return None;
    }
    let python = interpreter::configured_interpreter(
        options.python.as_deref(),
        config.python.as_deref(),
        config.root(),
        std::env::var_os("VIRTUAL_ENV").as_deref().map(Path::new),
    )?;
    let cache = (!options.no_cache && !super::cache_disabled_by_environment()).then(|| {
        match &options.cache_dir {
            Some(dir) => walk::absolute(cwd, dir),
            None => config.root().unwrap_or(cwd).join(
                config
                    .cache_dir
                    .as_deref()
                    .unwrap_or(super::DEFAULT_CACHE_DIRECTORY),
            ),
        }
    });
    Some((python, cache))
}

/// The project's other files: everything under the project's root that the walk would check
/// and that was not given, so that a file's diagnostics are the same however it is asked for
/// (`check .`, `check pkg/`, `check pkg/a.py` as a pre-commit hook passes it, from any
/// directory). The root is the configuration's directory, else the nearest directory above the
/// first path (itself included, for a directory) with a `pyproject.toml` or a `.git` (either
/// one narrowed to the outermost directory on the way to the path that its walk skips, such
/// as a git-ignored one: [`walk::within_walk`]), else the
/// directory that holds the top-level package around it, else the directory above a directory
/// of scripts that holds a package they import ([`importing_root`]), else the directory whose
/// scripts import the namespace package around it ([`namespace_root`]), else the working
/// directory (or the path's own directory when it is not under it). Context files are
/// summarised and read for cross-file facts, never reported on; one whose module name a given
/// file also has is left out (the given file is the one meant). Returns the root, and the root
/// again when it was walked.
fn project_context(
    roots: &[PathBuf],
    cwd: &Path,
    config: &Config,
    (exclude, include): (&Exclude, &Include),
    files: &[PathBuf],
) -> (PathBuf, Option<PathBuf>, Vec<PathBuf>) {
    let Some(first) = roots.first() else {
        return (cwd.to_path_buf(), None, Vec::new());
    };
    let start = if first.is_dir() {
        first.as_path()
    } else {
        match first.parent() {
            Some(parent) => parent,
            None => return (cwd.to_path_buf(), None, Vec::new()),
        }
    };
    let root = project_root(start, config.root(), exclude, cwd);
    if roots
        .iter()
        .all(|given| given.is_dir() && root.starts_with(given))
    {
        return (root, None, Vec::new()); // The walk already covers the whole project.
    }
    let given: HashSet<&PathBuf> = files.iter().collect();
    let packages = walk::PackageDirectories::default();
    let given_modules: HashSet<String> = files
        .iter()
        .filter_map(|path| packages.module_name(path).map(|(module, _)| module))
        .collect();
    let context = walk::discover(std::slice::from_ref(&root), exclude, include)
        .files
        .into_iter()
        .filter(|path| !given.contains(path))
        .filter(|path| {
            packages
                .module_name(path)
                .is_none_or(|(module, _)| !given_modules.contains(&module))
        })
        .collect();
    (root.clone(), Some(root), context)
}

/// The root of the project the directory `start` belongs to, for [`project_context`] and the
/// editor (a file it opens that no workspace folder's walk reads): `configured` (the directory
/// of the `[tool.pt2lsp]` in use) when there is one, else the nearest directory with a
/// `pyproject.toml` or a `.git` (either narrowed to a directory its walk skips on the way,
/// [`walk::within_walk`]), else the directory that holds the top-level package around `start`,
/// else the directory above a directory of scripts that holds a package they import
/// ([`importing_root`]), else the directory whose scripts import the namespace package
/// `start` is in ([`namespace_root`]), else `cwd` when `start` is under it, else `start`.
pub fn project_root(
    start: &Path,
    configured: Option<&Path>,
    exclude: &Exclude,
    cwd: &Path,
) -> PathBuf {
    configured
        .map(|root| walk::within_walk(root, start, exclude).to_path_buf())
        .or_else(|| walk::project_root(start, exclude))
        .or_else(|| {
            // An unpacked wheel or a bare tree: the directory that holds the top-level package.
            let mut top = None;
            for dir in start.ancestors() {
                if dir.join("__init__.py").is_file() {
                    top = dir.parent().map(Path::to_path_buf);
                } else {
                    break;
                }
            }
            top
        })
        .or_else(|| importing_root(start))
        .or_else(|| namespace_root(start))
        // A bare tree: the directory the check runs from when the path is under it (Python
        // imports a script's siblings from there), else the path's own directory.
        .unwrap_or_else(|| if start.starts_with(cwd) { cwd } else { start }.to_path_buf())
}

/// How far above a bare directory of scripts [`importing_root`] looks for what they import.
const SCRIPT_DEPTH: usize = 3;

/// A bare tree (no `pyproject.toml`, no `.git`) asked from a directory of scripts that import a
/// package of the tree above them (`scripts/export.py` with `from cfgpkg.model import GPT`,
/// `cfgpkg/` one level up): the nearest directory above that holds one of those packages or
/// modules, which is where the scripts are run from (`python scripts/export.py` from there).
/// So the check asked inside `scripts/` reads the same project as one asked at the top.
/// `None` when the scripts import nothing the directory itself lacks and an ancestor has.
fn importing_root(start: &Path) -> Option<PathBuf> {
    let mut imported = imports_of_scripts(start)?;
    // A package, a module, or a namespace package (PEP 420: a directory of Python files
    // without `__init__.py`, `from wavenet.networks import WaveNet`).
    let holds = |dir: &Path, name: &str| {
        let package = dir.join(name);
        package.join("__init__.py").is_file()
            || dir.join(format!("{name}.py")).is_file()
            || std::fs::read_dir(&package).is_ok_and(|entries| {
                entries
                    .filter_map(Result::ok)
                    .any(|entry| walk::is_python_source(&entry.path()))
            })
    };
    imported.retain(|name| !holds(start, name));
    start
        .ancestors()
        .skip(1)
        .take(SCRIPT_DEPTH)
        .find(|dir| imported.iter().any(|name| holds(dir, name)))
        .map(Path::to_path_buf)
}

/// The top-level names the Python files directly in `dir` import (the first 64 of them);
/// `None` when `dir` cannot be read.
fn imports_of_scripts(dir: &Path) -> Option<HashSet<String>> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut imported: HashSet<String> = HashSet::new();
    for path in entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| walk::is_python_source(path))
        .take(64)
    {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        imported.extend(top_level_imports(&text));
    }
    Some(imported)
}

/// A bare tree asked inside a namespace package (PEP 420: `audio/layers/` with no
/// `__init__.py` above it): the nearest directory above whose scripts import the namespace
/// package that holds `start` (`export.py` beside `audio/`, with `from audio.vocoder import
/// Vocoder`), which is where they run from, at most [`walk::MAX_NAMESPACE_DEPTH`] directories
/// up. So the check asked inside `audio/layers/` reads the same project as one asked at the top.
fn namespace_root(start: &Path) -> Option<PathBuf> {
    let mut child = start;
    for dir in start.ancestors().skip(1).take(walk::MAX_NAMESPACE_DEPTH) {
        let package = child.file_name()?.to_str()?;
        if imports_of_scripts(dir).is_some_and(|imported| imported.contains(package)) {
            return Some(dir.to_path_buf());
        }
        child = dir;
    }
    None
}

/// The first component of every absolute import in `text` (`import a.b, c` gives `a` and `c`,
/// `from a.b import x` gives `a`), read line by line: enough to find a package on disk.
fn top_level_imports(text: &str) -> Vec<String> {
    let first = |dotted: &str| {
        let name = dotted.trim().split(['.', ' ']).next().unwrap_or_default();
        (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .then(|| name.to_owned())
    };
    let mut names = Vec::new();
    for line in text.lines().map(str::trim_start) {
        if let Some(rest) = line.strip_prefix("from ") {
            if !rest.starts_with('.') {
                names.extend(first(rest));
            }
        } else if let Some(rest) = line.strip_prefix("import ") {
            names.extend(rest.split(',').filter_map(first));
        }
    }
    names
}

/// Other workspace files' texts for whole-program analysis, by dotted module name, then the
/// installed libraries' when calls into them are followed.
struct Texts(HashMap<String, ModuleSource>, Option<LibrarySources>);

impl WorkspaceSources for Texts {
    fn source(&self, module: &str) -> Option<ModuleSource> {
        self.0
            .get(module)
            .cloned()
            .or_else(|| self.1.as_ref()?.source(module))
    }
}

/// A project file that is not checked, only read for its cross-file facts.
pub struct ContextFile {
    module: (String, bool),
    path: PathBuf,
    text: Arc<str>,
    summary: ModuleSummary,
    /// For an entrypoint table's module (`path` is the configuration file): the table.
    table: Option<Arc<crate::table_programs::TableProgram>>,
}

impl ContextFile {
    /// An entrypoint table's module, read as a file of the project.
    fn of_table(table: crate::table_programs::TableProgram) -> Self {
        let summary = pt2lsp_analyzer::summarize_file(SourceFile {
            text: &table.text,
            module: Some(&table.module),
            is_package: false,
            namespace: None,
        });
        ContextFile {
            module: (table.module.clone(), false),
            path: table.path.clone(),
            text: Arc::from(table.text.as_str()),
            summary,
            table: Some(Arc::new(table)),
        }
    }
}

/// Absolute, normalised paths to check; a path that does not exist is a usage error, since a
/// typo in CI should fail loudly rather than check nothing.
fn resolve_roots(paths: &[PathBuf], cwd: &Path) -> Result<Vec<PathBuf>> {
    let paths = if paths.is_empty() {
        &[PathBuf::from(".")][..]
    } else {
        paths
    };
    paths
        .iter()
        .map(|path| {
            std::fs::metadata(path).with_context(|| format!("cannot check {}", path.display()))?;
            Ok(walk::absolute(cwd, path))
        })
        .collect()
}

/// Merges configuration and flags the way ruff layers them: `--select` starts over (the file's
/// `select` and `ignore` no longer apply), while `--ignore` alone adds to the file's `ignore`.
fn resolve_settings(options: &CheckOptions, config: &Config) -> Result<Settings> {
    let file = || {
        let path = config
            .path
            .as_deref()
            .map_or_else(String::new, |path| path.display().to_string());
        if path.ends_with("pyproject.toml") {
            format!("{path}: tool.pt2lsp.")
        } else {
            format!("{path}: ")
        }
    };
    let parse = |texts: &[String], origin: &str| -> Result<Vec<RuleSelector>> {
        texts
            .iter()
            .filter(|text| !text.trim().is_empty() || texts.len() == 1)
            .map(|text| {
                RuleSelector::parse(text).with_context(|| {
                    format!(
                        "unknown rule selector `{text}` in {origin}: selectors are rule codes or \
                         their prefixes (PT, PT1, PT101); `pt2lsp rule` lists the rules"
                    )
                })
            })
            .collect()
    };
    let defaults = Settings::default();
    let (select, mut ignore) = if let Some(select) = &options.select {
        (parse(select, "--select")?, Vec::new())
    } else {
        let select = match &config.select {
            Some(select) => parse(select, &format!("{}select", file()))?,
            None => defaults.select,
        };
        let ignore = match &config.ignore {
            Some(ignore) => parse(ignore, &format!("{}ignore", file()))?,
            None => Vec::new(),
        };
        (select, ignore)
    };
    if let Some(extra) = &options.ignore {
        ignore.extend(parse(extra, "--ignore")?);
    }
    let strict = options.strict.or(config.strict).unwrap_or(defaults.strict);
    Ok(Settings {
        strict,
        select,
        ignore,
        targets: crate::tracing::union(
            &options.targets,
            config.targets.as_deref().unwrap_or_default(),
        )
        .iter()
        .map(|target| target.as_str().to_owned())
        .collect(),
        entrypoint_targets: config::entrypoint_targets(
            config.entrypoints.as_deref().unwrap_or_default(),
            config.root(),
        ),
        scripts_with_arguments: config::scripts_with_arguments(
            config.entrypoints.as_deref().unwrap_or_default(),
            config.root(),
        ),
    })
}

/// The checked files with what checking them again needs, and the settings they are checked
/// with. `--fix` changes texts through [`Project::update`], which checks again exactly what
/// the change may affect.
pub struct Project<'a> {
    /// In the order the walk found them.
    pub files: Vec<Checked>,
    /// Files that were not checked but where the tracer found a problem (a helper module).
    pub others: Vec<FileReport>,
    /// The project's unchecked files, for cross-file facts.
    context: Vec<ContextFile>,
    /// The context files that are entrypoints reaching a checked file (a script that exports
    /// the model a checked module defines), by index into `context`: `check --trace FILE`
    /// traces them as `check --trace DIR` does.
    entrypoints_elsewhere: Vec<usize>,
    /// Where paths are shown from.
    cwd: PathBuf,
    /// The fixes of `Dim`s written inside entrypoint tables' strings, found by the last
    /// phase 2: info companions on the configuration file, by its path.
    table_companions: Vec<(PathBuf, Diagnostic)>,
    /// The installed libraries whose code entrypoints' analyses follow, when an interpreter
    /// is configured.
    libraries: Option<Arc<Libraries>>,
    pub settings: &'a Settings,
    pool: rayon::ThreadPool,
    /// Which directories are packages, for naming the checked files' and context files' modules.
    packages: walk::PackageDirectories,
}

/// One checked file.
pub struct Checked {
    /// Absolute: where the file is read from and written to.
    pub path: PathBuf,
    module: Option<(String, bool)>,
    /// The other names Python imports the file by, through namespace packages
    /// ([`walk::namespace_names`]); its summary carries them.
    namespace_names: Vec<String>,
    summary: Option<ModuleSummary>,
    /// Phase 1's parse of a file that phase 2 checks, so it is parsed once.
    parsed: Option<ParsedFile>,
    /// False for a file that is not UTF-8 source: its report is the decoding problem, and it is
    /// never analysed or fixed.
    pub decodable: bool,
    pub report: FileReport,
    /// For a notebook: its JSON as read (the report's text is its code cells joined); fixes are
    /// written back into it cell by cell.
    pub notebook_json: Option<String>,
}

/// Where a notebook's code cells are once its joined module (from `json`) reads `python`:
/// the cells a fix changed hold more or fewer lines, and positions must stay in cells. `None`
/// when the new module cannot be put back into the cells.
fn cells_after_edit(json: &str, python: &str) -> Option<crate::notebook::CellMap> {
    let rewritten = Notebook::parse(json).ok()?.rewrite(python).ok()?;
    let parsed = Notebook::parse(&rewritten).ok()?;
    (parsed.python() == python).then(|| parsed.cell_map())
}

impl<'a> Project<'a> {
    /// Reads every file and checks it: phase 1 on its own (summarising it from the same parse),
    /// phase 2 again against the workspace if its report may depend on other files.
    pub fn load(
        paths: &[PathBuf],
        settings: &'a Settings,
        cwd: &Path,
        pool: rayon::ThreadPool,
        io_errors: &mut Vec<String>,
    ) -> Self {
        let packages = walk::PackageDirectories::default();
        let loaded: Vec<Result<Checked, String>> = pool.install(|| {
            paths
                .par_iter()
                .map(|path| {
                    let shown = walk::display_path(path, cwd);
                    let mut source =
                        walk::read(path, &shown).map_err(|error| format!("{error:#}"))?;
                    // A notebook is checked as its code cells joined into one module.
                    let mut notebook = None;
                    if walk::is_notebook(path) && source.problem.is_none() {
                        let parsed = Notebook::parse(&source.text).map_err(|problem| {
                            format!("cannot check {}: {problem}", shown.display())
                        })?;
                        let python = parsed.python().to_owned();
                        let cells = parsed.cell_map();
                        notebook = Some((std::mem::replace(&mut source.text, python), cells));
                    }
                    let mut file = Checked {
                        path: path.clone(),
                        module: packages.module_name(path),
                        namespace_names: packages.namespace_names(path),
                        summary: None,
                        parsed: None,
                        decodable: source.problem.is_none(),
                        report: FileReport::new(shown, source.text, Vec::new()),
                        notebook_json: None,
                    };
                    if let Some((json, cells)) = notebook {
                        file.report.notebook = Some(cells);
                        file.notebook_json = Some(json);
                    }
                    match &source.problem {
                        Some(problem) => {
                            file.report.set_static(decoding_problem(problem, settings));
                        }
                        None => file.check_alone(settings),
                    }
                    Ok(file)
                })
                .collect()
        });
        let mut files = Vec::with_capacity(loaded.len());
        for result in loaded {
            match result {
                Ok(file) => files.push(file),
                Err(error) => io_errors.push(error),
            }
        }
        Self {
            files,
            others: Vec::new(),
            table_companions: Vec::new(),
            context: Vec::new(),
            entrypoints_elsewhere: Vec::new(),
            cwd: cwd.to_path_buf(),
            libraries: None,
            settings,
            pool,
            packages,
        }
    }

    /// The project's entrypoints outside the checked files that reach one of them, as (path,
    /// text): what `check --trace` traces besides the checked files' own entrypoints, so a
    /// model file checked alone gets the trace of the script that exports it.
    pub fn entrypoints_elsewhere(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.entrypoints_elsewhere.iter().map(|&index| {
            let file = &self.context[index];
            (file.path.as_path(), &*file.text)
        })
    }

    /// Checks the context files that `wanted` accepts too, as if they had been given: a file
    /// the tracer found a problem in is reported with everything `check DIR` says of it, not
    /// with the trace's findings alone. Phase 2 runs again for the whole project (the new
    /// files' analyses join it). Returns whether any file was added.
    pub fn check_also(&mut self, wanted: impl Fn(&Path) -> bool) -> bool {
        let (added, kept): (Vec<ContextFile>, Vec<ContextFile>) = std::mem::take(&mut self.context)
            .into_iter()
            // A table's module stands for the configuration file, which is never a checked
            // Python file: its findings go in the configuration's own report.
            .partition(|file| file.table.is_none() && wanted(&file.path));
        self.context = kept;
        if added.is_empty() {
            return false;
        }
        let settings = self.settings;
        let cwd = &self.cwd;
        let mut checked: Vec<Checked> = added
            .into_iter()
            .map(|file| Checked {
                report: FileReport::new(
                    walk::display_path(&file.path, cwd),
                    file.text.to_string(),
                    Vec::new(),
                ),
                path: file.path,
                module: Some(file.module),
                namespace_names: file.summary.namespace_names,
                summary: None,
                parsed: None,
                decodable: true,
                notebook_json: None,
            })
            .collect();
        self.pool.install(|| {
            checked
                .par_iter_mut()
                .for_each(|file| file.check_alone(settings));
        });
        self.files.extend(checked);
        self.check_against_workspace();
        true
    }

    /// Reads and summarises the project's unchecked files (see [`Prepared::context`]), and
    /// the modules its configuration's entrypoint tables stand for
    /// ([`crate::table_programs`]). Phase 2 ([`Self::check_against_workspace`]) must run
    /// after it.
    pub fn add_context(&mut self, paths: &[PathBuf], config: &Config) {
        let tables = crate::table_programs::table_programs(
            config.entrypoints.as_deref().unwrap_or_default(),
        );
        let packages = &self.packages;
        self.context = self.pool.install(|| {
            paths
                .par_iter()
                .filter_map(|path| {
                    let module = packages.module_name(path)?;
                    let source = walk::read(path, path).ok()?;
                    if source.problem.is_some() {
                        return None;
                    }
                    let namespace_names = packages.namespace_names(path);
                    let mut summary = pt2lsp_analyzer::summarize_file(SourceFile {
                        text: &source.text,
                        module: Some(&module.0),
                        is_package: module.1,
                        namespace: namespace_names.last().map(String::as_str),
                    });
                    summary.namespace_names = namespace_names;
                    Some(ContextFile {
                        module,
                        path: path.clone(),
                        text: Arc::from(source.text),
                        summary,
                        table: None,
                    })
                })
                .collect()
        });
        self.context
            .extend(tables.into_iter().map(ContextFile::of_table));
    }

    /// The entrypoint table written in the configuration file `file` whose keys include the
    /// 1-based `line`, as the module the static pass reads.
    pub fn table_program_at(
        &self,
        file: &Path,
        line: u32,
    ) -> Option<Arc<crate::table_programs::TableProgram>> {
        let file = walk::absolute(&self.cwd, file);
        self.context
            .iter()
            .filter_map(|context| context.table.as_ref())
            .find(|table| table.is_written_at(&file, line))
            .cloned()
    }

    /// After `configuration` (shown as in the reports) was rewritten: its tables' modules are
    /// made again from what it says now, its report reads the new text (its companions are
    /// found again), and phase 2 runs again, so the reports say what the rewritten tables give.
    pub fn reload_tables(&mut self, configuration: &Path) {
        let absolute = walk::absolute(&self.cwd, configuration);
        let (Ok(config), Ok(text)) = (config::load(&absolute), std::fs::read_to_string(&absolute))
        else {
            return;
        };
        let shown = walk::display_path(&absolute, &self.cwd);
        for report in self.others.iter_mut().filter(|report| report.path == shown) {
            // The companions, static or traced, were for the old text: those of the new one
            // are found again (and traced again, when the caller traces).
            let kept: Vec<_> = std::mem::take(&mut report.diagnostics)
                .into_iter()
                .filter(|reported| {
                    !(reported.rule == Rule::DynamicDimGuard && reported.fix.is_some())
                })
                .collect();
            *report = FileReport::new(shown.clone(), text.clone(), Vec::new());
            report.diagnostics = kept;
        }
        self.context.retain(|file| file.table.is_none());
        let tables = crate::table_programs::table_programs(
            config.entrypoints.as_deref().unwrap_or_default(),
        );
        self.context
            .extend(tables.into_iter().map(ContextFile::of_table));
        self.check_against_workspace();
    }

    /// The problems of the configuration's entrypoint tables that can be judged without
    /// running anything (`crate::table_problems`, which the editor asks too), as the
    /// configuration file's report: a table with no `model`, a string that is not
    /// `module:EXPRESSION`, an expression that does not parse, a module found neither under
    /// `root` nor in the libraries of the interpreter the tracer would run (`python`, the
    /// flag, over the configuration's).
    pub fn add_table_problems(&mut self, config: &Config, root: &Path, python: Option<&Path>) {
        let Some(path) = &config.path else {
            return;
        };
        let entries: Vec<config::Entrypoint> = config
            .entrypoints
            .iter()
            .flatten()
            .filter(|entry| {
                entry
                    .place
                    .as_ref()
                    .is_some_and(|place| place.file == *path)
            })
            .cloned()
            .collect();
        if entries.is_empty() || !self.settings.is_enabled(Rule::EntrypointError) {
            return;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            return;
        };
        let python = interpreter::interpreter(
            python,
            config.python.as_deref(),
            config.root(),
            std::env::var_os("VIRTUAL_ENV").as_deref().map(Path::new),
        );
        let modules = crate::table_problems::ModuleSearch::new(root, &python);
        let found = crate::table_problems::table_problems(&text, &entries, &modules);
        if !found.is_empty() {
            let shown = walk::display_path(path, &self.cwd);
            self.others.push(FileReport::new(shown, text, found));
        }
    }

    /// Follows calls into the libraries installed for `python` that the project imports
    /// (see [`libraries`]), their summaries cached in `cache_dir`. Phase 2 must run after it.
    /// A site-packages that cannot be found is a warning: the check goes on without it.
    pub fn follow_libraries(&mut self, python: &Path, cache_dir: Option<&Path>, quiet: bool) {
        let sites = match libraries::site_packages(python) {
            Ok(sites) => sites,
            Err(error) => {
                if !quiet {
                    warn(&format!(
                        "calls into installed libraries are not followed: {error:#}"
                    ));
                }
                return;
            }
        };
        let summaries = self
            .files
            .iter()
            .filter_map(|file| file.summary.as_ref())
            .chain(self.context.iter().map(|file| &file.summary));
        let imported = libraries::imported_top_level(summaries);
        let started = std::time::Instant::now();
        let libraries = libraries::load(&sites, imported, cache_dir, &self.pool);
        if libraries.summarised > 0 && !quiet {
            let kept = match cache_dir {
                Some(dir) => format!("; kept in {} for the next runs", dir.display()),
                None => String::new(),
            };
            // Not a warning: said once, so that the first check's extra time is explained.
            eprintln!(
                "Summarised installed libraries to follow calls into them: {} ({:.1} s{kept}).",
                libraries.describe(),
                started.elapsed().as_secs_f64()
            );
        }
        if !libraries.index.is_empty() {
            self.libraries = Some(Arc::new(libraries));
        }
    }

    /// Gives files new texts, then checks again what that may change: those files, and every
    /// file whose report depends on the workspace. Reports checked again hold static findings
    /// only until the next trace.
    pub fn update(&mut self, changed: Vec<(usize, String)>) {
        let settings = self.settings;
        let mut changed: Vec<(&mut Checked, String)> = {
            let mut texts: std::collections::HashMap<usize, String> = changed.into_iter().collect();
            self.files
                .iter_mut()
                .enumerate()
                .filter_map(|(index, file)| Some((file, texts.remove(&index)?)))
                .collect()
        };
        self.pool.install(|| {
            changed.par_iter_mut().for_each(|(file, text)| {
                let shown = file.report.path.clone();
                let cells = file.report.notebook.take().map(|cells| {
                    file.notebook_json
                        .as_deref()
                        .and_then(|json| cells_after_edit(json, text))
                        .unwrap_or(cells)
                });
                file.report = FileReport::new(shown, std::mem::take(text), Vec::new());
                file.report.notebook = cells;
                file.check_alone(settings);
            });
        });
        self.check_against_workspace();
    }

    /// Phase 2: one index per module namespace (each Python project under the checked tree,
    /// [`walk::namespaces`]), then every file that needs it checked against its own:
    /// those whose facts may come from other files, and those that take part in an
    /// entrypoint's whole-program analysis.
    pub fn check_against_workspace(&mut self) {
        let named: Vec<(&Path, Option<&(String, bool)>)> = self
            .files
            .iter()
            .map(|file| (file.path.as_path(), file.module.as_ref()))
            .chain(
                self.context
                    .iter()
                    .map(|file| (file.path.as_path(), Some(&file.module))),
            )
            .collect();
        let mut file_space = walk::namespaces_named(&named);
        let context_space = file_space.split_off(self.files.len());
        // Every namespace of the checked files' projects: those the checked files are in are
        // checked, and the others' entrypoints may import from them.
        let mut spaces: Vec<&Option<PathBuf>> = file_space.iter().chain(&context_space).collect();
        spaces.sort();
        spaces.dedup();
        self.entrypoints_elsewhere.clear();
        let mut roots = walk::NamespaceRoots::default();
        let members: Vec<(Vec<bool>, Vec<bool>, Option<PathBuf>)> = spaces
            .iter()
            .map(|space| {
                let files: Vec<bool> = file_space.iter().map(|of| of == *space).collect();
                let context: Vec<bool> = context_space.iter().map(|of| of == *space).collect();
                let path = self
                    .files
                    .iter()
                    .map(|file| file.path.as_path())
                    .zip(&files)
                    .chain(
                        self.context
                            .iter()
                            .map(|file| file.path.as_path())
                            .zip(&context),
                    )
                    .find_map(|(path, inside)| inside.then_some(path));
                let project = path.and_then(|path| roots.of(path));
                (files, context, project)
            })
            .collect();
        let checked = |files: &[bool]| files.iter().any(|inside| *inside);
        let checked_projects: HashSet<&Option<PathBuf>> = members
            .iter()
            .filter(|(files, ..)| checked(files))
            .map(|(.., project)| project)
            .collect();
        let members: Vec<&(Vec<bool>, Vec<bool>, Option<PathBuf>)> = members
            .iter()
            .filter(|(.., project)| checked_projects.contains(project))
            .collect();
        let mut indexes: Vec<WorkspaceIndex> = members
            .iter()
            .map(|(files, context, _)| self.namespace_index(files, context))
            .collect();
        // The namespaces of one project learn what the others' entrypoints import.
        let mut projects: BTreeMap<&Option<PathBuf>, Vec<&mut WorkspaceIndex>> = BTreeMap::new();
        for ((.., project), index) in members.iter().zip(&mut indexes) {
            projects.entry(project).or_default().push(index);
        }
        for namespaces in projects.values_mut() {
            pt2lsp_analyzer::link_namespaces(namespaces);
        }
        for ((files, context, _), index) in members.iter().zip(indexes) {
            if checked(files) {
                self.check_namespace(files, context, index);
            }
        }
        self.place_table_companions();
    }

    /// The index of the checked files and context files marked in `files` and `context`, one
    /// namespace, from their summaries.
    fn namespace_index(&self, files: &[bool], context: &[bool]) -> WorkspaceIndex {
        let summaries = self
            .files
            .iter()
            .zip(files)
            .filter(|(file, inside)| **inside && file.module.is_some())
            .filter_map(|(file, _)| file.summary.as_ref())
            .chain(
                self.context
                    .iter()
                    .zip(context)
                    .filter(|(_, inside)| **inside)
                    .map(|(file, _)| &file.summary),
            );
        WorkspaceIndex::with_libraries(
            summaries,
            self.libraries
                .as_ref()
                .map(|libraries| Arc::clone(&libraries.index)),
        )
    }

    /// Puts the companions phase 2 found for `Dim`s written in entrypoint tables' strings in
    /// the configuration file's report, replacing those of an earlier phase 2 (`--fix`
    /// checks again after each round).
    fn place_table_companions(&mut self) {
        let is_companion = |reported: &crate::report::Reported| {
            reported.source == crate::report::Source::Static
                && reported.rule == Rule::DynamicDimGuard
                && reported.fix.is_some()
        };
        for report in &mut self.others {
            report
                .diagnostics
                .retain(|reported| !is_companion(reported));
        }
        for (path, diagnostic) in std::mem::take(&mut self.table_companions) {
            let shown = walk::display_path(&path, &self.cwd);
            let index =
                if let Some(index) = self.others.iter().position(|report| report.path == shown) {
                    index
                } else {
                    let Ok(text) = std::fs::read_to_string(&path) else {
                        continue;
                    };
                    self.others.push(FileReport::new(shown, text, Vec::new()));
                    self.others.len() - 1
                };
            let report = &mut self.others[index];
            report
                .diagnostics
                .push(crate::report::Reported::found_statically(diagnostic));
            report
                .diagnostics
                .sort_by_key(|reported| (reported.range.start(), reported.rule));
        }
        self.others.retain(|report| !report.diagnostics.is_empty());
    }

    /// Phase 2 for the checked files and context files marked in `files` and `context`, one
    /// namespace whose index is `index`: `models.net` names one file in it.
    fn check_namespace(&mut self, files: &[bool], context: &[bool], index: WorkspaceIndex) {
        let mut workspace = index;
        // Texts are handed to the analysis only when some entrypoint may follow calls into
        // other files: most projects have none, and copying every text would cost time.
        let program = self.files.iter().zip(files).any(|(file, &inside)| {
            inside
                && file
                    .module
                    .as_ref()
                    .is_some_and(|(module, _)| workspace.may_take_part_in_program(module))
        });
        if program {
            // Only an entrypoint's or a module one may reach is ever asked for: the others'
            // texts are not copied.
            let asked = |module: &str| {
                workspace.is_entrypoint(module)
                    || !workspace.entrypoints_reaching(module).is_empty()
            };
            let mut texts: HashMap<String, ModuleSource> = HashMap::new();
            // Phase 1 kept the trees of the files that need the workspace: the programs that
            // load them take those, instead of parsing each again.
            let parse_cache: Arc<ParseCache> = Arc::default();
            for (file, _) in self
                .files
                .iter()
                .zip(files)
                .filter(|(file, inside)| **inside && file.decodable)
            {
                if let Some((module, is_package)) =
                    file.module.as_ref().filter(|(module, _)| asked(module))
                {
                    let text: Arc<str> = Arc::from(file.report.text.as_str());
                    if let Some(parsed) = &file.parsed {
                        parsed.keep_in(&parse_cache, module, Arc::clone(&text));
                    }
                    texts.insert(
                        module.clone(),
                        ModuleSource {
                            text,
                            is_package: *is_package,
                            path: file.path.clone(),
                        },
                    );
                }
            }
            for (file, _) in self
                .context
                .iter()
                .zip(context)
                .filter(|(file, inside)| **inside && asked(&file.module.0))
            {
                texts
                    .entry(file.module.0.clone())
                    .or_insert_with(|| ModuleSource {
                        text: file.text.clone(),
                        is_package: file.module.1,
                        path: file.path.clone(),
                    });
            }
            let libraries = self.libraries.as_ref().map(Libraries::sources);
            // Entrypoints share files (a package's helpers, transformers' `modeling_utils`):
            // each is parsed once, not once per entrypoint.
            workspace = workspace
                .with_sources(Arc::new(Texts(texts, libraries)))
                .with_parse_cache(parse_cache);
        }
        let settings = self.settings;
        let index = workspace;
        let workspace = &index;
        // Entrypoints first, to save work only: their own analyses record which files they
        // enter, which the files they reach would otherwise analyse them again to learn. The
        // answers do not depend on the order (what an entrypoint enters is a function of the
        // texts, kept with its program). The files no entrypoint reaches never ask what one
        // enters, so they are checked beside the entrypoints: one entrypoint's analysis (a
        // whole program) would otherwise keep one thread busy while the others wait.
        let (mut first, reached): (Vec<&mut Checked>, Vec<&mut Checked>) = self
            .files
            .iter_mut()
            .zip(files)
            .filter(|(_, inside)| **inside)
            .map(|(file, _)| file)
            .partition(|file| {
                file.module.as_ref().is_none_or(|(module, _)| {
                    workspace.is_entrypoint(module)
                        || workspace.entrypoints_reaching(module).is_empty()
                })
            });
        // Stable, so the files keep the walk's order after the entrypoints.
        first.sort_by_key(|file| {
            !file
                .module
                .as_ref()
                .is_some_and(|(module, _)| workspace.is_entrypoint(module))
        });
        let check = |file: &mut Checked| {
            let in_program = file.module.as_ref().is_some_and(|(module, _)| {
                workspace.is_entrypoint(module)
                    || pt2lsp_analyzer::takes_part_in_program(workspace, module)
            });
            if in_program
                || file
                    .summary
                    .as_ref()
                    .is_some_and(|summary| summary.needs_workspace)
            {
                file.check_against(settings, workspace);
            }
        };
        self.pool.install(|| first.into_par_iter().for_each(check));
        self.pool
            .install(|| reached.into_par_iter().for_each(check));
        // A `Dim` written inside a table's string: the table's module is the entrypoint whose
        // own analysis gives the companion that carries the fix, edited where the string is.
        let table_companions: Vec<(PathBuf, Diagnostic)> = self
            .context
            .iter()
            .zip(context)
            .filter(|(_, inside)| **inside)
            .filter_map(|(file, _)| file.table.as_ref())
            .flat_map(|table| {
                let configuration = std::fs::read_to_string(&table.path).unwrap_or_default();
                table
                    .companions(&configuration, settings, workspace)
                    .into_iter()
                    .map(|diagnostic| (table.path.clone(), diagnostic))
                    .collect::<Vec<_>>()
            })
            .collect();
        self.table_companions.extend(table_companions);
        let members = &mut self.files;
        let reaching: HashSet<&str> = members
            .iter()
            .zip(files)
            .filter(|(_, inside)| **inside)
            .filter_map(|(file, _)| file.module.as_ref())
            .flat_map(|(module, _)| workspace.entrypoints_reaching(module))
            .map(String::as_str)
            .collect();
        self.entrypoints_elsewhere.extend(
            self.context
                .iter()
                .enumerate()
                // A table's module is traced as its table, not as a file of its own.
                .filter(|&(index, file)| {
                    context[index]
                        && reaching.contains(file.module.0.as_str())
                        && walk::is_python_source(&file.path)
                })
                .map(|(index, _)| index),
        );
        for (file, _) in members.iter_mut().zip(files).filter(|(_, inside)| **inside) {
            let Some(why) = file
                .module
                .as_ref()
                .and_then(|(module, _)| workspace.unexported(module))
            else {
                continue;
            };
            for reported in &mut file.report.diagnostics {
                pt2lsp_analyzer::as_unexported(&mut reported.diagnostic, &why);
            }
        }
        // The index holds every parsed program file: freeing them took the main thread
        // about 1% of a check, while the pool has nothing left to do.
        self.pool.spawn(move || drop(index));
    }

    /// Every report, sorted by path: the checked files' and the tracer's others.
    pub fn into_reports(self) -> Vec<FileReport> {
        let mut reports: Vec<FileReport> = self
            .files
            .into_iter()
            .map(|file| file.report)
            .chain(self.others)
            .collect();
        reports.sort_by(|a, b| a.path.cmp(&b.path));
        // Writing a diagnostic asks for its line: each file's lines are found here, in the
        // pool, rather than one file after another by the writer.
        self.pool.install(|| {
            reports
                .par_iter()
                .filter(|report| !report.diagnostics.is_empty())
                .for_each(|report| {
                    report.line_index();
                });
        });
        reports
    }
}

impl Checked {
    fn source_file(&self) -> SourceFile<'_> {
        let (module, is_package) = match &self.module {
            Some((name, is_package)) => (Some(name.as_str()), *is_package),
            None => (None, false),
        };
        SourceFile {
            text: &self.report.text,
            module,
            is_package,
            // The names go nearest first: the last is the longest.
            namespace: self.namespace_names.last().map(String::as_str),
        }
    }

    /// Phase 1: summarises the file and checks it with no workspace facts, from one parse.
    /// A file whose report depends on the workspace is left without diagnostics here: phase 2
    /// checks it.
    fn check_alone(&mut self, settings: &Settings) {
        let (alone, mut summary) =
            pt2lsp_analyzer::summarize_and_check_alone(self.source_file(), settings);
        summary.namespace_names.clone_from(&self.namespace_names);
        match alone {
            Alone::Report(report) => {
                self.report.set_static(report.diagnostics);
                self.report.unproven = report.unproven;
            }
            Alone::NeedsWorkspace(parsed) => {
                self.report.set_static(Vec::new());
                self.parsed = Some(parsed);
            }
        }
        self.summary = Some(summary);
    }

    /// Phase 2: checks the file against the workspace, from phase 1's parse when it kept one.
    fn check_against(&mut self, settings: &Settings, workspace: &WorkspaceIndex) {
        let report = match self.parsed.take() {
            Some(parsed) => {
                pt2lsp_analyzer::check_parsed_file(&parsed, self.source_file(), settings, workspace)
            }
            None => pt2lsp_analyzer::check_file(self.source_file(), settings, workspace),
        };
        self.report.set_static(report.diagnostics);
        self.report.unproven = report.unproven;
    }
}

/// The one diagnostic of a file that could not be decoded.
fn decoding_problem(problem: &walk::DecodeProblem, settings: &Settings) -> Vec<Diagnostic> {
    // The text is only the decodable prefix: analysing it would report a syntax error where
    // the file was cut, so the decoding problem is the file's only diagnostic.
    if !settings.is_enabled(Rule::SyntaxError) {
        return Vec::new();
    }
    let offset = TextSize::new(problem.offset as u32);
    vec![Diagnostic {
        rule: Rule::SyntaxError,
        severity: Rule::SyntaxError.default_severity(),
        message: problem.message.clone(),
        range: TextRange::empty(offset),
        fix: None,
        related: Vec::new(),
    }]
}
