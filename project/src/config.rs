//! `[tool.pt2lsp]`: finding it, reading it, and saying precisely what is wrong.
//!
//! The one reader of pt2lsp's settings, for `pt2lsp check` and `pt2lsp serve` alike: a
//! `pyproject.toml`'s table, a `pt2lsp.toml`, or the editor's settings (which the server turns
//! into the same kind of table) go through [`from_table`]. It reads every documented key and
//! records each problem with the file and the key (`pyproject.toml: tool.pt2lsp.strict: must be
//! true or false, not the string "yes"`) instead of stopping at the first, so each program can
//! choose its policy: the CLI refuses to run on any error ([`Config::validated`]); the server
//! skips the bad key with a warning, since a typo in one key must not throw the others away.
//!
//! The table is read by hand rather than through serde so that every message names the key.
//!
//! Keys are kebab-case, as in ruff (`memory-limit`, `out-dir`, `unsafe-fixes`, and
//! `example-args` in an entrypoint table). The spellings with underscores that earlier versions
//! read (`memory_limit`, `out_dir`) still work, each with a deprecation in
//! [`Config::deprecations`], which the CLI prints even under `-q`: a warning the user never
//! sees cannot get the file fixed before the old spelling goes away.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use toml::{Table, Value};

use crate::tracing::DeploymentTarget;
use crate::tracing::StartMethod;

mod places;

pub use places::TablePlace;

/// Every documented key of `[tool.pt2lsp]`.
pub const KEYS: [&str; 19] = [
    "python",
    "follow-libraries",
    "trace",
    "timeout",
    "memory-limit",
    "start-method",
    "cache-dir",
    "strict",
    "select",
    "ignore",
    "exclude",
    "extend-include",
    "entrypoints",
    "out-dir",
    "targets",
    "fix",
    "unsafe-fixes",
    "inlay-hints",
    "max-file-size",
];

/// The keys of one `[[tool.pt2lsp.entrypoints]]` table.
const ENTRYPOINT_KEYS: [&str; 10] = [
    "name",
    "model",
    "script",
    "args",
    "example-args",
    "example-kwargs",
    "dynamic-shapes",
    "strict",
    "fake-weights",
    "targets",
];

/// Whether the tracer runs the real exporter, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceMode {
    /// The editor traces when a file is saved (and on `pt2lsp.retrace`); the default.
    OnSave,
    /// As `OnSave`, and also when a file is opened.
    OnOpenAndSave,
    Off,
}

impl TraceMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceMode::OnSave => "on-save",
            TraceMode::OnOpenAndSave => "on-open-and-save",
            TraceMode::Off => "off",
        }
    }
}

/// One `[[tool.pt2lsp.entrypoints]]`: how the tracer builds and exports a model. Each value is
/// a `module:expression` reference, resolved by the tracer; a missing key is the tracer's to
/// report (PT503 entrypoint-error), with the entrypoint's name, not a reason to refuse the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entrypoint {
    pub name: Option<String>,
    pub model: Option<String>,
    pub example_args: Option<String>,
    pub example_kwargs: Option<String>,
    pub dynamic_shapes: Option<String>,
    pub strict: Option<bool>,
    /// `fake-weights`: build the model under `FakeTensorMode` (no weights allocated).
    pub fake_weights: Option<bool>,
    /// Deployment targets this entrypoint is lowered for, besides `[tool.pt2lsp] targets`.
    pub targets: Option<Vec<DeploymentTarget>>,
    /// A script whose export calls are entrypoints (relative to the project root), and the
    /// command line it is run with (`args`) when the tracer runs it to its export calls.
    pub script: Option<String>,
    pub args: Option<Vec<String>>,
    /// Where the table is written, when it came from a file: a string the tracer cannot
    /// resolve is reported on its key's line there.
    pub place: Option<TablePlace>,
}

