//! `pt2lsp check` and `pt2lsp rule`, run as the real binary.
//!
//! Inputs contain syntax errors only (PT001), so the expectations hold however many other
//! rules the analyzer grows. Trees that need `.gitignore` or `pyproject.toml` are built in
//! temporary directories; the snapshot tree is `tests/data/tree`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

#[path = "support/run.rs"]
mod support;
#[path = "support/tree.rs"]
mod tree;

use support::{Run, run};

fn pt2lsp(dir: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR"))
}

/// A temporary directory holding `files` (path, contents).
fn tree(files: &[(&str, &[u8])]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in files {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }
    dir
}

/// One syntax error, at 1:9: the colon is missing.
const BROKEN: &[u8] = b"def f(x)\n    return x\n";
const CLEAN: &[u8] = b"def f(x):\n    return x\n";

fn data_tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tree")
}

/// The files named in a text report, one per diagnostic line.
fn reported_files(run: &Run) -> Vec<&str> {
    let mut files: Vec<&str> = run
        .stdout
        .lines()
        .filter(|line| line.contains(": PT"))
        .map(|line| line.split(':').next().unwrap())
        .collect();
    files.dedup();
    files
}

fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|error| panic!("{error}: {}", run.stdout))
}

#[test]
fn exit_codes() {
    let dir = tree(&[("clean.py", CLEAN)]);
    let clean = pt2lsp(dir.path(), &["check"]);
    assert_eq!(clean.code, 0, "{clean:?}");
    assert_eq!(clean.stdout, "All checks passed!\n");

    fs::write(dir.path().join("broken.py"), BROKEN).unwrap();
    let broken = pt2lsp(dir.path(), &["check"]);
    assert_eq!(broken.code, 1, "{broken:?}");
    assert!(
        broken.stdout.starts_with("broken.py:1:9: PT001 [error] "),
        "{}",
        broken.stdout
    );
    assert!(
        broken.stdout.ends_with("Found 1 error in 1 file.\n"),
        "{}",
        broken.stdout
    );

    let exit_zero = pt2lsp(dir.path(), &["check", "--exit-zero"]);
    assert_eq!(exit_zero.code, 0);
    assert_eq!(exit_zero.stdout, broken.stdout);

    let missing = pt2lsp(dir.path(), &["check", "clean.py", "nowhere/missing.py"]);
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(
        missing.stderr.contains("nowhere/missing.py"),
        "{}",
        missing.stderr
    );
    assert_eq!(missing.stdout, "");
}

#[test]
fn check_flag_is_the_check_subcommand() {
    let dir = tree(&[("broken.py", BROKEN)]);
    let flag = pt2lsp(dir.path(), &["--format", "json", "--check", "broken.py"]);
    let subcommand = pt2lsp(dir.path(), &["check", "--format", "json", "broken.py"]);
    assert_eq!(flag.code, 1, "{flag:?}");
    assert_eq!(flag.stdout, subcommand.stdout);
}

