//! One worker process: a private directory, the embedded worker package, the user's interpreter,
//! the protocol socket, the handshake, and a clean end.
//!
//! The protocol runs over a Unix socket the worker connects to, bound inside a directory only
//! this user can enter; stdout and stderr of the worker are only drained into a bounded tail
//! (shown when the worker fails to start), since the user's code may print anything there.
//! Dropping a `Worker` ends the process and its jobs and removes the directory.

use std::collections::hash_map::RandomState;
use std::fmt::Write as _;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufRead, BufReader, Read, Write};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::protocol::{Event, Hello, PROTOCOL, Request};
use super::transport::{Listener, Stream};

pub use pt2lsp_project::tracing::StartMethod;

/// Embeds one file of `tracer/python/` under its path there.
macro_rules! worker_file {
    ($path:literal) => {
        ($path, include_str!(concat!("../python/", $path)))
    };
}

/// The worker's sources (its launcher and the `pt2lsp_worker` package), embedded so the binary is
/// the whole installation; written into the worker's private directory at start. A test checks
/// that every module of the package is here.
const WORKER_FILES: &[(&str, &str)] = &[
    worker_file!("worker.py"),
    worker_file!("pt2lsp_worker/__init__.py"),
    worker_file!("pt2lsp_worker/artefacts.py"),
    worker_file!("pt2lsp_worker/budget.py"),
    worker_file!("pt2lsp_worker/channel.py"),
    worker_file!("pt2lsp_worker/classify.py"),
    worker_file!("pt2lsp_worker/compiled.py"),
    worker_file!("pt2lsp_worker/constraints.py"),
    worker_file!("pt2lsp_worker/data_dependent.py"),
    worker_file!("pt2lsp_worker/dependencies.py"),
    worker_file!("pt2lsp_worker/dim_declarations.py"),
    worker_file!("pt2lsp_worker/divergence.py"),
    worker_file!("pt2lsp_worker/draft.py"),
    worker_file!("pt2lsp_worker/entrypoint.py"),
    worker_file!("pt2lsp_worker/examples.py"),
    worker_file!("pt2lsp_worker/exceptions.py"),
    worker_file!("pt2lsp_worker/export.py"),
    worker_file!("pt2lsp_worker/expressions.py"),
    worker_file!("pt2lsp_worker/fake_kernels.py"),
    worker_file!("pt2lsp_worker/findings.py"),
    worker_file!("pt2lsp_worker/fixed_state.py"),
    worker_file!("pt2lsp_worker/graph_breaks.py"),
    worker_file!("pt2lsp_worker/guard_forms.py"),
    worker_file!("pt2lsp_worker/hooks.py"),
    worker_file!("pt2lsp_worker/job.py"),
    worker_file!("pt2lsp_worker/leaked_constants.py"),
    worker_file!("pt2lsp_worker/library_conditions.py"),
    worker_file!("pt2lsp_worker/locations.py"),
    worker_file!("pt2lsp_worker/lower_aoti.py"),
    worker_file!("pt2lsp_worker/lower_core.py"),
    worker_file!("pt2lsp_worker/lower_executorch.py"),
    worker_file!("pt2lsp_worker/lower_onnx.py"),
    worker_file!("pt2lsp_worker/lower_pt2.py"),
    worker_file!("pt2lsp_worker/lowering.py"),
    worker_file!("pt2lsp_worker/made_static.py"),
    worker_file!("pt2lsp_worker/main.py"),
    worker_file!("pt2lsp_worker/outputs.py"),
    worker_file!("pt2lsp_worker/passed.py"),
    worker_file!("pt2lsp_worker/outcomes.py"),
    worker_file!("pt2lsp_worker/patching.py"),
    worker_file!("pt2lsp_worker/preload.py"),
    worker_file!("pt2lsp_worker/program_info.py"),
    worker_file!("pt2lsp_worker/protocol.py"),
    worker_file!("pt2lsp_worker/shapes.py"),
    worker_file!("pt2lsp_worker/shape_vars.py"),
    worker_file!("pt2lsp_worker/spawn.py"),
    worker_file!("pt2lsp_worker/stalled.py"),
    worker_file!("pt2lsp_worker/pytree_types.py"),
    worker_file!("pt2lsp_worker/script.py"),
    worker_file!("pt2lsp_worker/spec.py"),
    worker_file!("pt2lsp_worker/tensor_subclasses.py"),
    worker_file!("pt2lsp_worker/text.py"),
    worker_file!("pt2lsp_worker/trace.py"),
    worker_file!("pt2lsp_worker/weights.py"),
    worker_file!("pt2lsp_worker/workspace.py"),
    worker_file!("pt2lsp_worker/zygote.py"),
];

