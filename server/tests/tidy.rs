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
    "UTF-16 conversion happens only in `lsp/src/document.rs`: nothing else counts UTF-16 units.";
const LAYERS: &str = "Each crate depends only on crates below it: analyzer, project, tracer, lsp, the `pt2lsp` command line, the Python binding.";
const NO_SOURCE_PATH_IN_TESTS: &str =
    "Tests use the crates' public API: no `#[path]` into a crate's `src/`.";
const SMALL_FILES: &str = "No source file is over 1,500 lines: a file does one job.";
const RULE_DOCS: &str = "Each rule file documents What it does / Why export fails / Example / Fix.";
const RULE_DECLARED: &str = "Each file in `analyzer/src/rules/` declares one rule with `declare_rule!`, named as the file is: the registry is generated from those declarations.";
const RULE_LISTS: &str = "What lists the rules outside their files is generated from them: `docs/rules/` holds a page for each rule and no other, and the README's generated rules table has a row for each.";
const RULE_FIXTURES: &str =
    "Each rule the static pass reports has fixtures in `fixtures/rules/<CODE>/`.";
const NO_SKIPPED_TESTS: &str = "No `#[ignore]`, no `#[should_panic]`.";
const PORTABLE: &str = "The static analysis, the CLI and the server have no Unix-only code: `std::os::unix` only under `#[cfg(unix)]` (the tracer's transport and worker).";

const MODULE_CYCLES: &str = "No two top-level modules of a crate import each other, directly or through others: a crate's modules are layers too.";

const ONE_STDOUT_WRITER: &str = "Nothing writes to stdout but the CLI's report writer (`cli/output/mod.rs`) and the language server's protocol channel (`lsp/src/lib.rs`).";

const LSP_DIAGNOSTICS_AT_THE_EDGE: &str = "The language server keeps findings and makes an `lsp::Diagnostic` only at the edge: one constructor, in `lsp/src/diagnostics.rs`.";
const LSP_DATA_FROM_CLIENTS: &str = "A published diagnostic's `data` is read back only from what a client sends (`lsp/src/handlers/code_action.rs`), never from the server's own state.";

const LSP_BLOCKING_WITHOUT_SESSION: &str = "No blocking task of the language server holds the session: a `spawn_blocking` closure reads a snapshot or a part of the session taken before it (`AnalysisSnapshot`, `RequestSnapshot`, `TraceInputs`, `WorkspaceState`), never the session itself.";

const LSP_ROUTING: &str = "Adding an LSP request is its handler's file and one line in the routing table: every file of `lsp/src/handlers/` is routed in `handlers/mod.rs`, and only `lsp/src/server.rs` implements `LanguageServer`.";

const MAX_LINES: usize = 1500;

/// The crates bottom up, by directory and package name: a crate may depend on those before it.
const CRATE_LAYERS: &[(&str, &str)] = &[
    ("analyzer", "pt2lsp_analyzer"),
    ("project", "pt2lsp_project"),
    ("tracer", "pt2lsp_tracer"),
    ("lsp", "pt2lsp_lsp"),
    ("server", "pt2lsp"),
    ("python", "pt2lsp_python"),
];

/// The Rust sources of the product's crates other than the analyzer: the server side.
fn on_server_side(file: &str) -> bool {
    ["project/src/", "tracer/src/", "lsp/src/", "server/src/"]
        .iter()
        .any(|dir| file.starts_with(dir))
}

/// The names of the `pt2lsp` crates a manifest depends on, in any dependency table.
fn crate_dependencies(manifest: &str) -> Vec<String> {
    let mut in_dependencies = false;
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line.trim_matches(['[', ']']).ends_with("dependencies");
            continue;
        }
        if !in_dependencies || line.starts_with('#') {
            continue;
        }
        let key = line
            .split(['=', '.'])
            .next()
            .unwrap_or("")
            .trim()
            .replace('-', "_");
        if key == "pt2lsp" || key.starts_with("pt2lsp_") {
            names.push(key);
        }
    }
    names
}

