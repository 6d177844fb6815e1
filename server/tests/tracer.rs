//! `pt2lsp check --trace` as the real binary, with real torch: the fixtures and torch's own
//! ExportDB examples, then the ways a trace goes wrong (a hang, a crash, a job that kills its
//! worker, out of memory, a broken entrypoint, Ctrl-C, an interpreter without torch).
//!
//! The interpreter is `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`.
//! Without torch the tests fail when `CI` is set and are skipped, with a note, otherwise. Every
//! run gets a fresh `TMPDIR`, which must be empty afterwards, with no process left that was
//! started in it. The runs take turns: each forks two jobs at a time on a 2-core machine, and
//! the timeout test must not be starved by the others.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

#[path = "support/torch.rs"]
mod torch_support;

use torch_support::{repository, turn};

fn torch_python() -> Option<&'static std::path::Path> {
    torch_support::torch_python("tracer")
}

#[path = "support/run.rs"]
mod support;

use support::Run;

#[path = "support/trace_run.rs"]
mod trace_run;

use trace_run::{assert_clean, processes_mentioning, pt2lsp, pt2lsp_with_path, traced};

/// `check --trace --format json --exit-zero` of `files` (name, text), written into `project`
/// first.
fn trace_files(python: &Path, tmp: &Path, project: &Path, files: &[(&str, &str)]) -> Run {
    let mut args = vec![
        "check",
        "--trace",
        "--python",
        python.to_str().unwrap(),
        "--format",
        "json",
        "--exit-zero",
    ];
    for (name, text) in files {
        fs::write(project.join(name), text).unwrap();
        args.push(name);
    }
    pt2lsp(project, tmp, &args)
}

/// `# error[PT101]` marks: {line: codes}, as `tests/python/test_fixtures_real_torch.py` reads
/// them (a trailing comment made only of marks).
fn error_marks(text: &str) -> Vec<(u32, Vec<String>)> {
    let mut marks = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let Some(at) = line.rfind('#') else { continue };
        let tokens: Vec<&str> = line[at + 1..].split_whitespace().collect();
        let parsed: Option<Vec<(&str, &str)>> = tokens
            .iter()
            .map(|token| {
                let (severity, rest) = token.split_once('[')?;
                let code = rest.strip_suffix(']')?;
                let valid = matches!(severity, "error" | "warning" | "info")
                    && code.len() == 5
                    && code.starts_with("PT");
                valid.then_some((severity, code))
            })
            .collect();
        let Some(parsed) = parsed.filter(|parsed| !parsed.is_empty()) else {
            continue;
        };
        // A deployment target's warning (PT706: ops left to slower kernels) is the tracer's
        // own finding, marked as a warning; so are PT602 under strict export and PT603, whose
        // exports succeed with a program that keeps a tensor of the trace as a constant.
        let errors: Vec<String> = parsed
            .iter()
            .filter(|(severity, code)| {
                *severity == "error"
                    || (*severity == "warning"
                        && (code.starts_with("PT7") || ["PT602", "PT603"].contains(code)))
            })
            .map(|(_, code)| (*code).to_owned())
            .collect();
        marks.push((index as u32 + 1, errors));
    }
    marks
}

/// Module-level `model =` and `example_args =`: the files the pytest ground truth exports.
fn is_exportable(text: &str) -> bool {
    let starts = |prefix: &str| {
        text.lines().any(|line| {
            line.strip_prefix(prefix)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
    };
    starts("model") && starts("example_args")
}

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            python_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "py") {
            out.push(path);
        }
    }
}

#[test]
fn every_fixture_fails_where_its_marks_say_and_only_there() {
    every_fixture_fails_where_marked("fork");
}

/// The same suite with each job in a process of its own started fresh (spawn mode, the default
/// on macOS and Windows, over loopback TCP): the same findings on the same lines. Each job
/// imports torch anew here, so the suite runs over a representative of each rule, one that
/// fails and one that exports, and a multi-file project; the fork run covers every fixture.
#[test]
fn every_fixture_fails_where_its_marks_say_in_spawn_mode_too() {
    every_fixture_fails_where_marked("spawn");
}

/// The fixtures a run in `start_method` traces, relative to the repository: all of them for
/// fork; for spawn, per rule directory the first that fails where marked and the first that
/// exports, and one project.
fn traced_fixtures(repo: &Path, start_method: &str) -> Vec<String> {
    if start_method == "fork" {
        return vec!["fixtures".to_owned()];
    }
    let mut chosen = vec!["fixtures/projects/three_files".to_owned()];
    let mut rules: Vec<PathBuf> = fs::read_dir(repo.join("fixtures/rules"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    rules.sort();
    for rule in rules {
        let mut files: Vec<PathBuf> = fs::read_dir(&rule)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "py"))
            .collect();
        files.sort();
        let mut failing = None;
        let mut exporting = None;
        for path in files {
            let text = fs::read_to_string(&path).unwrap();
            if !is_exportable(&text) {
                continue;
            }
            let marks = error_marks(&text);
            let slot = if marks.iter().any(|(_, codes)| !codes.is_empty()) {
                &mut failing
            } else {
                &mut exporting
            };
            slot.get_or_insert(path);
        }
        chosen.extend(failing.into_iter().chain(exporting).map(|path| {
            path.strip_prefix(repo)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        }));
    }
    chosen
}

