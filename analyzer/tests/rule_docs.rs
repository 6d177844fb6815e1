//! The rule pages under `docs/rules/` are generated from each rule's documentation in its
//! source file; this test fails when a page is stale. `UPDATE_DOCS=1 cargo test` rewrites them.

use std::path::Path;

use pt2lsp_analyzer::Rule;

#[test]
fn rule_pages_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let update = std::env::var_os("UPDATE_DOCS").is_some();
    let mut stale = Vec::new();
    for rule in Rule::ALL {
        let path = root.join(rule.doc_path());
        let expected = rule.page();
        if update {
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
    assert!(
        stale.is_empty(),
        "stale rule pages (run `UPDATE_DOCS=1 cargo test -p pt2lsp_analyzer --test rule_docs`): {stale:?}"
    );
}

#[test]
fn readme_links_every_rule() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("README.md at the repository root");
    for rule in Rule::ALL {
        assert!(
            readme.contains(&format!("]({})", rule.doc_path())),
            "README.md does not link {}",
            rule.doc_path()
        );
    }
}