/// The top-level modules of a crate's `src/` that each one names (`crate::x`, or `super::x`
/// from a top-level file), outside its tests.
fn module_imports(src: &Path) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let mut imports: std::collections::BTreeMap<String, BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for path in source_files(src) {
        let Ok(relative) = path.strip_prefix(src) else {
            continue;
        };
        let parts: Vec<String> = relative
            .components()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .collect();
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let module = match parts.as_slice() {
            [file] => file.trim_end_matches(".rs").to_owned(),
            [dir, ..] => dir.clone(),
            [] => continue,
        };
        if module == "lib" || module == "main" {
            continue;
        }
        let top_level = parts.len() == 1 || (parts.len() == 2 && parts[1] == "mod.rs");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let named = imports.entry(module.clone()).or_default();
        for line in code_lines(&text) {
            // A module's tests may reach anywhere in the crate.
            if line.contains("#[cfg(test)]") {
                break;
            }
            let mut prefixes = vec!["crate::"];
            if top_level {
                prefixes.push("super::");
            }
            for prefix in prefixes {
                for (at, _) in line.match_indices(prefix) {
                    let rest = &line[at + prefix.len()..];
                    let mentioned: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                        group
                            .split('}')
                            .next()
                            .unwrap_or("")
                            .split(',')
                            .map(|item| item.trim().split("::").next().unwrap_or(""))
                            .collect()
                    } else {
                        vec![
                            rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                                .next()
                                .unwrap_or(""),
                        ]
                    };
                    for name in mentioned {
                        if !name.is_empty() && name != module && name != "self" {
                            named.insert(name.to_owned());
                        }
                    }
                }
            }
        }
    }
    let modules: BTreeSet<String> = imports.keys().cloned().collect();
    for named in imports.values_mut() {
        named.retain(|name| modules.contains(name));
    }
    imports
}

