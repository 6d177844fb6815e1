//! The worker protocol, version 1: JSON lines over a Unix socket (see `tracer/python/pt2lsp_worker/`).
//!
//! Requests go from the manager to the worker (`Request`); the worker answers with one `Hello`
//! after start-up and then `Event`s. A job's `Finding`s are already placed in the user's files:
//! 1-based lines, 0-based columns in UTF-8 bytes.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use pt2lsp_project::tracing::DeploymentTarget;

/// The protocol version this binary speaks; the worker says which one it speaks in its hello.
pub const PROTOCOL: u32 = 1;

/// What the worker is asked to trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobSpec {
    /// The file the entrypoint belongs to: the ExportDB-convention file itself, or the module
    /// of a configured entrypoint's `model`.
    pub file: PathBuf,
    /// Directories whose files are the user's (the project root): findings go on frames there,
    /// and they are put on `sys.path` so sibling imports work.
    pub roots: Vec<PathBuf>,
    /// The working directory of the traced code.
    pub cwd: PathBuf,
    /// A `[[tool.pt2lsp.entrypoints]]` table; `None` for the ExportDB convention in `file`.
    pub entrypoint: Option<EntrypointSpec>,
    /// An export call in `file`, reached by running the user's code path to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<CallSite>,
    /// Export with `strict=True` (a file's own `strict = True` also turns it on).
    pub strict: bool,
    /// Seconds before the job's process is killed.
    pub timeout: f64,
    /// Address space (MiB) a job may map beyond the warmed worker's own; `None` for no limit.
    pub memory_limit_mb: Option<u64>,
    /// Deployment targets to lower the program for once it exports (`tracer::targets`); the
    /// worker adds those a convention file declares in its own `targets`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<DeploymentTarget>,
}

/// An export call the tracer reaches by running the user's code: the file as a script
/// (`reach = "script"`), or the function around the call, called with no arguments
/// (`reach = "call"`, `name`). The call at `line..=end_line` (1-based) is intercepted: its
/// arguments are exported, and the program stops there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallSite {
    pub line: u32,
    pub end_line: u32,
    /// The export function called (`torch.export.export`).
    pub function: String,
    pub reach: CallReachKind,
    /// The function to call for `reach = "call"` (`test_export`, `TestExport.test_export`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The script's command line (after its path).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    /// Where the user's own code saves the program (`torch.export.save(ep, "m.pt2")`, or an
    /// argparse default), as written: `pt2lsp export` names its file after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub save_path: Option<String>,
    /// The function or method the call is written in (`main`); `None` at module level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// How the worker runs the user's code to an export call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallReachKind {
    Script,
    Call,
}

/// One configured entrypoint: `module:EXPRESSION` strings, each evaluated by the worker with
/// the module's namespace as its globals (`pkg:build_model(ModelConfig(hidden=8)).eval()`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntrypointSpec {
    pub name: Option<String>,
    pub model: String,
    pub example_args: Option<String>,
    pub example_kwargs: Option<String>,
    pub dynamic_shapes: Option<String>,
    pub strict: Option<bool>,
    /// Build the model and its inputs under `FakeTensorMode` (`fake-weights = true`): shapes
    /// without storage, so a model of any size is checked without allocating its weights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fake_weights: Option<bool>,
    /// The entrypoint table's own `targets`, lowered for besides the run's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<DeploymentTarget>,
    /// Where the table is written, so that the worker reports a string it cannot resolve on
    /// that string's line; `None` for settings that came from no file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declared: Option<DeclaredTable>,
}

/// The file of an entrypoint table and the 1-based lines of its strings, by the worker's
/// names for them (`model`, `example_args`, `example_kwargs`, `dynamic_shapes`) and `table`
/// for its header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeclaredTable {
    pub file: PathBuf,
    pub lines: std::collections::BTreeMap<&'static str, u32>,
}

impl DeclaredTable {
    /// The place of a table read from a file, in the worker's terms.
    pub fn of(place: &pt2lsp_project::config::TablePlace) -> Self {
        let mut lines = std::collections::BTreeMap::new();
        lines.insert("table", place.header);
        for (role, key) in [
            ("model", "model"),
            ("example_args", "example-args"),
            ("example_kwargs", "example-kwargs"),
            ("dynamic_shapes", "dynamic-shapes"),
        ] {
            lines.insert(role, place.line_of(key));
        }
        Self {
            file: place.file.clone(),
            lines,
        }
    }
}

