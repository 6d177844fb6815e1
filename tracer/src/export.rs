//! `.pt2` on command, the part shared by `pt2lsp export` and the language server's
//! `pt2lsp.exportPt2`: which entrypoints a file has and which one to export, where the file
//! goes, and the temporary file the worker writes before renaming it onto the output.
//!
//! The export itself is a worker job (`Tracer::submit_export`): the same export as a trace,
//! then `torch.export.save`, a rename, `torch.export.load` and a run against the eager model.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::batch::{self, BatchOptions, Candidate, PlannedJob};
use super::protocol::{CallSite, DeclaredTable, EntrypointSpec};
use pt2lsp_project::config::{Config, Entrypoint};

/// The name of a file's own entrypoint (module-level `model` and `example_args`, the ExportDB
/// convention), beside the names of `[[tool.pt2lsp.entrypoints]]`.
pub const CONVENTION_ENTRY: &str = "model";

/// One entrypoint of a file that can be exported.
#[derive(Debug, Clone, PartialEq)]
pub struct Exportable {
    /// `model` for the file's own; a configured entrypoint's `name`, else its `model` reference.
    pub name: String,
    /// The file's own entrypoint, rather than a configured one.
    pub convention: bool,
    pub job: PlannedJob,
}

/// The entrypoints of `file`: its own first, then the configured ones whose `model` module it
/// is, in configuration order.
pub fn entrypoints(file: &Path, text: &str, options: &BatchOptions) -> Vec<Exportable> {
    let candidate = Candidate { path: file, text };
    batch::plan(&[candidate], options)
        .jobs
        .into_iter()
        .map(|job| {
            let (name, convention) = match (&job.spec.call, &job.spec.entrypoint) {
                (Some(call), _) => (call_name(call), false),
                (None, Some(entry)) => (
                    entry.name.clone().unwrap_or_else(|| entry.model.clone()),
                    false,
                ),
                (None, None) => (CONVENTION_ENTRY.to_owned(), true),
            };
            Exportable {
                name,
                convention,
                job,
            }
        })
        .collect()
}

/// The name of an export call's entrypoint: the function it is written in and its line
/// (`main:23`), or `line 23` at module level.
pub fn call_name(call: &CallSite) -> String {
    match &call.scope {
        Some(scope) => format!("{scope}:{}", call.line),
        None => format!("line {}", call.line),
    }
}

/// Why no entrypoint was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChoiceError {
    /// The file has none.
    NoEntrypoint,
    /// The one asked for is not among them.
    Unknown {
        wanted: String,
        available: Vec<String>,
    },
    /// Several configured ones and no file's own: the caller must name one.
    Ambiguous { available: Vec<String> },
}

impl ChoiceError {
    /// A sentence for the user; `how` says how to name an entrypoint (`--entry NAME`).
    pub fn describe(&self, file: &Path, how: &str) -> String {
        let file = file.display();
        match self {
            ChoiceError::NoEntrypoint => format!(
                "{file} has no entrypoint to export: define module-level `model` and \
                 `example_args` in it (the ExportDB convention), or add a \
                 [[tool.pt2lsp.entrypoints]] table whose `model` is in it"
            ),
            ChoiceError::Unknown { wanted, available } if available.is_empty() => format!(
                "{file} has no entrypoint `{wanted}`, and no other either: define module-level \
                 `model` and `example_args`, or a [[tool.pt2lsp.entrypoints]] table"
            ),
            ChoiceError::Unknown { wanted, available } => format!(
                "{file} has no entrypoint `{wanted}`; its entrypoints: {}",
                available.join(", ")
            ),
            ChoiceError::Ambiguous { available } => format!(
                "{file} has {} entrypoints ({}): choose one with {how}",
                available.len(),
                available.join(", ")
            ),
        }
    }
}

