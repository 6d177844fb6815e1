//! `pt2lsp._native`: pt2lsp's checks as a Python API, in-process (no subprocess), and the
//! `pt2lsp` command itself ([`main`]).
//!
//! A thin shell over `pt2lsp::api`: convert Python arguments in, run the check with the GIL
//! released, convert diagnostics out. Diagnostics carry the fields, positions and names of
//! `pt2lsp check --format json`, and `Diagnostic.to_dict()` is that JSON object exactly.
//! Failures are Python exceptions — `ValueError` for a bad request, `OSError` for the file
//! system, `RuntimeError` for a bug in pt2lsp — never a crash of the interpreter: the analysis
//! runs on its own large-stack thread and a panic there comes back as an error.

// pyo3's `#[pymethods]` expand to unsafe glue, which this lint takes for invariants that a
// derived `Deserialize` would bypass; the classes are plain data with none.
#![allow(clippy::unsafe_derive_deserialize)]

use std::path::PathBuf;

use pt2lsp::api;
use serde::{Deserialize, Serialize};

// What `server/src/main.rs` says: the analysis allocates many small syntax-tree nodes.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// One problem `torch.export` would have, at one place of one file.
#[pyclass(module = "pt2lsp", frozen, eq, hash, get_all)]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Diagnostic {
    file: String,
    /// In a notebook: the cell (from 1); `line` is then the cell's line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cell: Option<u32>,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    code: String,
    name: String,
    severity: String,
    message: String,
    source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fix: Option<Fix>,
    /// The places that explain it, entrypoint first.
    related: Vec<Related>,
}

/// Another place that explains a diagnostic: the entrypoint, a call on the way, a library frame.
#[pyclass(module = "pt2lsp", frozen, eq, hash, get_all)]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Related {
    file: String,
    line: u32,
    column: u32,
    message: String,
}

/// Edits that together fix one diagnostic.
#[pyclass(module = "pt2lsp", frozen, eq, hash, get_all)]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Fix {
    title: String,
    applicability: String,
    edits: Vec<Edit>,
}

/// Replace the text from (line, column) up to, not including, (end_line, end_column).
#[pyclass(module = "pt2lsp", frozen, eq, hash, get_all)]
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Edit {
    /// In a notebook: the cell the edit starts in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cell: Option<u32>,
    line: u32,
    column: u32,
    end_line: u32,
    end_column: u32,
    content: String,
}

#[pymethods]
impl Related {
    /// The location as `pt2lsp check --format json` writes it in a diagnostic's `related`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        as_dict(py, self)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Related(file={}, line={}, column={}, message={})",
            repr(py, &self.file)?,
            self.line,
            self.column,
            repr(py, &self.message)?,
        ))
    }
}

#[pymethods]
impl Diagnostic {
    /// The diagnostic as `pt2lsp check --format json` writes it (no `fix` key without a fix).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        as_dict(py, self)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Diagnostic(code={}, file={}, line={}, column={}, severity={}, message={})",
            repr(py, &self.code)?,
            repr(py, &self.file)?,
            self.line,
            self.column,
            repr(py, &self.severity)?,
            repr(py, &self.message)?,
        ))
    }

    /// `path:line:column: CODE [severity] message`, as the text report prints it.
    fn __str__(&self) -> String {
        let cell = self
            .cell
            .map_or_else(String::new, |cell| format!("cell {cell}:"));
        format!(
            "{}:{cell}{}:{}: {} [{}] {}",
            self.file, self.line, self.column, self.code, self.severity, self.message
        )
    }
}

#[pymethods]
impl Fix {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        as_dict(py, self)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Fix(title={}, applicability={}, edits=[{} edit{}])",
            repr(py, &self.title)?,
            repr(py, &self.applicability)?,
            self.edits.len(),
            if self.edits.len() == 1 { "" } else { "s" }
        ))
    }
}