fn every_fixture_fails_where_marked(start_method: &str) {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository();
    let selection = traced_fixtures(&repo, start_method);
    // `fixtures/projects/installed_library` imports `detlib`, installed in the project's own
    // `venv/`: the traced interpreter gets it as if installed there too.
    let installed =
        repo.join("fixtures/projects/installed_library/venv/lib/python3.11/site-packages");
    let mut args = vec![
        "check",
        "--trace",
        "--start-method",
        start_method,
        "--python",
        python.to_str().unwrap(),
        "--format",
        "json",
        "--exit-zero",
    ];
    args.extend(selection.iter().map(String::as_str));
    let run = pt2lsp_with_path(&repo, tmp.path(), &args, Some(&installed));
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    let found = traced(&run.json());

    let mut files = Vec::new();
    python_files(&repo.join("fixtures"), &mut files);
    files.sort();
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in files {
        let text = fs::read_to_string(&path).unwrap();
        let marks = error_marks(&text);
        let broken = marks
            .iter()
            .any(|(_, codes)| codes.iter().any(|code| code == "PT001"));
        let shown = path
            .strip_prefix(&repo)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let selected = selection
            .iter()
            .any(|chosen| shown == *chosen || shown.starts_with(&format!("{chosen}/")));
        if broken || !is_exportable(&text) || !selected {
            continue;
        }
        checked += 1;
        let here: Vec<_> = found.iter().filter(|(file, ..)| *file == shown).collect();
        let marked = |line: u32| {
            marks
                .iter()
                .find(|(marked, _)| *marked == line)
                .map(|(_, codes)| codes.as_slice())
                .unwrap_or_default()
        };
        let has_marks = marks.iter().any(|(_, codes)| !codes.is_empty());
        if has_marks && !here.iter().any(|(_, line, ..)| !marked(*line).is_empty()) {
            failures.push(format!(
                "{shown}: no traced error on a marked line: {here:?}"
            ));
        }
        // PT601 is an export that succeeded but computes something else: a fixture that shows
        // it marks the line that changes the state, the tracer the line that reads it.
        let shows_frozen_values = text.contains("[PT601]");
        // A warning the tracer confirms (PT406: an export that succeeded made a dimension
        // static) is where the fixture marks that warning.
        let warned = |line: u32, code: &str| {
            text.lines()
                .nth(line.saturating_sub(1) as usize)
                .is_some_and(|source| source.contains(&format!("warning[{code}]")))
        };
        for (_, line, code, message) in &here {
            if code == "PT601" && shows_frozen_values {
                continue;
            }
            if !marked(*line).contains(code) && !warned(*line, code) {
                failures.push(format!(
                    "{shown}:{line}: traced {code} where the marks say {:?}: {message}",
                    marked(*line)
                ));
            }
        }
    }
    let expected = if start_method == "fork" { 50 } else { 20 };
    assert!(
        checked > expected,
        "only {checked} exportable fixtures found"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_clean(tmp.path());
}

#[test]
fn exportdb_examples_trace_as_they_export() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let examples = Command::new(python)
        .args([
            "-c",
            "import os, torch._export.db.examples as e; print(os.path.dirname(e.__file__))",
        ])
        .output()
        .unwrap();
    assert!(examples.status.success(), "{examples:?}");
    let source = PathBuf::from(String::from_utf8(examples.stdout).unwrap().trim());
    let mut names = Vec::new();
    for entry in fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.extension().is_some_and(|ext| ext == "py") && name != "__init__.py" {
            fs::copy(&path, project.path().join(&name)).unwrap();
            names.push(name);
        }
    }
    names.sort();
    assert!(names.len() > 30, "{names:?}");

    // What a direct torch.export.export (the default, non-strict) says of each, each in its
    // own forked process (with a TMPDIR of its own: it leaves torch's caches there).
    let direct_tmp = tempfile::tempdir().unwrap();
    let direct = Command::new(python)
        .args(["-c", DIRECT_EXPORT])
        .args(&names)
        .current_dir(project.path())
        .env("TMPDIR", direct_tmp.path())
        .output()
        .unwrap();
    assert!(direct.status.success(), "{direct:?}");
    let direct: serde_json::Map<String, Value> = serde_json::from_slice(&direct.stdout).unwrap();
    let fails_directly: Vec<&String> = names
        .iter()
        .filter(|name| direct[name.as_str()] == Value::Bool(true))
        .collect();
    assert!(
        fails_directly.contains(&&"dynamic_shape_round.py".to_owned()),
        "{fails_directly:?}"
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
            "--select",
            "PT",
            ".",
        ],
    );
    let found = traced(&run.json());
    let fails_traced: Vec<&String> = names
        .iter()
        .filter(|name| found.iter().any(|(file, ..)| file == name.as_str()))
        .collect();
    assert_eq!(fails_traced, fails_directly, "{found:#?}\n{}", run.stderr);
    assert_clean(tmp.path());
}

