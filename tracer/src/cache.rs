//! The trace cache: a trace's result kept by content and replayed, without starting Python, while
//! nothing it followed from has changed. Shared by `pt2lsp check --trace` and the language server.
//!
//! An entry is found by a key over what the job was asked (its `JobSpec`: file, roots, the
//! configured entrypoint's strings, strict, timeout, memory limit), the interpreter's path, and
//! the build of pt2lsp and of its embedded worker. It holds the result and the files the worker
//! said the result followed from (`JobResult::dependencies`: the entry file, every module the job
//! imported beyond the warm worker's, every file it read, the interpreter binary and torch's
//! `version.py`), each with the XXH3-128 hash of its contents. A lookup hashes those files again;
//! one changed or gone is a miss. Contents, not modification times: a fresh CI checkout or a
//! re-installed library has new times and the same bytes, so a cache restored between CI runs
//! (`actions/cache`) still hits.
//!
//! Only results that follow from those files are kept: an export that succeeded or failed with
//! findings. A timeout, a crash, an out-of-memory and an entrypoint that could not be built are
//! run again next time (the machine may be less loaded; the module it could not import may now
//! exist). A module a job looked for and did not find is not a dependency: adding a file that
//! shadows an import needs a change to a file the job read, or `--no-cache`.
//!
//! The directory is `.pt2lsp_cache/` in the project root unless configured (`cache-dir`); it
//! holds a `.gitignore` of `*` and a `CACHEDIR.TAG`, so neither git nor backups keep it. Entries
//! are written to a temporary file and renamed, so shards sharing a directory never see half an
//! entry. Deleting the directory is always safe. A file modified after its job was submitted
//! keeps the result out of the cache.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

use super::protocol::{JobResult, JobSpec, Status};
use super::worker::worker_digest;

pub use pt2lsp_project::{
    DEFAULT_CACHE_DIRECTORY as DEFAULT_DIRECTORY,
    cache_disabled_by_environment as disabled_by_environment,
};

/// Bumped when an entry's layout or meaning changes; older entries are then misses.
const FORMAT: u32 = 2;

/// The subdirectory of trace entries (room beside it for other kinds).
const TRACES: &str = "trace-v1";

/// A cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceCache {
    dir: PathBuf,
}

/// One entry on disk.
#[derive(Serialize, Deserialize)]
struct Entry {
    format: u32,
    dependencies: Vec<Dependency>,
    result: JobResult,
}

#[derive(Serialize, Deserialize)]
struct Dependency {
    path: PathBuf,
    /// XXH3-128 of the contents, in hex.
    hash: String,
}

