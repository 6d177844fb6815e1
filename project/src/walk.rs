//! Finding the Python files to check, naming their modules, and reading them.
//!
//! Directories are walked in parallel with the `ignore` crate (ripgrep's walker), so
//! `.gitignore`, `.ignore` and hidden files are honoured exactly as ripgrep and ruff honour them,
//! also outside a git repository. Paths named on the command line are never filtered: asking
//! for a file checks it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::{WalkBuilder, WalkState};

/// Directories that hold installed or generated code, never the user's model. Hidden ones
/// (`.venv`, `.git`, `.tox`) are already skipped as hidden files; these are ruff's defaults for
/// the rest. Without them a `venv/` beside the model would mean checking all of torch.
pub const DEFAULT_EXCLUDE: [&str; 7] = [
    "__pypackages__",
    "_build",
    "buck-out",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
];

/// Compiled `exclude` patterns, matched the way ruff matches them: a pattern matches a file or
/// directory by its name (`build`, `*_pb2.py`) or by its path relative to the configuration
/// root (`models/generated/*`).
#[derive(Debug, Clone)]
pub struct Exclude {
    set: GlobSet,
}

impl Exclude {
    pub fn new(patterns: &[String], root: &Path) -> Result<Self> {
        Ok(Self {
            set: compile(patterns, root, "exclude")?,
        })
    }

    /// Whether an absolute, normalised path is excluded.
    pub fn is_excluded(&self, path: &Path) -> bool {
        matches(&self.set, path)
    }
}

/// `extend-include` patterns: more files a directory walk checks as Python, beside `*.py`,
/// `*.pyi` and `*.ipynb` (`*.pyw`, scripts without an extension), matched as `exclude`
/// patterns are. `exclude` still wins.
#[derive(Debug, Clone, Default)]
pub struct Include {
    set: Option<GlobSet>,
}

impl Include {
    pub fn new(patterns: &[String], root: &Path) -> Result<Self> {
        Ok(Self {
            set: (!patterns.is_empty())
                .then(|| compile(patterns, root, "extend-include"))
                .transpose()?,
        })
    }

    /// Whether an absolute, normalised path is included by a pattern.
    pub fn is_included(&self, path: &Path) -> bool {
        self.set.as_ref().is_some_and(|set| matches(set, path))
    }
}

/// Patterns matched by a file's name, or by its path relative to `root` (or absolute).
fn compile(patterns: &[String], root: &Path, key: &str) -> Result<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    let root = globset::escape(&root.to_string_lossy());
    for pattern in patterns {
        let trimmed = pattern.trim_start_matches("./").trim_end_matches('/');
        let glob = |text: &str| {
            Glob::new(text).with_context(|| format!("invalid {key} pattern {pattern:?}"))
        };
        builder.add(glob(trimmed)?);
        if !Path::new(trimmed).is_absolute() {
            builder.add(glob(&format!("{}/{trimmed}", root.trim_end_matches('/')))?);
        }
    }
    builder
        .build()
        .with_context(|| format!("cannot compile the {key} patterns"))
}

fn matches(set: &GlobSet, path: &Path) -> bool {
    set.is_match(path) || path.file_name().is_some_and(|name| set.is_match(name))
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Absolute paths, sorted and without duplicates.
    pub files: Vec<PathBuf>,
    /// Directories or files that could not be read (exit 2).
    pub errors: Vec<String>,
    /// Problems that do not stop the run, such as a bad line in a `.gitignore`.
    pub warnings: Vec<String>,
}

/// What a check walked and read besides its files: the roots, the patterns it walked them by
/// and the configuration file. `check --watch` walks it again to see whether anything the
/// check read has changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walked {
    /// The given paths, and the project's root when the rest of the project was read for
    /// cross-file facts.
    pub roots: Vec<PathBuf>,
    /// `exclude` patterns (the defaults among them) and `extend-include` patterns, as written.
    pub exclude: Vec<String>,
    pub include: Vec<String>,
    /// The directory the patterns are relative to.
    pub base: PathBuf,
    /// The configuration file the settings came from, if any.
    pub config: Option<PathBuf>,
}

