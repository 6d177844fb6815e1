//! Fault injection through the real language server: `pt2lsp serve` over stdio, tracing on
//! save with real torch, while the traced model misbehaves in every way user code can.
//!
//! Each misbehaving `forward` (a loop without end, an allocation without bound, a segfault,
//! `os._exit`, megabytes of output, a fork left sleeping) and a worker killed by SIGKILL while
//! it traces must end as a diagnostic on that file, never as a dead server; the next save of
//! the fixed file must be traced normally, which proves the tracer works again. After every
//! fault no job process may be left, and after shutdown nothing the server started may remain,
//! neither a process nor a file in its `TMPDIR` (a fresh directory per test).
//!
//! The interpreter is `PT2LSP_PYTHON` (scripts/test.sh sets it), else `../.venv/bin/python`.
//! Without torch the tests fail when `CI` is set and are skipped, with a note, otherwise. The
//! tests take turns, as server/tests/tracer.rs does: a timeout must not be starved.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{TestClient, file_uri};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

/// Seconds a trace may take: long enough for a warm export on a busy machine, short enough
/// that the endless loop costs little.
const TIMEOUT_SECONDS: u64 = 8;

/// MiB a job may map beyond the worker's own: the unbounded allocation stops here.
const MEMORY_LIMIT_MIB: u64 = 512;

/// How long a trace result may take to arrive: it may include starting a worker, whose
/// `import torch` takes seconds, and much longer on a loaded CI machine.
const TRACE_WAIT: Duration = Duration::from_secs(180);