/// A hash of the embedded worker: a trace cached by another build of it is not replayed.
pub(crate) fn worker_digest() -> u128 {
    static DIGEST: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    *DIGEST.get_or_init(|| {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for (path, source) in WORKER_FILES {
            hasher.update(path.as_bytes());
            hasher.update(&[0]);
            hasher.update(source.as_bytes());
            hasher.update(&[0]);
        }
        hasher.digest128()
    })
}

/// The launcher, among `WORKER_FILES`: the script the interpreter runs.
const WORKER_LAUNCHER: &str = "worker.py";

/// Bytes of the worker's own stdout and stderr kept for error messages.
const TAIL_LIMIT: usize = 8 * 1024;

/// Longest path a Unix socket address may hold, with room to spare (Linux allows 107 bytes).
const SOCKET_PATH_LIMIT: usize = 100;

/// What a worker reports, tagged with the worker it came from so that a restarted worker's
/// manager can ignore a dead one's last words.
#[derive(Debug)]
pub enum WorkerMessage {
    Event(Event),
    /// The protocol stream ended: the worker exited or was killed.
    Closed,
}

/// Who the worker is, from its hello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerInfo {
    pub python: PathBuf,
    pub python_version: String,
    pub torch: String,
    pub pid: u32,
}

/// Why no worker could be started; the message is written for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError {
    pub message: String,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StartError {}

/// How to choose another interpreter, appended to every start-up error.
const CHOOSE_PYTHON: &str = "choose the interpreter of the environment that has torch with \
     --python PATH or `python = \"...\"` in [tool.pt2lsp], or activate that virtual environment";

pub struct Worker {
    child: Child,
    stream: Stream,
    dir: PathBuf,
    pub info: WorkerInfo,
    tail: Arc<Mutex<Tail>>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("pid", &self.child.id())
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// Starts a worker with `python` and waits for its hello (torch imported, exporter warm).
    /// Events are sent to `events` as `(generation, message)` by a reader thread. `jobs` is
    /// how many run at once (spawn mode keeps that many processes warm).
    pub fn spawn(
        python: &Path,
        generation: u64,
        events: Sender<(u64, WorkerMessage)>,
        startup_timeout: Duration,
        (method, jobs): (StartMethod, usize),
    ) -> Result<Worker, StartError> {
        let dir = private_dir().map_err(|error| StartError {
            message: format!("cannot create the tracer's temporary directory: {error}"),
        })?;
        let result = Self::spawn_in(
            &dir,
            python,
            generation,
            events,
            startup_timeout,
            (method, jobs),
        );
        if result.is_err() {
            remove_run_dir(&dir);
        }
        result
    }