/// The entrypoint named `wanted`; without a name, the file's own, else its only one.
pub fn choose(available: Vec<Exportable>, wanted: Option<&str>) -> Result<Exportable, ChoiceError> {
    let names = || available.iter().map(|entry| entry.name.clone()).collect();
    match wanted {
        Some(wanted) => match available.iter().position(|entry| entry.name == wanted) {
            Some(index) => Ok(available.into_iter().nth(index).expect("found above")),
            None => Err(ChoiceError::Unknown {
                wanted: wanted.to_owned(),
                available: names(),
            }),
        },
        None if available.is_empty() => Err(ChoiceError::NoEntrypoint),
        None => {
            if let Some(index) = available.iter().position(|entry| entry.convention) {
                return Ok(available.into_iter().nth(index).expect("found above"));
            }
            if available.len() == 1 {
                return Ok(available.into_iter().next().expect("one entrypoint"));
            }
            Err(ChoiceError::Ambiguous { available: names() })
        }
    }
}

/// The configured entrypoints that name a `model` (the others cannot be exported).
pub fn configured(config: &Config) -> Vec<EntrypointSpec> {
    config
        .entrypoints
        .iter()
        .flatten()
        .filter_map(spec_of)
        .collect()
}

/// The job spec of one `[[tool.pt2lsp.entrypoints]]` table, or `None` without a `model`.
pub fn spec_of(entry: &Entrypoint) -> Option<EntrypointSpec> {
    Some(EntrypointSpec {
        name: entry.name.clone(),
        model: entry.model.clone()?,
        example_args: entry.example_args.clone(),
        example_kwargs: entry.example_kwargs.clone(),
        dynamic_shapes: entry.dynamic_shapes.clone(),
        strict: entry.strict,
        fake_weights: entry.fake_weights,
        targets: entry.targets.clone().unwrap_or_default(),
        declared: entry.place.as_ref().map(DeclaredTable::of),
    })
}

/// `out_dir` of `[tool.pt2lsp]`, relative to the configuration file's directory.
pub fn out_dir(config: &Config) -> Option<PathBuf> {
    let dir = Path::new(config.out_dir.as_deref()?);
    Some(match config.root() {
        Some(root) if dir.is_relative() => root.join(dir),
        _ => dir.to_path_buf(),
    })
}