impl TraceCache {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// `.pt2lsp_cache` in `root`, or `configured` (relative to `root`) when the configuration
    /// names one.
    pub fn in_project(root: &Path, configured: Option<&str>) -> Self {
        Self::new(root.join(configured.unwrap_or(DEFAULT_DIRECTORY)))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The result of an earlier run of `spec` on `python` whose files are all unchanged, marked
    /// `replayed`; `None` when there is none or anything it followed from changed.
    pub fn lookup(&self, python: &Path, spec: &JobSpec) -> Option<JobResult> {
        let text = fs::read(self.entry_path(python, spec)).ok()?;
        let entry: Entry = serde_json::from_slice(&text).ok()?;
        if entry.format != FORMAT {
            return None;
        }
        for dependency in &entry.dependencies {
            if content_hash(&dependency.path).ok()? != dependency.hash {
                return None;
            }
        }
        let mut result = entry.result;
        result.replayed = true;
        Some(result)
    }

    /// Keeps `result` for `spec` on `python`, a job submitted at `submitted`, when it is worth
    /// replaying (see the module's doc) and none of its files changed after the job was
    /// submitted (the hashes are taken now: a file saved mid-job would pair the old result with
    /// the new text). Returns whether it was kept; an error is the cache directory's and costs
    /// only a re-run.
    pub fn store(
        &self,
        python: &Path,
        spec: &JobSpec,
        result: &JobResult,
        submitted: SystemTime,
    ) -> io::Result<bool> {
        if !is_replayable(result) {
            return Ok(false);
        }
        let mut dependencies = Vec::with_capacity(result.dependencies.len());
        for path in &result.dependencies {
            let changed_since = fs::metadata(path)
                .and_then(|metadata| metadata.modified())
                .is_ok_and(|modified| modified >= submitted);
            if changed_since {
                return Ok(false);
            }
            match content_hash(path) {
                Ok(hash) => dependencies.push(Dependency {
                    path: path.clone(),
                    hash,
                }),
                // Gone already (a temporary file the job read): nothing to compare against.
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(error) => return Err(error),
            }
        }
        let mut kept = result.clone();
        kept.id = 0;
        let entry = Entry {
            format: FORMAT,
            dependencies,
            result: kept,
        };
        let traces = self.prepare()?;
        let path = self.entry_path(python, spec);
        let temporary = traces.join(format!(
            ".{}.{}.tmp",
            path.file_name()
                .and_then(|name| name.to_str())
                .unwrap_or("entry"),
            std::process::id()
        ));
        let written = fs::File::create(&temporary).and_then(|mut file| {
            file.write_all(&serde_json::to_vec(&entry).map_err(io::Error::other)?)?;
            file.sync_all()
        });
        let renamed = written.and_then(|()| fs::rename(&temporary, &path));
        if renamed.is_err() {
            let _ = fs::remove_file(&temporary);
        }
        renamed.map(|()| true)
    }

    /// Writes a notebook's joined code cells (`python`) as the module the tracer runs, inside
    /// the ignored directory, and returns its path. The name is the notebook's (hashed with
    /// its absolute path, so two `demo.ipynb` do not meet); the file is rewritten only when it
    /// changed, so the trace cache sees an unchanged module. `check --trace` and
    /// `pt2lsp export` both run a notebook through this one module.
    pub fn notebook_module(&self, notebook: &Path, python: &str) -> io::Result<PathBuf> {
        self.prepare()?;
        let dir = self.dir.join("notebooks");
        fs::create_dir_all(&dir)?;
        let absolute = std::path::absolute(notebook).unwrap_or_else(|_| notebook.to_path_buf());
        let name = format!(
            "{:016x}_{}.py",
            xxhash_rust::xxh3::xxh3_64(absolute.as_os_str().as_encoded_bytes()),
            absolute
                .file_stem()
                .and_then(|stem| stem.to_str())
                .unwrap_or("notebook")
                .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        );
        let module = dir.join(name);
        if fs::read_to_string(&module).ok().as_deref() != Some(python) {
            fs::write(&module, python)?;
        }
        Ok(module)
    }

    /// The directory, with the files that keep git and backups out of it, and its traces'.
    fn prepare(&self) -> io::Result<PathBuf> {
        pt2lsp_project::prepare_cache_directory(&self.dir)?;
        let traces = self.dir.join(TRACES);
        fs::create_dir_all(&traces)?;
        Ok(traces)
    }

    fn entry_path(&self, python: &Path, spec: &JobSpec) -> PathBuf {
        self.dir
            .join(TRACES)
            .join(format!("{:032x}.json", entry_key(python, spec)))
    }
}

/// Results that follow from the files the job read (see the module's doc).
fn is_replayable(result: &JobResult) -> bool {
    matches!(result.status, Status::Ok | Status::Failed)
        && result.export.is_none()
        && !result.dependencies.is_empty()
}

/// What a job was asked and by which build, as one number.
fn entry_key(python: &Path, spec: &JobSpec) -> u128 {
    let mut hasher = Xxh3::new();
    hasher.update(&FORMAT.to_le_bytes());
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    hasher.update(&worker_digest().to_le_bytes());
    hasher.update(python.as_os_str().as_encoded_bytes());
    hasher.update(&[0]);
    // JobSpec's JSON is what the worker is sent; its field order is the struct's, so stable.
    hasher.update(&serde_json::to_vec(spec).unwrap_or_default());
    hasher.digest128()
}

fn content_hash(path: &Path) -> io::Result<String> {
    Ok(format!("{:032x}", xxh3_128(&fs::read(path)?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Finding;

    fn spec(file: &Path) -> JobSpec {
        JobSpec {
            targets: Vec::new(),
            file: file.to_path_buf(),
            roots: vec![file.parent().unwrap().to_path_buf()],
            cwd: file.parent().unwrap().to_path_buf(),
            entrypoint: None,
            call: None,
            strict: false,
            timeout: 60.0,
            memory_limit_mb: None,
        }
    }

    fn failed(dependencies: Vec<PathBuf>, file: &Path) -> JobResult {
        JobResult {
            targets: None,
            id: 41,
            status: Status::Failed,
            diagnostics: vec![Finding {
                code: "PT101".to_owned(),
                file: file.to_path_buf(),
                line: 5,
                column: Some(4),
                end_line: None,
                end_column: None,
                message: "a branch on a tensor's value".to_owned(),
                fixes: Vec::new(),
                origin: Some("export".to_owned()),
                exception: None,
                related: Vec::new(),
            }],
            detail: None,
            output: String::new(),
            output_truncated: false,
            elapsed: Some(1.5),
            export: None,
            shapes: Vec::new(),
            dependencies,
            passed_lines: Vec::new(),
            replayed: false,
        }
    }

    #[test]
    fn a_result_is_replayed_until_a_file_it_read_changes() {
        let project = tempfile::tempdir().unwrap();
        let entry = project.path().join("export_net.py");
        let helper = project.path().join("helpers.py");
        fs::write(&entry, "import helpers\n").unwrap();
        fs::write(&helper, "def f(x):\n    return x\n").unwrap();
        let cache = TraceCache::in_project(project.path(), None);
        let python = Path::new("/usr/bin/python3");
        let job = spec(&entry);
        assert!(cache.lookup(python, &job).is_none());

        let result = failed(vec![entry.clone(), helper.clone()], &helper);
        // Saved while the job ran: not kept, the result may be of the text before.
        let before = SystemTime::now() - std::time::Duration::from_secs(3600);
        assert!(!cache.store(python, &job, &result, before).unwrap());
        assert!(cache.lookup(python, &job).is_none());
        assert!(
            cache
                .store(python, &job, &result, SystemTime::now())
                .unwrap()
        );
        let replayed = cache.lookup(python, &job).expect("a hit");
        assert!(replayed.replayed);
        assert_eq!(replayed.diagnostics, result.diagnostics);
        assert_eq!(replayed.status, Status::Failed);
        // Another interpreter, or another timeout, is another job.
        assert!(
            cache
                .lookup(Path::new("/opt/py/bin/python"), &job)
                .is_none()
        );
        let mut longer = job.clone();
        longer.timeout = 120.0;
        assert!(cache.lookup(python, &longer).is_none());

        // Same bytes written again (a fresh checkout): still a hit.
        fs::write(&helper, "def f(x):\n    return x\n").unwrap();
        assert!(cache.lookup(python, &job).is_some());
        fs::write(&helper, "def f(x):\n    return x + 1\n").unwrap();
        assert!(cache.lookup(python, &job).is_none());
        fs::remove_file(&helper).unwrap();
        assert!(cache.lookup(python, &job).is_none());

        let ignore = fs::read_to_string(project.path().join(".pt2lsp_cache/.gitignore")).unwrap();
        assert!(ignore.lines().any(|line| line == "*"), "{ignore}");
    }

    #[test]
    fn timeouts_crashes_and_exports_are_not_kept() {
        let project = tempfile::tempdir().unwrap();
        let entry = project.path().join("m.py");
        fs::write(&entry, "model = None\n").unwrap();
        let cache = TraceCache::in_project(project.path(), Some("build/cache"));
        let python = Path::new("python3");
        for status in [
            Status::Timeout,
            Status::Crashed,
            Status::Oom,
            Status::Entrypoint,
        ] {
            let mut result = failed(vec![entry.clone()], &entry);
            result.status = status;
            assert!(
                !cache
                    .store(python, &spec(&entry), &result, SystemTime::now())
                    .unwrap()
            );
        }
        // A result that names no files cannot be checked for changes.
        assert!(
            !cache
                .store(
                    python,
                    &spec(&entry),
                    &failed(Vec::new(), &entry),
                    SystemTime::now()
                )
                .unwrap()
        );
        assert!(!project.path().join("build/cache").exists());
    }
}
