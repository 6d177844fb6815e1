//! Deployment targets through the real binary, with real torch: `targets` from the
//! configuration and `--target` reach every entrypoint, an unknown name is a usage error, a
//! target whose tool is missing is one message per run, and a lowering that hangs or runs out of
//! memory is PT502 for that target alone while the others' findings and the export's own stand. What each target finds on its line is
//! checked on `fixtures/targets/` by `tracer.rs`'s fixture test. The static pass's PT707 reaches
//! a model file from the export script that names the target (`fixtures/projects/deploy_script`),
//! whichever way the target is named, and the trace's lowering fails on the same line.
//!
//! The interpreter is `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`.
//! Without torch the tests fail when `CI` is set and are skipped, with a note, otherwise.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[path = "support/torch.rs"]
mod torch_support;

use torch_support::turn;

fn torch_python() -> Option<&'static Path> {
    torch_support::torch_python("tracer_targets")
}

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

#[path = "support/trace_run.rs"]
mod trace_run;

#[path = "support/tree.rs"]
mod tree;

use trace_run::{assert_clean, pt2lsp, traced};

/// A model whose line 7 calls `torch.searchsorted`: not core ATen, and no ONNX converter.
const BUCKETS: &str = "import torch\n\n\nclass Buckets(torch.nn.Module):\n    def forward(self, x):\n        edges = torch.linspace(-1.0, 1.0, 5)\n        return torch.searchsorted(edges, x).float()\n\n\nmodel = Buckets()\nexample_args = (torch.randn(3, 4),)\n";

/// `check --trace` of `files` in `project` with `extra` arguments and environment.
fn check(
    python: &Path,
    tmp: &Path,
    project: &Path,
    files: &[&str],
    extra: &[&str],
    environment: &[(&str, &str)],
) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pt2lsp"));
    command
        .args(["check", "--trace", "--python", python.to_str().unwrap()])
        .args(["--format", "json", "--exit-zero"])
        .args(extra)
        .args(files)
        .current_dir(project)
        .env("TMPDIR", tmp)
        .env("PT2LSP_NO_CACHE", "1")
        .env_remove("VIRTUAL_ENV");
    for (key, value) in environment {
        command.env(key, value);
    }
    run(&mut command)
}

/// (code, line) of the traced diagnostics in `file`, sorted.
fn codes_in(run: &Run, file: &str) -> Vec<(String, u32)> {
    let mut found: Vec<(String, u32)> = traced(&run.json())
        .into_iter()
        .filter(|(shown, ..)| shown == file)
        .map(|(_, line, code, _)| (code, line))
        .collect();
    found.sort();
    found
}

