//! Fuzz target: the whole-program analysis on a workspace of up to five files.
//!
//! The input is the files' texts separated by NUL bytes, in the order of [`MODULES`]: a package
//! `pkg` with three modules and an entry file `export_model.py` that may import them. Every file
//! is summarised, the index built with the texts as its sources (as the CLI does), and every
//! file checked against it, in both export modes. Analysis must not panic; every diagnostic,
//! fix edit and related location must name whole characters of its own file; a related
//! location must be in the workspace.

#![no_main]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use pt2lsp_analyzer::{
    ModuleSource, Report, Settings, SourceFile, TextRange, WorkspaceIndex, WorkspaceSources,
    check_file, summarize,
};

/// The stack the CLI and the server give every analysis.
const ANALYSIS_STACK_BYTES: usize = 512 << 20;

/// The workspace's modules, in input order: (dotted name, path, is a package's `__init__`).
const MODULES: &[(&str, &str, bool)] = &[
    ("export_model", "export_model.py", false),
    ("pkg", "pkg/__init__.py", true),
    ("pkg.net", "pkg/net.py", false),
    ("pkg.helpers", "pkg/helpers.py", false),
    ("pkg.heads", "pkg/heads.py", false),
];

struct Texts(HashMap<&'static str, (Arc<str>, bool, PathBuf)>);

impl WorkspaceSources for Texts {
    fn source(&self, module: &str) -> Option<ModuleSource> {
        let (text, is_package, path) = self.0.get(module)?;
        Some(ModuleSource {
            text: Arc::clone(text),
            is_package: *is_package,
            path: path.clone(),
        })
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    std::thread::Builder::new()
        .stack_size(ANALYSIS_STACK_BYTES)
        .spawn(move || analyse(&text))
        .expect("spawning the analysis thread")
        .join()
        // libfuzzer-sys aborts on the panic itself, in whichever thread; this only forwards it.
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
});

fn analyse(input: &str) {
    let texts: Vec<&str> = input.splitn(MODULES.len(), '\0').collect();
    let files: Vec<(&str, &str, bool, &str)> = MODULES
        .iter()
        .zip(&texts)
        .map(|((module, path, is_package), text)| (*module, *path, *is_package, *text))
        .collect();
    let summaries: Vec<_> = files
        .iter()
        .map(|(module, _, _, text)| summarize(text, module, false))
        .collect();
    let sources = Texts(
        files
            .iter()
            .map(|(module, path, is_package, text)| {
                (*module, (Arc::from(*text), *is_package, PathBuf::from(path)))
            })
            .collect(),
    );
    let by_path: HashMap<&Path, &str> = files
        .iter()
        .map(|(_, path, _, text)| (Path::new(*path), *text))
        .collect();
    for strict in [false, true] {
        let settings = Settings {
            strict,
            ..Settings::default()
        };
        let index = WorkspaceIndex::new(&summaries)
            .with_sources(Arc::new(Texts(sources.0.clone())));
        for (module, _, is_package, text) in &files {
            let file = SourceFile {
                text,
                module: Some(module),
                is_package: *is_package,
                namespace: None,
            };
            check_report(text, &check_file(file, &settings, &index), &by_path);
        }
    }
}

fn check_report(text: &str, report: &Report, workspace: &HashMap<&Path, &str>) {
    for diagnostic in &report.diagnostics {
        assert_names_characters(text, diagnostic.range, "diagnostic");
        for edit in diagnostic.fix.iter().flat_map(|fix| &fix.edits) {
            assert_names_characters(text, edit.range, "fix edit");
        }
        for related in &diagnostic.related {
            let Some(other) = workspace.get(related.file.as_path()) else {
                panic!("a related location outside the workspace: {related:?}");
            };
            // Python ends lines at `\n`, `\r\n` and a lone `\r`, and so do the analyzer and LSP.
            let lines = other.replace("\r\n", "\n").split(['\n', '\r']).count();
            assert!(
                related.line >= 1 && usize::try_from(related.line).unwrap() <= lines,
                "related line {} of {} (which has {lines} lines)",
                related.line,
                related.file.display()
            );
            assert!(related.column >= 1, "related column {}", related.column);
        }
    }
}

fn assert_names_characters(text: &str, range: TextRange, what: &str) {
    let (start, end) = (range.start().to_usize(), range.end().to_usize());
    assert!(
        end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end),
        "{what} range {range:?} does not name whole characters of a {}-byte text",
        text.len()
    );
}
