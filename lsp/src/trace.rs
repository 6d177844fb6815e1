//! The language server's side of the tracer: one dedicated std thread owns the [`Tracer`]
//! (started lazily, the first time a document with an entrypoint is traced, so `Tracer::start`
//! blocks that thread while torch imports, never the tokio reactor) and runs one job per traced
//! document at a time. Async callers hand it a job with a oneshot channel for the result.
//!
//! Exports (`pt2lsp.exportPt2`) run on the same worker, with a sink for their stages; a trace
//! of the document neither cancels an export nor is cancelled by one.
//!
//! A new trace of an entrypoint (keyed by a URI: its file's, with a configured entrypoint's
//! name as the fragment) cancels the one still running for it. When the configured
//! interpreter changes, the old worker is shut down and a new one started. A worker that cannot
//! be started (no interpreter, no torch in it) answers the job with the reason; it is tried
//! again at the next trace, since the user may have installed torch meanwhile.
//!
//! A trace submitted with a [`TraceCache`] is answered from it when none of the files its last
//! result followed from has changed (no worker is started for it), unless it asks for a fresh
//! run (`pt2lsp.retrace`); a result that ran is kept there: the CLI's `check --trace` and the
//! editor replay each other's traces.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use tokio::sync::oneshot;
use tower_lsp_server::ls_types::Uri;

use pt2lsp_tracer::cache::TraceCache;
use pt2lsp_tracer::manager::{Priority, Progress};
use pt2lsp_tracer::protocol::{ExportJob, JobResult};
use pt2lsp_tracer::worker::StartMethod;
use pt2lsp_tracer::{Completed, JobId, JobSpec, Tracer, TracerOptions};

/// How often the thread looks for finished jobs while some are running.
const POLL: Duration = Duration::from_millis(20);

/// What a traced job comes back as: its result, or why no worker could run it.
pub type Outcome = Result<JobResult, String>;

enum Message {
    Submit {
        uri: Uri,
        python: PathBuf,
        start_method: StartMethod,
        spec: Box<JobSpec>,
        /// For an export: where the file goes, and where its stages go.
        export: Option<(ExportJob, tokio::sync::mpsc::UnboundedSender<Progress>)>,
        /// A trace's cache (exports are never cached).
        cache: Option<Caching>,
        priority: Priority,
        reply: oneshot::Sender<Outcome>,
    },
}

/// How a trace uses the trace cache.
#[derive(Debug, Clone)]
pub struct Caching {
    pub cache: TraceCache,
    /// Answer from the cache when it holds a result whose files are unchanged; `false` runs
    /// the trace whatever the cache holds (the user asked to trace again), and keeps its result.
    pub replay: bool,
}

/// The handle the session keeps; the thread starts with the first job.
#[derive(Debug, Default)]
pub struct TraceThread {
    sender: Mutex<Option<Sender<Message>>>,
}

impl TraceThread {
    /// Queues a trace of `uri` (ahead of background ones when `priority` says so); a job still
    /// running for `uri` is cancelled first. With a `cache`, an unchanged project's result is
    /// replayed from it and a new one kept there.
    pub fn submit(
        &self,
        uri: Uri,
        (python, start_method): (PathBuf, StartMethod),
        spec: JobSpec,
        cache: Option<Caching>,
        priority: Priority,
    ) -> oneshot::Receiver<Outcome> {
        let (reply, outcome) = oneshot::channel();
        self.send(Message::Submit {
            uri,
            python,
            start_method,
            spec: Box::new(spec),
            export: None,
            cache,
            priority,
            reply,
        });
        outcome
    }

    /// Queues an export of `uri`'s entrypoint; its stages arrive on `progress` while it runs.
    pub fn submit_export(
        &self,
        uri: Uri,
        (python, start_method): (PathBuf, StartMethod),
        spec: JobSpec,
        export: ExportJob,
        progress: tokio::sync::mpsc::UnboundedSender<Progress>,
    ) -> oneshot::Receiver<Outcome> {
        let (reply, outcome) = oneshot::channel();
        self.send(Message::Submit {
            uri,
            python,
            start_method,
            spec: Box::new(spec),
            export: Some((export, progress)),
            cache: None,
            priority: Priority::Foreground,
            reply,
        });
        outcome
    }

    fn send(&self, message: Message) {
        let Ok(mut guard) = self.sender.lock() else {
            return;
        };
        if guard.is_none() {
            let (sender, receiver) = mpsc::channel();
            let spawned = std::thread::Builder::new()
                .name("pt2lsp-trace".to_owned())
                .spawn(move || run(&receiver));
            if let Err(error) = spawned {
                let Message::Submit { reply, .. } = message;
                let _ = reply.send(Err(format!("cannot start the tracer thread: {error}")));
                return;
            }
            *guard = Some(sender);
        }
        if let Some(sender) = guard.as_ref() {
            let _ = sender.send(message);
        }
    }
}

