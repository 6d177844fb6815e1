//! `pt2lsp.exportPt2`: exports a document's entrypoint to a `.pt2` file on the tracer's thread,
//! with a progress report per stage, and answers with what was written. A model that does not
//! export gets the trace's diagnostics published on the document and an error answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use ropey::Rope;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode};
use tower_lsp_server::ls_types::{self as lsp, MessageType, Uri};

use super::{PlannedTrace, Session};
use crate::workspace;
use pt2lsp_project::config::{self, Config, TraceMode};
use pt2lsp_project::interpreter as python;
use pt2lsp_tracer::batch;
use pt2lsp_tracer::export::{self as plan, Exportable};
use pt2lsp_tracer::protocol::{ExportJob, ExportReport, Status};
use pt2lsp_tracer::targets::DeploymentTarget;

/// What the client asked for: `[uri, entry?, output?, target?]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRequest {
    pub uri: Uri,
    pub entry: Option<String>,
    pub output: Option<PathBuf>,
    /// A deployment target whose artefact to write instead of the `.pt2` (`onnx`, `aoti`,
    /// `executorch`).
    pub target: Option<DeploymentTarget>,
}

impl ExportRequest {
    /// Reads the command's arguments; `null` or a missing argument means the default.
    pub fn from_arguments(arguments: &[Value]) -> Result<Self, Error> {
        let usage = || {
            Error::invalid_params(
                "pt2lsp.exportPt2 takes a document URI, then optionally an entrypoint name, an \
                 output path and a deployment target (onnx, aoti, executorch; null for the \
                 defaults)",
            )
        };
        let uri = arguments
            .first()
            .and_then(Value::as_str)
            .and_then(|uri| uri.parse::<Uri>().ok())
            .ok_or_else(usage)?;
        let text = |index: usize| match arguments.get(index) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(usage()),
        };
        let target = match text(3)? {
            None => None,
            Some(name) => match DeploymentTarget::parse(&name) {
                Ok(target) if target.artefact_extension().is_some() => Some(target),
                _ => return Err(usage()),
            },
        };
        Ok(Self {
            uri,
            entry: text(1)?,
            output: text(2)?.map(PathBuf::from),
            target,
        })
    }
}

/// The export, planned: the job as a trace would run it, and the output.
struct PlannedExport {
    trace: PlannedTrace,
    entry: String,
    output: PathBuf,
}

/// The server's error for a failed request that is not a protocol error (LSP's RequestFailed).
fn failed(message: String, data: Option<Value>) -> Error {
    Error {
        code: ErrorCode::ServerError(-32803),
        message: message.into(),
        data,
    }
}