#[test]
fn undecodable_files_are_diagnostics() {
    let dir = tree(&[
        ("latin1.py", b"# caf\xe9\nx = 1\n"),
        ("binary.py", b"\x7fELF\x02\x01\x01\x00\x00\x00"),
        ("clean.py", CLEAN),
    ]);
    let run = pt2lsp(dir.path(), &["check"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout.contains(
            "latin1.py:1:6: PT001 [error] File is not valid UTF-8 (invalid byte 0xE9 at offset 5); \
             pt2lsp reads Python source as UTF-8"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("binary.py:1:1: PT001 [error] File contains a NUL byte (at offset 7)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.ends_with("Found 2 errors in 2 files.\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn files_past_four_gib_are_refused() {
    let dir = tree(&[]);
    // A sparse file: its size is checked before a byte of it is read.
    let huge = fs::File::create(dir.path().join("huge.py")).unwrap();
    huge.set_len(u64::from(u32::MAX) + 1).unwrap();
    let run = pt2lsp(dir.path(), &["check"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("huge.py") && run.stderr.contains("4 GiB"),
        "{}",
        run.stderr
    );
}

#[test]
fn ignore_files_and_hidden_files_are_honoured_but_explicit_paths_win() {
    let dir = tree(&[
        (".gitignore", b"ignored/\n"),
        (".ignore", b"scratch.py\n"),
        ("ignored/broken.py", BROKEN),
        ("scratch.py", BROKEN),
        (".hidden/broken.py", BROKEN),
        ("venv/lib/broken.py", BROKEN),
        ("notes.txt", BROKEN),
        ("stub.pyi", BROKEN),
        ("src/ok.py", CLEAN),
    ]);
    let run = pt2lsp(dir.path(), &["check"]);
    assert_eq!(reported_files(&run), ["stub.pyi"], "{run:?}");

    let explicit = pt2lsp(
        dir.path(),
        &["check", "ignored/broken.py", "scratch.py", "notes.txt"],
    );
    assert_eq!(
        reported_files(&explicit),
        ["ignored/broken.py", "notes.txt", "scratch.py"]
    );
    let explicit_dir = pt2lsp(dir.path(), &["check", "ignored"]);
    assert_eq!(reported_files(&explicit_dir), ["ignored/broken.py"]);
}

#[test]
fn exclude_from_pyproject_and_flag() {
    let dir = tree(&[
        (
            "pyproject.toml",
            b"[tool.pt2lsp]\nexclude = [\"generated\", \"models/legacy_*.py\"]\n",
        ),
        ("generated/broken.py", BROKEN),
        ("models/legacy_v1.py", BROKEN),
        ("models/current.py", BROKEN),
        ("models/other.py", BROKEN),
    ]);
    let run = pt2lsp(dir.path(), &["check"]);
    assert_eq!(
        reported_files(&run),
        ["models/current.py", "models/other.py"],
        "{run:?}"
    );

    let flag = pt2lsp(dir.path(), &["check", "--exclude", "other.py"]);
    assert_eq!(reported_files(&flag), ["models/current.py"], "{flag:?}");

    // Paths are relative to the configuration file, wherever pt2lsp runs from.
    let from_below = pt2lsp(&dir.path().join("models"), &["check", "."]);
    assert_eq!(
        reported_files(&from_below),
        ["current.py", "other.py"],
        "{from_below:?}"
    );

    let explicit = pt2lsp(dir.path(), &["check", "generated/broken.py"]);
    assert_eq!(reported_files(&explicit), ["generated/broken.py"]);
}

#[test]
fn extend_include_adds_files_a_walk_checks_and_exclude_still_wins() {
    let dir = tree(&[
        (
            "pyproject.toml",
            b"[tool.pt2lsp]\nextend-include = [\"*.pyw\", \"bin/*\"]\nexclude = [\"bin/old\"]\n",
        ),
        ("gui.pyw", BROKEN),
        ("bin/serve", BROKEN),
        ("bin/old", BROKEN),
        ("notes.txt", BROKEN),
        (
            "nbs/empty.ipynb",
            br#"{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"#,
        ),
        ("model.py", BROKEN),
    ]);
    let run = pt2lsp(dir.path(), &["check"]);
    assert_eq!(
        reported_files(&run),
        ["bin/serve", "gui.pyw", "model.py"],
        "{run:?}"
    );
    let without = tree(&[("gui.pyw", BROKEN), ("model.py", BROKEN)]);
    let run = pt2lsp(without.path(), &["check"]);
    assert_eq!(reported_files(&run), ["model.py"], "{run:?}");
}

#[test]
fn select_and_ignore_from_flags_and_pyproject() {
    let dir = tree(&[("broken.py", BROKEN)]);
    let codes = |args: &[&str]| pt2lsp(dir.path(), args).code;
    assert_eq!(codes(&["check", "--ignore", "PT001"]), 0);
    assert_eq!(codes(&["check", "--ignore", "PT1,PT0"]), 0);
    assert_eq!(codes(&["check", "--select", "PT1"]), 0);
    assert_eq!(codes(&["check", "--select", "PT1", "--select", "PT001"]), 1);
    assert_eq!(codes(&["check", "--select", "PT0", "--ignore", "PT"]), 1);

    fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.pt2lsp]\nselect = [\"PT1\"]\n",
    )
    .unwrap();
    assert_eq!(codes(&["check"]), 0);
    assert_eq!(codes(&["check", "--select", "PT001"]), 1);
    assert_eq!(codes(&["check", "--isolated"]), 1);

    fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.pt2lsp]\nignore = [\"PT001\"]\n",
    )
    .unwrap();
    assert_eq!(codes(&["check"]), 0);
    // `--select` starts over: the file's `ignore` no longer applies.
    assert_eq!(codes(&["check", "--select", "PT"]), 1);

    let unknown = pt2lsp(dir.path(), &["check", "--select", "E501"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("`E501` in --select"),
        "{}",
        unknown.stderr
    );
    fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.pt2lsp]\nignore = [\"PT9\"]\n",
    )
    .unwrap();
    let unknown = pt2lsp(dir.path(), &["check"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stderr
            .contains("pyproject.toml: tool.pt2lsp.ignore"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn configuration_problems() {
    let dir = tree(&[("broken.py", BROKEN)]);
    let write = |text: &str| fs::write(dir.path().join("pyproject.toml"), text).unwrap();

    write("[tool.pt2lsp\n");
    let run = pt2lsp(dir.path(), &["check"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("pyproject.toml is not valid TOML"),
        "{}",
        run.stderr
    );

    write("[tool.pt2lsp]\nstrict = \"yes\"\n");
    let run = pt2lsp(dir.path(), &["check"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("tool.pt2lsp.strict"), "{}", run.stderr);

    write(
        "[tool.pt2lsp]\nselectt = [\"PT\"]\ntimeout = 60\n[[tool.pt2lsp.entrypoints]]\nname = \"m\"\n",
    );
    let run = pt2lsp(dir.path(), &["check"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("unknown key `tool.pt2lsp.selectt`"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("warning:").count(),
        1,
        "only the unknown key: {}",
        run.stderr
    );

    // A pyproject.toml without the table is passed over for the next one up.
    let inner = dir.path().join("inner");
    fs::create_dir(&inner).unwrap();
    fs::write(
        inner.join("pyproject.toml"),
        "[project]\nname = \"inner\"\n",
    )
    .unwrap();
    fs::write(inner.join("broken.py"), BROKEN).unwrap();
    write("[tool.pt2lsp]\nignore = [\"PT001\"]\n");
    assert_eq!(pt2lsp(&inner, &["check"]).code, 0);

    // `--config` names a file; another TOML file holds the table at its top level.
    fs::write(dir.path().join("pt2lsp.toml"), "select = [\"PT001\"]\n").unwrap();
    assert_eq!(
        pt2lsp(&inner, &["check", "--config", "../pt2lsp.toml"]).code,
        1
    );
    let missing = pt2lsp(&inner, &["check", "--config", "nowhere.toml"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("nowhere.toml"),
        "{}",
        missing.stderr
    );
}

#[test]
fn json_output_has_every_field() {
    let dir = tree(&[("b.py", BROKEN), ("a.py", b"x = (\n")]);
    let run = pt2lsp(dir.path(), &["check", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let diagnostics = json(&run);
    let diagnostics = diagnostics.as_array().unwrap();
    let files: Vec<&str> = diagnostics
        .iter()
        .map(|d| d["file"].as_str().unwrap())
        .collect();
    let mut sorted = files.clone();
    sorted.sort_unstable();
    assert_eq!(files, sorted);
    for diagnostic in diagnostics {
        for field in ["line", "column", "end_line", "end_column"] {
            assert!(
                diagnostic[field].as_u64().unwrap() >= 1,
                "{field} in {diagnostic}"
            );
        }
        assert_eq!(diagnostic["code"], "PT001");
        assert_eq!(diagnostic["name"], "syntax-error");
        assert_eq!(diagnostic["severity"], "error");
        assert_eq!(diagnostic["source"], "static");
        assert!(
            diagnostic["message"]
                .as_str()
                .unwrap()
                .starts_with("Syntax error: ")
        );
        assert!(
            diagnostic.get("fix").is_none(),
            "no fix for a syntax error: {diagnostic}"
        );
    }

    let empty = pt2lsp(dir.path(), &["check", "--format", "json", "--ignore", "PT"]);
    assert_eq!(empty.code, 0);
    assert_eq!(json(&empty), serde_json::json!([]));
}

#[test]
fn sarif_output_is_valid_for_code_scanning() {
    let dir = tree(&[("src/broken.py", BROKEN)]);
    let run = pt2lsp(dir.path(), &["check", "--format", "sarif"]);
    assert_eq!(run.code, 1, "{run:?}");
    let log = json(&run);
    assert_eq!(log["version"], "2.1.0");
    assert!(log["$schema"].as_str().unwrap().contains("sarif"));
    let sarif_run = &log["runs"][0];
    let driver = &sarif_run["tool"]["driver"];
    assert_eq!(driver["name"], "pt2lsp");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    // Only a repository Cargo.toml declares is linked (see the rules' `helpUri` below).
    assert_eq!(
        driver["informationUri"].as_str().is_some(),
        !env!("CARGO_PKG_REPOSITORY").is_empty()
    );
    let rules = driver["rules"].as_array().unwrap();
    assert_eq!(rules.len(), pt2lsp_analyzer::Rule::ALL.len());
    for rule in rules {
        assert!(rule["id"].as_str().unwrap().starts_with("PT"), "{rule}");
        assert!(rule["name"].is_string() && rule["shortDescription"]["text"].is_string());
        assert!(rule["fullDescription"]["text"].is_string(), "{rule}");
        assert!(
            rule["help"]["markdown"]
                .as_str()
                .unwrap()
                .contains("## Why export fails")
        );
        // Cargo.toml declares no repository, so no link that may not open: the page is in
        // `help`. A declared one would link its `docs/rules/` page, which exists here.
        match rule["helpUri"].as_str() {
            None => assert!(env!("CARGO_PKG_REPOSITORY").is_empty(), "{rule}"),
            Some(uri) => {
                let page = uri.split_once("/blob/main/").unwrap().1;
                assert!(repository_file(page).is_file(), "{uri}");
            }
        }
        let level = rule["defaultConfiguration"]["level"].as_str().unwrap();
        assert!(["error", "warning", "note"].contains(&level), "{rule}");
    }

    let results = sarif_run["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    let result = &results[0];
    assert_eq!(result["ruleId"], "PT001");
    assert_eq!(
        rules[result["ruleIndex"].as_u64().unwrap() as usize]["id"],
        "PT001"
    );
    assert_eq!(result["level"], "error");
    assert!(result["message"]["text"].is_string());
    let location = &result["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "src/broken.py");
    assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert_eq!(location["region"]["startLine"], 1);
    assert_eq!(location["region"]["startColumn"], 9);
    assert_eq!(sarif_run["columnKind"], "unicodeCodePoints");
    assert!(
        sarif_run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
            .as_str()
            .unwrap()
            .starts_with("file:///")
    );
}

#[test]
fn github_output_escapes_properties_and_data() {
    let dir = tree(&[("a,b:c%.py", BROKEN)]);
    let run = pt2lsp(dir.path(), &["check", "--format", "github"]);
    assert_eq!(run.code, 1, "{run:?}");
    let line = run.stdout.lines().next().unwrap();
    assert!(
        line.starts_with("::error file=a%2Cb%3Ac%25.py,line=1,col=9,endLine=2,endColumn=1,"),
        "{line}"
    );
    assert!(line.contains(",title=PT001::Syntax error: "), "{line}");
    assert_eq!(
        run.stdout.lines().count(),
        1,
        "no summary line: {}",
        run.stdout
    );
}

#[test]
fn quiet_and_statistics() {
    let dir = tree(&[("a.py", BROKEN), ("b.py", b"x = (\n")]);
    let quiet = pt2lsp(dir.path(), &["check", "--quiet"]);
    assert_eq!(quiet.code, 1);
    assert_eq!(quiet.stdout.lines().count(), 2, "{}", quiet.stdout);
    assert!(!quiet.stdout.contains("Found"));

    let statistics = pt2lsp(dir.path(), &["check", "--statistics"]);
    assert_eq!(statistics.code, 1);
    assert_eq!(statistics.stdout, "2\tPT001\tsyntax-error\n");
    let statistics = pt2lsp(dir.path(), &["check", "--statistics", "--format", "json"]);
    assert_eq!(
        json(&statistics),
        serde_json::json!({
            "rules": [{"code": "PT001", "name": "syntax-error", "count": 2}],
            "trace": null,
        })
    );
    assert_eq!(
        pt2lsp(dir.path(), &["check", "--statistics", "--format", "sarif"]).code,
        2
    );
}

#[test]
fn text_without_a_terminal_has_no_colour() {
    let dir = tree(&[("a.py", BROKEN)]);
    let run = pt2lsp(dir.path(), &["check"]);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
}

#[test]
fn empty_directories_pass_with_a_warning() {
    let dir = tree(&[("README.md", b"# nothing to check\n")]);
    let run = pt2lsp(dir.path(), &["check"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("no Python files found"),
        "{}",
        run.stderr
    );
}

#[test]
fn rule_prints_documentation() {
    let dir = tree(&[]);
    let by_code = pt2lsp(dir.path(), &["rule", "PT001"]);
    assert_eq!(by_code.code, 0, "{by_code:?}");
    assert!(
        by_code.stdout.starts_with("# syntax-error (PT001)\n"),
        "{}",
        by_code.stdout
    );
    assert!(by_code.stdout.contains("## Why export fails"));
    assert_eq!(
        pt2lsp(dir.path(), &["rule", "syntax-error"]).stdout,
        by_code.stdout
    );
    assert_eq!(
        pt2lsp(dir.path(), &["rule", "pt001"]).stdout,
        by_code.stdout
    );

    let all = pt2lsp(dir.path(), &["rule", "--all"]);
    assert_eq!(all.code, 0);
    assert_eq!(
        all.stdout.matches("\n## What it does").count(),
        pt2lsp_analyzer::Rule::ALL.len()
    );
    assert!(all.stdout.contains("(PT101)") && all.stdout.contains("(PT601)"));

    let json_rule = pt2lsp(dir.path(), &["rule", "PT101", "--format", "json"]);
    let info = json(&json_rule);
    assert_eq!(info["code"], "PT101");
    assert_eq!(info["name"], "data-dependent-branch");
    assert_eq!(
        json(&pt2lsp(dir.path(), &["rule", "--all", "--format", "json"]))
            .as_array()
            .unwrap()
            .len(),
        pt2lsp_analyzer::Rule::ALL.len()
    );

    let unknown = pt2lsp(dir.path(), &["rule", "PT999"]);
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains("PT999"), "{}", unknown.stderr);
    assert_eq!(pt2lsp(dir.path(), &["rule"]).code, 0);
}

#[test]
fn help_and_version() {
    let dir = tree(&[]);
    let help = pt2lsp(dir.path(), &["--help"]);
    assert_eq!(help.code, 0);
    for word in ["check", "rule", "--check"] {
        assert!(help.stdout.contains(word), "{word} in {}", help.stdout);
    }
    let check_help = pt2lsp(dir.path(), &["check", "--help"]);
    for flag in [
        "--format",
        "--select",
        "--ignore",
        "--strict",
        "--no-strict",
        "--exclude",
        "--config",
        "--isolated",
        "--exit-zero",
        "--quiet",
        "--statistics",
        "--watch",
        "--show-settings",
        "--show-files",
        "--output-file",
        "--color",
        "concise",
        "*.ipynb",
        "pyproject.toml",
    ] {
        assert!(
            check_help.stdout.contains(flag),
            "{flag} in {}",
            check_help.stdout
        );
    }
    let version = pt2lsp(dir.path(), &["--version"]);
    assert_eq!(
        version.stdout,
        format!("pt2lsp {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(pt2lsp(dir.path(), &["check", "--format", "yaml"]).code, 2);
}

#[test]
fn a_mistyped_configuration_key_is_named_with_the_key_meant() {
    let dir = tree(&[
        ("pyproject.toml", b"[tool.pt2lsp]\nselekt = [\"PT1\"]\n"),
        ("model.py", b"x = 1\n"),
    ]);
    let run = pt2lsp(dir.path(), &["check", "model.py"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("unknown key `tool.pt2lsp.selekt`; did you mean `select`?"),
        "{}",
        run.stderr
    );
}

#[test]
fn snapshot_text() {
    let run = pt2lsp(&data_tree(), &["check"]);
    assert_eq!(run.code, 1, "{run:?}");
    insta::assert_snapshot!("text", run.stdout);
}

#[test]
fn snapshot_json() {
    let run = pt2lsp(&data_tree(), &["check", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    insta::assert_snapshot!("json", run.stdout);
}

#[test]
fn snapshot_github() {
    let run = pt2lsp(&data_tree(), &["check", "--format", "github"]);
    assert_eq!(run.code, 1, "{run:?}");
    insta::assert_snapshot!("github", run.stdout);
}

#[test]
fn snapshot_sarif_results() {
    let run = pt2lsp(&data_tree(), &["check", "--format", "sarif"]);
    let mut log = json(&run);
    // The rule table repeats every rule's documentation and the base URI is this machine's
    // checkout; the snapshot keeps what varies with the input.
    let results = log["runs"][0]["results"].take();
    insta::assert_snapshot!(
        "sarif_results",
        serde_json::to_string_pretty(&results).unwrap()
    );
}

/// Facts that cross files: a module base class and a fake kernel defined in sibling files of a
/// package, seen by a whole-workspace check, and missed when each file is checked alone.
#[test]
fn workspace_facts_cross_files() {
    let dir = tree(&[
        ("pkg/__init__.py", b"from .base import Backbone\n"),
        ("pkg/base.py", b"import torch.nn as nn\n\nclass Backbone(nn.Module):\n    pass\n"),
        (
            "pkg/model.py",
            b"from pkg import Backbone\n\nclass Head(Backbone):\n    def forward(self, x):\n        if x.sum() > 0:\n            return x\n        return -x\n",
        ),
        (
            "pkg/ops.py",
            b"import torch\n\n@torch.library.custom_op(\"ws::scale\", mutates_args=())\ndef scale(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n",
        ),
        (
            "pkg/fakes.py",
            b"import torch\n\n@torch.library.register_fake(\"ws::scale\")\ndef _(x):\n    return torch.empty_like(x)\n",
        ),
    ]);
    let whole = json(&pt2lsp(dir.path(), &["check", "--format", "json", "."]));
    let codes: Vec<(String, String)> = whole
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_owned(),
                d["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        vec![("pkg/model.py".to_owned(), "PT101".to_owned())],
        "{whole}"
    );

    // A pre-commit hook passes the changed file only: the project's other files still give
    // their facts (the fake kernel in `fakes.py`), and only the given file is reported on.
    let alone = json(&pt2lsp(
        dir.path(),
        &["check", "--format", "json", "pkg/ops.py"],
    ));
    assert_eq!(alone, serde_json::json!([]), "{alone}");
}

/// Whole-program analysis: the entry file declares the batch dynamic, the model lives in a
/// package; the problems land in the files where they are, also when only one is checked.
#[test]
fn an_entrypoint_is_followed_into_the_files_of_its_model() {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects/three_files");
    let read = |path: &str| fs::read(project.join(path)).unwrap();
    let (entry, init, net, heads, helpers) = (
        read("export_net.py"),
        read("mymodels/__init__.py"),
        read("mymodels/net.py"),
        read("mymodels/heads.py"),
        read("mymodels/helpers.py"),
    );
    let dir = tree(&[
        ("pyproject.toml", b"[project]\nname = \"demo\"\n"),
        ("export_net.py", &entry),
        ("mymodels/__init__.py", &init),
        ("mymodels/net.py", &net),
        ("mymodels/heads.py", &heads),
        ("mymodels/helpers.py", &helpers),
    ]);
    let found = |run: &Run| -> Vec<(String, u64, String)> {
        located(run)
            .into_iter()
            .map(|(file, line, code, _)| (file, line, code))
            .collect()
    };
    let whole = pt2lsp(dir.path(), &["check", "--format", "json", "."]);
    assert_eq!(
        found(&whole),
        vec![
            // The companion on the `Dim` the script writes, with the guard's fix.
            ("export_net.py".to_owned(), 10, "PT401".to_owned()),
            ("mymodels/heads.py".to_owned(), 11, "PT401".to_owned()),
            ("mymodels/helpers.py".to_owned(), 5, "PT101".to_owned()),
        ],
        "{}",
        whole.stdout
    );
    let alone = pt2lsp(
        dir.path(),
        &["check", "--format", "json", "mymodels/heads.py"],
    );
    assert_eq!(
        found(&alone),
        vec![("mymodels/heads.py".to_owned(), 11, "PT401".to_owned())],
        "{}",
        alone.stdout
    );
}

/// A copy of `fixtures/projects/installed_library`: a project whose `venv/` has the library
/// `detlib` installed, and the path of that environment's interpreter.
fn installed_library_project() -> (TempDir, PathBuf) {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects/installed_library");
    let dir = tempfile::tempdir().unwrap();
    tree::copy_tree(&fixture, dir.path());
    let python = dir.path().join("venv/bin/python");
    (dir, python)
}

/// (file, line, code, severity) of each diagnostic of a JSON report.
fn located(run: &Run) -> Vec<(String, u64, String, String)> {
    json(run)
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_owned(),
                d["line"].as_u64().unwrap(),
                d["code"].as_str().unwrap().to_owned(),
                d["severity"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A call a deployment target cannot run (PT707), inside an installed library the model calls,
/// is warned about on the project's line that reaches it, as other findings there are: the
/// library's code is lowered with the model. `--target` names the target, as the configuration
/// would.
#[test]
fn a_library_call_a_target_cannot_run_is_warned_on_the_calling_line() {
    let (dir, python) = installed_library_project();
    let boxes = dir
        .path()
        .join("venv/lib/python3.11/site-packages/detlib/ops/boxes.py");
    let text = std::fs::read_to_string(&boxes).unwrap();
    let with_histc = text.replace(
        "    if scores.max() > 0.5:",
        "    scores = scores / torch.histc(scores, bins=4).max()\n    if scores.max() > 0.5:",
    );
    assert_ne!(text, with_histc);
    std::fs::write(&boxes, with_histc).unwrap();
    let python = python.to_str().unwrap();
    let run = pt2lsp(
        dir.path(),
        &[
            "check",
            "--format",
            "json",
            "--exit-zero",
            "--python",
            python,
            "--target",
            "executorch",
            "detector/model.py",
        ],
    );
    let report = json(&run);
    let warned: Vec<&Value> = report
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "PT707")
        .collect();
    assert_eq!(warned.len(), 1, "{}", run.stdout);
    assert_eq!(
        (&warned[0]["file"], &warned[0]["line"]),
        (
            &serde_json::json!("detector/model.py"),
            &serde_json::json!(7)
        ),
        "{}",
        run.stdout
    );
    let message = warned[0]["message"].as_str().unwrap();
    assert!(
        message.contains("`torch.histc`") && message.contains("in `detlib.ops.boxes`, line 16"),
        "{message}"
    );
}

/// Calls into a library installed for the configured interpreter are followed: what fails
/// inside it lands on the project's line that calls it, with the library's line as related
/// information, and never in the library's files. Its summaries are cached by version.
#[test]
fn calls_into_installed_libraries_land_on_the_calling_line() {
    let (dir, python) = installed_library_project();
    let python = python.to_str().unwrap();
    let first = pt2lsp(
        dir.path(),
        &["check", "--format", "json", "--python", python, "."],
    );
    let expected = vec![
        (
            "detector/model.py".to_owned(),
            7,
            "PT101".to_owned(),
            "error".to_owned(),
        ),
        (
            "detector/model.py".to_owned(),
            7,
            "PT103".to_owned(),
            "warning".to_owned(),
        ),
        (
            "export_zoo.py".to_owned(),
            7,
            "PT401".to_owned(),
            "error".to_owned(),
        ),
    ];
    assert_eq!(located(&first), expected, "{}", first.stderr);
    let report = json(&first);
    let related: Vec<(String, u64)> = report[0]["related"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_owned(),
                r["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        related,
        vec![
            ("export_head.py".to_owned(), 6),
            (
                "venv/lib/python3.11/site-packages/detlib/ops/boxes.py".to_owned(),
                16
            ),
        ],
        "{report}"
    );
    assert!(
        report[0]["message"]
            .as_str()
            .unwrap()
            .contains("of installed detlib 0.3.0"),
        "{report}"
    );
    assert!(
        first
            .stderr
            .contains("Summarised installed libraries to follow calls into them: detlib 0.3.0"),
        "{}",
        first.stderr
    );
    let cached = dir
        .path()
        .join(".pt2lsp_cache")
        .join(format!("libraries-v{}", pt2lsp_analyzer::SUMMARY_FORMAT))
        .join("detlib-0.3.0.json");
    assert!(cached.is_file(), "no summary cache at {}", cached.display());
    assert_eq!(
        fs::read_to_string(dir.path().join(".pt2lsp_cache/.gitignore"))
            .unwrap()
            .lines()
            .last(),
        Some("*")
    );

    // The second run reads the summaries back: nothing is summarised, the report is the same.
    let second = pt2lsp(
        dir.path(),
        &["check", "--format", "json", "--python", python, "."],
    );
    assert_eq!(located(&second), expected);
    assert!(!second.stderr.contains("Summarised"), "{}", second.stderr);

    // Not followed on request, from the command line or the configuration: the library's
    // code is unknown, so nothing is reported on its calls.
    let off = pt2lsp(
        dir.path(),
        &[
            "check",
            "--format",
            "json",
            "--python",
            python,
            "--no-follow-libraries",
            ".",
        ],
    );
    assert_eq!(located(&off), Vec::new(), "{}", off.stdout);
    fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.pt2lsp]\nfollow-libraries = false\n",
    )
    .unwrap();
    let configured_off = pt2lsp(
        dir.path(),
        &["check", "--format", "json", "--python", python, "."],
    );
    assert_eq!(
        located(&configured_off),
        Vec::new(),
        "{}",
        configured_off.stdout
    );
}

/// An interpreter with no site-packages beside it is a warning, not a failed check; it is
/// never run to ask.
#[test]
fn an_interpreter_without_site_packages_leaves_libraries_unfollowed() {
    let (dir, _) = installed_library_project();
    let missing = dir.path().join("nowhere/bin/python");
    let run = pt2lsp(
        dir.path(),
        &[
            "check",
            "--format",
            "json",
            "--python",
            missing.to_str().unwrap(),
            ".",
        ],
    );
    assert_eq!(located(&run), Vec::new(), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("warning: calls into installed libraries are not followed: no site-packages directory beside"),
        "{}",
        run.stderr
    );
    assert_eq!(run.code, 0);
}

/// Same answer however asked: every multi-file fixture project, copied alone (no repository
/// around it), checked as a whole, by each of its directories, each file alone (as pre-commit
/// passes them), all files in reverse order, and from inside each directory, gives every file
/// the same diagnostics, fixes and related locations.
#[test]
fn a_files_diagnostics_do_not_depend_on_how_the_project_is_asked() {
    let projects = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects");
    let mut names: Vec<PathBuf> = fs::read_dir(&projects)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 7, "{names:?}");
    for fixture in names {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        tree::copy_tree(&fixture, &root);
        // One diagnostic as (file relative to the project, line, code, severity, message, fix,
        // related places relative to the project).
        let answers = |run: &Run, from: &Path| -> Vec<String> {
            assert!(run.code <= 1, "{run:?}");
            let prefix = from.strip_prefix(&root).unwrap();
            let mut found: Vec<String> = json(run)
                .as_array()
                .unwrap()
                .iter()
                .map(|item| {
                    let file = prefix.join(item["file"].as_str().unwrap());
                    let related: Vec<String> = item["related"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|place| {
                            let path = Path::new(place["file"].as_str().unwrap());
                            let path = if path.is_absolute() {
                                path.strip_prefix(&root).unwrap_or(path).to_path_buf()
                            } else {
                                prefix.join(path)
                            };
                            format!("{}:{}", path.display(), place["line"])
                        })
                        .collect();
                    format!(
                        "{}:{} {} {} {} fix={} related={related:?}",
                        file.display(),
                        item["line"],
                        item["code"],
                        item["severity"],
                        item["message"],
                        item["fix"]
                    )
                })
                .collect();
            found.sort();
            found
        };
        let whole = answers(&pt2lsp(&root, &["check", "--format", "json", "."]), &root);
        let mut files = Vec::new();
        let mut dirs = vec![root.clone()];
        let mut at = 0;
        while at < dirs.len() {
            for entry in fs::read_dir(&dirs[at]).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() && name != "venv" {
                    dirs.push(path);
                } else if path.extension().is_some_and(|ext| ext == "py") {
                    files.push(path.strip_prefix(&root).unwrap().to_path_buf());
                }
            }
            at += 1;
        }
        files.sort();
        let in_file = |file: &Path| -> Vec<String> {
            let shown = format!("{}:", file.display());
            whole
                .iter()
                .filter(|d| d.starts_with(&shown))
                .cloned()
                .collect()
        };
        for file in &files {
            let alone = answers(
                &pt2lsp(
                    &root,
                    &["check", "--format", "json", file.to_str().unwrap()],
                ),
                &root,
            );
            assert_eq!(
                alone,
                in_file(file),
                "{}: {} alone",
                fixture.display(),
                file.display()
            );
        }
        let mut reversed: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
        reversed.reverse();
        let mut args = vec!["check", "--format", "json"];
        args.extend(reversed);
        assert_eq!(
            answers(&pt2lsp(&root, &args), &root),
            whole,
            "{}: files reversed",
            fixture.display()
        );
        for sub in &dirs[1..] {
            let relative = sub.strip_prefix(&root).unwrap();
            let expected: Vec<String> = files
                .iter()
                .filter(|file| file.starts_with(relative))
                .flat_map(|file| in_file(file))
                .collect();
            let mut expected = expected;
            expected.sort();
            let by_dir = answers(
                &pt2lsp(
                    &root,
                    &["check", "--format", "json", relative.to_str().unwrap()],
                ),
                &root,
            );
            assert_eq!(
                by_dir,
                expected,
                "{}: check {}",
                fixture.display(),
                relative.display()
            );
            let inside = answers(&pt2lsp(sub, &["check", "--format", "json"]), sub);
            assert_eq!(
                inside,
                expected,
                "{}: check from {}",
                fixture.display(),
                relative.display()
            );
        }
    }
}

/// In a project with entrypoints, code none of them imports is never exported, in a package or
/// in a file of its own: a problem there is a warning that says so, however the file is asked
/// for. In a project without any, every file is analysed for what it would do if exported, as
/// before.
#[test]
fn code_no_entrypoint_exports_is_warned_about_not_failed() {
    let loss: &[u8] = b"import torch\nimport torch.nn as nn\n\n\nclass HungarianMatcher(nn.Module):\n    def forward(self, outputs, targets):\n        cost = torch.cdist(outputs, targets)\n        if cost.max() > 10:\n            cost = cost / cost.max()\n        return cost.argmin(-1)\n";
    let net: &[u8] = b"import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n        return self.fc(x)\n";
    let export: &[u8] = b"import torch\nfrom pkg.net import Net\n\ntorch.export.export(Net().eval(), (torch.randn(2, 4),))\n";
    // The same loss in a package and in a file of its own beside the export script (as a
    // checkout keeps `splitcross.py` next to `main.py`).
    let dir = tree(&[
        ("pkg/__init__.py", b""),
        ("pkg/loss.py", loss),
        ("pkg/net.py", net),
        ("matcher.py", loss),
        ("export.py", export),
    ]);
    for (args, expected) in [
        (&["check", "--format", "json"][..], 2),
        (&["check", "--format", "json", "pkg/loss.py"], 1),
        (&["check", "--format", "json", "matcher.py"], 1),
    ] {
        let run = pt2lsp(dir.path(), args);
        assert_eq!(run.code, 0, "{run:?}");
        let report = json(&run);
        let found = report.as_array().unwrap();
        assert_eq!(found.len(), expected, "{report:#}");
        for finding in found {
            assert_eq!(finding["severity"], "warning", "{report:#}");
            assert!(
                finding["message"]
                    .as_str()
                    .unwrap()
                    .contains("no entrypoint exports this"),
                "{report:#}"
            );
        }
    }
    fs::remove_file(dir.path().join("export.py")).unwrap();
    let run = pt2lsp(dir.path(), &["check", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        json(&run)
            .as_array()
            .unwrap()
            .iter()
            .all(|finding| finding["severity"] == "error"),
        "{run:?}"
    );
}

/// Two directories of one project that define the same top-level module (`vocabulary.py` in
/// `pytorch/utils/` and in `tf/`) are namespaces of their own; the scripts' imports still reach
/// into them, so what no entrypoint imports there is a warning that says so, as it is when no
/// file shares a name, asked for whole or alone (`fixtures/projects/duplicate_module_names`).
#[test]
fn a_module_name_two_directories_define_keeps_code_no_entrypoint_exports_a_warning() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects/duplicate_module_names");
    let dir = tempfile::tempdir().unwrap();
    tree::copy_tree(&fixture, dir.path());
    for args in [
        &["check", "--format", "json"][..],
        &["check", "--format", "json", "pytorch/utils/unused_loss.py"],
    ] {
        let run = pt2lsp(dir.path(), args);
        assert_eq!(run.code, 0, "{run:?}");
        let report = json(&run);
        let found = report.as_array().unwrap();
        assert_eq!(found.len(), 1, "{report:#}");
        assert_eq!(found[0]["code"], "PT103", "{report:#}");
        assert_eq!(found[0]["severity"], "warning", "{report:#}");
        assert!(
            found[0]["message"]
                .as_str()
                .unwrap()
                .contains("no entrypoint exports this: the project's entrypoints (`export_model`)"),
            "{report:#}"
        );
    }
}

/// A script that an entrypoint table runs with its own arguments (`args = [...]`) does not get
/// the `add_argument` defaults from `parse_args()`: the analysis does not claim what a default
/// would make of the model. Without the table's `args`, the default decides, as the tracer then
/// runs it.
#[test]
fn a_script_run_with_table_arguments_is_not_judged_by_its_defaults() {
    let script: &[u8] = b"import argparse\n\nimport torch\nimport torch.nn as nn\nfrom torch.export import Dim\n\n\nclass Gate(nn.Module):\n    def __init__(self, limit):\n        super().__init__()\n        self.limit = limit\n\n    def forward(self, x):\n        assert x.shape[0] <= self.limit\n        return x * 2\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"--limit\", type=int, default=8)\n    args = parser.parse_args()\n    batch = Dim(\"batch\", max=64)\n    torch.export.export(Gate(args.limit), (torch.randn(4, 3),), dynamic_shapes={\"x\": {0: batch}})\n\n\nif __name__ == \"__main__\":\n    main()\n";
    let with_arguments: &[u8] = b"[tool.pt2lsp]\n\n[[tool.pt2lsp.entrypoints]]\nscript = \"export.py\"\nargs = [\"--limit\", \"64\"]\n";
    let without: &[u8] = b"[tool.pt2lsp]\n\n[[tool.pt2lsp.entrypoints]]\nscript = \"export.py\"\n";
    for (pyproject, errors) in [(with_arguments, 0), (without, 1)] {
        let dir = tree(&[("pyproject.toml", pyproject), ("export.py", script)]);
        let run = pt2lsp(dir.path(), &["check", "--format", "json", "--exit-zero"]);
        let report = json(&run);
        let found = report
            .as_array()
            .unwrap()
            .iter()
            .filter(|finding| finding["severity"] == "error")
            .count();
        assert_eq!(found, errors, "{report:#}");
    }
}

/// `export -o` into a directory that does not exist says that it creates it (a typo in the path
/// must not make directories unnoticed); the message comes before any Python runs.
#[test]
fn export_says_when_it_creates_the_output_directory() {
    let dir = tree(&[(
        "net.py",
        b"import torch\n\nmodel = torch.nn.Linear(2, 2)\nexample_args = (torch.randn(1, 2),)\n",
    )]);
    let missing = dir.path().join("no/such/dir/net.pt2");
    let run = pt2lsp(
        dir.path(),
        &[
            "export",
            "net.py",
            "-o",
            missing.to_str().unwrap(),
            "--python",
            "/nonexistent/python",
        ],
    );
    assert!(
        run.stderr.contains("warning: created the output directory")
            && run.stderr.contains("no/such/dir"),
        "{run:?}"
    );
}

/// A selector that names no rule points to the plain rule list.
#[test]
fn an_unknown_selector_points_to_the_rule_list() {
    let dir = tree(&[("clean.py", CLEAN)]);
    let run = pt2lsp(dir.path(), &["check", "--select", "PT999X"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("`pt2lsp rule` lists the rules"),
        "{run:?}"
    );
}

/// `--show-files` lists what a run would check and checks nothing; `--output-file` writes the
/// report there instead of stdout, keeping the exit status; `--color` forces or removes colour.
#[test]
fn show_files_output_file_and_color() {
    let dir = tree(&[
        ("pkg/__init__.py", b""),
        ("pkg/broken.py", BROKEN),
        ("clean.py", CLEAN),
        (".hidden/skipped.py", CLEAN),
    ]);
    let listed = pt2lsp(dir.path(), &["check", "--show-files"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    assert_eq!(listed.stdout, "clean.py\npkg/__init__.py\npkg/broken.py\n");

    let report = dir.path().join("report.json");
    let run = pt2lsp(
        dir.path(),
        &[
            "check",
            "--format",
            "json",
            "--output-file",
            "report.json",
            "pkg",
        ],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    let written: Value = serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(written[0]["code"], "PT001", "{written:#}");

    let colored = pt2lsp(dir.path(), &["check", "--color", "always", "pkg"]);
    assert!(colored.stdout.contains("\u{1b}["), "{colored:?}");
    let plain = pt2lsp(dir.path(), &["check", "--color", "never", "pkg"]);
    assert!(!plain.stdout.contains('\u{1b}'), "{plain:?}");
}

/// `--show-settings` prints each resolved setting with where it came from, and checks nothing.
#[test]
fn show_settings_names_each_source() {
    let dir = tree(&[
        (
            "pyproject.toml",
            b"[tool.pt2lsp]\nselect = [\"PT1\", \"PT4\"]\nstrict = true\n",
        ),
        ("broken.py", BROKEN),
    ]);
    let run = pt2lsp(
        dir.path(),
        &["check", "--show-settings", "--ignore", "PT402"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let pyproject = dir.path().join("pyproject.toml");
    let from_file = format!("# {}", pyproject.display());
    let line = |key: &str| {
        run.stdout
            .lines()
            .find(|line| line.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in {}", run.stdout))
            .to_owned()
    };
    assert_eq!(
        line("select"),
        format!("select = [\"PT1\", \"PT4\"]  {from_file}")
    );
    assert_eq!(line("ignore"), "ignore = [\"PT402\"]  # --ignore");
    assert_eq!(line("strict"), format!("strict = true  {from_file}"));
    assert_eq!(line("timeout"), "timeout = 60  # default");
    assert!(!run.stdout.contains("PT001"), "{}", run.stdout);
}

#[test]
fn suppressions_that_silence_nothing_are_reported_and_fixed() {
    let source =
        "import torch\nx = 1  # pt2lsp: ignore[PT101]\ny = 2  # pt2lsp: ignore[PT999, PT102]\n";
    let dir = tree(&[("model.py", source.as_bytes())]);
    // With PT101 ignored by the settings, a comment that silences it silences nothing.
    let run = pt2lsp(
        dir.path(),
        &[
            "check",
            "--isolated",
            "--ignore",
            "PT101",
            "--fix",
            "model.py",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        fs::read_to_string(dir.path().join("model.py")).unwrap(),
        "import torch\nx = 1\ny = 2  # pt2lsp: ignore[PT102]\n"
    );
    // A rule the settings run, with nothing on the line: the exporter may still find something
    // there, so the comment stays unreported.
    let run = pt2lsp(dir.path(), &["check", "--isolated", "model.py"]);
    assert!(run.stdout.contains("All checks passed!"), "{run:?}");
}

/// A file of this repository, by its path from the root.
fn repository_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}