/// The interpreter with torch, or `None` (with a note) when there is none outside CI.
fn torch_python() -> Option<PathBuf> {
    let candidate = std::env::var_os("PT2LSP_PYTHON").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python"),
        PathBuf::from,
    );
    let works = std::process::Command::new(&candidate)
        .args(["-c", "import torch"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if works {
        return Some(candidate);
    }
    let message = format!(
        "the fault-injection tests need a Python with torch: {} cannot import it (set \
         PT2LSP_PYTHON, or run scripts/test.sh, which installs torch into .venv)",
        candidate.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{message}");
    eprintln!("skipping the fault-injection tests: {message}");
    None
}

/// One server with a tracer at a time (see the module docs).
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A model file: `forward`'s body is `body` (indented by eight spaces), `model =` follows.
fn model_file(body: &str) -> String {
    format!(
        "import os\nimport torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n\
         {body}\n\n\nmodel = Model()\nexample_args = (torch.randn(4),)\n"
    )
}

/// The zero-based line of `model =`, where a job's own failures (PT502) are placed.
fn model_line(text: &str) -> u64 {
    text.lines()
        .position(|line| line.starts_with("model ="))
        .unwrap() as u64
}

/// The fixed file every fault case is saved as: its trace reports the data-dependent branch.
const FIXED_BODY: &str = "        if x.sum() > 0:\n            return x * 2\n        return x";

/// The line of the branch in [`FIXED_BODY`].
const FIXED_BRANCH_LINE: u64 = 6;

struct Served {
    child: Child,
    client: TestClient,
    /// Everything the server wrote to stderr so far.
    stderr: Arc<Mutex<String>>,
    tmp: tempfile::TempDir,
    workspace: tempfile::TempDir,
    /// The marker every process the server started carries in its command line: the worker
    /// is given a directory under the server's TMPDIR, and its jobs are forks of it.
    marker: String,
}

/// Starts `pt2lsp serve` with a fresh TMPDIR and initialises it on a fresh workspace.
async fn serve(python: &Path) -> Served {
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .arg("serve")
        .env("TMPDIR", tmp.path())
        .env_remove("VIRTUAL_ENV")
        // Every save must reach the worker: the fixed file after each fault is the same text,
        // which the trace cache would otherwise replay.
        .env("PT2LSP_NO_CACHE", "1")
        .current_dir(workspace.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("pt2lsp starts");
    // stderr is read all along: a server blocked on a full pipe would look hung.
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut pipe = child.stderr.take().unwrap();
    let sink = Arc::clone(&stderr);
    tokio::spawn(async move {
        let mut buffer = vec![0; 1 << 16];
        while let Ok(read) = pipe.read(&mut buffer).await {
            if read == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buffer[..read]));
        }
    });
    let mut client = TestClient::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let options = json!({
        "python": python,
        // Each fault is traced as its file opens.
        "trace": "on-open-and-save",
        "timeout": TIMEOUT_SECONDS,
        "memory_limit": MEMORY_LIMIT_MIB,
    });
    let response = client.initialize(Some(workspace.path()), options).await;
    assert!(response.get("result").is_some(), "{response}");
    let marker = tmp.path().to_string_lossy().into_owned();
    Served {
        child,
        client,
        stderr,
        tmp,
        workspace,
        marker,
    }
}

impl Served {
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The first publication for `uri` at `version` that carries a trace result.
    async fn traced(&mut self, uri: &str, version: i32) -> Vec<Value> {
        let message = self
            .client
            .wait_for_within(TRACE_WAIT, |message| {
                message["method"] == "textDocument/publishDiagnostics"
                    && message["params"]["uri"] == uri
                    && message["params"]["version"] == version
                    && message["params"]["diagnostics"]
                        .as_array()
                        .is_some_and(|all| {
                            all.iter().any(|d| {
                                d["data"]["source"]
                                    .as_str()
                                    .is_some_and(|source| source.ends_with("trace"))
                            })
                        })
            })
            .await;
        message["params"]["diagnostics"].as_array().unwrap().clone()
    }

    /// Saves `text` as the file behind `uri`, as an editor does: the buffer changes, then the
    /// file is written and `didSave` sent.
    async fn save(&self, path: &Path, uri: &str, version: i32, text: &str) {
        self.client
            .notify(
                "textDocument/didChange",
                json!({
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": text}]
                }),
            )
            .await;
        fs::write(path, text).unwrap();
        self.client
            .notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": uri}}),
            )
            .await;
    }

    /// Waits until no job process runs: only the worker itself (or nothing) carries the marker.
    async fn no_job_left(&self, case: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = processes_mentioning(&self.marker);
            if left.len() <= 1 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{case}: processes left after the trace: {left:#?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Shuts the server down and checks that it took everything it started with it.
    async fn shut_down(mut self) {
        self.client.shutdown_and_exit().await;
        let status = tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .expect("the server exits after `exit`")
            .unwrap();
        assert!(status.success(), "{status:?}\nstderr:\n{}", self.stderr());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = processes_mentioning(&self.marker);
            if left.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "processes left after shutdown: {left:#?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let files: Vec<PathBuf> = fs::read_dir(self.tmp.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert!(files.is_empty(), "files left in TMPDIR: {files:#?}");
        let stderr = self.stderr();
        assert!(
            !stderr.contains("panicked"),
            "the server panicked:\n{stderr}"
        );
        drop(self.workspace);
    }
}

/// `pid: command line` of every process whose command line contains `marker`.
fn processes_mentioning(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().filter(|pid| pid.parse::<u32>().is_ok()) else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

fn cmdline(pid: u32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
        .unwrap_or_default()
}

/// The pids of the children of `parent`, from each process's `stat` (its fourth field is the
/// parent's pid; the second, the command name in parentheses, may itself contain spaces).
fn children_of(parent: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|pid| pid.parse().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let parent_of_entry = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|field| field.parse::<u32>().ok());
        if parent_of_entry == Some(parent) {
            children.push(pid);
        }
    }
    children
}

/// One way for `forward` to misbehave and what the trace must say of it.
struct Fault {
    name: &'static str,
    body: &'static str,
    /// The code of the trace diagnostic, its zero-based line (`None`: the `model =` line) and
    /// words its message must contain.
    code: &'static str,
    line: Option<u64>,
    words: &'static str,
}

const FAULTS: &[Fault] = &[
    Fault {
        name: "endless_loop",
        // On one line, the line that was running when the time ran out, where PT502 goes.
        body: "        while True: pass",
        code: "PT502",
        line: Some(6),
        words: "did not finish within 8 s",
    },
    Fault {
        name: "unbounded_allocation",
        body: "        hoard = []\n        while True:\n            hoard.append(bytearray(1 << 26))",
        code: "PT502",
        line: None,
        words: "out of memory",
    },
    Fault {
        name: "segfault",
        body: "        import ctypes\n        ctypes.string_at(0)\n        return x",
        code: "PT502",
        line: None,
        words: "SIGSEGV",
    },
    Fault {
        name: "exits",
        body: "        os._exit(3)",
        code: "PT502",
        line: None,
        words: "exit status 3",
    },
    // Megabytes on both streams, then a real problem: the output must reach neither the
    // protocol nor the server's stderr, and the trace must still find the branch.
    Fault {
        name: "floods_stdout_and_stderr",
        body: "        print('o' * (4 << 20))\n        os.write(2, b'e' * (4 << 20))\n\
               \x20       if x.sum() > 0:\n            return x * 2\n        return x",
        code: "PT101",
        line: Some(8),
        words: "`x.sum() > 0`",
    },
    // A forked process that would sleep for ten minutes: the job's end must take it along.
    Fault {
        name: "forks",
        body: "        import time\n        if os.fork() == 0:\n            time.sleep(600)\n\
               \x20           os._exit(0)\n        if x.sum() > 0:\n            return x * 2\n\
               \x20       return x",
        code: "PT101",
        line: Some(10),
        words: "`x.sum() > 0`",
    },
];

fn assert_has(diagnostics: &[Value], code: &str, line: u64, words: &str, context: &str) {
    assert!(
        diagnostics.iter().any(|d| d["code"] == code
            && d["data"]["source"]
                .as_str()
                .is_some_and(|source| source.ends_with("trace"))
            && d["range"]["start"]["line"] == line
            && d["message"].as_str().is_some_and(|m| m.contains(words))),
        "{context}: expected a traced {code} on line {line} saying {words:?}, got {diagnostics:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_is_a_diagnostic_and_the_next_save_traces_again() {
    let Some(python) = torch_python() else { return };
    let _turn = TURN.lock().await;
    let mut served = serve(&python).await;
    for fault in FAULTS {
        let path = served.workspace.path().join(format!("{}.py", fault.name));
        let uri = file_uri(&path);
        let text = model_file(fault.body);
        fs::write(&path, &text).unwrap();
        served.client.open(&uri, 1, &text).await;
        let diagnostics = served.traced(&uri, 1).await;
        let line = fault.line.unwrap_or_else(|| model_line(&text));
        assert_has(&diagnostics, fault.code, line, fault.words, fault.name);
        served.no_job_left(fault.name).await;

        let fixed = model_file(FIXED_BODY);
        served.save(&path, &uri, 2, &fixed).await;
        let diagnostics = served.traced(&uri, 2).await;
        assert_has(
            &diagnostics,
            "PT101",
            FIXED_BRANCH_LINE,
            "`x.sum() > 0`",
            &format!("{} fixed", fault.name),
        );
        served.no_job_left(fault.name).await;
        served
            .client
            .notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": uri}}),
            )
            .await;
    }
    let stderr = served.stderr();
    assert!(
        !stderr.contains("oooooooo") && !stderr.contains("eeeeeeee"),
        "the traced code's output reached the server's stderr ({} bytes)",
        stderr.len()
    );
    served.shut_down().await;
}

/// SIGKILLs the worker (the server's child running Python) while it has a job (a child of its
/// own), and returns once it did.
async fn kill_worker_mid_job(server: u32) {
    let deadline = Instant::now() + TRACE_WAIT;
    loop {
        // A job is a fork of the worker, with its command line; anything else the worker
        // starts (a helper `import torch` runs) is not a job.
        let busy = children_of(server).into_iter().find(|&worker| {
            let worker_cmdline = cmdline(worker);
            worker_cmdline.contains("worker.py")
                && children_of(worker)
                    .into_iter()
                    .any(|job| cmdline(job) == worker_cmdline)
        });
        if let Some(worker) = busy {
            let killed = std::process::Command::new("kill")
                .args(["-KILL", &worker.to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
            return;
        }
        assert!(Instant::now() < deadline, "no job ever ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_job_is_a_diagnostic_and_is_replaced() {
    let Some(python) = torch_python() else { return };
    let _turn = TURN.lock().await;
    let mut served = serve(&python).await;
    let server_pid = served.child.id().unwrap();
    let path = served.workspace.path().join("slow.py");
    let uri = file_uri(&path);
    let text = model_file("        import time\n        time.sleep(4)\n        return x");
    fs::write(&path, &text).unwrap();
    served.client.open(&uri, 1, &text).await;
    // A job whose worker died runs once more on a new worker (the death may have been another
    // job's doing); when that worker dies too, the job is the likely culprit and is reported.
    kill_worker_mid_job(server_pid).await;
    // The first worker must be gone before the second is looked for.
    tokio::time::sleep(Duration::from_millis(200)).await;
    kill_worker_mid_job(server_pid).await;
    let diagnostics = served.traced(&uri, 1).await;
    assert_has(
        &diagnostics,
        "PT502",
        model_line(&text),
        "worker process died",
        "killed worker",
    );
    served.no_job_left("killed worker").await;

    let fixed = model_file(FIXED_BODY);
    served.save(&path, &uri, 2, &fixed).await;
    let diagnostics = served.traced(&uri, 2).await;
    assert_has(
        &diagnostics,
        "PT101",
        FIXED_BRANCH_LINE,
        "`x.sum() > 0`",
        "after the killed worker",
    );
    served.shut_down().await;
}

/// The worker (the server's child running `worker.py`) and its private directory.
fn worker_of(server: u32) -> Option<(u32, String)> {
    children_of(server).into_iter().find_map(|worker| {
        let line = cmdline(worker);
        let dir = line
            .split_whitespace()
            .skip_while(|word| *word != "--dir")
            .nth(1)?
            .to_owned();
        line.contains("worker.py").then_some((worker, dir))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_while_idle_is_replaced_before_the_next_trace() {
    let Some(python) = torch_python() else { return };
    let _turn = TURN.lock().await;
    let mut served = serve(&python).await;
    let server_pid = served.child.id().unwrap();
    let path = served.workspace.path().join("branch.py");
    let uri = file_uri(&path);
    let text = model_file(FIXED_BODY);
    fs::write(&path, &text).unwrap();
    served.client.open(&uri, 1, &text).await;
    let diagnostics = served.traced(&uri, 1).await;
    assert_has(
        &diagnostics,
        "PT101",
        FIXED_BRANCH_LINE,
        "`x.sum() > 0`",
        "first trace",
    );
    served.no_job_left("first trace").await;

    // The worker waits for its next job: kill it, by each signal in turn, and check that the
    // next save is traced as usual by a new worker and that the dead one's directory is gone.
    for (round, signal) in ["KILL", "TERM", "SEGV"].into_iter().enumerate() {
        let (worker, dir) = worker_of(server_pid).expect("an idle worker");
        let killed = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &worker.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        // The first save follows the kill at once (the server may not have heard of the
        // death yet); the others wait until the worker is gone.
        let deadline = Instant::now() + Duration::from_secs(10);
        while round > 0
            && fs::read_to_string(format!("/proc/{worker}/stat"))
                .is_ok_and(|stat| !stat.contains(") Z"))
        {
            assert!(
                Instant::now() < deadline,
                "SIG{signal} did not end the worker"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let version = i32::try_from(round).unwrap() + 2;
        served.save(&path, &uri, version, &text).await;
        let diagnostics = served.traced(&uri, version).await;
        assert_has(
            &diagnostics,
            "PT101",
            FIXED_BRANCH_LINE,
            "`x.sum() > 0`",
            &format!("after SIG{signal} of the idle worker"),
        );
        assert!(
            !Path::new(&dir).exists(),
            "the dead worker's directory {dir} is left behind"
        );
        let left: Vec<PathBuf> = fs::read_dir(served.tmp.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert_eq!(left.len(), 1, "only the new worker's directory: {left:#?}");
        served.no_job_left("after the idle kill").await;
    }
    served.shut_down().await;
}
