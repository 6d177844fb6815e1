//! `pt2lsp`: the command-line checker and language server for torch.export problems.
//!
//! This file only parses the command line and dispatches: `check` and `rule` live in `cli`,
//! `serve` in `lsp`.

mod cli;
mod lsp;
mod tracer;

use std::process::ExitCode;

use clap::Parser;

use cli::ExitStatus;

// The analyzer allocates and frees many small syntax-tree nodes; mimalloc handles that markedly
// faster than glibc's malloc (bench/corpus.py).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use cli::args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse_from(cli::args::rewrite_check_flag(std::env::args_os().collect()));
    // `export` joins this match with the issue that brings it.
    let result = match &cli.command {
        Command::Check(args) => cli::check::run(args),
        Command::Rule(args) => cli::rule::run(args),
        Command::Serve => {
            // LSP asks for exit status 1 when the client exits without `shutdown`; that is
            // the only way `run` fails once the server started, so it is not a usage error.
            return match lsp::run() {
                Ok(()) => ExitStatus::Success.into(),
                Err(error) => {
                    eprintln!("error: {error:#}");
                    ExitStatus::Failure.into()
                }
            };
        }
    };
    match result {
        Ok(status) => status.into(),
        Err(error) => {
            // `{:#}` prints the whole context chain on one line: "cannot read x.py: Permission denied".
            eprintln!("error: {error:#}");
            ExitStatus::Error.into()
        }
    }
}
