//! `pt2lsp check --trace` on the failure kinds of issue 32 that torch reports without the
//! user's line, or not at all, with real torch: module hooks export runs once, a global hook
//! strict export cannot trace, a `torch.compile` wrapper exported from a script, and torch's
//! own vocabulary (its graph-break code and page, the data-dependent forms it suggests) kept in
//! the messages. The fixtures under `fixtures/rules/PT204`, `PT602` and `PT603` are proven by
//! the fixture suites; these are the kinds a fixture's marks cannot state (a finding the static
//! pass does not make, on a line the convention does not run).
//!
//! The interpreter is `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`.
//! Without torch the tests fail when `CI` is set and are skipped, with a note, otherwise.

use std::fs;
use std::path::Path;

#[path = "support/torch.rs"]
mod torch_support;

use torch_support::turn;

fn torch_python() -> Option<&'static Path> {
    torch_support::torch_python("tracer_failure_kinds")
}

#[path = "support/run.rs"]
mod support;

#[path = "support/trace_run.rs"]
mod trace_run;

use trace_run::{assert_clean, pt2lsp, traced};

/// The traced diagnostics of `check --trace` on `files` (name, text), written into a fresh
/// project: (file name, line, code, message).
fn trace(python: &Path, files: &[(&str, &str)]) -> Vec<(String, u32, String, String)> {
    trace_with(python, files, &[])
}

/// [`trace`] with more options for `check`.
fn trace_with(
    python: &Path,
    files: &[(&str, &str)],
    options: &[&str],
) -> Vec<(String, u32, String, String)> {
    let tmp = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let mut args = vec![
        "check",
        "--trace",
        "--python",
        python.to_str().unwrap(),
        "--format",
        "json",
        "--exit-zero",
    ];
    args.extend_from_slice(options);
    for (name, text) in files {
        fs::write(project.path().join(name), text).unwrap();
        args.push(name);
    }
    let run = pt2lsp(project.path(), tmp.path(), &args);
    assert_eq!(run.code, 0, "stderr:\n{}", run.stderr);
    let found = traced(&run.json())
        .into_iter()
        .map(|(file, line, code, message)| {
            let name = Path::new(&file)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (name, line, code, message)
        })
        .collect();
    assert_clean(tmp.path());
    found
}

const COUNTING_HOOK: &str = r#"import torch
import torch.nn as nn

CALLS = {"n": 0}


def scale_by_calls(module, args):
    CALLS["n"] += 1
    return (args[0] * CALLS["n"],)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x)


model = Net()
model.register_forward_pre_hook(scale_by_calls)
example_args = (torch.randn(2, 4),)
"#;

const GLOBAL_HOOK_STRICT: &str = r"import torch
import torch.nn as nn
from torch.nn.modules.module import register_module_forward_hook


def shift_linear_outputs(module, args, output):
    return output + 1 if isinstance(module, nn.Linear) else None


register_module_forward_hook(shift_linear_outputs)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x)


model = Net()
example_args = (torch.randn(2, 4),)
strict = True
";

const COMPILED_IN_SCRIPT: &str = r#"import torch
import torch.nn as nn
from torch.export import Dim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x)


def main():
    fast = torch.compile(Net())
    x = torch.randn(3, 4)
    return torch.export.export(fast, (x,), dynamic_shapes={"x": {0: Dim("batch")}})


if __name__ == "__main__":
    main()
"#;

const BRANCH_STRICT: &str = r"import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x


model = Gate()
example_args = (torch.randn(5),)
strict = True
";

const SIZE_BRANCH: &str = r"import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x):
        n = x.nonzero().shape[0]
        if n > 2:
            return x + 1
        return x


model = Gate()
example_args = (torch.randn(5),)
";

/// A hook that counts calls: export (torch 2.15) ran it once and froze the count, so the
/// program disagrees with eager on the second call; the finding is on the hook, not on
/// `model =` with "cannot say which".
#[test]
fn a_hook_whose_state_export_freezes_is_pt601_on_the_hook() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let found = trace(python, &[("counting_hook.py", COUNTING_HOOK)]);
    let hook = found
        .iter()
        .find(|(_, _, code, _)| code == "PT601")
        .unwrap_or_else(|| panic!("no PT601: {found:?}"));
    assert_eq!(hook.1, 7, "{found:?}");
    assert!(
        hook.3.contains("`scale_by_calls` (forward pre-hook)"),
        "{}",
        hook.3
    );
    assert!(
        hook.3.contains("Move the hook's work into `forward`"),
        "{}",
        hook.3
    );
}

/// A global module hook: strict export stops in torch's wrapper of the module, which names
/// no user line; the finding is on the hook's definition.
#[test]
fn a_global_hook_under_strict_export_is_pt202_on_the_hook() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let found = trace(python, &[("global_hook.py", GLOBAL_HOOK_STRICT)]);
    assert!(
        found.iter().any(|(_, line, code, message)| code == "PT202"
            && *line == 6
            && message.contains("`shift_linear_outputs`")
            && message.contains("(torch GB0008: https://")),
        "{found:?}"
    );
}

