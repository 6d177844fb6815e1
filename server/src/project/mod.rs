//! The project: configuration (`pyproject.toml`'s `[tool.pt2lsp]`), the files to check, the
//! two-phase check of them against the workspace, and what it found per file. The command line
//! (`cli`), the language server (`lsp`), the tracer and the Python API (`api`) all build on it;
//! it depends on none of them.

pub mod check;
pub mod config;
pub mod report;
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
