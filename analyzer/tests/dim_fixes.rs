//! The static pass's `Dim` constraint fixes on the fix fixtures of `fixtures/fixes/dims/`:
//! each file's fixes are applied as `pt2lsp check --fix --unsafe-fixes` would, round by round,
//! the fixed text is snapshotted, and the re-check must find no error. (That the real exporter
//! accepts the fixed text is `tests/python/test_fixes_real_torch.py`'s part.)

use std::path::{Path, PathBuf};

use pt2lsp_analyzer::{FixMode, Rule, Settings, check, fix_to_fixpoint};

fn dims_fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/fixes/dims");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures/fixes/dims is readable")
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "py"))
        .collect();
    files.sort();
    files
}

/// The text after the fixes `mode` allows, in `check --fix`'s rounds.
fn fixed(text: &str, mode: FixMode) -> String {
    let settings = Settings::default();
    fix_to_fixpoint(text, mode, |current| check(current, &settings).diagnostics).0
}

fn mode_of(text: &str) -> FixMode {
    if text.contains("fix_applicability = \"safe\"") {
        FixMode::Safe
    } else {
        FixMode::Unsafe
    }
}

#[test]
fn static_dim_fixes_rewrite_the_spec_and_clear_the_diagnostics() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for path in dims_fixtures() {
        let text = std::fs::read_to_string(&path).expect("fixture is readable");
        if text.contains("fix_needs_trace = True") {
            continue;
        }
        checked += 1;
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let before = check(&text, &Settings::default());
        let fixable = before
            .diagnostics
            .iter()
            .any(|diagnostic| diagnostic.rule == Rule::DynamicDimGuard && diagnostic.fix.is_some());
        if !fixable {
            failures.push(format!("{name}: no PT401 diagnostic with a fix"));
            continue;
        }
        let after = fixed(&text, mode_of(&text));
        if after == text {
            failures.push(format!("{name}: the fix changed nothing"));
        }
        let remaining = check(&after, &Settings::default());
        if remaining.has_errors() {
            failures.push(format!(
                "{name}: errors after the fix: {:?}",
                remaining
                    .diagnostics
                    .iter()
                    .map(|d| &d.message)
                    .collect::<Vec<_>>()
            ));
        }
        insta::assert_snapshot!(format!("dims__{name}"), after);
    }
    assert!(checked >= 8, "only {checked} static dims fixtures");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn static_dim_fixes_need_an_unsafe_mode() {
    for path in dims_fixtures() {
        let text = std::fs::read_to_string(&path).expect("fixture is readable");
        if text.contains("fix_needs_trace = True") {
            continue;
        }
        // A bound the static pass guessed from the example is not torch's word: never `--fix` alone.
        assert_eq!(fixed(&text, FixMode::Safe), text, "{}", path.display());
    }
}
