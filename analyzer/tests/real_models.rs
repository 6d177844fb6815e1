//! Real model code shipped with torch and torchvision: the ExportDB examples that torch
//! exports successfully, and torchvision's models (classification, detection, segmentation,
//! video, optical flow; the files under `torchvision/models/`), must raise no
//! error-severity diagnostic: the reference catalog measured every supported ExportDB example
//! exporting, and an error on widely exported torchvision code would be a false alarm. Nor a
//! PT601 (a warning): their exports compute what eager computes.
//!
//! The test environment (`scripts/test.sh`) installs torch, torchvision and transformers into
//! `.venv`; transformers' exporting architectures must raise no error either.

use std::path::{Path, PathBuf};

use pt2lsp_analyzer::{LineIndex, Rule, Severity, check};

/// `site-packages` of the test environment: `$PT2LSP_SITE_PACKAGES`, else `.venv`'s.
fn site_packages() -> PathBuf {
    if let Some(path) = std::env::var_os("PT2LSP_SITE_PACKAGES") {
        return PathBuf::from(path);
    }
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/lib");
    std::fs::read_dir(&lib)
        .ok()
        .and_then(|entries| entries.flatten().map(|entry| entry.path().join("site-packages")).find(|path| path.is_dir()))
        .unwrap_or_else(|| {
            panic!(
                "no Python environment at {}: run `scripts/test.sh`, which installs torch and torchvision into .venv, or set PT2LSP_SITE_PACKAGES",
                lib.display()
            )
        })
}

/// The `.py` files under `dir`, recursively, sorted.
fn python_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let entries = std::fs::read_dir(&current)
            .unwrap_or_else(|error| panic!("{} is not readable: {error}", current.display()));
        for path in entries.flatten().map(|entry| entry.path()) {
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "py") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every error-severity diagnostic, and every PT601, in the files, as `path:line: CODE message`.
fn errors_in(files: &[PathBuf]) -> Vec<String> {
    let mut errors = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(path).expect("model source is UTF-8");
        let report = check(&text, &pt2lsp_analyzer::Settings::default());
        let index = LineIndex::new(&text);
        for diagnostic in report
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error || d.rule == Rule::BakedInValue)
        {
            let line = index.line_column(diagnostic.range.start()).line + 1;
            errors.push(format!(
                "{}:{line}: {} {}",
                path.display(),
                diagnostic.rule.code(),
                diagnostic.message
            ));
        }
    }
    errors
}

#[test]
fn supported_exportdb_examples_have_no_errors() {
    let examples = site_packages().join("torch/_export/db/examples");
    let files: Vec<PathBuf> = python_files(&examples)
        .into_iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            // The one example torch itself marks as failing (`dynamic_shape_round`).
            !text.contains("SupportLevel.NOT_SUPPORTED_YET")
                && path.file_name().is_some_and(|name| name != "__init__.py")
        })
        .collect();
    assert!(
        files.len() >= 35,
        "expected the 35 supported ExportDB examples in {}, found {}",
        examples.display(),
        files.len()
    );
    let errors = errors_in(&files);
    assert!(
        errors.is_empty(),
        "errors on examples torch exports:\n{}",
        errors.join("\n")
    );
}

#[test]
fn torchvision_models_have_no_errors() {
    let models = site_packages().join("torchvision/models");
    let files = python_files(&models);
    assert!(
        files.len() >= 20,
        "expected torchvision's model files in {}, found {}",
        models.display(),
        files.len()
    );
    let errors = errors_in(&files);
    assert!(
        errors.is_empty(),
        "errors on torchvision models:\n{}",
        errors.join("\n")
    );
}

/// transformers 5.23.0 (pinned by `scripts/test.sh`) architectures whose small-config models
/// export with torch 2.15 (`use_cache=False` for the language models; measured): the six whose
/// experts' `forward` the class decorator `use_experts_implementation` replaces, and common
/// decoders and encoders.
const EXPORTING_TRANSFORMERS: [&str; 13] = [
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "olmoe",
    "granitemoe",
    "jamba",
    "llama",
    "mistral",
    "qwen2",
    "phi3",
    "gemma",
    "gpt2",
    "bert",
];

#[test]
fn transformers_architectures_that_export_have_no_errors() {
    let models = site_packages().join("transformers/models");
    let files: Vec<PathBuf> = EXPORTING_TRANSFORMERS
        .iter()
        .map(|model| models.join(model).join(format!("modeling_{model}.py")))
        .collect();
    for file in &files {
        assert!(
            file.is_file(),
            "{} is missing: scripts/test.sh installs transformers 5.23.0 into .venv",
            file.display()
        );
    }
    let errors = errors_in(&files);
    assert!(
        errors.is_empty(),
        "errors on transformers models that export:\n{}",
        errors.join("\n")
    );
}