/// Collects the files to check under `roots` (absolute, existing paths).
pub fn discover(roots: &[PathBuf], exclude: &Exclude, include: &Include) -> Discovery {
    let (directories, files): (Vec<&PathBuf>, Vec<&PathBuf>) =
        roots.iter().partition(|root| root.is_dir());
    let found = Mutex::new(Discovery {
        files: files.into_iter().cloned().collect(),
        ..Discovery::default()
    });
    if let Some((first, rest)) = directories.split_first() {
        let mut builder = walker(first, exclude);
        for root in rest {
            builder.add(root);
        }
        let include = Arc::new(include.clone());
        builder.build_parallel().run(|| {
            let found = &found;
            let include = Arc::clone(&include);
            Box::new(move |entry| {
                let mut found = found
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match entry {
                    Ok(entry) => {
                        let is_file = entry.file_type().is_some_and(|kind| kind.is_file());
                        if is_file && (is_python(entry.path()) || include.is_included(entry.path()))
                        {
                            found.files.push(entry.into_path());
                        }
                    }
                    Err(error) if error.io_error().is_some() => {
                        found.errors.push(error.to_string());
                    }
                    Err(error) => found.warnings.push(error.to_string()),
                }
                WalkState::Continue
            })
        });
    }
    let mut found = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    found.files.sort();
    found.files.dedup();
    found
}

/// The walk of `root` that [`discover`] makes: `.gitignore`, `.ignore`, git's excludes and
/// hidden entries skipped, and what `exclude` names.
fn walker(root: &Path, exclude: &Exclude) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    let exclude = Arc::new(exclude.clone());
    builder
        .standard_filters(true)
        // A fresh checkout, an sdist or a CI cache may lack `.git`; its `.gitignore` still
        // says what is not source.
        .require_git(false)
        .filter_entry(move |entry| !exclude.is_excluded(entry.path()));
    builder
}

/// The root of the project a check of the directory `start` reads: the nearest directory at or
/// above it that [`is_project_root`], unless the way down from there to `start` passes through
/// a directory that project's walk skips (git-ignored, hidden, excluded: a benchmark's cache, a
/// scratch directory, a vendored tree). Such a directory is no part of that project, so the
/// outermost one is a project of its own: asking for `start`, for a file in it, or from any
/// directory under it then reads the same files. `None` when no ancestor is a project root.
pub fn project_root(start: &Path, exclude: &Exclude) -> Option<PathBuf> {
    let root = start.ancestors().find(|dir| is_project_root(dir))?;
    Some(within_walk(root, start, exclude).to_path_buf())
}

/// `root`, or the outermost directory on the way down from `root` to `start` (under it) that
/// the walk of `root` skips: the root of the project `start` belongs to (see [`project_root`]).
pub fn within_walk<'a>(root: &'a Path, start: &'a Path, exclude: &Exclude) -> &'a Path {
    if !start.starts_with(root) {
        return root; // A `--config` from elsewhere: its root is the project, as given.
    }
    let below: Vec<&Path> = start.ancestors().take_while(|dir| *dir != root).collect();
    below
        .iter()
        .rev()
        .find(|dir| is_skipped_by_walk(dir, exclude))
        .copied()
        .unwrap_or(root)
}

/// Whether a walk of `directory`'s parent ([`walker`], the parent's `.gitignore`s and those above
/// it read) leaves `directory` out.
fn is_skipped_by_walk(directory: &Path, exclude: &Exclude) -> bool {
    let Some(parent) = directory.parent() else {
        return false;
    };
    let mut builder = walker(parent, exclude);
    builder.max_depth(Some(1));
    !builder
        .build()
        .filter_map(Result::ok)
        .any(|entry| entry.path() == directory)
}

/// Python sources and Jupyter notebooks (their code cells are checked as one module).
fn is_python(path: &Path) -> bool {
    is_python_source(path) || is_notebook(path)
}

/// Python source files: modules and stubs (`.py`, `.pyi`), the files the workspace index
/// names. The CLI and the editor both decide it here.
pub fn is_python_source(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension == "py" || extension == "pyi")
}

