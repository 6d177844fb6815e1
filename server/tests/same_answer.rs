//! Same answer however asked: for every multi-file fixture project, copied to a directory of
//! its own (a `pyproject.toml` at its root, as a user's project has), each file's diagnostics,
//! fixes and related locations are the same from `check DIR`, from `check FILE` for each file
//! alone (as pre-commit passes them), from all files named in reverse order, from `check`
//! run inside each subdirectory, and from the language server (`pt2lsp serve` over stdio), each
//! file opened alone and then all of them. Static pass, and after a trace with real torch for
//! the projects whose entrypoints the tracer runs (the CLI's `--trace` every way, and the
//! editor after a save): what the exporter found merges into the same answer, and a file the
//! trace found a problem in beside the asked ones is reported with all `check --trace .` says.
//! The Python API's `check_paths` answers as the command line does, for the root, each file
//! alone and every file in reverse.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

mod common;
#[path = "support/run.rs"]
mod support;
#[path = "support/torch.rs"]
mod torch;
#[path = "support/tree.rs"]
mod tree;

use support::run;

/// One file's diagnostics, each as the fields that must agree, in a stable order.
type Answer = BTreeMap<PathBuf, Vec<String>>;

fn check(cwd: &Path, root: &Path, args: &[&str]) -> Answer {
    answer(cwd, root, args, None)
}

/// `check --trace` with `python`: the first run traces, later ones replay the project's trace
/// cache (the same results the editor's trace thread replays).
fn check_traced(cwd: &Path, root: &Path, args: &[&str], python: &Path) -> Answer {
    answer(cwd, root, args, Some(python))
}

fn answer(cwd: &Path, root: &Path, args: &[&str], traced_with: Option<&Path>) -> Answer {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pt2lsp"));
    command
        .args(["check", "--format", "json", "--exit-zero"])
        .args(args)
        .current_dir(cwd)
        .env_remove("VIRTUAL_ENV");
    match traced_with {
        Some(python) => {
            command.arg("--trace").arg("--python").arg(python);
        }
        None => {
            command.env("PT2LSP_NO_CACHE", "1");
        }
    }
    let done = run(&mut command);
    assert_eq!(
        done.code,
        0,
        "check {args:?} in {}: {}",
        cwd.display(),
        done.stderr
    );
    let diagnostics: Vec<Value> = serde_json::from_str(&done.stdout).expect("JSON output");
    said_of(cwd, root, diagnostics)
}

/// The Python API's `check_paths` (the function its binding calls) for `paths` of `root`.
fn check_api(root: &Path, paths: &[&Path]) -> Answer {
    let options = pt2lsp::api::PathsOptions {
        paths: paths.iter().map(|path| root.join(path)).collect(),
        // As the command runs here: without `$VIRTUAL_ENV`, no interpreter is chosen.
        follow_libraries: Some(false),
        no_cache: true,
        ..Default::default()
    };
    let found = pt2lsp::api::check_paths(&options)
        .unwrap_or_else(|error| panic!("check_paths({paths:?}): {error}"));
    let diagnostics = found
        .iter()
        .map(|diagnostic| serde_json::to_value(diagnostic).expect("serialisable"))
        .collect();
    said_of(root, root, diagnostics)
}

/// The diagnostics of a JSON report (paths relative to `cwd`), as each file's answer.
fn said_of(cwd: &Path, root: &Path, diagnostics: Vec<Value>) -> Answer {
    let mut answer = Answer::new();
    for diagnostic in diagnostics {
        // Paths as the project sees them, whatever the directory the check ran in.
        let relative = |file: &Value| {
            let file = cwd.join(file.as_str().expect("a file"));
            let file = file.canonicalize().unwrap_or(file);
            file.strip_prefix(root)
                .map(Path::to_path_buf)
                .unwrap_or(file)
        };
        let related: Vec<String> = diagnostic["related"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|place| {
                format!(
                    "{}:{}:{} {}",
                    relative(&place["file"]).display(),
                    place["line"],
                    place["column"],
                    place["message"]
                )
            })
            .collect();
        let said = format!(
            "{}:{} {} {} {} {} fix={} related={related:?}",
            diagnostic["line"],
            diagnostic["column"],
            diagnostic["code"],
            diagnostic["severity"],
            diagnostic["source"],
            diagnostic["message"],
            diagnostic["fix"]
        );
        answer
            .entry(relative(&diagnostic["file"]))
            .or_default()
            .push(said);
    }
    for said in answer.values_mut() {
        said.sort();
    }
    answer
}