/// What turns a job into an export: after `torch.export.export` succeeds, the worker saves the
/// program to `temporary` (in the output's directory), renames it to `output`, loads it back
/// with `torch.export.load` and runs it against the eager model on the example inputs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportJob {
    pub output: PathBuf,
    /// Chosen by the caller, so that it can remove the file whatever happens to the job.
    pub temporary: PathBuf,
    /// Write the program even when it disagrees with eager (PT601, its only findings); the
    /// findings come back with the report.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_divergence: bool,
    /// Write this deployment target's artefact (the `.onnx`, the AOTInductor package, the
    /// `.pte`) instead of the `.pt2`, checked by the target's runtime against eager.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<DeploymentTarget>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request<'a> {
    Job {
        id: u64,
        job: &'a JobSpec,
        /// Present for an export job (`pt2lsp export`, `pt2lsp.exportPt2`); a trace otherwise.
        #[serde(skip_serializing_if = "Option::is_none")]
        export: Option<&'a ExportJob>,
    },
    Cancel {
        id: u64,
    },
    Shutdown,
}

/// The worker's first line.
#[derive(Debug, Clone, Deserialize)]
#[allow(
    clippy::struct_field_names,
    reason = "the wire format names the greeting field `hello`"
)]
pub struct Hello {
    pub hello: String,
    pub protocol: u32,
    pub token: String,
    /// The torch version, or `None` when torch could not be imported (`error` says why).
    pub torch: Option<String>,
    pub python: Option<String>,
    pub python_version: Option<String>,
    pub error: Option<String>,
    pub pid: Option<u32>,
}

/// What the worker reports after the hello.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum Event {
    Started {
        id: u64,
        pid: u32,
    },
    /// A stage of a running export job (`exporting`, `saving`, `verifying`).
    Progress {
        id: u64,
        stage: String,
        message: Option<String>,
    },
    Result(JobResult),
    Error {
        message: String,
    },
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The model exported.
    Ok,
    /// Export failed; the findings say where and why.
    Failed,
    /// The model or its example inputs could not be built (PT503).
    Entrypoint,
    /// The job ran out of memory (PT502).
    Oom,
    /// The job exceeded its time (PT502).
    Timeout,
    /// The job was cancelled; nothing to report.
    Cancelled,
    /// The job's process died (a segfault, `os._exit`, the worker itself dying) (PT502).
    Crashed,
    /// No worker could be started to run the job (the manager's status, never the worker's).
    Unavailable,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobResult {
    pub id: u64,
    pub status: Status,
    #[serde(default)]
    pub diagnostics: Vec<Finding>,
    pub detail: Option<String>,
    /// What the traced code printed (stdout and stderr, merged and bounded); never a finding.
    #[serde(default)]
    pub output: String,
    #[serde(default)]
    pub output_truncated: bool,
    /// Seconds from fork to the end of the job.
    pub elapsed: Option<f64>,
    /// What an export job wrote, when it wrote it (boxed: most results are traces').
    #[serde(default)]
    pub export: Option<Box<ExportReport>>,
    /// The exported program's tensor shapes on the user's lines, when the export succeeded.
    #[serde(default)]
    pub shapes: Vec<TracedShapes>,
    /// A trace's: the files its result follows from (the entry file, the modules it imported
    /// beyond the warm worker's, the files it read, the interpreter and torch's version file),
    /// absolute, for the trace cache (`tracer::cache`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<PathBuf>,
    /// An export that succeeded: the lines of the user's files it ran (a graph node made on or
    /// under the line, a guard added there), the exporter's evidence against a static error
    /// there (`tracer::ground_truth`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passed_lines: Vec<PassedLines>,
    /// The deployment targets the program was lowered for, with their time, or why one could
    /// not run here (its package missing, or built for another torch); boxed, as most jobs
    /// have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Box<TargetLowerings>>,
    /// Replayed from the trace cache rather than run; never on the wire.
    #[serde(skip)]
    pub replayed: bool,
}

/// The lowerings of one job, in the order they ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TargetLowerings(pub Vec<TargetLowering>);