const DIRECT_EXPORT: &str = r#"
import importlib.util, json, os, sys
import torch
# Warm the parent up, so that each forked export does not pay for torch's lazy imports.
torch.export.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
failed = {}
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        code = 0
        try:
            spec = importlib.util.spec_from_file_location("example", name)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            torch.export.export(module.model, tuple(module.example_args),
                getattr(module, "example_kwargs", None),
                dynamic_shapes=getattr(module, "dynamic_shapes", None),
                strict=bool(getattr(module, "strict", False)))
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    failed[name] = os.waitstatus_to_exitcode(status) != 0
print(json.dumps(failed))
"#;

/// A project whose entrypoints go wrong in every way a trace can, plus a configured
/// entrypoint, a sibling import, printing, and a suppression.
fn troubled_project() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    let model = |class: &str, body: &str| {
        format!(
            "import os\nimport torch\n\n\nclass {class}(torch.nn.Module):\n{body}\n\n\n\
             model = {class}()\nexample_args = (torch.randn(2),)\n"
        )
    };
    // `model = ...`, where a job's own problems go (PT502), is line 8 + the class body's lines.
    let forward = |lines: &str| format!("    def forward(self, x):\n{lines}");
    write(
        "hang.py",
        &model("Hang", &forward("        while True:\n            pass")),
    );
    write(
        "killer.py",
        &model(
            "Killer",
            &forward("        os.kill(os.getppid(), 9)\n        return x"),
        ),
    );
    write(
        "segv.py",
        &model(
            "Segv",
            &forward("        import ctypes\n        ctypes.string_at(0)\n        return x"),
        ),
    );
    write("quits.py", &model("Quits", &forward("        os._exit(3)")));
    write(
        "hungry.py",
        &model(
            "Hungry",
            "    def __init__(self):\n        super().__init__()\n        self.table = bytearray(64 * 2**30)\n\n    def forward(self, x):\n        return x",
        ),
    );
    write(
        "raises.py",
        &model(
            "Raises",
            "    def __init__(self):\n        super().__init__()\n        self.scale = 1 / 0\n\n    def forward(self, x):\n        return x",
        ),
    );
    write(
        "noargs.py",
        "import torch\n\n\nclass NoArgs(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n\nmodel = NoArgs()\ndynamic_shapes = {\"x\": {0: torch.export.Dim(\"b\")}}\n",
    );
    write(
        "chatty.py",
        "import os\nimport torch\nfrom helpers import clip\n\nprint('{\"not\": \"json\"}')\n\n\nclass Chatty(torch.nn.Module):\n    def forward(self, x):\n        print('forward says hi')\n        os.write(1, b'raw write\\n')\n        return clip(x)\n\n\nmodel = Chatty()\nexample_args = (torch.randn(2),)\n",
    );
    write(
        "helpers.py",
        "def clip(t):\n    if t.max() > 1:\n        return t.clamp(max=1)\n    return t\n",
    );
    write(
        "quiet.py",
        &model(
            "Quiet",
            &forward(
                "        if x.sum() > 0:  # pt2lsp: ignore[PT101]\n            return x\n        return -x",
            ),
        ),
    );
    write("fine.py", &model("Fine", &forward("        return x * 2")));
    let shapes = |class: &str, body: &str, inputs: &str, spec: &str| {
        format!(
            "import torch\nfrom torch.export import Dim\n\n\nclass {class}(torch.nn.Module):\n\
             {body}\n\n\nmodel = {class}()\nexample_args = ({inputs})\ndynamic_shapes = {spec}\n"
        )
    };
    // Constraint violations: a guard narrowing a Dim, two Dims that must be equal, a Dim that
    // must be even.
    write(
        "guard.py",
        &shapes(
            "Guard",
            "    def forward(self, x):\n        if x.shape[0] > 5:\n            return x * 2\n        return x",
            "torch.randn(8, 3),",
            "{\"x\": {0: Dim(\"b\")}}",
        ),
    );
    write(
        "pairs.py",
        &shapes(
            "Pairs",
            "    def forward(self, x, y):\n        return x + y",
            "torch.randn(4, 3), torch.randn(4, 3)",
            "{\"x\": {0: Dim(\"a\")}, \"y\": {0: Dim(\"b\")}}",
        ),
    );
    write(
        "halves.py",
        &shapes(
            "Halves",
            "    def forward(self, x):\n        return x.reshape(2, -1, 3)",
            "torch.randn(8, 3),",
            "{\"x\": {0: Dim(\"n\")}}",
        ),
    );
    write(
        "pyproject.toml",
        "[tool.pt2lsp]\ntimeout = 30\n\n[[tool.pt2lsp.entrypoints]]\nname = \"encoder\"\n\
         model = \"models.encoder:build()\"\nexample_args = \"models.encoder:inputs()\"\n",
    );
    write("models/__init__.py", "");
    write(
        "models/encoder.py",
        "import torch\n\n\nclass Encoder(torch.nn.Module):\n    def forward(self, x):\n        if x.mean() > 0:\n            return x * 2\n        return x\n\n\ndef build():\n    return Encoder()\n\n\ndef inputs():\n    return (torch.randn(3, 4),)\n",
    );
    dir
}

