//! Which Python interpreter runs the worker: the user's, since the model's imports and torch
//! live in their environment.

use std::path::{Path, PathBuf};

/// `--python` (or the editor's setting), else `python` from `[tool.pt2lsp]` (relative to the
/// configuration file's directory), else `$VIRTUAL_ENV/bin/python`, else `python3` on PATH.
pub fn interpreter(
    explicit: Option<&Path>,
    configured: Option<&str>,
    config_dir: Option<&Path>,
    virtual_env: Option<&Path>,
) -> PathBuf {
    if let Some(path) = explicit {
        return path.to_path_buf();
    }
    if let Some(configured) = configured.filter(|text| !text.trim().is_empty()) {
        let path = Path::new(configured);
        // A bare name (`python3.11`) is looked up on PATH, like a shell would.
        if path.components().count() == 1 || path.is_absolute() {
            return path.to_path_buf();
        }
        return match config_dir {
            Some(dir) => dir.join(path),
            None => path.to_path_buf(),
        };
    }
    if let Some(env) = virtual_env.filter(|env| !env.as_os_str().is_empty()) {
        let python = env.join("bin").join("python");
        if python.exists() {
            return python;
        }
    }
    PathBuf::from("python3")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_then_the_config_then_the_virtualenv() {
        let venv = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(venv.path().join("bin")).unwrap();
        std::fs::write(venv.path().join("bin/python"), "").unwrap();
        let flag = Path::new("/opt/py/bin/python");
        let project = Path::new("/work/project");
        assert_eq!(
            interpreter(Some(flag), Some(".venv/bin/python"), Some(project), None),
            flag
        );
        assert_eq!(
            interpreter(None, Some(".venv/bin/python"), Some(project), None),
            project.join(".venv/bin/python")
        );
        assert_eq!(
            interpreter(None, Some("python3.11"), Some(project), None),
            Path::new("python3.11")
        );
        assert_eq!(
            interpreter(None, None, None, Some(venv.path())),
            venv.path().join("bin/python")
        );
        assert_eq!(interpreter(None, None, None, None), Path::new("python3"));
    }
}
