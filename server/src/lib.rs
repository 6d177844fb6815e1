//! `pt2lsp`: the command-line checker and language server for torch.export problems.
//!
//! The top of the layers: the command line (`cli`) and the Python API (`api`), on the project
//! model (`pt2lsp_project`), the tracer (`pt2lsp_tracer`) and the language server
//! (`pt2lsp_lsp`). `main.rs` and the Python package's entry point both call [`run`] with their
//! command line, so there is one `pt2lsp` whichever way it was installed.

pub mod api;
mod cli;

pub use pt2lsp_project::{self as project, notebook};

/// The LSP position mapping, reachable by the fuzz targets in `fuzz/`. Not an API: nothing
/// outside this repository may depend on it.
#[doc(hidden)]
pub mod fuzzing {
    pub use pt2lsp_lsp::document::{Document, TextPositions};
    pub use pt2lsp_lsp::ls_types::{Position, Range, TextDocumentContentChangeEvent};
}

/// The language server on any pair of streams, for the server's integration tests
/// (`server/tests/lsp*.rs`), which run it in process. Not an API either.
#[doc(hidden)]
pub mod in_process {
    pub use pt2lsp_lsp::document::Document;
    pub use pt2lsp_lsp::serve;
}

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use cli::ExitStatus;
use cli::args::{Cli, Command};

/// Runs `pt2lsp` with `args` (the program name first, as `std::env::args_os` gives them) and
/// returns its exit status.
pub fn run(args: Vec<OsString>) -> ExitCode {
    ExitCode::from(run_to_code(args))
}

/// [`run`], with the exit status as a number: the Python package's `pt2lsp` command runs in
/// its interpreter's process and hands the number to `sys.exit`. It never exits the process
/// itself (a usage error or `--help` returns 2 or 0 like any other outcome) and flushes
/// stdout before it returns, since no Rust runtime does it at the end of a Python process.
pub fn run_to_code(args: Vec<OsString>) -> u8 {
    let code = command_status(args);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    code
}

fn command_status(args: Vec<OsString>) -> u8 {
    let cli = match Cli::try_parse_from(cli::args::rewrite_check_flag(args)) {
        Ok(cli) => cli,
        Err(error) => {
            // `--help` and `--version` print to stdout and succeed (0); usage errors go to
            // stderr (2), as `Cli::parse_from` would do before exiting the process.
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(2);
        }
    };
    let result = match &cli.command {
        Command::Check(args) => cli::check::run(args),
        Command::Rule(args) => cli::rule::run(args),
        Command::Export(args) => cli::export::run(args),
        Command::Merge(args) => cli::merge::run(args),
        Command::Serve => {
            // LSP asks for exit status 1 when the client exits without `shutdown`; that is
            // the only way `run` fails once the server started, so it is not a usage error.
            return match pt2lsp_lsp::run() {
                Ok(()) => ExitStatus::Success.code(),
                Err(error) => {
                    eprintln!("error: {error:#}");
                    ExitStatus::Failure.code()
                }
            };
        }
    };
    match result {
        Ok(status) => status.code(),
        Err(error) => {
            // `{:#}` prints the whole context chain on one line: "cannot read x.py: Permission denied".
            eprintln!("error: {error:#}");
            ExitStatus::Error.code()
        }
    }
}
