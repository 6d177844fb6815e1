//! Which Python interpreter is the user's: the tracer's worker runs it, since the model's
//! imports and torch live in its environment, and the static check follows calls into the
//! libraries installed for it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Set by `python -m pt2lsp` to the interpreter that ran it, so the tracer defaults to the
/// Python the package was installed in even where the binary sits outside a virtualenv
/// (`pip install --user` puts it in `~/.local/bin`).
pub const DEFAULT_PYTHON_ENV: &str = "PT2LSP_DEFAULT_PYTHON";

/// `--python` (or the editor's setting), else `python` from `[tool.pt2lsp]` (relative to the
/// configuration file's directory), else the Python pt2lsp was pip-installed into (see
/// [`installed_interpreter`]), else `$VIRTUAL_ENV/bin/python`, else `python3` on PATH.
pub fn interpreter(
    explicit: Option<&Path>,
    configured: Option<&str>,
    config_dir: Option<&Path>,
    virtual_env: Option<&Path>,
) -> PathBuf {
    configured_interpreter(explicit, configured, config_dir, virtual_env)
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// [`interpreter`] when something names one (the flag, the configuration, the environment
/// pt2lsp was installed into, `$VIRTUAL_ENV`); `None` rather than whatever `python3` is on
/// PATH. The static check follows calls into installed libraries only for an interpreter
/// the user chose.
pub fn configured_interpreter(
    explicit: Option<&Path>,
    configured: Option<&str>,
    config_dir: Option<&Path>,
    virtual_env: Option<&Path>,
) -> Option<PathBuf> {
    let installed = installed_interpreter(
        std::env::var_os(DEFAULT_PYTHON_ENV),
        std::env::current_exe().ok().as_deref(),
    );
    choose(
        explicit,
        configured,
        config_dir,
        installed.as_deref(),
        virtual_env,
    )
}

/// The interpreter of the Python environment pt2lsp was installed into by pip, if it was:
/// `$PT2LSP_DEFAULT_PYTHON` when set, else the `python` (or `python3`) beside the running
/// binary. pip puts the binary in the environment's scripts directory, next to its interpreter
/// (`.venv/bin/pt2lsp` beside `.venv/bin/python`); `cargo install` and a build tree have no
/// interpreter beside them. It comes before `$VIRTUAL_ENV`: a user who installed pt2lsp
/// with torch into one environment expects that environment, whichever one is active.
pub fn installed_interpreter(
    default_python: Option<OsString>,
    current_exe: Option<&Path>,
) -> Option<PathBuf> {
    if let Some(python) = default_python.filter(|value| !value.is_empty()) {
        return Some(PathBuf::from(python));
    }
    let scripts = current_exe?.parent()?;
    ["python", "python3"]
        .iter()
        .map(|name| scripts.join(name))
        // The venv's `python` is a symlink to the base interpreter: keep the link, since
        // running it through the venv's path is what selects the venv's site-packages.
        .find(|python| python.is_file())
}

fn choose(
    explicit: Option<&Path>,
    configured: Option<&str>,
    config_dir: Option<&Path>,
    installed: Option<&Path>,
    virtual_env: Option<&Path>,
) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return Some(path.to_path_buf());
    }
    if let Some(configured) = configured.filter(|text| !text.trim().is_empty()) {
        let path = Path::new(configured);
        // A bare name (`python3.11`) is looked up on PATH, like a shell would.
        if path.components().count() == 1 || path.is_absolute() {
            return Some(path.to_path_buf());
        }
        return Some(match config_dir {
            Some(dir) => dir.join(path),
            None => path.to_path_buf(),
        });
    }
    if let Some(installed) = installed {
        return Some(installed.to_path_buf());
    }
    if let Some(env) = virtual_env.filter(|env| !env.as_os_str().is_empty()) {
        let python = env.join("bin").join("python");
        if python.exists() {
            return Some(python);
        }
    }
    None
}

/// `python` itself when it names a path (`.venv/bin/python`), else the first executable of that
/// name on `PATH` (`python3`), as the operating system would start it; `None` when there is none.
pub fn on_path(python: &Path) -> Option<PathBuf> {
    if python.components().count() > 1 {
        return python.is_file().then(|| python.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(python))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_then_the_config_then_the_installed_python_then_the_virtualenv() {
        let venv = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(venv.path().join("bin")).unwrap();
        std::fs::write(venv.path().join("bin/python"), "").unwrap();
        let flag = Path::new("/opt/py/bin/python");
        let project = Path::new("/work/project");
        let installed = Path::new("/opt/tools/bin/python");
        assert_eq!(
            choose(
                Some(flag),
                Some(".venv/bin/python"),
                Some(project),
                Some(installed),
                None
            ),
            Some(flag.to_path_buf())
        );
        assert_eq!(
            choose(
                None,
                Some(".venv/bin/python"),
                Some(project),
                Some(installed),
                None
            ),
            Some(project.join(".venv/bin/python"))
        );
        assert_eq!(
            choose(None, Some("python3.11"), Some(project), None, None),
            Some(PathBuf::from("python3.11"))
        );
        assert_eq!(
            choose(None, None, None, Some(installed), Some(venv.path())),
            Some(installed.to_path_buf())
        );
        assert_eq!(
            choose(None, None, None, None, Some(venv.path())),
            Some(venv.path().join("bin/python"))
        );
        // Nothing names one: `interpreter` runs `python3` from PATH, and the static check does
        // not follow installed libraries.
        assert_eq!(choose(None, None, None, None, None), None);
    }

    #[test]
    fn a_binary_beside_an_interpreter_was_installed_with_it() {
        let env = tempfile::tempdir().unwrap();
        let bin = env.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let exe = bin.join("pt2lsp");
        std::fs::write(&exe, "").unwrap();
        // No interpreter beside it: a `cargo install` or a build tree.
        assert_eq!(installed_interpreter(None, Some(&exe)), None);

        std::fs::write(bin.join("python3"), "").unwrap();
        assert_eq!(
            installed_interpreter(None, Some(&exe)),
            Some(bin.join("python3"))
        );
        std::fs::write(bin.join("python"), "").unwrap();
        assert_eq!(
            installed_interpreter(None, Some(&exe)),
            Some(bin.join("python"))
        );
        // `python -m pt2lsp` names its interpreter, which wins over the neighbour.
        assert_eq!(
            installed_interpreter(Some("/usr/bin/python3.11".into()), Some(&exe)),
            Some(PathBuf::from("/usr/bin/python3.11"))
        );
        assert_eq!(
            installed_interpreter(Some(OsString::new()), Some(&exe)),
            Some(bin.join("python"))
        );
    }
}
