//! The workspace's Python files: discovery, dotted module names and summaries for the index.
//!
//! Which files count, and what a file's module is, is decided by `pt2lsp check`'s own
//! functions (`pt2lsp_project::walk`): `.gitignore` and hidden files are skipped, and so are the
//! CLI's default excludes and the `exclude` patterns of the root's project, while its
//! `extend-include` adds files. The server can so name the module of an unsaved or excluded
//! file it has open exactly as the command line would.

use std::path::{Path, PathBuf};

use pt2lsp_analyzer::{ModuleSummary, SourceFile};

use pt2lsp_project::walk::{self, DEFAULT_EXCLUDE, Exclude, Include};

use super::settings::Project;

/// Files larger than this are not summarised: no hand-written model file is this big, and a
/// generated one would only slow the scan down.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Where a file sits in its package, as the analyzer wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModulePlace {
    pub module: String,
    pub is_package: bool,
    /// Its longest name through the namespace packages above it
    /// (`pt2lsp_analyzer::SourceFile::namespace`).
    pub namespace: Option<String>,
}

impl ModulePlace {
    /// The file at this place, holding `text`, as the analyzer reads it.
    pub fn file<'a>(&'a self, text: &'a str) -> SourceFile<'a> {
        SourceFile {
            text,
            module: Some(&self.module),
            is_package: self.is_package,
            namespace: self.namespace.as_deref(),
        }
    }
}

/// The dotted module name of a Python file, as `pt2lsp check` names it
/// ([`walk::module_name`]: the one function for it), and its longest namespace name
/// ([`walk::namespace_names`], nearest first).
pub fn module_place(path: &Path) -> Option<ModulePlace> {
    let (module, is_package) = walk::module_name(path)?;
    let namespace = walk::namespace_names(path).pop();
    Some(ModulePlace {
        module,
        is_package,
        namespace,
    })
}

/// `summary` of the file at `path` with the other names Python imports it by through
/// namespace packages, as `pt2lsp check` names them ([`walk::namespace_names`]).
pub fn with_namespace_names(mut summary: ModuleSummary, path: &Path) -> ModuleSummary {
    summary.namespace_names = walk::namespace_names(path);
    summary
}

/// Whether the index takes the file: a Python module or stub ([`walk::is_python_source`]).
pub fn is_python(path: &Path) -> bool {
    walk::is_python_source(path)
}

/// One workspace root and what its project excludes from the index.
#[derive(Debug, Clone)]
pub struct Scope {
    pub root: PathBuf,
    /// The patterns and the directory they are anchored at, to tell whether a change to a
    /// `pyproject.toml` changed the scope.
    patterns: (Vec<String>, PathBuf),
    exclude: Exclude,
    /// The project's `extend-include`: files the walk takes besides Python sources.
    include: Include,
}

impl Scope {
    /// The scope of `root` under its project's settings (the nearest `[tool.pt2lsp]` at or above
    /// it, as the CLI finds it); bad patterns are reported through `warn` and left out.
    pub fn new(root: &Path, project: Option<&Project>, warn: &mut dyn FnMut(String)) -> Self {
        let anchor = project
            .and_then(|project| project.pyproject.parent())
            .unwrap_or(root)
            .to_path_buf();
        let defaults: Vec<String> = DEFAULT_EXCLUDE.iter().map(|&p| p.to_owned()).collect();
        let mut patterns = defaults.clone();
        if let Some(project) = project {
            patterns.extend(project.options.exclude.iter().cloned());
        }
        let exclude = Exclude::new(&patterns, &anchor).unwrap_or_else(|error| {
            warn(format!(
                "{error:#}; indexing without the project's excludes"
            ));
            patterns.clone_from(&defaults);
            Exclude::new(&defaults, &anchor).expect("the default excludes are valid globs")
        });
        let extra: &[String] = project.map_or(&[], |project| &project.options.extend_include);
        let include = Include::new(extra, &anchor).unwrap_or_else(|error| {
            warn(format!(
                "{error:#}; indexing without the project's extend-include"
            ));
            Include::new(&[], &anchor).expect("no pattern is a valid set")
        });
        // A change to either list changes the scope.
        patterns.push("--extend-include".to_owned());
        patterns.extend(extra.iter().cloned());
        Self {
            root: root.to_path_buf(),
            patterns: (patterns, anchor),
            exclude,
            include,
        }
    }

