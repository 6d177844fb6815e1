//! PT101 `data-dependent-branch`: python control flow depends on a tensor's value.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT101",
    name: "data-dependent-branch",
    summary: "Python control flow depends on a tensor's value",
    finds: "`if`/`while`/ternary/`assert`/`bool()`/`and`/`or` on a tensor's value; a transformer \
        given a mask without `is_causal`",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds `if`, `while`, ternaries, `assert`, `bool()`, `not`, `and`/`or` and comprehension filters
whose condition is a tensor (`x.sum() > 0`, `mask.any()`, `torch.equal(a, b)`) inside traced code:
each `forward` of an `nn.Module`, what it calls, and `torch.cond` branches.
A condition behind an `and`/`or` operand the analysis cannot decide
(`x.dtype == torch.float16 and not torch.isfinite(x).all()`) is a warning: with float32
inputs the exporter never evaluates it.

A transformer (`nn.TransformerEncoder`, `nn.TransformerDecoder`, `nn.Transformer`) given a
mask without its `is_causal` flag is reported too: torch compares the mask's values with a
causal mask to choose a kernel (`GuardOnDataDependentSymNode: Eq(u0, 1)`, with no line of
yours in it). The safe fix passes the flag as `False`, which applies the mask as given.

## Why export fails
`torch.export` traces with symbolic tensors that have shapes but no values. Turning a tensor into a
Python `bool` needs its value, so non-strict export raises `GuardOnDataDependentSymNode`
(strict export: `Unsupported: Data-dependent branching`). A graph has no Python `if`: only one
side could be kept. Measured on torch 2.15: an `assert` on a tensor and `bool(t)` fail only in
non-strict export (strict export turns them into runtime checks), so under `strict = true` they
are not reported; `if`, `while` and ternaries fail in both modes.

## Example
```python
def forward(self, x):
    if x.sum() > 0:
        return x.sin()
    return x.cos()
```

## Fix
Express the choice as tensor operations. Two rewrites of an `if` are offered, both unsafe
(`--unsafe-fixes`): they keep the results but change what runs.

- `torch.where(pred, a, b)`, offered first, when each branch is one `return <expr>` or one
  assignment of the same name (an `if` without `else` keeps the old value), both expressions
  elementwise over the same tensors, and the condition a one-element boolean: a comparison of
  full reductions (`x.sum() > 0`) or `.any()` / `.all()`. Both sides are computed.
- `torch.cond(pred, true_fn, false_fn, (operands…))` otherwise: the branches become nested
  functions taking as operands the tensors they read (modules, parameters and Python numbers
  stay closed over). Both branches return (an `if` that returns takes the rest of the function
  as its `else`), or both assign names the code after reads, which the cond returns (an `if`
  without `else` returns them unchanged). An output that is an operand or a view of one is
  returned as `.clone()`: torch 2.15 refuses branches that alias their inputs.
  `if not c` swaps the branches.

No rewrite is offered, and the diagnostic says why, where it would change meaning or the
exporter would refuse it: a return in one branch only, a branch that mutates an input, a buffer
or `self` (`self.n += 1`, `x.add_(1)`, `x += 1`), branches returning different structures, an
output that is not known to be a tensor, a condition that is not one boolean tensor (`and`/`or`,
`torch.equal`), an `elif` chain. An `assert` on values becomes `torch._check(...)` on a scalar,
or is removed.
"#,
}

use std::collections::{BTreeSet, HashMap, HashSet};

use ruff_text_size::{Ranged, TextRange, TextSize};

use crate::diagnostic::{Applicability, Fix};
use crate::fixes::branches::{BranchSites, Context, FunctionCache, TensorNames};
use crate::fixes::cond;
use crate::fixes::where_rewrite;
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::value::Value;
use crate::semantic::{BoolContext, EventKind, SemanticModel};
use crate::syntax::Parsed;

pub(crate) fn check(checker: &mut Checker) {
    causal_mask_detections(checker);
    let strict = checker.strict();
    let mut seen = HashSet::new();
    // Built on the first `if` that gets a rewrite, once for all of them.
    let mut rewrites: Option<Rewrites<'_>> = None;
    for event in &checker.model.events {
        let EventKind::Truthiness {
            value: Value::Tensor(_),
            context,
        } = &event.kind
        else {
            continue;
        };
        // Measured on torch 2.15: strict export turns an `assert` on a tensor into a runtime
        // assertion and `bool(t)` into a captured scalar; only non-strict export fails on them.
        if strict && matches!(context, BoolContext::Assert | BoolContext::BoolCall) {
            continue;
        }
        // A helper called twice is interpreted twice; one diagnostic (and fix) is enough.
        if !seen.insert(event.range) {
            continue;
        }
        let text = checker.model.text(event.range);
        let message = format!(
            "{} needs the value of tensor `{text}`, which `torch.export` does not have while tracing; use `torch.where` or `torch.cond`",
            context.describe()
        );
        let fix = match context {
            BoolContext::If { raises_only: false } => {
                let (parsed, model) = (checker.parsed, checker.model);
                let rewrites = rewrites.get_or_insert_with(|| Rewrites::new(parsed, model));
                branch_fix(checker, rewrites, event.range)
            }
            _ => None,
        };
        checker.report_with_fix(
            Rule::DataDependentBranch,
            Checker::failure_severity(event),
            event.range,
            message,
            fix,
        );
    }
}