impl Session {
    /// Runs `pt2lsp.exportPt2`. The answer is the report (path, size, nodes, inputs, range
    /// constraints, the check against eager); a model that does not export is an error whose
    /// `data` holds the diagnostics, which are also published on the document when it is open.
    pub async fn export_pt2(
        self: &Arc<Self>,
        request: ExportRequest,
        token: Option<lsp::ProgressToken>,
    ) -> Result<Value, Error> {
        let Some(path) = request.uri.to_file_path().map(std::borrow::Cow::into_owned) else {
            return Err(Error::invalid_params(format!(
                "pt2lsp.exportPt2 exports files; {} is not one",
                request.uri.as_str()
            )));
        };
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let open = self
            .documents
            .get(&request.uri)
            .map(|open| (open.document.rope().clone(), open.document.version()));
        let inputs = self.trace_inputs();
        let (entry, output, target) = (
            request.entry.clone(),
            request.output.clone(),
            request.target,
        );
        let planned = tokio::task::spawn_blocking(move || {
            inputs.plan_export(
                path,
                open.map(|(rope, _)| rope),
                entry.as_deref(),
                output,
                target,
            )
        })
        .await
        .map_err(|_| Error::internal_error())?
        .map_err(|message| failed(message, None))?;

        // The export's findings are the entrypoint's newest trace.
        let key = super::traces::EntryKey::of(&planned.trace);
        let trace_ticket = self.claim_trace(&key);
        let submitted = self.open_versions();
        let name = planned
            .trace
            .path
            .file_name()
            .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
        let label = format!("{name} ({})", planned.entry);
        let progress = self.begin_export_progress(token, ticket, &label).await;
        let temporary = plan::temporary_path(&planned.output);
        let (stages, mut stage) = tokio::sync::mpsc::unbounded_channel();
        let outcome = self.tracer.thread.submit_export(
            request.uri.clone(),
            (planned.trace.python.clone(), planned.trace.start_method),
            planned.trace.spec.clone(),
            ExportJob {
                output: planned.output.clone(),
                temporary: temporary.clone(),
                allow_divergence: false,
                target: request.target,
            },
            stages,
        );
        tokio::pin!(outcome);
        let outcome = loop {
            tokio::select! {
                outcome = &mut outcome => break outcome,
                Some(next) = stage.recv() => {
                    if let Some(progress) = &progress {
                        let message = match next.message {
                            Some(message) => format!("{}: {message}", next.stage),
                            None => next.stage,
                        };
                        progress.report(message).await;
                    }
                }
            }
        };
        // A job killed while saving leaves its temporary file behind.
        let _ = tokio::task::spawn_blocking(move || plan::remove_temporary(&temporary)).await;

        let (end, answer) = match outcome {
            Ok(Ok(result)) => {
                let inputs = self.trace_inputs();
                let (trace, traced) = (planned.trace.clone(), result.clone());
                if let Ok((files, _)) = tokio::task::spawn_blocking(move || {
                    inputs.traced_files(&trace, &traced, &submitted)
                })
                .await
                {
                    self.install_trace(key, trace_ticket, files).await;
                }
                if let (Status::Ok, Some(report)) = (&result.status, &result.export) {
                    let (kind, message) = exported_message(&label, report);
                    self.client.show_message(kind, message).await;
                    let end = if report.verification.matches {
                        "exported".to_owned()
                    } else {
                        "exported; the check against eager failed".to_owned()
                    };
                    let answer = Ok(json!({
                        "status": "exported",
                        "file": planned.trace.path,
                        "entry": planned.entry,
                        "report": report,
                    }));
                    (end, answer)
                } else {
                    let mut found =
                        pt2lsp_tracer::diagnostics::from_result(&result, &planned.trace.anchor);
                    pt2lsp_tracer::diagnostics::dedup(&mut found);
                    let root = planned.trace.spec.roots.first().cloned();
                    let place = |diagnostic: &pt2lsp_tracer::TraceDiagnostic| {
                        let file = pt2lsp_tracer::diagnostics::normalized(&diagnostic.file);
                        let shown = root
                            .as_deref()
                            .map(pt2lsp_tracer::diagnostics::normalized)
                            .and_then(|root| file.strip_prefix(root).ok().map(Path::to_path_buf))
                            .unwrap_or(file);
                        format!("{}:{}", shown.display(), diagnostic.line)
                    };
                    // Every problem with its file and line, as the progress message lists them.
                    let problems = if found.is_empty() {
                        result.detail.clone().unwrap_or_default()
                    } else {
                        found
                            .iter()
                            .map(|diagnostic| {
                                format!(
                                    "{}: {} {}",
                                    place(diagnostic),
                                    diagnostic.rule.code(),
                                    diagnostic.message
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("; ")
                    };
                    let data = json!({
                        "status": "failed",
                        "file": planned.trace.path,
                        "entry": planned.entry,
                        "diagnostics": found.iter().map(|diagnostic| json!({
                            "file": diagnostic.file,
                            "line": diagnostic.line,
                            "place": place(diagnostic),
                            "code": diagnostic.rule.code(),
                            "message": diagnostic.message,
                        })).collect::<Vec<_>>(),
                    });
                    let count = found.len();
                    let end = format!("failed: {count} error{}", if count == 1 { "" } else { "s" });
                    let message = format!("{label} does not export: {problems}");
                    (end, Err(failed(message, Some(data))))
                }
            }
            Ok(Err(reason)) => {
                self.tracing_unavailable(&reason).await;
                let message = format!("{label} was not exported: {reason}");
                (format!("failed: {reason}"), Err(failed(message, None)))
            }
            Err(_) => {
                let reason = "the tracer stopped".to_owned();
                self.tracing_unavailable(&reason).await;
                let message = format!("{label} was not exported: {reason}");
                (format!("failed: {reason}"), Err(failed(message, None)))
            }
        };
        if let Some(progress) = progress {
            progress.finish_with_message(end).await;
        }
        answer
    }

    async fn begin_export_progress(
        &self,
        token: Option<lsp::ProgressToken>,
        ticket: u64,
        label: &str,
    ) -> Option<
        tower_lsp_server::OngoingProgress<
            tower_lsp_server::Unbounded,
            tower_lsp_server::NotCancellable,
        >,
    > {
        // A token that came with the request needs no creating.
        let token = if let Some(token) = token {
            token
        } else {
            if !self.flags().work_done_progress {
                return None;
            }
            let token = lsp::NumberOrString::String(format!("pt2lsp/export/{ticket}"));
            self.client
                .create_work_done_progress(token.clone())
                .await
                .ok()?;
            token
        };
        Some(
            self.client
                .progress(token, format!("Exporting {label}"))
                .begin()
                .await,
        )
    }
}

/// The message shown once the file is written: where it is and what is in it, or why the
/// program loaded back from it disagrees with eager.
fn exported_message(label: &str, report: &ExportReport) -> (MessageType, String) {
    let size = report.size;
    let what = format!(
        "pt2lsp: exported {label} to {} ({size} bytes, {} graph nodes",
        report.path.display(),
        report.nodes
    );
    let ranges = report
        .range_constraints
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let what = if ranges.is_empty() {
        format!("{what})")
    } else {
        format!("{what}; {ranges})")
    };
    if report.verification.matches {
        (MessageType::INFO, what)
    } else {
        let detail = report.verification.detail.as_deref().unwrap_or("no detail");
        (
            MessageType::WARNING,
            format!("{what}, but the program loaded back from it disagrees with eager: {detail}"),
        )
    }
}

impl super::traces::TraceInputs {
    /// The job, the entrypoint's name and the output, or why there is none. Blocking: reads
    /// settings and, for a document that is not open, the file.
    fn plan_export(
        &self,
        path: PathBuf,
        rope: Option<Rope>,
        entry: Option<&str>,
        output: Option<PathBuf>,
        target: Option<DeploymentTarget>,
    ) -> Result<PlannedExport, String> {
        let shown = path.display().to_string();
        let text = match rope {
            Some(rope) => rope.to_string(),
            None => std::fs::read_to_string(&path)
                .map_err(|error| format!("cannot read {shown}: {error}"))?,
        };
        if !workspace::is_python(&path) {
            return Err(format!("{shown} is not a Python file"));
        }
        let settings = self.resolve_settings(Some(&path));
        if settings.trace == TraceMode::Off {
            return Err(
                "exporting runs the model's code, and the tracer is off (`trace = \"off\"`, or \
                 an untrusted workspace): turn it on to export"
                    .to_owned(),
            );
        }
        let project_dir = settings.project_dir();
        // Entrypoints and `out_dir` are the project's, read by the one configuration reader.
        let project = match &project_dir {
            Some(dir) => config::in_directory(dir)
                .map_err(|error| format!("{error:#}"))?
                .unwrap_or_default(),
            None => Config::default(),
        };
        let root = project_dir
            .clone()
            .or_else(|| self.roots().into_iter().find(|root| path.starts_with(root)))
            .or_else(|| path.parent().map(Path::to_path_buf))
            .ok_or_else(|| format!("{shown} has no directory"))?;
        let options = batch::BatchOptions {
            root: root.clone(),
            cwd: root.clone(),
            strict: settings.analyzer.strict,
            timeout: std::time::Duration::try_from_secs_f64(settings.timeout_seconds).unwrap_or(
                std::time::Duration::from_secs_f64(pt2lsp_tracer::DEFAULT_TIMEOUT_SECONDS),
            ),
            memory_limit_mb: settings
                .memory_limit_mb
                .or_else(pt2lsp_tracer::default_memory_limit_mb),
            entrypoints: plan::configured(&project),
            scripts: batch::ScriptArgs::configured(
                project.entrypoints.as_deref().unwrap_or_default(),
            ),
            targets: Vec::new(),
        };
        let available = plan::entrypoints(&path, &text, &options);
        let chosen: Exportable = plan::choose(available, entry)
            .map_err(|error| error.describe(&path, "the command's entrypoint argument"))?;
        let output = match (
            output,
            target.and_then(DeploymentTarget::artefact_extension),
        ) {
            (Some(given), _) => plan::resolve_output(&given, &root, &path, &chosen),
            // A target's artefact is named after the .pt2 it replaces.
            (None, Some(extension)) => {
                plan::default_output(&path, &chosen, plan::out_dir(&project).as_deref())
                    .with_extension(extension)
            }
            (None, None) => {
                plan::default_output(&path, &chosen, plan::out_dir(&project).as_deref())
            }
        };
        if let Some(dir) = output.parent() {
            std::fs::create_dir_all(dir).map_err(|error| {
                format!(
                    "cannot create the output directory {}: {error}",
                    dir.display()
                )
            })?;
        }
        let python = python::interpreter(
            None,
            settings.python.as_deref(),
            project_dir.as_deref(),
            std::env::var_os("VIRTUAL_ENV").as_deref().map(Path::new),
        );
        Ok(PlannedExport {
            entry: chosen.name.clone(),
            output,
            trace: PlannedTrace {
                spec: chosen.job.spec,
                anchor: chosen.job.anchor,
                python,
                path,
                // An export writes a file: it always runs.
                cache: None,
                start_method: settings
                    .start_method
                    .unwrap_or_else(pt2lsp_tracer::worker::StartMethod::from_environment),
                priority: pt2lsp_tracer::manager::Priority::Foreground,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_a_uri_then_optional_entry_and_output() {
        let request = ExportRequest::from_arguments(&[
            json!("file:///p/m.py"),
            Value::Null,
            json!("/p/out/m.pt2"),
        ])
        .unwrap();
        assert_eq!(request.uri.as_str(), "file:///p/m.py");
        assert_eq!(request.entry, None);
        assert_eq!(request.output, Some(PathBuf::from("/p/out/m.pt2")));
        let request =
            ExportRequest::from_arguments(&[json!("file:///p/m.py"), json!("encoder")]).unwrap();
        assert_eq!(request.entry.as_deref(), Some("encoder"));
        assert_eq!(request.output, None);
        assert!(ExportRequest::from_arguments(&[]).is_err());
        assert!(ExportRequest::from_arguments(&[json!("file:///p/m.py"), json!(3)]).is_err());
        let request = ExportRequest::from_arguments(&[
            json!("file:///p/m.py"),
            Value::Null,
            Value::Null,
            json!("executorch"),
        ])
        .unwrap();
        assert_eq!(request.target, Some(DeploymentTarget::ExecuTorch));
        // A target that writes no artefact of its own, or none known, is refused.
        for refused in ["pt2", "core-aten", "tflite"] {
            let arguments = [
                json!("file:///p/m.py"),
                Value::Null,
                Value::Null,
                json!(refused),
            ];
            assert!(
                ExportRequest::from_arguments(&arguments).is_err(),
                "{refused}"
            );
        }
    }
}
