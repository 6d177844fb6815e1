//! Inputs that once crashed or stalled the analyzer, and generated code at the extremes of
//! nesting and size: every one must be analysed, in both export modes, without a panic or a
//! stack overflow, with ranges that name whole characters and fixes that keep the syntax.
//!
//! `fuzz_regressions/` holds what `cargo fuzz` found (fuzz/README.md): adding a crasher is
//! adding a file. The generated cases stand for issue 8's "thousands of nested parentheses or
//! blocks and very long lines". Like the CLI and the server, the analysis runs on a thread with
//! a 512 MiB stack, since the parser and the interpreter recurse on the tree; their speed is
//! measured in bench/, not asserted here.

use std::path::{Path, PathBuf};

use pt2lsp_analyzer::{
    FixMode, Report, Rule, Settings, SourceFile, TextRange, WorkspaceIndex, apply_fixes,
    check_file, compatible_fixes, summarize,
};

/// The analysis stack of `pt2lsp check` and `pt2lsp serve`.
const ANALYSIS_STACK_BYTES: usize = 512 << 20;

const MODEL_HEAD: &str = "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n";
const MODEL_TAIL: &str = "\n\nmodel = M()\nexample_args = (torch.randn(3),)\n";

/// `part(i)` for every `i` below `n`, one after the other.
fn concatenated(n: usize, part: impl Fn(usize) -> String) -> String {
    (0..n).map(part).collect()
}

/// Generated inputs: (name, text).
fn generated() -> Vec<(&'static str, String)> {
    let n = 5_000;
    let indented = |prefix: &str, line: &dyn Fn(usize) -> String, last: &str| {
        let mut text = prefix.to_owned();
        for depth in 0..n {
            text.push_str(&" ".repeat(depth));
            text.push_str(&line(depth));
        }
        text.push_str(&" ".repeat(n));
        text.push_str(last);
        text
    };
    vec![
        (
            "nested parentheses",
            format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n)),
        ),
        ("unclosed parentheses", format!("x = {}\n", "(".repeat(n))),
        (
            "nested lists and dicts",
            format!("x = {}{}\n", "[{1: ".repeat(n), "}]".repeat(n)),
        ),
        (
            "long sum",
            format!("x = {}\n", vec!["a"; 4 * n].join(" + ")),
        ),
        ("nested lambdas", format!("f = {}1\n", "lambda: ".repeat(n))),
        ("unary chain", format!("x = {}1\n", "-".repeat(n))),
        ("not chain", format!("x = {}x\n", "not ".repeat(n))),
        ("attribute chain", format!("x = a{}\n", ".b".repeat(n))),
        ("subscript chain", format!("x = a{}\n", "[0]".repeat(n))),
        (
            "method chain in forward",
            format!(
                "{MODEL_HEAD}        return x{}{MODEL_TAIL}",
                ".relu()".repeat(n)
            ),
        ),
        (
            "ternary chain in forward",
            format!(
                "{MODEL_HEAD}        return {}{MODEL_TAIL}",
                vec!["x"; n].join(" if x.sum() > 0 else ")
            ),
        ),
        (
            "and chain in forward",
            format!(
                "{MODEL_HEAD}        if {}:\n            return x\n        return x{MODEL_TAIL}",
                vec!["x.sum() > 0"; n].join(" and ")
            ),
        ),
        // Each `if` is on a tensor, so each is PT101 with a branch rewrite: building those
        // must not walk the body below every one of them (quadratic in depth).
        (
            "nested ifs in forward",
            indented(
                MODEL_HEAD,
                &|depth| format!("        if x.sum() > {depth}:\n"),
                "        x = x.item()\n",
            ) + "        return x"
                + MODEL_TAIL,
        ),
        (
            "nested functions",
            indented("", &|depth| format!("def f{depth}(x):\n"), "return x\n"),
        ),
        (
            "nested module classes",
            indented(
                "import torch\n",
                &|depth| format!("class C{depth}(torch.nn.Module):\n"),
                "def forward(self, x):\n",
            ) + &" ".repeat(n + 1)
                + "return x.item()\n",
        ),
        (
            "nested with and try",
            indented(
                "",
                &|depth| {
                    if depth % 2 == 0 {
                        "with a:\n".to_owned()
                    } else {
                        "try:\n".to_owned()
                    }
                },
                "pass\n",
            ),
        ),
        (
            "many statements in forward",
            format!(
                "{MODEL_HEAD}{}        return x{MODEL_TAIL}",
                concatenated(n, |i| format!(
                    "        x = x * {i}\n        if x.shape[0] > {i}:\n            x = x.item()\n"
                ))
            ),
        ),
        (
            "functions calling each other",
            concatenated(n, |i| {
                format!(
                    "def f{i}(x):\n    if x.sum() > 0:\n        return f{}(x)\n    return x\n",
                    i + 1
                )
            }) + &format!(
                "def f{n}(x):\n    return x\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return f0(x)\n"
            ) + MODEL_TAIL,
        ),
        (
            "class chain declared in reverse",
            concatenated(n, |i| {
                format!(
                    "class C{i}(C{}):\n    def forward(self, x):\n        return x * self.w\n\n",
                    i + 1
                )
            }) + &format!("import torch\nclass C{n}(torch.nn.Module):\n    w = 1\n"),
        ),
        (
            "one very long line",
            format!("x = '{}'\ny = 1 +\n", "é😀".repeat(200_000)),
        ),
    ]
}

