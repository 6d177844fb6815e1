//! Same answer however asked: for every multi-file fixture project, copied to a directory of
//! its own (a `pyproject.toml` at its root, as a user's project has), each file's diagnostics,
//! fixes and related locations are the same from `check DIR`, from `check FILE` for each file
//! alone (as pre-commit passes them), from all files named in reverse order, from `check`
//! run inside each subdirectory, and from the language server (`pt2lsp serve` over stdio), each
//! file opened alone and then all of them. Static pass.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

mod common;
#[path = "support/run.rs"]
mod support;
#[path = "support/tree.rs"]
mod tree;

use support::run;

/// One file's diagnostics, each as the fields that must agree, in a stable order.
type Answer = BTreeMap<PathBuf, Vec<String>>;

fn check(cwd: &Path, root: &Path, args: &[&str]) -> Answer {
    let done = run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(["check", "--format", "json", "--exit-zero"])
        .args(args)
        .current_dir(cwd)
        .env("PT2LSP_NO_CACHE", "1")
        .env_remove("VIRTUAL_ENV"));
    assert_eq!(
        done.code,
        0,
        "check {args:?} in {}: {}",
        cwd.display(),
        done.stderr
    );
    let diagnostics: Vec<Value> = serde_json::from_str(&done.stdout).expect("JSON output");
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
            "{}:{} {} {} {} fix={} related={related:?}",
            diagnostic["line"],
            diagnostic["column"],
            diagnostic["code"],
            diagnostic["severity"],
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

/// The multi-file fixture projects.
fn projects() -> Vec<PathBuf> {
    let projects = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/projects");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&projects)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
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
        let mut differ = |how: String, got: Answer, want: Answer| {
            if got != want {
                differences.push(format!(
                    "{name}: {how}\n  got:  {got:#?}\n  want: {want:#?}"
                ));
            }
        };
        for file in &files {
            let alone = check(&root, &root, &[file.to_str().unwrap()]);
            differ(
                format!("check {}", file.display()),
                alone,
                under(&whole, file),
            );
        }
        let reversed: Vec<&str> = files
            .iter()
            .rev()
            .map(|file| file.to_str().unwrap())
            .collect();
        differ(
            "check with every file named, last first".to_owned(),
            check(&root, &root, &reversed),
            whole.clone(),
        );
        let mut directories: Vec<PathBuf> = files
            .iter()
            .filter_map(|file| file.parent().map(Path::to_path_buf))
            .filter(|dir| !dir.as_os_str().is_empty())
            .collect();
        directories.sort();
        directories.dedup();
        for dir in directories {
            differ(
                format!("check inside {}", dir.display()),
                check(&root.join(&dir), &root, &[]),
                under(&whole, &dir),
            );
        }
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
                    format!(
                        "{}:{}:{} {}",
                        relative(place["location"]["uri"].as_str().unwrap()).display(),
                        start["line"].as_u64().unwrap() + 1,
                        start["character"].as_u64().unwrap() + 1,
                        place["message"]
                    )
                })
                .collect();
            let start = &diagnostic["range"]["start"];
            format!(
                "{}:{} {} \"{severity}\" {} related={related:?}",
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
        let (mut child, mut client) = common::spawn_server(std::process::Stdio::null());
        // An editor that shows related locations (VS Code, Neovim) says so.
        let root_uri = common::file_uri(&root);
        let response = client
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": root_uri,
                    "workspaceFolders": [{"uri": root_uri, "name": name}],
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
        let want = |file: &Path| without_fixes(whole.get(file).map_or(&[][..], Vec::as_slice));
        // Each file alone, then closed.
        for file in &files {
            let uri = common::file_uri(&root.join(file));
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            client.open(&uri, 1, &text).await;
            let got = as_cli(&settled(&mut client, &uri).await, &root);
            if got != want(file) {
                differences.push(format!(
                    "{name}: {} opened alone\n  got:  {got:#?}\n  want: {:#?}",
                    file.display(),
                    want(file)
                ));
            }
            client
                .notify(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": uri}}),
                )
                .await;
        }
        // All of them open.
        for file in &files {
            let uri = common::file_uri(&root.join(file));
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            client.open(&uri, 2, &text).await;
        }
        for file in &files {
            let uri = common::file_uri(&root.join(file));
            let got = as_cli(&settled(&mut client, &uri).await, &root);
            if got != want(file) {
                differences.push(format!(
                    "{name}: {} with every file open\n  got:  {got:#?}\n  want: {:#?}",
                    file.display(),
                    want(file)
                ));
            }
        }
        client.shutdown_and_exit().await;
        let _ = child.wait().await;
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}