/// The Python files of a project, relative to its root, leaving out its `venv/`.
fn python_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|name| name != "venv") {
                python_files(root, &path, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "py") {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// What `answer` says of the files under `prefix`.
fn under(answer: &Answer, prefix: &Path) -> Answer {
    answer
        .iter()
        .filter(|(file, _)| file.starts_with(prefix))
        .map(|(file, said)| (file.clone(), said.clone()))
        .collect()
}

/// The multi-file fixture projects, and two trees whose parts name the same modules.
fn projects() -> Vec<PathBuf> {
    let projects = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&projects)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    // Two projects under one tree, each with its own `models/net.py`; and one project whose
    // two script directories each have their own `models.py`.
    names.push(data.join("monorepo"));
    names.push(data.join("sibling_scripts"));
    // A name of two UTF-16 units before a related place.
    names.push(data.join("wide_characters"));
    names
}

/// A copy of `project` in a directory of its own, with a `pyproject.toml` at its root; the
/// root canonical, as the server resolves paths.
fn copied(project: &Path) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join(project.file_name().unwrap());
    tree::copy_tree(project, &root);
    std::fs::write(
        root.join("pyproject.toml"),
        "[project]\nname = \"fixture\"\n",
    )
    .unwrap();
    let root = root.canonicalize().unwrap();
    (tmp, root)
}

/// Asks for the project every way a user does, through `ask(cwd, paths)`: each file alone (as
/// pre-commit passes them), every file named last first, and with no path from inside each
/// subdirectory. `judge(how, got, asked)` compares each answer with `check .`'s for the files
/// under `asked` (all of them for the reversed list).
fn ask_every_way(
    root: &Path,
    files: &[PathBuf],
    ask: impl Fn(&Path, &[&str]) -> Answer,
    mut judge: impl FnMut(String, Answer, &Path),
) {
    for file in files {
        let alone = ask(root, &[file.to_str().unwrap()]);
        judge(format!("{} alone", file.display()), alone, file);
    }
    let reversed: Vec<&str> = files
        .iter()
        .rev()
        .map(|file| file.to_str().unwrap())
        .collect();
    judge(
        "with every file named, last first".to_owned(),
        ask(root, &reversed),
        Path::new(""),
    );
    let mut directories: Vec<PathBuf> = files
        .iter()
        .filter_map(|file| file.parent().map(Path::to_path_buf))
        .filter(|dir| !dir.as_os_str().is_empty())
        .collect();
    directories.sort();
    directories.dedup();
    for dir in directories {
        judge(
            format!("inside {}", dir.display()),
            ask(&root.join(&dir), &[]),
            &dir,
        );
    }
}

#[test]
fn every_project_file_gets_the_same_diagnostics_however_the_check_is_asked() {
    let names = projects();
    let mut differences = Vec::new();
    let mut compared = 0;
    for project in names {
        let name = project.file_name().unwrap().to_string_lossy().into_owned();
        let (_tmp, root) = copied(&project);
        let whole = check(&root, &root, &["."]);
        compared += whole.values().map(Vec::len).sum::<usize>();
        let mut files = Vec::new();
        python_files(&root, &root, &mut files);
        files.sort();
        ask_every_way(
            &root,
            &files,
            |cwd, paths| check(cwd, &root, paths),
            |how, got, asked| {
                let want = under(&whole, asked);
                if got != want {
                    differences.push(format!(
                        "{name}: check {how}\n  got:  {got:#?}\n  want: {want:#?}"
                    ));
                }
            },
        );
    }
    assert!(compared >= 10, "only {compared} diagnostics compared");
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}

/// Whether each diagnostic of each file of `tree` (under `tests/data`, checked whole) is an
/// error.
fn errors_in(tree: &str) -> Vec<(PathBuf, Vec<bool>)> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(tree);
    let (_tmp, root) = copied(&data);
    let whole = check(&root, &root, &["."]);
    assert!(
        whole.values().flatten().all(|said| said.contains("PT401")),
        "{whole:#?}"
    );
    whole
        .iter()
        .map(|(file, said)| {
            let errors = said.iter().map(|s| s.contains("\"error\"")).collect();
            (file.clone(), errors)
        })
        .collect()
}

