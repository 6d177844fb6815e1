//! Deployment targets: what the worker lowers an exported program for after the export succeeds
//! (`targets` in `[tool.pt2lsp]` or an entrypoint table, a file's module-level `targets`,
//! `--target`), and the per-run notes of targets that could not run.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Serialize, Serializer};

use super::protocol::JobResult;

/// One deployment target; the worker's `lowering.TARGETS` lists the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeploymentTarget {
    /// `run_decompositions()` to the core ATen opset (PT701).
    CoreAten,
    /// `torch.export.save`, `torch.export.load` and a run against eager (PT702).
    Pt2,
    /// `torch.onnx.export(..., dynamo=True)` (PT703).
    Onnx,
    /// `torch._inductor.aoti_compile_and_package` (PT704).
    Aoti,
    /// `to_edge_transform_and_lower` with XNNPACK, then `to_executorch()` (PT705, PT706).
    ExecuTorch,
}

impl DeploymentTarget {
    pub const ALL: &[DeploymentTarget] = &[
        DeploymentTarget::CoreAten,
        DeploymentTarget::Pt2,
        DeploymentTarget::Onnx,
        DeploymentTarget::Aoti,
        DeploymentTarget::ExecuTorch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentTarget::CoreAten => "core-aten",
            DeploymentTarget::Pt2 => "pt2",
            DeploymentTarget::Onnx => "onnx",
            DeploymentTarget::Aoti => "aoti",
            DeploymentTarget::ExecuTorch => "executorch",
        }
    }

    /// The target named `name`, or a message naming the known ones (and the one meant, for a
    /// typo).
    pub fn parse(name: &str) -> Result<Self, String> {
        let wanted = name.trim().to_ascii_lowercase();
        if let Some(target) = Self::ALL
            .iter()
            .copied()
            .find(|target| target.as_str() == wanted)
        {
            return Ok(target);
        }
        let known: Vec<&str> = Self::ALL.iter().map(|target| target.as_str()).collect();
        let near = known
            .iter()
            .find(|candidate| {
                candidate.starts_with(&wanted) || wanted.starts_with(*candidate) || {
                    let (a, b) = (candidate.as_bytes(), wanted.as_bytes());
                    a.len() == b.len() && a.iter().zip(b).filter(|(x, y)| x != y).count() <= 1
                }
            })
            .map(|candidate| format!("; did you mean `{candidate}`?"))
            .unwrap_or_default();
        Err(format!(
            "unknown deployment target `{name}`{near} (known targets: {})",
            known.join(", ")
        ))
    }

    /// The extension of the artefact `pt2lsp export --target` writes (`model.pte`), for a target
    /// that writes one of its own: `pt2` is the `.pt2` export writes anyway, `core-aten` a check.
    pub fn artefact_extension(self) -> Option<&'static str> {
        match self {
            DeploymentTarget::Onnx => Some("onnx"),
            DeploymentTarget::Aoti => Some("aoti.pt2"),
            DeploymentTarget::ExecuTorch => Some("pte"),
            DeploymentTarget::CoreAten | DeploymentTarget::Pt2 => None,
        }
    }

    /// How an editor's command names the artefact (`Export to ONNX`).
    pub fn artefact_title(self) -> Option<&'static str> {
        match self {
            DeploymentTarget::Onnx => Some("Export to ONNX"),
            DeploymentTarget::Aoti => Some("Export to AOTInductor"),
            DeploymentTarget::ExecuTorch => Some("Export to ExecuTorch"),
            DeploymentTarget::CoreAten | DeploymentTarget::Pt2 => None,
        }
    }

    /// Every name in `names`, in `ALL`'s order without repeats, or the first unknown name's
    /// message.
    pub fn parse_all<S: AsRef<str>>(names: &[S]) -> Result<Vec<Self>, String> {
        let mut targets = Vec::new();
        for name in names {
            for part in name
                .as_ref()
                .split(',')
                .filter(|part| !part.trim().is_empty())
            {
                let target = Self::parse(part)?;
                if !targets.contains(&target) {
                    targets.push(target);
                }
            }
        }
        targets.sort();
        Ok(targets)
    }
}

impl fmt::Display for DeploymentTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DeploymentTarget {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The union of two target lists (the run's and an entrypoint's), in `ALL`'s order.
pub fn union(a: &[DeploymentTarget], b: &[DeploymentTarget]) -> Vec<DeploymentTarget> {
    let mut out: Vec<DeploymentTarget> = a.iter().chain(b).copied().collect();
    out.sort();
    out.dedup();
    out
}

/// Why each target could not run, gathered over a run's jobs: one message per target and
/// reason, however many entrypoints named it (a missing package is said once, not per job).
#[derive(Debug, Default)]
pub struct UnavailableTargets {
    notes: BTreeMap<String, String>,
}

impl UnavailableTargets {
    /// Takes the notes of one job's result.
    pub fn add(&mut self, result: &JobResult) {
        for lowering in result
            .targets
            .iter()
            .flat_map(|lowerings| lowerings.0.iter())
        {
            if let Some(why) = &lowering.unavailable {
                self.notes
                    .entry(lowering.target.clone())
                    .or_insert_with(|| why.clone());
            }
        }
    }

    /// `target `executorch` not checked: …`, one line per target, in target order.
    pub fn messages(&self) -> Vec<String> {
        self.notes
            .iter()
            .map(|(target, why)| format!("target `{target}` not checked: {why}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unknown_ones_say_what_is_known() {
        assert_eq!(
            DeploymentTarget::parse_all(&["onnx,aoti", "core-aten", "onnx"]).unwrap(),
            vec![
                DeploymentTarget::CoreAten,
                DeploymentTarget::Onnx,
                DeploymentTarget::Aoti
            ]
        );
        let error = DeploymentTarget::parse("tensorrt").unwrap_err();
        assert!(
            error.contains("`tensorrt`")
                && error.contains("known targets: core-aten, pt2, onnx, aoti, executorch"),
            "{error}"
        );
        let error = DeploymentTarget::parse("onxx").unwrap_err();
        assert!(error.contains("did you mean `onnx`?"), "{error}");
        assert_eq!(
            DeploymentTarget::parse("ExecuTorch"),
            Ok(DeploymentTarget::ExecuTorch)
        );
        assert_eq!(
            serde_json::to_string(&[DeploymentTarget::Pt2]).unwrap(),
            r#"["pt2"]"#
        );
    }

    #[test]
    fn an_unavailable_target_is_said_once_per_run() {
        let result = |why: &str| -> JobResult {
            serde_json::from_value(serde_json::json!({
                "id": 1, "status": "ok", "detail": null, "elapsed": null,
                "targets": [{"target": "executorch", "seconds": 0.1, "unavailable": why},
                            {"target": "onnx", "seconds": 1.0}]
            }))
            .unwrap()
        };
        let mut notes = UnavailableTargets::default();
        notes.add(&result("pip install executorch"));
        notes.add(&result("pip install executorch"));
        assert_eq!(
            notes.messages(),
            vec!["target `executorch` not checked: pip install executorch"]
        );
    }
}
