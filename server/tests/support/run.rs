//! One finished run of the `pt2lsp` binary, shared by the CLI and tracer tests.

use std::process::Command;

/// What one run of the binary produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `command` (the binary with its arguments and environment) to completion.
pub fn run(command: &mut Command) -> Run {
    let output = command.output().expect("pt2lsp runs");
    Run {
        code: output.status.code().expect("pt2lsp exits by itself"),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}