/// Both trees hold two `models` with the same guard; only one script (alpha's, a's) leaves it
/// unbounded (the other declares `min=5`), so only that model has the error, and that script the
/// companion that carries its fix to the `Dim`. Each tree is also asked every way, by the
/// command line, the API and the editor: see the tests over `projects()`, which include them.
#[test]
fn projects_and_script_directories_keep_their_own_module_names() {
    assert_eq!(
        errors_in("monorepo"),
        [
            (PathBuf::from("alpha/models/net.py"), vec![true]),
            (PathBuf::from("alpha/scripts/export.py"), vec![false]),
        ]
    );
    assert_eq!(
        errors_in("sibling_scripts"),
        [
            (PathBuf::from("a/export.py"), vec![false]),
            (PathBuf::from("a/models.py"), vec![true]),
        ]
    );
}

#[test]
fn the_python_api_gives_what_the_command_line_reports() {
    let mut differences = Vec::new();
    let mut compared = 0;
    for project in projects() {
        let name = project.file_name().unwrap().to_string_lossy().into_owned();
        let (_tmp, root) = copied(&project);
        let whole = check(&root, &root, &["."]);
        compared += whole.values().map(Vec::len).sum::<usize>();
        let mut files = Vec::new();
        python_files(&root, &root, &mut files);
        files.sort();
        let mut compare = |how: String, got: Answer, asked: &Path| {
            let want = under(&whole, asked);
            if got != want {
                differences.push(format!(
                    "{name}: check_paths {how}\n  got:  {got:#?}\n  want: {want:#?}"
                ));
            }
        };
        compare(
            "of the project's root".to_owned(),
            check_api(&root, &[Path::new("")]),
            Path::new(""),
        );
        for file in &files {
            compare(
                format!("of {} alone", file.display()),
                check_api(&root, &[file]),
                file,
            );
        }
        let reversed: Vec<&Path> = files.iter().rev().map(PathBuf::as_path).collect();
        compare(
            "of every file, last first".to_owned(),
            check_api(&root, &reversed),
            Path::new(""),
        );
    }
    assert!(compared >= 10, "only {compared} diagnostics compared");
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}