#[pymethods]
impl Edit {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        as_dict(py, self)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Edit(line={}, column={}, end_line={}, end_column={}, content={})",
            self.line,
            self.column,
            self.end_line,
            self.end_column,
            repr(py, &self.content)?,
        ))
    }
}

/// `record` as the JSON report writes it, as a Python dict: serialised by the same serde shape
/// as `pt2lsp_project::schema`, so `to_dict()` cannot drift from `--format json`.
fn as_dict<'py, T: Serialize>(py: Python<'py>, record: &T) -> PyResult<Bound<'py, PyDict>> {
    let json = serde_json::to_string(record)
        .map_err(|error| PyRuntimeError::new_err(format!("cannot serialise: {error}")))?;
    py.import("json")?
        .call_method1("loads", (json,))?
        .cast_into::<PyDict>()
        .map_err(Into::into)
}

/// Python's `repr` of a string, so reprs read as Python literals.
fn repr(py: Python<'_>, text: &str) -> PyResult<String> {
    Ok(PyString::new(py, text).repr()?.to_string())
}

/// Checks one file's source on its own: no configuration file is read and no other file is
/// consulted. `path` only names the file in the diagnostics.
#[pyfunction]
#[pyo3(signature = (source, path = "<string>", strict = false, select = None, ignore = None))]
fn check(
    py: Python<'_>,
    source: &str,
    path: &str,
    strict: bool,
    select: Option<&Bound<'_, PyAny>>,
    ignore: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Diagnostic>> {
    let select = select.map(|value| selectors(value, "select")).transpose()?;
    let ignore = ignore.map(|value| selectors(value, "ignore")).transpose()?;
    let settings =
        api::settings(strict, select.as_deref(), ignore.as_deref()).map_err(into_python)?;
    let found = py
        .detach(|| api::check_source(source, path, &settings))
        .map_err(into_python)?;
    Ok(found.into_iter().map(Diagnostic::from).collect())
}

/// Checks files and directories as `pt2lsp check PATH...` does: the walk (honouring
/// .gitignore and `exclude`), the nearest pyproject.toml's `[tool.pt2lsp]`, and the analysis
/// across the files found. Options given here override the configuration like the command's
/// flags do.
#[pyfunction]
#[pyo3(signature = (
    paths,
    *,
    strict = None,
    select = None,
    ignore = None,
    exclude = None,
    config = None,
    isolated = false
))]
#[allow(
    clippy::too_many_arguments,
    reason = "one keyword argument per command-line flag, as Python callers pass them"
)]
fn check_paths(
    py: Python<'_>,
    paths: &Bound<'_, PyAny>,
    strict: Option<bool>,
    select: Option<&Bound<'_, PyAny>>,
    ignore: Option<&Bound<'_, PyAny>>,
    exclude: Option<&Bound<'_, PyAny>>,
    config: Option<PathBuf>,
    isolated: bool,
) -> PyResult<Vec<Diagnostic>> {
    let options = api::PathsOptions {
        paths: path_list(paths)?,
        select: select.map(|value| selectors(value, "select")).transpose()?,
        ignore: ignore.map(|value| selectors(value, "ignore")).transpose()?,
        strict,
        exclude: exclude
            .map(|value| strings(value, "exclude"))
            .transpose()?
            .unwrap_or_default(),
        config,
        isolated,
        quiet: true,
        // The interpreter running this is the user's: its installed libraries are followed,
        // as `pt2lsp check` follows them (unless `follow-libraries = false`).
        ..api::PathsOptions::default()
    };
    let found = py
        .detach(|| api::check_paths(&options))
        .map_err(into_python)?;
    Ok(found.into_iter().map(Diagnostic::from).collect())
}

