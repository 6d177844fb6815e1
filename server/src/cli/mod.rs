//! The command line: `pt2lsp check` and `pt2lsp rule`, and the exit codes they share.
//!
//! Exit codes follow ruff's: 0 when no error-severity diagnostic was found, 1 when one was,
//! 2 when pt2lsp could not do what was asked (a bad flag, a missing path, an unreadable file, a
//! broken `pyproject.toml`). Messages for the user go to stderr; stdout carries only the report,
//! so `pt2lsp check --format json > report.json` is always valid JSON.

pub mod args;
pub mod check;
pub mod export;
pub mod fix;
pub mod merge;
pub mod output;
pub mod rule;
pub mod shard;
pub mod trace;
pub mod watch;

use std::process::ExitCode;

/// How a command ended, mapped onto the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Nothing at error severity: exit 0.
    Success,
    /// At least one error-severity diagnostic: exit 1.
    Failure,
    /// Usage or I/O problem: exit 2.
    Error,
}

impl ExitStatus {
    /// The process exit code: 0, 1 or 2.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(status.code())
    }
}

pub use pt2lsp_project::{report_error, warn};