/// Where an export goes when the caller does not say: the path the user's own code saves to
/// (as `.pt2`, from the working directory the script runs in, or its file name in `out_dir`)
/// for an export call that saves; else `<stem>.pt2` for the file's own entrypoint or an export
/// call, `<name>.pt2` for a configured one, beside the file or in `out_dir`.
pub fn default_output(file: &Path, chosen: &Exportable, out_dir: Option<&Path>) -> PathBuf {
    let call = chosen.job.spec.call.as_ref();
    if let Some(saved) = call.and_then(|call| call.save_path.as_deref()) {
        // The user's own script says where the program goes: the same name, as `.pt2`.
        let saved = Path::new(saved).with_extension("pt2");
        return match out_dir {
            Some(dir) => dir.join(saved.file_name().unwrap_or(saved.as_os_str())),
            None => chosen.job.spec.cwd.join(saved),
        };
    }
    let stem = if chosen.convention || call.is_some() {
        file.file_stem().map_or_else(
            || "model".to_owned(),
            |stem| stem.to_string_lossy().into_owned(),
        )
    } else {
        chosen
            .name
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let dir = out_dir
        .map(Path::to_path_buf)
        .or_else(|| file.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    dir.join(format!("{stem}.pt2"))
}

/// An output given as a directory (one that exists, or `out/` with a trailing slash) means the
/// default file name in it. `given` is as the user wrote it; `base` makes it absolute.
pub fn resolve_output(given: &Path, base: &Path, file: &Path, chosen: &Exportable) -> PathBuf {
    let names_dir = given
        .as_os_str()
        .to_string_lossy()
        .ends_with(std::path::MAIN_SEPARATOR);
    let given = pt2lsp_project::walk::absolute(base, given);
    if names_dir || given.is_dir() {
        default_output(file, chosen, Some(&given))
    } else {
        given
    }
}

/// A hidden name beside `output`, unique to this process and call: the worker saves there and
/// renames it onto `output`, so a reader never sees half a file; the caller removes it
/// ([`remove_temporary`]) whatever became of the job (a killed job cannot clean up).
pub fn temporary_path(output: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = output
        .file_name()
        .map_or_else(|| "export.pt2".into(), |name| name.to_string_lossy());
    let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
    output.with_file_name(format!(".{name}.{}-{unique}.tmp", std::process::id()))
}

/// Removes the temporary file of an export, if the job left it.
pub fn remove_temporary(temporary: &Path) {
    if let Err(error) = std::fs::remove_file(temporary) {
        if error.kind() != std::io::ErrorKind::NotFound {
            eprintln!("pt2lsp: cannot remove {}: {error}", temporary.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use pt2lsp_project::config::Entrypoint;

    fn options(root: &Path, config: &Config) -> BatchOptions {
        BatchOptions {
            root: root.to_path_buf(),
            cwd: root.to_path_buf(),
            strict: false,
            timeout: Duration::from_secs(5),
            memory_limit_mb: None,
            entrypoints: configured(config),
            scripts: Vec::new(),
            targets: Vec::new(),
        }
    }

    #[test]
    fn the_files_own_entrypoint_is_the_default_and_configured_ones_are_named() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("net.py");
        let text = "def build():\n    pass\n\nmodel = build()\nexample_args = ()\n";
        std::fs::write(&file, text).unwrap();
        let config = Config {
            path: Some(root.path().join("pyproject.toml")),
            entrypoints: Some(vec![
                Entrypoint {
                    name: Some("small net".to_owned()),
                    model: Some("net:build()".to_owned()),
                    ..Entrypoint::default()
                },
                Entrypoint {
                    name: Some("no model".to_owned()),
                    ..Entrypoint::default()
                },
            ]),
            out_dir: Some("artifacts".to_owned()),
            ..Config::default()
        };
        let available = entrypoints(&file, text, &options(root.path(), &config));
        let listed: Vec<&str> = available.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(listed, ["model", "small net"]);

        let own = choose(available.clone(), None).unwrap();
        assert!(own.convention);
        assert_eq!(
            default_output(&file, &own, None),
            root.path().join("net.pt2")
        );
        let named = choose(available.clone(), Some("small net")).unwrap();
        assert_eq!(
            named.job.spec.entrypoint.as_ref().unwrap().model,
            "net:build()"
        );
        let out = out_dir(&config).unwrap();
        assert_eq!(out, root.path().join("artifacts"));
        assert_eq!(
            default_output(&file, &named, Some(&out)),
            root.path().join("artifacts/small_net.pt2")
        );

        let unknown = choose(available, Some("big")).unwrap_err();
        let message = unknown.describe(&file, "--entry NAME");
        assert!(
            message.contains("`big`") && message.contains("model, small net"),
            "{message}"
        );
    }

    #[test]
    fn no_entrypoint_or_several_configured_ones_need_the_user() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("lib.py");
        let text = "def a():\n    pass\n";
        std::fs::write(&file, text).unwrap();
        let none = entrypoints(&file, text, &options(root.path(), &Config::default()));
        assert_eq!(choose(none, None).unwrap_err(), ChoiceError::NoEntrypoint);

        let config = Config {
            path: Some(root.path().join("pyproject.toml")),
            entrypoints: Some(
                ["first", "second"]
                    .iter()
                    .map(|name| Entrypoint {
                        name: Some((*name).to_owned()),
                        model: Some("lib:a()".to_owned()),
                        ..Entrypoint::default()
                    })
                    .collect(),
            ),
            ..Config::default()
        };
        let two = entrypoints(&file, text, &options(root.path(), &config));
        let error = choose(two, None).unwrap_err();
        assert!(
            error
                .describe(&file, "--entry NAME")
                .contains("2 entrypoints (first, second): choose one with --entry NAME"),
            "{error:?}"
        );
    }

    #[test]
    fn temporary_files_are_hidden_beside_the_output_and_unique() {
        let output = Path::new("/p/out/m.pt2");
        let first = temporary_path(output);
        let second = temporary_path(output);
        assert_ne!(first, second);
        assert_eq!(first.parent(), output.parent());
        let name = first.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with(".m.pt2.")
                && Path::new(name).extension().is_some_and(|ext| ext == "tmp"),
            "{name}"
        );
    }
}