/// The settings of one source: a configuration file or the editor. `None` (or empty) leaves a
/// key to the defaults or, in the server, to the layer below.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The file the settings came from; `None` when there was none, or for editor settings.
    pub path: Option<PathBuf>,
    /// The interpreter the tracer runs; unset means the Python pt2lsp was
    /// pip-installed into, then `$VIRTUAL_ENV`, then `python3` on PATH.
    pub python: Option<String>,
    /// The static check follows calls into the interpreter's installed libraries (on unless
    /// `false`).
    pub follow_libraries: Option<bool>,
    pub trace: Option<TraceMode>,
    /// Seconds per entrypoint.
    pub timeout: Option<f64>,
    /// MiB of address space a trace job may take beyond the worker's own.
    pub memory_limit: Option<u64>,
    /// How the tracer starts job processes (`fork` or `spawn`; the platform's when unset).
    pub start_method: Option<StartMethod>,
    /// Where trace results are cached, relative to the configuration's directory
    /// (`.pt2lsp_cache` unless set; see `tracer::cache`).
    pub cache_dir: Option<String>,
    pub strict: Option<bool>,
    pub select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
    pub exclude: Vec<String>,
    /// More files a directory walk checks as Python (see `walk::Include`).
    pub extend_include: Vec<String>,
    pub entrypoints: Option<Vec<Entrypoint>>,
    /// Where `.pt2` files are written.
    pub out_dir: Option<String>,
    /// Deployment targets every traced entrypoint is lowered for once it exports
    /// (`tracer::targets`; none unless set).
    pub targets: Option<Vec<DeploymentTarget>>,
    /// `pt2lsp check` applies fixes as if `--fix` were given.
    pub fix: Option<bool>,
    /// Unsafe fixes are applied too (`--unsafe-fixes`; the editor's "Fix all" as well).
    pub unsafe_fixes: Option<bool>,
    /// The editor shows inferred tensor shapes as inlay hints (on unless `false`).
    pub inlay_hints: Option<bool>,
    /// KiB: an open document larger than this gets only its syntax checked as you type.
    pub max_file_size_kib: Option<u64>,
    /// Problems worth telling the user that do not stop the run (unknown keys).
    pub warnings: Vec<String>,
    /// Keys spelled the old way (`memory_limit` for `memory-limit`): read, and to be shown
    /// even when other warnings are not.
    pub deprecations: Vec<String>,
    /// Values of the wrong type or out of range, each naming its key; the key stays unset.
    pub errors: Vec<String>,
}

impl Config {
    /// The directory relative `exclude` patterns are anchored to.
    pub fn root(&self) -> Option<&Path> {
        self.path.as_deref().and_then(Path::parent)
    }

    /// The configuration with each entrypoint table's place in `text`, the text of the file
    /// it was read from.
    fn placed(mut self, text: &str) -> Self {
        if let (Some(path), Some(entrypoints)) = (&self.path, &mut self.entrypoints) {
            let places = places::entrypoint_places(text, path);
            for (entrypoint, place) in entrypoints.iter_mut().zip(places) {
                entrypoint.place = Some(place);
            }
        }
        self
    }

    /// The configuration, or an error listing every bad value in it: the CLI's policy, since a
    /// configuration that does not say what its author meant should fail CI loudly.
    pub fn validated(self) -> Result<Self> {
        if self.errors.is_empty() {
            Ok(self)
        } else {
            bail!("{}", self.errors.join("\n"))
        }
    }

