//! The shapes the editor shows, against the expectations written inline in the shape fixtures
//! (`fixtures/ok/shapes/`): a line's comment `# shape: [batch, 8, (height + 1)//2, 8]` (one
//! shape per name the line binds, separated by `;`) is what the inlay hints show after the
//! names it assigns. Real torch proves the same fixtures (`tests/python/test_shape_agreement.py`
//! compares these shapes with the exported programs'); this test says which shape changed.

use std::collections::BTreeMap;
use std::path::Path;

use pt2lsp_analyzer::{LineIndex, Settings, UNKNOWN_SHAPE, check};

/// The shapes the inlay hints show, by one-based line, in the order of the names.
fn shown(source: &str) -> BTreeMap<u32, Vec<String>> {
    let report = check(source, &Settings::default());
    let lines = LineIndex::new(source);
    let mut shown: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut hints: Vec<_> = report
        .shapes
        .iter()
        .filter(|hint| hint.binding && hint.changed && hint.shape != UNKNOWN_SHAPE)
        .collect();
    hints.sort_by_key(|hint| hint.range.start());
    for hint in hints {
        let line = lines.line_column(hint.range.start()).line + 1;
        shown.entry(line).or_default().push(hint.shape.clone());
    }
    shown
}

/// The `# shape:` expectations, by one-based line.
fn expected(source: &str) -> BTreeMap<u32, Vec<String>> {
    let mut expected = BTreeMap::new();
    for (index, line) in source.lines().enumerate() {
        if let Some((_, shapes)) = line.split_once("# shape: ") {
            let shapes = shapes
                .split("; ")
                .map(|shape| shape.trim().to_owned())
                .collect();
            expected.insert(u32::try_from(index).unwrap() + 1, shapes);
        }
    }
    expected
}

#[test]
fn the_shape_fixtures_show_the_shapes_written_beside_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/ok/shapes");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "py"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    let mut mismatches = Vec::new();
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        let (shown, expected) = (shown(&source), expected(&source));
        assert!(
            !expected.is_empty(),
            "{} has no `# shape:` expectations",
            file.display()
        );
        for line in shown
            .keys()
            .chain(expected.keys())
            .collect::<std::collections::BTreeSet<_>>()
        {
            let (got, want) = (shown.get(line), expected.get(line));
            if got != want {
                mismatches.push(format!(
                    "{}:{line}: shown {got:?}, expected {want:?}",
                    file.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