/// Whether `path` is a Jupyter notebook.
pub fn is_notebook(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension == "ipynb")
}

/// The dotted module name of a file, and whether it is a package's `__init__`.
///
/// Walks up while the directory is a package (has an `__init__.py` or `__init__.pyi`): the
/// first directory that is not one is where `import` would find the top-level name. To name
/// many files, [`PackageDirectories::module_name`] looks at each directory once.
pub fn module_name(path: &Path) -> Option<(String, bool)> {
    PackageDirectories::default().module_name(path)
}

/// The other dotted names Python imports a file by through namespace packages (PEP 420), the
/// directories without an `__init__.py` above the directory its module is named from: for
/// `wavenet/networks.py`, named `networks`, it is `wavenet.networks`, which a script beside
/// `wavenet/` imports (its directory is on `sys.path`, and `wavenet/` is a namespace package
/// there). One name per directory above, nearest first, up to the project's root (a
/// `pyproject.toml` or a `.git`: the directory the tracer puts on `sys.path`, whose own name
/// is never part of a module's), through names Python can import (`my-repo/` ends the chain),
/// at most [`MAX_NAMESPACE_DEPTH`] directories up. Empty for a file with no module name.
pub fn namespace_names(path: &Path) -> Vec<String> {
    PackageDirectories::default().namespace_names(path)
}

/// How many namespace directories above a module's own directory [`namespace_names`] names
/// it through: deeper trees without `__init__.py` files are not packages anyone imports, and
/// a tree with no project root above would otherwise be named up to `/`.
pub const MAX_NAMESPACE_DEPTH: usize = 4;

/// Which directories are packages, each looked up on disk once: files of one tree share their
/// parents, and naming each file by looking at all its parents again cost about 3% of a
/// check's time. Shared by the threads that read the files.
#[derive(Debug, Default)]
pub struct PackageDirectories {
    known: Mutex<HashMap<PathBuf, bool>>,
    /// Which directories are projects' roots ([`is_project_root`]), for [`namespace_names`].
    roots: Mutex<HashMap<PathBuf, bool>>,
}

impl PackageDirectories {
    /// [`module_name`], with the answers for directories kept.
    pub fn module_name(&self, path: &Path) -> Option<(String, bool)> {
        // A notebook is run, never imported.
        if is_notebook(path) {
            return None;
        }
        let stem = path.file_stem()?.to_str()?;
        let is_package = stem == "__init__";
        let mut parts = if is_package { Vec::new() } else { vec![stem] };
        let mut directory = path.parent();
        while let Some(current) = directory {
            if !self.is_package(current) {
                break;
            }
            parts.push(current.file_name()?.to_str()?);
            directory = current.parent();
        }
        if parts.is_empty() {
            return None;
        }
        parts.reverse();
        Some((parts.join("."), is_package))
    }

    /// [`namespace_names`], with the answers for directories kept.
    pub fn namespace_names(&self, path: &Path) -> Vec<String> {
        let Some((module, is_package)) = self.module_name(path) else {
            return Vec::new();
        };
        let Some((mut directory, _)) = import_root(path, Some(&(module.clone(), is_package)))
        else {
            return Vec::new();
        };
        let mut names = Vec::new();
        let mut prefix = String::new();
        for _ in 0..MAX_NAMESPACE_DEPTH {
            if self.is_project_root(&directory) {
                break;
            }
            let Some(name) = directory
                .file_name()
                .and_then(|name| name.to_str())
                .filter(|name| is_identifier(name))
            else {
                break;
            };
            prefix.insert(0, '.');
            prefix.insert_str(0, name);
            names.push(format!("{prefix}{module}"));
            let Some(parent) = directory.parent() else {
                break;
            };
            directory = parent.to_path_buf();
        }
        names
    }

    /// Whether `directory` holds an `__init__.py` or `__init__.pyi`.
    fn is_package(&self, directory: &Path) -> bool {
        Self::look_up(&self.known, directory, |directory| {
            directory.join("__init__.py").is_file() || directory.join("__init__.pyi").is_file()
        })
    }

