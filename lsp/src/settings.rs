//! Settings: the editor's (`initializationOptions`, `didChangeConfiguration`) over the project's
//! (`[tool.pt2lsp]` in the nearest `pyproject.toml` that has one).
//!
//! Both sources use the same keys with the same meanings and are read by the one reader the CLI
//! uses too ([`config::from_table`]); the editor's JSON is turned into a TOML table first. The
//! server's policy for a bad value is to report it and skip the key: a typo in one key must not
//! throw the others away.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pt2lsp_analyzer::{RuleSelector, Settings};
use serde_json::Value;

use pt2lsp_project::config::{self, Config, TraceMode};

/// Reads the editor's settings, either at the top level of `value` or under `pt2lsp` (VS Code
/// nests a section's settings under its name). Returns them and the warnings to show.
pub fn from_editor(value: &Value) -> (Config, Vec<String>) {
    let object = match value.get("pt2lsp").unwrap_or(value) {
        Value::Object(object) => object,
        Value::Null => return (Config::default(), Vec::new()),
        _ => {
            return (
                Config::default(),
                vec!["editor settings must be an object; ignoring them".to_owned()],
            );
        }
    };
    let mut table = toml::Table::new();
    let mut warnings = Vec::new();
    for (key, value) in object {
        // Editors send `null` for a setting the user left unset.
        if value.is_null() {
            continue;
        }
        // Editor settings are camelCase by custom (`pt2lsp.unsafeFixes`,
        // `pt2lsp.memoryLimit`); the table's key is spelled as in pyproject.toml.
        let key = kebab_case(key);
        match to_toml(value) {
            Some(value) => {
                table.insert(key, value);
            }
            None => warnings.push(format!(
                "editor settings: pt2lsp.{key}: contains null; ignoring it"
            )),
        }
    }
    let config = config::from_table(&table, None);
    warnings.extend(skipped(&config));
    (config, warnings)
}

/// `memoryLimit` as `memory-limit`; a key without capitals stays as it is.
fn kebab_case(key: &str) -> String {
    let mut kebab = String::with_capacity(key.len() + 2);
    for character in key.chars() {
        if character.is_ascii_uppercase() {
            kebab.push('-');
            kebab.push(character.to_ascii_lowercase());
        } else {
            kebab.push(character);
        }
    }
    kebab
}

/// The warnings of one settings source, old spellings and bad values included: the server
/// reads the first and skips the second.
fn skipped(config: &Config) -> impl Iterator<Item = String> + '_ {
    config
        .warnings
        .iter()
        .chain(&config.deprecations)
        .cloned()
        .chain(
            config
                .errors
                .iter()
                .map(|error| format!("{error}; ignoring it")),
        )
}

/// A JSON value as TOML; `None` when it holds a `null`, which TOML cannot say. Object members
/// that are `null` are left out, as unset.
fn to_toml(value: &Value) -> Option<toml::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(flag) => toml::Value::Boolean(*flag),
        Value::Number(number) => match number.as_i64() {
            Some(integer) => toml::Value::Integer(integer),
            None => toml::Value::Float(number.as_f64()?),
        },
        Value::String(text) => toml::Value::String(text.clone()),
        Value::Array(items) => {
            toml::Value::Array(items.iter().map(to_toml).collect::<Option<Vec<_>>>()?)
        }
        Value::Object(object) => toml::Value::Table(
            object
                .iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, value)| Some((key.clone(), to_toml(value)?)))
                .collect::<Option<toml::Table>>()?,
        ),
    })
}

/// `max-file-size` when nothing sets it: 2 MiB, far beyond any hand-written model file.
pub const DEFAULT_MAX_FILE_BYTES: usize = 2 * 1024 * 1024;

