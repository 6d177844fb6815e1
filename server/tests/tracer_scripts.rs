//! `pt2lsp check --trace` on export scripts as people write them, with real torch: the script
//! is run along its own code path to its `torch.export.export` call; scripts that never reach
//! it say where they stopped; a static error the export contradicts is not an error; an
//! entrypoint table's `args` reach the script.
//!
//! The interpreter is `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`.
//! Without torch the tests fail when `CI` is set and are skipped, with a note, otherwise.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/torch.rs"]
mod torch_support;

use torch_support::{repository, turn};

fn torch_python() -> Option<&'static Path> {
    torch_support::torch_python("tracer_scripts")
}

#[path = "support/run.rs"]
mod support;

use support::Run;

#[path = "support/trace_run.rs"]
mod trace_run;

use trace_run::{assert_clean, pt2lsp, traced};

#[path = "support/tree.rs"]
mod tree;

/// `fixtures/projects/export_script`, unchanged: a package and a script that builds the model
/// from a config dataclass inside `main()`, parses its arguments under `__main__` and calls
/// `torch.export.export` with a `Dim` made in the function. With no configuration, the trace
/// runs the script to that call, exports what it received, and stops: the failures land on
/// the package's lines, and the script's own save never runs.
#[test]
fn an_export_script_is_traced_along_its_own_code_path() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    tree::copy_tree(
        &repository().join("fixtures/projects/export_script"),
        project.path(),
    );
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &[
            "check",
            "--trace",
            "--python",
            python.to_str().unwrap(),
            "--format",
            "json",
            "--exit-zero",
        ],
    );
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    let found: Vec<(String, u32, String)> = traced(&run.json())
        .into_iter()
        .map(|(file, line, code, _)| (file, line, code))
        .collect();
    for expected in [
        ("mymodels/backbone.py", 13, "PT401"),
        ("mymodels/head.py", 14, "PT101"),
    ] {
        assert!(
            found
                .iter()
                .any(|(file, line, code)| (file.as_str(), *line, code.as_str()) == expected),
            "{expected:?} not traced: {found:?}\nstderr:\n{}",
            run.stderr
        );
    }
    assert!(
        run.stderr.contains("Traced 1 entrypoint"),
        "stderr:\n{}",
        run.stderr
    );
    // torch's fix for the guard in `backbone.py` edits the `Dim` where the script declares it.
    let declaration = run
        .json()
        .into_iter()
        .find(|item| item["file"] == "scripts/export.py" && item["severity"] == "info")
        .unwrap_or_else(|| panic!("no companion on the declaration:\n{}", run.stdout));
    assert_eq!(declaration["line"], 22, "{declaration:#}");
    assert_eq!(
        declaration["fix"]["applicability"], "safe",
        "{declaration:#}"
    );
    let fixed = pt2lsp(
        project.path(),
        tmp.path(),
        &[
            "check",
            "--trace",
            "--python",
            python.to_str().unwrap(),
            "--fix",
            "--exit-zero",
        ],
    );
    assert_eq!(fixed.code, 0, "{fixed:?}");
    let script = fs::read_to_string(project.path().join("scripts/export.py")).unwrap();
    assert!(script.contains("batch = Dim(\"batch\", min=5)"), "{script}");
    assert!(
        !project.path().join("classifier.pt2").exists() && !run.stdout.contains("saved"),
        "the script ran past its export call"
    );
    assert_clean(tmp.path());
}

