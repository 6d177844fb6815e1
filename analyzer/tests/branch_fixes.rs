//! The PT101 rewrites on their fixtures: every file under `fixtures/fixes/cond/` gets a
//! `torch.cond` rewrite and every file under `fixtures/fixes/where/` a `torch.where` one, both
//! unsafe, that leave no PT101 behind; the fixed texts are snapshots, so a reviewer reads each
//! rewrite. The `no_rewrite_*` fixtures of PT101 get an explanation and no edit.
//! (`tests/python/` exports the fixed files with real torch and compares them with the originals.)

use std::fmt::Write as _;
use std::path::PathBuf;

use pt2lsp_analyzer::{Applicability, FixMode, Rule, Settings, check, fix_to_fixpoint};

#[path = "support/fixture_files.rs"]
mod fixture_files;

use fixture_files::{fixtures, python_files};

/// Applies the PT101 fixes of `text` (unsafe ones included) and returns the fixed text.
fn fixed(name: &str, text: &str, expected_title: &str) -> String {
    let report = check(text, &Settings::default());
    let branch: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.rule == Rule::DataDependentBranch)
        .collect();
    assert!(!branch.is_empty(), "{name}: no PT101 to fix");
    for diagnostic in &branch {
        let fix = diagnostic
            .fix
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: PT101 without a fix"));
        assert_eq!(
            fix.applicability,
            Applicability::Unsafe,
            "{name}: {}",
            fix.title
        );
        assert_eq!(fix.title, expected_title, "{name}");
    }
    // Like `check --fix`, in rounds: an `if` nested in another's rewrite waits for the next.
    let (output, _) = fix_to_fixpoint(text, FixMode::Unsafe, |current| {
        check(current, &Settings::default()).diagnostics
    });
    let after = check(&output, &Settings::default());
    let left: Vec<_> = after
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.rule == Rule::DataDependentBranch)
        .map(|diagnostic| &diagnostic.message)
        .collect();
    assert!(
        left.is_empty(),
        "{name}: PT101 left after the fix: {left:?}\n{output}"
    );
    output
}

fn snapshot_fixed(kind: &str, title: &str) {
    let files = python_files(&fixtures(kind));
    assert!(files.len() >= 3, "too few {kind} fixtures");
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let output = fixed(&name, &text, title);
        insta::assert_snapshot!(format!("{}__{name}", kind.replace('/', "_")), output);
    }
}

#[test]
fn cond_fixtures_are_rewritten_as_torch_cond() {
    snapshot_fixed("fixes/cond", "Rewrite the branches as `torch.cond`");
}

#[test]
fn where_fixtures_are_rewritten_as_torch_where() {
    snapshot_fixed("fixes/where", "Rewrite the `if` as `torch.where`");
}

#[test]
fn near_misses_get_an_explanation_and_no_edit() {
    let mut explanations = String::new();
    let files: Vec<PathBuf> = python_files(&fixtures("rules/PT101"))
        .into_iter()
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("no_rewrite_"))
        })
        .collect();
    assert!(files.len() >= 3, "too few near-miss fixtures");
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let report = check(&text, &Settings::default());
        for diagnostic in &report.diagnostics {
            let fix = diagnostic
                .fix
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: no explanation"));
            assert_eq!(fix.applicability, Applicability::DisplayOnly, "{name}");
            assert!(fix.edits.is_empty(), "{name}");
            writeln!(explanations, "{name}: {}", fix.title).unwrap();
        }
    }
    insta::assert_snapshot!(explanations);
}