#[test]
fn hangs_crashes_and_broken_entrypoints_are_diagnostics_not_a_dead_checker() {
    troubles_are_diagnostics("fork");
}

#[test]
fn hangs_crashes_and_broken_entrypoints_are_diagnostics_in_spawn_mode_too() {
    troubles_are_diagnostics("spawn");
}

fn troubles_are_diagnostics(start_method: &str) {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = troubled_project();
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &[
            "check",
            "--trace",
            "--start-method",
            start_method,
            "--python",
            python.to_str().unwrap(),
            "--timeout",
            "5",
            "--memory-limit",
            "2048",
            "--format",
            "json",
            "--select",
            "PT1,PT4,PT5",
        ],
    );
    assert_eq!(run.code, 1, "stderr:\n{}", run.stderr);
    let report = run.json();
    let found = traced(&report);
    let expect = |file: &str, line: u32, code: &str, words: &str| {
        assert!(
            found.iter().any(|(f, l, c, message)| f == file
                && *l == line
                && c == code
                && message.contains(words)),
            "expected {code} at {file}:{line} saying {words:?}; traced:\n{found:#?}\nstderr:\n{}",
            run.stderr
        );
    };
    // A hang is reported on the line that was running when the time ran out: the loop.
    assert!(
        found.iter().any(|(f, l, c, message)| f == "hang.py"
            && (*l == 7 || *l == 8)
            && c == "PT502"
            && message.contains("within 5 s")
            && message.contains("running this line")),
        "expected PT502 on hang.py's loop; traced:\n{found:#?}"
    );
    expect("killer.py", 11, "PT502", "worker process died");
    expect("segv.py", 12, "PT502", "SIGSEGV");
    expect("quits.py", 10, "PT502", "exit status 3");
    expect("hungry.py", 14, "PT502", "out of memory");
    expect("raises.py", 8, "PT503", "ZeroDivisionError");
    expect("noargs.py", 9, "PT503", "example_args");
    expect("helpers.py", 2, "PT101", "`t.max() > 1`");
    // Found by both passes: the static message, which names the user's expression.
    expect("models/encoder.py", 6, "PT101", "`x.mean() > 0`");
    expect("guard.py", 7, "PT401", "`b`");
    expect("pairs.py", 7, "PT401", "`a` and `b`");
    expect("halves.py", 7, "PT401", "`n`");
    // The suggested fixes travel as data; a static PT401 on the same line is confirmed, not
    // repeated.
    let fixes = |file: &str, line: u64| {
        let at_line: Vec<&Value> = report
            .iter()
            .filter(|item| item["file"] == file && item["line"] == line && item["code"] == "PT401")
            .collect();
        assert_eq!(at_line.len(), 1, "{at_line:#?}");
        assert!(
            at_line[0]["source"]
                .as_str()
                .is_some_and(|source| source.ends_with("trace")),
            "{at_line:#?}"
        );
        // Each fix names where its `Dim` is declared: here, inside the module-level
        // `dynamic_shapes` of the file itself (the file's name is kept, not the temporary path).
        let mut suggested = at_line[0]["data"]["suggested_fixes"].clone();
        for fix in suggested.as_array_mut().into_iter().flatten() {
            if let Some(declared) = fix["declared_file"].as_str() {
                let name = Path::new(declared).file_name().unwrap().to_string_lossy();
                fix["declared_file"] = Value::from(name.into_owned());
            }
        }
        suggested
    };
    let in_spec = |file: &str, line: u64| serde_json::json!({"declared_file": file, "declared_line": line, "declared_spec": "dynamic_shapes"});
    let with = |fix: Value, declared: Value| {
        let mut fix = fix;
        for (key, value) in declared.as_object().unwrap() {
            fix[key] = value.clone();
        }
        fix
    };
    assert_eq!(
        fixes("guard.py", 7),
        serde_json::json!([with(
            serde_json::json!({"dim": "b", "kind": "range", "min": 6, "text": "b = Dim('b', min=6)"}),
            in_spec("guard.py", 14)
        )])
    );
    assert_eq!(
        fixes("pairs.py", 7),
        serde_json::json!([with(
            serde_json::json!({"dim": "b", "kind": "equal", "to": "a", "text": "b = a"}),
            in_spec("pairs.py", 12)
        )])
    );
    assert_eq!(
        fixes("halves.py", 7),
        serde_json::json!([
            with(
                serde_json::json!({"dim": "n", "kind": "derived", "expr": "2*_n", "root": "_n", "text": "n = 2*_n"}),
                in_spec("halves.py", 12)
            ),
            with(
                serde_json::json!({"dim": "_n", "kind": "range", "min": 1, "text": "_n = Dim('_n', min=1, max=oo)"}),
                in_spec("halves.py", 12)
            ),
        ])
    );
    for clean in ["quiet.py", "fine.py", "chatty.py"] {
        assert!(
            !found.iter().any(|(file, ..)| file == clean),
            "{clean} should trace clean: {found:#?}"
        );
    }
    assert!(
        !run.stdout.contains("forward says hi") && !run.stderr.contains("forward says hi"),
        "the traced code's output leaked:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    assert_clean(tmp.path());
}

