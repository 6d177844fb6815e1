//! The workspace's Python files: discovery, dotted module names and summaries for the index.
//!
//! The CLI has its own walker; this one stays inside `lsp/` so the server can be built and
//! tested on its own, and it only needs the small part of that job the index needs.

use std::path::{Path, PathBuf};

use pt2lsp_analyzer::{ModuleSummary, summarize};

/// Files larger than this are not summarised: no hand-written model file is this big, and a
/// generated one would only slow the scan down.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Where a file sits in its package, as the analyzer wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModulePlace {
    pub module: String,
    pub is_package: bool,
}

/// The dotted module name of a Python file: its stem, prefixed by every enclosing directory
/// that is a regular package (holds an `__init__.py`). `None` for names Python cannot import.
pub fn module_place(path: &Path) -> Option<ModulePlace> {
    let stem = path.file_stem()?.to_str()?;
    let is_package = stem == "__init__";
    let mut parts = Vec::new();
    if !is_package {
        parts.push(stem);
    }
    let mut dir = path.parent();
    while let Some(current) = dir {
        if !current.join("__init__.py").is_file() {
            break;
        }
        parts.push(current.file_name()?.to_str()?);
        dir = current.parent();
    }
    if parts.is_empty() || !parts.iter().all(|part| is_identifier(part)) {
        return None;
    }
    parts.reverse();
    Some(ModulePlace {
        module: parts.join("."),
        is_package,
    })
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

pub fn is_python(path: &Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext == "py" || ext == "pyi")
}

/// Every Python file under `root`, honouring `.gitignore` and hidden directories as git does.
pub fn python_files(root: &Path) -> Vec<PathBuf> {
    ignore::WalkBuilder::new(root)
        .build()
        .filter_map(|entry| match entry {
            Ok(entry) => Some(entry),
            Err(error) => {
                super::log_stderr(&format!("workspace scan: {error}"));
                None
            }
        })
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .map(ignore::DirEntry::into_path)
        .filter(|path| is_python(path))
        .collect()
}

/// Reads and summarises one file; `None` (with a line on stderr) for files that cannot be read,
/// are not UTF-8, are too large, or have no importable name.
pub fn summarize_file(path: &Path) -> Option<ModuleSummary> {
    let place = module_place(path)?;
    let size = std::fs::metadata(path).ok()?.len();
    if size > MAX_FILE_BYTES {
        super::log_stderr(&format!(
            "{}: {size} bytes, too large to index",
            path.display()
        ));
        return None;
    }
    match std::fs::read_to_string(path) {
        Ok(text) => Some(summarize(&text, &place.module)),
        Err(error) => {
            super::log_stderr(&format!("{}: not indexed: {error}", path.display()));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_follow_packages() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("models").join("blocks");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(dir.path().join("models/__init__.py"), "").unwrap();
        std::fs::write(package.join("__init__.py"), "").unwrap();
        let place = |path: &Path| module_place(path).map(|place| (place.module, place.is_package));
        assert_eq!(
            place(&package.join("attn.py")),
            Some(("models.blocks.attn".to_owned(), false))
        );
        assert_eq!(
            place(&package.join("__init__.py")),
            Some(("models.blocks".to_owned(), true))
        );
        assert_eq!(
            place(&dir.path().join("train.py")),
            Some(("train".to_owned(), false))
        );
        assert_eq!(place(&dir.path().join("my-script.py")), None);
    }
}
