//! Parse + analyse one file: the per-keystroke cost in the editor.
//!
//! Uses the largest modeling file of the benchmark corpus when `bench/corpus.py` has fetched
//! it (`transformers/models/seamless_m4t_v2/modeling_seamless_m4t_v2.py`, 4,121 lines), else
//! the bundled example models.

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use pt2lsp_analyzer::{Settings, check};

fn inputs() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let large = root.join(
        "bench/.cache/corpus/transformers/models/seamless_m4t_v2/modeling_seamless_m4t_v2.py",
    );
    let paths: Vec<_> = if large.exists() {
        vec![large]
    } else {
        let mut examples: Vec<_> = std::fs::read_dir(root.join("fixtures/examples"))
            .expect("fixtures/examples exists")
            .flatten()
            .map(|entry| entry.path())
            .collect();
        examples.sort();
        examples
    };
    paths
        .into_iter()
        .map(|path| {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (
                name,
                std::fs::read_to_string(&path).expect("benchmark input is UTF-8"),
            )
        })
        .collect()
}

fn bench_check(c: &mut Criterion) {
    let settings = Settings::default();
    for (name, text) in inputs() {
        c.bench_function(
            &format!("check {name} ({} lines)", text.lines().count()),
            |b| {
                b.iter(|| check(std::hint::black_box(&text), &settings));
            },
        );
    }
}

criterion_group!(benches, bench_check);
criterion_main!(benches);
