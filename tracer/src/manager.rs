//! The manager: one thread that owns the worker and schedules jobs on it.
//!
//! Callers talk to it through a [`Tracer`] handle (submit, cancel) and receive [`Completed`]
//! jobs on a channel, so the CLI can wait for a batch while the language server later drives
//! the same handle from its own thread. The thread keeps at most `jobs` children running in the
//! worker, enforces a backstop deadline on top of the worker's own timeout, and restarts the
//! worker when it dies: jobs that were running then are retried once, alone, so a job that
//! kills its worker is reported (PT502) instead of taking innocent jobs down with it.
//!
//! The worker is spawned on this thread, which lives as long as the handle: on Linux the
//! worker asks to be signalled when the thread that spawned it exits.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::protocol::{Event, ExportJob, JobResult, JobSpec, Request, Status};
use super::worker::{StartError, StartMethod, Worker, WorkerInfo, WorkerMessage};

/// Extra time past a job's own timeout before the manager stops trusting the worker to enforce
/// it and kills the worker itself.
const BACKSTOP_GRACE: Duration = Duration::from_secs(10);

/// How often a busy worker is checked for life, besides the end of its socket.
const LIVENESS_POLL: Duration = Duration::from_millis(500);

/// How long a worker may take to import torch and warm up; a cold import takes 3-5 s.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone)]
pub struct TracerOptions {
    pub python: PathBuf,
    /// Jobs running at once (children of the one worker).
    pub jobs: usize,
    pub startup_timeout: Duration,
    /// Forked or spawned job processes (`StartMethod::from_environment` unless configured).
    pub start_method: StartMethod,
}

/// Identifies a submitted job in [`Completed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

/// A finished job.
#[derive(Debug, Clone)]
pub struct Completed {
    pub id: JobId,
    pub result: JobResult,
}

/// A stage of a running export job, as the worker reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// `exporting`, `saving` or `verifying`.
    pub stage: String,
    pub message: Option<String>,
}

/// Called on the manager thread for each stage of an export job: keep it short (send on a
/// channel, write a line).
pub type ProgressSink = Box<dyn FnMut(Progress) + Send>;

/// A job as submitted: a trace, or an export with where its progress goes.
struct Submission {
    spec: JobSpec,
    export: Option<ExportJob>,
    progress: Option<ProgressSink>,
    priority: Priority,
}

/// Where a submitted job joins the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Priority {
    /// Behind every queued job.
    #[default]
    Background,
    /// Ahead of the background jobs, behind the foreground ones queued before it: in the
    /// editor, the entrypoints of open documents, whose results the user is waiting for.
    Foreground,
}

enum Command {
    Submit(JobId, Box<Submission>),
    Cancel(JobId),
    Shutdown,
}

enum Message {
    Command(Command),
    Worker(u64, WorkerMessage),
}

/// A handle on the manager thread. Dropping it shuts the worker down (its jobs are killed and
/// its temporary directory removed) and joins the thread.
#[derive(Debug)]
pub struct Tracer {
    sender: Sender<Message>,
    thread: Option<JoinHandle<()>>,
    next_id: std::sync::atomic::AtomicU64,
    info: WorkerInfo,
}

impl Tracer {
    /// Starts the manager thread and its first worker; fails (with a message for the user)
    /// when the interpreter cannot run the worker or has no torch.
    pub fn start(options: TracerOptions) -> Result<(Tracer, Receiver<Completed>), StartError> {
        let (sender, receiver) = mpsc::channel::<Message>();
        let (completed_sender, completed) = mpsc::channel();
        let (ready_sender, ready) = mpsc::channel();
        let worker_events = forward_worker_events(sender.clone());
        let thread = thread::Builder::new()
            .name("pt2lsp-tracer".to_owned())
            .spawn(move || {
                let mut scheduler = Scheduler::new(options, worker_events, completed_sender);
                match scheduler.start_worker() {
                    Ok(info) => {
                        let _ = ready_sender.send(Ok(info));
                        scheduler.run(&receiver);
                    }
                    Err(error) => {
                        let _ = ready_sender.send(Err(error));
                    }
                }
            })
            .map_err(|error| StartError {
                message: format!("cannot start the tracer thread: {error}"),
            })?;
        match ready.recv() {
            Ok(Ok(info)) => Ok((
                Tracer {
                    sender,
                    thread: Some(thread),
                    next_id: std::sync::atomic::AtomicU64::new(1),
                    info,
                },
                completed,
            )),
            Ok(Err(error)) => {
                let _ = thread.join();
                Err(error)
            }
            Err(_) => {
                let _ = thread.join();
                Err(StartError {
                    message: "the tracer thread ended during start-up".to_owned(),
                })
            }
        }
    }