    fn spawn_in(
        dir: &Path,
        python: &Path,
        generation: u64,
        events: Sender<(u64, WorkerMessage)>,
        startup_timeout: Duration,
        (method, jobs): (StartMethod, usize),
    ) -> Result<Worker, StartError> {
        let io_error = |what: &str, error: io::Error| StartError {
            message: format!("cannot start the tracer: {what}: {error}"),
        };
        for (path, source) in WORKER_FILES {
            let file = dir.join(path);
            if let Some(parent) = file.parent() {
                fs::create_dir_all(parent).map_err(|e| io_error("writing the worker", e))?;
            }
            fs::write(&file, source).map_err(|e| io_error(&format!("writing {path}"), e))?;
        }
        let script = dir.join(WORKER_LAUNCHER);
        // Spawn mode talks over loopback TCP everywhere, so that its channel is the one tested
        // on Linux too.
        let listener = Listener::bind(dir, method == StartMethod::Fork)
            .map_err(|e| io_error("binding its socket", e))?;
        let address = listener
            .worker_args()
            .map_err(|e| io_error("reading its socket's address", e))?;
        let token = random_token();

        let mut child = Command::new(python)
            .arg(&script)
            .args(address)
            .arg("--token")
            .arg(&token)
            .arg("--dir")
            .arg(dir)
            .arg("--start-method")
            .arg(method.as_str())
            .arg("--pool")
            .arg(jobs.max(1).to_string())
            // Importing the user's modules must not leave __pycache__ in their project.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| StartError {
                message: format!(
                    "cannot run the Python interpreter `{}`: {error}; {CHOOSE_PYTHON}",
                    python.display()
                ),
            })?;
        let tail = Arc::new(Mutex::new(Tail::default()));
        for output in [
            child
                .stdout
                .take()
                .map(|out| Box::new(out) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|err| Box::new(err) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let tail = Arc::clone(&tail);
            thread::spawn(move || drain(output, &tail));
        }

        let fail = |child: &mut Child, message: String| {
            let _ = child.kill();
            let _ = child.wait();
            StartError { message }
        };
        let deadline = Instant::now() + startup_timeout;
        let mut stream = loop {
            match listener.accept() {
                Ok(Some(stream)) => break stream,
                Ok(None) => {}
                Err(error) => return Err(fail(&mut child, format!("tracer socket: {error}"))),
            }
            if let Ok(Some(status)) = child.try_wait() {
                // Give the drain threads a moment to collect the last output.
                thread::sleep(Duration::from_millis(50));
                let output = tail_text(&tail);
                return Err(StartError {
                    message: format!(
                        "the Python interpreter `{}` exited ({status}) before the tracer \
                         started{}; {CHOOSE_PYTHON}",
                        python.display(),
                        if output.is_empty() {
                            String::new()
                        } else {
                            format!(":\n{output}")
                        }
                    ),
                });
            }
            if Instant::now() >= deadline {
                return Err(fail(
                    &mut child,
                    format!(
                        "`{}` did not start the tracer within {} s",
                        python.display(),
                        startup_timeout.as_secs()
                    ),
                ));
            }
            thread::sleep(Duration::from_millis(10));
        };
        drop(listener);

        let hello = match read_hello(&mut stream, deadline) {
            Ok(hello) => hello,
            Err(error) => {
                let output = tail_text(&tail);
                return Err(fail(
                    &mut child,
                    format!(
                        "the tracer started with `{}` did not say hello: {error}{}",
                        python.display(),
                        if output.is_empty() {
                            String::new()
                        } else {
                            format!(":\n{output}")
                        }
                    ),
                ));
            }
        };
        if hello.hello != "pt2lsp-worker" || hello.token != token {
            return Err(fail(
                &mut child,
                "the tracer's socket was answered by something else".to_owned(),
            ));
        }
        if hello.protocol != PROTOCOL {
            return Err(fail(
                &mut child,
                format!(
                    "the tracer speaks protocol {}, this pt2lsp speaks {PROTOCOL}",
                    hello.protocol
                ),
            ));
        }
        let version = hello.python_version.clone().unwrap_or_default();
        let Some(torch) = hello.torch.clone() else {
            let _ = child.wait();
            return Err(StartError {
                message: format!(
                    "the Python interpreter `{}` (Python {version}) cannot import torch ({}); \
                     {CHOOSE_PYTHON}",
                    python.display(),
                    hello.error.as_deref().unwrap_or("unknown error"),
                ),
            });
        };
        let info = WorkerInfo {
            python: python.to_path_buf(),
            python_version: version,
            torch,
            pid: hello.pid.unwrap_or_else(|| child.id()),
        };

        stream
            .set_read_timeout(None)
            .map_err(|e| io_error("configuring its socket", e))?;
        let reader = stream
            .try_clone()
            .map_err(|e| io_error("cloning its socket", e))?;
        thread::spawn(move || read_events(reader, generation, &events));
        Ok(Worker {
            child,
            stream,
            dir: dir.to_path_buf(),
            info,
            tail,
        })
    }

    pub fn send(&mut self, request: &Request<'_>) -> io::Result<()> {
        let mut line = serde_json::to_vec(request).map_err(io::Error::other)?;
        line.push(b'\n');
        self.stream.write_all(&line)
    }

    /// The last lines the worker itself wrote to stdout or stderr.
    pub fn output_tail(&self) -> String {
        tail_text(&self.tail)
    }

    /// Whether the worker process has exited.
    pub fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the worker now: its jobs die with it (they get SIGKILL when it dies).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        remove_run_dir(&self.dir);
    }
}

impl Drop for Worker {
    /// Asks the worker to end (it kills its jobs and removes its directory), waits a moment,
    /// then kills it and removes the directory itself.
    fn drop(&mut self) {
        let _ = self.send(&Request::Shutdown);
        let _ = self.stream.shutdown();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
        self.kill();
    }
}

fn read_hello(stream: &mut Stream, deadline: Instant) -> io::Result<Hello> {
    let remaining = deadline.saturating_duration_since(Instant::now());
    stream.set_read_timeout(Some(remaining.max(Duration::from_millis(1))))?;
    let mut line = String::new();
    let mut reader = BufReader::new(stream);
    // The worker sends nothing before its hello, so reading one line takes no more than it.
    match reader.read_line(&mut line) {
        Ok(0) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "it exited during start-up",
        )),
        Ok(_) => serde_json::from_str(&line).map_err(io::Error::other),
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "timed out while importing torch",
        )),
        Err(error) => Err(error),
    }
}

fn read_events(stream: Stream, generation: u64, events: &Sender<(u64, WorkerMessage)>) {
    let reader = BufReader::new(stream);
    for line in reader.lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let message = match serde_json::from_str::<Event>(&line) {
            Ok(event) => WorkerMessage::Event(event),
            Err(error) => WorkerMessage::Event(Event::Error {
                message: format!("unreadable message from the worker ({error}): {line}"),
            }),
        };
        if events.send((generation, message)).is_err() {
            return;
        }
    }
    let _ = events.send((generation, WorkerMessage::Closed));
}