    /// This layer, with unset keys taken from `fallback`; problems and the path stay this
    /// layer's.
    #[must_use]
    pub fn or(&self, fallback: &Config) -> Config {
        Config {
            path: self.path.clone(),
            python: self.python.clone().or_else(|| fallback.python.clone()),
            follow_libraries: self.follow_libraries.or(fallback.follow_libraries),
            trace: self.trace.or(fallback.trace),
            timeout: self.timeout.or(fallback.timeout),
            memory_limit: self.memory_limit.or(fallback.memory_limit),
            cache_dir: self
                .cache_dir
                .clone()
                .or_else(|| fallback.cache_dir.clone()),
            start_method: self.start_method.or(fallback.start_method),
            strict: self.strict.or(fallback.strict),
            select: self.select.clone().or_else(|| fallback.select.clone()),
            ignore: self.ignore.clone().or_else(|| fallback.ignore.clone()),
            exclude: if self.exclude.is_empty() {
                fallback.exclude.clone()
            } else {
                self.exclude.clone()
            },
            extend_include: if self.extend_include.is_empty() {
                fallback.extend_include.clone()
            } else {
                self.extend_include.clone()
            },
            entrypoints: self
                .entrypoints
                .clone()
                .or_else(|| fallback.entrypoints.clone()),
            out_dir: self.out_dir.clone().or_else(|| fallback.out_dir.clone()),
            targets: self.targets.clone().or_else(|| fallback.targets.clone()),
            fix: self.fix.or(fallback.fix),
            unsafe_fixes: self.unsafe_fixes.or(fallback.unsafe_fixes),
            inlay_hints: self.inlay_hints.or(fallback.inlay_hints),
            max_file_size_kib: self.max_file_size_kib.or(fallback.max_file_size_kib),
            warnings: self.warnings.clone(),
            deprecations: self.deprecations.clone(),
            errors: self.errors.clone(),
        }
    }
}

/// The `targets` of each `[[tool.pt2lsp.entrypoints]]` table with some, by the module the table
/// names (`Settings::entrypoint_targets`): its `model`'s module as written, or the module of its
/// `script` (relative to `root`, the configuration's directory), named as the walk names files.
pub fn entrypoint_targets(
    entrypoints: &[Entrypoint],
    root: Option<&Path>,
) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for entry in entrypoints {
        let targets: Vec<String> = entry
            .targets
            .iter()
            .flatten()
            .map(|target| target.as_str().to_owned())
            .collect();
        if targets.is_empty() {
            continue;
        }
        let from_model = entry
            .model
            .as_deref()
            .and_then(|model| model.split(':').next())
            .map(str::trim)
            .filter(|module| !module.is_empty())
            .map(str::to_owned);
        let from_script = entry.script.as_deref().and_then(|script| {
            let path = root.map_or_else(|| PathBuf::from(script), |root| root.join(script));
            super::walk::module_name(&path).map(|(module, _)| module)
        });
        for module in from_model.into_iter().chain(from_script) {
            found.push((module, targets.clone()));
        }
    }
    found
}

/// The modules of the scripts that `[[tool.pt2lsp.entrypoints]]` tables run with arguments
/// (`Settings::scripts_with_arguments`), named as the walk names files.
pub fn scripts_with_arguments(entrypoints: &[Entrypoint], root: Option<&Path>) -> Vec<String> {
    entrypoints
        .iter()
        .filter(|entry| entry.args.as_ref().is_some_and(|args| !args.is_empty()))
        .filter_map(|entry| {
            let script = entry.script.as_deref()?;
            let path = root.map_or_else(|| PathBuf::from(script), |root| root.join(script));
            super::walk::module_name(&path).map(|(module, _)| module)
        })
        .collect()
}

/// Finds the nearest `pyproject.toml` with a `[tool.pt2lsp]` table at or above `start`.
///
/// A `pyproject.toml` without the table is skipped, as ruff skips one without `[tool.ruff]`:
/// a monorepo's inner projects need not configure pt2lsp. One that is not valid TOML stops the
/// search with an error, because it cannot be told whether it meant to configure pt2lsp.
pub fn discover(start: &Path) -> Result<Config> {
    for directory in start.ancestors() {
        if let Some(config) = in_directory(directory)? {
            return config.validated();
        }
    }
    Ok(Config::default())
}

/// The `[tool.pt2lsp]` of `directory/pyproject.toml`: `Ok(None)` when there is no such file or
/// it has no such table; an error when it cannot be read or is not valid TOML. Bad values are
/// in the returned configuration's `errors`, for the caller's policy.
pub fn in_directory(directory: &Path) -> Result<Option<Config>> {
    let candidate = directory.join("pyproject.toml");
    if !candidate.is_file() {
        return Ok(None);
    }
    let (text, document) = read_toml(&candidate)?;
    Ok(pt2lsp_table(&document, &candidate)?
        .map(|table| from_table(table, Some(&candidate)).placed(&text)))
}

