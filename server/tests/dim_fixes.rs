//! The tracer's `Dim` constraint fixes, with the real binary and real torch: on each
//! `fix_needs_trace` fixture of `fixtures/fixes/dims/`, `check --trace` puts torch's
//! `Suggested fixes:` on the PT401 diagnostic as a safe fix, `check --trace --fix` applies it,
//! the re-check is clean, and the fixed file exports with real torch.
//!
//! The static pass's fix of a `Dim` another module declares goes there too: `check --fix
//! --unsafe-fixes` edits that module, and the fixed project exports.
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

#[path = "support/tree.rs"]
mod tree;

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

/// Whether real torch exports a project: its convention file through
/// `tests/python/export_fixture.py`, or its export script run as the user runs it.
fn exports(python: &Path, project: &Path, entry: &str) -> Result<(), String> {
    let out = project.join("export.json");
    let run = if entry.starts_with("scripts/") {
        Command::new(python)
            .arg(project.join(entry))
            .args(["--out", project.join("exported.pt2").to_str().unwrap()])
            .current_dir(project)
            .env("PYTHONPATH", project)
            .output()
            .unwrap()
    } else {
        let run = Command::new(python)
            .arg(repository().join("tests/python/export_fixture.py"))
            .arg(project.join(entry))
            .arg(&out)
            .output()
            .unwrap();
        let result: Value = serde_json::from_str(&fs::read_to_string(&out).unwrap_or_default())
            .map_err(|error| {
                format!(
                    "no export result ({error}): {}",
                    String::from_utf8_lossy(&run.stderr)
                )
            })?;
        return if result["ok"] == true {
            Ok(())
        } else {
            Err(result.to_string())
        };
    };
    if run.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&run.stderr).into_owned())
    }
}

/// A guard in one module on a `Dim` another module declares, exported by a third: the static
/// pass's fix is carried by a companion on the `Dim(...)` call, so `check --diff` shows and
/// `check --fix --unsafe-fixes` (no trace) makes the edit in the declaring module and in no
/// other file, the check after it is clean, and real torch, which refused the project, exports
/// it. `dims_elsewhere` imports the `Dim`s (`from pkg.dims import BATCH`, `dims.SEQ`);
/// `shapes_module`'s script imports the whole spec (`from tagger.shapes import
/// DYNAMIC_SHAPES`) and passes it to `torch.export.export`.
#[test]
fn the_static_fix_edits_the_dim_where_another_module_declares_it() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    for (fixture, entry, guarded, declaring, fixed_line) in [
        (
            "dims_elsewhere",
            "export_chunked.py",
            "pkg/model.py",
            "pkg/dims.py",
            "BATCH = Dim(\"batch\", max=16)  # info[PT401]\n",
        ),
        (
            "shapes_module",
            "scripts/export_tagger.py",
            "tagger/model.py",
            "tagger/shapes.py",
            "TOKENS = Dim(\"tokens\", max=128)  # info[PT401]\n",
        ),
    ] {
        let project = tempfile::tempdir().unwrap();
        tree::copy_tree(
            &repository().join("fixtures/projects").join(fixture),
            project.path(),
        );
        let read = |path: &str| fs::read_to_string(project.path().join(path)).unwrap();
        let (entry_text, guarded_text) = (read(entry), read(guarded));
        assert!(
            exports(python, project.path(), entry).is_err(),
            "{fixture}: torch exports the project before the fix"
        );

        let diff = pt2lsp(
            project.path(),
            python,
            &["check", "--diff", "--unsafe-fixes", "."],
        );
        assert!(
            diff.stdout.contains(&format!("--- {declaring}"))
                && diff.stdout.contains(&format!("+{}", fixed_line.trim_end())),
            "{fixture}: {diff:?}"
        );

        let fixed = pt2lsp(
            project.path(),
            python,
            &["check", "--fix", "--unsafe-fixes", "."],
        );
        assert_eq!(fixed.code, 0, "{fixture}: {fixed:?}");
        let declared = read(declaring);
        assert!(declared.contains(fixed_line), "{fixture}: {declared}");
        assert_eq!(
            read(entry),
            entry_text,
            "{fixture}: the entry file was edited"
        );
        assert_eq!(
            read(guarded),
            guarded_text,
            "{fixture}: the guard's file was edited"
        );

        let again = pt2lsp(project.path(), python, &["check", "."]);
        assert_eq!(again.code, 0, "{fixture}: {again:?}");
        if let Err(error) = exports(python, project.path(), entry) {
            panic!("{fixture}: the fixed project does not export:\n{declared}\n{error}");
        }
    }
}