/// The end of a stream, bounded.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
}

fn drain(mut output: Box<dyn Read + Send>, tail: &Mutex<Tail>) {
    let mut buffer = [0_u8; 4096];
    loop {
        match output.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => {
                let mut tail = tail
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                tail.bytes.extend_from_slice(&buffer[..read]);
                let excess = tail.bytes.len().saturating_sub(TAIL_LIMIT);
                tail.bytes.drain(..excess);
            }
        }
    }
}

fn tail_text(tail: &Mutex<Tail>) -> String {
    let tail = tail
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    String::from_utf8_lossy(&tail.bytes).trim().to_owned()
}

/// Removes the worker's directory. Its job processes die with the worker, but one that was
/// still writing (a bytecode cache, its output) may recreate an entry while the tree is being
/// removed, so it tries again for a moment; Windows also keeps a file for a moment after its
/// process ends.
fn remove_run_dir(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while fs::remove_dir_all(dir).is_err() && dir.exists() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh directory only this user can enter, under the temp dir (or `/tmp` when the temp dir
/// path is too long for a socket address).
fn private_dir() -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut base = std::env::temp_dir();
    if cfg!(unix) && base.as_os_str().len() + 32 > SOCKET_PATH_LIMIT {
        base = PathBuf::from("/tmp");
    }
    loop {
        let name = format!(
            "pt2lsp-{}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            &random_token()[..8]
        );
        let path = base.join(name);
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut builder = fs::DirBuilder::new();
        #[cfg(unix)]
        builder.mode(0o700);
        match builder.create(&path) {
            Ok(()) => {
                // The mode passed to mkdir is masked by the umask; make sure of it.
                #[cfg(unix)]
                fs::set_permissions(&path, fs::Permissions::from_mode(0o700))?;
                return Ok(path);
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
}

/// 32 hex digits from the standard library's per-process random hash keys.
fn random_token() -> String {
    let mut out = String::with_capacity(32);
    for salt in 0..2_u64 {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(salt);
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos()),
        );
        let _ = write!(out, "{:016x}", hasher.finish());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn private_dirs_are_private_and_tokens_differ() {
        let dir = private_dir().unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        fs::remove_dir(&dir).unwrap();
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    /// Every module of the worker package is embedded: one left out would be missing from the
    /// directory the binary writes, and the worker would fail to import it only at run time.
    #[test]
    fn every_module_of_the_worker_package_is_embedded() {
        let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/pt2lsp_worker");
        let mut on_disk: Vec<String> = fs::read_dir(&package)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "py"))
            .map(|path| {
                format!(
                    "pt2lsp_worker/{}",
                    path.file_name().unwrap().to_string_lossy()
                )
            })
            .collect();
        on_disk.sort();
        let mut embedded: Vec<String> = WORKER_FILES
            .iter()
            .map(|(path, _)| (*path).to_owned())
            .filter(|path| path.starts_with("pt2lsp_worker/"))
            .collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
        assert!(
            WORKER_FILES
                .iter()
                .any(|(path, _)| *path == WORKER_LAUNCHER)
        );
    }

    /// The worker's `RULES` (code and name of every rule it reports) against the analyzer's
    /// table: a code the worker reports must be a rule the server knows, under the same name.
    #[test]
    fn the_workers_rule_list_is_the_analyzers() {
        let (_, protocol) = WORKER_FILES
            .iter()
            .find(|(path, _)| *path == "pt2lsp_worker/protocol.py")
            .expect("the worker has a protocol module");
        let start = protocol
            .find("\nRULES = {\n")
            .expect("protocol.py defines RULES");
        let body = &protocol[start..];
        let body = &body[..body.find("\n}\n").expect("RULES ends")];
        let listed: Vec<(&str, &str)> = body
            .lines()
            .filter_map(|line| {
                let (code, name) = line.trim().trim_end_matches(',').split_once(": ")?;
                Some((code.trim_matches('"'), name.trim_matches('"')))
            })
            .collect();
        assert!(listed.len() >= 10, "{listed:?}");
        for (code, name) in listed {
            let rule = pt2lsp_analyzer::Rule::ALL
                .iter()
                .find(|rule| rule.code() == code)
                .unwrap_or_else(|| panic!("the worker reports {code}, which is no rule"));
            assert_eq!(rule.name(), name, "{code}");
        }
    }

    #[test]
    fn a_missing_interpreter_is_a_clear_error() {
        let (sender, _receiver) = std::sync::mpsc::channel();
        let error = Worker::spawn(
            Path::new("/nonexistent/python3"),
            0,
            sender,
            Duration::from_secs(5),
            (StartMethod::Fork, 1),
        )
        .unwrap_err();
        assert!(error.message.contains("/nonexistent/python3"), "{error}");
        assert!(error.message.contains("--python"), "{error}");
    }
}
