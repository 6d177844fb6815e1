//! Checks the invariants of `docs/architecture.md` on the source tree itself, the way
//! rust-analyzer's `tidy.rs` does: a broken invariant fails `cargo test` with the sentence of the
//! architecture page it breaks.
//!
//! Each check is a function over a tree, so the checker is tested on small temporary trees that
//! break one invariant each (`each_check_fires_on_a_tree_that_breaks_it`); the real tree must
//! produce no violation beyond the recorded debt, and the debt may only shrink.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One broken invariant: which file, and which sentence of the architecture page.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    file: String,
    invariant: &'static str,
}

const PARSER_BEHIND_SYNTAX: &str = "The parser stays behind `syntax/`: only `syntax/` names `ruff_python_parser` or `ruff_python_ast`.";
const UTF16_AT_THE_EDGE: &str =
    "UTF-16 conversion happens only in `lsp/document.rs`: nothing else counts UTF-16 units.";
const SERVER_NOT_ON_CLI: &str = "`project/`, `lsp/`, `tracer/` and `api.rs` never import `cli`: the command line is built on the project layer, not the other way round.";
const NO_SOURCE_PATH_IN_TESTS: &str =
    "Tests use the crates' public API: no `#[path]` into a crate's `src/`.";
const SMALL_FILES: &str = "No source file is over 1,500 lines: a file does one job.";
const RULE_DOCS: &str = "Each rule file documents What it does / Why export fails / Example / Fix.";
const RULE_FIXTURES: &str =
    "Each rule the static pass reports has fixtures in `fixtures/rules/<CODE>/`.";
const NO_SKIPPED_TESTS: &str = "No `#[ignore]`, no `#[should_panic]`.";
const PORTABLE: &str = "The static analysis, the CLI and the server have no Unix-only code: `std::os::unix` only under `#[cfg(unix)]` (the tracer's transport and worker).";

const MAX_LINES: usize = 1500;

/// Files the tidy walk reads: Rust and Python sources of the product and its tests.
fn source_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                // Build output, environments, caches, vendored packages and the fuzzer's own
                // workspace are not the product's source.
                let skipped = name.starts_with('.')
                    || matches!(
                        name.as_ref(),
                        "target" | "node_modules" | "__pycache__" | "fixtures" | "fuzz"
                    );
                if !skipped {
                    stack.push(path);
                }
            } else if path
                .extension()
                .is_some_and(|ext| ext == "rs" || ext == "py")
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The code of a Rust file without its comments, so a sentence *about* an invariant (like the
/// ones in this file) is not taken for a breach of it.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .filter(|line| !line.trim().is_empty())
}

fn check_tree(root: &Path) -> BTreeSet<Violation> {
    let mut violations = BTreeSet::new();
    let mut add = |file: &str, invariant: &'static str| {
        violations.insert(Violation {
            file: file.to_owned(),
            invariant,
        });
    };
    for path in source_files(root) {
        let file = relative(root, &path);
        // This file spells every forbidden pattern in its own test cases.
        if file == "server/tests/tidy.rs" {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if text.lines().count() > MAX_LINES {
            add(&file, SMALL_FILES);
        }
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let code: Vec<&str> = code_lines(&text).collect();
        let names = |needle: &str| code.iter().any(|line| line.contains(needle));
        if file.starts_with("analyzer/src/")
            && !file.starts_with("analyzer/src/syntax/")
            && (names("ruff_python_parser") || names("ruff_python_ast"))
        {
            add(&file, PARSER_BEHIND_SYNTAX);
        }
        if file.starts_with("server/src/")
            && file != "server/src/lsp/document.rs"
            && (names("encode_utf16") || names("len_utf16"))
        {
            add(&file, UTF16_AT_THE_EDGE);
        }
        let on_server_side = file.starts_with("server/src/lsp/")
            || file.starts_with("server/src/tracer/")
            || file.starts_with("server/src/project/")
            || file == "server/src/api.rs";
        if on_server_side && names("crate::cli") {
            add(&file, SERVER_NOT_ON_CLI);
        }
        if file.contains("/tests/") && names("#[path") && names("src/") {
            let into_src = code
                .iter()
                .any(|line| line.contains("#[path") && line.contains("src/"));
            if into_src {
                add(&file, NO_SOURCE_PATH_IN_TESTS);
            }
        }
        if names("#[ignore") || names("#[should_panic") {
            add(&file, NO_SKIPPED_TESTS);
        }
        if (file.starts_with("server/src/") || file.starts_with("analyzer/src/"))
            && !unix_only_code_is_gated(&code)
        {
            add(&file, PORTABLE);
        }
        if file.starts_with("analyzer/src/rules/") && !file.ends_with("/mod.rs") {
            check_rule_file(root, &file, &text, &mut add);
        }
    }
    violations
}

