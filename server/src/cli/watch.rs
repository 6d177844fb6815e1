//! `pt2lsp check --watch`: the check, then the check again whenever a file it reads changes,
//! until Ctrl-C.
//!
//! Changes are found by polling, not by the operating system's file events: each poll walks
//! what the check walked (`walk::Walked`: the same roots, `.gitignore`, `exclude` and
//! `extend-include`, so a `venv/` or an excluded directory is never looked into) and compares
//! each file's modification time and size with the state before the check read them. Events
//! would need a new dependency (`notify`), a watch on every directory (Linux caps their number)
//! filtered again by the same rules to leave venvs out, and they do not arrive at all on some
//! network and container file systems. A poll is the check's own walk: a few milliseconds on a
//! project, and on one so large that it takes longer, polls are spaced to take a tenth of the
//! time at most (see [`interval`]).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;

use crate::cli::args::CheckArgs;
use crate::cli::check::{check_prepared, options};
use crate::cli::{ExitStatus, output, report_error};
use pt2lsp_project::check::prepare;
use pt2lsp_project::walk::{self, Exclude, Include, Walked};

/// How often the files are looked at while nothing changes: a save shows its report about as
/// fast as a person looks back at the terminal.
const POLL: Duration = Duration::from_millis(300);

/// After a change, how long the files must stay unchanged before the check runs: an editor's
/// "save all", a formatter or a `git checkout` writes many files one after another, and they
/// make one check.
const SETTLE: Duration = Duration::from_millis(150);

/// A file written without pause (a log that happens to end in `.py`) is checked after this
/// long anyway.
const MAX_SETTLE: Duration = Duration::from_secs(2);

/// Clears the screen and its scrollback and homes the cursor, as `ruff check --watch` and
/// `cargo watch -c` do, so the terminal shows the current report only.
const CLEAR_SCREEN: &[u8] = b"\x1b[H\x1b[2J\x1b[3J";

pub fn run(args: &CheckArgs) -> Result<ExitStatus> {
    stop_on_ctrl_c();
    let cwd = std::env::current_dir()?;
    // The screen is the report's only when the report goes to stdout, and stdout is a
    // terminal: escape codes never reach a file or a pipe.
    let clear = args.output_file.is_none() && std::io::stdout().is_terminal();
    let output_file = args
        .output_file
        .as_deref()
        .map(|path| walk::absolute(&cwd, path));
    // What the last check read, and the state it was in just before the check read it.
    let mut watched: Option<(Watch, Snapshot)> = None;
    let mut changed: Vec<PathBuf> = Vec::new();
    loop {
        if clear {
            output::with_stdout(|out| out.write_all(CLEAR_SCREEN))?;
        }
        if !args.quiet {
            if watched.is_none() {
                status("Starting check in watch mode...");
            } else {
                status(&format!(
                    "File change detected: {}",
                    describe(&changed, &cwd)
                ));
            }
        }
        match prepare(&options(args)) {
            Ok(prepared) => {
                // The snapshot is taken before the check reads the files, so a change made
                // while it runs is seen by the next poll. It stays the one taken after the
                // last change unless the walk itself changed (a new `exclude`).
                if watched
                    .as_ref()
                    .is_none_or(|(watch, _)| watch.walked != prepared.walked)
                {
                    let watch = Watch::new(prepared.walked.clone(), output_file.clone())?;
                    let snapshot = watch.scan();
                    watched = Some((watch, snapshot));
                }
                // The exit status is the end of a run; a watch ends only on Ctrl-C.
                match check_prepared(args, prepared) {
                    Ok(checked) => {
                        if let Some((_, snapshot)) = watched.as_mut() {
                            adopt(snapshot, &checked.rewritten);
                        }
                    }
                    Err(error) => report_error(&format!("{error:#}")),
                }
            }
            // Before the first report nothing is watched yet: a missing path or a bad
            // selector is the usage error `check` reports, with its exit status.
            Err(error) if watched.is_none() => return Err(error),
            // A pyproject.toml broken while editing it: said, and watched until it is fixed.
            Err(error) => report_error(&format!("{error:#}")),
        }
        if !args.quiet {
            status("Watching for changes to Python files and pyproject.toml; Ctrl-C stops.");
        }
        if let Some((watch, snapshot)) = watched.as_mut() {
            changed = watch.wait_for_change(snapshot);
        }
    }
}

