//! `pt2lsp check --fix`, `--unsafe-fixes` and `--diff`: the analyzer's fixes, applied to files.
//!
//! Fixes are applied as ruff applies them, in the analyzer's rounds ([`fix_round`]): check,
//! apply the fixes that go together, check the new texts again, and repeat until no fix
//! applies or [`MAX_FIX_ROUNDS`] rounds have run, every file of the project in each round. A fix skipped because it overlapped
//! another is found again on the new text; a fix in one file that changes what another file
//! sees (a `register_fake` added to a helper module) reaches it through the workspace index.
//! With `--trace` every round traces again, from disk, so the files are written after each
//! round; otherwise they are written once, at the end. A file is written only when its text
//! changed, atomically (a temporary file in the same directory renamed over it, with its
//! permissions), and never when it changed on disk since it was read.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use pt2lsp_analyzer::{Diagnostic, FixMode, MAX_FIX_ROUNDS, Severity, fix_round};

use crate::cli::args::CheckArgs;
use crate::cli::output::{Counts, FileReport, fixable};
use crate::cli::trace::Tracing;
use crate::cli::warn;
use pt2lsp_project::check::Project;
use pt2lsp_project::config::Config;
use pt2lsp_project::notebook::Notebook;

/// What becomes of the fixed texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Apply {
    /// `--fix`, `--fix-only`, `fix = true`: the files are rewritten.
    Write,
    /// `--diff`: the changes are printed; nothing is written.
    Diff,
}

/// The fixing the command line and the configuration ask for.
#[derive(Debug, Clone, Copy)]
pub struct Fixing {
    /// `None`: report only.
    pub apply: Option<Apply>,
    /// Which fixes are applied (and marked `[*]` in the report).
    pub mode: FixMode,
}

impl Fixing {
    /// Flags over `[tool.pt2lsp]` (`fix`, `unsafe-fixes`), as ruff layers them.
    pub fn resolve(args: &CheckArgs, config: &Config) -> Self {
        let unsafe_fixes = args
            .unsafe_fixes_override()
            .or(config.unsafe_fixes)
            .unwrap_or(false);
        let apply = if args.diff {
            Some(Apply::Diff)
        } else if args.fix_override().or(config.fix).unwrap_or(false) {
            Some(Apply::Write)
        } else {
            None
        };
        Self {
            apply,
            mode: if unsafe_fixes {
                FixMode::Unsafe
            } else {
                FixMode::Safe
            },
        }
    }
}

/// One file that fixing changed.
#[derive(Debug)]
pub struct Change {
    /// The path as the report shows it.
    pub shown: PathBuf,
    pub original: String,
    pub fixed: String,
}

/// What fixing did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Changed files (written, unless `--diff`), sorted by path.
    pub changes: Vec<Change>,
    /// The diagnostics fixed, by severity, and the files they were in.
    pub fixed: Counts,
    /// Files that could not be written or traced again, each one message.
    pub errors: Vec<String>,
    /// What the last trace of the fixed files did, when `retrace` traced them.
    pub traced: Option<crate::cli::output::TraceSummary>,
}

/// Where one file stands while it is being fixed.
#[derive(Debug)]
struct Progress {
    /// The text as first read.
    original: String,
    /// The text on disk now: the original, or the last text written.
    on_disk: String,
    /// Diagnostics fixed in texts already written (or, for `--diff`, in any text).
    kept: Counts,
    /// Diagnostics fixed since the last write.
    pending: Counts,
    /// A write failed: the file is back to `on_disk` and fixed no further.
    failed: bool,
}