    /// Whether `directory` is a project's root ([`is_project_root`]).
    fn is_project_root(&self, directory: &Path) -> bool {
        Self::look_up(&self.roots, directory, is_project_root)
    }

    /// `found_on_disk(directory)`, kept in `known`.
    fn look_up(
        known: &Mutex<HashMap<PathBuf, bool>>,
        directory: &Path,
        found_on_disk: impl Fn(&Path) -> bool,
    ) -> bool {
        let lock = || {
            known
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(&known) = lock().get(directory) {
            return known;
        }
        // Looked up without the lock: two threads may both look, and agree.
        let found = found_on_disk(directory);
        lock().insert(directory.to_path_buf(), found);
        found
    }
}

/// Whether `name` can be one part of a dotted module name: a Python identifier (ASCII ones, the
/// names directories of code have; a name Python would take that this refuses only ends a
/// chain of namespace names early).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Which Python project each file belongs to, for module names: two projects under one
/// checked tree (a monorepo's `alpha/` and `beta/`, each with its own `pyproject.toml`) may
/// both have a `models/net.py`, and `from models.net import Net` in one never means the
/// other's. A file belongs to the nearest directory above it holding a `pyproject.toml` or a
/// `.git`, the boundary [`crate::check::prepare`] takes a project's root at; `None` for a
/// file under neither. Answers are kept per directory, so a tree costs one look per directory.
#[derive(Debug, Default)]
pub struct NamespaceRoots {
    known: std::collections::HashMap<PathBuf, Option<PathBuf>>,
    /// Directories that are projects of their own besides those [`is_project_root`] finds:
    /// the editor's projects of files it opened in a directory a folder's walk skips.
    boundaries: HashSet<PathBuf>,
}

impl NamespaceRoots {
    /// Also counts each of `boundaries` as a project's root.
    pub fn with_boundaries(boundaries: &[PathBuf]) -> Self {
        Self {
            known: std::collections::HashMap::new(),
            boundaries: boundaries.iter().cloned().collect(),
        }
    }

    /// The project `path` belongs to.
    pub fn of(&mut self, path: &Path) -> Option<PathBuf> {
        let directory = path.parent()?;
        self.of_directory(directory)
    }