/// Ends the process with status 0 on Ctrl-C, which would otherwise kill it with SIGINT's
/// status: stopping a watch is how it is meant to end, not a failure. The process ends at once,
/// even in the middle of a check (a trace may take minutes), as SIGINT's default action would
/// end it. Should the handler not be installed, Ctrl-C keeps its default action.
fn stop_on_ctrl_c() {
    let _ = std::thread::Builder::new()
        .name("pt2lsp-ctrl-c".to_owned())
        .spawn(|| {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            if runtime.block_on(tokio::signal::ctrl_c()).is_ok() {
                std::process::exit(0);
            }
        });
}

/// A status line on stderr, stamped with the local time (`[14:03:27] ...`), so that a report
/// on the screen says how fresh it is.
fn status(message: &str) {
    let now = jiff::Zoned::now();
    eprintln!("[{}] {message}", now.strftime("%H:%M:%S"));
}

/// Takes the files `--fix` rewrote as they are now into `snapshot`: the check's own writes
/// are not a change to check again (which would find nothing to fix and, on a terminal, clear
/// the report that says what was fixed). Every other file keeps its state from before the
/// check, so a save made while it ran is still seen. Only files the snapshot holds are
/// updated: one it does not hold would be a change at every poll.
fn adopt(snapshot: &mut Snapshot, rewritten: &[PathBuf]) {
    for path in rewritten {
        if let (Some(held), Some(now)) = (snapshot.get_mut(path), stamp(path)) {
            *held = now;
        }
    }
}

/// A file's [`Stamp`] now; `None` when it cannot be read (deleted).
fn stamp(path: &Path) -> Option<Stamp> {
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.modified().ok(), metadata.len()))
}

/// `a.py`, `a.py, b.py`, or `a.py, b.py and 3 more`.
fn describe(changed: &[PathBuf], cwd: &Path) -> String {
    const SHOWN: usize = 2;
    let mut names: Vec<String> = changed
        .iter()
        .take(SHOWN)
        .map(|path| walk::display_path(path, cwd).display().to_string())
        .collect();
    if changed.len() > SHOWN {
        let last = format!(
            "{} and {} more",
            names.pop().unwrap_or_default(),
            changed.len() - SHOWN
        );
        names.push(last);
    }
    names.join(", ")
}

/// When a file last changed, as far as a poll can tell: its modification time (`None` where
/// the file system keeps none) and its size, which catches a rewrite within one tick of a
/// coarse clock.
type Stamp = (Option<SystemTime>, u64);

/// The watched files, by absolute path.
type Snapshot = BTreeMap<PathBuf, Stamp>;

/// What a check read, compiled to be walked again.
struct Watch {
    walked: Walked,
    exclude: Exclude,
    /// `extend-include` and `pyproject.toml`: a new or changed configuration, anywhere under
    /// the walked roots, may change the settings or the project's root.
    include: Include,
    /// The report written by `--output-file`, which the check's own writing must not count as
    /// a change, whatever it is named.
    output_file: Option<PathBuf>,
}

impl Watch {
    fn new(walked: Walked, output_file: Option<PathBuf>) -> Result<Self> {
        let exclude = Exclude::new(&walked.exclude, &walked.base)?;
        let mut include = walked.include.clone();
        include.push("pyproject.toml".to_owned());
        let include = Include::new(&include, &walked.base)?;
        Ok(Self {
            walked,
            exclude,
            include,
            output_file,
        })
    }

