//! Runs every fixture under `fixtures/` through the analyzer and compares the diagnostics with
//! the expectations written inline: `# error[PT101]`, `# warning[PT402] info[PT203]`.
//!
//! A fixture with no marks must produce no diagnostics. Every mismatch of every file is listed
//! before the test fails, so one run shows the whole picture.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pt2lsp_analyzer::{LineIndex, Settings, check};

/// One expected or actual diagnostic: one-based line, severity, code.
type Mark = (u32, String, String);

fn fixture_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("fixtures directory is readable")
        .flatten()
        .collect();
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            // A directory under `projects/` is one multi-file fixture, a workspace of its own;
            // its files are not fixtures one by one.
            if path
                .parent()
                .is_some_and(|parent| parent.ends_with("projects"))
            {
                continue;
            }
            fixture_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "py") {
            out.push(path);
        }
    }
}

/// The marks written in a comment at the end of each line.
fn expected_marks(text: &str) -> BTreeSet<Mark> {
    let mut marks = BTreeSet::new();
    for (number, line) in text.lines().enumerate() {
        let Some(comment) = line.rfind('#').map(|index| &line[index..]) else {
            continue;
        };
        for severity in ["error", "warning", "info"] {
            let mut rest = comment;
            let pattern = format!("{severity}[");
            while let Some(start) = rest.find(&pattern) {
                let after = &rest[start + pattern.len()..];
                let end = after.find(']').unwrap_or(after.len());
                for code in after[..end].split(',') {
                    marks.insert((
                        number as u32 + 1,
                        severity.to_owned(),
                        code.trim().to_owned(),
                    ));
                }
                rest = &after[end..];
            }
        }
    }
    marks
}

#[test]
fn fixtures_match_their_inline_expectations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let mut files = Vec::new();
    fixture_files(&root, &mut files);
    assert!(
        files.len() >= 30,
        "expected the fixture corpus under {}, found {} files",
        root.display(),
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("fixture is UTF-8");
        let report = check(&text, &Settings::default());
        let index = LineIndex::new(&text);
        let actual: BTreeSet<Mark> = report
            .diagnostics
            .iter()
            .map(|diagnostic| {
                let line = index.line_column(diagnostic.range.start()).line + 1;
                (
                    line,
                    diagnostic.severity.as_str().to_owned(),
                    diagnostic.rule.code().to_owned(),
                )
            })
            .collect();
        let expected = expected_marks(&text);
        let relative = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        for (line, severity, code) in expected.difference(&actual) {
            failures.push(format!("{relative}:{line}: missing {severity}[{code}]"));
        }
        for (line, severity, code) in actual.difference(&expected) {
            let message = report
                .diagnostics
                .iter()
                .find(|d| {
                    d.rule.code() == code && index.line_column(d.range.start()).line + 1 == *line
                })
                .map(|d| d.message.as_str())
                .unwrap_or_default();
            failures.push(format!(
                "{relative}:{line}: unexpected {severity}[{code}] {message}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixture mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
