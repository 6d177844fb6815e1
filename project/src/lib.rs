//! The project: configuration (`pyproject.toml`'s `[tool.pt2lsp]`), the files to check, the
//! two-phase check of them against the workspace, and what it found per file. The command line
//! (`pt2lsp`), the language server (`pt2lsp_lsp`), the tracer (`pt2lsp_tracer`) and the Python
//! API all build on it; it depends on none of them, and the crate graph makes that so.

pub mod check;
pub mod config;
pub mod interpreter;
pub mod libraries;
pub mod notebook;
pub mod report;
pub mod schema;
pub mod table_problems;
pub mod table_programs;
pub mod tracing;
pub mod walk;

/// Prints a warning on stderr, where it cannot corrupt a machine-readable report (or the LSP
/// channel on stdout).
pub fn warn(message: &str) {
    eprintln!("warning: {message}");
}

/// Prints an error on stderr for a problem that does not stop the run (one unreadable file).
pub fn report_error(message: &str) {
    eprintln!("error: {message}");
}

/// The cache's directory in a project root when `cache-dir` does not say otherwise.
pub const DEFAULT_CACHE_DIRECTORY: &str = ".pt2lsp_cache";

/// `PT2LSP_NO_CACHE` set (to anything but empty or `0`): neither the CLI nor the language
/// server reads or writes the cache (traces, library summaries), as `--no-cache` does for one
/// run.
pub fn cache_disabled_by_environment() -> bool {
    std::env::var_os("PT2LSP_NO_CACHE").is_some_and(|value| !value.is_empty() && value != "0")
}

/// Creates the cache directory `dir` (`.pt2lsp_cache`: traces, installed libraries'
/// summaries) with a `.gitignore` of `*` and a `CACHEDIR.TAG`, so neither git nor backups keep
/// it.
pub fn prepare_cache_directory(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(
            &ignore,
            "# Created by pt2lsp: its cache, safe to delete.\n*\n",
        )?;
    }
    let tag = dir.join("CACHEDIR.TAG");
    if !tag.exists() {
        std::fs::write(
            &tag,
            "Signature: 8a477f597d28d172789f06886806bc55\n\
             # This file is a cache directory tag created by pt2lsp.\n\
             # For information about cache directory tags see https://bford.info/cachedir/\n",
        )?;
    }
    Ok(())
}