/// Reads the file given with `--config`: a `pyproject.toml` (its `[tool.pt2lsp]` table), or
/// any other TOML file whose top level is the table itself (a `pt2lsp.toml`).
pub fn load(path: &Path) -> Result<Config> {
    let (text, document) = read_toml(path)?;
    if is_pyproject(path) {
        match pt2lsp_table(&document, path)? {
            Some(table) => from_table(table, Some(path)).placed(&text).validated(),
            None => Ok(Config {
                path: Some(path.to_path_buf()),
                warnings: vec![format!("{}: no [tool.pt2lsp] table", path.display())],
                ..Config::default()
            }),
        }
    } else {
        from_table(&document, Some(path)).placed(&text).validated()
    }
}

fn is_pyproject(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name == "pyproject.toml")
}

/// The file's text and its TOML.
fn read_toml(path: &Path) -> Result<(String, Table)> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let table = text
        .parse::<Table>()
        .with_context(|| format!("{} is not valid TOML", path.display()))?;
    Ok((text, table))
}

fn pt2lsp_table<'a>(document: &'a Table, path: &Path) -> Result<Option<&'a Table>> {
    let Some(tool) = document.get("tool") else {
        return Ok(None);
    };
    let Some(value) = tool.as_table().and_then(|tool| tool.get("pt2lsp")) else {
        return Ok(None);
    };
    match value.as_table() {
        Some(table) => Ok(Some(table)),
        None => bail!(
            "{}: tool.pt2lsp must be a table, not {}",
            path.display(),
            describe(value)
        ),
    }
}

/// Reads pt2lsp's keys from a table. `path` is the file it came from, which names the keys in
/// messages the way the user wrote them (`tool.pt2lsp.strict` in a `pyproject.toml`, `strict`
/// in a `pt2lsp.toml`); `None` means the editor's settings (`pt2lsp.strict`).
pub fn from_table(table: &Table, path: Option<&Path>) -> Config {
    let (source, prefix) = match path {
        Some(path) if is_pyproject(path) => (path.display().to_string(), "tool.pt2lsp."),
        Some(path) => (path.display().to_string(), ""),
        None => ("editor settings".to_owned(), "pt2lsp."),
    };
    let mut config = Config {
        path: path.map(Path::to_path_buf),
        ..Config::default()
    };
    for (key, value) in table {
        let Some(name) = spelled(key, &KEYS, table, &mut |new| {
            config
                .deprecations
                .push(deprecation(&source, prefix, key, new, table));
        }) else {
            continue;
        };
        let read: Result<(), String> = match name {
            "python" => text(value).map(|python| config.python = Some(python)),
            "follow-libraries" => boolean(value).map(|follow| {
                config.follow_libraries = Some(follow);
            }),
            "trace" => trace(value).map(|trace| config.trace = Some(trace)),
            "timeout" => seconds(value).map(|timeout| config.timeout = Some(timeout)),
            "memory-limit" => mebibytes(value).map(|limit| config.memory_limit = Some(limit)),
            "cache-dir" => text(value).map(|dir| config.cache_dir = Some(dir)),
            "start-method" => match value.as_str().and_then(StartMethod::parse) {
                Some(method) => {
                    config.start_method = Some(method);
                    Ok(())
                }
                None => Err(format!(
                    ": must be \"fork\" or \"spawn\", not {}",
                    describe(value)
                )),
            },
            "strict" => boolean(value).map(|strict| config.strict = Some(strict)),
            "select" => strings(value).map(|select| config.select = Some(select)),
            "ignore" => strings(value).map(|ignore| config.ignore = Some(ignore)),
            "exclude" => strings(value).map(|exclude| config.exclude = exclude),
            "extend-include" => strings(value).map(|include| config.extend_include = include),
            "out-dir" => text(value).map(|out_dir| config.out_dir = Some(out_dir)),
            "targets" => deployment_targets(value).map(|targets| config.targets = Some(targets)),
            "fix" => boolean(value).map(|fix| config.fix = Some(fix)),
            "unsafe-fixes" => boolean(value).map(|unsafe_fixes| {
                config.unsafe_fixes = Some(unsafe_fixes);
            }),
            "inlay-hints" => boolean(value).map(|inlay_hints| {
                config.inlay_hints = Some(inlay_hints);
            }),
            "max-file-size" => kibibytes(value).map(|size| config.max_file_size_kib = Some(size)),
            "entrypoints" => {
                let mut unknown = Vec::new();
                let mut old = Vec::new();
                let read = entrypoints(value, &mut unknown, &mut old);
                for (index, name) in unknown {
                    config.warnings.push(format!(
                        "{source}: unknown key `{prefix}entrypoints[{index}].{name}`{} (known keys: {})",
                        did_you_mean(&name, &ENTRYPOINT_KEYS),
                        ENTRYPOINT_KEYS.join(", ")
                    ));
                }
                for (index, key, new, both) in old {
                    let at = format!("{prefix}entrypoints[{index}].");
                    config
                        .deprecations
                        .push(deprecated_message(&source, &at, &key, new, both));
                }
                read.map(|entrypoints| config.entrypoints = Some(entrypoints))
            }
            unknown => {
                config.warnings.push(format!(
                    "{source}: unknown key `{prefix}{unknown}`{} (known keys: {})",
                    did_you_mean(unknown, &KEYS),
                    KEYS.join(", ")
                ));
                Ok(())
            }
        };
        if let Err(problem) = read {
            config
                .errors
                .push(format!("{source}: {prefix}{key}{problem}"));
        }
    }
    config
}