/// Every line naming `std::os::unix` (or `std::os::fd`) directly follows a `#[cfg(unix)]`
/// line, or sits in a block that one opens (`#[cfg(unix)]` on a `mod` or `fn`).
fn unix_only_code_is_gated(code: &[&str]) -> bool {
    let mut gated_depth: Option<usize> = None;
    let mut depth = 0_usize;
    let mut previous = "";
    for line in code {
        let trimmed = line.trim();
        if gated_depth.is_none() && previous == "#[cfg(unix)]" && trimmed.ends_with('{') {
            gated_depth = Some(depth);
        }
        let names_unix = trimmed.contains("std::os::unix") || trimmed.contains("std::os::fd");
        if names_unix && gated_depth.is_none() && previous != "#[cfg(unix)]" {
            return false;
        }
        depth += trimmed.matches('{').count();
        depth = depth.saturating_sub(trimmed.matches('}').count());
        if gated_depth.is_some_and(|gated| depth <= gated) && trimmed.contains('}') {
            gated_depth = None;
        }
        if !trimmed.is_empty() {
            previous = trimmed;
        }
    }
    true
}

/// A rule file declares its code as `code: "PT101"` (or the like) and carries its page in its
/// doc comment; a rule the static pass reports also has fixtures.
fn check_rule_file(root: &Path, file: &str, text: &str, add: &mut impl FnMut(&str, &'static str)) {
    for section in ["What it does", "Why export fails", "Example", "Fix"] {
        if !text.contains(&format!("## {section}")) {
            add(file, RULE_DOCS);
            return;
        }
    }
    let Some(code) = rule_code(text) else {
        add(file, RULE_DOCS);
        return;
    };
    // Rules only the tracer reports (the exporter's own failures) have no static fixture.
    let tracer_only = text.contains("is_static: false");
    if !tracer_only && !root.join("fixtures/rules").join(&code).is_dir() {
        add(file, RULE_FIXTURES);
    }
}

/// The first `PT` followed by three digits in the file: the rule's code.
fn rule_code(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(4)).find_map(|start| {
        let candidate = &text.get(start..start + 5)?;
        let is_code = candidate.starts_with("PT")
            && candidate[2..].bytes().all(|byte| byte.is_ascii_digit())
            && !bytes.get(start + 5).is_some_and(u8::is_ascii_alphanumeric);
        is_code.then(|| (*candidate).to_owned())
    })
}

/// Known debt: breaches that predate the check. Each entry is removed when its file is fixed;
/// the test fails if an entry no longer breaks anything, so the list only shrinks.
const DEBT: &[(&str, &str)] = &[];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the server crate sits in the repository")
        .to_path_buf()
}

#[test]
fn the_tree_keeps_the_architecture_invariants() {
    let found = check_tree(&repository());
    let debt: BTreeSet<(&str, &str)> = DEBT.iter().copied().collect();
    let new: Vec<_> = found
        .iter()
        .filter(|violation| !debt.contains(&(violation.file.as_str(), violation.invariant)))
        .collect();
    let paid: Vec<_> = debt
        .iter()
        .filter(|(file, invariant)| {
            !found
                .iter()
                .any(|violation| violation.file == *file && violation.invariant == *invariant)
        })
        .collect();
    let mut report = String::new();
    for violation in &new {
        let _ = writeln!(report, "{}: {}", violation.file, violation.invariant);
    }
    for (file, invariant) in &paid {
        let _ = writeln!(
            report,
            "{file}: no longer breaks \"{invariant}\"; remove it from DEBT in server/tests/tidy.rs"
        );
    }
    assert!(
        report.is_empty(),
        "docs/architecture.md's invariants do not hold:\n{report}"
    );
}

