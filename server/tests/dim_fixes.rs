//! The tracer's `Dim` constraint fixes, with the real binary and real torch: on each
//! `fix_needs_trace` fixture of `fixtures/fixes/dims/`, `check --trace` puts torch's
//! `Suggested fixes:` on the PT401 diagnostic as a safe fix, `check --trace --fix` applies it,
//! the re-check is clean, and the fixed file exports with real torch.
//!
//! The interpreter is `PT2LSP_PYTHON`, else `../.venv/bin/python`. Without torch the test fails
//! when `CI` is set and is skipped, with a note, otherwise.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

#[path = "support/torch.rs"]
mod torch_support;

use torch_support::{repository, turn};

fn torch_python() -> Option<&'static std::path::Path> {
    torch_support::torch_python("dim fix")
}

fn pt2lsp(dir: &Path, python: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(args)
        .args(["--python", python.to_str().unwrap()])
        .current_dir(dir)
        .env("TMPDIR", dir)
        .env_remove("VIRTUAL_ENV"))
}

fn traced_fixtures() -> Vec<PathBuf> {
    let dir = repository().join("fixtures/fixes/dims");
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension().is_some_and(|ext| ext == "py")
                && fs::read_to_string(path)
                    .unwrap()
                    .contains("fix_needs_trace = True")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn trace_diagnostics_carry_torchs_suggested_fix_and_it_exports() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let fixtures = traced_fixtures();
    assert!(fixtures.len() >= 2, "trace dims fixtures: {fixtures:?}");
    let work = tempfile::tempdir().unwrap();
    let mut originals = Vec::new();
    for fixture in &fixtures {
        let name = fixture.file_name().unwrap().to_str().unwrap().to_owned();
        let original = fs::read_to_string(fixture).unwrap();
        fs::write(work.path().join(&name), &original).unwrap();
        originals.push((name, original));
    }

    // One traced check of all of them: every file's PT401 carries torch's fix, as a safe one.
    let report = pt2lsp(
        work.path(),
        python,
        &["check", "--trace", "--format", "json", "."],
    );
    let items: Vec<Value> = serde_json::from_str(&report.stdout)
        .unwrap_or_else(|error| panic!("{error}\n{}\n{}", report.stdout, report.stderr));
    for (name, _) in &originals {
        let fixes: Vec<&Value> = items
            .iter()
            .filter(|item| {
                item["code"] == "PT401"
                    && item["source"]
                        .as_str()
                        .is_some_and(|source| source.ends_with("trace"))
                    && item["file"].as_str().unwrap().ends_with(name.as_str())
            })
            .filter_map(|item| item.get("fix"))
            .collect();
        assert!(
            !fixes.is_empty(),
            "{name}: no traced PT401 with a fix: {items:#?}"
        );
        for fix in fixes {
            assert_eq!(fix["applicability"], "safe", "{name}: {fix}");
            assert!(
                fix["title"].as_str().unwrap().contains("Dim("),
                "{name}: {fix}"
            );
        }
    }

    // `--fix` applies them; its closing re-check finds nothing left.
    let fixed = pt2lsp(work.path(), python, &["check", "--trace", "--fix", "."]);
    assert_eq!(fixed.code, 0, "{}\n{}", fixed.stdout, fixed.stderr);

    // And the real exporter accepts each fixed file.
    for (name, original) in &originals {
        let file = work.path().join(name);
        let text = fs::read_to_string(&file).unwrap();
        assert_ne!(&text, original, "{name}: --fix changed nothing");
        let out = work.path().join(format!("{name}.json"));
        let export = Command::new(python)
            .arg(repository().join("tests/python/export_fixture.py"))
            .arg(&file)
            .arg(&out)
            .output()
            .unwrap();
        let result: Value = serde_json::from_str(&fs::read_to_string(&out).unwrap_or_default())
            .unwrap_or_else(|error| {
                panic!(
                    "{name}: no export result ({error}): {}",
                    String::from_utf8_lossy(&export.stderr)
                )
            });
        assert_eq!(
            result["ok"], true,
            "{name}: the fixed file does not export:\n{text}\n{result:#}"
        );
    }
}
