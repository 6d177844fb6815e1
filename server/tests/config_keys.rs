//! `[tool.pt2lsp]` keys as users write them, through the real binary: kebab-case is read
//! silently; the old spellings with underscores are read too, with a deprecation that `-q`
//! does not hide.

use std::fs;
use std::path::Path;
use std::process::Command;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

fn pt2lsp(dir: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR"))
}

fn project(pyproject: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("pyproject.toml"), pyproject).unwrap();
    fs::write(dir.path().join("clean.py"), "def f(x):\n    return x\n").unwrap();
    dir
}

#[test]
fn kebab_case_keys_are_read_without_a_word() {
    let dir = project(
        "[tool.pt2lsp]\nmemory-limit = 2048\nout-dir = \"artifacts\"\nunsafe-fixes = false\n\
         [[tool.pt2lsp.entrypoints]]\nname = \"m\"\nmodel = \"clean:f\"\n\
         example-args = \"clean:ARGS\"\ndynamic-shapes = \"clean:SHAPES\"\n",
    );
    let check = pt2lsp(dir.path(), &["check"]);
    assert_eq!(check.code, 0, "{check:?}");
    assert_eq!(check.stderr, "", "{check:?}");
    assert_eq!(check.stdout, "All checks passed!\n");
}

#[test]
fn old_spellings_work_with_a_deprecation_that_quiet_does_not_hide() {
    let dir = project(
        "[tool.pt2lsp]\nmemory_limit = 2048\nout_dir = \"artifacts\"\nselectt = []\n\
         [[tool.pt2lsp.entrypoints]]\nname = \"m\"\nmodel = \"clean:f\"\n\
         example_args = \"clean:ARGS\"\n",
    );
    for quiet in [false, true] {
        let args: &[&str] = if quiet { &["check", "-q"] } else { &["check"] };
        let check = pt2lsp(dir.path(), args);
        assert_eq!(check.code, 0, "{check:?}");
        for expected in [
            "`tool.pt2lsp.memory_limit` is deprecated; spell it `tool.pt2lsp.memory-limit`",
            "`tool.pt2lsp.out_dir` is deprecated; spell it `tool.pt2lsp.out-dir`",
            "`tool.pt2lsp.entrypoints[0].example_args` is deprecated; spell it \
             `tool.pt2lsp.entrypoints[0].example-args`",
        ] {
            assert!(check.stderr.contains(expected), "{expected}\n{check:?}");
        }
        // An unknown key stays an ordinary warning, which -q hides.
        assert_eq!(check.stderr.contains("selectt"), !quiet, "{check:?}");
    }
    // A bad value under an old spelling is named as written, and stops the run.
    let dir = project("[tool.pt2lsp]\nmemory_limit = \"lots\"\n");
    let check = pt2lsp(dir.path(), &["check"]);
    assert_eq!(check.code, 2, "{check:?}");
    assert!(
        check.stderr.contains("tool.pt2lsp.memory_limit: must be"),
        "{check:?}"
    );
}

/// Every setting the VS Code extension declares in `package.json` has a row in its README's
/// settings table (issue 33: three were missing).
#[test]
fn every_vscode_setting_is_documented() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../editors/vscode");
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(root.join("package.json")).unwrap()).unwrap();
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let rows: Vec<&str> = readme
        .lines()
        .filter(|line| line.starts_with("| `"))
        .collect();
    let settings = manifest["contributes"]["configuration"]["properties"]
        .as_object()
        .unwrap();
    assert!(settings.len() >= 10, "{settings:?}");
    let missing: Vec<&String> = settings
        .keys()
        .filter(|key| {
            let cell = format!("`{key}`");
            !rows.iter().any(|row| {
                row.split('|')
                    .nth(1)
                    .is_some_and(|first| first.contains(&cell))
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "settings of package.json without a row in editors/vscode/README.md: {missing:?}"
    );
}