/// Scripts that cannot get to their export call: each is a diagnostic on the line that stopped
/// it, within the timeout, and nothing is left running.
#[test]
fn scripts_that_never_reach_their_export_call_say_where_they_stopped() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let model = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n";
    let export = "torch.export.export(M(), (torch.randn(2, 3),))";
    let scripts = [
        (
            "needs_args.py",
            format!(
                "import argparse\nimport torch\nfrom common import M\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"--ckpt\", required=True)\n    parser.parse_args()\n    {export}\n\n\nif __name__ == \"__main__\":\n    main()\n"
            ),
        ),
        (
            "exits.py",
            format!(
                "import sys\nimport torch\nfrom common import M\nif len(sys.argv) < 2:\n    sys.exit(2)\n{export}\n"
            ),
        ),
        (
            "loops.py",
            format!("import torch\nfrom common import M\nwhile True:\n    pass\n{export}\n"),
        ),
        (
            "reads.py",
            format!("import torch\nfrom common import M\nname = input(\"model? \")\n{export}\n"),
        ),
        (
            "checkpoint.py",
            format!(
                "import torch\nfrom common import M\n\n\ndef main():\n    model = M()\n    model.load_state_dict(torch.load(\"weights/best.pt\"))\n    {export}\n\n\nmain()\n"
            ),
        ),
        (
            "serves.py",
            format!(
                "import socketserver\nimport torch\nfrom common import M\nserver = socketserver.TCPServer((\"127.0.0.1\", 0), socketserver.BaseRequestHandler)\nserver.serve_forever()\n{export}\n"
            ),
        ),
        (
            "two_calls.py",
            format!(
                "import torch\nfrom common import M\n\n\ndef test_small():\n    {export}\n\n\ndef export_all():\n    for _ in range(2):\n        {export}\n"
            ),
        ),
    ];
    let mut files: Vec<(&str, &str)> = scripts
        .iter()
        .map(|(name, text)| (*name, text.as_str()))
        .collect();
    files.push(("common.py", model));
    for (name, text) in &files {
        fs::write(project.path().join(name), text).unwrap();
    }
    let started = Instant::now();
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &[
            "check",
            "--trace",
            "--timeout",
            "6",
            "--python",
            python.to_str().unwrap(),
            "--format",
            "json",
            "--exit-zero",
        ],
    );
    for (name, text) in &files {
        assert_eq!(
            fs::read_to_string(project.path().join(name)).unwrap(),
            *text
        );
    }
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    assert!(started.elapsed() < Duration::from_secs(60));
    let found = traced(&run.json());
    let at = |file: &str, line: u32, code: &str, words: &str| {
        assert!(
            found.iter().any(|(f, l, c, message)| f == file
                && *l == line
                && c == code
                && message.contains(words)),
            "no {code} at {file}:{line} saying {words:?}: {found:#?}"
        );
    };
    at("needs_args.py", 9, "PT503", "--ckpt");
    at("exits.py", 5, "PT503", "sys.exit(2)");
    at("loops.py", 3, "PT502", "still running");
    at("reads.py", 3, "PT503", "standard input");
    at("checkpoint.py", 7, "PT503", "weights/best.pt");
    at("serves.py", 5, "PT502", "still running");
    assert!(
        !found.iter().any(|(file, ..)| file == "two_calls.py"),
        "{found:#?}"
    );
    assert!(
        run.stderr.contains("Traced 8 entrypoints"),
        "stderr:\n{}",
        run.stderr
    );
    assert_clean(tmp.path());
}