    /// The interpreter and torch of the first worker.
    pub fn info(&self) -> &WorkerInfo {
        &self.info
    }

    pub fn submit(&self, job: JobSpec) -> JobId {
        self.submit_with_priority(job, Priority::Background)
    }

    /// Submits a trace that runs before the queued jobs of a lower `priority`.
    pub fn submit_with_priority(&self, job: JobSpec, priority: Priority) -> JobId {
        self.send_submission(Submission {
            spec: job,
            export: None,
            progress: None,
            priority,
        })
    }

    /// Submits an export job: the entrypoint of `job` is exported and written to
    /// `export.output`; `progress` hears of each stage while it runs.
    pub fn submit_export(&self, job: JobSpec, export: ExportJob, progress: ProgressSink) -> JobId {
        // The user asked for this file and watches its progress.
        self.send_submission(Submission {
            spec: job,
            export: Some(export),
            progress: Some(progress),
            priority: Priority::Foreground,
        })
    }

    fn send_submission(&self, submission: Submission) -> JobId {
        let id = JobId(
            self.next_id
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let _ = self
            .sender
            .send(Message::Command(Command::Submit(id, Box::new(submission))));
        id
    }

    /// Cancels a job: a queued one is dropped, a running one killed; either way it completes
    /// with [`Status::Cancelled`].
    pub fn cancel(&self, id: JobId) {
        let _ = self.sender.send(Message::Command(Command::Cancel(id)));
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = self.sender.send(Message::Command(Command::Shutdown));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Worker reader threads send `(generation, message)`; this adapts them to the manager's
/// channel.
fn forward_worker_events(sender: Sender<Message>) -> Sender<(u64, WorkerMessage)> {
    let (events, incoming) = mpsc::channel::<(u64, WorkerMessage)>();
    thread::spawn(move || {
        for (generation, message) in incoming {
            if sender.send(Message::Worker(generation, message)).is_err() {
                return;
            }
        }
    });
    events
}

struct Queued {
    id: JobId,
    spec: JobSpec,
    export: Option<ExportJob>,
    priority: Priority,
    /// Times a worker died while this job was running.
    crashes: u32,
}

struct Running {
    job: Queued,
    backstop: Instant,
}

struct Scheduler {
    options: TracerOptions,
    worker_events: Sender<(u64, WorkerMessage)>,
    completed: Sender<Completed>,
    worker: Option<Worker>,
    generation: u64,
    /// Set when a restart failed: later jobs complete at once with this reason.
    broken: Option<String>,
    queue: VecDeque<Queued>,
    running: HashMap<JobId, Running>,
    /// Where the stages of export jobs go, until they complete.
    progress: HashMap<JobId, ProgressSink>,
}

impl Scheduler {
    fn new(
        options: TracerOptions,
        worker_events: Sender<(u64, WorkerMessage)>,
        completed: Sender<Completed>,
    ) -> Self {
        Self {
            options,
            worker_events,
            completed,
            worker: None,
            generation: 0,
            broken: None,
            queue: VecDeque::new(),
            running: HashMap::new(),
            progress: HashMap::new(),
        }
    }

    fn start_worker(&mut self) -> Result<WorkerInfo, StartError> {
        self.generation += 1;
        let worker = Worker::spawn(
            &self.options.python,
            self.generation,
            self.worker_events.clone(),
            self.options.startup_timeout,
            (self.options.start_method, self.options.jobs),
        )?;
        let info = worker.info.clone();
        self.worker = Some(worker);
        Ok(info)
    }

    fn run(&mut self, receiver: &Receiver<Message>) {
        loop {
            self.dispatch();
            // While jobs run, the worker is looked at every `LIVENESS_POLL`, so a death its
            // socket does not report (a descendant holding the socket) still ends them.
            let poll = (!self.running.is_empty()).then(|| Instant::now() + LIVENESS_POLL);
            let wake = match (self.next_backstop(), poll) {
                (Some(backstop), Some(poll)) => Some(backstop.min(poll)),
                (backstop, poll) => backstop.or(poll),
            };
            let message = match wake {
                Some(deadline) => {
                    match receiver.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    {
                        Ok(message) => message,
                        Err(RecvTimeoutError::Timeout) => {
                            if self.worker.as_mut().is_some_and(Worker::has_exited) {
                                self.replace_dead_worker();
                            }
                            self.enforce_backstops();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                None => match receiver.recv() {
                    Ok(message) => message,
                    Err(_) => return,
                },
            };
            match message {
                Message::Command(Command::Submit(id, submission)) => {
                    let Submission {
                        spec,
                        export,
                        progress,
                        priority,
                    } = *submission;
                    if let Some(progress) = progress {
                        self.progress.insert(id, progress);
                    }
                    self.enqueue(Queued {
                        id,
                        spec,
                        export,
                        priority,
                        crashes: 0,
                    });
                }
                Message::Command(Command::Cancel(id)) => self.cancel(id),
                Message::Command(Command::Shutdown) => break,
                Message::Worker(generation, _) if generation != self.generation => {}
                Message::Worker(_, WorkerMessage::Event(event)) => self.on_event(event),
                Message::Worker(_, WorkerMessage::Closed) => self.on_worker_lost(),
            }
        }
        // Dropping the worker shuts it down and removes its directory.
        self.worker = None;
    }

    /// Queues `job` behind every job of its priority or a higher one.
    fn enqueue(&mut self, job: Queued) {
        let position = match job.priority {
            Priority::Background => self.queue.len(),
            Priority::Foreground => self
                .queue
                .iter()
                .position(|queued| queued.priority == Priority::Background)
                .unwrap_or(self.queue.len()),
        };
        self.queue.insert(position, job);
    }

    /// Starts queued jobs while there is room. A job that was running when a worker died runs
    /// alone, so that if it kills this worker too, no other job is lost with it.
    fn dispatch(&mut self) {
        while let Some(front) = self.queue.front() {
            let alone = front.crashes > 0;
            let busy = self.running.len();
            if busy >= self.options.jobs.max(1)
                || (alone && busy > 0)
                || self.running.values().any(|running| running.job.crashes > 0)
            {
                return;
            }
            // A worker that died since its last message (any signal, idle or not) is
            // replaced here rather than fed a job its socket may still accept.
            if self.worker.as_mut().is_some_and(Worker::has_exited) {
                self.replace_dead_worker();
                continue;
            }
            let job = self.queue.pop_front().expect("the queue has a front");
            if let Some(reason) = &self.broken {
                let reason = reason.clone();
                self.complete(job.id, Status::Unavailable, Some(reason));
                continue;
            }
            if self.worker.is_none() {
                if let Err(error) = self.start_worker() {
                    self.broken = Some(error.message.clone());
                    self.complete(job.id, Status::Unavailable, Some(error.message));
                    continue;
                }
            }
            let worker = self.worker.as_mut().expect("a worker was just started");
            let sent = worker.send(&Request::Job {
                id: job.id.0,
                job: &job.spec,
                export: job.export.as_ref(),
            });
            // Until the worker says the job started, it may wait for a process to run it (spawn
            // mode warms one up): as long as a worker's start may take. Then the job's own time.
            let backstop = Instant::now()
                + self.options.startup_timeout
                + Duration::from_secs_f64(job.spec.timeout.max(0.0))
                + BACKSTOP_GRACE;
            let id = job.id;
            self.running.insert(id, Running { job, backstop });
            if sent.is_err() {
                // The worker is gone; its reader thread reports `Closed`, which requeues.
                return;
            }
        }
    }

    fn cancel(&mut self, id: JobId) {
        if let Some(position) = self.queue.iter().position(|job| job.id == id) {
            self.queue.remove(position);
            self.complete(id, Status::Cancelled, None);
        } else if self.running.contains_key(&id) {
            if let Some(worker) = self.worker.as_mut() {
                let _ = worker.send(&Request::Cancel { id: id.0 });
            }
        }
    }

    fn on_event(&mut self, event: Event) {
        match event {
            Event::Started { id, .. } => {
                if let Some(running) = self.running.get_mut(&JobId(id)) {
                    running.backstop = Instant::now()
                        + Duration::from_secs_f64(running.job.spec.timeout.max(0.0))
                        + BACKSTOP_GRACE;
                }
            }
            Event::Progress { id, stage, message } => {
                if let Some(progress) = self.progress.get_mut(&JobId(id)) {
                    progress(Progress { stage, message });
                }
            }
            Event::Result(result) => {
                let id = JobId(result.id);
                if self.running.remove(&id).is_some() {
                    self.progress.remove(&id);
                    let _ = self.completed.send(Completed { id, result });
                }
            }
            Event::Error { message } => {
                // A protocol error is the manager's bug, not the user's: keep it for the log.
                eprintln!("pt2lsp tracer: {message}");
            }
        }
    }

    /// The worker was found dead before its reader thread said so: the reader's `Closed`
    /// belongs to an old generation from here on, and the death is handled now.
    fn replace_dead_worker(&mut self) {
        self.generation += 1;
        self.on_worker_lost();
    }

    /// The worker died (killed, crashed, or killed by a job): start over with a new one. Its
    /// directory goes with it; running jobs are retried once.
    fn on_worker_lost(&mut self) {
        let detail = match self.worker.take() {
            Some(mut worker) => {
                let tail = worker.output_tail();
                worker.kill();
                tail
            }
            None => String::new(),
        };
        let lost: Vec<Running> = self.running.drain().map(|(_, running)| running).collect();
        let mut retry = Vec::new();
        for mut running in lost {
            running.job.crashes += 1;
            if running.job.crashes >= 2 {
                let mut message =
                    "the tracer's worker process died while tracing this file".to_owned();
                if let Some(line) = detail.lines().rev().find(|line| !line.trim().is_empty()) {
                    message = format!("{message} ({})", line.trim());
                }
                self.complete(running.job.id, Status::Crashed, Some(message));
            } else {
                retry.push(running.job);
            }
        }
        retry.sort_by_key(|job| job.id);
        for job in retry.into_iter().rev() {
            self.queue.push_front(job);
        }
    }

    fn next_backstop(&self) -> Option<Instant> {
        self.running.values().map(|running| running.backstop).min()
    }

    /// A job outlived its timeout by the grace period: the worker did not kill it, so kill the
    /// worker. The late job timed out; the others running with it are requeued as they were.
    fn enforce_backstops(&mut self) {
        let now = Instant::now();
        if !self.running.values().any(|running| running.backstop <= now) {
            return;
        }
        if let Some(mut worker) = self.worker.take() {
            worker.kill();
        }
        // The dead worker's `Closed` belongs to an old generation from here on.
        self.generation += 1;
        let lost: Vec<Running> = self.running.drain().map(|(_, running)| running).collect();
        let mut requeue = Vec::new();
        for running in lost {
            if running.backstop <= now {
                let seconds = running.job.spec.timeout;
                self.complete(
                    running.job.id,
                    Status::Timeout,
                    Some(format!("the trace did not finish within {seconds} s")),
                );
            } else {
                requeue.push(running.job);
            }
        }
        requeue.sort_by_key(|job| job.id);
        for job in requeue.into_iter().rev() {
            self.queue.push_front(job);
        }
    }

    fn complete(&mut self, id: JobId, status: Status, detail: Option<String>) {
        self.progress.remove(&id);
        let _ = self.completed.send(Completed {
            id,
            result: JobResult {
                id: id.0,
                status,
                diagnostics: Vec::new(),
                detail,
                output: String::new(),
                output_truncated: false,
                elapsed: None,
                export: None,
                shapes: Vec::new(),
                dependencies: Vec::new(),
                passed_lines: Vec::new(),
                targets: None,
                replayed: false,
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;

    /// A Python with torch: `PT2LSP_PYTHON`, else the repository's `.venv`. Missing, the test
    /// fails when `CI` is set and is skipped otherwise.
    fn torch_python() -> Option<PathBuf> {
        let candidate = std::env::var_os("PT2LSP_PYTHON").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python"),
            PathBuf::from,
        );
        let works = Command::new(&candidate)
            .args(["-c", "import torch"])
            .output()
            .is_ok_and(|output| output.status.success());
        if works {
            return Some(candidate);
        }
        let message = format!("{} cannot import torch", candidate.display());
        assert!(std::env::var_os("CI").is_none(), "{message}");
        eprintln!("skipping: {message}");
        None
    }

    /// A tracer on `python` running `jobs` at once, in the environment's start method.
    fn start(python: PathBuf, jobs: usize) -> (Tracer, Receiver<Completed>) {
        Tracer::start(TracerOptions {
            python,
            jobs,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            start_method: StartMethod::from_environment(),
        })
        .unwrap()
    }

    fn job(dir: &Path, name: &str, forward: &str) -> JobSpec {
        let file = dir.join(name);
        std::fs::write(
            &file,
            format!(
                "import time\nimport torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n{forward}\n\n\nmodel = M()\nexample_args = (torch.randn(2),)\n"
            ),
        )
        .unwrap();
        JobSpec {
            targets: Vec::new(),
            file,
            roots: vec![dir.to_path_buf()],
            cwd: dir.to_path_buf(),
            entrypoint: None,
            call: None,
            strict: false,
            timeout: 120.0,
            memory_limit_mb: None,
        }
    }

    #[test]
    fn foreground_jobs_run_before_queued_background_ones() {
        let Some(python) = torch_python() else { return };
        let dir = tempfile::tempdir().unwrap();
        let (tracer, done) = start(python, 1);
        let busy = tracer.submit(job(
            dir.path(),
            "busy.py",
            "        time.sleep(1)\n        return x",
        ));
        let background: Vec<JobId> = (0..3)
            .map(|index| {
                tracer.submit(job(dir.path(), &format!("b{index}.py"), "        return x"))
            })
            .collect();
        let first = tracer.submit_with_priority(
            job(dir.path(), "open.py", "        return x"),
            Priority::Foreground,
        );
        let second = tracer.submit_with_priority(
            job(dir.path(), "open2.py", "        return x"),
            Priority::Foreground,
        );
        let order: Vec<JobId> = (0..6)
            .map(|_| {
                let completed = done.recv_timeout(Duration::from_secs(120)).unwrap();
                assert_eq!(completed.result.status, Status::Ok, "{completed:?}");
                completed.id
            })
            .collect();
        let mut expected = vec![busy, first, second];
        expected.extend(background);
        assert_eq!(order, expected);
    }

    #[test]
    fn cancelled_jobs_end_and_a_killed_worker_is_replaced() {
        let Some(python) = torch_python() else { return };
        let dir = tempfile::tempdir().unwrap();
        let (tracer, done) = start(python, 2);
        let wait = || done.recv_timeout(Duration::from_secs(120)).unwrap();

        let hang = tracer.submit(job(
            dir.path(),
            "hang.py",
            "        while True:\n            time.sleep(0.1)",
        ));
        let queued = tracer.submit(job(dir.path(), "queued.py", "        return x"));
        tracer.cancel(queued);
        std::thread::sleep(Duration::from_secs(2));
        tracer.cancel(hang);
        let mut cancelled = [wait(), wait()];
        cancelled.sort_by_key(|completed| completed.id);
        assert_eq!(
            cancelled
                .iter()
                .map(|c| (c.id, c.result.status))
                .collect::<Vec<_>>(),
            [(hang, Status::Cancelled), (queued, Status::Cancelled)]
        );

        // SIGKILL the worker while it runs a job: the job runs again on a new worker.
        let slow = tracer.submit(job(
            dir.path(),
            "slow.py",
            "        time.sleep(3)\n        return x * 2",
        ));
        std::thread::sleep(Duration::from_secs(1));
        let killed = Command::new("kill")
            .args(["-9", &tracer.info().pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let completed = wait();
        assert_eq!((completed.id, completed.result.status), (slow, Status::Ok));
        let after = tracer.submit(job(dir.path(), "after.py", "        return x + 1"));
        let completed = wait();
        assert_eq!((completed.id, completed.result.status), (after, Status::Ok));
    }

    /// The result of tracing `file` (in the project `dir`) with a tracer of its own, real
    /// models' time allowed.
    fn trace_alone(python: PathBuf, dir: &Path, file: &Path) -> JobResult {
        let (tracer, done) = start(python, 1);
        tracer.submit(JobSpec {
            targets: Vec::new(),
            file: file.to_path_buf(),
            roots: vec![dir.to_path_buf()],
            cwd: dir.to_path_buf(),
            entrypoint: None,
            call: None,
            strict: false,
            timeout: 600.0,
            memory_limit_mb: None,
        });
        done.recv_timeout(Duration::from_secs(900)).unwrap().result
    }

    /// A detection model from site-packages (torchvision's Faster R-CNN, no weights) fails
    /// inside the library: the finding is on the user's line that calls into it, with the
    /// library frames it went through (torchvision/ops/boxes.py among them) and the `model =`
    /// line as related locations.
    #[test]
    fn a_failure_inside_an_installed_library_is_on_the_users_line_with_the_library_frames() {
        let Some(python) = torch_python() else { return };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("detect.py");
        std::fs::write(
            &file,
            "import torch\nimport torchvision\n\n\nclass Detector(torch.nn.Module):\n    \
             def __init__(self):\n        super().__init__()\n        self.net = torchvision.models.\
             detection.fasterrcnn_mobilenet_v3_large_320_fpn(\n            weights=None, \
             weights_backbone=None, num_classes=3\n        ).eval()\n\n    def forward(self, \
             images):\n        return self.net(list(images))\n\n\nmodel = Detector().eval()\n\
             example_args = (torch.randn(1, 3, 160, 160),)\n",
        )
        .unwrap();
        let result = trace_alone(python, dir.path(), &file);
        assert_eq!(result.status, Status::Failed, "{result:#?}");
        let on_forward = result
            .diagnostics
            .iter()
            .find(|finding| finding.file == file && finding.line == 13)
            .unwrap_or_else(|| panic!("nothing on the line of self.net(...): {result:#?}"));
        let boxes = on_forward
            .related
            .iter()
            .find(|related| {
                related
                    .file
                    .ends_with(Path::new("torchvision").join("ops").join("boxes.py"))
            })
            .unwrap_or_else(|| panic!("no torchvision/ops/boxes.py frame: {on_forward:#?}"));
        assert!(boxes.line > 1, "{boxes:?}");
        let source = std::fs::read_to_string(&boxes.file).unwrap();
        assert!(
            source.lines().nth(boxes.line as usize - 1).is_some(),
            "{boxes:?} is past the end of the file"
        );
        assert!(
            on_forward
                .related
                .iter()
                .any(|related| related.file == file && related.line == 16),
            "no `model =` line: {on_forward:#?}"
        );
        assert!(
            on_forward.related.iter().all(|related| !related
                .file
                .components()
                .any(|part| part.as_os_str() == "torch")),
            "torch's own frames are not the user's business: {on_forward:#?}"
        );
    }
    /// A guard that installed code adds on a declared dynamic dimension (torchvision's ViT
    /// asserts the image height) is on the user's declaration of that dimension, naming the
    /// library line that adds it, with that line among the related locations; the fix that
    /// would make it static is shown as what it is.
    #[test]
    fn a_guard_added_by_an_installed_library_names_its_line_on_the_users_declaration() {
        let Some(python) = torch_python() else { return };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vit.py");
        std::fs::write(
            &file,
            "import torch\nimport torchvision\nfrom torch.export import Dim\n\n\
             model = torchvision.models.VisionTransformer(\n    image_size=32, patch_size=16, \
             num_layers=1, num_heads=2, hidden_dim=16, mlp_dim=32\n).eval()\n\
             example_args = (torch.randn(2, 3, 32, 32),)\n\
             dynamic_shapes = {\"x\": {0: Dim(\"batch\"), 2: Dim(\"height\", min=16, max=64)}}\n",
        )
        .unwrap();
        let result = trace_alone(python, dir.path(), &file);
        assert_eq!(result.status, Status::Failed, "{result:#?}");
        let [finding] = result.diagnostics.as_slice() else {
            panic!("one finding expected: {result:#?}");
        };
        // On the `"x"` key of `dynamic_shapes`, line 9.
        assert_eq!(
            (&finding.file, finding.line, finding.code.as_str()),
            (&file, 9, "PT401")
        );
        let library = Path::new("torchvision")
            .join("models")
            .join("vision_transformer.py");
        let adds = finding
            .related
            .iter()
            .find(|related| {
                related.file.ends_with(&library) && related.message.contains("adds the guard")
            })
            .unwrap_or_else(|| panic!("no torchvision line adding the guard: {finding:#?}"));
        let source = std::fs::read_to_string(&adds.file).unwrap();
        let line = source
            .lines()
            .nth(adds.line as usize - 1)
            .unwrap_or_default();
        assert!(
            line.contains("torch._assert(h == self.image_size"),
            "{adds:?}: {line}"
        );
        assert!(
            finding.message.contains(&format!(
                "installed code (torchvision/models/vision_transformer.py:{})",
                adds.line
            )) && finding.message.contains("guard height == 32")
                && finding
                    .message
                    .contains("height = 32 (which makes `height` static)"),
            "{}",
            finding.message
        );
    }
}
