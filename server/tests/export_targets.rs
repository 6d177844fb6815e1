//! `pt2lsp export --target` as the real binary, with real torch and the targets' packages: the
//! `.onnx`, the ExecuTorch `.pte` and the AOTInductor package are written, checked against eager
//! by the worker, and load and run in another process with the target's runtime; a lowering that
//! fails exits 1 with its diagnostic on the user's line and writes nothing; a target that writes
//! no artefact of its own is a usage error. The AOTInductor build (seconds of C++ compilation)
//! is tested here once.
//!
//! The interpreter is `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`.
//! Without torch the tests fail when `CI` is set and are skipped, with a note, otherwise.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

#[path = "support/torch.rs"]
mod torch_support;

use torch_support::turn;

fn torch_python() -> Option<&'static Path> {
    torch_support::torch_python("export_targets")
}

const SMALL_CONV: &str = "import torch\n\n\nclass SmallConv(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)\n        self.head = torch.nn.Linear(8, 4)\n\n    def forward(self, x):\n        return self.head(torch.relu(self.conv(x)).mean(dim=(2, 3)))\n\n\nmodel = SmallConv().eval()\nexample_args = (torch.randn(2, 3, 16, 16),)\n";

/// Line 6 calls `torch.kthvalue`, which ONNX cannot translate.
const KTHVALUE: &str = "import torch\n\n\nclass Low(torch.nn.Module):\n    def forward(self, x):\n        return torch.kthvalue(x, 2, dim=-1).values\n\n\nmodel = Low()\nexample_args = (torch.randn(4, 16),)\n";

fn export(python: &Path, dir: &Path, tmp: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .arg("export")
        .args(args)
        .arg("--python")
        .arg(python)
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .env_remove("VIRTUAL_ENV"))
}

/// Runs `script` in `python`; its stdout, trimmed.
fn python_says(python: &Path, script: &str) -> String {
    let output = Command::new(python).args(["-c", script]).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[test]
fn each_targets_artefact_is_written_checked_and_runs_in_its_runtime() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("conv.py"), SMALL_CONV).unwrap();
    for (target, written, load) in [
        (
            "onnx",
            "conv.onnx",
            "import onnxruntime, numpy\ns = onnxruntime.InferenceSession(PATH)\nprint(s.run(None, {s.get_inputs()[0].name: numpy.random.randn(2, 3, 16, 16).astype('float32')})[0].shape)",
        ),
        (
            "executorch",
            "conv.pte",
            "import torch\nfrom executorch.runtime import Runtime\nm = Runtime.get().load_program(PATH).load_method('forward')\nprint(tuple(m.execute([torch.randn(2, 3, 16, 16)])[0].shape))",
        ),
        (
            "aoti",
            "conv.aoti.pt2",
            "import torch\nm = torch._inductor.aoti_load_package(PATH)\nprint(tuple(m(torch.randn(2, 3, 16, 16)).shape))",
        ),
    ] {
        let result = export(
            python,
            dir.path(),
            tmp.path(),
            // AOTInductor compiles C++: a cold build on a loaded 2-core machine takes minutes.
            &[
                "conv.py",
                "--target",
                target,
                "--timeout",
                "600",
                "--output-format",
                "json",
                "-q",
            ],
        );
        assert_eq!(result.code, 0, "{target}: {result:#?}");
        let report: Value = serde_json::from_str(&result.stdout).unwrap();
        assert_eq!(report["status"], "exported", "{report}");
        assert_eq!(report["target"], target, "{report}");
        assert_eq!(report["verification"]["matches"], true, "{report}");
        let path = dir.path().join(written);
        assert_eq!(
            report["path"].as_str().map(Path::new),
            Some(path.as_path()),
            "{report}"
        );
        let shape = python_says(python, &load.replace("PATH", &format!("{path:?}")));
        assert_eq!(shape, "(2, 4)", "{target}");
    }
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["conv.aoti.pt2", "conv.onnx", "conv.pte", "conv.py"]);
    let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "files left in TMPDIR: {left:?}");
}

#[test]
fn a_lowering_that_fails_exits_1_with_its_diagnostic_and_writes_nothing() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("low.py"), KTHVALUE).unwrap();
    let result = export(
        python,
        dir.path(),
        tmp.path(),
        &["low.py", "--target", "onnx"],
    );
    assert_eq!(result.code, 1, "{result:#?}");
    assert!(
        result.stdout.starts_with("low.py:6:")
            && result
                .stdout
                .contains("PT703 [error] ONNX: `aten.kthvalue.default` cannot be converted"),
        "{}",
        result.stdout
    );
    assert!(!dir.path().join("low.onnx").exists());
}

#[test]
fn a_target_without_an_artefact_of_its_own_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("conv.py"), SMALL_CONV).unwrap();
    for (target, said) in [
        ("pt2", "`pt2` writes no artefact of its own"),
        ("core-aten", "`core-aten` writes no artefact of its own"),
        ("tflite", "unknown deployment target `tflite`"),
    ] {
        let result = export(
            Path::new("python3"),
            dir.path(),
            tmp.path(),
            &["conv.py", "--target", target],
        );
        assert_eq!(result.code, 2, "{result:#?}");
        assert!(result.stderr.contains(said), "{}", result.stderr);
    }
}