/// Fixes the project's files in rounds (see the module documentation) and leaves each file's
/// report as it stands after fixing. `retrace` traces again after each round; it needs
/// [`Apply::Write`], since the tracer imports the files from disk.
pub fn run(
    project: &mut Project<'_>,
    fixing: Fixing,
    retrace: Option<&Tracing<'_>>,
    quiet: bool,
) -> Outcome {
    let write = fixing.apply == Some(Apply::Write);
    let mut outcome = Outcome::default();
    let mut tracked: BTreeMap<usize, Progress> = BTreeMap::new();
    let mut last_changed = Vec::new();
    let mut converged = false;
    for _ in 0..MAX_FIX_ROUNDS {
        let mut changed: Vec<(usize, String)> = Vec::new();
        for (index, file) in project.files.iter().enumerate() {
            if !file.decodable || tracked.get(&index).is_some_and(|progress| progress.failed) {
                continue;
            }
            let diagnostics: Vec<Diagnostic> = file
                .report
                .diagnostics
                .iter()
                .map(|reported| reported.diagnostic.clone())
                .collect();
            let Some((text, fixes)) = fix_round(&file.report.text, &diagnostics, fixing.mode)
            else {
                continue;
            };
            let progress = tracked.entry(index).or_insert_with(|| Progress {
                original: file.report.text.clone(),
                on_disk: file.report.text.clone(),
                kept: Counts::default(),
                pending: Counts::default(),
                failed: false,
            });
            for diagnostic in &diagnostics {
                let chosen = diagnostic
                    .fix
                    .as_ref()
                    .is_some_and(|fix| fixes.iter().any(|taken| std::ptr::eq(*taken, fix)));
                if chosen {
                    count(&mut progress.pending, diagnostic.severity);
                }
            }
            changed.push((index, text));
        }
        if changed.is_empty() {
            converged = true;
            break;
        }
        last_changed = changed.iter().map(|(index, _)| *index).collect();
        project.update(changed);
        if let Some(tracing) = retrace {
            // The tracer imports the files: it must find this round's texts on disk.
            write_changed(project, &mut tracked, &mut outcome.errors);
            match tracing.trace(project) {
                Ok(summary) => outcome.traced = Some(summary),
                Err(error) => {
                    outcome
                        .errors
                        .push(format!("cannot trace the fixed files: {error:#}"));
                    break;
                }
            }
        }
    }
    if !converged && !quiet {
        let names: Vec<String> = last_changed
            .iter()
            .map(|index| project.files[*index].report.path.display().to_string())
            .collect();
        warn(&format!(
            "fixes still changed {} after {MAX_FIX_ROUNDS} rounds; stopped there: {}",
            if names.len() == 1 { "a file" } else { "files" },
            names.join(", ")
        ));
    }
    if write {
        write_changed(project, &mut tracked, &mut outcome.errors);
    } else {
        for progress in tracked.values_mut() {
            let pending = std::mem::take(&mut progress.pending);
            add(&mut progress.kept, pending);
        }
    }
    for (index, progress) in tracked {
        let file = &project.files[index];
        if progress.kept.total() == 0 {
            continue;
        }
        add(&mut outcome.fixed, progress.kept);
        outcome.fixed.files += 1;
        let fixed = if write {
            progress.on_disk
        } else {
            file.report.text.clone()
        };
        if fixed != progress.original {
            outcome.changes.push(Change {
                shown: file.report.path.clone(),
                original: progress.original,
                fixed,
            });
        }
    }
    if fix_configuration(project, fixing, &mut outcome) {
        if let Some(tracing) = retrace {
            // The rewritten tables export something else: their traces are taken again.
            match tracing.trace(project) {
                Ok(summary) => outcome.traced = Some(summary),
                Err(error) => outcome
                    .errors
                    .push(format!("cannot trace the fixed tables: {error:#}")),
            }
        }
    }
    outcome.changes.sort_by(|a, b| a.shown.cmp(&b.shown));
    outcome
}

/// The fixes in a configuration file's report (a `Dim(...)` written inside an entrypoint
/// table's string, `Project::place_table_companions`): it is no Python module, so they are
/// applied once, after the rounds that fixed the modules, and its tables are read again so
/// that the report says what the fixed tables give. Returns whether a file was rewritten.
fn fix_configuration(project: &mut Project<'_>, fixing: Fixing, outcome: &mut Outcome) -> bool {
    let write = fixing.apply == Some(Apply::Write);
    let mut rewritten = Vec::new();
    for report in &mut project.others {
        let diagnostics: Vec<Diagnostic> = report
            .diagnostics
            .iter()
            .map(|reported| reported.diagnostic.clone())
            .collect();
        let Some((text, fixes)) = fix_round(&report.text, &diagnostics, fixing.mode) else {
            continue;
        };
        let mut counted = Counts::default();
        for diagnostic in &diagnostics {
            if diagnostic
                .fix
                .as_ref()
                .is_some_and(|fix| fixes.iter().any(|taken| std::ptr::eq(*taken, fix)))
            {
                count(&mut counted, diagnostic.severity);
            }
        }
        if write {
            if let Err(error) = write_atomically(&report.path, &report.text, &text) {
                outcome.errors.push(format!("{error:#}"));
                continue;
            }
            rewritten.push(report.path.clone());
        }
        add(&mut outcome.fixed, counted);
        outcome.fixed.files += 1;
        outcome.changes.push(Change {
            shown: report.path.clone(),
            original: report.text.clone(),
            fixed: text,
        });
    }
    for path in &rewritten {
        project.reload_tables(path);
    }
    !rewritten.is_empty()
}

/// Writes every file whose text differs from what is on disk. A file that cannot be written
/// goes back to its text on disk (checked again, so its report tells the truth) and is fixed
/// no further.
fn write_changed(
    project: &mut Project<'_>,
    files: &mut BTreeMap<usize, Progress>,
    errors: &mut Vec<String>,
) {
    let mut reverted = Vec::new();
    for (index, progress) in files.iter_mut() {
        let file = &project.files[*index];
        if progress.failed || file.report.text == progress.on_disk {
            continue;
        }
        let written = match &file.notebook_json {
            // A notebook's fixes go into its cells; its outputs and layout stay.
            Some(json) => notebook_text(json, &file.report.text, &file.path).and_then(|fixed| {
                write_atomically(&file.path, json, &fixed)?;
                Ok(Some(fixed))
            }),
            None => {
                write_atomically(&file.path, &progress.on_disk, &file.report.text).map(|()| None)
            }
        };
        match written {
            Ok(json) => {
                if let Some(json) = json {
                    project.files[*index].notebook_json = Some(json);
                }
                let file = &project.files[*index];
                progress.on_disk.clone_from(&file.report.text);
                let pending = std::mem::take(&mut progress.pending);
                add(&mut progress.kept, pending);
            }
            Err(error) => {
                errors.push(format!("{error:#}"));
                progress.failed = true;
                progress.pending = Counts::default();
                reverted.push((*index, progress.on_disk.clone()));
            }
        }
    }
    if !reverted.is_empty() {
        project.update(reverted);
    }
}

