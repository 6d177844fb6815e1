//! Settings: the editor's (`initializationOptions`, `didChangeConfiguration`) over the project's
//! (`[tool.pt2lsp]` in the nearest `pyproject.toml` that has one).
//!
//! Both sources use the same keys with the same meanings, so both are read by one parser from a
//! JSON value; a TOML table converts to one losslessly for these keys. A bad value is reported
//! and skipped: a typo in one key must not throw the others away.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pt2lsp_analyzer::{RuleSelector, Settings};
use serde_json::Value;

/// Whether the tracer runs the real exporter, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceMode {
    OnSave,
    Off,
}

impl TraceMode {
    fn as_str(self) -> &'static str {
        match self {
            TraceMode::OnSave => "on-save",
            TraceMode::Off => "off",
        }
    }
}

/// One layer of settings; `None` leaves a key to the layer below.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    pub python: Option<String>,
    pub trace: Option<TraceMode>,
    pub strict: Option<bool>,
    pub timeout: Option<f64>,
    pub select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
}

impl Options {
    /// Reads the keys pt2lsp knows from an object, either at its top level or under `pt2lsp`
    /// (VS Code nests a section's settings under its name). Returns the warnings to show.
    pub fn from_json(value: &Value) -> (Self, Vec<String>) {
        let mut warnings = Vec::new();
        let object = match value.get("pt2lsp").unwrap_or(value) {
            Value::Object(object) => object,
            Value::Null => return (Self::default(), warnings),
            _ => {
                warnings.push("settings must be an object; ignoring them".to_owned());
                return (Self::default(), warnings);
            }
        };
        let mut warn = |key: &str, expected: &str| {
            warnings.push(format!("ignoring setting `{key}`: expected {expected}"));
        };
        let mut options = Self::default();
        for (key, value) in object {
            match key.as_str() {
                "python" => match value.as_str() {
                    Some(python) if !python.is_empty() => options.python = Some(python.to_owned()),
                    _ => warn(key, "a path to a Python interpreter"),
                },
                "trace" => match value.as_str() {
                    Some("on-save") => options.trace = Some(TraceMode::OnSave),
                    Some("off") => options.trace = Some(TraceMode::Off),
                    _ => warn(key, "\"on-save\" or \"off\""),
                },
                "strict" => match value.as_bool() {
                    Some(strict) => options.strict = Some(strict),
                    None => warn(key, "true or false"),
                },
                "timeout" => match value.as_f64() {
                    Some(seconds) if seconds > 0.0 && seconds.is_finite() => {
                        options.timeout = Some(seconds);
                    }
                    _ => warn(key, "a positive number of seconds"),
                },
                "select" | "ignore" => {
                    let codes = value.as_array().and_then(|items| {
                        items
                            .iter()
                            .map(|item| item.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>()
                    });
                    match codes {
                        Some(codes) if key == "select" => options.select = Some(codes),
                        Some(codes) => options.ignore = Some(codes),
                        None => warn(key, "a list of rule codes such as [\"PT1\"]"),
                    }
                }
                // Entrypoints and keys of later versions belong to other readers.
                _ => {}
            }
        }
        (options, warnings)
    }

    /// Reads `[tool.pt2lsp]` from a `pyproject.toml`'s text; `Ok(None)` when it has no such table.
    pub fn from_pyproject(text: &str) -> Result<Option<(Self, Vec<String>)>, String> {
        let document: toml::Table =
            toml::from_str(text).map_err(|error| error.message().to_owned())?;
        let Some(table) = document.get("tool").and_then(|tool| tool.get("pt2lsp")) else {
            return Ok(None);
        };
        let value = serde_json::to_value(table).map_err(|error| error.to_string())?;
        Ok(Some(Self::from_json(&value)))
    }

    /// This layer, with unset keys taken from `fallback`.
    #[must_use]
    pub fn or(&self, fallback: &Options) -> Options {
        Options {
            python: self.python.clone().or_else(|| fallback.python.clone()),
            trace: self.trace.or(fallback.trace),
            strict: self.strict.or(fallback.strict),
            timeout: self.timeout.or(fallback.timeout),
            select: self.select.clone().or_else(|| fallback.select.clone()),
            ignore: self.ignore.clone().or_else(|| fallback.ignore.clone()),
        }
    }
}

/// The settings one file is analysed with.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub analyzer: Settings,
    /// The interpreter the tracer will run; `None` means `$VIRTUAL_ENV`, then `python3`.
    pub python: Option<String>,
    pub trace: TraceMode,
    pub timeout_seconds: f64,
    /// Selectors that match no rule, to report.
    pub unknown_selectors: Vec<String>,
    /// The `pyproject.toml` whose `[tool.pt2lsp]` applied, if any.
    pub project: Option<PathBuf>,
}