/// The sets of modules that import each other (strongly connected, more than one module).
fn module_cycles(
    imports: &std::collections::BTreeMap<String, BTreeSet<String>>,
) -> Vec<Vec<String>> {
    let reaches = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(module) = stack.pop() {
            for next in imports.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: std::collections::BTreeMap<&String, BTreeSet<String>> = imports
        .keys()
        .map(|module| (module, reaches(module)))
        .collect();
    let mut cycles: Vec<Vec<String>> = Vec::new();
    for module in imports.keys() {
        if cycles.iter().any(|cycle| cycle.contains(module)) || !reach[module].contains(module) {
            continue;
        }
        let cycle: Vec<String> = imports
            .keys()
            .filter(|other| reach[module].contains(*other) && reach[*other].contains(module))
            .cloned()
            .collect();
        cycles.push(cycle);
    }
    cycles
}

/// A crate's module cycles, each named as `<dir>/src: a, b, c`.
fn check_module_cycles(root: &Path, add: &mut impl FnMut(&str, &'static str)) {
    for (dir, _) in CRATE_LAYERS {
        let src = root.join(dir).join("src");
        if !src.is_dir() {
            continue;
        }
        for cycle in module_cycles(&module_imports(&src)) {
            add(&format!("{dir}/src: {}", cycle.join(", ")), MODULE_CYCLES);
        }
    }
}

/// Each layer's manifest names only the layers below it.
fn check_layers(root: &Path, add: &mut impl FnMut(&str, &'static str)) {
    for (index, (dir, _)) in CRATE_LAYERS.iter().enumerate() {
        let file = format!("{dir}/Cargo.toml");
        let Ok(manifest) = std::fs::read_to_string(root.join(&file)) else {
            continue;
        };
        let upward = crate_dependencies(&manifest)
            .iter()
            .any(|name| CRATE_LAYERS[index..].iter().any(|(_, layer)| layer == name));
        if upward {
            add(&file, LAYERS);
        }
    }
}

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
    let mut rule_codes = BTreeSet::new();
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
        if on_server_side(&file)
            && file != "lsp/src/document.rs"
            && (names("encode_utf16") || names("len_utf16"))
        {
            add(&file, UTF16_AT_THE_EDGE);
        }
        if file.contains("/tests/") && names("#[path") && names("src/") {
            let into_src = code
                .iter()
                .any(|line| line.contains("#[path") && line.contains("src/"));
            if into_src {
                add(&file, NO_SOURCE_PATH_IN_TESTS);
            }
        }
        let writes_stdout = code.iter().any(|line| {
            line.contains("stdout()") && !line.contains("is_terminal()") && !line.contains("flush")
        });
        if on_server_side(&file)
            && writes_stdout
            && file != "server/src/cli/output/mod.rs"
            && file != "lsp/src/lib.rs"
        {
            add(&file, ONE_STDOUT_WRITER);
        }
        if names("#[ignore") || names("#[should_panic") {
            add(&file, NO_SKIPPED_TESTS);
        }
        if (on_server_side(&file) || file.starts_with("analyzer/src/"))
            && !unix_only_code_is_gated(&code)
        {
            add(&file, PORTABLE);
        }
        if file.starts_with("analyzer/src/rules/") && !file.ends_with("/mod.rs") {
            rule_codes.extend(check_rule_file(root, &file, &text, &mut add));
        }
    }
    if !rule_codes.is_empty() {
        check_rule_lists(root, &rule_codes, &mut add);
    }
    check_layers(root, &mut add);
    check_module_cycles(root, &mut add);
    check_lsp_edge(root, &mut add);
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

/// A rule file declares its rule with `declare_rule!` (its code as `code: "PT101"`, its name
/// as the file's) and carries its page in the declaration's `doc`; a rule the static pass
/// reports also has fixtures. Gives the rule's code.
fn check_rule_file(
    root: &Path,
    file: &str,
    text: &str,
    add: &mut impl FnMut(&str, &'static str),
) -> Option<String> {
    let stem = file
        .rsplit('/')
        .next()
        .unwrap_or("")
        .trim_end_matches(".rs");
    let declared_name = text
        .split_once("\ndeclare_rule! {")
        .and_then(|(_, body)| body.split_once("name: \""))
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(name, _)| name.replace('-', "_"));
    if declared_name.as_deref() != Some(stem) {
        add(file, RULE_DECLARED);
    }
    for section in ["What it does", "Why export fails", "Example", "Fix"] {
        if !text.contains(&format!("## {section}")) {
            add(file, RULE_DOCS);
            return None;
        }
    }
    let Some(code) = rule_code(text) else {
        add(file, RULE_DOCS);
        return None;
    };
    // Rules only the tracer reports (the exporter's own failures) have no static fixture.
    let tracer_only = text.contains("is_static: false");
    if !tracer_only && !root.join("fixtures/rules").join(&code).is_dir() {
        add(file, RULE_FIXTURES);
    }
    Some(code)
}

/// The rule pages in `docs/rules/` and the rows of the README's generated rules table are the
/// rules of `codes`, no more and no fewer (their text is `analyzer/tests/rule_docs.rs`'s to
/// compare). A tree without the README or the pages has nothing to check.
fn check_rule_lists(
    root: &Path,
    codes: &BTreeSet<String>,
    add: &mut impl FnMut(&str, &'static str),
) {
    if let Ok(pages) = std::fs::read_dir(root.join("docs/rules")) {
        let paged: BTreeSet<String> = pages
            .flatten()
            .filter_map(|page| {
                let name = page.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".md").map(str::to_owned)
            })
            .collect();
        if &paged != codes {
            add("docs/rules", RULE_LISTS);
        }
    }
    let Ok(readme) = std::fs::read_to_string(root.join("README.md")) else {
        return;
    };
    let table = readme
        .split_once("<!-- The rules table is generated")
        .and_then(|(_, rest)| rest.split_once("<!-- End of the generated rules table. -->"))
        .map(|(table, _)| table);
    let rows: Option<BTreeSet<String>> = table.map(|table| {
        table
            .lines()
            .filter_map(|line| line.strip_prefix("| ["))
            .filter_map(|row| row.split_once(']').map(|(code, _)| code.to_owned()))
            .collect()
    });
    if rows.as_ref() != Some(codes) {
        add("README.md", RULE_LISTS);
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

const GOOD_RULE: &str = "//! PT101 `branch`\n\ndeclare_rule! {\n    code: \"PT101\",\n    name: \"branch\",\n    doc: r#\"## What it does\n## Why export fails\n## Example\n## Fix\n\"#,\n}\n";

#[test]
fn a_clean_tree_has_no_violation() {
    let dir = tree(&[
        ("analyzer/src/syntax/mod.rs", "use ruff_python_ast;\n"),
        ("analyzer/src/rules/branch.rs", GOOD_RULE),
        ("fixtures/rules/PT101/a.py", "x = 1\n"),
        (
            "lsp/src/document.rs",
            "fn f(s: &str) { s.encode_utf16(); }\n",
        ),
        ("lsp/src/server.rs", "// Not encode_utf16.\n"),
        (
            "lsp/Cargo.toml",
            "[dependencies]\n# pt2lsp = {}\npt2lsp_tracer.workspace = true\n\n[dev-dependencies]\npt2lsp_project = { path = \"../project\" }\n",
        ),
        (
            "server/tests/support.rs",
            "#[path = \"support/run.rs\"]\nmod run;\n",
        ),
        (
            "tracer/src/a.rs",
            "#[cfg(unix)]\nuse std::os::unix::net::UnixStream;\n#[cfg(unix)]\nmod unix {\n    use std::os::unix::fs::PermissionsExt;\n}\n",
        ),
    ]);
    assert_eq!(check_tree(dir.path()), BTreeSet::new());
}

#[test]
fn each_check_fires_on_a_tree_that_breaks_it() {
    let long = "x = 1\n".repeat(MAX_LINES + 1);
    let cases: [(&str, &str, &str); 13] = [
        (
            "analyzer/src/semantic/a.rs",
            "use ruff_python_ast::visitor;\n",
            PARSER_BEHIND_SYNTAX,
        ),
        (
            "lsp/src/handlers/a.rs",
            "fn f(s: &str) -> usize { s.encode_utf16().count() }\n",
            UTF16_AT_THE_EDGE,
        ),
        (
            "server/src/cli/a.rs",
            "fn f(s: &str) -> usize { s.len_utf16() }\n",
            UTF16_AT_THE_EDGE,
        ),
        (
            "server/src/cli/merge.rs",
            "fn f() { let mut out = std::io::stdout().lock(); }\n",
            ONE_STDOUT_WRITER,
        ),
        (
            "project/Cargo.toml",
            "[dependencies]\npt2lsp_analyzer.workspace = true\npt2lsp_tracer.workspace = true\n",
            LAYERS,
        ),
        (
            "tracer/Cargo.toml",
            "[dev-dependencies]\npt2lsp = { path = \"../server\" }\n",
            LAYERS,
        ),
        (
            "server/tests/a.rs",
            "#[path = \"../src/lsp/mod.rs\"]\nmod lsp;\n",
            NO_SOURCE_PATH_IN_TESTS,
        ),
        (
            "tracer/python/pt2lsp_worker/trace.py",
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
        ("analyzer/src/rules/not_branch.rs", GOOD_RULE, RULE_DECLARED),
        (
            "analyzer/tests/a.rs",
            "#[test]\n#[ignore]\nfn t() {}\n",
            NO_SKIPPED_TESTS,
        ),
        (
            "lsp/src/a.rs",
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

#[test]
fn modules_that_import_each_other_are_a_cycle_and_tests_are_not() {
    let dir = tree(&[
        (
            "tracer/src/protocol.rs",
            "use crate::{cache, targets::Target};\n",
        ),
        ("tracer/src/targets.rs", "use super::protocol::JobResult;\n"),
        (
            "tracer/src/cache.rs",
            "//! Names crate::protocol in a comment only.\n#[cfg(test)]\nmod tests { use crate::protocol; }\n",
        ),
        ("tracer/src/lib.rs", "pub mod cache;\npub mod protocol;\n"),
    ]);
    let found = check_tree(dir.path());
    let cycle = Violation {
        file: "tracer/src: protocol, targets".to_owned(),
        invariant: MODULE_CYCLES,
    };
    assert_eq!(found, BTreeSet::from([cycle]));
}

/// The language server's diagnostics at the edge: an `lsp::Diagnostic` literal only in
/// `lsp/src/diagnostics.rs`, and `DiagnosticData::from_lsp` only there and in the code action
/// handler, which reads what the client sends.
fn check_lsp_edge(root: &Path, add: &mut impl FnMut(&str, &'static str)) {
    for path in source_files(&root.join("lsp/src")) {
        let file = relative(root, &path);
        if path.extension().is_none_or(|ext| ext != "rs") || file == "lsp/src/diagnostics.rs" {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let code: Vec<&str> = code_lines(&text).collect();
        let joined = code.join("\n");
        // `Diagnostic` names the protocol's type when a `use` of `ls_types` lists it.
        let protocol_in_scope = joined.split(';').any(|statement| {
            statement.trim_start().starts_with("use ")
                && statement.contains("ls_types")
                && statement
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|word| word == "Diagnostic")
        });
        let literal = code.iter().any(|line| {
            [
                "lsp::Diagnostic {",
                "ls_types::Diagnostic {",
                "lsp::Diagnostic::default",
            ]
            .iter()
            .any(|needle| line.contains(needle))
                || (protocol_in_scope
                    && (line.contains(" Diagnostic {")
                        || line.contains("(Diagnostic {")
                        || line.contains("Diagnostic::default")))
        });
        if literal {
            add(&file, LSP_DIAGNOSTICS_AT_THE_EDGE);
        }
        if file != "lsp/src/handlers/code_action.rs"
            && code.iter().any(|line| line.contains("from_lsp("))
        {
            add(&file, LSP_DATA_FROM_CLIENTS);
        }
        if file != "lsp/src/server.rs" && joined.contains("LanguageServer for") {
            add(&file, LSP_ROUTING);
        }
    }
    check_lsp_routing(root, add);
    check_blocking_tasks(root, add);
}

/// What a `spawn_blocking` closure names must not be the session: `session`, `self` (in the
/// session's own methods), or a name a file binds to a clone of either
/// (`let planner = Arc::clone(&session)`).
fn check_blocking_tasks(root: &Path, add: &mut impl FnMut(&str, &'static str)) {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|word| !word.is_empty())
            .map(str::to_owned)
            .collect()
    };
    for path in source_files(&root.join("lsp/src")) {
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let code = code_lines(&text).collect::<Vec<_>>().join("\n");
        let mut held: BTreeSet<String> = ["session", "self"].map(str::to_owned).into();
        for statement in code.split(';') {
            // A statement starts after the block it opens or follows.
            let statement = statement
                .rsplit(['{', '}'])
                .next()
                .unwrap_or_default()
                .trim();
            let Some((binding, value)) = statement
                .strip_prefix("let ")
                .and_then(|rest| rest.split_once('='))
            else {
                continue;
            };
            let value: String = value.split_whitespace().collect();
            let of_session = [
                "Arc::clone(&session)",
                "Arc::clone(session)",
                "Arc::clone(self)",
                "Arc::clone(&self)",
                "session.clone()",
                "self.clone()",
            ]
            .contains(&value.as_str());
            if of_session {
                held.extend(words(binding).into_iter().filter(|word| word != "mut"));
            }
        }
        let mut rest = code.as_str();
        while let Some(at) = rest.find("spawn_blocking(") {
            let body = &rest[at + "spawn_blocking(".len()..];
            let mut depth = 1usize;
            let end = body
                .char_indices()
                .find(|(_, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(body.len(), |(end, _)| end);
            if words(&body[..end]).iter().any(|word| held.contains(word)) {
                add(&relative(root, &path), LSP_BLOCKING_WITHOUT_SESSION);
                break;
            }
            rest = &body[end..];
        }
    }
}

/// Every handler file is a line of the routing table: `request <file>(` or
/// `notification <file>(` in `lsp/src/handlers/mod.rs`.
fn check_lsp_routing(root: &Path, add: &mut impl FnMut(&str, &'static str)) {
    let handlers = root.join("lsp/src/handlers");
    let table = std::fs::read_to_string(handlers.join("mod.rs")).unwrap_or_default();
    let routed: BTreeSet<&str> = code_lines(&table)
        .filter_map(|line| {
            let line = line.trim_start();
            let rest = line
                .strip_prefix("request ")
                .or_else(|| line.strip_prefix("notification "))?;
            rest.split_once('(').map(|(name, _)| name.trim())
        })
        .collect();
    for path in source_files(&handlers) {
        let file = relative(root, &path);
        let Some(name) = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_suffix(".rs"))
        else {
            continue;
        };
        if name != "mod" && !routed.contains(name) {
            add(&file, LSP_ROUTING);
        }
    }
}

#[test]
fn the_lsp_edge_checks_fire_on_trees_that_break_them() {
    let cases: [(&str, &str, Option<&str>); 10] = [
        // A blocking task given the session under another name, or the session itself.
        (
            "lsp/src/session/e.rs",
            "fn f(session: &Arc<Session>) {\n    let planner = Arc::clone(&session);\n    tokio::task::spawn_blocking(move || planner.plan(&path));\n}\n",
            Some(LSP_BLOCKING_WITHOUT_SESSION),
        ),
        (
            "lsp/src/handlers/f.rs",
            "async fn f(session: Arc<Session>) {\n    tokio::task::spawn_blocking(move || session.outline(&uri)).await;\n}\n",
            Some(LSP_BLOCKING_WITHOUT_SESSION),
        ),
        // A snapshot taken before the task is what it holds.
        (
            "lsp/src/handlers/g.rs",
            "async fn f(session: Arc<Session>) {\n    let snapshot = session.request_snapshot(&uri)?;\n    tokio::task::spawn_blocking(move || snapshot.outline()).await;\n}\n",
            None,
        ),
        // A handler file the routing table does not name.
        (
            "lsp/src/handlers/rename.rs",
            "pub async fn handle() {}\n",
            Some(LSP_ROUTING),
        ),
        (
            "lsp/src/lsp_server.rs",
            "impl tower_lsp_server::LanguageServer for Other {}\n",
            Some(LSP_ROUTING),
        ),
        (
            "lsp/src/session/a.rs",
            "use tower_lsp_server::ls_types::{self as lsp, Uri};\nfn f() -> lsp::Diagnostic { lsp::Diagnostic { ..lsp::Diagnostic::default() } }\n",
            Some(LSP_DIAGNOSTICS_AT_THE_EDGE),
        ),
        (
            "lsp/src/handlers/b.rs",
            "use tower_lsp_server::ls_types::{\n    Diagnostic, Range,\n};\nfn f(range: Range) -> Diagnostic {\n    Diagnostic { range, ..Default::default() }\n}\n",
            Some(LSP_DIAGNOSTICS_AT_THE_EDGE),
        ),
        (
            "lsp/src/session/c.rs",
            "fn f(d: &lsp::Diagnostic) -> bool { DiagnosticData::from_lsp(d).is_some() }\n",
            Some(LSP_DATA_FROM_CLIENTS),
        ),
        // The analyzer's own diagnostic is data the server builds freely.
        (
            "lsp/src/session/d.rs",
            "use pt2lsp_analyzer::Diagnostic;\nuse tower_lsp_server::ls_types::Uri;\nfn f() { let d = Diagnostic { rule }; }\n",
            None,
        ),
        (
            "lsp/src/handlers/code_action.rs",
            "fn f(d: &Diagnostic) { DiagnosticData::from_lsp(d); }\n",
            None,
        ),
    ];
    let table = "routes! {\n    request hover(HoverParams) -> Option<Hover>;\n    notification did_open(DidOpenTextDocumentParams), \"textDocument/didOpen\";\n}\n";
    for (path, text, broken) in cases {
        // Each case's own handler file is routed, but for the one that tests routing.
        let stem = path
            .strip_prefix("lsp/src/handlers/")
            .and_then(|name| name.strip_suffix(".rs"))
            .filter(|name| *name != "rename");
        let table = match stem {
            Some(stem) => format!("{table}request {stem}(P) -> R;\n"),
            None => table.to_owned(),
        };
        let dir = tree(&[
            (path, text),
            ("lsp/src/handlers/mod.rs", &table),
            ("lsp/src/handlers/hover.rs", "pub async fn handle() {}\n"),
            ("lsp/src/handlers/did_open.rs", "pub fn handle() {}\n"),
        ]);
        let found: Vec<&str> = check_tree(dir.path())
            .into_iter()
            .filter(|violation| violation.file == path)
            .map(|violation| violation.invariant)
            .collect();
        assert_eq!(found, broken.into_iter().collect::<Vec<_>>(), "{path}");
        // The routed handlers break nothing.
        let routed = check_tree(dir.path())
            .into_iter()
            .filter(|violation| {
                violation.file.starts_with("lsp/src/handlers/h")
                    || violation.file.starts_with("lsp/src/handlers/did_open")
            })
            .count();
        assert_eq!(routed, 0, "{path}");
    }
}

#[test]
fn the_rule_pages_and_the_readme_table_list_the_rule_files() {
    let readme = |rows: &str| {
        format!(
            "# pt2lsp\n\n<!-- The rules table is generated from ... -->\n| code | name |\n|---|---|\n{rows}<!-- End of the generated rules table. -->\n"
        )
    };
    let row = "| [PT101](docs/rules/PT101.md) | branch |\n";
    let listed = readme(row);
    let rule = ("analyzer/src/rules/branch.rs", GOOD_RULE);
    let fixture = ("fixtures/rules/PT101/a.py", "x = 1\n");
    let page = ("docs/rules/PT101.md", "# PT101\n");
    let good = tree(&[rule, fixture, page, ("README.md", &listed)]);
    assert_eq!(check_tree(good.path()), BTreeSet::new());

    let breaks = |files: &[(&str, &str)], file: &str| {
        let dir = tree(files);
        let expected = Violation {
            file: file.to_owned(),
            invariant: RULE_LISTS,
        };
        assert_eq!(
            check_tree(dir.path()),
            BTreeSet::from([expected]),
            "{files:?}"
        );
    };
    let unlisted = readme("");
    breaks(
        &[rule, fixture, page, ("README.md", &unlisted)],
        "README.md",
    );
    let stale = readme(&format!("{row}| [PT999](docs/rules/PT999.md) | gone |\n"));
    breaks(&[rule, fixture, page, ("README.md", &stale)], "README.md");
    breaks(
        &[rule, fixture, page, ("README.md", "# pt2lsp\n")],
        "README.md",
    );
    breaks(
        &[
            rule,
            fixture,
            ("README.md", &listed),
            ("docs/rules/a.md", ""),
        ],
        "docs/rules",
    );
}