// Each reader below returns the problem as the rest of a message that starts with the key:
// `: must be ...` for the value itself, `[2].model: must be ...` inside an array of tables.

fn text(value: &Value) -> Result<String, String> {
    match value {
        Value::String(text) if !text.trim().is_empty() => Ok(text.clone()),
        other => Err(format!(
            ": must be a non-empty string, not {}",
            describe(other)
        )),
    }
}

fn boolean(value: &Value) -> Result<bool, String> {
    match value {
        Value::Boolean(flag) => Ok(*flag),
        other => Err(format!(": must be true or false, not {}", describe(other))),
    }
}

fn trace(value: &Value) -> Result<TraceMode, String> {
    match value.as_str() {
        Some("on-save") => Ok(TraceMode::OnSave),
        Some("on-open-and-save") => Ok(TraceMode::OnOpenAndSave),
        Some("off") => Ok(TraceMode::Off),
        _ => Err(format!(
            ": must be \"on-save\", \"on-open-and-save\" or \"off\", not {}",
            describe(value)
        )),
    }
}

fn seconds(value: &Value) -> Result<f64, String> {
    #[allow(clippy::cast_precision_loss)] // Timeouts are far below 2^52 seconds.
    let seconds = match value {
        Value::Integer(number) => Some(*number as f64),
        Value::Float(number) => Some(*number),
        _ => None,
    };
    match seconds {
        Some(seconds) if seconds > 0.0 && seconds.is_finite() => Ok(seconds),
        _ => Err(format!(
            ": must be a positive number of seconds, not {}",
            describe(value)
        )),
    }
}

/// A positive whole number of KiB.
fn kibibytes(value: &Value) -> Result<u64, String> {
    positive_whole(value, "KiB")
}

/// A positive whole number of MiB.
fn mebibytes(value: &Value) -> Result<u64, String> {
    positive_whole(value, "MiB")
}

fn positive_whole(value: &Value, unit: &str) -> Result<u64, String> {
    match value {
        Value::Integer(number) if *number > 0 => Ok(number.unsigned_abs()),
        _ => Err(format!(
            ": must be a positive whole number of {unit}, not {}",
            describe(value)
        )),
    }
}

/// An array of strings; a lone string is refused rather than guessed at, since
/// `select = "PT1"` is more often a forgotten bracket than a wish for one selector.
fn strings(value: &Value) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            ": must be an array of strings, not {}",
            describe(value)
        ));
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(text) => Ok(text.clone()),
            other => Err(format!(
                ": must be an array of strings, but contains {}",
                describe(other)
            )),
        })
        .collect()
}