/// `torch.compile`'s wrapper given to `torch.export.export` in a script, with `dynamic_shapes`
/// keyed by `forward`'s names: torch's message names `args`; pt2lsp's is PT204, on the
/// `torch.compile(...)` call, where the static pass says the same.
#[test]
fn a_compiled_module_exported_from_a_script_is_pt204_on_the_compile_call() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let found = trace(python, &[("export_compiled.py", COMPILED_IN_SCRIPT)]);
    assert!(
        found
            .iter()
            .any(|(_, line, code, _)| code == "PT204" && *line == 16),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|(_, _, code, _)| code == "PT403"),
        "{found:?}"
    );
}

/// torch's own words survive the merge with the static diagnostic of the same line: the graph
/// break's registry code and page, and the data-dependent forms written with the user's
/// condition.
#[test]
fn torchs_codes_and_suggested_forms_are_in_the_messages() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let found = trace(
        python,
        &[("branch.py", BRANCH_STRICT), ("size.py", SIZE_BRANCH)],
    );
    let message = |file: &str, code: &str| {
        found
            .iter()
            .find(|(name, _, found_code, _)| name == file && found_code == code)
            .map_or_else(
                || panic!("no {code} in {file}: {found:?}"),
                |(_, _, _, message)| message.clone(),
            )
    };
    assert!(
        message("branch.py", "PT101").ends_with(
            "(torch GB0170: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html)"
        ),
        "{found:?}"
    );
    let size = message("size.py", "PT103");
    assert!(
        size.contains("`guard_or_false(n > 2)`") && size.contains("`torch._check(n > 2)`"),
        "{size}"
    );
}

/// A `ShapeVar` whose size the program needs at one value: the reshape's size comes from an
/// attribute the static pass cannot read, so the trace alone says it.
const NARROWED_SHAPE_VAR: &str = r#"import torch
from torch.fx.experimental.dynamic_spec import STATIC, ShapeVar, TensorSpec, dynamic_spec

SIZES = {"rows": 8}


class Fold(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rows = SIZES.get("rows")

    @dynamic_spec({"x": TensorSpec([ShapeVar("batch"), STATIC])})
    def forward(self, x):
        return x.view(getattr(self, "rows"), 4) * 2


model = Fold()
example_args = (torch.randn(8, 4),)
"#;

/// The near-miss: a reshape that takes its size from the input keeps the `ShapeVar` free.
const FREE_SHAPE_VAR: &str = r#"import torch
from torch.fx.experimental.dynamic_spec import STATIC, ShapeVar, TensorSpec, dynamic_spec


class Fold(torch.nn.Module):
    @dynamic_spec({"x": TensorSpec([ShapeVar("batch"), STATIC])})
    def forward(self, x):
        return x.view(-1, 4) * 2


model = Fold()
example_args = (torch.randn(8, 4),)
"#;

/// A `ShapeVar` narrowed to one size (torch 2.15: the reshape adds the runtime assert
/// `Eq(4*u0, 32)` and `range_constraints` holds `VR[8, 8]`) is PT406 from the exported
/// program, on the line that fixes it, in both modes; one kept free is not.
#[test]
fn a_shape_var_narrowed_to_one_size_is_pt406_from_the_program() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let strict = format!("{NARROWED_SHAPE_VAR}strict = True\n");
    let found = trace(
        python,
        &[
            ("narrowed.py", NARROWED_SHAPE_VAR),
            ("narrowed_strict.py", &strict),
            ("free.py", FREE_SHAPE_VAR),
        ],
    );
    for file in ["narrowed.py", "narrowed_strict.py"] {
        let here: Vec<_> = found.iter().filter(|(name, ..)| name == file).collect();
        assert_eq!(here.len(), 1, "{file}: {found:?}");
        let (_, line, code, message) = here[0];
        assert_eq!((*line, code.as_str()), (14, "PT406"), "{file}: {message}");
        assert!(
            message.contains("`ShapeVar(\"batch\")` of `@dynamic_spec`, to 8")
                && message.contains("VR[8, 8]"),
            "{message}"
        );
    }
    assert!(
        !found.iter().any(|(name, ..)| name == "free.py"),
        "{found:?}"
    );
}

/// A model that exports, whose every eager call takes 5 s (a slow forward on a loaded machine):
/// exporting runs it once, while comparing the program with eager (PT601) would run it six
/// times more, past the job's 30 s.
const SLOW_EAGER: &str = r#"import time

import torch
import torch.nn as nn
from torch.export import Dim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        time.sleep(5)
        return self.proj(x).relu()


model = Net().eval()
example_args = (torch.randn(4, 8),)
dynamic_shapes = {"x": {0: Dim("batch")}}
"#;

/// The checks that only add to an export that succeeded (the comparison with eager) end in time
/// for the job to report: a model that exports is never a timeout (PT502) because of them.
#[test]
fn a_slow_model_that_exports_is_not_a_timeout_for_the_checks_after_its_export() {
    let Some(python) = torch_python() else { return };
    let _turn = turn();
    let found = trace_with(python, &[("slow.py", SLOW_EAGER)], &["--timeout", "30"]);
    assert!(found.is_empty(), "{found:?}");
}