#[test]
fn ctrl_c_leaves_no_worker_and_no_files() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = troubled_project();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(["check", "--trace", "--timeout", "120", "--python"])
        .arg(python)
        .arg("hang.py")
        .current_dir(project.path())
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the job runs: the worker and its forked job both mention the TMPDIR.
    let marker = tmp.path().to_string_lossy().into_owned();
    let deadline = Instant::now() + Duration::from_secs(120);
    while processes_mentioning(&marker, false).len() < 2 {
        assert!(Instant::now() < deadline, "the trace never started");
        assert!(child.try_wait().unwrap().is_none(), "pt2lsp ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    assert_clean(tmp.path());
}

#[test]
fn an_interpreter_without_torch_is_one_clear_error() {
    // Any Python will do: the wrapper hides torch from it.
    let python = torch_python().map_or_else(|| PathBuf::from("python3"), Path::to_path_buf);
    let tmp = tempfile::tempdir().unwrap();
    let project = troubled_project();
    let shadow = project.path().join("shadow/torch");
    fs::create_dir_all(&shadow).unwrap();
    fs::write(
        shadow.join("__init__.py"),
        "raise ImportError('torch is hidden by this test')\n",
    )
    .unwrap();
    let wrapper = project.path().join("python-without-torch");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nPYTHONPATH='{}' exec '{}' \"$@\"\n",
            shadow.parent().unwrap().display(),
            python.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();

    for interpreter in [wrapper.clone(), project.path().join("no/such/python")] {
        let run = pt2lsp(
            project.path(),
            tmp.path(),
            &[
                "check",
                "--trace",
                "--python",
                interpreter.to_str().unwrap(),
                "--format",
                "json",
                "fine.py",
            ],
        );
        assert_eq!(run.code, 2, "{run:?}");
        let errors: Vec<&str> = run
            .stderr
            .lines()
            .filter(|line| line.starts_with("error:"))
            .collect();
        assert_eq!(errors.len(), 1, "{}", run.stderr);
        assert!(
            errors[0].contains(interpreter.to_str().unwrap()) && errors[0].contains("--python"),
            "{}",
            errors[0]
        );
        // The static report is still printed, whole.
        run.json();
        assert_clean(tmp.path());
    }
}

/// A guard on the output of an operator without a fake kernel follows from the missing kernel
/// (draft_export makes up the output's size): real torch fails on the kernel alone, so the trace
/// reports PT301 only.
#[test]
fn a_guard_on_the_output_of_an_op_without_fake_kernel_is_not_reported_again() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let body = r#"import torch


@torch.library.custom_op("follow::pick", mutates_args=())
def pick(x: torch.Tensor) -> torch.Tensor:
    return x[x > 0]


class M(torch.nn.Module):
    def forward(self, x):
        y = pick(x)
        if y.shape[0] > 2:
            return y * 2
        return y


model = M()
example_args = (torch.randn(8),)
"#;
    fs::write(project.path().join("kernel.py"), body).unwrap();
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
            "kernel.py",
        ],
    );
    let found = traced(&run.json());
    let codes: Vec<(u32, &str)> = found
        .iter()
        .map(|(_, line, code, _)| (*line, code.as_str()))
        .collect();
    assert_eq!(codes, [(4, "PT301")], "{found:#?}\n{}", run.stderr);
    assert_clean(tmp.path());
}