/// An array of deployment target names (`["onnx", "aoti"]`), each one known.
fn deployment_targets(value: &Value) -> Result<Vec<DeploymentTarget>, String> {
    DeploymentTarget::parse_all(&strings(value)?).map_err(|message| format!(": {message}"))
}

/// An old spelling met in an entrypoint table: (index, key as written, key as spelled now,
/// whether the new spelling is there too).
type OldSpelling = (usize, String, &'static str, bool);

/// `; did you mean `select`?` when a known key is within two edits of `key` (a typo), else
/// nothing.
fn did_you_mean(key: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|candidate| (edit_distance(key, candidate), candidate))
        .filter(|(distance, candidate)| *distance <= 2.min(candidate.len() / 2))
        .min()
        .map(|(_, candidate)| format!("; did you mean `{candidate}`?"))
        .unwrap_or_default()
}

/// Levenshtein distance between two short keys.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

/// An array of entrypoint tables; unknown keys inside them go to `unknown` as (index, key), old
/// spellings to `old`.
fn entrypoints(
    value: &Value,
    unknown: &mut Vec<(usize, String)>,
    old: &mut Vec<OldSpelling>,
) -> Result<Vec<Entrypoint>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            ": must be an array of tables ([[tool.pt2lsp.entrypoints]]), not {}",
            describe(value)
        ));
    };
    let mut entrypoints = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let Value::Table(table) = item else {
            return Err(format!(
                "[{index}]: must be a table, not {}",
                describe(item)
            ));
        };
        let mut entrypoint = Entrypoint::default();
        for (key, value) in table {
            let at = |problem: String| format!("[{index}].{key}{problem}");
            let Some(name) = spelled(key, &ENTRYPOINT_KEYS, table, &mut |new| {
                old.push((index, key.clone(), new, table.contains_key(new)));
            }) else {
                continue;
            };
            match name {
                "name" => entrypoint.name = Some(text(value).map_err(at)?),
                "model" => entrypoint.model = Some(text(value).map_err(at)?),
                "example-args" => entrypoint.example_args = Some(text(value).map_err(at)?),
                "example-kwargs" => entrypoint.example_kwargs = Some(text(value).map_err(at)?),
                "dynamic-shapes" => entrypoint.dynamic_shapes = Some(text(value).map_err(at)?),
                "strict" => entrypoint.strict = Some(boolean(value).map_err(at)?),
                "fake-weights" => entrypoint.fake_weights = Some(boolean(value).map_err(at)?),
                "targets" => entrypoint.targets = Some(deployment_targets(value).map_err(at)?),
                "script" => entrypoint.script = Some(text(value).map_err(at)?),
                "args" => entrypoint.args = Some(strings(value).map_err(at)?),
                other => unknown.push((index, other.to_owned())),
            }
        }
        entrypoints.push(entrypoint);
    }
    Ok(entrypoints)
}

/// The key as pt2lsp spells it now. A known key written with underscores instead of dashes
/// (`memory_limit`) is the old spelling: `old` hears of it, and the key is read as its new
/// spelling, unless the table also has that one, which wins (`None`: skip this key). Any other
/// key comes back as written, for the caller to read or call unknown.
fn spelled<'a>(
    key: &'a str,
    known: &[&'static str],
    table: &Table,
    old: &mut dyn FnMut(&'static str),
) -> Option<&'a str> {
    if !key.contains('_') {
        return Some(key);
    }
    let kebab = key.replace('_', "-");
    let Some(&new) = known.iter().find(|known| **known == kebab) else {
        return Some(key);
    };
    old(new);
    if table.contains_key(new) {
        None
    } else {
        Some(new)
    }
}

fn deprecation(source: &str, prefix: &str, key: &str, new: &str, table: &Table) -> String {
    deprecated_message(source, prefix, key, new, table.contains_key(new))
}

