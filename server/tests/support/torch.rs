//! What the tests that run real torch share: the repository, the interpreter with torch, and
//! the turn they take on a 2-core machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the server crate sits in the repository")
        .to_path_buf()
}

/// The interpreter with torch (`PT2LSP_PYTHON`, else `.venv/bin/python`), found once per test
/// binary. Without torch the `suite`'s tests fail when `CI` is set, and are skipped with a note
/// otherwise.
pub fn torch_python(suite: &str) -> Option<&'static Path> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let candidate = std::env::var_os("PT2LSP_PYTHON")
                .map_or_else(|| repository().join(".venv/bin/python"), PathBuf::from);
            let works = Command::new(&candidate)
                .args(["-c", "import torch"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success());
            if works {
                return Some(candidate);
            }
            let message = format!(
                "the {suite} tests need a Python with torch: {} cannot import it (set \
                 PT2LSP_PYTHON, or run scripts/test.sh, which installs torch into .venv)",
                candidate.display()
            );
            assert!(std::env::var_os("CI").is_none(), "{message}");
            eprintln!("skipping the {suite} tests: {message}");
            None
        })
        .as_deref()
}

/// One torch run at a time: each starts a worker that imports torch and forks jobs, and a
/// timeout test must not be starved by the others.
pub fn turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