/// The exporter's "You marked batch as dynamic but your code specialized it to be a constant
/// (1)" is the example's size, not the model: PT405 on the example, where the static rule says
/// the same (one diagnostic, confirmed by the trace, with the example-size fix), and no PT401 on
/// `dynamic_shapes`. A size hidden from the static analysis (built by a helper) is the trace's
/// alone.
/// A suppression that silences nothing the analysis finds is unused once an export that
/// succeeded ran its line; without a trace, or on a line whose finding the trace silences, it
/// is not said (the editor says the same: `lsp_projects.rs`).
#[test]
fn a_suppression_is_unused_where_an_export_that_succeeded_ran_its_line() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let net = "import time\n\nimport torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        y = x * 2  # pt2lsp: ignore[PT101]\n        z = y + 1  # pt2lsp: ignore\n        return z * time.time()  # pt2lsp: ignore[PT601]\n\n\nmodel = Net()\nexample_args = (torch.randn(3, 4),)\n";
    let unused = |run: &Run| -> Vec<u64> {
        run.json()
            .iter()
            .filter(|item| item["code"] == "PT002")
            .map(|item| item["line"].as_u64().unwrap())
            .collect()
    };
    let run = trace_files(python, tmp.path(), project.path(), &[("net.py", net)]);
    assert_eq!(unused(&run), [8, 9], "{}", run.stdout);
    // Without a terminal (a CI log), a trace says what it is doing as it goes, on stderr.
    assert!(
        run.stderr
            .contains("pt2lsp: tracing 0/1 starting the tracer")
            && run.stderr.contains("pt2lsp: tracing 1/1 "),
        "{}",
        run.stderr
    );
    let run = pt2lsp(
        project.path(),
        tmp.path(),
        &["check", "--format", "json", "--exit-zero", "net.py"],
    );
    assert_eq!(unused(&run), Vec::<u64>::new(), "{}", run.stdout);
}

#[test]
fn a_dimension_specialized_by_a_size_one_example_is_pt405_on_the_example() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let literal = r#"import torch
from torch.export import Dim


class M(torch.nn.Module):
    def forward(self, x, y):
        return x * 2 + y.sum()


model = M().eval()
example_args = (
    torch.randn(4),
    torch.randn(1, 3),
)
dynamic_shapes = {"x": None, "y": {0: Dim("batch")}}
"#;
    let helper = r#"import torch
from torch.export import Dim


class M(torch.nn.Module):
    def forward(self, x):
        return x * 2


def examples(batch):
    return (torch.randn(batch, 3),)


model = M().eval()
example_args = examples(0)
dynamic_shapes = {"x": {0: Dim("batch")}}
"#;
    let run = trace_files(
        python,
        tmp.path(),
        project.path(),
        &[("literal.py", literal), ("helper.py", helper)],
    );
    let report = run.json();
    let summary: Vec<(String, u64, String, String)> = report
        .iter()
        .map(|item| {
            (
                item["file"].as_str().unwrap().to_owned(),
                item["line"].as_u64().unwrap(),
                item["code"].as_str().unwrap().to_owned(),
                item["source"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let expected = [
        ("helper.py", 15, "PT405", "trace"),
        ("literal.py", 13, "PT405", "static+trace"),
    ];
    let mut sorted = summary.clone();
    sorted.sort();
    assert_eq!(
        sorted
            .iter()
            .map(|(f, l, c, s)| (f.as_str(), *l, c.as_str(), s.as_str()))
            .collect::<Vec<_>>(),
        expected,
        "{report:#?}\n{}",
        run.stderr
    );
    let literal_fix = report
        .iter()
        .find(|item| item["file"] == "literal.py")
        .map(|item| item["fix"].clone())
        .unwrap();
    assert_eq!(literal_fix["edits"][0]["content"], "2", "{literal_fix:#?}");
    let helper_item = report
        .iter()
        .find(|item| item["file"] == "helper.py")
        .unwrap();
    assert!(
        helper_item["message"]
            .as_str()
            .is_some_and(|message| message.contains("`batch`") && message.contains("2 or more")),
        "{helper_item:#?}"
    );
    assert_clean(tmp.path());
}

/// A transformers language model that returns its key/value cache (`use_cache=True`) is PT404
/// on the `use_cache` the user wrote, saying to turn it off, not to register the library's type.
#[test]
fn a_transformers_model_returning_its_cache_is_told_to_turn_the_cache_off() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let entry = "import torch\nimport transformers\n\nconfig = transformers.LlamaConfig(vocab_size=128, \
         hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, \
         num_key_value_heads=2)\nmodel = transformers.LlamaForCausalLM(config).eval()\n\
         example_args = (torch.randint(0, 128, (1, 8)),)\nexample_kwargs = {\"use_cache\": True}\n";
    let run = trace_files(python, tmp.path(), project.path(), &[("lm.py", entry)]);
    let found = traced(&run.json());
    assert_eq!(found.len(), 1, "{found:#?}\n{}", run.stderr);
    let (file, line, code, message) = &found[0];
    assert_eq!((file.as_str(), *line, code.as_str()), ("lm.py", 7, "PT404"));
    assert!(
        message.contains("use_cache=False") && !message.contains("register"),
        "{message}"
    );
    assert_clean(tmp.path());
}

/// An input or output pytree cannot flatten (pytorch #147400: an unregistered dataclass) is
/// PT404: on the example's element of `example_args`, or on the `return` of `forward` that
/// builds it, never PT501 on `model`.
#[test]
fn a_type_export_cannot_flatten_is_pt404_where_it_enters_or_leaves() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // The instance is built by a helper (`make`), in the input and in the output.
    let body = r"from dataclasses import dataclass

import torch


@dataclass
class Pair:
    a: int
    b: int


def make(kind):
    return kind(1, 2)


class In(torch.nn.Module):
    def forward(self, x, pair):
        return x + pair.a


class Out(torch.nn.Module):
    def forward(self, x):
        y = x + 1
        return make(Pair)


";
    let input =
        format!("{body}model = In()\nexample_args = (\n    torch.randn(2),\n    make(Pair),\n)\n");
    let output = format!("{body}model = Out()\nexample_args = (torch.randn(2),)\n");
    fs::write(project.path().join("input.py"), input).unwrap();
    fs::write(project.path().join("output.py"), output).unwrap();
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
            "input.py",
            "output.py",
        ],
    );
    let mut found = traced(&run.json());
    found.sort();
    let codes: Vec<(&str, u32, &str)> = found
        .iter()
        .map(|(file, line, code, _)| (file.as_str(), *line, code.as_str()))
        .collect();
    assert_eq!(
        codes,
        [("input.py", 30, "PT404"), ("output.py", 24, "PT404")],
        "{found:#?}\n{}",
        run.stderr
    );
    assert!(
        found[0].3.contains("register_dataclass(Pair)"),
        "{found:#?}"
    );
    assert_clean(tmp.path());
}