/// The settings one file is analysed with.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub analyzer: Settings,
    /// The interpreter the tracer will run; `None` means the Python pt2lsp was
    /// pip-installed into, then `$VIRTUAL_ENV`, then `python3`.
    pub python: Option<String>,
    /// Entrypoints' analyses follow calls into the interpreter's installed libraries
    /// (`follow-libraries`, on by default).
    pub follow_libraries: bool,
    pub trace: TraceMode,
    pub timeout_seconds: f64,
    /// "Fix all" applies unsafe fixes too (`unsafe-fixes`).
    pub unsafe_fixes: bool,
    /// Inferred tensor shapes are shown as inlay hints (`inlay-hints`, on by default).
    pub inlay_hints: bool,
    /// An open document larger than this (`max-file-size`, in KiB; 2 MiB by default) gets only
    /// its syntax checked as you type: the analysis of a huge generated file would lag.
    pub max_file_bytes: usize,
    /// MiB a trace job may take (`memory-limit`); `None` means the machine's memory.
    pub memory_limit_mb: Option<u64>,
    /// The trace cache's directory relative to the project root (`cache-dir`).
    pub cache_dir: Option<String>,
    /// `start-method`; `None` for `PT2LSP_START_METHOD` or the platform's.
    pub start_method: Option<pt2lsp_tracer::worker::StartMethod>,
    /// Selectors that match no rule, to report.
    pub unknown_selectors: Vec<String>,
    /// The `pyproject.toml` whose `[tool.pt2lsp]` applied, if any.
    pub project: Option<PathBuf>,
    /// `[[tool.pt2lsp.entrypoints]]`, as written.
    pub entrypoints: Vec<config::Entrypoint>,
    /// Deployment targets every trace lowers its program for (`targets`).
    pub targets: Vec<pt2lsp_tracer::targets::DeploymentTarget>,
}

impl Resolved {
    pub fn new(options: &Config) -> Self {
        let mut unknown_selectors = Vec::new();
        let mut parse = |codes: &[String]| {
            codes
                .iter()
                .filter_map(|code| {
                    let selector = RuleSelector::parse(code);
                    if selector.is_none() {
                        unknown_selectors.push(code.clone());
                    }
                    selector
                })
                .collect::<Vec<_>>()
        };
        let defaults = Settings::default();
        let analyzer = Settings {
            strict: options.strict.unwrap_or(defaults.strict),
            select: options
                .select
                .as_deref()
                .map_or(defaults.select, &mut parse),
            ignore: options
                .ignore
                .as_deref()
                .map_or(defaults.ignore, &mut parse),
            targets: options
                .targets
                .iter()
                .flatten()
                .map(|target| target.as_str().to_owned())
                .collect(),
            // By module, which needs the project's directory: `Session::resolve_settings`.
            entrypoint_targets: Vec::new(),
            scripts_with_arguments: Vec::new(),
        };
        Self {
            analyzer,
            python: options.python.clone(),
            follow_libraries: options.follow_libraries.unwrap_or(true),
            // Tracing runs the user's code and takes seconds: on save, not on every open.
            trace: options.trace.unwrap_or(TraceMode::OnSave),
            timeout_seconds: options.timeout.unwrap_or(60.0),
            unsafe_fixes: options.unsafe_fixes.unwrap_or(false),
            inlay_hints: options.inlay_hints.unwrap_or(true),
            max_file_bytes: options
                .max_file_size_kib
                .and_then(|kib| usize::try_from(kib.saturating_mul(1024)).ok())
                .unwrap_or(DEFAULT_MAX_FILE_BYTES),
            memory_limit_mb: options.memory_limit,
            cache_dir: options.cache_dir.clone(),
            start_method: options.start_method,
            unknown_selectors,
            project: None,
            entrypoints: options.entrypoints.clone().unwrap_or_default(),
            targets: options.targets.clone().unwrap_or_default(),
        }
    }

    /// The directory of the `pyproject.toml` whose settings applied: the project's root, which
    /// relative paths in it (`python`, `cache-dir`) are relative to.
    pub fn project_dir(&self) -> Option<PathBuf> {
        self.project
            .as_deref()
            .and_then(std::path::Path::parent)
            .map(std::path::Path::to_path_buf)
    }

    /// The configured entrypoints the tracer can run (those with a `model`).
    pub fn entrypoint_specs(&self) -> Vec<pt2lsp_tracer::EntrypointSpec> {
        self.entrypoints
            .iter()
            .filter_map(pt2lsp_tracer::export::spec_of)
            .collect()
    }