impl Resolved {
    pub fn new(options: &Options) -> Self {
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
        };
        Self {
            analyzer,
            python: options.python.clone(),
            trace: options.trace.unwrap_or(TraceMode::OnSave),
            timeout_seconds: options.timeout.unwrap_or(60.0),
            unknown_selectors,
            project: None,
        }
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
            "strict={} select=[{}] ignore=[{}] trace={} timeout={}s python={}",
            self.analyzer.strict,
            join(&self.analyzer.select),
            join(&self.analyzer.ignore),
            self.trace.as_str(),
            self.timeout_seconds,
            self.python.as_deref().unwrap_or("(default)"),
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
    pub options: Options,
}

/// Finds the project a file belongs to: the nearest `pyproject.toml` above it with a
/// `[tool.pt2lsp]` table. `cache` remembers the answer per directory; it is cleared whenever a
/// `pyproject.toml` changes. Unreadable or invalid files are reported through `warn`.
pub fn find_project(
    dir: &Path,
    cache: &dashmap::DashMap<PathBuf, Option<std::sync::Arc<Project>>>,
    warn: &mut dyn FnMut(String),
) -> Option<std::sync::Arc<Project>> {
    if let Some(found) = cache.get(dir) {
        return found.clone();
    }
    let candidate = dir.join("pyproject.toml");
    let here = match std::fs::read_to_string(&candidate) {
        Ok(text) => match Options::from_pyproject(&text) {
            Ok(Some((options, warnings))) => {
                for warning in warnings {
                    warn(format!("{}: {warning}", candidate.display()));
                }
                Some(std::sync::Arc::new(Project {
                    pyproject: candidate,
                    options,
                }))
            }
            Ok(None) => None,
            Err(error) => {
                warn(format!(
                    "{}: invalid TOML, ignoring it: {error}",
                    candidate.display()
                ));
                None
            }
        },
        Err(_) => None,
    };
    let found = here.or_else(|| {
        dir.parent()
            .and_then(|parent| find_project(parent, cache, warn))
    });
    cache.insert(dir.to_owned(), found.clone());
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn editor_settings_override_the_project_and_bad_values_are_skipped() {
        let (editor, warnings) = Options::from_json(
            &json!({"pt2lsp": {"strict": true, "trace": "sometimes", "ignore": ["PT2"]}}),
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let (project, _) = Options::from_pyproject(
            "[tool.pt2lsp]\nstrict = false\ntimeout = 30\nselect = [\"PT1\", \"E501\"]\n",
        )
        .unwrap()
        .unwrap();
        let resolved = Resolved::new(&editor.or(&project));
        assert!(resolved.analyzer.strict);
        assert!((resolved.timeout_seconds - 30.0).abs() < f64::EPSILON);
        assert_eq!(resolved.analyzer.select.len(), 1);
        assert_eq!(resolved.analyzer.ignore[0].as_str(), "PT2");
        assert_eq!(resolved.unknown_selectors, ["E501"]);
    }

    #[test]
    fn pyproject_without_the_table_is_no_project() {
        assert_eq!(
            Options::from_pyproject("[tool.ruff]\nline-length = 100\n"),
            Ok(None)
        );
        assert!(Options::from_pyproject("[tool.pt2lsp\n").is_err());
    }
}