/// The kept crashers, sorted, as (file name, bytes).
fn crashers() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{} is not readable: {error}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_none_or(|ext| ext != "md"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect()
}

fn on_analysis_stack(name: &str, work: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.to_owned())
        .stack_size(ANALYSIS_STACK_BYTES)
        .spawn(work)
        .unwrap()
        .join()
        .unwrap_or_else(|_| panic!("analysing {name} panicked"));
}

fn has_syntax_error(report: &Report) -> bool {
    report
        .diagnostics
        .iter()
        .any(|diagnostic| diagnostic.rule == Rule::SyntaxError)
}

fn assert_names_characters(name: &str, text: &str, range: TextRange) {
    let (start, end) = (range.start().to_usize(), range.end().to_usize());
    assert!(
        end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end),
        "{name}: range {range:?} does not name whole characters of a {}-byte text",
        text.len()
    );
}

/// What the fuzz target `check_bytes` asserts, on one input.
fn analyse(name: &str, text: &str) {
    let strict = Settings {
        strict: true,
        ..Settings::default()
    };
    for settings in [Settings::default(), strict] {
        let report = check_file(
            SourceFile::detached(text),
            &settings,
            &WorkspaceIndex::default(),
        );
        for diagnostic in &report.diagnostics {
            assert_names_characters(name, text, diagnostic.range);
            for edit in diagnostic.fix.iter().flat_map(|fix| &fix.edits) {
                assert_names_characters(name, text, edit.range);
            }
        }
        for mode in [FixMode::Safe, FixMode::Unsafe] {
            let chosen = compatible_fixes(&report.diagnostics, mode);
            if chosen.is_empty() {
                continue;
            }
            let fixed = apply_fixes(text, &chosen);
            let after = check_file(
                SourceFile::detached(&fixed),
                &settings,
                &WorkspaceIndex::default(),
            );
            assert!(
                has_syntax_error(&report) || !has_syntax_error(&after),
                "{name}: {mode:?} fixes broke the syntax:\n{fixed}"
            );
        }
    }
    let index = WorkspaceIndex::new(&[summarize(text, "fuzzed.model", false)]);
    let placed = SourceFile {
        text,
        module: Some("fuzzed.model"),
        is_package: false,
        namespace: None,
    };
    check_file(placed, &Settings::default(), &index);
}

#[test]
fn fuzz_crashers_deep_nesting_and_long_lines_are_analysed() {
    let generated = generated()
        .into_iter()
        .map(|(name, text)| (name.to_owned(), text));
    let kept = crashers()
        .into_iter()
        .map(|(name, bytes)| (name, String::from_utf8_lossy(&bytes).into_owned()));
    for (name, text) in generated.chain(kept) {
        let thread = name.clone();
        on_analysis_stack(&thread, move || analyse(&name, &text));
    }
}
