//! `pt2lsp merge`: the reports of `check --shard K/N` (JSON or SARIF) made one, as the unsharded
//! run would have printed it.
//!
//! Every shard analyses every file statically and traces only its own entrypoints, so a static
//! finding is in every shard's report, and a traced one (or a static one the trace confirmed,
//! `static+trace`) in one shard's only. The merge keeps one finding per (file, position, code),
//! the traced one where a shard has it, in the order `check` prints: files by path, findings by
//! position, then code.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::cli::ExitStatus;
use crate::cli::args::MergeArgs;

/// Which report format the inputs are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `check --format json`: an array of diagnostics.
    Json,
    /// `check --format sarif`: a log with one run.
    Sarif,
}

pub fn run(args: &MergeArgs) -> Result<ExitStatus> {
    let mut reports = Vec::new();
    for path in &args.reports {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let value: Value = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a report of `pt2lsp check --format json` or `--format sarif`",
                path.display()
            )
        })?;
        reports.push((path.clone(), value));
    }
    let merged = merge(&reports)?;
    // Through the CLI's one writer of stdout, as every report is.
    super::output::with_stdout(|out| {
        serde_json::to_writer_pretty(&mut *out, &merged)?;
        writeln!(out)
    })?;
    Ok(if has_errors(&merged) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// The merged report of `reports` (path, parsed JSON), all of one format.
fn merge(reports: &[(PathBuf, Value)]) -> Result<Value> {
    let Some((first_path, first)) = reports.first() else {
        bail!("no reports to merge");
    };
    let format = format_of(first_path, first)?;
    for (path, report) in reports {
        if format_of(path, report)? != format {
            bail!(
                "{} and {} are of different formats: merge JSON reports with JSON, SARIF with SARIF",
                first_path.display(),
                path.display()
            );
        }
    }
    match format {
        Format::Json => {
            let all = reports
                .iter()
                .flat_map(|(_, report)| report.as_array().into_iter().flatten().cloned());
            Ok(Value::Array(unique(all, json_key)))
        }
        Format::Sarif => {
            let mut merged = first.clone();
            let all = reports.iter().flat_map(|(_, report)| {
                report["runs"][0]["results"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .cloned()
            });
            merged["runs"][0]["results"] = Value::Array(unique(all, sarif_key));
            Ok(merged)
        }
    }
}

fn format_of(path: &Path, report: &Value) -> Result<Format> {
    if report.is_array() {
        return Ok(Format::Json);
    }
    let runs = report["runs"].as_array();
    match runs.map(Vec::len) {
        Some(1) if report["runs"][0]["results"].is_array() => Ok(Format::Sarif),
        Some(count) if count != 1 => bail!(
            "{} holds {count} SARIF runs; `pt2lsp check --format sarif` writes one",
            path.display()
        ),
        _ => bail!(
            "{} is not a report of `pt2lsp check --format json` or `--format sarif`",
            path.display()
        ),
    }
}

/// Where a finding is and what it is: the file's path components, line, column, code.
type Key = (Vec<String>, u64, u64, String);

fn json_key(diagnostic: &Value) -> Key {
    (
        components(diagnostic["file"].as_str().unwrap_or_default()),
        diagnostic["line"].as_u64().unwrap_or_default(),
        diagnostic["column"].as_u64().unwrap_or_default(),
        diagnostic["code"].as_str().unwrap_or_default().to_owned(),
    )
}

fn sarif_key(result: &Value) -> Key {
    let location = &result["locations"][0]["physicalLocation"];
    (
        components(
            location["artifactLocation"]["uri"]
                .as_str()
                .unwrap_or_default(),
        ),
        location["region"]["startLine"].as_u64().unwrap_or_default(),
        location["region"]["startColumn"]
            .as_u64()
            .unwrap_or_default(),
        result["ruleId"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Paths compare by component, as `check` orders files (`a/b.py` before `a.py`).
fn components(path: &str) -> Vec<String> {
    path.split(['/', '\\']).map(str::to_owned).collect()
}

/// Whether a finding comes from (or was confirmed by) the tracer.
fn traced(finding: &Value) -> bool {
    let source = finding["source"]
        .as_str()
        .or_else(|| finding["properties"]["source"].as_str())
        .unwrap_or_default();
    source.ends_with("trace")
}

/// One finding per key, the traced one where there is one, in key order.
fn unique(findings: impl Iterator<Item = Value>, key: fn(&Value) -> Key) -> Vec<Value> {
    let mut kept: BTreeMap<Key, Value> = BTreeMap::new();
    for finding in findings {
        match kept.entry(key(&finding)) {
            Entry::Occupied(mut known) => {
                if traced(&finding) && !traced(known.get()) {
                    known.insert(finding);
                }
            }
            Entry::Vacant(slot) => {
                slot.insert(finding);
            }
        }
    }
    kept.into_values().collect()
}

/// Whether the merged report holds an error, which makes `merge` exit 1 as `check` would.
fn has_errors(report: &Value) -> bool {
    match report.as_array() {
        Some(diagnostics) => diagnostics
            .iter()
            .any(|diagnostic| diagnostic["severity"] == "error"),
        None => report["runs"][0]["results"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|result| result["level"] == "error"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diagnostic(file: &str, line: u64, code: &str, source: &str) -> Value {
        json!({"file": file, "line": line, "column": 1, "code": code, "severity": "error", "source": source})
    }

    #[test]
    fn static_findings_are_kept_once_traced_ones_win_and_order_is_checks() {
        let first = json!([
            diagnostic("a.py", 3, "PT101", "static"),
            diagnostic("a/b.py", 8, "PT401", "static+trace"),
        ]);
        let second = json!([
            diagnostic("a.py", 3, "PT101", "static+trace"),
            diagnostic("a/b.py", 8, "PT401", "static"),
            diagnostic("a/b.py", 2, "PT501", "trace"),
        ]);
        let merged = merge(&[
            (PathBuf::from("1.json"), first),
            (PathBuf::from("2.json"), second),
        ])
        .unwrap();
        assert_eq!(
            merged,
            json!([
                diagnostic("a/b.py", 2, "PT501", "trace"),
                diagnostic("a/b.py", 8, "PT401", "static+trace"),
                diagnostic("a.py", 3, "PT101", "static+trace"),
            ])
        );
        assert!(has_errors(&merged));
    }

    #[test]
    fn formats_do_not_mix_and_bad_input_is_named() {
        let sarif = json!({"runs": [{"results": []}]});
        let error = merge(&[
            (PathBuf::from("1.json"), json!([])),
            (PathBuf::from("2.sarif"), sarif.clone()),
        ])
        .unwrap_err();
        assert!(error.to_string().contains("different formats"), "{error}");
        let error = merge(&[(PathBuf::from("x.json"), json!({"a": 1}))]).unwrap_err();
        assert!(
            error.to_string().contains("x.json is not a report"),
            "{error}"
        );
        assert_eq!(
            merge(&[(PathBuf::from("1.sarif"), sarif.clone())]).unwrap(),
            sarif
        );
        assert!(!has_errors(&sarif));
    }
}