    fn of_directory(&mut self, directory: &Path) -> Option<PathBuf> {
        if let Some(known) = self.known.get(directory) {
            return known.clone();
        }
        let found = if is_project_root(directory) || self.boundaries.contains(directory) {
            Some(directory.to_path_buf())
        } else {
            directory
                .parent()
                .and_then(|parent| self.of_directory(parent))
        };
        self.known.insert(directory.to_path_buf(), found.clone());
        found
    }
}

/// The module namespace of each of `paths`, as a directory: files with the same one share an
/// index, in which `models.net` names one file. It is the file's project
/// ([`NamespaceRoots`]), unless the directory the file's module is named from (its import root:
/// `implementations/munit/` for `implementations/munit/models.py`, named `models`) defines a
/// top-level name that another import root of the project defines too (`implementations/cgan/
/// models.py`): Python resolves each script's `import models` from its own directory, so such an
/// import root is a namespace of its own. The answer depends on the set of paths only, never
/// on their order.
pub fn namespaces(paths: &[&Path]) -> Vec<Option<PathBuf>> {
    namespaces_within(paths, &[])
}

/// [`namespaces`], each of `boundaries` a project of its own ([`NamespaceRoots::with_boundaries`]).
pub fn namespaces_within(paths: &[&Path], boundaries: &[PathBuf]) -> Vec<Option<PathBuf>> {
    let packages = PackageDirectories::default();
    let named: Vec<(&Path, Option<(String, bool)>)> = paths
        .iter()
        .map(|path| (*path, packages.module_name(path)))
        .collect();
    let named: Vec<(&Path, Option<&(String, bool)>)> = named
        .iter()
        .map(|(path, module)| (*path, module.as_ref()))
        .collect();
    namespaces_in(&named, NamespaceRoots::with_boundaries(boundaries))
}

/// [`namespaces`] of files whose module names ([`module_name`]) the caller has already: the
/// check named every file when it read it, and naming one again looks at the disk.
pub fn namespaces_named(files: &[(&Path, Option<&(String, bool)>)]) -> Vec<Option<PathBuf>> {
    namespaces_in(files, NamespaceRoots::default())
}

fn namespaces_in(
    files: &[(&Path, Option<&(String, bool)>)],
    mut projects: NamespaceRoots,
) -> Vec<Option<PathBuf>> {
    let placed: Vec<(Option<PathBuf>, Option<ImportRoot>)> = files
        .iter()
        .map(|(path, module)| (projects.of(path), import_root(path, *module)))
        .collect();
    // For each project and top-level name, the import roots that define it.
    let mut definers: HashMap<(&Option<PathBuf>, &str), BTreeSet<&Path>> = HashMap::new();
    for (project, named) in &placed {
        if let Some((root, name)) = named {
            definers
                .entry((project, name.as_str()))
                .or_default()
                .insert(root.as_path());
        }
    }
    let split: HashSet<(&Option<PathBuf>, &Path)> = definers
        .iter()
        .filter(|(_, roots)| roots.len() > 1)
        .flat_map(|((project, _), roots)| roots.iter().map(move |root| (*project, *root)))
        .collect();
    placed
        .iter()
        .map(|(project, named)| match named {
            Some((root, _)) if split.contains(&(project, root.as_path())) => Some(root.clone()),
            _ => project.clone(),
        })
        .collect()
}

/// The directory a module is named from, and the module's top-level name.
type ImportRoot = (PathBuf, String);

/// The [`ImportRoot`] of `path`, whose module is `module`.
fn import_root(path: &Path, module: Option<&(String, bool)>) -> Option<ImportRoot> {
    let (module, is_package) = module?;
    let is_package = *is_package;
    let parts = module.split('.').count();
    let root = path.ancestors().nth(parts + usize::from(is_package))?;
    let top = module.split('.').next()?.to_owned();
    Some((root.to_path_buf(), top))
}

/// Whether `directory` is where a Python project starts: it holds a `pyproject.toml` or a
/// `.git`.
pub fn is_project_root(directory: &Path) -> bool {
    directory.join("pyproject.toml").is_file() || directory.join(".git").exists()
}

/// A file's text, or as much of it as could be decoded and why the rest could not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceText {
    pub text: String,
    /// Set when the file is not UTF-8 Python source; `text` then holds the valid prefix only
    /// and the file is not analysed.
    pub problem: Option<DecodeProblem>,
}

/// Why a file could not be read as Python source, and where (a byte offset into `text`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeProblem {
    pub offset: usize,
    pub message: String,
}

/// Reads a file once; its text is kept for both phases of the check. Errors name the file as
/// `shown`, the way the report shows it.
pub fn read(path: &Path, shown: &Path) -> Result<SourceText> {
    let metadata =
        fs::metadata(path).with_context(|| format!("cannot read {}", shown.display()))?;
    check_size(shown, metadata.len())?;
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", shown.display()))?;
    // The file may have grown between the two calls.
    check_size(shown, bytes.len() as u64)?;
    Ok(decode(bytes))
}

/// Offsets are `u32` inside the analyzer, so larger files are refused here, once.
fn check_size(path: &Path, size: u64) -> Result<()> {
    if size > u64::from(u32::MAX) {
        bail!(
            "{} is {size} bytes; pt2lsp reads files up to 4 GiB",
            path.display()
        );
    }
    Ok(())
}

