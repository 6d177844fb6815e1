//! Deployment targets: what the worker lowers an exported program for after the export succeeds
//! (`targets` in `[tool.pt2lsp]` or an entrypoint table, a file's module-level `targets`,
//! `--target`), and the per-run notes of targets that could not run.

use std::collections::BTreeMap;

pub use pt2lsp_project::tracing::{DeploymentTarget, union};

use super::protocol::JobResult;

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