/// The last publication for `uri` once the server has nothing more to say about it.
async fn settled(client: &mut common::TestClient, uri: &str) -> Vec<Value> {
    let is_publication = |message: &Value| {
        message["method"] == "textDocument/publishDiagnostics" && message["params"]["uri"] == uri
    };
    let mut last = client.wait_for(is_publication).await;
    while !client.wait_for_none(is_publication).await {
        last = client.wait_for(is_publication).await;
    }
    last["params"]["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// A publication in the CLI's terms: what [`check`] keeps of each diagnostic, fixes aside
/// (code actions, not diagnostics, carry them in the editor).
fn as_cli(diagnostics: &[Value], root: &Path) -> Vec<String> {
    let relative = |uri: &str| {
        let path = PathBuf::from(uri.strip_prefix("file://").unwrap_or(uri));
        path.strip_prefix(root)
            .map(Path::to_path_buf)
            .unwrap_or(path)
    };
    let mut said: Vec<String> = diagnostics
        .iter()
        .map(|diagnostic| {
            let severity = match diagnostic["severity"].as_u64() {
                Some(1) => "error",
                Some(2) => "warning",
                _ => "info",
            };
            let related: Vec<String> = diagnostic["relatedInformation"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|place| {
                    let start = &place["location"]["range"]["start"];
                    let uri = place["location"]["uri"].as_str().unwrap();
                    let line = start["line"].as_u64().unwrap();
                    let path = PathBuf::from(uri.strip_prefix("file://").unwrap_or(uri));
                    format!(
                        "{}:{}:{} {}",
                        relative(uri).display(),
                        line + 1,
                        characters(&path, line, start["character"].as_u64().unwrap()) + 1,
                        place["message"]
                    )
                })
                .collect();
            let start = &diagnostic["range"]["start"];
            let source = diagnostic["data"]["source"].as_str().unwrap_or("static");
            format!(
                "{}:{} {} \"{severity}\" \"{source}\" {} related={related:?}",
                start["line"].as_u64().unwrap() + 1,
                start["character"].as_u64().unwrap() + 1,
                diagnostic["code"],
                diagnostic["message"],
            )
        })
        .collect();
    said.sort();
    said
}

/// The column in characters, as the CLI counts, of `units` UTF-16 units into zero-based `line`
/// of `path`, as LSP counts.
fn characters(path: &Path, line: u64, units: u64) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let Some(line) = text.lines().nth(line as usize) else {
        return units;
    };
    let mut counted = 0;
    let mut chars = 0;
    for c in line.chars() {
        if counted >= units {
            break;
        }
        counted += c.len_utf16() as u64;
        chars += 1;
    }
    chars + units.saturating_sub(counted)
}

/// What [`check`] says, fixes left out, as [`as_cli`] puts a publication.
fn without_fixes(said: &[String]) -> Vec<String> {
    let mut said: Vec<String> = said
        .iter()
        .map(|line| {
            let (head, related) = line.split_once(" fix=").expect("a fix field");
            let related = related.split_once(" related=").map_or("", |(_, rest)| rest);
            format!("{head} related={related}")
        })
        .collect();
    said.sort();
    said
}

/// A server on `root`, as an editor that shows related locations (VS Code, Neovim) starts it,
/// its workspace scan finished; `options` are its initialization options.
async fn served(
    root: &Path,
    name: &str,
    options: Value,
) -> (tokio::process::Child, common::TestClient) {
    let (child, mut client) = common::spawn_server(std::process::Stdio::null());
    let root_uri = common::file_uri(root);
    let response = client
        .request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": root_uri,
                "workspaceFolders": [{"uri": root_uri, "name": name}],
                "initializationOptions": options,
                "capabilities": {
                    "window": {"workDoneProgress": true},
                    "textDocument": {"publishDiagnostics": {"relatedInformation": true}}
                }
            }),
        )
        .await;
    assert!(response.get("result").is_some(), "{response}");
    client.notify("initialized", json!({})).await;
    client.scanned().await;
    (child, client)
}

/// What the editor and the command line must agree on: the project's name, its root, its
/// files, and what [`check`] said of each.
struct Compared<'a> {
    name: &'a str,
    root: &'a Path,
    files: &'a [PathBuf],
    whole: &'a Answer,
}