/// A guard added inside a `torch.cond` branch (pytorch #147991), non-strict: draft_export
/// cannot place it, and the export's own `guard_added` event, on the branch's input, says
/// where: the `torch._check` line, not `dynamic_shapes`.
#[test]
fn a_guard_in_a_cond_branch_is_placed_by_the_exports_own_guard_events() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let body = r#"import torch


class M(torch.nn.Module):
    def forward(self, x):
        def true_fn(x):
            torch._check(x.shape[1] > 5)
            return x + 1

        def false_fn(x):
            return x + 2

        return torch.cond(x.shape[1] > 5, true_fn, false_fn, (x,))


model = M()
example_args = (torch.rand(2, 700, 12),)
dynamic_shapes = {"x": {0: torch.export.Dim("b"), 1: torch.export.Dim("s")}}
"#;
    fs::write(project.path().join("branch.py"), body).unwrap();
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
            "branch.py",
        ],
    );
    let found = traced(&run.json());
    let codes: Vec<(u32, &str)> = found
        .iter()
        .map(|(_, line, code, _)| (*line, code.as_str()))
        .collect();
    assert_eq!(codes, [(7, "PT401")], "{found:#?}\n{}", run.stderr);
    assert_clean(tmp.path());
}

/// Example inputs that alias each other (pytorch #139805: one tensor passed five times) export,
/// but the program is traced with them as one and computes something else on separate tensors:
/// PT601 on `example_args` (or on `example_kwargs`, when that is where the tensor is passed
/// again), naming the aliased places; with a tensor of its own each, nothing.
#[test]
fn aliased_example_inputs_are_pt601_on_the_examples() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let model = "import torch\n\n\nclass ListAdd(torch.nn.Module):\n    def forward(self, xs, y):\n        \
                 for x in xs:\n            y = y + x\n        return y\n\n\nmodel = ListAdd()\n\
                 x = torch.rand(8, 4)\n";
    let aliased = format!("{model}example_args = ([x, x], x)\n");
    let separate = format!("{model}example_args = ([x, x.clone()], x.clone())\n");
    // The tensor passed again through `example_kwargs`: the finding is on that line.
    let keyword = format!("{model}example_args = ([x],)\nexample_kwargs = {{\"y\": x}}\n");
    let run = trace_files(
        python,
        tmp.path(),
        project.path(),
        &[
            ("aliased.py", &aliased),
            ("separate.py", &separate),
            ("keyword.py", &keyword),
        ],
    );
    let mut found = traced(&run.json());
    found.sort();
    assert_eq!(found.len(), 2, "{found:#?}\n{}", run.stderr);
    let (file, line, code, message) = &found[0];
    assert_eq!(
        (file.as_str(), *line, code.as_str()),
        ("aliased.py", 13, "PT601")
    );
    assert!(
        message.contains("`example_args[0][0]`, `example_args[0][1]`, `example_args[1]`")
            && message.contains(".clone()"),
        "{message}"
    );
    let (file, line, code, message) = &found[1];
    assert_eq!(
        (file.as_str(), *line, code.as_str()),
        ("keyword.py", 14, "PT601")
    );
    assert!(
        message.contains("`example_args[0][0]`, `example_kwargs['y']`"),
        "{message}"
    );
    assert_clean(tmp.path());
}

/// PT601 (issue 15): an export that succeeds and computes something else than eager. A counter
/// on the module and `random` are frozen at their trace-time values; the check runs the program
/// and eager on fresh inputs and places the finding on the line whose value the export froze.
/// State kept in a buffer, updated in place, is not frozen and gets nothing.
#[test]
fn an_export_that_froze_a_python_value_is_pt601_on_its_line() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let counter = r#"import torch
from torch.export import Dim


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        return x * self.steps