/// Writes `files` under a fresh temporary directory.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("directories");
        std::fs::write(path, text).expect("a file");
    }
    dir
}

const GOOD_RULE: &str = "//! PT101\n/// ## What it does\n/// ## Why export fails\n/// ## Example\n/// ## Fix\nconst CODE: &str = \"PT101\";\n";

#[test]
fn a_clean_tree_has_no_violation() {
    let dir = tree(&[
        ("analyzer/src/syntax/mod.rs", "use ruff_python_ast;\n"),
        ("analyzer/src/rules/branch.rs", GOOD_RULE),
        ("fixtures/rules/PT101/a.py", "x = 1\n"),
        (
            "server/src/lsp/document.rs",
            "fn f(s: &str) { s.encode_utf16(); }\n",
        ),
        (
            "server/src/lsp/server.rs",
            "// Not crate::cli, not encode_utf16.\n",
        ),
        (
            "server/tests/support.rs",
            "#[path = \"support/run.rs\"]\nmod run;\n",
        ),
        (
            "server/src/tracer/a.rs",
            "#[cfg(unix)]\nuse std::os::unix::net::UnixStream;\n#[cfg(unix)]\nmod unix {\n    use std::os::unix::fs::PermissionsExt;\n}\n",
        ),
    ]);
    assert_eq!(check_tree(dir.path()), BTreeSet::new());
}

#[test]
fn each_check_fires_on_a_tree_that_breaks_it() {
    let long = "x = 1\n".repeat(MAX_LINES + 1);
    let cases: [(&str, &str, &str); 10] = [
        (
            "analyzer/src/semantic/a.rs",
            "use ruff_python_ast::visitor;\n",
            PARSER_BEHIND_SYNTAX,
        ),
        (
            "server/src/lsp/handlers/a.rs",
            "fn f(s: &str) -> usize { s.encode_utf16().count() }\n",
            UTF16_AT_THE_EDGE,
        ),
        (
            "server/src/tracer/a.rs",
            "use crate::cli::config::Config;\n",
            SERVER_NOT_ON_CLI,
        ),
        (
            "server/src/project/a.rs",
            "use crate::cli::output::FileReport;\n",
            SERVER_NOT_ON_CLI,
        ),
        (
            "server/tests/a.rs",
            "#[path = \"../src/lsp/mod.rs\"]\nmod lsp;\n",
            NO_SOURCE_PATH_IN_TESTS,
        ),
        (
            "server/python/pt2lsp_worker/trace.py",
            long.as_str(),
            SMALL_FILES,
        ),
        (
            "analyzer/src/rules/a.rs",
            "//! PT101\n/// ## What it does\nconst C: &str = \"PT101\";\n",
            RULE_DOCS,
        ),
        (
            "analyzer/src/rules/b.rs",
            &GOOD_RULE.replace("PT101", "PT999"),
            RULE_FIXTURES,
        ),
        (
            "analyzer/tests/a.rs",
            "#[test]\n#[ignore]\nfn t() {}\n",
            NO_SKIPPED_TESTS,
        ),
        (
            "server/src/lsp/a.rs",
            "#[cfg(unix)]\nuse std::os::unix::fs::PermissionsExt;\nuse std::os::unix::net::UnixStream;\n",
            PORTABLE,
        ),
    ];
    for (path, text, invariant) in cases {
        let dir = tree(&[(path, text), ("fixtures/rules/PT101/a.py", "x = 1\n")]);
        let found = check_tree(dir.path());
        let expected = Violation {
            file: path.to_owned(),
            invariant,
        };
        assert!(
            found.contains(&expected),
            "{path} should break \"{invariant}\", found {found:?}"
        );
    }
}