fn deprecated_message(source: &str, prefix: &str, key: &str, new: &str, both: bool) -> String {
    if both {
        format!(
            "{source}: `{prefix}{key}` is the old spelling of `{prefix}{new}`, which is also \
             set and wins; remove `{key}`"
        )
    } else {
        format!(
            "{source}: `{prefix}{key}` is deprecated; spell it `{prefix}{new}` (pt2lsp's keys \
             are kebab-case)"
        )
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(text) => format!("the string {text:?}"),
        Value::Integer(number) => format!("the integer {number}"),
        Value::Float(number) => format!("the number {number}"),
        Value::Boolean(flag) => format!("the boolean {flag}"),
        Value::Datetime(datetime) => format!("the date {datetime}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Table(_) => "a table".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config> {
        let table: Table = text.parse().unwrap();
        from_table(&table, Some(Path::new("pyproject.toml"))).validated()
    }

    #[test]
    fn targets_are_read_per_run_and_per_entrypoint_and_unknown_ones_named() {
        let config = parse(
            r#"
            targets = ["onnx", "pt2"]
            [[entrypoints]]
            model = "m:model"
            targets = ["executorch"]
            "#,
        )
        .unwrap();
        assert_eq!(
            config.targets,
            Some(vec![DeploymentTarget::Pt2, DeploymentTarget::Onnx])
        );
        assert_eq!(
            config.entrypoints.unwrap()[0].targets,
            Some(vec![DeploymentTarget::ExecuTorch])
        );
        let error = format!("{:#}", parse("targets = [\"tflite\"]").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.targets: unknown deployment target `tflite`")
                && error.contains("known targets: core-aten, pt2, onnx, aoti, executorch"),
            "{error}"
        );
        let error = format!(
            "{:#}",
            parse("[[entrypoints]]\nmodel = \"m:model\"\ntargets = [\"aot\"]").unwrap_err()
        );
        assert!(
            error.contains("tool.pt2lsp.entrypoints[0].targets: unknown deployment target `aot`")
                && error.contains("did you mean `aoti`?"),
            "{error}"
        );
    }

    #[test]
    fn reads_every_documented_key() {
        let config = parse(
            r#"
            select = ["PT1"]
            ignore = ["PT101"]
            strict = true
            exclude = ["build"]
            python = ".venv/bin/python"
            trace = "off"
            timeout = 60
            memory-limit = 2048
            out-dir = "out"
            fix = true
            unsafe-fixes = false
            [[entrypoints]]
            name = "encoder"
            model = "models.encoder:build_model()"
            example-args = "models.encoder:example_inputs()"
            dynamic-shapes = "models.encoder:DYNAMIC_SHAPES"
            "#,
        )
        .unwrap();
        assert_eq!(config.select.as_deref(), Some(&["PT1".to_owned()][..]));
        assert_eq!(config.ignore.as_deref(), Some(&["PT101".to_owned()][..]));
        assert_eq!(config.strict, Some(true));
        assert_eq!(config.exclude, ["build"]);
        assert_eq!(config.python.as_deref(), Some(".venv/bin/python"));
        assert_eq!(config.trace, Some(TraceMode::Off));
        assert_eq!(config.timeout, Some(60.0));
        assert_eq!(config.memory_limit, Some(2048));
        assert_eq!(config.out_dir.as_deref(), Some("out"));
        assert_eq!((config.fix, config.unsafe_fixes), (Some(true), Some(false)));
        let entrypoints = config.entrypoints.as_deref().unwrap();
        assert_eq!(entrypoints.len(), 1);
        assert_eq!(entrypoints[0].name.as_deref(), Some("encoder"));
        assert_eq!(
            entrypoints[0].dynamic_shapes.as_deref(),
            Some("models.encoder:DYNAMIC_SHAPES")
        );
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        assert!(config.deprecations.is_empty(), "{:?}", config.deprecations);
    }

    #[test]
    fn old_spellings_are_read_with_a_deprecation() {
        let config = parse(
            r#"
            memory_limit = 512
            out_dir = "old"
            out-dir = "new"
            unsafe_fixes = true
            [[entrypoints]]
            name = "encoder"
            example_args = "m:args()"
            example_kwargs = "m:kwargs()"
            dynamic_shapes = "m:SHAPES"
            "#,
        )
        .unwrap();
        assert_eq!(config.memory_limit, Some(512));
        assert_eq!(config.out_dir.as_deref(), Some("new"));
        assert_eq!(config.unsafe_fixes, Some(true));
        let entrypoint = &config.entrypoints.as_deref().unwrap()[0];
        assert_eq!(entrypoint.example_args.as_deref(), Some("m:args()"));
        assert_eq!(entrypoint.example_kwargs.as_deref(), Some("m:kwargs()"));
        assert_eq!(entrypoint.dynamic_shapes.as_deref(), Some("m:SHAPES"));
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        let deprecations = config.deprecations.join("\n");
        assert_eq!(config.deprecations.len(), 6, "{deprecations}");
        for expected in [
            "`tool.pt2lsp.memory_limit` is deprecated; spell it `tool.pt2lsp.memory-limit`",
            "`tool.pt2lsp.out_dir` is the old spelling of `tool.pt2lsp.out-dir`, which is also set and wins",
            "`tool.pt2lsp.unsafe_fixes` is deprecated",
            "`tool.pt2lsp.entrypoints[0].example_args` is deprecated; spell it `tool.pt2lsp.entrypoints[0].example-args`",
            "`tool.pt2lsp.entrypoints[0].dynamic_shapes` is deprecated",
        ] {
            assert!(
                deprecations.contains(expected),
                "{expected}\n{deprecations}"
            );
        }
        // A bad value under the old spelling is named as the user wrote it.
        let error = format!("{:#}", parse("memory_limit = 1.5").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.memory_limit: must be"),
            "{error}"
        );
        // Underscores in an unknown key are just an unknown key.
        let config = parse("select_all = true").unwrap();
        assert!(config.deprecations.is_empty() && config.warnings.len() == 1);
    }

    #[test]
    fn unknown_keys_warn_and_wrong_types_fail_naming_the_key() {
        let config = parse("selekt = []\n[[entrypoints]]\nname = \"m\"\nmodle = \"x\"\n").unwrap();
        assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
        assert!(
            config.warnings[0].contains("`tool.pt2lsp.entrypoints[0].modle`")
                && config.warnings[1].contains("`tool.pt2lsp.selekt`"),
            "{:?}",
            config.warnings
        );
        assert!(
            config.warnings[0].contains("did you mean `model`?")
                && config.warnings[1].contains("did you mean `select`?"),
            "{:?}",
            config.warnings
        );
        let far = parse("colour-scheme = 1").unwrap();
        assert!(
            !far.warnings[0].contains("did you mean"),
            "{:?}",
            far.warnings
        );

        let error = format!("{:#}", parse("strict = \"yes\"").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.strict") && error.contains("\"yes\""),
            "{error}"
        );
        let error = format!("{:#}", parse("select = \"PT1\"").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.select") && error.contains("array"),
            "{error}"
        );
        let error = format!("{:#}", parse("memory-limit = 1.5").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.memory-limit") && error.contains("MiB"),
            "{error}"
        );
        let error = format!("{:#}", parse("exclude = [1]").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.exclude") && error.contains("integer 1"),
            "{error}"
        );
        let error = format!("{:#}", parse("[[entrypoints]]\nmodel = 3\n").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.entrypoints[0].model: must be a non-empty string"),
            "{error}"
        );
    }

    #[test]
    fn every_bad_value_is_reported_and_the_good_ones_kept() {
        let table: Table = "trace = \"sometimes\"\ntimeout = -1\npython = \"\"\nstrict = false\n"
            .parse()
            .unwrap();
        let config = from_table(&table, None);
        assert_eq!(config.errors.len(), 3, "{:?}", config.errors);
        assert!(
            config.errors[0].starts_with("editor settings: pt2lsp.python"),
            "{:?}",
            config.errors
        );
        assert_eq!(config.strict, Some(false));
        assert_eq!(config.trace, None);
        let layered = config.or(&Config {
            trace: Some(TraceMode::Off),
            strict: Some(true),
            ..Config::default()
        });
        assert_eq!(
            (layered.trace, layered.strict),
            (Some(TraceMode::Off), Some(false))
        );
    }
}