/// Decodes source bytes as UTF-8, describing the first problem instead of failing.
pub fn decode(bytes: Vec<u8>) -> SourceText {
    // `contains` searches a whole word at a time; the position is only needed for the message.
    if let Some(nul) = bytes
        .contains(&0)
        .then(|| bytes.iter().position(|byte| *byte == 0))
        .flatten()
    {
        // Python refuses source with NUL bytes too; the file is almost surely not source.
        return SourceText {
            text: String::new(),
            problem: Some(DecodeProblem {
                offset: 0,
                message: format!(
                    "File contains a NUL byte (at offset {nul}); it looks binary, not Python source"
                ),
            }),
        };
    }
    match String::from_utf8(bytes) {
        Ok(text) => SourceText {
            text,
            problem: None,
        },
        Err(error) => {
            let offset = error.utf8_error().valid_up_to();
            let mut bytes = error.into_bytes();
            let byte = bytes[offset];
            bytes.truncate(offset);
            let text = String::from_utf8(bytes).unwrap_or_default();
            let message = format!(
                "File is not valid UTF-8 (invalid byte 0x{byte:02X} at offset {offset}); \
                 pt2lsp reads Python source as UTF-8"
            );
            SourceText {
                text,
                problem: Some(DecodeProblem { offset, message }),
            }
        }
    }
}

/// `base.join(path)` with `.` and `..` removed lexically, so that `./a.py`, `a.py` and
/// `src/../a.py` are one file and print the same way.
pub fn absolute(base: &Path, path: &Path) -> PathBuf {
    let mut result = PathBuf::new();
    for component in base.join(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                result.pop();
            }
            other => result.push(other),
        }
    }
    result
}