/// The exporter is ground truth where it ran. A GPT asserts `t <= limit`, read from
/// `self.config.block_size`; the script builds the config with `block_size=32`, then merges an
/// override into its attributes through `vars()` (which the static pass does not follow) and
/// declares `Dim("seq", max=64)`, so the assert holds and torch exports. The static pass, still
/// reading 32, calls the assert a PT401 error; the trace contradicts it, so it leaves the report
/// (and stays, as info with the reason, under `--show-contradicted`), and so does the companion
/// that carried its fix to the script's `Dim`.
#[test]
fn a_static_error_the_export_contradicts_is_not_an_error() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    tree::copy_tree(
        &repository().join("server/tests/data/contradicted_gpt"),
        project.path(),
    );
    let codes = |run: &Run| -> Vec<(String, u64, String)> {
        run.json()
            .iter()
            .map(|item| {
                (
                    item["file"].as_str().unwrap().to_owned(),
                    item["line"].as_u64().unwrap(),
                    item["severity"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let statically = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--format", "json", "--exit-zero"],
    );
    // The error, and its companion on the script's `Dim` carrying the (wrong) range fix.
    assert_eq!(
        codes(&statically),
        [
            ("export.py".to_owned(), 13, "info".to_owned()),
            ("gpt/model.py".to_owned(), 15, "error".to_owned())
        ],
        "the static pass no longer errs here: this test needs another false error"
    );
    let traced_run = pt2lsp(
        project.path(),
        tmp.path(),
        &[
            "check",
            "--trace",
            "--python",
            python.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(traced_run.code, 0, "{traced_run:?}");
    assert_eq!(codes(&traced_run), []);
    let shown = pt2lsp(
        project.path(),
        tmp.path(),
        &[
            "check",
            "--trace",
            "--show-contradicted",
            "--python",
            python.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    // The companion goes with its guard: a contradicted guard needs no fix.
    assert_eq!(
        codes(&shown),
        [
            ("export.py".to_owned(), 13, "info".to_owned()),
            ("gpt/model.py".to_owned(), 15, "info".to_owned())
        ]
    );
    let message = |at: usize| shown.json()[at]["message"].as_str().unwrap().to_owned();
    assert!(
        message(1).contains("contradicted: the export of export.py:14 (main)"),
        "{}",
        shown.stdout
    );
    assert!(
        message(0).contains("contradicted: its guard is contradicted: the export of export.py:14"),
        "{}",
        shown.stdout
    );
    assert!(!project.path().join("gpt.pt2").exists());
    assert_clean(tmp.path());
}

/// A script that needs a command-line argument gets it from an entrypoint table's `script` and
/// `args`; without the table, PT503 on `parse_args()` says what to set. The table names no model
/// and is no "entrypoint without a model".
#[test]
fn a_scripts_command_line_comes_from_its_entrypoint_table() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let script = "import argparse\nimport torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"--width\", type=int, required=True)\n    args = parser.parse_args()\n    torch.export.export(M(), (torch.randn(2, args.width),))\n\n\nif __name__ == \"__main__\":\n    main()\n";
    fs::write(project.path().join("export.py"), script).unwrap();
    let args = [
        "check",
        "--trace",
        "--python",
        python.to_str().unwrap(),
        "--format",
        "json",
        "--exit-zero",
    ];
    let without = pt2lsp(project.path(), tmp.path(), &args);
    let found = traced(&without.json());
    assert!(
        found
            .iter()
            .any(|(file, line, code, message)| file == "export.py"
                && *line == 13
                && code == "PT503"
                && message.contains("--width")),
        "{found:#?}"
    );
    fs::write(
        project.path().join("pyproject.toml"),
        "[tool.pt2lsp]\n\n[[tool.pt2lsp.entrypoints]]\nscript = \"export.py\"\nargs = [\"--width\", \"4\"]\n",
    )
    .unwrap();
    let with = pt2lsp(project.path(), tmp.path(), &args);
    assert_eq!(traced(&with.json()), [], "{}", with.stderr);
    assert!(
        with.stderr.contains("Traced 1 entrypoint") && !with.stderr.contains("no `model`"),
        "{}",
        with.stderr
    );
    assert_clean(tmp.path());
}

/// `--statistics --format json` says what `--trace` did, so that a CI job can tell a trace
/// that ran nothing from one that passed: the entrypoints traced (run, or replayed from the
/// trace cache, which these tests turn off) and each export call it could not reach, where it
/// is and why.
#[test]
fn statistics_say_what_the_trace_ran_and_what_it_could_not_reach() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    fs::write(
        project.path().join("export_net.py"),
        "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n\n\ndef export_with(model, inputs):\n    return torch.export.export(model, inputs)\n\n\ndef main():\n    torch.export.export(Net(), (torch.randn(2, 3),))\n\n\nif __name__ == \"__main__\":\n    main()\n",
    )
    .unwrap();
    let statistics = || {
        let args = [
            "check",
            "--trace",
            "--python",
            python.to_str().unwrap(),
            "--statistics",
            "--format",
            "json",
        ];
        let run = pt2lsp(project.path(), tmp.path(), &args);
        assert_eq!(run.code, 0, "{run:?}");
        serde_json::from_str::<serde_json::Value>(&run.stdout).unwrap()
    };
    let first = statistics();
    assert_eq!(first["rules"], serde_json::json!([]), "{first:#}");
    assert_eq!(
        (
            &first["trace"]["entrypoints"],
            &first["trace"]["run"],
            &first["trace"]["replayed"]
        ),
        (
            &serde_json::json!(1),
            &serde_json::json!(1),
            &serde_json::json!(0)
        ),
        "{first:#}"
    );
    let not_reached = first["trace"]["not_reached"].as_array().unwrap();
    assert_eq!(not_reached.len(), 1, "{first:#}");
    assert_eq!(
        (&not_reached[0]["file"], &not_reached[0]["line"]),
        (&serde_json::json!("export_net.py"), &serde_json::json!(10)),
        "{first:#}"
    );
    assert_clean(tmp.path());
}

/// `fixtures/projects/dims_elsewhere`: the `Dim`s live in `pkg/dims.py`, imported by the export
/// script; `fixtures/projects/shapes_module`: the whole spec lives in `tagger/shapes.py`, and
/// the script passes it to its export call. torch's fix edits the line that declares the `Dim`
/// there (the worker finds the module global that holds the very `Dim` object), where the static
/// pass's companion stands too: one diagnostic, with torch's safe fix; `--fix` applies it there.
#[test]
fn torchs_fix_edits_the_dim_where_another_module_declares_it() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let python = python.to_str().unwrap();
    for (fixture, entry, declaring, line, fixed_line) in [
        (
            "dims_elsewhere",
            "export_chunked.py",
            "pkg/dims.py",
            5,
            "BATCH = Dim(\"batch\", max=16)  # info[PT401]\n",
        ),
        (
            "shapes_module",
            "scripts/export_tagger.py",
            "tagger/shapes.py",
            7,
            "TOKENS = Dim(\"tokens\", max=128)  # info[PT401]\n",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        tree::copy_tree(
            &repository().join("fixtures/projects").join(fixture),
            project.path(),
        );
        let read = |path: &str| fs::read_to_string(project.path().join(path)).unwrap();
        let entry_text = read(entry);
        let run = pt2lsp(
            project.path(),
            tmp.path(),
            &[
                "check",
                "--trace",
                "--python",
                python,
                "--format",
                "json",
                "--exit-zero",
            ],
        );
        assert_eq!(run.code, 0, "{fixture}: {run:?}");
        let companions: Vec<serde_json::Value> = run
            .json()
            .into_iter()
            .filter(|item| item["severity"] == "info")
            .collect();
        let [companion] = companions.as_slice() else {
            panic!(
                "{fixture}: not one companion on the declaration:\n{}",
                run.stdout
            );
        };
        assert_eq!(
            (&companion["file"], &companion["line"], &companion["source"]),
            (
                &serde_json::json!(declaring),
                &serde_json::json!(line),
                &serde_json::json!("static+trace")
            ),
            "{fixture}: {companion:#}"
        );
        assert_eq!(
            companion["fix"]["applicability"], "safe",
            "{fixture}: {companion:#}"
        );
        let fixed = pt2lsp(
            project.path(),
            tmp.path(),
            &["check", "--trace", "--python", python, "--fix"],
        );
        assert_eq!(fixed.code, 0, "{fixture}: {fixed:?}");
        let declared = read(declaring);
        assert!(declared.contains(fixed_line), "{fixture}: {declared}");
        assert_eq!(
            read(entry),
            entry_text,
            "{fixture}: the entry file was edited"
        );
        assert_clean(tmp.path());
    }
}
