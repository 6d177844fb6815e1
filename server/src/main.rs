//! The `pt2lsp` binary: a thin shell over [`pt2lsp::run`].

use std::process::ExitCode;

// The analyzer allocates and frees many small syntax-tree nodes; mimalloc handles that markedly
// faster than glibc's malloc (bench/corpus.py).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    pt2lsp::run(std::env::args_os().collect())
}
