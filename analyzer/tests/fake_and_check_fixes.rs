//! The PT301 `register_fake` fix, the PT102/PT103 `torch._check` fix and the PT601 fixes (a
//! `random` draw made by torch, a counter kept in a buffer), on their fixtures: every file under
//! `fixtures/fixes/register_fake/`, `check/`, `random/` and `buffer/` gets an unsafe fix that
//! leaves no diagnostic of its rule behind, and the fixed texts are snapshots, so a reviewer
//! reads each fake kernel, check, draw and buffer. Patterns a check cannot make exportable get
//! no fix. (`tests/python/` exports the fixed files with real torch and compares them with the
//! originals: values, or for the random draws, distributions.)

use pt2lsp_analyzer::{Applicability, Diagnostic, FixMode, Rule, Settings, check, fix_to_fixpoint};

#[path = "support/fixture_files.rs"]
mod fixture_files;

use fixture_files::{fixtures, python_files};

/// Applies the fixes of `rules` in `text` (unsafe ones included) until none is left, and
/// returns the fixed text; every diagnostic of those rules must carry an unsafe fix.
fn fixed(name: &str, text: &str, rules: &[Rule]) -> String {
    let report = check(text, &Settings::default());
    let targeted: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|diagnostic| rules.contains(&diagnostic.rule))
        .collect();
    assert!(!targeted.is_empty(), "{name}: nothing to fix");
    for diagnostic in &targeted {
        let fix = diagnostic
            .fix
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: {} without a fix", diagnostic.rule.code()));
        assert_eq!(
            fix.applicability,
            Applicability::Unsafe,
            "{name}: {}",
            fix.title
        );
    }
    let (output, _) = fix_to_fixpoint(text, FixMode::Unsafe, |current| {
        check(current, &Settings::default()).diagnostics
    });
    let after = check(&output, &Settings::default());
    let left: Vec<_> = after
        .diagnostics
        .iter()
        .map(|diagnostic| format!("{} {}", diagnostic.rule.code(), diagnostic.message))
        .collect();
    assert!(
        left.is_empty(),
        "{name}: diagnostics left after the fix: {left:?}\n{output}"
    );
    output
}

fn snapshot_fixed(kind: &str, rules: &[Rule]) {
    let files = python_files(&fixtures(kind));
    assert!(files.len() >= 3, "too few {kind} fixtures");
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let output = fixed(&name, &text, rules);
        insta::assert_snapshot!(format!("{}__{name}", kind.replace('/', "_")), output);
    }
}

#[test]
fn custom_ops_get_a_fake_kernel() {
    snapshot_fixed("fixes/register_fake", &[Rule::MissingFakeKernel]);
}

#[test]
fn validation_ifs_on_data_dependent_values_get_a_check() {
    snapshot_fixed(
        "fixes/check",
        &[Rule::DataDependentScalar, Rule::DataDependentShape],
    );
}

#[test]
fn random_draws_reaching_tensors_are_drawn_by_torch() {
    snapshot_fixed("fixes/random", &[Rule::BakedInValue]);
}

#[test]
fn numbers_that_forward_changes_are_kept_in_buffers() {
    snapshot_fixed("fixes/buffer", &[Rule::BakedInValue]);
}

/// The buffer rewrite is offered only where it is sure to run: not when another method assigns
/// the attribute a Python number (assigning one to a buffer's name raises), nor when the number
/// is set before `super().__init__()` (a buffer cannot be registered yet).
#[test]
fn counters_a_buffer_would_break_get_no_edit() {
    let reset = "import torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        \
                 super().__init__()\n        self.steps = 0\n\n    def reset(self):\n        \
                 self.steps = 0\n\n    def forward(self, x):\n        self.steps += 1\n        \
                 return x * self.steps\n";
    let early = "import torch\n\n\nclass M(torch.nn.Module):\n    def __init__(self):\n        \
                 self.steps = 0\n        super().__init__()\n\n    def forward(self, x):\n        \
                 self.steps += 1\n        return x * self.steps\n";
    for text in [reset, early] {
        let frozen = baked_in_values(text);
        assert_eq!(frozen.len(), 1, "{text}\n{frozen:?}");
        assert!(frozen[0].fix.is_none(), "{text}\n{:?}", frozen[0].fix);
    }
}

/// The PT601 diagnostics of `text`.
fn baked_in_values(text: &str) -> Vec<Diagnostic> {
    check(text, &Settings::default())
        .diagnostics
        .into_iter()
        .filter(|diagnostic| diagnostic.rule == Rule::BakedInValue)
        .collect()
}

/// Values read from the clock or the environment have no torch op that reads them on every
/// call: they get the advice (an input), not an edit.
#[test]
fn clock_and_environment_reads_get_no_edit() {
    let text = "import os\nimport time\n\nimport torch\n\n\nclass M(torch.nn.Module):\n    \
                def forward(self, x):\n        return x * time.time() + float(os.getenv(\"K\", \"1\"))\n";
    let frozen = baked_in_values(text);
    assert!(!frozen.is_empty(), "{text}");
    assert!(
        frozen.iter().all(|diagnostic| diagnostic.fix.is_none()),
        "{frozen:?}"
    );
}

/// Two-sided branches, loops, list indices, `len()` in non-strict export and `if` tests whose
/// negation is no conjunction of comparisons: a check cannot make these export without
/// changing what the model computes, so none is offered. (A cast or a `math` call of a tensor
/// has its own rewrite, which `conversion_fixes.rs` tests.)
#[test]
fn no_check_is_offered_where_a_check_cannot_make_export_pass() {
    let mut seen = 0;
    for rule in ["rules/PT102", "rules/PT103"] {
        for path in python_files(&fixtures(rule)) {
            let text = std::fs::read_to_string(&path).unwrap();
            for diagnostic in check(&text, &Settings::default()).diagnostics {
                seen += 1;
                let flagged = &text[diagnostic.range];
                let cast = ["int(", "float(", "math."]
                    .iter()
                    .any(|call| flagged.starts_with(call));
                assert!(
                    diagnostic.fix.is_none() || cast,
                    "{}: {} got a fix: {:?}",
                    path.display(),
                    diagnostic.rule.code(),
                    diagnostic.fix
                );
            }
        }
    }
    assert!(seen >= 12, "too few PT102/PT103 diagnostics: {seen}");
}
