//! The trace cache through the real binary and real torch: a second `check --trace` of an
//! unchanged project replays the same report without starting Python; a change to a file the
//! entrypoint imports, or `--no-cache`, traces again.

use std::path::Path;
use std::process::Command;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

#[path = "support/torch.rs"]
mod torch_support;

fn pt2lsp(dir: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(args)
        .current_dir(dir)
        .env_remove("PT2LSP_NO_CACHE")
        .env_remove("NO_COLOR"))
}

const ENTRY: &str = "\
import torch
from torch.export import Dim

from mymodels.net import Net

model = Net().eval()
example_args = (torch.randn(4, 8),)
dynamic_shapes = {\"x\": {0: Dim(\"batch\")}}
";

const NET: &str = "\
import torch

from mymodels.helpers import scale


class Net(torch.nn.Module):
    def forward(self, x):
        return scale(x)
";

const HELPERS: &str = "\
def scale(h):
    if h.mean() > 0:
        return h * 2
    return h
";

#[test]
fn an_unchanged_project_is_replayed_and_a_changed_import_traced_again() {
    let Some(python) = torch_support::torch_python("trace cache") else {
        return;
    };
    let _turn = torch_support::turn();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("mymodels")).unwrap();
    std::fs::write(project.join("export_net.py"), ENTRY).unwrap();
    std::fs::write(project.join("mymodels/__init__.py"), "").unwrap();
    std::fs::write(project.join("mymodels/net.py"), NET).unwrap();
    std::fs::write(project.join("mymodels/helpers.py"), HELPERS).unwrap();

    // An interpreter that leaves a mark each time it starts: the worker's start.
    let marker = dir.path().join("started");
    let wrapper = dir.path().join("python");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho started >> '{}'\nexec '{}' \"$@\"\n",
            marker.display(),
            python.display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&wrapper, permissions).unwrap();
    let wrapper = wrapper.to_str().unwrap();
    let check = |extra: &[&str]| {
        let mut args = vec!["check", "--trace", "--python", wrapper, "--format", "json"];
        args.extend(extra);
        let run = pt2lsp(&project, &args);
        assert_eq!(run.code, 1, "{run:?}");
        let started = marker.exists();
        let _ = std::fs::remove_file(&marker);
        (run, started)
    };
    let traced_lines = |run: &Run| -> Vec<(String, u64, String)> {
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        report
            .as_array()
            .unwrap()
            .iter()
            .filter(|found| found["source"].as_str().unwrap().ends_with("trace"))
            .map(|found| {
                (
                    found["file"].as_str().unwrap().to_owned(),
                    found["line"].as_u64().unwrap(),
                    found["code"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };

    let (first, started) = check(&[]);
    assert!(started, "the first run traces: {first:?}");
    let found = traced_lines(&first);
    assert!(
        found.contains(&("mymodels/helpers.py".to_owned(), 2, "PT101".to_owned())),
        "{found:?}"
    );
    assert!(project.join(".pt2lsp_cache/.gitignore").is_file());

    let (second, started) = check(&[]);
    assert!(
        !started,
        "an unchanged project starts no Python: {second:?}"
    );
    assert_eq!(second.stdout, first.stdout, "the same report");
    assert!(
        second.stderr.contains("Replayed 1 of 1 traces"),
        "{second:?}"
    );

    // An edit of a file the entrypoint imports (two files away) is a miss: the branch moved.
    std::fs::write(
        project.join("mymodels/helpers.py"),
        format!("# Scales positive inputs.\n{HELPERS}"),
    )
    .unwrap();
    let (third, started) = check(&[]);
    assert!(started, "a changed import traces again: {third:?}");
    assert!(
        traced_lines(&third).contains(&("mymodels/helpers.py".to_owned(), 3, "PT101".to_owned())),
        "{third:?}"
    );
    let (_, started) = check(&[]);
    assert!(!started, "and is kept again");

    let (fresh, started) = check(&["--no-cache"]);
    assert!(started, "--no-cache traces: {fresh:?}");
    assert_eq!(traced_lines(&fresh), traced_lines(&third));
}