model = Counter().eval()
example_args = (torch.randn(4, 3),)
dynamic_shapes = {"x": {0: Dim("batch")}}
"#;
    let jitter = r"import random

import torch


class Jitter(torch.nn.Module):
    def forward(self, x):
        scale = random.uniform(0.5, 1.5)
        return x * scale


model = Jitter()
example_args = (torch.randn(4, 3),)
";
    let buffered = r#"import torch
from torch.export import Dim


class Buffered(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(2.0))
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x):
        x.mul_(1.0)
        return self.linear(x) * self.scale


model = Buffered().eval()
example_args = (torch.randn(4, 3),)
dynamic_shapes = {"x": {0: Dim("batch", max=64)}}
"#;
    let run = trace_files(
        python,
        tmp.path(),
        project.path(),
        &[
            ("counter.py", counter),
            ("jitter.py", jitter),
            ("buffered.py", buffered),
        ],
    );
    let report = run.json();
    let mut frozen: Vec<(String, u64)> = report
        .iter()
        .filter(|item| item["code"] == "PT601")
        .map(|item| {
            (
                item["file"].as_str().unwrap().to_owned(),
                item["line"].as_u64().unwrap(),
            )
        })
        .collect();
    frozen.sort();
    // The counter: statically on the line that changes it, by the trace where it is read.
    assert_eq!(
        frozen,
        [
            ("counter.py".to_owned(), 11),
            ("counter.py".to_owned(), 12),
            ("jitter.py".to_owned(), 9)
        ],
        "{report:#?}\n{}",
        run.stderr
    );
    let counter_item = report
        .iter()
        .find(|item| item["code"] == "PT601" && item["file"] == "counter.py" && item["line"] == 12)
        .unwrap();
    let message = counter_item["message"].as_str().unwrap();
    assert!(
        message.contains("`1`") && message.contains("register_buffer"),
        "{message}"
    );
    assert_clean(tmp.path());
}

/// A cache built in `__init__` for a configured batch, met by an input whose batch is declared
/// dynamic: torch says the batch was specialised to 4 (example batch 4) or prints a raw size
/// mismatch (example batch 2). Where the static pass cannot read the configuration, the trace
/// alone names the cache and the line that built it; where the static pass says the same on
/// the line, the two are one diagnostic.
#[test]
fn a_cache_sized_for_one_batch_is_pt401_naming_the_cache() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let cached = r#"import json

import torch
from torch.export import Dim

# Read where the static pass cannot follow it: only the trace knows the cache's batch.
CONFIG = json.loads('{"max_batch": 4, "max_seq": 16, "dim": 8}')


class CachedAttention(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = torch.nn.Linear(config["dim"], config["dim"])
        self.register_buffer("k_cache", torch.zeros(config["max_batch"], config["max_seq"], config["dim"]))

    def forward(self, x):
        k = self.proj(x)
        return k + self.k_cache


model = CachedAttention(CONFIG).eval()
example_args = (torch.randn(4, 16, 8),)
dynamic_shapes = {"x": {0: Dim("batch")}}
"#;
    let differs = cached.replace("randn(4, 16, 8)", "randn(2, 16, 8)");
    let fixture = fs::read_to_string(
        repository().join("fixtures/rules/PT401/cache_sized_from_config_example_differs.py"),
    )
    .unwrap();
    let run = trace_files(
        python,
        tmp.path(),
        project.path(),
        &[
            ("cached.py", cached),
            ("differs.py", &differs),
            ("fixture.py", &fixture),
        ],
    );
    let report = run.json();
    let on = |file: &str| -> Vec<&Value> {
        report
            .iter()
            .filter(|item| item["file"] == file && item["severity"] != "info")
            .collect()
    };
    for (file, says) in [
        ("cached.py", "is read here with dynamic dimension `batch`"),
        ("differs.py", "meets dynamic dimension `batch` here"),
    ] {
        let found = on(file);
        assert_eq!(found.len(), 1, "{file}: {report:#?}\n{}", run.stderr);
        let item = found[0];
        assert_eq!(
            (&item["code"], &item["line"]),
            (&Value::from("PT401"), &Value::from(18))
        );
        assert_eq!(item["source"], "trace", "{item:#?}");
        let message = item["message"].as_str().unwrap();
        let state = format!("`self.k_cache` (size 4 at dim 0, built at {file}:14)");
        assert!(
            message.starts_with(&state) && message.contains(says),
            "{message}"
        );
    }
    // The static pass says the same on the fixture's marked line: one diagnostic, confirmed.
    let found = on("fixture.py");
    assert_eq!(found.len(), 1, "{report:#?}");
    assert_eq!(
        (&found[0]["line"], &found[0]["source"]),
        (&Value::from(36), &Value::from("static+trace"))
    );
    assert_clean(tmp.path());
}