#[test]
fn configured_targets_and_the_flag_reach_every_entrypoint() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    fs::write(
        project.path().join("pyproject.toml"),
        "[tool.pt2lsp]\ntargets = [\"core-aten\"]\n",
    )
    .unwrap();
    fs::write(project.path().join("buckets.py"), BUCKETS).unwrap();
    let run = check(
        python,
        tmp.path(),
        project.path(),
        &["buckets.py"],
        &[],
        &[],
    );
    assert_eq!(
        codes_in(&run, "buckets.py"),
        [("PT701".to_owned(), 7)],
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    // The static pass's PT707 (`torch.searchsorted` on core-aten, as configured) is what the
    // lowering states on the same line: the lowering's finding stands alone.
    let all_codes = |run: &Run| -> Vec<String> {
        run.json()
            .iter()
            .map(|item| item["code"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(all_codes(&run), ["PT701"], "{}", run.stdout);
    let run = check(
        python,
        tmp.path(),
        project.path(),
        &["buckets.py"],
        &["--target", "onnx,pt2"],
        &[],
    );
    assert_eq!(
        codes_in(&run, "buckets.py"),
        [("PT701".to_owned(), 7), ("PT703".to_owned(), 7)],
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        !all_codes(&run).contains(&"PT707".to_owned()),
        "{}",
        run.stdout
    );
    assert_clean(tmp.path());
}

#[test]
fn an_unknown_target_is_a_usage_error_naming_the_known_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    fs::write(project.path().join("buckets.py"), BUCKETS).unwrap();
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--trace", "--target", "tflite", "buckets.py"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown deployment target `tflite`")
            && run
                .stderr
                .contains("known targets: core-aten, pt2, onnx, aoti, executorch"),
        "{}",
        run.stderr
    );
    fs::write(
        project.path().join("pyproject.toml"),
        "[tool.pt2lsp]\ntargets = [\"onxx\"]\n",
    )
    .unwrap();
    let run = pt2lsp(project.path(), tmp.path(), &["check", "buckets.py"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "tool.pt2lsp.targets: unknown deployment target `onxx`; did you mean `onnx`?"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_target_without_its_tool_is_one_message_per_run_and_the_rest_stands() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let declared = BUCKETS.replace(
        "example_args = (torch.randn(3, 4),)\n",
        "example_args = (torch.randn(3, 4),)\ntargets = [\"aoti\", \"core-aten\"]\n",
    );
    fs::write(project.path().join("one.py"), &declared).unwrap();
    fs::write(project.path().join("two.py"), &declared).unwrap();
    // No C++ compiler on PATH (the interpreter is named by its absolute path).
    let empty = tempfile::tempdir().unwrap();
    let run = check(
        python,
        tmp.path(),
        project.path(),
        &["one.py", "two.py"],
        &[],
        &[
            ("PATH", empty.path().to_str().unwrap()),
            ("CXX", "/nonexistent/c++"),
        ],
    );
    let notes: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains("target `aoti` not checked"))
        .collect();
    assert_eq!(notes.len(), 1, "{}", run.stderr);
    assert!(notes[0].contains("C++ compiler"), "{}", notes[0]);
    for file in ["one.py", "two.py"] {
        assert_eq!(
            codes_in(&run, file),
            [("PT701".to_owned(), 7)],
            "{}\n{}",
            run.stdout,
            run.stderr
        );
    }
    assert_clean(tmp.path());
}

#[test]
fn an_executorch_built_for_another_torch_is_said_once_with_both_versions() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let declared = BUCKETS.replace(
        "example_args = (torch.randn(3, 4),)\n",
        "example_args = (torch.randn(3, 4),)\ntargets = [\"executorch\", \"core-aten\"]\n",
    );
    fs::write(project.path().join("one.py"), &declared).unwrap();
    fs::write(project.path().join("two.py"), &declared).unwrap();
    // What importing an ExecuTorch built against another torch looks like: its compiled
    // extension misses a symbol of the installed libtorch.
    let shadow = tempfile::tempdir().unwrap();
    fs::create_dir(shadow.path().join("executorch")).unwrap();
    fs::write(
        shadow.path().join("executorch/__init__.py"),
        "raise ImportError('executorch/extension/pybindings/_portable_lib.so: undefined symbol: _ZN3c104impl3cow11cow_deleterEPv')\n",
    )
    .unwrap();
    let run = check(
        python,
        tmp.path(),
        project.path(),
        &["one.py", "two.py"],
        &[],
        &[("PYTHONPATH", shadow.path().to_str().unwrap())],
    );
    let notes: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.contains("target `executorch` not checked"))
        .collect();
    assert_eq!(notes.len(), 1, "{}", run.stderr);
    assert!(
        notes[0].contains("does not import with torch 2.")
            && notes[0].contains("undefined symbol")
            && notes[0].contains("executorch 1.5.1 pairs with torch 2.15 (measured")
            && notes[0].contains("pip install --no-deps executorch==1.5.1"),
        "{}",
        notes[0]
    );
    for file in ["one.py", "two.py"] {
        assert_eq!(
            codes_in(&run, file),
            [("PT701".to_owned(), 7)],
            "{}\n{}",
            run.stdout,
            run.stderr
        );
    }
    assert_clean(tmp.path());
}

#[test]
fn a_lowering_that_hangs_is_pt502_for_that_target_alone() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let declared = BUCKETS.replace(
        "example_args = (torch.randn(3, 4),)\n",
        "example_args = (torch.randn(3, 4),)\ntargets = [\"core-aten\", \"aoti\"]\n",
    );
    fs::write(project.path().join("buckets.py"), declared).unwrap();
    // A C++ compiler that never ends: AOTInductor's build waits on it until the job's time is up.
    let compiler = project.path().join("hanging-c++");
    fs::write(&compiler, "#!/bin/sh\nexec sleep 600\n").unwrap();
    fs::set_permissions(&compiler, fs::Permissions::from_mode(0o755)).unwrap();
    let run = check(
        python,
        tmp.path(),
        project.path(),
        &["buckets.py"],
        &["--timeout", "25"],
        &[("CXX", compiler.to_str().unwrap())],
    );
    let found = traced(&run.json());
    let hung: Vec<_> = found.iter().filter(|found| found.2 == "PT502").collect();
    assert_eq!(hung.len(), 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        hung[0]
            .3
            .contains("the aoti lowering ran out of the job's time")
            && hung[0].3.contains("the export itself succeeded"),
        "{}",
        hung[0].3
    );
    assert!(
        found
            .iter()
            .any(|(file, line, code, _)| file == "buckets.py" && *line == 7 && code == "PT701"),
        "{}",
        run.stdout
    );
    // The hanging compiler was killed with the lowering that started it.
    assert_clean(tmp.path());
}

