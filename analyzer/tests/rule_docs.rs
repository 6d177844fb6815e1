//! What is written about the rules outside their files is generated from them: the pages under
//! `docs/rules/` and the README's rules table come from each rule's `declare_rule!`, and this
//! test fails when a committed copy is stale. `UPDATE_GENERATED=1 cargo test -p pt2lsp_analyzer
//! --test rule_docs` rewrites them.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use pt2lsp_analyzer::Rule;

const UPDATE: &str = "UPDATE_GENERATED=1 cargo test -p pt2lsp_analyzer --test rule_docs";

/// The README's lines around the table, which the table is written between.
const TABLE_START: &str = "<!-- The rules table is generated from each rule's `declare_rule!` in analyzer/src/rules/ by `UPDATE_GENERATED=1 cargo test -p pt2lsp_analyzer --test rule_docs`; edit the rule's `finds`, not this table. -->";
const TABLE_END: &str = "<!-- End of the generated rules table. -->";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn updating() -> bool {
    std::env::var_os("UPDATE_GENERATED").is_some()
}

#[test]
fn rule_pages_are_up_to_date() {
    let root = root();
    let mut stale = Vec::new();
    for rule in Rule::ALL {
        let path = root.join(rule.doc_path());
        let expected = rule.page();
        if updating() {
            std::fs::create_dir_all(path.parent().expect("docs/rules has a parent"))
                .expect("docs/rules is writable");
            std::fs::write(&path, &expected).expect("rule page is writable");
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(actual) if actual == expected => {}
            _ => stale.push(rule.doc_path()),
        }
    }
    // A page whose rule is gone would still be linked from old diagnostics' `codeDescription`;
    // it goes with its rule.
    let pages = std::fs::read_dir(root.join("docs/rules")).expect("docs/rules is readable");
    for page in pages.flatten() {
        let name = page.file_name().to_string_lossy().into_owned();
        let is_rule_page = Rule::ALL
            .iter()
            .any(|rule| rule.doc_path() == format!("docs/rules/{name}"));
        if !is_rule_page {
            if updating() {
                std::fs::remove_file(page.path()).expect("a stale page is removable");
            } else {
                stale.push(format!("docs/rules/{name} (no such rule)"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale rule pages (run `{UPDATE}`): {stale:?}"
    );
}

/// The README's rules table, one row per rule in the order of their codes.
fn rules_table() -> String {
    let mut table = String::from("| code | name | severity | what it finds |\n|---|---|---|---|\n");
    for rule in Rule::ALL {
        let _ = writeln!(
            table,
            "| [{code}]({path}) | {name} | {severity} | {finds} |",
            code = rule.code(),
            path = rule.doc_path(),
            name = rule.name(),
            severity = rule.default_severity().as_str(),
            finds = rule.finds(),
        );
    }
    table
}

#[test]
fn readme_rules_table_is_generated() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md at the repository root");
    let Some(start) = readme.find(TABLE_START) else {
        panic!("README.md lacks the line `{TABLE_START}`");
    };
    let start = start + TABLE_START.len() + 1;
    let Some(end) = readme[start..].find(TABLE_END) else {
        panic!("README.md lacks the line `{TABLE_END}` after the table");
    };
    let end = start + end;
    let expected = rules_table();
    if readme[start..end] == expected {
        return;
    }
    if updating() {
        let updated = format!("{}{expected}{}", &readme[..start], &readme[end..]);
        std::fs::write(&path, updated).expect("README.md is writable");
        return;
    }
    panic!(
        "README.md's rules table differs from the rules' declarations (run `{UPDATE}`); expected:\n{expected}"
    );
}