/// How a path is shown: relative to `cwd` when under it, else absolute.
pub fn display_path(path: &Path, cwd: &Path) -> PathBuf {
    path.strip_prefix(cwd)
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_follow_packages() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        for file in [
            "pkg/__init__.py",
            "pkg/sub/__init__.py",
            "pkg/sub/mod.py",
            "a.py",
            "loose/b.py",
        ] {
            let path = root.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "").unwrap();
        }
        let name = |file: &str| module_name(&root.join(file));
        assert_eq!(
            name("pkg/sub/mod.py"),
            Some(("pkg.sub.mod".to_owned(), false))
        );
        assert_eq!(
            name("pkg/sub/__init__.py"),
            Some(("pkg.sub".to_owned(), true))
        );
        assert_eq!(name("pkg/__init__.py"), Some(("pkg".to_owned(), true)));
        assert_eq!(name("a.py"), Some(("a".to_owned(), false)));
        assert_eq!(name("loose/b.py"), Some(("b".to_owned(), false)));
    }

    /// PEP 420: a directory without `__init__.py` is a namespace package, so its files are
    /// importable by their dotted path from the directories above, up to the project's root.
    #[test]
    fn files_in_namespace_packages_have_their_dotted_paths_as_names_too() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().join("proj");
        for file in [
            "export.py",
            "wavenet/networks.py",
            "wavenet/utils/data.py",
            "ns/pkg/__init__.py",
            "ns/pkg/mod.py",
            "my-tools/wavenet/run.py",
            "pkg2/__init__.py",
        ] {
            let path = root.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "").unwrap();
        }
        fs::write(root.join("pyproject.toml"), "").unwrap();
        let names = |file: &str| namespace_names(&root.join(file));
        assert_eq!(names("wavenet/networks.py"), ["wavenet.networks"]);
        assert_eq!(
            names("wavenet/utils/data.py"),
            ["utils.data", "wavenet.utils.data"]
        );
        assert_eq!(names("ns/pkg/mod.py"), ["ns.pkg.mod"]);
        assert_eq!(names("ns/pkg/__init__.py"), ["ns.pkg"]);
        // The project's root is where names start; a directory Python cannot import stops them.
        assert!(names("export.py").is_empty());
        assert!(names("pkg2/__init__.py").is_empty());
        assert_eq!(names("my-tools/wavenet/run.py"), ["wavenet.run"]);
    }

    #[test]
    fn sibling_directories_that_name_the_same_module_are_namespaces_of_their_own() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let files = [
            "export.py",
            "pkg/__init__.py",
            "pkg/net.py",
            "gan/a/models.py",
            "gan/a/train.py",
            "gan/b/models.py",
            "tools/convert.py",
        ]
        .map(|file| root.join(file));
        fs::write(root.join("pyproject.toml"), "").unwrap();
        for path in &files {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "").unwrap();
        }
        let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let found = namespaces(&paths);
        let project = Some(root.clone());
        assert_eq!(
            found,
            [
                project.clone(),
                project.clone(),
                project.clone(),
                Some(root.join("gan/a")),
                Some(root.join("gan/a")),
                Some(root.join("gan/b")),
                project,
            ]
        );
        // The order of the paths changes nothing.
        let reversed: Vec<&Path> = paths.iter().rev().copied().collect();
        let mut again = namespaces(&reversed);
        again.reverse();
        assert_eq!(again, found);
    }

    #[test]
    fn undecodable_files_keep_the_valid_prefix() {
        let decoded = decode(b"x = 1\ny = '\xff'\n".to_vec());
        assert_eq!(decoded.text, "x = 1\ny = '");
        let problem = decoded.problem.unwrap();
        assert_eq!(problem.offset, 11);
        assert!(
            problem.message.contains("invalid byte 0xFF at offset 11"),
            "{}",
            problem.message
        );

        let binary = decode(b"\x7fELF\x02\x01\x00\x00".to_vec());
        assert!(
            binary
                .problem
                .unwrap()
                .message
                .contains("NUL byte (at offset 6)")
        );
        assert_eq!(decode(b"ok = 1\n".to_vec()).problem, None);
    }

    #[test]
    fn a_directory_the_walk_skips_is_a_project_of_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        for dir in [
            "scratch/deep",
            ".cache/corpus/pkg",
            "generated/sub",
            "src/pkg",
        ] {
            fs::create_dir_all(root.join(dir)).unwrap();
        }
        fs::write(root.join("pyproject.toml"), "").unwrap();
        fs::write(root.join(".gitignore"), "scratch/\n").unwrap();
        let exclude = Exclude::new(&["generated".to_owned()], &root).unwrap();
        let project = |dir: &str| project_root(&root.join(dir), &exclude).unwrap();
        // Git-ignored, hidden and excluded: the outermost skipped directory, from any depth.
        assert_eq!(project("scratch"), root.join("scratch"));
        assert_eq!(project("scratch/deep"), root.join("scratch"));
        assert_eq!(project(".cache/corpus/pkg"), root.join(".cache"));
        assert_eq!(project("generated/sub"), root.join("generated"));
        // What the walk reads belongs to the enclosing project.
        assert_eq!(project("src/pkg"), root);
        assert_eq!(project(""), root);
        // A project root under a skipped directory is nearer, and is its own.
        fs::write(root.join(".cache/corpus/pyproject.toml"), "").unwrap();
        assert_eq!(project(".cache/corpus/pkg"), root.join(".cache/corpus"));
    }

    #[test]
    fn excludes_match_names_and_rooted_paths() {
        let root = Path::new("/project");
        let exclude = Exclude::new(
            &[
                "build".to_owned(),
                "models/gen/*".to_owned(),
                "*_pb2.py".to_owned(),
            ],
            root,
        )
        .unwrap();
        assert!(exclude.is_excluded(Path::new("/project/build")));
        assert!(exclude.is_excluded(Path::new("/project/deep/build")));
        assert!(exclude.is_excluded(Path::new("/project/models/gen/x.py")));
        assert!(!exclude.is_excluded(Path::new("/project/other/models/gen/x.py")));
        assert!(exclude.is_excluded(Path::new("/project/a/msg_pb2.py")));
        assert!(!exclude.is_excluded(Path::new("/project/a/builder.py")));
    }

    #[test]
    fn paths_are_normalised_lexically() {
        let cwd = Path::new("/work/project");
        assert_eq!(
            absolute(cwd, Path::new("./a/../b.py")),
            Path::new("/work/project/b.py")
        );
        assert_eq!(absolute(cwd, Path::new("/x/./y")), Path::new("/x/y"));
        assert_eq!(
            display_path(Path::new("/work/project/b.py"), cwd),
            Path::new("b.py")
        );
        assert_eq!(
            display_path(Path::new("/work/other.py"), cwd),
            Path::new("/work/other.py")
        );
    }
}