/// The notebook `json` with its code cells joined changed to `fixed`.
fn notebook_text(json: &str, fixed: &str, path: &Path) -> Result<String> {
    let notebook = Notebook::parse(json)
        .map_err(|problem| anyhow::anyhow!("cannot fix {}: {problem}", path.display()))?;
    notebook
        .rewrite(fixed)
        .map_err(|problem| anyhow::anyhow!("not fixing {}: {problem}", path.display()))
}

fn count(counts: &mut Counts, severity: Severity) {
    match severity {
        Severity::Error => counts.errors += 1,
        Severity::Warning => counts.warnings += 1,
        Severity::Info => counts.infos += 1,
    }
}

fn add(total: &mut Counts, more: Counts) {
    total.errors += more.errors;
    total.warnings += more.warnings;
    total.infos += more.infos;
}

/// Replaces the file at `path`, whose content must still be `expected`, with `text`: written
/// to a temporary file beside it with the original's permissions, then renamed over it, so a
/// reader (or a crash) sees the old file or the new one, never half of one. A symbolic link is
/// followed: its target is rewritten, the link stays.
pub fn write_atomically(path: &Path, expected: &str, text: &str) -> Result<()> {
    let target =
        fs::canonicalize(path).with_context(|| format!("cannot fix {}", path.display()))?;
    let current = fs::read(&target).with_context(|| format!("cannot fix {}", path.display()))?;
    if current != expected.as_bytes() {
        bail!(
            "not fixing {}: it changed on disk while pt2lsp was checking it",
            path.display()
        );
    }
    let permissions = fs::metadata(&target)
        .with_context(|| format!("cannot fix {}", path.display()))?
        .permissions();
    let directory = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy().into_owned());
    let temporary = directory.join(format!(".{name}.pt2lsp-{}.tmp", std::process::id()));
    let written = (|| -> io::Result<()> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.write_all(text.as_bytes())?;
        file.set_permissions(permissions)?;
        file.sync_all()?;
        fs::rename(&temporary, &target)
    })();
    if let Err(error) = written {
        let _ = fs::remove_file(&temporary);
        return Err(error).with_context(|| {
            format!(
                "cannot write the fixed {} (it is left as it was)",
                path.display()
            )
        });
    }
    Ok(())
}

impl Outcome {
    /// `--diff`: a unified diff of each changed file, `--- path` / `+++ path` headers.
    pub fn write_diff(&self, out: &mut dyn Write) -> io::Result<()> {
        for change in &self.changes {
            let shown = change.shown.display().to_string();
            let diff = similar::TextDiff::from_lines(&change.original, &change.fixed);
            write!(
                out,
                "{}",
                diff.unified_diff().context_radius(3).header(&shown, &shown)
            )?;
        }
        Ok(())
    }

    /// `--diff`'s summary, on stderr so the diff on stdout stays a valid patch:
    /// `Would fix 2 errors.` and what `--unsafe-fixes` would add.
    pub fn summarize_diff(&self, remaining: &[FileReport], mode: FixMode) {
        let (_, hidden) = fixable(remaining, mode);
        let fixes = if hidden == 1 { "fix" } else { "fixes" };
        if self.fixed.total() == 0 {
            let hint = match hidden {
                0 => String::new(),
                hidden => format!(" ({hidden} {fixes} available with --unsafe-fixes)"),
            };
            eprintln!("No fixes to apply{hint}.");
        } else {
            let hint = match hidden {
                0 => String::new(),
                hidden => format!(" ({hidden} more {fixes} available with --unsafe-fixes)"),
            };
            eprintln!(
                "Would fix {}{hint}.",
                crate::cli::output::counted(self.fixed)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_since_it_was_read_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.py");
        fs::write(&path, "x = 2\n").unwrap();
        let error = write_atomically(&path, "x = 1\n", "x = 3\n").unwrap_err();
        assert!(
            format!("{error:#}").contains("changed on disk"),
            "{error:#}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 2\n");

        write_atomically(&path, "x = 2\n", "x = 3\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "x = 3\n");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let error = write_atomically(&dir.path().join("gone.py"), "", "x").unwrap_err();
        assert!(format!("{error:#}").contains("gone.py"), "{error:#}");
    }
}