    /// The watched files as they are now. A file that vanishes between the walk and its stamp
    /// is left out, as deleted.
    fn scan(&self) -> Snapshot {
        let found = walk::discover(&self.walked.roots, &self.exclude, &self.include);
        found
            .files
            .into_iter()
            .chain(self.walked.config.clone())
            .filter(|path| Some(path) != self.output_file.as_ref())
            .filter_map(|path| stamp(&path).map(|stamp| (path, stamp)))
            .collect()
    }

    /// Polls until the files differ from `snapshot` and then stay unchanged for [`SETTLE`];
    /// leaves the state the check will read in `snapshot` and returns the files that were
    /// created, changed or deleted.
    fn wait_for_change(&self, snapshot: &mut Snapshot) -> Vec<PathBuf> {
        loop {
            let started = Instant::now();
            let mut now = self.scan();
            let took = started.elapsed();
            if now != *snapshot {
                let settling = Instant::now();
                loop {
                    std::thread::sleep(SETTLE);
                    let next = self.scan();
                    let settled = next == now || settling.elapsed() > MAX_SETTLE;
                    now = next;
                    if settled {
                        break;
                    }
                }
                let changed = differences(snapshot, &now);
                *snapshot = now;
                // A file changed and changed back (an editor's backup dance) is no change.
                if !changed.is_empty() {
                    return changed;
                }
            }
            std::thread::sleep(interval(took).saturating_sub(started.elapsed()));
        }
    }
}

/// The time between polls: [`POLL`], or ten times what a poll took on a project so large that
/// polling would otherwise keep a core busy (one tenth of a core at most).
fn interval(scan: Duration) -> Duration {
    POLL.max(scan * 10)
}

/// The files created, changed or deleted from `before` to `after`, sorted.
fn differences(before: &Snapshot, after: &Snapshot) -> Vec<PathBuf> {
    let mut changed: Vec<PathBuf> = after
        .iter()
        .filter(|(path, stamp)| before.get(*path) != Some(stamp))
        .map(|(path, _)| path.clone())
        .chain(
            before
                .keys()
                .filter(|path| !after.contains_key(*path))
                .cloned(),
        )
        .collect();
    changed.sort();
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_created_changed_and_deleted_files() {
        let time = SystemTime::UNIX_EPOCH;
        let before: Snapshot = [
            (PathBuf::from("/p/kept.py"), (Some(time), 1)),
            (PathBuf::from("/p/changed.py"), (Some(time), 1)),
            (PathBuf::from("/p/deleted.py"), (Some(time), 1)),
        ]
        .into();
        let after: Snapshot = [
            (PathBuf::from("/p/kept.py"), (Some(time), 1)),
            (PathBuf::from("/p/changed.py"), (Some(time), 2)),
            (PathBuf::from("/p/created.py"), (None, 0)),
        ]
        .into();
        assert_eq!(
            differences(&before, &after),
            ["/p/changed.py", "/p/created.py", "/p/deleted.py"].map(PathBuf::from)
        );
        assert!(differences(&after, &after).is_empty());
    }

    #[test]
    fn changes_are_described_by_their_first_names() {
        let cwd = Path::new("/p");
        let paths =
            |names: &[&str]| -> Vec<PathBuf> { names.iter().map(|name| cwd.join(name)).collect() };
        assert_eq!(describe(&paths(&["a.py"]), cwd), "a.py");
        assert_eq!(describe(&paths(&["a.py", "b.py"]), cwd), "a.py, b.py");
        assert_eq!(
            describe(&paths(&["a.py", "b.py", "c.py", "d.py"]), cwd),
            "a.py, b.py and 2 more"
        );
        assert_eq!(
            describe(&[PathBuf::from("/elsewhere/x.py")], cwd),
            "/elsewhere/x.py"
        );
    }

    #[test]
    fn large_projects_are_polled_less_often() {
        assert_eq!(interval(Duration::from_millis(5)), POLL);
        assert_eq!(
            interval(Duration::from_millis(80)),
            Duration::from_millis(800)
        );
    }
}