/// A guard in the package on a `Dim` the export script writes itself (`batch = Dim(...)` in
/// its `main()`, `SEQ = Dim(...)` at its module level): the script's own report carries the
/// fix, on the `Dim(...)` call, so `check --diff` shows and `check --fix --unsafe-fixes` makes
/// the edit in the scripts and in no package file, whether the project has a `pyproject.toml`
/// at its root or is a loose directory, and whether the check is given the project or one
/// script; the check after is clean, and real torch, which refused both scripts, exports them.
#[test]
fn the_static_fix_edits_the_dim_the_export_script_writes() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let fixed_lines = [
        (
            "scripts/export.py",
            "    batch = Dim(\"batch\", max=16)  # info[PT401]\n",
        ),
        (
            "scripts/export_encoder.py",
            "SEQ = Dim(\"seq\", max=128)  # info[PT401]\n",
        ),
    ];
    let package = [
        "mymodels/head.py",
        "mymodels/encoder.py",
        "mymodels/model.py",
    ];
    for (layout, asked) in [
        ("pyproject.toml", &["."][..]),
        ("pyproject.toml", &fixed_lines.map(|(script, _)| script)[..]),
        ("loose", &["."][..]),
        (
            "loose",
            &["scripts/export.py", "scripts/export_encoder.py"][..],
        ),
    ] {
        let how = format!("{layout}, check {asked:?}");
        let project = tempfile::tempdir().unwrap();
        tree::copy_tree(
            &repository().join("fixtures/projects/dim_in_script"),
            project.path(),
        );
        if layout == "pyproject.toml" {
            fs::write(
                project.path().join("pyproject.toml"),
                "[project]\nname = \"classifier\"\n",
            )
            .unwrap();
        }
        let read = |path: &str| fs::read_to_string(project.path().join(path)).unwrap();
        let before: Vec<String> = package.iter().map(|path| read(path)).collect();
        for (script, _) in fixed_lines {
            assert!(
                exports(python, project.path(), script).is_err(),
                "{how}: torch exports {script} before the fix"
            );
        }

        let mut args = vec!["check", "--diff", "--unsafe-fixes"];
        args.extend(asked);
        let diff = pt2lsp(project.path(), python, &args);
        for (script, fixed_line) in fixed_lines {
            assert!(
                diff.stdout.contains(&format!("--- {script}"))
                    && diff.stdout.contains(&format!("+{}", fixed_line.trim_end())),
                "{how}: {diff:?}"
            );
        }
        assert!(!diff.stdout.contains("--- mymodels"), "{how}: {diff:?}");

        let mut args = vec!["check", "--fix", "--unsafe-fixes"];
        args.extend(asked);
        let fixed = pt2lsp(project.path(), python, &args);
        assert_eq!(fixed.code, 0, "{how}: {fixed:?}");
        for (script, fixed_line) in fixed_lines {
            let text = read(script);
            assert!(text.contains(fixed_line), "{how}: {script}:\n{text}");
        }
        let after: Vec<String> = package.iter().map(|path| read(path)).collect();
        assert_eq!(after, before, "{how}: a package file was edited");

        let again = pt2lsp(project.path(), python, &["check", "."]);
        assert_eq!(again.code, 0, "{how}: {again:?}");
        for (script, _) in fixed_lines {
            if let Err(error) = exports(python, project.path(), script) {
                panic!("{how}: the fixed {script} does not export:\n{error}");
            }
        }
    }
}

