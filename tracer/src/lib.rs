//! The tracer: runs the real `torch.export` on the user's entrypoints and turns what it finds
//! into diagnostics on the user's lines.
//!
//! User code runs only in a separate process, with the user's interpreter: the worker
//! (`tracer/python/worker.py` and its `pt2lsp_worker` package, embedded in the binary), a zygote
//! that imports torch once and
//! forks a child per job. The parts:
//!
//! - `python` — which interpreter runs the worker.
//! - `protocol` — the JSON lines spoken over the worker's socket (serde types).
//! - `worker` — one worker process: private directory, spawn, handshake, clean end; its
//!   [`StartMethod`](worker::StartMethod) (a forking zygote, or a pool of spawned processes).
//! - `transport` — the protocol channel: a Unix socket, or loopback TCP (spawn mode, Windows).
//! - `manager` — [`Tracer`], a thread that schedules jobs on the worker, enforces timeouts,
//!   cancels, and restarts the worker when it dies. Plain threads and channels, no tokio, so
//!   the CLI waits on it directly and the language server can drive it from a thread of its own.
//! - `entrypoint` — which files are exportable, found without running them.
//! - `diagnostics` — findings and job failures (PT502) as [`TraceDiagnostic`]s, which become the
//!   analyzer's `Diagnostic`s once matched to a file's text.
//! - `batch` — `pt2lsp check --trace`: plan the jobs of a set of files and run them.
//! - `cache` — results kept by the contents of the files they followed from, replayed without
//!   starting Python (the CLI's batch and the language server's trace thread).
//! - `export` — `pt2lsp export` and `pt2lsp.exportPt2`: choose the entrypoint and the output of
//!   an export job, which writes the `.pt2` file and checks it against the eager model.
//! - `targets` — the deployment targets a job lowers its program for, and the run's notes of
//!   targets that could not run.

pub mod batch;
pub mod cache;
pub mod diagnostics;
pub mod entrypoint;
pub mod export;
pub mod ground_truth;
pub mod manager;
pub mod protocol;
pub mod targets;
pub mod transport;
pub mod worker;

pub use diagnostics::TraceDiagnostic;
pub use manager::{Completed, DEFAULT_STARTUP_TIMEOUT, JobId, Tracer, TracerOptions};
pub use protocol::{EntrypointSpec, JobSpec, Status};
pub use worker::StartError;

/// Seconds an entrypoint may take when nothing says otherwise.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 60.0;

/// The default address-space allowance of a job: the machine's memory (`MemTotal`), at least
/// 4 GiB; `None` where it cannot be read (no limit then).
pub fn default_memory_limit_mb() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some((kib / 1024).max(4096))
}