#[test]
fn a_lowering_that_runs_out_of_memory_is_pt502_for_that_target_alone() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // A model every target takes (its ops are core ATen, and XNNPACK's), whose export has a
    // finding of its own: the broadcast against a literal size makes the `Dim.AUTO` static (PT406).
    let declared = "import torch\nfrom torch.export import Dim\n\n\nclass Shift(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x + torch.ones(8, 4))\n\n\nmodel = Shift()\nexample_args = (torch.randn(8, 4),)\ndynamic_shapes = {\"x\": {0: Dim.AUTO}}\ntargets = [\"core-aten\", \"executorch\"]\n";
    fs::write(project.path().join("shift.py"), declared).unwrap();
    // An ExecuTorch whose lowering allocates with torch until the job's memory limit stops it,
    // as a lowering that copies a large model's weights does: torch's allocator says so in a
    // RuntimeError, not a MemoryError. `torch.empty` maps address space (what the limit
    // counts) without touching it, so the machine's memory is not used up; the loop ends by
    // itself past 64 GiB, should no limit hold.
    let shadow = tempfile::tempdir().unwrap();
    let package = shadow.path().join("executorch");
    for (file, text) in [
        ("__init__.py", ""),
        ("backends/__init__.py", ""),
        ("backends/xnnpack/__init__.py", ""),
        ("backends/xnnpack/partition/__init__.py", ""),
        (
            "backends/xnnpack/partition/xnnpack_partitioner.py",
            "class XnnpackPartitioner:\n    pass\n",
        ),
        (
            "exir/__init__.py",
            "import torch\n\n\ndef to_edge_transform_and_lower(program, partitioner=None):\n    held = []\n    for _ in range(256):\n        held.append(torch.empty(256 << 20, dtype=torch.uint8))\n    raise AssertionError('64 GiB were allocated: no memory limit held')\n",
        ),
    ] {
        let path = package.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let run = check(
        python,
        tmp.path(),
        project.path(),
        &["shift.py"],
        &["--memory-limit", "2048"],
        &[("PYTHONPATH", shadow.path().to_str().unwrap())],
    );
    let found = traced(&run.json());
    let failed: Vec<_> = found
        .iter()
        .filter(|found| found.2 == "PT502" || found.2 == "PT705")
        .collect();
    assert_eq!(failed.len(), 1, "{}\n{}", run.stdout, run.stderr);
    let (file, line, code, message) = failed[0];
    assert_eq!(
        (file.as_str(), *line, code.as_str()),
        ("shift.py", 10, "PT502"),
        "on the entrypoint's `model`: {message}"
    );
    assert!(
        message.contains("the executorch lowering ran out of memory")
            && message.contains("the export itself succeeded"),
        "{message}"
    );
    // The export's own finding stands, on its line, and the other target found nothing.
    let mut rest: Vec<(&str, u32, &str)> = found
        .iter()
        .filter(|found| found.2 != "PT502")
        .map(|(file, line, code, _)| (file.as_str(), *line, code.as_str()))
        .collect();
    rest.sort_unstable();
    assert_eq!(rest, [("shift.py", 7, "PT406")], "{}", run.stdout);
    assert_clean(tmp.path());
}