/// The same project traced: torch's fix for each guard in the package lands on the `Dim` the
/// script writes, where the static companion stands, and the two are one diagnostic
/// (`static+trace`) with torch's safe fix; `check --trace --fix` edits the scripts only, and
/// real torch exports both.
#[test]
fn torchs_fix_meets_the_static_one_on_the_dim_the_export_script_writes() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let project = tempfile::tempdir().unwrap();
    tree::copy_tree(
        &repository().join("fixtures/projects/dim_in_script"),
        project.path(),
    );
    let read = |path: &str| fs::read_to_string(project.path().join(path)).unwrap();
    let head = read("mymodels/head.py");
    let run = pt2lsp(
        project.path(),
        python,
        &["check", "--trace", "--format", "json", "--exit-zero", "."],
    );
    let items: Vec<Value> = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|error| panic!("{error}\n{}\n{}", run.stdout, run.stderr));
    let mut companions: Vec<(String, u64, String, String)> = items
        .iter()
        .filter(|item| item["severity"] == "info")
        .map(|item| {
            (
                item["file"].as_str().unwrap().to_owned(),
                item["line"].as_u64().unwrap(),
                item["source"].as_str().unwrap().to_owned(),
                item["fix"]["applicability"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect();
    companions.sort();
    let expected = |file: &str, line| {
        (
            file.to_owned(),
            line,
            "static+trace".to_owned(),
            "safe".to_owned(),
        )
    };
    assert_eq!(
        companions,
        [
            expected("scripts/export.py", 17),
            expected("scripts/export_encoder.py", 9)
        ],
        "{items:#?}"
    );

    let fixed = pt2lsp(project.path(), python, &["check", "--trace", "--fix", "."]);
    assert_eq!(fixed.code, 0, "{fixed:?}");
    assert!(
        read("scripts/export.py").contains("batch = Dim(\"batch\", max=16)"),
        "{fixed:?}"
    );
    assert!(
        read("scripts/export_encoder.py").contains("SEQ = Dim(\"seq\", max=128)"),
        "{fixed:?}"
    );
    assert_eq!(
        read("mymodels/head.py"),
        head,
        "the guard's file was edited"
    );
    for script in ["scripts/export.py", "scripts/export_encoder.py"] {
        if let Err(error) = exports(python, project.path(), script) {
            panic!("the fixed {script} does not export:\n{error}");
        }
    }
}

/// An entrypoint table names its spec by reference (`dynamic-shapes =
/// "mymodels.export_spec:DYNAMIC_SHAPES"`), and the `Dim` is written inside that dict, bound by
/// no name of its own: torch's fix for the guard in the package lands on the `Dim(...)` there
/// (the worker names the spec's binding, `declared_spec`), `check --trace --diff` shows it,
/// `check --trace --fix` edits that module only, and real torch exports the fixed entrypoint.
#[test]
fn torchs_fix_edits_the_dim_inside_the_spec_an_entrypoint_table_names() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let project = tempfile::tempdir().unwrap();
    tree::copy_tree(
        &repository().join("fixtures/projects/dim_in_script/mymodels"),
        &project.path().join("mymodels"),
    );
    let spec_module = "mymodels/export_spec.py";
    fs::write(
        project.path().join(spec_module),
        "import torch\nfrom torch.export import Dim\n\nfrom .model import build_classifier\n\n\
         MODEL = build_classifier().eval()\nEXAMPLE_ARGS = (torch.randn(8, 16),)\n\
         DYNAMIC_SHAPES = {\"x\": {0: Dim(\"batch\", max=64)}}\n",
    )
    .unwrap();
    fs::write(
        project.path().join("pyproject.toml"),
        "[project]\nname = \"classifier\"\n\n[[tool.pt2lsp.entrypoints]]\nname = \"classifier\"\n\
         model = \"mymodels.export_spec:MODEL\"\nexample-args = \"mymodels.export_spec:EXAMPLE_ARGS\"\n\
         dynamic-shapes = \"mymodels.export_spec:DYNAMIC_SHAPES\"\n",
    )
    .unwrap();
    let read = |path: &str| fs::read_to_string(project.path().join(path)).unwrap();
    let head = read("mymodels/head.py");
    let exported = || {
        let run = Command::new(python)
            .args([
                "-c",
                "import torch\nfrom mymodels.export_spec import *\n\
                 torch.export.export(MODEL, EXAMPLE_ARGS, dynamic_shapes=DYNAMIC_SHAPES)",
            ])
            .current_dir(project.path())
            .output()
            .unwrap();
        (
            run.status.success(),
            String::from_utf8_lossy(&run.stderr).into_owned(),
        )
    };
    assert!(!exported().0, "torch exports the entrypoint before the fix");

    let run = pt2lsp(
        project.path(),
        python,
        &["check", "--trace", "--format", "json", "--exit-zero", "."],
    );
    let items: Vec<Value> = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|error| panic!("{error}\n{}\n{}", run.stdout, run.stderr));
    let companion = items
        .iter()
        .find(|item| item["severity"] == "info" && item["file"] == spec_module)
        .unwrap_or_else(|| panic!("no companion in {spec_module}: {items:#?}"));
    assert_eq!(companion["line"], 8, "{companion:#}");
    assert_eq!(companion["fix"]["applicability"], "safe", "{companion:#}");

    let diff = pt2lsp(project.path(), python, &["check", "--trace", "--diff", "."]);
    assert!(
        diff.stdout.contains(&format!("--- {spec_module}"))
            && diff
                .stdout
                .contains("+DYNAMIC_SHAPES = {\"x\": {0: Dim(\"batch\", max=16)}}"),
        "{diff:?}"
    );
    let fixed = pt2lsp(project.path(), python, &["check", "--trace", "--fix", "."]);
    assert!(
        read(spec_module).contains("DYNAMIC_SHAPES = {\"x\": {0: Dim(\"batch\", max=16)}}"),
        "{fixed:?}"
    );
    assert_eq!(
        read("mymodels/head.py"),
        head,
        "the guard's file was edited"
    );
    let (ok, stderr) = exported();
    assert!(ok, "the fixed entrypoint does not export:\n{stderr}");
}