/// One deployment target's lowering in a job: its name, its seconds, and why it could not run
/// when it could not (its findings are among the job's diagnostics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetLowering {
    pub target: String,
    #[serde(default)]
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// The lines of one user file that an export which succeeded ran (1-based, sorted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassedLines {
    pub file: PathBuf,
    pub lines: Vec<u32>,
}

/// The shapes of the tensors the exported graph made on one line of the user's files, in graph
/// order, written in the user's `Dim` names (`[batch, 8, (height + 1)//2]`; `?` for a size
/// the worker cannot name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedShapes {
    pub file: PathBuf,
    /// 1-based.
    pub line: u32,
    pub shapes: Vec<String>,
}

/// What an export job wrote and how its check went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportReport {
    /// The `.pt2` file, absolute.
    pub path: PathBuf,
    /// Bytes.
    pub size: u64,
    /// Nodes of the exported graph (placeholders and output included).
    pub nodes: u64,
    /// The inputs as the program takes them: `x: f32[s77, 64]`.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// The range of each symbolic dimension.
    #[serde(default)]
    pub range_constraints: Vec<RangeConstraint>,
    pub verification: Verification,
    /// Whether the export ran with `strict=True`.
    #[serde(default)]
    pub strict: bool,
    /// The deployment target whose artefact was written (`onnx`, `aoti`, `executorch`); `None`
    /// for the `.pt2` of the program itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// `s77 (batch): [2, 1024]`: a symbol of the exported program, the `Dim` it came from when the
/// worker could tell, and its bounds (`None`: unbounded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeConstraint {
    pub symbol: String,
    #[serde(default)]
    pub dim: Option<String>,
    pub min: Option<i64>,
    pub max: Option<i64>,
}

impl std::fmt::Display for RangeConstraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bound = |value: Option<i64>, infinite: &str| {
            value.map_or_else(|| infinite.to_owned(), |value| value.to_string())
        };
        write!(f, "{}", self.symbol)?;
        if let Some(dim) = &self.dim {
            write!(f, " ({dim})")?;
        }
        write!(
            f,
            ": [{}, {}]",
            bound(self.min, "-inf"),
            bound(self.max, "inf")
        )
    }
}

/// The saved program, loaded back and run on the example inputs, against the eager model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// The file loaded, ran, and its outputs matched eager's (`torch.allclose` per tensor).
    pub matches: bool,
    /// The largest absolute difference over the floating-point outputs.
    #[serde(default)]
    pub max_abs_diff: Option<f64>,
    pub rtol: f64,
    pub atol: f64,
    /// Why it does not match, or why it could not be loaded or run.
    #[serde(default)]
    pub detail: Option<String>,
}

/// One problem the exporter found, in a file of the user's workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// A rule code (`PT101`).
    pub code: String,
    pub file: PathBuf,
    /// 1-based.
    pub line: u32,
    /// 0-based, in UTF-8 bytes; `None` when only the line is known.
    pub column: Option<u32>,
    pub end_line: Option<u32>,
    pub end_column: Option<u32>,
    pub message: String,
    /// Fixes parsed from a constraint violation's `Suggested fixes:` block.
    #[serde(default)]
    pub fixes: Vec<SuggestedFix>,
    /// `export`, `draft_export` or `entrypoint`: which step found it.
    pub origin: Option<String>,
    /// The exporter's exception class, when there was one.
    pub exception: Option<String>,
    /// Places that explain the finding: frames of installed libraries the failure went through
    /// (deepest last), the entrypoint's `model =` line.
    #[serde(default)]
    pub related: Vec<RelatedLocation>,
}

/// A place related to a finding: a file (often outside the workspace, in site-packages) and a
/// 1-based line and column (in characters; `None` for the line's start), and what happens there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelatedLocation {
    pub file: PathBuf,
    pub line: u32,
    pub column: Option<u32>,
    pub message: String,
}

