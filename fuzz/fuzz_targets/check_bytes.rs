//! Fuzz target: `pt2lsp_analyzer` on arbitrary bytes, in both export modes, with and without a
//! workspace, and the fixes it offers.
//!
//! Analysis must never panic, every range it reports must name whole characters of the text,
//! and applying its fixes must not turn a file without syntax errors into one with them.
//! Bytes that are not UTF-8 are decoded lossily, as the CLI and the editor never hand the
//! analyzer anything but a `str`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pt2lsp_analyzer::{
    FixMode, Report, Rule, Settings, SourceFile, TextRange, WorkspaceIndex, apply_fixes,
    check_file, compatible_fixes, summarize,
};

/// The stack the CLI and the server give every analysis (`lsp::THREAD_STACK_BYTES`): the parser
/// and the interpreter recurse on the tree, and the fuzzer must find what fails there, not what
/// fails on libFuzzer's smaller main-thread stack.
const ANALYSIS_STACK_BYTES: usize = 512 << 20;

/// The module name the workspace pass gives the file, so relative imports resolve.
const MODULE: &str = "fuzzed.model";

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

fn analyse(text: &str) {
    let lenient = Settings::default();
    let strict = Settings {
        strict: true,
        ..Settings::default()
    };
    let detached = SourceFile::detached(text);
    let report = check_file(detached, &lenient, &WorkspaceIndex::default());
    check_report(text, &report);
    check_fixes(text, &report, &lenient);
    let report = check_file(detached, &strict, &WorkspaceIndex::default());
    check_report(text, &report);
    check_fixes(text, &report, &strict);

    // The workspace pass: the file's own summary resolved into an index, then the file checked
    // against it, as `pt2lsp check` does for files whose classes have bases elsewhere.
    let summary = summarize(text, MODULE, false);
    let index = WorkspaceIndex::new(&[summary]);
    let placed = SourceFile {
        text,
        module: Some(MODULE),
        is_package: false,
        namespace: None,
    };
    check_report(text, &check_file(placed, &lenient, &index));
}

fn check_report(text: &str, report: &Report) {
    for diagnostic in &report.diagnostics {
        assert_names_characters(text, diagnostic.range, "diagnostic");
        for edit in diagnostic.fix.iter().flat_map(|fix| &fix.edits) {
            assert_names_characters(text, edit.range, "fix edit");
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

fn check_fixes(text: &str, report: &Report, settings: &Settings) {
    let had_syntax_error = has_syntax_error(report);
    for mode in [FixMode::Safe, FixMode::Unsafe] {
        let fixes = compatible_fixes(&report.diagnostics, mode);
        if fixes.is_empty() {
            continue;
        }
        let fixed = apply_fixes(text, &fixes);
        let after = check_file(
            SourceFile::detached(&fixed),
            settings,
            &WorkspaceIndex::default(),
        );
        check_report(&fixed, &after);
        assert!(
            had_syntax_error || !has_syntax_error(&after),
            "{mode:?} fixes broke the syntax: {:?}\n--- fixed text ---\n{fixed}",
            after
                .diagnostics
                .iter()
                .filter(|d| d.rule == Rule::SyntaxError)
                .collect::<Vec<_>>()
        );
    }
}

fn has_syntax_error(report: &Report) -> bool {
    report
        .diagnostics
        .iter()
        .any(|diagnostic| diagnostic.rule == Rule::SyntaxError)
}