/// A transformer given a mask without its causal flag compares the mask's values with a causal
/// mask inside torch (`bool((mask == causal).all())`), a branch on data. Passing the flag as
/// `False` applies the mask as given, which is what eager computes either way: a safe fix.
fn causal_mask_detections(checker: &mut Checker) {
    let mut seen = HashSet::new();
    for event in &checker.model.events {
        let EventKind::CausalMaskDetection { layer, mask, flag } = &event.kind else {
            continue;
        };
        if !seen.insert((event.range, *flag)) {
            continue;
        }
        let text = checker.model.text(event.range);
        let message = format!(
            "`{text}`: `nn.{layer}` given `{mask}` without `{flag}` compares the mask's values with a causal mask to decide which kernel to run, a branch on tensor data the exporter cannot take; pass `{flag}=False` (the mask is applied as given) or `{flag}=True` when it is causal"
        );
        // Before the call's closing parenthesis, after a trailing comma if there is one.
        let fix = text.strip_suffix(')').map(|inner| {
            let separator = if inner.trim_end().ends_with([',', '(']) {
                ""
            } else {
                ", "
            };
            let at = event.range.end() - TextSize::from(1);
            Fix {
                title: format!("Pass `{flag}=False`: apply the mask as given"),
                edits: vec![crate::diagnostic::Edit {
                    range: TextRange::empty(at),
                    content: format!("{separator}{flag}=False"),
                }],
                applicability: Applicability::Safe,
            }
        });
        checker.report_with_fix(
            Rule::DataDependentBranch,
            Checker::failure_severity(event),
            event.range,
            message,
            fix,
        );
    }
}

/// The longest `if` statement (in bytes) the rewrites take on.
const MAX_REWRITTEN: TextSize = TextSize::new(16 * 1024);

/// What the rewrites of all `if`s in the file share, computed once: the `if`s, the names that
/// hold tensors around each, and facts about the functions holding them.
struct Rewrites<'a> {
    sites: BranchSites<'a>,
    /// By the `if`'s condition.
    tensors: HashMap<TextRange, TensorNames>,
    functions: FunctionCache,
}

impl<'a> Rewrites<'a> {
    fn new(parsed: &'a Parsed, model: &SemanticModel) -> Self {
        Rewrites {
            sites: BranchSites::new(&parsed.module.body),
            tensors: tensor_names(model),
            functions: FunctionCache::default(),
        }
    }
}

/// The `torch.where` rewrite of the `if` whose condition is at `condition` where valid, else
/// the `torch.cond` rewrite, else an explanation of why neither is offered.
fn branch_fix(checker: &Checker, rewrites: &Rewrites<'_>, condition: TextRange) -> Option<Fix> {
    let site = rewrites.sites.find(condition)?;
    // Each rewrite reads what it replaces: bounding that keeps nested or long code linear.
    if site.extent().len() > MAX_REWRITTEN {
        return Some(Fix {
            title: "No `torch.cond` rewrite offered: the branches are too long to rewrite automatically".to_owned(),
            edits: Vec::new(),
            applicability: Applicability::DisplayOnly,
        });
    }
    let tensors = rewrites.tensors.get(&site.stmt.test.range())?;
    let context = Context {
        file: checker.model.file,
        imports: checker.imports(),
        tensors,
        functions: &rewrites.functions,
    };
    let fix = match where_rewrite::rewrite(site, &context, &checker.model.globals) {
        Some(fix) => fix,
        None => match cond::rewrite(site, &context) {
            Ok(fix) => fix,
            Err(reason) => Fix {
                title: format!("No `torch.cond` rewrite offered: {reason}"),
                edits: Vec::new(),
                applicability: Applicability::DisplayOnly,
            },
        },
    };
    Some(fix)
}

/// By the condition of each `if` on a tensor: what every interpretation of it agrees holds
/// tensors.
fn tensor_names(model: &SemanticModel) -> HashMap<TextRange, TensorNames> {
    let mut by_if: HashMap<TextRange, TensorNames> = HashMap::new();
    for event in &model.events {
        let EventKind::TensorIf { before, after } = &event.kind else {
            continue;
        };
        let before: BTreeSet<String> = before.iter().cloned().collect();
        let after: Vec<Option<BTreeSet<String>>> = after
            .iter()
            .map(|names| names.as_ref().map(|names| names.iter().cloned().collect()))
            .collect();
        let merged = match by_if.remove(&event.range) {
            None => TensorNames { before, after },
            Some(seen) => TensorNames {
                before: seen.before.intersection(&before).cloned().collect(),
                after: seen
                    .after
                    .iter()
                    .zip(after.iter().chain(std::iter::repeat(&None)))
                    .map(|(a, b)| match (a, b) {
                        (Some(a), Some(b)) => Some(a.intersection(b).cloned().collect()),
                        (a, b) => a.clone().or_else(|| b.clone()),
                    })
                    .collect(),
            },
        };
        by_if.insert(event.range, merged);
    }
    by_if
}