    /// One line for the log, so a user can see which settings won.
    pub fn describe(&self) -> String {
        let join = |selectors: &[RuleSelector]| {
            selectors
                .iter()
                .map(RuleSelector::as_str)
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut line = format!(
            "strict={} select=[{}] ignore=[{}] trace={} timeout={}s python={} unsafe-fixes={}",
            self.analyzer.strict,
            join(&self.analyzer.select),
            join(&self.analyzer.ignore),
            self.trace.as_str(),
            self.timeout_seconds,
            self.python.as_deref().unwrap_or("(default)"),
            self.unsafe_fixes,
        );
        if let Some(project) = &self.project {
            let _ = write!(line, " project={}", project.display());
        }
        if !self.unknown_selectors.is_empty() {
            let _ = write!(
                line,
                "; unknown rule selectors ignored: {}",
                self.unknown_selectors.join(", ")
            );
        }
        line
    }
}

/// The `[tool.pt2lsp]` of one project.
#[derive(Debug, Clone)]
pub struct Project {
    pub pyproject: PathBuf,
    pub options: Config,
}

/// The project each directory belongs to, remembered until a `pyproject.toml` changes.
///
/// A look-up reads files outside the lock; an answer read before [`ProjectCache::forget`] is
/// not remembered after it, so an analysis that started on the old `pyproject.toml` cannot
/// put its stale settings back once the change has been announced.
#[derive(Debug, Default)]
pub struct ProjectCache {
    entries: Mutex<Remembered>,
}

/// The number of [`ProjectCache::forget`] calls, and the answers found since the last one.
type Remembered = (u64, HashMap<PathBuf, Option<Arc<Project>>>);

impl ProjectCache {
    /// Forgets every answer; the next look-up reads `pyproject.toml` files again.
    pub fn forget(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.0 += 1;
            entries.1.clear();
        }
    }

    /// Finds the project a file in `dir` belongs to: the nearest `pyproject.toml` at or above
    /// `dir` with a `[tool.pt2lsp]` table. Unreadable or invalid files are reported through
    /// `warn` and passed over, as are bad values in a good file.
    pub fn find(&self, dir: &Path, warn: &mut dyn FnMut(String)) -> Option<Arc<Project>> {
        let generation = {
            let entries = self.entries.lock().ok()?;
            if let Some(found) = entries.1.get(dir) {
                return found.clone();
            }
            entries.0
        };
        let here = match config::in_directory(dir) {
            Ok(Some(options)) => {
                skipped(&options).for_each(&mut *warn);
                Some(Arc::new(Project {
                    pyproject: dir.join("pyproject.toml"),
                    options,
                }))
            }
            Ok(None) => None,
            Err(error) => {
                warn(format!("{error:#}; ignoring it"));
                None
            }
        };
        let found = here.or_else(|| dir.parent().and_then(|parent| self.find(parent, warn)));
        if let Ok(mut entries) = self.entries.lock()
            && entries.0 == generation
        {
            entries.1.insert(dir.to_owned(), found.clone());
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn editor_settings_override_the_project_and_bad_values_are_skipped() {
        let (editor, warnings) = from_editor(
            &json!({"pt2lsp": {"strict": true, "trace": "sometimes", "ignore": ["PT2"], "python": null}}),
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("pt2lsp.trace"), "{warnings:?}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[tool.pt2lsp]\nstrict = false\ntimeout = 30\nselect = [\"PT1\", \"E501\"]\n",
        )
        .unwrap();
        let cache = ProjectCache::default();
        let project = cache
            .find(&dir.path().join("src"), &mut |w| panic!("{w}"))
            .expect("the project above");
        let resolved = Resolved::new(&editor.or(&project.options));
        assert!(resolved.analyzer.strict);
        assert!((resolved.timeout_seconds - 30.0).abs() < f64::EPSILON);
        assert_eq!(resolved.analyzer.select.len(), 1);
        assert_eq!(resolved.analyzer.ignore[0].as_str(), "PT2");
        assert_eq!(resolved.unknown_selectors, ["E501"]);
        assert!(!resolved.unsafe_fixes);
        let (editor, warnings) = from_editor(&json!({"unsafeFixes": true}));
        assert!(warnings.is_empty(), "{warnings:?}");
        let (editor_keys, warnings) =
            from_editor(&json!({"memoryLimit": 512, "outDir": "out", "memory_limit": 1}));
        assert_eq!(editor_keys.memory_limit, Some(512));
        assert_eq!(editor_keys.out_dir.as_deref(), Some("out"));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("`pt2lsp.memory_limit`"),
            "{warnings:?}"
        );
        assert!(Resolved::new(&editor.or(&project.options)).unsafe_fixes);
    }

    #[test]
    fn pyproject_without_the_table_is_no_project_and_broken_ones_warn() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(
            inner.join("pyproject.toml"),
            "[tool.ruff]\nline-length = 100\n",
        )
        .unwrap();
        let cache = ProjectCache::default();
        let mut warnings = Vec::new();
        assert!(cache.find(&inner, &mut |w| warnings.push(w)).is_none());
        assert!(warnings.is_empty(), "{warnings:?}");
        std::fs::write(inner.join("pyproject.toml"), "[tool.pt2lsp\n").unwrap();
        let cache = ProjectCache::default();
        assert!(cache.find(&inner, &mut |w| warnings.push(w)).is_none());
        assert!(warnings[0].contains("not valid TOML"), "{warnings:?}");
    }
}