#[test]
fn the_static_pass_warns_where_a_configured_target_cannot_run_the_call() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    fs::write(project.path().join("buckets.py"), BUCKETS).unwrap();
    // No target named: nothing to say before any trace.
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--format", "json", "--exit-zero", "buckets.py"],
    );
    let codes = |run: &Run| -> Vec<(String, u64)> {
        run.json()
            .iter()
            .map(|item| {
                (
                    item["code"].as_str().unwrap().to_owned(),
                    item["line"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(codes(&run), [], "{}", run.stdout);
    // `targets` of `[tool.pt2lsp]` applies to every entrypoint: `torch.searchsorted` has no
    // ONNX function, measured.
    fs::write(
        project.path().join("pyproject.toml"),
        "[tool.pt2lsp]\ntargets = [\"onnx\", \"aoti\"]\n",
    )
    .unwrap();
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--format", "json", "--exit-zero", "buckets.py"],
    );
    assert_eq!(codes(&run), [("PT707".to_owned(), 7)], "{}", run.stdout);
    assert!(
        run.json()[0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot run on the deployment target `onnx`"),
        "{}",
        run.stdout
    );
}

/// `fixtures/projects/deploy_script` in a project of its own (a `pyproject.toml` at its root,
/// with `config` under it); `own_targets: false` takes the script's `targets = [...]` out.
fn deploy_project(config: &str, own_targets: bool) -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    tree::copy_tree(
        &torch_support::repository().join("fixtures/projects/deploy_script"),
        project.path(),
    );
    fs::write(
        project.path().join("pyproject.toml"),
        format!("[project]\nname = \"audio\"\n\n{config}"),
    )
    .unwrap();
    if !own_targets {
        let script = project.path().join("scripts/export_pte.py");
        let text = fs::read_to_string(&script).unwrap();
        let without = text.replace("targets = [\"executorch\"]\n", "");
        assert_ne!(text, without);
        fs::write(&script, without).unwrap();
    }
    project
}

/// (file, line, code, message) of a static `check` in `project` with `args`.
fn static_check(project: &Path, tmp: &Path, args: &[&str]) -> Vec<(String, u64, String, String)> {
    let mut all = vec!["check", "--format", "json", "--exit-zero"];
    all.extend(args);
    let run = pt2lsp(project, tmp, &all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.json()
        .iter()
        .map(|item| {
            (
                item["file"].as_str().unwrap().to_owned(),
                item["line"].as_u64().unwrap(),
                item["code"].as_str().unwrap().to_owned(),
                item["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The line of `torch.histc` in the fixture's model file: its `warning[PT707]` mark.
fn histc_line() -> u64 {
    let text = fs::read_to_string(
        torch_support::repository().join("fixtures/projects/deploy_script/mymodels/net.py"),
    )
    .unwrap();
    let index = text
        .lines()
        .position(|line| line.ends_with("# warning[PT707]"))
        .expect("the mark");
    u64::try_from(index).unwrap() + 1
}

#[test]
fn a_model_file_is_warned_for_the_targets_of_the_export_script_that_reaches_it() {
    let tmp = tempfile::tempdir().unwrap();
    let line = histc_line();
    let on_histc = |found: &[(String, u64, String, String)], target: &str| {
        assert_eq!(
            found
                .iter()
                .map(|(file, line, code, _)| (file.as_str(), *line, code.as_str()))
                .collect::<Vec<_>>(),
            [("mymodels/net.py", line, "PT707")],
            "{found:#?}"
        );
        assert!(
            found[0]
                .3
                .contains(&format!("the deployment target `{target}`")),
            "{found:#?}"
        );
    };
    // The script's own `targets = ["executorch"]`: the model file alone, its directory and
    // the project say the same.
    let project = deploy_project("", true);
    for args in [&["mymodels/net.py"][..], &["mymodels"], &["."]] {
        on_histc(
            &static_check(project.path(), tmp.path(), args),
            "executorch",
        );
    }
    // No target anywhere: nothing.
    let project = deploy_project("", false);
    assert_eq!(static_check(project.path(), tmp.path(), &["."]), []);
    // `--target` is a setting like the configuration's: the same from the file and from its
    // directory, with no trace.
    for args in [
        &["--target", "executorch", "mymodels/"][..],
        &["--target", "executorch", "mymodels/net.py"],
    ] {
        on_histc(
            &static_check(project.path(), tmp.path(), args),
            "executorch",
        );
    }
    // The `targets` of the table whose `script` is the export script.
    let project = deploy_project(
        "[[tool.pt2lsp.entrypoints]]\nscript = \"scripts/export_pte.py\"\ntargets = [\"executorch\"]\n",
        false,
    );
    on_histc(
        &static_check(project.path(), tmp.path(), &["mymodels/net.py"]),
        "executorch",
    );
    // Those of a table whose `model` is in the model file itself.
    let project = deploy_project(
        "[[tool.pt2lsp.entrypoints]]\nmodel = \"mymodels.net:AudioNet()\"\ntargets = [\"core-aten\"]\n",
        false,
    );
    on_histc(
        &static_check(project.path(), tmp.path(), &["mymodels/net.py"]),
        "core-aten",
    );
}

#[test]
fn the_lowering_fails_in_the_model_file_where_the_static_pass_warned() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let line = u32::try_from(histc_line()).unwrap();
    // The target from the script's own `targets`, then from its entrypoint table: the job of
    // the script's export call lowers for it either way.
    for (config, own_targets) in [
        ("", true),
        (
            "[[tool.pt2lsp.entrypoints]]\nscript = \"scripts/export_pte.py\"\ntargets = [\"executorch\"]\n",
            false,
        ),
    ] {
        let project = deploy_project(config, own_targets);
        let run = check(python, tmp.path(), project.path(), &[], &[], &[]);
        assert_eq!(
            codes_in(&run, "mymodels/net.py"),
            [("PT705".to_owned(), line)],
            "{}\n{}",
            run.stdout,
            run.stderr
        );
        // The lowering names the op the static pass warned about: its finding stands alone.
        let codes: Vec<String> = run
            .json()
            .iter()
            .map(|item| item["code"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(codes, ["PT705"], "{}", run.stdout);
    }
    assert_clean(tmp.path());
}
