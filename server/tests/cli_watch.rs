//! `pt2lsp check --watch`, run as the real binary: a report at start, a new one after each
//! change, one for a burst of changes, none for an excluded directory, and status 0 on Ctrl-C.
//!
//! Every read waits with a deadline and the child is killed when a test ends, however it ends,
//! so a watch that stops reporting fails the test instead of hanging it.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

#[path = "support/run.rs"]
mod support;

/// Long enough for a loaded CI machine to start the binary and check a file; a report that
/// takes longer is a failure, not something to wait for.
const DEADLINE: Duration = Duration::from_secs(30);

const CLEAN: &str = "def double(x):\n    return 2 * x\n";

/// A branch on a tensor's value: PT101.
const BRANCHING: &str = "import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n";

/// A running `pt2lsp check --watch`, killed when dropped.
struct Watch {
    child: Child,
    stdout: Receiver<String>,
    /// Every stdout line read so far, for the failure messages.
    seen: Vec<String>,
    /// The whole of stderr, once the child has exited.
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Watch {
    fn start(dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
            .arg("check")
            .arg("--watch")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pt2lsp starts");
        let (sender, stdout) = channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        Self {
            child,
            stdout,
            seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    /// Reads stdout until a line contains `text`; returns the lines read, that one included.
    fn until(&mut self, text: &str) -> Vec<String> {
        let start = Instant::now();
        let mut lines = Vec::new();
        loop {
            let left = DEADLINE.saturating_sub(start.elapsed());
            match self.stdout.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    let found = line.contains(text);
                    lines.push(line);
                    if found {
                        return lines;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no `{text}` within {DEADLINE:?}; stdout:\n{}",
                        self.seen.join("\n")
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "pt2lsp exited before `{text}`; stdout:\n{}",
                        self.seen.join("\n")
                    )
                }
            }
        }
    }

    /// Stops the watch as Ctrl-C does and returns its exit code and its whole stderr.
    fn interrupt(mut self) -> (Option<i32>, String) {
        #[cfg(unix)]
        {
            let sent = Command::new("kill")
                .args(["-INT", &self.child.id().to_string()])
                .status()
                .expect("kill runs");
            assert!(sent.success());
        }
        #[cfg(not(unix))]
        self.child.kill().unwrap();
        let start = Instant::now();
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code();
            }
            assert!(
                start.elapsed() < DEADLINE,
                "pt2lsp still runs {DEADLINE:?} after Ctrl-C"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (code, stderr)
    }
}

/// The files each "File change detected" status line names, in order.
fn changes(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter_map(|line| line.split_once("] File change detected: "))
        .map(|(_, files)| files)
        .collect()
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn reports_again_after_each_change_until_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("clean.py"), CLEAN).unwrap();
    let mut watch = Watch::start(root, &[]);
    assert_eq!(watch.until("All checks passed!").len(), 1);

    // A venv is never walked, so a problem written there is not a change. The model written
    // next is, and the status line names it alone.
    let venv = root.join("venv/lib/python3.12/site-packages");
    std::fs::create_dir_all(&venv).unwrap();
    std::fs::write(venv.join("installed.py"), BRANCHING).unwrap();
    std::fs::write(root.join("model.py"), BRANCHING).unwrap();
    let report = watch.until("Found 1 error in 1 file.");
    assert!(
        report[0].starts_with("model.py:5:12: PT101 [error] "),
        "{report:?}"
    );

    // One save fixing the model and two new files: one check, one report.
    std::fs::write(root.join("model.py"), CLEAN).unwrap();
    std::fs::write(root.join("helpers.py"), CLEAN).unwrap();
    std::fs::write(root.join("more.py"), CLEAN).unwrap();
    watch.until("All checks passed!");
    // Without a terminal, no escape code clears the screen or colours the report.
    assert!(
        !watch.seen.iter().any(|line| line.contains('\x1b')),
        "{:?}",
        watch.seen
    );

    let (code, stderr) = watch.interrupt();
    assert_eq!(
        code,
        Some(0),
        "Ctrl-C ends a watch with 0; stderr:\n{stderr}"
    );
    assert_eq!(
        changes(&stderr),
        ["model.py", "helpers.py, model.py and 1 more"],
        "{stderr}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.ends_with("] Watching for changes to Python files and pyproject.toml; Ctrl-C stops."),
        "Ctrl-C prints nothing: {stderr}"
    );
    assert!(!stderr.contains('\x1b'), "{stderr}");
}

#[test]
fn the_files_fix_rewrites_are_not_changes_to_check_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("clean.py"), CLEAN).unwrap();
    let mut watch = Watch::start(root, &["--fix", "--unsafe-fixes"]);
    watch.until("All checks passed!");

    std::fs::write(root.join("model.py"), BRANCHING).unwrap();
    watch.until("Fixed 1 error (0 remaining).");
    let fixed = std::fs::read_to_string(root.join("model.py")).unwrap();
    assert!(fixed.contains("torch.where("), "{fixed}");

    // Had the fix's write counted, a change of model.py would come before this one.
    std::fs::write(root.join("other.py"), CLEAN).unwrap();
    watch.until("All checks passed!");
    let (code, stderr) = watch.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(changes(&stderr), ["model.py", "other.py"], "{stderr}");
}

#[test]
fn options_that_end_before_checking_or_nothing_to_watch_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("clean.py"), CLEAN).unwrap();
    let pt2lsp = |args: &[&str]| {
        support::run(
            Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
                .args(args)
                .current_dir(dir.path()),
        )
    };
    for flag in ["--show-files", "--show-settings"] {
        let run = pt2lsp(&["check", "--watch", flag]);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(
            run.stderr
                .contains(&format!("'--watch' cannot be used with '{flag}'")),
            "{run:?}"
        );
    }
    // A path that does not exist is the same usage error as without --watch, at once.
    let missing = pt2lsp(&["check", "-w", "missing.py"]);
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(
        missing.stderr.contains("cannot check missing.py"),
        "{missing:?}"
    );
    assert!(missing.stdout.is_empty(), "{missing:?}");
}
