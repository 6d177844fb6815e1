//! The checks the Python package (`python/`, `pt2lsp._native`) runs in-process: the analysis
//! of `pt2lsp check`, returned as data positioned exactly as `--format json` positions it
//! (1-based lines, 1-based columns in characters, ends exclusive).
//!
//! Nothing here prints: warnings the command would print are dropped, failures are
//! [`Error`]s. Analysis runs on threads with the command's large stack, so a deeply nested
//! file cannot overflow the caller's (a Python thread's) stack.

use std::fmt;
use std::path::PathBuf;

use pt2lsp_analyzer::{RuleSelector, Settings};

use pt2lsp_project::check::{self, CheckOptions};
use pt2lsp_project::report::FileReport;

/// One diagnostic, field for field what `pt2lsp check --format json` writes for it: the one
/// schema, with its fix, edits and related places.
pub use pt2lsp_project::schema::{Diagnostic, Edit, Fix, Related};

/// Why a check could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A path, a file or a configuration file could not be read; `errno` when the system
    /// said why.
    Io { message: String, errno: Option<i32> },
    /// The request is wrong: an unknown rule selector, a broken configuration file.
    Invalid(String),
    /// pt2lsp itself failed (a panic in the analysis): a bug to report.
    Internal(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { message, .. } | Error::Invalid(message) | Error::Internal(message) => {
                f.write_str(message)
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<anyhow::Error> for Error {
    /// An I/O error anywhere in the chain makes it an [`Error::Io`]: "cannot check x.py: No
    /// such file or directory" is about the file system, whatever context was added on top.
    fn from(error: anyhow::Error) -> Self {
        let message = format!("{error:#}");
        match error
            .chain()
            .find_map(|cause| cause.downcast_ref::<std::io::Error>())
        {
            Some(io) => Error::Io {
                message,
                errno: io.raw_os_error(),
            },
            None => Error::Invalid(message),
        }
    }
}

/// Settings from explicit options, as `pt2lsp check --isolated` resolves its flags: no
/// `select` runs every rule, `ignore` subtracts from it, a more specific selector wins.
pub fn settings(
    strict: bool,
    select: Option<&[String]>,
    ignore: Option<&[String]>,
) -> Result<Settings, Error> {
    let parse = |texts: &[String], option: &str| -> Result<Vec<RuleSelector>, Error> {
        texts
            .iter()
            .map(|text| {
                RuleSelector::parse(text).ok_or_else(|| {
                    Error::Invalid(format!(
                        "unknown rule selector {text:?} in {option}: selectors are rule codes \
                         or their prefixes (PT, PT1, PT101); `pt2lsp rule` lists the rules"
                    ))
                })
            })
            .collect()
    };
    let defaults = Settings::default();
    Ok(Settings {
        strict,
        select: match select {
            Some(select) => parse(select, "select")?,
            None => defaults.select,
        },
        ignore: match ignore {
            Some(ignore) => parse(ignore, "ignore")?,
            None => Vec::new(),
        },
        // The configured targets come with a project (`check_paths`); a text alone has only
        // its own `targets = [...]`.
        targets: Vec::new(),
        entrypoint_targets: Vec::new(),
        scripts_with_arguments: Vec::new(),
    })
}

/// Checks one file's text on its own (no configuration, no other files); `path` names it in
/// the diagnostics.
pub fn check_source(
    source: &str,
    path: &str,
    settings: &Settings,
) -> Result<Vec<Diagnostic>, Error> {
    let report = on_analysis_stack(|| {
        let diagnostics = pt2lsp_analyzer::check(source, settings).diagnostics;
        FileReport::new(PathBuf::from(path), source.to_owned(), diagnostics)
    })?;
    Ok(report.located())
}

/// What `check_paths` checks, and how: the command's own options (`None` leaves an option to
/// the configuration file, as an absent flag does on the command line; `quiet` is always on,
/// since nothing here prints).
pub use pt2lsp_project::check::CheckOptions as PathsOptions;

/// Checks files and directories exactly as `pt2lsp check` does (the walk, `.gitignore`,
/// `exclude`, the nearest `pyproject.toml`, the two-phase workspace analysis), without
/// tracing or fixing. Diagnostics are sorted by file, then position. A file that cannot be
/// read fails the whole check, naming every such file.
pub fn check_paths(options: &PathsOptions) -> Result<Vec<Diagnostic>, Error> {
    if options.config.is_some() && options.isolated {
        return Err(Error::Invalid(
            "config and isolated cannot be used together: isolated reads no configuration file"
                .to_owned(),
        ));
    }
    // The command's check, with its warnings left out: the API returns data, nothing prints.
    let check_options = CheckOptions {
        quiet: true,
        ..options.clone()
    };

    let reports = on_analysis_stack(|| -> Result<Vec<FileReport>, Error> {
        let prepared = check::prepare(&check_options)?;
        let mut io_errors = prepared.io_errors;
        let mut project = check::Project::load(
            &prepared.files,
            &prepared.settings,
            &prepared.cwd,
            prepared.pool,
            &mut io_errors,
        );
        project.add_context(&prepared.context, &prepared.config);
        project.add_table_problems(
            &prepared.config,
            &prepared.root,
            check_options.python.as_deref(),
        );
        if let Some((python, cache)) = &prepared.libraries {
            project.follow_libraries(python, cache.as_deref(), check_options.quiet);
        }
        project.check_against_workspace();
        if !io_errors.is_empty() {
            return Err(Error::Io {
                message: io_errors.join("\n"),
                errno: None,
            });
        }
        Ok(project.into_reports())
    })??;
    Ok(reports.iter().flat_map(FileReport::located).collect())
}

/// Runs `work` on a thread with the analysis stack; a panic in it is an [`Error::Internal`],
/// never an unwind into the caller (a Python interpreter).
fn on_analysis_stack<T: Send>(work: impl FnOnce() -> T + Send) -> Result<T, Error> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("pt2lsp-analysis".to_owned())
            .stack_size(pt2lsp_project::check::ANALYSIS_STACK_BYTES)
            .spawn_scoped(scope, work)
            .map_err(|error| {
                Error::Internal(format!("cannot start the analysis thread: {error}"))
            })?;
        worker.join().map_err(|panic| {
            let reason = panic
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            Error::Internal(format!(
                "pt2lsp failed while analysing: {reason}. This is a bug in pt2lsp; please report it \
                 with the file that caused it"
            ))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_characters_like_the_json_report() {
        let source = "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n";
        let found = check_source(source, "m.py", &Settings::default()).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        let diagnostic = &found[0];
        assert_eq!(
            (
                diagnostic.file.as_str(),
                diagnostic.code.as_str(),
                diagnostic.severity.as_str()
            ),
            ("m.py", "PT101", "error")
        );
        assert_eq!((diagnostic.line, diagnostic.column), (4, 12));
        assert_eq!(diagnostic.source, "static");
    }

    #[test]
    fn unknown_selectors_name_themselves() {
        let error = settings(false, Some(&["PT9Z".to_owned()]), None).unwrap_err();
        assert!(
            matches!(&error, Error::Invalid(message) if message.contains("\"PT9Z\"")),
            "{error:?}"
        );
        let none = settings(false, Some(&[]), None).unwrap();
        assert!(check_source("x = 1 +\n", "m.py", &none).unwrap().is_empty());
    }

    #[test]
    fn a_missing_path_is_an_io_error_with_its_errno() {
        let options = PathsOptions {
            paths: vec![PathBuf::from("/nonexistent/pt2lsp/model.py")],
            isolated: true,
            ..PathsOptions::default()
        };
        let error = check_paths(&options).unwrap_err();
        assert!(
            matches!(&error, Error::Io { errno: Some(2), message } if message.contains("model.py")),
            "{error:?}"
        );
    }
}