struct Running {
    tracer: Tracer,
    completed: Receiver<Completed>,
    python: PathBuf,
    start_method: StartMethod,
}

struct Job {
    uri: Uri,
    reply: oneshot::Sender<Outcome>,
    /// An export, which a new trace of the document leaves running.
    export: bool,
    /// Where a trace's result is kept, with what it was asked and when.
    cache: Option<(TraceCache, PathBuf, Box<JobSpec>, std::time::SystemTime)>,
}

/// The thread: ends when the session drops its sender.
fn run(receiver: &Receiver<Message>) {
    let mut running: Option<Running> = None;
    let mut jobs: HashMap<JobId, Job> = HashMap::new();
    loop {
        let message = if jobs.is_empty() {
            match receiver.recv() {
                Ok(message) => Some(message),
                Err(_) => return,
            }
        } else {
            match receiver.recv_timeout(POLL) {
                Ok(message) => Some(message),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
        match message {
            Some(Message::Submit {
                uri,
                python,
                start_method,
                spec,
                export,
                cache,
                priority,
                reply,
            }) => {
                if let (Some(running), None) = (&running, &export) {
                    cancel_traces(running, &jobs, &uri);
                }
                if let Some(result) = cache
                    .as_ref()
                    .filter(|caching| caching.replay)
                    .and_then(|caching| caching.cache.lookup(&python, &spec))
                {
                    let _ = reply.send(Ok(result));
                    continue;
                }
                let cache = cache.map(|caching| {
                    (
                        caching.cache,
                        python.clone(),
                        spec.clone(),
                        std::time::SystemTime::now(),
                    )
                });
                if running
                    .as_ref()
                    .is_some_and(|r| r.python != python || r.start_method != start_method)
                {
                    // A new interpreter or start method: the old worker's jobs end with it.
                    running = None;
                    for (_, job) in jobs.drain() {
                        let _ = job
                            .reply
                            .send(Err("the Python interpreter changed".to_owned()));
                    }
                }
                if running.is_none() {
                    let options = TracerOptions {
                        python: python.clone(),
                        jobs: std::thread::available_parallelism().map_or(2, usize::from),
                        startup_timeout: pt2lsp_tracer::DEFAULT_STARTUP_TIMEOUT,
                        start_method,
                    };
                    match Tracer::start(options) {
                        Ok((tracer, completed)) => {
                            running = Some(Running {
                                tracer,
                                completed,
                                python,
                                start_method,
                            });
                        }
                        Err(error) => {
                            let _ = reply.send(Err(error.message));
                            continue;
                        }
                    }
                }
                if let Some(running) = &running {
                    let is_export = export.is_some();
                    let id = match export {
                        Some((export, progress)) => running.tracer.submit_export(
                            *spec,
                            export,
                            Box::new(move |stage| {
                                let _ = progress.send(stage);
                            }),
                        ),
                        None => running.tracer.submit_with_priority(*spec, priority),
                    };
                    jobs.insert(
                        id,
                        Job {
                            uri,
                            reply,
                            export: is_export,
                            cache,
                        },
                    );
                }
            }
            None => {}
        }
        let mut stopped = false;
        if let Some(current) = &running {
            loop {
                match current.completed.try_recv() {
                    Ok(done) => {
                        if let Some(job) = jobs.remove(&done.id) {
                            if let Some((cache, python, spec, submitted)) = &job.cache {
                                if let Err(error) =
                                    cache.store(python, spec, &done.result, *submitted)
                                {
                                    crate::log_stderr(&format!(
                                        "cannot write the trace cache in {}: {error}",
                                        cache.dir().display()
                                    ));
                                }
                            }
                            let _ = job.reply.send(Ok(done.result));
                        }
                    }
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => {
                        stopped = true;
                        break;
                    }
                }
            }
        }
        if stopped {
            running = None;
            for (_, job) in jobs.drain() {
                let _ = job.reply.send(Err("the tracer stopped".to_owned()));
            }
        }
    }
}

/// Cancels the traces (not the exports) running for `uri`.
fn cancel_traces(running: &Running, jobs: &HashMap<JobId, Job>, uri: &Uri) {
    for (id, job) in jobs {
        if job.uri == *uri && !job.export {
            running.tracer.cancel(*id);
        }
    }
}