/// One path (`str` or `os.PathLike`) or an iterable of them.
fn path_list(value: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    if value.is_instance_of::<PyString>() || value.hasattr("__fspath__")? {
        return Ok(vec![value.extract()?]);
    }
    let not_paths = || {
        PyTypeError::new_err(format!(
            "paths must be a path (str or os.PathLike) or an iterable of paths, not {}",
            type_name(value)
        ))
    };
    let items = value.try_iter().map_err(|_| not_paths())?;
    items
        .map(|item| {
            let item = item?;
            item.extract::<PathBuf>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "paths must contain paths (str or os.PathLike), not {}",
                    type_name(&item)
                ))
            })
        })
        .collect()
}

/// Rule selectors: `"PT1,PT2"` (comma-separated, as on the command line) or an iterable of
/// strings.
fn selectors(value: &Bound<'_, PyAny>, option: &str) -> PyResult<Vec<String>> {
    Ok(strings(value, option)?
        .iter()
        .flat_map(|text| text.split(','))
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
        .collect())
}

/// A string or an iterable of strings; a lone string is one item, never its characters.
fn strings(value: &Bound<'_, PyAny>, option: &str) -> PyResult<Vec<String>> {
    if value.is_instance_of::<PyString>() {
        return Ok(vec![value.extract()?]);
    }
    let wrong = |what: &Bound<'_, PyAny>| {
        PyTypeError::new_err(format!(
            "{option} must be a string or an iterable of strings, not {}",
            type_name(what)
        ))
    };
    let items = value.try_iter().map_err(|_| wrong(value))?;
    items
        .map(|item| {
            let item = item?;
            item.extract::<String>().map_err(|_| wrong(&item))
        })
        .collect()
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "an object".to_owned(), |name| name.to_string())
}

fn into_python(error: api::Error) -> PyErr {
    match error {
        // OSError(errno, message) becomes the matching subclass (FileNotFoundError, ...).
        api::Error::Io {
            message,
            errno: Some(errno),
        } => PyOSError::new_err((errno, message)),
        api::Error::Io {
            message,
            errno: None,
        } => PyOSError::new_err(message),
        api::Error::Invalid(message) => PyValueError::new_err(message),
        api::Error::Internal(message) => PyRuntimeError::new_err(message),
    }
}

impl From<api::Diagnostic> for Diagnostic {
    /// Through the schema's serde shape, field for field, so the class cannot convert a field
    /// differently from `--format json` (`tests/package` compares `to_dict()` with it).
    fn from(diagnostic: api::Diagnostic) -> Self {
        serde_json::from_value(serde_json::to_value(diagnostic).expect("the schema serialises"))
            .expect("the Python class has the schema's fields")
    }
}

/// The `pt2lsp` command (`check`, `rule`, `export`, `serve`) run in this process with `args`,
/// the program name first; returns its exit code. The console script `pt2lsp` and
/// `python -m pt2lsp` call it, so the wheel needs no separate binary and builds with plain
/// `pip` / `maturin`. The command runs without the GIL, on a thread with the stack the
/// `pt2lsp` binary's main thread has on Linux, whatever stack the calling thread has.
#[pyfunction]
fn main(py: Python<'_>, args: Vec<std::ffi::OsString>) -> PyResult<u8> {
    py.detach(|| {
        std::thread::Builder::new()
            .name("pt2lsp".to_owned())
            .stack_size(COMMAND_STACK)
            .spawn(move || pt2lsp::run_to_code(args))
            .map_err(|error| PyRuntimeError::new_err(format!("cannot start pt2lsp: {error}")))?
            .join()
            .map_err(|_| PyRuntimeError::new_err("pt2lsp panicked; see the message above"))
    })
}

/// 8 MiB: the main thread's stack of a Linux process, which the `pt2lsp` binary runs on.
const COMMAND_STACK: usize = 8 * 1024 * 1024;

#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_class::<Diagnostic>()?;
    module.add_class::<Fix>()?;
    module.add_class::<Edit>()?;
    module.add_class::<Related>()?;
    module.add_function(wrap_pyfunction!(check, module)?)?;
    module.add_function(wrap_pyfunction!(check_paths, module)?)?;
    module.add_function(wrap_pyfunction!(main, module)?)?;
    Ok(())
}
