//! `check --trace --shard K/N` through the real binary: the shards of a project trace its
//! entrypoints exactly once between them, `pt2lsp merge` makes their JSON and SARIF reports the
//! unsharded ones, and a bad shard is a usage error.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

#[path = "support/torch.rs"]
mod torch_support;

fn pt2lsp(dir: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR"))
}

/// An ExportDB-convention file whose export fails on a data-dependent branch.
fn failing_model(threshold: usize) -> String {
    format!(
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        \
         if x.sum() > {threshold}:\n            return x * 2\n        return x\n\n\n\
         model = M()\nexample_args = (torch.randn(3),)\n"
    )
}

/// The diagnostics the tracer found, as (file, line, code).
fn traced(run: &Run) -> BTreeSet<(String, u64, String)> {
    let report: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|error| panic!("{error}: {run:?}"));
    report
        .as_array()
        .unwrap()
        .iter()
        // `static+trace` is a static finding the exporter confirmed: traced all the same.
        .filter(|diagnostic| {
            diagnostic["source"]
                .as_str()
                .is_some_and(|source| source.ends_with("trace"))
        })
        .map(|diagnostic| {
            (
                diagnostic["file"].as_str().unwrap().to_owned(),
                diagnostic["line"].as_u64().unwrap(),
                diagnostic["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_bad_shard_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let without_trace = pt2lsp(dir.path(), &["check", "--shard", "1/2"]);
    assert_eq!(without_trace.code, 2, "{without_trace:?}");
    assert!(
        without_trace.stderr.contains("--trace"),
        "{without_trace:?}"
    );
    for bad in ["0/2", "3/2", "2"] {
        let refused = pt2lsp(dir.path(), &["check", "--trace", "--shard", bad]);
        assert_eq!(refused.code, 2, "{refused:?}");
        assert!(refused.stderr.contains("K/N"), "{refused:?}");
    }
}

#[test]
fn shards_trace_every_entrypoint_exactly_once() {
    let Some(python) = torch_support::torch_python("shard") else {
        return;
    };
    let _turn = torch_support::turn();
    let dir = tempfile::tempdir().unwrap();
    for index in 0..6 {
        let path = dir.path().join(format!("models/m{index}.py"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, failing_model(index)).unwrap();
    }
    let python = python.to_str().unwrap();
    let check = |shard: Option<&str>| {
        let mut args = vec!["check", "--trace", "--python", python, "--format", "json"];
        if let Some(shard) = shard {
            args.extend(["--shard", shard]);
        }
        let run = pt2lsp(dir.path(), &args);
        assert_eq!(run.code, 1, "{run:?}");
        traced(&run)
    };
    let all = check(None);
    assert_eq!(all.len(), 6, "{all:?}");
    let first = check(Some("1/2"));
    let second = check(Some("2/2"));
    assert!(first.is_disjoint(&second), "{first:?} {second:?}");
    assert_eq!(&first | &second, all);
    assert!(
        !first.is_empty() && !second.is_empty(),
        "{first:?} {second:?}"
    );

    // The shards' reports, merged, are the unsharded report, in JSON and in SARIF.
    for format in ["json", "sarif"] {
        let report = |shard: Option<&str>| {
            let mut args = vec!["check", "--trace", "--python", python, "--format", format];
            if let Some(shard) = shard {
                args.extend(["--shard", shard]);
            }
            let run = pt2lsp(dir.path(), &args);
            assert_eq!(run.code, 1, "{run:?}");
            run.stdout
        };
        let whole: Value = serde_json::from_str(&report(None)).unwrap();
        let mut paths = Vec::new();
        for shard in ["1/2", "2/2"] {
            let path = dir.path().join(format!("shard-{}.{format}", &shard[..1]));
            std::fs::write(&path, report(Some(shard))).unwrap();
            paths.push(path);
        }
        let mut args = vec!["merge"];
        args.extend(paths.iter().map(|path| path.to_str().unwrap()));
        let merged = pt2lsp(dir.path(), &args);
        assert_eq!(merged.code, 1, "{merged:?}");
        let merged: Value = serde_json::from_str(&merged.stdout).unwrap();
        assert_eq!(merged, whole, "{format}");
        for path in paths {
            std::fs::remove_file(path).unwrap();
        }
    }
}

#[test]
fn merging_reports_of_different_formats_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.json"), "[]").unwrap();
    std::fs::write(dir.path().join("b.sarif"), r#"{"runs": [{"results": []}]}"#).unwrap();
    let run = pt2lsp(dir.path(), &["merge", "a.json", "b.sarif"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("different formats"), "{run:?}");
    let run = pt2lsp(dir.path(), &["merge", "a.json"]);
    assert_eq!((run.code, run.stdout.trim()), (0, "[]"), "{run:?}");
}