impl Compared<'_> {
    fn want(&self, file: &Path) -> Vec<String> {
        without_fixes(self.whole.get(file).map_or(&[][..], Vec::as_slice))
    }

    fn uri(&self, file: &Path) -> String {
        common::file_uri(&self.root.join(file))
    }

    async fn open(&self, client: &common::TestClient, file: &Path, version: i32) {
        let text = std::fs::read_to_string(self.root.join(file)).unwrap();
        client.open(&self.uri(file), version, &text).await;
    }

    async fn close(&self, client: &common::TestClient, file: &Path) {
        client
            .notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": self.uri(file)}}),
            )
            .await;
    }

    /// What the server settles on for `file`, against what the command line said.
    async fn compare(
        &self,
        client: &mut common::TestClient,
        file: &Path,
        how: &str,
        differences: &mut Vec<String>,
    ) {
        let got = as_cli(&settled(client, &self.uri(file)).await, self.root);
        if got != self.want(file) {
            differences.push(format!(
                "{}: {} {how}\n  got:  {got:#?}\n  want: {:#?}",
                self.name,
                file.display(),
                self.want(file)
            ));
        }
    }

    /// Each file opened alone, compared, then closed.
    async fn each_alone(
        &self,
        client: &mut common::TestClient,
        version: i32,
        how: &str,
        differences: &mut Vec<String>,
    ) {
        for file in self.files {
            self.open(client, file, version).await;
            self.compare(client, file, how, differences).await;
            self.close(client, file).await;
        }
    }

    /// Each file opened alone, then every file open, at `version` and the next; `how` says
    /// where the editor was opened, for the differences.
    async fn alone_then_all(
        &self,
        client: &mut common::TestClient,
        version: i32,
        how: &str,
        differences: &mut Vec<String>,
    ) {
        self.each_alone(client, version, &format!("opened alone{how}"), differences)
            .await;
        self.all_open(
            client,
            version + 1,
            &format!("with every file open{how}"),
            differences,
        )
        .await;
    }

    /// Every file open, then each compared.
    async fn all_open(
        &self,
        client: &mut common::TestClient,
        version: i32,
        how: &str,
        differences: &mut Vec<String>,
    ) {
        for file in self.files {
            self.open(client, file, version).await;
        }
        for file in self.files {
            self.compare(client, file, how, differences).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_publishes_what_the_command_line_reports_for_each_file_opened_alone_or_together()
{
    let mut differences = Vec::new();
    for project in projects() {
        let name = project.file_name().unwrap().to_string_lossy().into_owned();
        let (_tmp, root) = copied(&project);
        let whole = check(&root, &root, &["."]);
        let mut files = Vec::new();
        python_files(&root, &root, &mut files);
        files.sort();
        let (mut child, mut client) = served(&root, &name, Value::Null).await;
        let compared = Compared {
            name: &name,
            root: &root,
            files: &files,
            whole: &whole,
        };
        compared
            .alone_then_all(&mut client, 1, "", &mut differences)
            .await;
        client.shutdown_and_exit().await;
        let _ = child.wait().await;
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}

/// The projects whose entrypoints the tracer runs, each with a file whose save in the editor
/// traces every entrypoint of the project (each reaches it).
const TRACED: &[(&str, &str)] = &[
    ("export_script", "mymodels/head.py"),
    ("dims_elsewhere", "pkg/model.py"),
    ("three_files", "mymodels/helpers.py"),
];

fn traced_projects() -> impl Iterator<Item = (PathBuf, &'static str)> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects");
    TRACED
        .iter()
        .map(move |(name, saved)| (fixtures.join(name), *saved))
}

/// Whether the tracer's findings are in `answer`: the comparison after a trace compares them.
fn has_traced_findings(answer: &Answer) -> bool {
    answer
        .values()
        .flatten()
        .any(|said| said.contains("\"trace\"") || said.contains("\"static+trace\""))
}

#[test]
fn after_a_trace_every_project_file_gets_the_same_diagnostics_however_the_check_is_asked() {
    let Some(python) = torch::torch_python("same-answer-after-a-trace") else {
        return;
    };
    let _turn = torch::turn();
    let mut differences = Vec::new();
    for (project, _) in traced_projects() {
        let name = project.file_name().unwrap().to_string_lossy().into_owned();
        let (_tmp, root) = copied(&project);
        let whole = check_traced(&root, &root, &["."], python);
        assert!(has_traced_findings(&whole), "{name}: {whole:#?}");
        let mut files = Vec::new();
        python_files(&root, &root, &mut files);
        files.sort();
        // The asked files get what `check --trace .` says of them; a file the trace found a
        // problem in beside them is reported too, with all `check --trace .` says of it.
        ask_every_way(
            &root,
            &files,
            |cwd, paths| check_traced(cwd, &root, paths, python),
            |how, got, asked| {
                let beside: Answer = got
                    .iter()
                    .filter(|(file, _)| !file.starts_with(asked))
                    .map(|(file, said)| (file.clone(), said.clone()))
                    .collect();
                let want_beside: Answer = beside
                    .keys()
                    .filter_map(|file| Some((file.clone(), whole.get(file)?.clone())))
                    .collect();
                if under(&got, asked) != under(&whole, asked) || beside != want_beside {
                    differences.push(format!(
                        "{name}: check --trace {how}\n  got:  {got:#?}\n  want: {:#?}",
                        under(&whole, asked)
                    ));
                }
            },
        );
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}

/// The end of the next trace the server reports.
async fn trace_ended(client: &mut common::TestClient) {
    client
        .wait_for_within(std::time::Duration::from_secs(240), |message| {
            message["method"] == "$/progress"
                && message["params"]["token"]
                    .as_str()
                    .is_some_and(|token| token.starts_with("pt2lsp/trace"))
                && message["params"]["value"]["kind"] == "end"
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_save_traces_the_editor_publishes_what_check_trace_reports() {
    let Some(python) = torch::torch_python("same-answer-after-a-trace") else {
        return;
    };
    let mut differences = Vec::new();
    for (project, saved) in traced_projects() {
        let name = project.file_name().unwrap().to_string_lossy().into_owned();
        let (_tmp, root) = copied(&project);
        let whole = check_traced(&root, &root, &["."], python);
        let mut files = Vec::new();
        python_files(&root, &root, &mut files);
        files.sort();
        let options = json!({"python": python, "timeout": 120});
        let (mut child, mut client) = served(&root, &name, options).await;
        let compared = Compared {
            name: &name,
            root: &root,
            files: &files,
            whole: &whole,
        };
        for file in &files {
            compared.open(&client, file, 1).await;
        }
        client
            .notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": compared.uri(Path::new(saved))}}),
            )
            .await;
        trace_ended(&mut client).await;
        let how = format!("open while {saved} is saved and traced");
        for file in &files {
            compared
                .compare(&mut client, file, &how, &mut differences)
                .await;
        }
        // What the trace found stays with the project, not with the documents that were open.
        for file in &files {
            compared.close(&client, file).await;
        }
        compared
            .each_alone(
                &mut client,
                2,
                "opened alone after the trace",
                &mut differences,
            )
            .await;
        client.shutdown_and_exit().await;
        let _ = child.wait().await;
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}

/// A directory the enclosing project's `.gitignore` names (here a scratch copy of the project's
/// package, changed, with a script trying it) is no part of that project: it is a project of
/// its own. Its files read each other, never the enclosing project's `mymodels`, whether the
/// directory is checked, a file in it, a subdirectory, or the directory from the enclosing
/// root; and the editor says the same, opened on the directory or on the enclosing project.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_ignored_directory_is_a_project_of_its_own_however_asked() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ignored_directory");
    let (_tmp, outer) = copied(&data);
    // Written here: a `.gitignore` under `tests/data` would hide the test's own files from git.
    std::fs::write(outer.join(".gitignore"), "scratch/\n").unwrap();
    let scratch = outer.join("scratch");
    // The same files copied where nothing encloses them.
    let (_alone_tmp, alone) = copied(&data.join("scratch"));
    let want = check(&alone, &alone, &["."]);
    assert!(
        want.values().flatten().any(|said| said.contains("PT401")),
        "{want:#?}"
    );
    let whole = check(&scratch, &scratch, &["."]);
    assert_eq!(whole, want, "the directory checked where it is");

    let mut files = Vec::new();
    python_files(&scratch, &scratch, &mut files);
    files.sort();
    let mut differences = Vec::new();
    ask_every_way(
        &scratch,
        &files,
        |cwd, paths| check(cwd, &scratch, paths),
        |how, got, asked| {
            let want = under(&whole, asked);
            if got != want {
                differences.push(format!("check {how}\n  got:  {got:#?}\n  want: {want:#?}"));
            }
        },
    );
    for asked in [
        "scratch",
        "scratch/mymodels/heads.py",
        "scratch/export_net.py",
    ] {
        let got = check(&outer, &scratch, &[asked]);
        let want = under(&whole, Path::new(asked).strip_prefix("scratch").unwrap());
        if got != want {
            differences.push(format!(
                "check {asked} from the enclosing root\n  got:  {got:#?}\n  want: {want:#?}"
            ));
        }
    }

    let (mut child, mut client) = served(&scratch, "scratch", Value::Null).await;
    let compared = Compared {
        name: "scratch",
        root: &scratch,
        files: &files,
        whole: &whole,
    };
    compared
        .alone_then_all(&mut client, 1, "", &mut differences)
        .await;
    client.shutdown_and_exit().await;
    let _ = child.wait().await;

    // The editor opened on the enclosing project: the first file opened in the directory
    // makes it a project of its own, indexed, and then every file reads what the check does.
    let (mut child, mut client) = served(&outer, "outer", Value::Null).await;
    compared.open(&client, &files[0], 1).await;
    client.scanned().await;
    compared.close(&client, &files[0]).await;
    compared
        .alone_then_all(
            &mut client,
            2,
            " from the enclosing folder",
            &mut differences,
        )
        .await;
    client.shutdown_and_exit().await;
    let _ = child.wait().await;
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}
