//! The PT102 fixes of a number read from a tensor (`torch.sym_int`, `torch.sym_float`, torch's
//! `math` functions) and the PT201 fixes of a tensor sent to NumPy (the tensor kept), on their
//! fixtures: every file under `fixtures/fixes/scalar/` and `numpy/` gets a fix of the
//! applicability it declares (`fix_applicability = "safe"`, else unsafe) on every diagnostic of
//! its rule, the fixes leave no diagnostic behind, and the fixed texts are snapshots, so a
//! reviewer reads each rewrite. Shapes of code no rewrite keeps equal get no fix.
//! (`tests/python/` exports the fixed files with real torch and compares them with the
//! originals.)

use pt2lsp_analyzer::{Applicability, Diagnostic, FixMode, Rule, Settings, check, fix_to_fixpoint};

#[path = "support/fixture_files.rs"]
mod fixture_files;

use fixture_files::{fixtures, python_files};

/// The applicability a fix fixture declares, as the real-torch harness reads it.
fn declared_applicability(text: &str) -> Applicability {
    if text
        .lines()
        .any(|line| line.trim() == "fix_applicability = \"safe\"")
    {
        Applicability::Safe
    } else {
        Applicability::Unsafe
    }
}

/// Applies every fix of `text` until none is left and returns the fixed text; each diagnostic
/// of `rule` must carry a fix of the declared applicability.
fn fixed(name: &str, text: &str, rule: Rule) -> String {
    let report = check(text, &Settings::default());
    let targeted: Vec<&Diagnostic> = report
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.rule == rule)
        .collect();
    assert!(!targeted.is_empty(), "{name}: nothing to fix");
    let applicability = declared_applicability(text);
    for diagnostic in &targeted {
        let fix = diagnostic
            .fix
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: {} without a fix", diagnostic.message));
        assert_eq!(fix.applicability, applicability, "{name}: {}", fix.title);
    }
    let mode = match applicability {
        Applicability::Safe => FixMode::Safe,
        _ => FixMode::Unsafe,
    };
    let (output, _) = fix_to_fixpoint(text, mode, |current| {
        check(current, &Settings::default()).diagnostics
    });
    let left: Vec<String> = check(&output, &Settings::default())
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

fn snapshot_fixed(kind: &str, rule: Rule) {
    let files = python_files(&fixtures(kind));
    assert!(files.len() >= 3, "too few {kind} fixtures");
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let output = fixed(&name, &text, rule);
        insta::assert_snapshot!(format!("{}__{name}", kind.replace('/', "_")), output);
    }
}

#[test]
fn casts_and_math_of_tensor_values_are_spelled_in_torch() {
    snapshot_fixed("fixes/scalar", Rule::DataDependentScalar);
}

#[test]
fn tensors_sent_to_numpy_and_back_stay_tensors() {
    snapshot_fixed("fixes/numpy", Rule::TensorToNumpy);
}

/// The diagnostics of `rule` in a model whose `forward(self, x)` has `body`, with its fix
/// titles (`None`: no fix).
fn fix_titles(body: &str, rule: Rule) -> Vec<Option<String>> {
    let mut indented = String::new();
    for line in body.lines() {
        indented.push_str("        ");
        indented.push_str(line);
        indented.push('\n');
    }
    let source = format!(
        "import math\n\nimport numpy as np\nimport torch\nimport torch.nn as nn\n\n\n\
         def helper(t):\n    return t.detach().numpy()\n\n\n\
         class M(nn.Module):\n    def forward(self, x):\n{indented}\n\n\
         model = M()\nexample_args = (torch.randn(4, 3),)\n"
    );
    let titles: Vec<Option<String>> = check(&source, &Settings::default())
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.rule == rule)
        .map(|diagnostic| diagnostic.fix.as_ref().map(|fix| fix.title.clone()))
        .collect();
    assert!(!titles.is_empty(), "no {} in:\n{source}", rule.code());
    titles
}

/// An array that NumPy works on, that leaves the function's sight, or whose reduction has
/// arguments: NumPy and torch differ there (`axis`/`dim`, defaults, dtypes), so nothing is
/// rewritten. A name assigned twice, or read where a tensor would not do, keeps its array.
#[test]
fn arrays_numpy_works_on_get_no_fix() {
    for body in [
        "a = x.numpy()\nreturn torch.as_tensor(np.clip(a, -1, 1))",
        "return torch.from_numpy(x.numpy().std(axis=0))",
        "return torch.as_tensor(x.numpy(), dtype=torch.float64)",
        "a = x.numpy()\nb = torch.from_numpy(a)\nreturn b * a.shape[0]",
        "a = x.numpy()\na = x.numpy() + 1\nreturn torch.from_numpy(a)",
        "a = x.numpy()\nf = lambda: torch.from_numpy(a)\nreturn f()",
        "return torch.from_numpy(helper(x))",
        "return x + float(np.exp(x).sum())",
    ] {
        let titles = fix_titles(body, Rule::TensorToNumpy);
        assert!(
            titles.iter().all(Option::is_none),
            "{body}\ngot fixes: {titles:?}"
        );
    }
}

/// A number read from a tensor that decides a branch, a loop count or a list index needs its
/// value whatever it is cast with: no fix. A cast of something else than one positional
/// argument is left as written.
#[test]
fn uses_that_need_the_value_get_no_fix() {
    for body in [
        "n = x.sum().item()\nif n > 0.5:\n    return x * 2\nreturn x",
        "n = x.sum().item()\nfor _ in range(n):\n    x = x * 2\nreturn x",
        "n = x.argmax().item()\nreturn [x, x * 2][n]",
        "return x * math.floor(x.sum())",
        "return x * math.log(x.sum(), 2)",
    ] {
        let titles = fix_titles(body, Rule::DataDependentScalar);
        assert!(
            titles.iter().all(Option::is_none),
            "{body}\ngot fixes: {titles:?}"
        );
    }
}

/// Strict export captures `int(t.item())` (measured): nothing to report, nothing to fix.
#[test]
fn strict_export_needs_no_cast() {
    let source = "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n    \
                  def forward(self, x):\n        return x * int(x.sum().item())\n\n\n\
                  model = M()\nexample_args = (torch.randn(4, 3),)\nstrict = True\n";
    let report = check(source, &Settings::default());
    assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
}

/// Of the PT201 rule fixtures, only the round trips through a name get a fix; the arrays that
/// NumPy works on (`np.clip`, `np.exp`, `np.percentile`, `arr.max(axis=-1)`) get none, and so
/// does `.numpy().tolist()` of a tensor with a dynamic dimension, which `.tolist()` would fix.
#[test]
fn rule_fixtures_get_a_fix_only_for_a_round_trip() {
    let mut fixed = Vec::new();
    for path in python_files(&fixtures("rules/PT201")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let report = check(&text, &Settings::default());
        if report.diagnostics.iter().any(|d| d.fix.is_some()) {
            fixed.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    assert_eq!(fixed, ["numpy_method.py", "numpy_strict_warning.py"]);
}
