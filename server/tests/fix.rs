//! `pt2lsp check --fix`, `--unsafe-fixes`, `--diff` and `--fix-only`, run as the real binary on
//! temporary trees.
//!
//! The fixes are the analyzer's real ones: a data-dependent `if` that returns on both sides is
//! rewritten as `torch.where` (an unsafe fix: it computes both sides). Whether the rewritten
//! files export is proven with real torch by `tests/python/test_fixes_real_torch.py`; here the
//! concern is the command: what it writes, when, how, and what it says.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tempfile::TempDir;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

/// A model whose `if` on a tensor's value has a `torch.where` fix.
const SIGN_FLIP: &str = "\
import torch
import torch.nn as nn


class SignFlip(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


model = SignFlip()
example_args = (torch.randn(4),)
";

/// A helper's `if` and two nested `if`s: the outer fix covers the inner `if`, which the second
/// round fixes inside the new branch function. The `raise` branch has no rewrite.
const NESTED: &str = "\
import torch
import torch.nn as nn


def shift(t):
    if t.mean() > 0:
        return t - 1
    return t + 1


class Nested(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            if x.max() > 1:
                return shift(x) * 2
            return x + 1
        return x - 1


class Logger(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            raise ValueError(\"positive\")
        return x
";

const CLEAN: &str = "def f(x):\n    return x\n";

fn pt2lsp(dir: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR"))
}

fn tree(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in files {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }
    dir
}

fn read(dir: &TempDir, name: &str) -> String {
    fs::read_to_string(dir.path().join(name)).unwrap()
}

/// Sets a file's modification time into the past, so a rewrite would show.
fn age(path: &Path) -> SystemTime {
    let past = SystemTime::now() - Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(past)
        .unwrap();
    fs::metadata(path).unwrap().modified().unwrap()
}

fn modified(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn unsafe_fixes_are_offered_and_applied_only_when_asked() {
    let dir = tree(&[("m.py", SIGN_FLIP), ("clean.py", CLEAN)]);
    let model = dir.path().join("m.py");
    let clean = dir.path().join("clean.py");
    let (model_time, clean_time) = (age(&model), age(&clean));

    let report = pt2lsp(dir.path(), &["check"]);
    assert_eq!(report.code, 1, "{report:?}");
    insta::assert_snapshot!("report_hides_unsafe_fixes", report.stdout);

    let offered = pt2lsp(dir.path(), &["check", "--unsafe-fixes"]);
    assert_eq!(offered.code, 1, "{offered:?}");
    insta::assert_snapshot!("report_marks_unsafe_fixes", offered.stdout);

    let safe_only = pt2lsp(dir.path(), &["check", "--fix"]);
    assert_eq!(safe_only.code, 1, "{safe_only:?}");
    assert_eq!(read(&dir, "m.py"), SIGN_FLIP);
    assert_eq!(
        modified(&model),
        model_time,
        "--fix must not touch a file it did not fix"
    );

    let fixed = pt2lsp(dir.path(), &["check", "--fix", "--unsafe-fixes"]);
    assert_eq!(fixed.code, 0, "{fixed:?}");
    assert_eq!(fixed.stdout, "Fixed 1 error (0 remaining).\n");
    insta::assert_snapshot!("sign_flip_fixed", read(&dir, "m.py"));
    assert_eq!(
        modified(&clean),
        clean_time,
        "a file without fixes is not written"
    );
    assert_eq!(
        names_in(dir.path()),
        ["clean.py", "m.py"],
        "no temporary file is left"
    );

    let model_time = age(&model);
    let again = pt2lsp(dir.path(), &["check", "--fix", "--unsafe-fixes"]);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, "All checks passed!\n")
    );
    assert_eq!(
        modified(&model),
        model_time,
        "nothing changed: nothing is written"
    );
}

#[test]
fn fixes_run_in_rounds_and_leave_what_has_no_fix() {
    let dir = tree(&[("nested.py", NESTED)]);
    let fixed = pt2lsp(dir.path(), &["check", "--fix", "--unsafe-fixes"]);
    assert_eq!(
        fixed.code, 1,
        "the `raise` branch has no rewrite: {fixed:?}"
    );
    insta::assert_snapshot!("nested_report", fixed.stdout);
    insta::assert_snapshot!("nested_fixed", read(&dir, "nested.py"));
}

#[test]
fn diff_prints_the_change_and_writes_nothing() {
    let dir = tree(&[("m.py", SIGN_FLIP)]);
    let model = dir.path().join("m.py");
    let time = age(&model);

    let nothing = pt2lsp(dir.path(), &["check", "--diff"]);
    assert_eq!(nothing.code, 0, "{nothing:?}");
    assert_eq!(nothing.stdout, "");
    assert_eq!(
        nothing.stderr,
        "No fixes to apply (1 fix available with --unsafe-fixes).\n"
    );

    let diff = pt2lsp(dir.path(), &["check", "--diff", "--unsafe-fixes"]);
    assert_eq!(diff.code, 1, "{diff:?}");
    assert_eq!(diff.stderr, "Would fix 1 error.\n");
    insta::assert_snapshot!("sign_flip_diff", diff.stdout);
    assert_eq!(read(&dir, "m.py"), SIGN_FLIP);
    assert_eq!(modified(&model), time);
}

#[test]
fn permissions_survive_the_atomic_rewrite() {
    let dir = tree(&[("m.py", SIGN_FLIP)]);
    let model = dir.path().join("m.py");
    fs::set_permissions(&model, fs::Permissions::from_mode(0o751)).unwrap();
    let fixed = pt2lsp(dir.path(), &["check", "--fix", "--unsafe-fixes"]);
    assert_eq!(fixed.code, 0, "{fixed:?}");
    assert_ne!(read(&dir, "m.py"), SIGN_FLIP);
    let mode = fs::metadata(&model).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o751);
}

#[test]
fn a_symbolic_link_keeps_pointing_at_the_fixed_file() {
    let dir = tree(&[("real/m.py", SIGN_FLIP)]);
    std::os::unix::fs::symlink(dir.path().join("real/m.py"), dir.path().join("link.py")).unwrap();
    let fixed = pt2lsp(dir.path(), &["check", "--fix", "--unsafe-fixes", "link.py"]);
    assert_eq!(fixed.code, 0, "{fixed:?}");
    assert!(
        fs::symlink_metadata(dir.path().join("link.py"))
            .unwrap()
            .is_symlink()
    );
    assert_ne!(read(&dir, "real/m.py"), SIGN_FLIP);
}

#[test]
fn configuration_turns_fixing_on_and_flags_turn_it_off() {
    let pyproject = "[tool.pt2lsp]\nfix = true\nunsafe-fixes = true\n";
    let dir = tree(&[("m.py", SIGN_FLIP), ("pyproject.toml", pyproject)]);
    let kept = pt2lsp(dir.path(), &["check", "--no-fix"]);
    assert_eq!(kept.code, 1, "{kept:?}");
    assert!(
        kept.stdout.contains("PT101 [error] [*] "),
        "{}",
        kept.stdout
    );
    assert_eq!(read(&dir, "m.py"), SIGN_FLIP);

    let safe = pt2lsp(dir.path(), &["check", "--no-unsafe-fixes"]);
    assert_eq!(safe.code, 1, "{safe:?}");
    assert_eq!(read(&dir, "m.py"), SIGN_FLIP);

    let fixed = pt2lsp(dir.path(), &["check"]);
    assert_eq!(fixed.code, 0, "{fixed:?}");
    assert_ne!(read(&dir, "m.py"), SIGN_FLIP);

    fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.pt2lsp]\nfix = \"yes\"\n",
    )
    .unwrap();
    let bad = pt2lsp(dir.path(), &["check"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr
            .contains("tool.pt2lsp.fix: must be true or false"),
        "{}",
        bad.stderr
    );
}

#[test]
fn fix_only_reports_what_was_fixed() {
    let dir = tree(&[("nested.py", NESTED)]);
    let fixed = pt2lsp(dir.path(), &["check", "--fix-only", "--unsafe-fixes"]);
    assert_eq!(fixed.code, 0, "{fixed:?}");
    assert_eq!(fixed.stdout, "Fixed 3 errors.\n");
    let none = pt2lsp(dir.path(), &["check", "--fix-only", "--unsafe-fixes"]);
    assert_eq!(
        (none.code, none.stdout.as_str()),
        (0, "No fixes applied.\n")
    );
    let json = pt2lsp(
        dir.path(),
        &["check", "--fix-only", "--format", "json", "--unsafe-fixes"],
    );
    assert_eq!(json.stdout, "[]\n");
}

#[test]
fn json_carries_each_fix_with_line_and_column_edits() {
    let dir = tree(&[("m.py", SIGN_FLIP)]);
    let report = pt2lsp(dir.path(), &["check", "--format", "json"]);
    assert_eq!(report.code, 1, "{report:?}");
    let diagnostics: Value = serde_json::from_str(&report.stdout).unwrap();
    insta::assert_snapshot!(
        "sign_flip_json_fix",
        serde_json::to_string_pretty(&diagnostics[0]["fix"]).unwrap()
    );
}

#[test]
fn undecodable_files_are_left_alone_and_the_rest_is_fixed() {
    let dir = tree(&[("m.py", SIGN_FLIP)]);
    let latin1 = b"# caf\xe9\nif x.sum() > 0:\n    pass\n";
    fs::write(dir.path().join("latin1.py"), latin1).unwrap();
    let fixed = pt2lsp(dir.path(), &["check", "--fix", "--unsafe-fixes"]);
    assert_eq!(fixed.code, 1, "the decoding problem remains: {fixed:?}");
    assert!(
        fixed
            .stdout
            .starts_with("latin1.py:1:6: PT001 [error] File is not valid UTF-8"),
        "{}",
        fixed.stdout
    );
    assert!(
        fixed
            .stdout
            .ends_with("Fixed 1 error (1 error remaining).\n"),
        "{}",
        fixed.stdout
    );
    assert_eq!(fs::read(dir.path().join("latin1.py")).unwrap(), latin1);
    assert_ne!(read(&dir, "m.py"), SIGN_FLIP);
}

#[test]
fn a_file_that_cannot_be_written_is_an_error_and_stays_as_it_was() {
    let dir = tree(&[("ro/m.py", SIGN_FLIP), ("ok/m.py", SIGN_FLIP)]);
    let read_only = dir.path().join("ro");
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o555)).unwrap();
    // Root may write anywhere; the test only means something for other users.
    let probe = read_only.join(".probe");
    let writable = fs::write(&probe, "").is_ok();
    let _ = fs::remove_file(&probe);
    let fixed = pt2lsp(dir.path(), &["check", "--fix", "--unsafe-fixes"]);
    fs::set_permissions(&read_only, fs::Permissions::from_mode(0o755)).unwrap();
    assert_ne!(read(&dir, "ok/m.py"), SIGN_FLIP);
    if writable {
        assert_eq!(fixed.code, 0, "{fixed:?}");
        return;
    }
    assert_eq!(fixed.code, 2, "{fixed:?}");
    assert!(
        fixed
            .stderr
            .contains("cannot write the fixed ro/m.py (it is left as it was)"),
        "{}",
        fixed.stderr
    );
    assert_eq!(read(&dir, "ro/m.py"), SIGN_FLIP);
    // The report shows the unfixed file's problem, as it is on disk.
    assert!(
        fixed.stdout.contains("ro/m.py:7:12: PT101"),
        "{}",
        fixed.stdout
    );
    assert!(
        fixed
            .stdout
            .ends_with("Fixed 1 error (1 error remaining).\n"),
        "{}",
        fixed.stdout
    );
}

#[test]
fn help_teaches_fixing() {
    let dir = tree(&[]);
    let help = pt2lsp(dir.path(), &["check", "--help"]);
    for text in [
        "--fix",
        "--unsafe-fixes",
        "--no-unsafe-fixes",
        "--diff",
        "--fix-only",
        "pt2lsp check --diff --unsafe-fixes",
    ] {
        assert!(help.stdout.contains(text), "{text} in {}", help.stdout);
    }
    let conflict = pt2lsp(dir.path(), &["check", "--diff", "--fix-only"]);
    assert_eq!(conflict.code, 2, "{conflict:?}");
}
