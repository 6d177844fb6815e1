//! Headless Neovim as the client: `tests/nvim/diagnostics.lua` opens a broken file, sees its
//! diagnostic, fixes the line and sees it go; `tests/nvim/inlay_hints.lua` loads the plugin
//! (`editors/nvim`) and sees a tensor's shape as an inlay hint; `tests/nvim/export_target.lua`
//! completes `:Pt2Export`'s deployment targets (the configured one first) and, with torch,
//! writes a `.pte` with `:Pt2Export executorch`; `tests/nvim/trace_on_save.lua` writes a module
//! of a package that an export script reaches and sees the exporter's failures on the package's
//! lines. Fails, never skips, without nvim when `CI` is set.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/torch.rs"]
mod torch_support;

#[path = "support/tree.rs"]
mod tree;

const MODEL: &str = "import torch\n\n\nclass M(torch.nn.Module):  # 😀 漢字\n    def forward(self, x):\n        s = '😀漢字'\n        if x.sum() > 0:\n            return x\n        return -x\n";

/// Neovim on `PATH`; without it, a failure when `CI` is set and a note otherwise.
fn nvim() -> Option<PathBuf> {
    let found = find_nvim();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "nvim is not installed (Debian: apt-get install -y neovim) and CI is set"
        );
        eprintln!("nvim not found: skipping the Neovim test outside CI");
    }
    found
}

fn find_nvim() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("nvim"))
        .find(|candidate| candidate.is_file())
}

#[test]
fn neovim_shows_and_clears_a_data_dependent_branch() {
    let Some(nvim) = nvim() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/nvim/diagnostics.lua");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.py");
    // The data-dependent branch sits after lines of emoji and CJK: the diagnostic lands on the
    // right line only if the server's positions are right, and it goes away only if Neovim's
    // incremental edits are applied right.
    std::fs::write(&file, MODEL).unwrap();
    run(
        &nvim,
        &script,
        dir.path(),
        &[
            ("PT2LSP_FILE", file.as_os_str()),
            ("PT2LSP_CODE", "PT101".as_ref()),
            ("PT2LSP_LINE", "6".as_ref()),
            ("PT2LSP_FIXED_LINE", "        if True:".as_ref()),
        ],
    );
}

#[test]
fn neovim_shows_a_tensors_shape_as_an_inlay_hint() {
    let Some(nvim) = nvim() else { return };
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = repository.join("tests/nvim/inlay_hints.lua");
    let plugin = repository.join("editors/nvim");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("views.py");
    std::fs::copy(repository.join("fixtures/ok/shapes/views_ok.py"), &file).unwrap();
    // The hint after `heads = x.view(b, t, 4, c // 4)`.
    let text = std::fs::read_to_string(&file).unwrap();
    let line = text
        .lines()
        .position(|line| line.contains("heads = x.view("))
        .unwrap();
    run(
        &nvim,
        &script,
        dir.path(),
        &[
            ("PT2LSP_PLUGIN", plugin.as_os_str()),
            ("PT2LSP_FILE", file.as_os_str()),
            ("PT2LSP_LINE", line.to_string().as_ref()),
            ("PT2LSP_HINT", "[batch, seq, 4, 4]".as_ref()),
        ],
    );
}

#[test]
fn neovim_exports_to_a_target_named_on_the_command_line() {
    let Some(nvim) = nvim() else { return };
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = repository.join("tests/nvim/export_target.lua");
    let plugin = repository.join("editors/nvim");
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("pyproject.toml"),
        "[tool.pt2lsp]\ntargets = [\"executorch\"]\n",
    )
    .unwrap();
    let file = project.join("model.py");
    std::fs::copy(
        repository.join("fixtures/targets/executorch/mlp_delegated_ok.py"),
        &file,
    )
    .unwrap();
    // Without torch the completion is still checked; the export needs it (and fails the test
    // when `CI` is set and it is missing).
    let python = torch_support::torch_python("Neovim export")
        .map(|python| python.as_os_str().to_owned())
        .unwrap_or_default();
    let _turn = torch_support::turn();
    run_within(
        &nvim,
        &script,
        dir.path(),
        &[
            ("PT2LSP_PLUGIN", plugin.as_os_str()),
            ("PT2LSP_FILE", file.as_os_str()),
            ("PT2LSP_TRACE_PYTHON", python.as_os_str()),
            ("PT2LSP_NO_CACHE", "1".as_ref()),
        ],
        Duration::from_secs(300),
    );
}

/// Runs `script` in headless Neovim with `env`, started in `state` (as a user starts it in the
/// project) and its state kept there; fails on its failure.
fn run(nvim: &Path, script: &Path, state: &Path, env: &[(&str, &std::ffi::OsStr)]) {
    run_within(nvim, script, state, env, Duration::from_secs(90));
}

/// [`run`], killed after `limit`.
fn run_within(
    nvim: &Path,
    script: &Path,
    state: &Path,
    env: &[(&str, &std::ffi::OsStr)],
    limit: Duration,
) {
    let mut command = Command::new(nvim);
    command
        .current_dir(state)
        .args(["--headless", "--clean", "-n", "-c"])
        .arg(format!("luafile {}", script.display()))
        .env("PT2LSP_BIN", env!("CARGO_BIN_EXE_pt2lsp"))
        // Keep Neovim's log and state out of the user's home.
        .env("XDG_STATE_HOME", state)
        .env("XDG_CACHE_HOME", state)
        .env("XDG_DATA_HOME", state)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("nvim starts");
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "nvim exited with {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `fixtures/projects/export_script`, unchanged, in Neovim with the plugin: writing
/// `mymodels/head.py`, which the script reaches only through `from .head import Head`, traces
/// the script along its own code path to its export call; the failures land on the head's
/// line and on the backbone's, and the script's own `torch.export.save` never runs.
#[test]
fn neovim_save_of_a_package_module_traces_the_export_script() {
    let Some(nvim) = nvim() else { return };
    let Some(python) = torch_support::torch_python("Neovim trace on save") else {
        return;
    };
    let _turn = torch_support::turn();
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = repository.join("tests/nvim/trace_on_save.lua");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    tree::copy_tree(&repository.join("fixtures/projects/export_script"), &root);
    let head = root.join("mymodels/head.py");
    let backbone = root.join("mymodels/backbone.py");
    run_within(
        &nvim,
        &script,
        &root,
        &[
            ("PT2LSP_NO_CACHE", "1".as_ref()),
            ("PT2LSP_PLUGIN", repository.join("editors/nvim").as_os_str()),
            ("PT2LSP_PYTHON", python.as_os_str()),
            ("PT2LSP_FILE", head.as_os_str()),
            ("PT2LSP_OTHER", backbone.as_os_str()),
            // 0-based: `head.py:14` and `backbone.py:13` as `check --trace` reports them.
            ("PT2LSP_EXPECT", "PT101:13".as_ref()),
            ("PT2LSP_EXPECT_OTHER", "PT401:12".as_ref()),
        ],
        Duration::from_secs(240),
    );
    assert!(!root.join("classifier.pt2").exists());
}