/// One line of a `Suggested fixes:` block, as data for a code action that edits
/// `dynamic_shapes`: `b = Dim('b', min=6)` is a range, `b = a` an equality, `b = 2*_b` a
/// derived dim, `b = 8` a constant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuggestedFix {
    pub dim: String,
    pub kind: FixKind,
    /// The line as torch printed it.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
    /// `equal`: the dim it must equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// `derived`: the expression (`2*_b`) and the dim it is derived from (`_b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// `constant`: the value the dim was specialized to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<i64>,
    /// The module-level binding in the user's files that holds this `Dim` (the worker finds
    /// it by the object's identity), where the fix is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_file: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_line: Option<u32>,
    /// The module-level name of the whole spec the `Dim` is written in, when no name binds the
    /// `Dim` itself (`DYNAMIC_SHAPES = {"x": {0: Dim("batch")}}`, named by an entrypoint table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_spec: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FixKind {
    Range,
    Equal,
    Derived,
    Constant,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_tagged_lines() {
        let text = serde_json::to_string(&Request::Cancel { id: 7 }).unwrap();
        assert_eq!(text, r#"{"op":"cancel","id":7}"#);
        assert_eq!(
            serde_json::to_string(&Request::Shutdown).unwrap(),
            r#"{"op":"shutdown"}"#
        );
    }

    #[test]
    fn export_jobs_carry_their_output_and_report_back() {
        let job = JobSpec {
            file: PathBuf::from("/p/m.py"),
            roots: vec![PathBuf::from("/p")],
            cwd: PathBuf::from("/p"),
            entrypoint: None,
            call: None,
            strict: false,
            timeout: 5.0,
            memory_limit_mb: None,
            targets: Vec::new(),
        };
        let export = ExportJob {
            output: PathBuf::from("/p/m.pt2"),
            temporary: PathBuf::from("/p/.m.pt2.1.tmp"),
            allow_divergence: false,
            target: None,
        };
        let trace = serde_json::to_value(Request::Job {
            id: 1,
            job: &job,
            export: None,
        })
        .unwrap();
        assert!(trace.get("export").is_none(), "{trace}");
        let line = serde_json::to_value(Request::Job {
            id: 2,
            job: &job,
            export: Some(&export),
        })
        .unwrap();
        assert_eq!(line["export"]["output"], "/p/m.pt2");

        let progress =
            r#"{"event": "progress", "id": 2, "stage": "saving", "message": "/p/m.pt2"}"#;
        let Event::Progress { id, stage, .. } = serde_json::from_str(progress).unwrap() else {
            panic!("not progress");
        };
        assert_eq!((id, stage.as_str()), (2, "saving"));
        let result = r#"{"event": "result", "id": 2, "status": "ok", "export": {"path": "/p/m.pt2",
            "size": 9605, "nodes": 7, "inputs": ["x: f32[s77, 8]"],
            "range_constraints": [{"symbol": "s77", "dim": "batch", "min": 2, "max": null}],
            "verification": {"matches": true, "max_abs_diff": 0.0, "rtol": 1e-4, "atol": 1e-5}}}"#;
        let Event::Result(result) = serde_json::from_str(result).unwrap() else {
            panic!("not a result");
        };
        let report = result.export.unwrap();
        assert_eq!(report.size, 9605);
        assert_eq!(
            report.range_constraints[0].to_string(),
            "s77 (batch): [2, inf]"
        );
        assert!(report.verification.matches);
    }

    #[test]
    fn results_and_fixes_parse() {
        let line = r#"{"event": "result", "id": 3, "status": "failed", "elapsed": 0.2,
            "output": "hi\n", "diagnostics": [{"code": "PT401", "file": "/p/m.py", "line": 9,
            "column": null, "end_line": null, "end_column": null, "message": "m",
            "origin": "draft_export", "fixes": [
                {"dim": "b", "kind": "range", "text": "b = Dim('b', min=6)", "min": 6},
                {"dim": "b", "kind": "derived", "text": "b = 2*_b", "expr": "2*_b", "root": "_b"}]}]}"#;
        let Event::Result(result) = serde_json::from_str(line).unwrap() else {
            panic!("not a result");
        };
        assert_eq!(result.status, Status::Failed);
        let finding = &result.diagnostics[0];
        assert_eq!((finding.line, finding.column), (9, None));
        assert_eq!(finding.fixes[0].kind, FixKind::Range);
        assert_eq!(finding.fixes[0].min, Some(6));
        assert_eq!(finding.fixes[1].root.as_deref(), Some("_b"));
    }
}