    pub fn same_patterns(&self, other: &Scope) -> bool {
        self.root == other.root && self.patterns == other.patterns
    }

    /// The outermost directory between the root and `directory` (itself included) that the
    /// root's walk skips, if any.
    pub fn skipped_above(&self, directory: &Path) -> Option<PathBuf> {
        let inner = walk::within_walk(&self.root, directory, &self.exclude);
        (inner != self.root).then(|| inner.to_path_buf())
    }

    /// The patterns the root's walk leaves out.
    pub fn exclude(&self) -> &Exclude {
        &self.exclude
    }

    /// Whether `path` lies under this root in an excluded file or directory.
    pub fn excludes(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
            && path
                .ancestors()
                .take_while(|ancestor| *ancestor != self.root)
                .any(|ancestor| self.exclude.is_excluded(ancestor))
    }

    /// Every Python file under the root that is not excluded, found by the walk `pt2lsp
    /// check` makes (`walk::discover`: `.gitignore`, hidden files, `exclude` and
    /// `extend-include`); notebooks are not modules, so the index leaves them out.
    pub fn python_files(&self) -> Vec<PathBuf> {
        let found = walk::discover(
            std::slice::from_ref(&self.root),
            &self.exclude,
            &self.include,
        );
        for error in found.errors.iter().chain(&found.warnings) {
            super::log_stderr(&format!("workspace scan: {error}"));
        }
        found
            .files
            .into_iter()
            .filter(|path| !walk::is_notebook(path))
            .collect()
    }
}

/// Reads and summarises one file; `None` (with a line on stderr) for files that cannot be read,
/// are not UTF-8, are too large, or have no importable name.
pub fn summarize_file(path: &Path) -> Option<ModuleSummary> {
    let place = module_place(path)?;
    let size = std::fs::metadata(path).ok()?.len();
    if size > MAX_FILE_BYTES {
        super::log_stderr(&format!(
            "{}: {size} bytes, too large to index",
            path.display()
        ));
        return None;
    }
    match std::fs::read_to_string(path) {
        Ok(text) => Some(with_namespace_names(
            pt2lsp_analyzer::summarize_file(place.file(&text)),
            path,
        )),
        Err(error) => {
            super::log_stderr(&format!("{}: not indexed: {error}", path.display()));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_follow_packages() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("models").join("blocks");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(dir.path().join("models/__init__.py"), "").unwrap();
        std::fs::write(package.join("__init__.py"), "").unwrap();
        let place = |path: &Path| module_place(path).map(|place| (place.module, place.is_package));
        assert_eq!(
            place(&package.join("attn.py")),
            Some(("models.blocks.attn".to_owned(), false))
        );
        assert_eq!(
            place(&package.join("__init__.py")),
            Some(("models.blocks".to_owned(), true))
        );
        assert_eq!(
            place(&dir.path().join("train.py")),
            Some(("train".to_owned(), false))
        );
        // A script no import can name is still named, as `pt2lsp check` names it: its export
        // call makes it an entrypoint of the index.
        assert_eq!(
            place(&dir.path().join("my-script.py")),
            Some(("my-script".to_owned(), false))
        );
    }

    #[test]
    fn scopes_skip_default_and_project_excludes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "a.py",
            "venv/lib.py",
            "gen/x.py",
            "src/gen/y.py",
            "src/models/legacy_1.py",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        let project = Project {
            pyproject: root.join("pyproject.toml"),
            options: pt2lsp_project::config::Config {
                exclude: vec!["gen/*".to_owned(), "src/models/legacy_*.py".to_owned()],
                ..Default::default()
            },
        };
        let scope = Scope::new(root, Some(&project), &mut |w| panic!("{w}"));
        let mut files: Vec<_> = scope
            .python_files()
            .iter()
            .map(|path| {
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        files.sort();
        assert_eq!(files, ["a.py", "src/gen/y.py"]);
        assert!(scope.excludes(&root.join("venv/lib.py")));
        assert!(scope.excludes(&root.join("src/models/legacy_1.py")));
        assert!(!scope.excludes(&root.join("src/gen/y.py")));
        assert!(!scope.excludes(Path::new("/elsewhere/venv/x.py")));
    }
}
