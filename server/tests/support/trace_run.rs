//! What the tracer suites share: the binary run with a fresh `TMPDIR` and no trace cache, its
//! JSON report, the tracer's diagnostics in it, and the check that a run left nothing behind.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::{Run, run};

impl Run {
    /// The report of a `--format json` run.
    pub fn json(&self) -> Vec<Value> {
        serde_json::from_str::<Vec<Value>>(&self.stdout).unwrap_or_else(|error| {
            panic!(
                "stdout is not one JSON report ({error}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs the binary in `dir` with `TMPDIR` set to `tmp`, and no trace cache: every test here
/// is about running the exporter.
pub fn pt2lsp(dir: &Path, tmp: &Path, args: &[&str]) -> Run {
    pt2lsp_with_path(dir, tmp, args, None)
}

/// [`pt2lsp`], with `python_path` as the traced interpreter's `PYTHONPATH`.
pub fn pt2lsp_with_path(dir: &Path, tmp: &Path, args: &[&str], python_path: Option<&Path>) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pt2lsp"));
    command
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .env("PT2LSP_NO_CACHE", "1")
        .env_remove("VIRTUAL_ENV");
    if let Some(path) = python_path {
        command.env("PYTHONPATH", path);
    }
    run(&mut command)
}

/// Processes whose command line mentions `marker` (the worker's argv names its directory,
/// which is under the run's TMPDIR; its forked jobs share that argv), or, with `environment`,
/// whose environment does (a process spawned by multiprocessing names no path on its command
/// line, but inherits the run's TMPDIR).
pub fn processes_mentioning(marker: &str, environment: bool) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().filter(|pid| pid.parse::<u32>().is_ok()) else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let environ = if environment {
            fs::read(entry.path().join("environ")).unwrap_or_default()
        } else {
            Vec::new()
        };
        if cmdline.contains(marker) || String::from_utf8_lossy(&environ).contains(marker) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

/// No file left in the run's TMPDIR, no process started in it still running (a worker that is
/// ending gets a few seconds: it kills its jobs and removes its directory first).
pub fn assert_clean(tmp: &Path) {
    let marker = tmp.to_string_lossy().into_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_mentioning(&marker, true);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "processes left behind: {left:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let files: Vec<PathBuf> = fs::read_dir(tmp)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert!(files.is_empty(), "files left in TMPDIR: {files:#?}");
}

/// The tracer's diagnostics in a report: (file, line, code, message). Info diagnostics are
/// left out: they point at a failure reported elsewhere (torch's fix on the `Dim` that a guard
/// in another file violates), and marks state failures.
pub fn traced(report: &[Value]) -> Vec<(String, u32, String, String)> {
    report
        .iter()
        .filter(|item| {
            item["source"]
                .as_str()
                .is_some_and(|source| source.ends_with("trace"))
                && item["severity"] != "info"
        })
        .map(|item| {
            (
                item["file"].as_str().unwrap().to_owned(),
                u32::try_from(item["line"].as_u64().unwrap()).unwrap(),
                item["code"].as_str().unwrap().to_owned(),
                item["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}
