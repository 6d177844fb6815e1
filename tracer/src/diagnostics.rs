//! From a job's result to diagnostics: the worker's findings, and PT502 for a job that timed
//! out, crashed or ran out of memory, placed on the entrypoint's `model` line.

use std::path::{Path, PathBuf};

use pt2lsp_analyzer::{
    Applicability, Diagnostic, DimConstraint, Edit, Fix, LineIndex, Related, Rule, Severity,
    TextRange, TextSize, dim_constraint_fix_of, example_size_fix,
};
use serde_json::{Value, json};

use super::protocol::{Finding, FixKind, JobResult, Status, SuggestedFix};

/// One problem the tracer found, in a file, before it is matched to that file's text.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceDiagnostic {
    pub file: PathBuf,
    pub rule: Rule,
    pub message: String,
    /// 1-based.
    pub line: u32,
    /// 0-based, in UTF-8 bytes; `None` when only the line is known.
    pub column: Option<u32>,
    pub end_line: Option<u32>,
    pub end_column: Option<u32>,
    /// Structured `Suggested fixes:` of a constraint violation, for a later code action.
    pub fixes: Vec<SuggestedFix>,
    /// Library frames that lead to the failure and the entrypoint, as `Diagnostic::related`.
    pub related: Vec<Related>,
    /// A companion of a constraint violation found in another file than the entrypoint's: it
    /// stands where the dimensions are declared, carries torch's fix for them there, and
    /// names the guard's place (file, 1-based line). An info diagnostic: the failure itself is
    /// reported on the guard.
    pub declaration_of: Option<(PathBuf, u32)>,
}

impl TraceDiagnostic {
    /// The byte range in `text`: the columns the exporter gave, else the line's code (from its
    /// first non-blank character to its end).
    pub fn range(&self, text: &str, index: &LineIndex) -> TextRange {
        let line_span = |line: u32| {
            let start = index.line_start(line.saturating_sub(1), text).to_usize();
            let end = index.line_start(line, text).to_usize().max(start);
            let content = text[start..end].trim_end_matches(['\n', '\r']);
            (start, start + content.len())
        };
        let (line_start, line_end) = line_span(self.line);
        let content = &text[line_start..line_end];
        let indent = content.len() - content.trim_start().len();
        let clamp = |offset: usize, low: usize, high: usize| {
            let mut offset = offset.clamp(low, high);
            while !text.is_char_boundary(offset) {
                offset -= 1;
            }
            offset
        };
        let start = match self.column {
            Some(column) => clamp(line_start + column as usize, line_start, line_end),
            None => line_start + indent,
        };
        let end = match (self.end_line, self.end_column, self.column) {
            (Some(end_line), Some(end_column), Some(_)) if end_line >= self.line => {
                let (end_start, end_end) = line_span(end_line);
                clamp(end_start + end_column as usize, end_start, end_end)
            }
            _ => line_start + code_end(content),
        };
        let end = end.max(start);
        TextRange::new(TextSize::new(start as u32), TextSize::new(end as u32))
    }

    /// The analyzer's diagnostic for this finding in `text`. A tracer finding is an error: the
    /// real exporter failed, or (PT601) the program it wrote was run and computes something
    /// else than the model; a rule only the tracer reports has its own severity (PT706: a
    /// deployment target runs the ops, only slower).
    pub fn to_diagnostic(&self, text: &str, index: &LineIndex) -> Diagnostic {
        let fix = self.dim_fix(text);
        let mut range = self.range(text, index);
        // PT406 says an export that succeeded gave up a dimension: a warning, as the static
        // rule says it.
        let mut severity = if self.rule.is_static() && self.rule != Rule::DimensionMadeStatic {
            Severity::Error
        } else {
            self.rule.default_severity()
        };
        if self.declaration_of.is_some() {
            severity = Severity::Info;
            // On the declaration the fix edits, where there is one.
            if let Some(edit) = fix.as_ref().and_then(|fix| fix.edits.first()) {
                range = edit.range;
            }
        }
        Diagnostic {
            rule: self.rule,
            severity,
            message: self.message.clone(),
            range,
            fix,
            related: self.related.clone(),
        }
    }

    /// Torch's `Suggested fixes:` as an edit of `text`'s `dynamic_shapes` and `Dim`s. Ranges,
    /// equalities and derived dims are safe: they are the exporter's own statement of the
    /// constraints its trace needs, and every dimension stays dynamic.
    ///
    /// A constant (`batch = 1`) is different: it removes a `Dim` the user declared, and the
    /// exported program then accepts that one size. When the file's example inputs have that
    /// size (0 or 1, which the exporter always specializes, or a size outside the `Dim`'s
    /// range), the example is the cause, and the fix changes the example instead (unsafe, as
    /// the static PT405 fix: it changes an input, not the model). Otherwise the constant is
    /// shown as what it is and never applied (display only).
    pub fn dim_fix(&self, text: &str) -> Option<Fix> {
        let constraints: Option<Vec<DimConstraint>> =
            self.fixes.iter().map(dim_constraint).collect();
        let constraints = constraints.filter(|constraints| !constraints.is_empty())?;
        // The spec the `Dim`s are written in, when a module-level name other than the file's
        // `dynamic_shapes` binds it (the worker names it, `SuggestedFix::declared_spec`).
        let spec = self
            .fixes
            .iter()
            .map(|fix| fix.declared_spec.as_deref())
            .reduce(|one, other| if one == other { one } else { None })
            .flatten();
        let dim_constraint_fix = |text: &str, constraints: &[DimConstraint], applicability| {
            dim_constraint_fix_of(text, spec, constraints, applicability)
        };
        let (constants, others): (Vec<&DimConstraint>, Vec<&DimConstraint>) = constraints
            .iter()
            .partition(|constraint| matches!(constraint, DimConstraint::Constant { .. }));
        if constants.is_empty() {
            return dim_constraint_fix(text, &constraints, Applicability::Safe);
        }
        let from_examples: Option<Vec<Fix>> = constants
            .iter()
            .map(|constraint| match constraint {
                DimConstraint::Constant { name, value } => example_size_fix(text, name, *value),
                _ => None,
            })
            .collect();
        let Some(from_examples) = from_examples else {
            let mut fix = dim_constraint_fix(text, &constraints, Applicability::DisplayOnly)?;
            fix.title = format!("torch suggests (not applied): {}", fix.title);
            return Some(fix);
        };
        let others: Vec<DimConstraint> = others.into_iter().cloned().collect();
        let rest = if others.is_empty() {
            None
        } else {
            Some(dim_constraint_fix(text, &others, Applicability::Unsafe)?)
        };
        let mut edits: Vec<Edit> = Vec::new();
        let mut titles = Vec::new();
        for fix in from_examples.into_iter().chain(rest) {
            titles.push(fix.title);
            for edit in fix.edits {
                if !edits.iter().any(|known| known.range == edit.range) {
                    edits.push(edit);
                }
            }
        }
        edits.sort_by_key(|edit| (edit.range.start(), edit.range.end()));
        let overlapping = edits
            .windows(2)
            .any(|pair| pair[1].range.start() < pair[0].range.end());
        (!overlapping).then(|| Fix {
            title: titles.join("; "),
            edits,
            applicability: Applicability::Unsafe,
        })
    }

    /// Extra data carried with the diagnostic (JSON `data`, later the LSP diagnostic's `data`).
    pub fn data(&self) -> Option<Value> {
        (!self.fixes.is_empty()).then(|| json!({ "suggested_fixes": self.fixes }))
    }
}

/// One suggested fix as the analyzer's constraint; `None` when a field its kind needs is missing.
fn dim_constraint(fix: &SuggestedFix) -> Option<DimConstraint> {
    let name = fix.dim.clone();
    Some(match fix.kind {
        FixKind::Range => DimConstraint::Range {
            name,
            min: fix.min,
            max: fix.max,
        },
        FixKind::Equal => DimConstraint::Equal {
            name,
            to: fix.to.clone()?,
        },
        FixKind::Derived => DimConstraint::Derived {
            name,
            expr: fix.expr.clone()?,
        },
        FixKind::Constant => DimConstraint::Constant {
            name,
            value: fix.value?,
        },
    })
}

/// The length of a line without its trailing comment and blanks.
fn code_end(line: &str) -> usize {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (at, c) in line.char_indices() {
        match quote {
            Some(open) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == open {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return line[..at].trim_end().len(),
            None => {}
        }
    }
    line.trim_end().len()
}

/// Where a job's own problems go (timeouts, crashes): the entrypoint's `model` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub file: PathBuf,
    pub line: u32,
}

/// The diagnostics of one finished job.
pub fn from_result(result: &JobResult, anchor: &Anchor) -> Vec<TraceDiagnostic> {
    let mut out: Vec<TraceDiagnostic> = result
        .diagnostics
        .iter()
        .map(|finding| from_finding(finding, anchor))
        .collect();
    // torch's fix edits `dynamic_shapes`, which the guard's file does not hold: a companion
    // carries it where the dimensions are declared: the module that binds every `Dim` the fix
    // names (`pkg/dims.py`), else the entrypoint.
    let declared_in = |found: &TraceDiagnostic| -> Option<(PathBuf, u32)> {
        let mut places = found
            .fixes
            .iter()
            .map(|fix| Some((fix.declared_file.clone()?, fix.declared_line?)));
        let first = places.next()??;
        places
            .all(|place| place.as_ref() == Some(&first))
            .then_some(first)
            .filter(|(file, _)| normalized(file) != normalized(&anchor.file))
    };
    let companions: Vec<TraceDiagnostic> = out
        .iter()
        .filter(|found| {
            !found.fixes.is_empty()
                && (normalized(&found.file) != normalized(&anchor.file)
                    || declared_in(found).is_some())
        })
        .map(|found| {
            let suggested: Vec<&str> = found.fixes.iter().map(|fix| fix.text.as_str()).collect();
            let (file, line) =
                declared_in(found).unwrap_or_else(|| (anchor.file.clone(), anchor.line));
            TraceDiagnostic {
                file,
                rule: found.rule,
                message: format!(
                    "the dimensions declared here are violated by a guard in another file (see \
                     the related place); torch suggests: {}",
                    suggested.join(", ")
                ),
                line,
                column: None,
                end_line: None,
                end_column: None,
                fixes: found.fixes.clone(),
                related: vec![Related {
                    file: found.file.clone(),
                    line: found.line,
                    column: found.column.map_or(1, |column| column + 1),
                    message: "the guard torch added here".to_owned(),
                }],
                declaration_of: Some((found.file.clone(), found.line)),
            }
        })
        .collect();
    out.extend(companions);
    let own = |message: String| TraceDiagnostic {
        file: anchor.file.clone(),
        rule: Rule::WorkerCrash,
        message,
        line: anchor.line,
        column: None,
        end_line: None,
        end_column: None,
        fixes: Vec::new(),
        related: Vec::new(),
        declaration_of: None,
    };
    let detail = result.detail.as_deref().unwrap_or("");
    match result.status {
        // The worker's findings say it all (an out-of-memory error may come as one).
        Status::Ok | Status::Cancelled | Status::Failed | Status::Entrypoint => {}
        Status::Oom => {
            if out.is_empty() {
                out.push(own(or_summary(detail, "the trace ran out of memory")));
            }
        }
        // The worker says which line was running when it stopped the job, where it knows.
        Status::Timeout => {
            if !out.iter().any(|found| found.rule == Rule::WorkerCrash) {
                out.push(own(or_summary(detail, "the trace timed out")));
            }
        }
        Status::Crashed => {
            let mut message = or_summary(detail, "the trace crashed");
            if let Some(last) = crash_line(&result.output) {
                message = format!("{message} [{last}]");
            }
            out.push(own(message));
        }
        Status::Unavailable => out.push(own(format!(
            "the model was not traced: {}",
            or_summary(detail, "no tracer worker could be started")
        ))),
    }
    out
}

/// The worker's and the manager's details are whole sentences already.
fn or_summary(detail: &str, summary: &str) -> String {
    if detail.is_empty() {
        summary.to_owned()
    } else {
        detail.to_owned()
    }
}

/// The line of a crash report the faulthandler printed, if any (`Fatal Python error: ...`).
fn crash_line(output: &str) -> Option<&str> {
    output
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("Fatal Python error"))
}

fn from_finding(finding: &Finding, anchor: &Anchor) -> TraceDiagnostic {
    let rule = Rule::from_code_or_name(&finding.code).unwrap_or(Rule::ExportFailed);
    let file = if finding.file.as_os_str().is_empty() {
        anchor.file.clone()
    } else {
        finding.file.clone()
    };
    TraceDiagnostic {
        file,
        rule,
        message: finding.message.clone(),
        line: finding.line.max(1),
        column: finding.column,
        end_line: finding.end_line,
        end_column: finding.end_column,
        fixes: finding.fixes.clone(),
        related: finding
            .related
            .iter()
            .map(|related| Related {
                file: related.file.clone(),
                line: related.line.max(1),
                column: related.column.unwrap_or(1).max(1),
                message: related.message.clone(),
            })
            .collect(),
        declaration_of: None,
    }
}

/// Whether `# pt2lsp: ignore` or `# pt2lsp: ignore[CODE]` on the diagnostic's line silences it,
/// by the reader the static pass uses.
pub fn is_suppressed(text: &str, index: &LineIndex, line: u32, rule: Rule) -> bool {
    let start = index.line_start(line.saturating_sub(1), text).to_usize();
    let end = index.line_start(line, text).to_usize().max(start);
    pt2lsp_analyzer::suppression_silences(&text[start..end], rule)
}

/// Puts a trace diagnostic among a file's diagnostics, by the one merge rule of `pt2lsp check
/// --trace` and of the language server. A static diagnostic with the same code on the same line
/// is the same problem, confirmed by the exporter: it stays, with its message (which names the
/// user's expression, where the exporter's speaks of `Eq(u0, 1)`) and its fix, and `confirm`
/// marks it as found by both passes (taking what the trace adds: its data, and its fix where
/// [`trace_fix_wins`]). A trace diagnostic whose problem is already listed as traced (another
/// entrypoint reaching the same line) is dropped; any other is added.
///
/// `key` tells whether an item came from the static pass (alone or confirmed) and its (code,
/// line); `traced` is keyed the same way.
pub fn merge_traced<T, K: PartialEq>(
    items: &mut Vec<T>,
    traced: T,
    key: impl Fn(&T) -> (bool, K),
    mut confirm: impl FnMut(&mut T, &T),
) {
    let (_, wanted) = key(&traced);
    let mut found = false;
    for item in items.iter_mut() {
        let (is_static, at) = key(item);
        if at == wanted {
            found = true;
            if is_static {
                confirm(item, &traced);
            }
        }
    }
    if !found {
        items.push(traced);
    }
}

/// The line of installed code a diagnostic is about (its related place in `site-packages` or
/// `dist-packages`), for matching: two findings on the same user line about different library
/// lines are two problems (a static warning from one library line must not absorb the trace's
/// error from another). A finding without one matches any.
#[derive(Debug, Clone)]
pub struct LibraryPlace(pub Option<(PathBuf, u32)>);

impl LibraryPlace {
    /// The innermost installed place among `places` (file, 1-based line), in reading order.
    pub fn of<'p>(places: impl IntoIterator<Item = (&'p Path, u32)>) -> Self {
        let installed = |path: &Path| {
            path.components().any(|part| {
                matches!(
                    part.as_os_str().to_str(),
                    Some("site-packages" | "dist-packages")
                )
            })
        };
        Self(
            places
                .into_iter()
                .filter(|(path, _)| installed(path))
                .last()
                .map(|(path, line)| (normalized(path), line)),
        )
    }
}

impl PartialEq for LibraryPlace {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(one), Some(other)) => one == other,
            _ => true,
        }
    }
}

/// The stronger of two severities: a merge never lowers the exporter's.
pub fn stronger(one: Severity, other: Severity) -> Severity {
    let rank = |severity: Severity| match severity {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    };
    if rank(other) < rank(one) { other } else { one }
}

/// The code under which a diagnostic is matched with the other pass's. The exporter sees a
/// guard on data, and cannot always tell whether the data was a tensor compared (PT101), a
/// number read with `.item()` (PT102) or a data-dependent size (PT103); the static pass can.
/// So on one line these are one problem, and the static diagnostic's code is kept.
pub fn merge_code(code: &str) -> &str {
    match code {
        "PT102" | "PT103" => "PT101",
        other => other,
    }
}

/// Whether a static diagnostic is superseded by a trace diagnostic on its line: PT707 (a call a
/// configured deployment target cannot run, from the measured table) once that target's
/// lowering reported the same op there (PT701, PT703, PT705 name `aten.<op>.<overload>`). The
/// lowering's finding says it with the exporter's own words, so the static warning goes; a
/// PT707 about another op of the line stays.
pub fn superseded_by_lowering(
    static_code: &str,
    static_message: &str,
    traced_code: &str,
    traced_message: &str,
) -> bool {
    if static_code != "PT707" || !matches!(traced_code, "PT701" | "PT703" | "PT705") {
        return false;
    }
    let Some(op) = static_message
        .split_once("(`aten.")
        .and_then(|(_, rest)| rest.split_once("`)"))
        .map(|(op, _)| op)
    else {
        return false;
    };
    // torch names a default overload without its `.default` (`aten.histc`).
    traced_message.contains(&format!("`aten.{op}."))
        || traced_message.contains(&format!("`aten.{op}`"))
}

/// Whether a confirmed diagnostic takes the trace's fix instead of its own: where it has none,
/// or where the trace's is the exporter's own statement of what its trace needs (`Safe`, torch's
/// suggested `dynamic_shapes`) and its own is a guess (`Unsafe` or display-only).
pub fn trace_fix_wins(own: Option<&Fix>, traced: Option<&Fix>) -> bool {
    match (own, traced) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(own), Some(traced)) => {
            traced.applicability == Applicability::Safe && own.applicability != Applicability::Safe
        }
    }
}

/// torch's own words at the end of a traced message: its graph-break registry code and page
/// (`(torch GB0170: https://…/gb0170.html)`) and the data-dependent friendly forms it suggests,
/// written with the user's condition (`; torch suggests its data-dependent friendly forms: …`).
/// The worker puts them last, so that the part before is pt2lsp's own sentence.
pub fn torch_vocabulary(message: &str) -> Option<&str> {
    ["; torch suggests ", " (torch GB"]
        .iter()
        .filter_map(|marker| message.find(marker))
        .min()
        .map(|start| &message[start..])
}

/// A confirmed diagnostic's message: the static one, which names the problem in the user's
/// code, with torch's own words from the traced one (`torch_vocabulary`) after it, so that a
/// merge keeps the registry code and the forms torch suggests.
pub fn confirmed_message(own: &str, traced: &str) -> Option<String> {
    let torch = torch_vocabulary(traced)?;
    (!own.contains(torch)).then(|| format!("{own}{torch}"))
}

/// Drops diagnostics saying the same thing twice: one per (code, file, line).
pub fn dedup(diagnostics: &mut Vec<TraceDiagnostic>) {
    let mut seen = std::collections::HashSet::new();
    diagnostics.retain(|diagnostic| {
        seen.insert((
            diagnostic.rule,
            normalized(&diagnostic.file),
            diagnostic.line,
        ))
    });
}

/// A path as the file system knows it, so `a/../b.py` and a symlink match their target.
pub fn normalized(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lowering_finding_supersedes_the_static_warning_about_the_same_op() {
        let warned = "`torch.searchsorted` (`aten.searchsorted`) cannot run on the deployment \
                      target `executorch`: ...";
        let lowered = "ExecuTorch: `aten.searchsorted.Tensor` is not in core ATen, so the edge \
                       dialect refuses the program (to_edge)";
        assert!(superseded_by_lowering("PT707", warned, "PT705", lowered));
        let histc = "`torch.histc` (`aten.histc`) cannot run on the deployment target ...";
        let default_overload = "ExecuTorch: `aten.histc` is not in core ATen, so the edge \
                                dialect refuses the program (to_edge)";
        assert!(superseded_by_lowering(
            "PT707",
            histc,
            "PT705",
            default_overload
        ));
        assert!(!superseded_by_lowering(
            "PT707",
            histc,
            "PT705",
            "`aten.histc_out` ..."
        ));
        // Another op of the line, another rule, a warning of the lowering: both stay.
        let other = "ExecuTorch: `aten.avg_pool3d.default` is not in core ATen";
        assert!(!superseded_by_lowering("PT707", warned, "PT705", other));
        assert!(!superseded_by_lowering("PT101", warned, "PT705", lowered));
        assert!(!superseded_by_lowering("PT707", warned, "PT706", lowered));
    }

    fn at(line: u32, column: Option<u32>, end: Option<(u32, u32)>) -> TraceDiagnostic {
        TraceDiagnostic {
            file: PathBuf::from("m.py"),
            rule: Rule::DataDependentBranch,
            message: String::new(),
            line,
            column,
            end_line: end.map(|(line, _)| line),
            end_column: end.map(|(_, column)| column),
            fixes: Vec::new(),
            related: Vec::new(),
            declaration_of: None,
        }
    }

    #[test]
    fn a_confirmed_message_keeps_torchs_code_and_suggested_forms() {
        let link = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html";
        let traced = format!(
            "Data-dependent branching: Detected data-dependent branching (torch GB0170: {link})"
        );
        let own = "`if` needs the value of tensor `x.sum() > 0`";
        assert_eq!(
            confirmed_message(own, &traced).unwrap(),
            format!("{own} (torch GB0170: {link})")
        );
        let traced = "Could not guard on u0 > 2: bound it with torch._check; torch suggests its \
                      data-dependent friendly forms: `guard_or_false(n > 2)` ...";
        let merged = confirmed_message("`if` on `n > 2`", traced).unwrap();
        assert!(
            merged.starts_with("`if` on `n > 2`; torch suggests its data-dependent friendly forms: `guard_or_false(n > 2)`"),
            "{merged}"
        );
        // Nothing of torch's to add, or already there: the static message stays as it is.
        assert_eq!(confirmed_message(own, "Could not guard on u0 > 2"), None);
        assert_eq!(confirmed_message(&merged, traced), None);
    }

    #[test]
    fn ranges_use_columns_else_the_code_of_the_line() {
        let text = "x = 1\n    if x.sum() > 0:  # c\n";
        let index = LineIndex::new(text);
        let slice = |diagnostic: &TraceDiagnostic| {
            let range = diagnostic.range(text, &index);
            &text[range.start().to_usize()..range.end().to_usize()]
        };
        assert_eq!(slice(&at(2, Some(7), Some((2, 18)))), "x.sum() > 0");
        assert_eq!(slice(&at(2, None, None)), "if x.sum() > 0:");
        // Columns past the line are clamped to it; lines past the text land at its end.
        assert_eq!(slice(&at(2, Some(200), None)), "");
        assert_eq!(slice(&at(9, None, None)), "");
    }

    #[test]
    fn suggested_fixes_become_a_safe_edit_of_dynamic_shapes() {
        let text = "from torch.export import Dim\n\nbatch = Dim(\"batch\")\ndynamic_shapes = {\"x\": {0: batch}}\n";
        let mut diagnostic = at(3, None, None);
        diagnostic.fixes = vec![SuggestedFix {
            dim: "batch".to_owned(),
            kind: FixKind::Range,
            text: "batch = Dim('batch', max=16)".to_owned(),
            min: None,
            max: Some(16),
            to: None,
            expr: None,
            root: None,
            value: None,
            declared_file: None,
            declared_line: None,
            declared_spec: None,
        }];
        let fix = diagnostic
            .to_diagnostic(text, &LineIndex::new(text))
            .fix
            .expect("a fix");
        assert_eq!(fix.applicability, Applicability::Safe);
        assert_eq!(fix.edits.len(), 1);
        assert_eq!(fix.edits[0].content, "Dim(\"batch\", max=16)");
        // A suggestion missing the field its kind needs gives no fix rather than half of one.
        diagnostic.fixes[0].kind = FixKind::Equal;
        assert!(diagnostic.dim_fix(text).is_none());

        // A `Dim` written inside a spec bound to another name (an entrypoint table's
        // `dynamic-shapes = "pkg.export_spec:DYNAMIC_SHAPES"`) is edited there once the worker
        // names the spec.
        let text = "from torch.export import Dim\n\nDYNAMIC_SHAPES = {\"x\": {0: Dim(\"batch\", max=64)}}\n";
        diagnostic.fixes[0].kind = FixKind::Range;
        assert!(diagnostic.dim_fix(text).is_none());
        diagnostic.fixes[0].declared_spec = Some("DYNAMIC_SHAPES".to_owned());
        let fix = diagnostic.dim_fix(text).expect("a fix of the named spec");
        assert_eq!(fix.applicability, Applicability::Safe);
        assert_eq!(fix.edits.len(), 1);
        assert_eq!(fix.edits[0].content, "Dim(\"batch\", max=16)");
    }

    #[test]
    fn suppression_comments_apply_to_traced_diagnostics() {
        let text = "a  # pt2lsp: ignore[PT1]\nb  # pt2lsp: ignore\nc  # pt2lsp: ignore[PT2]\n";
        let index = LineIndex::new(text);
        let rule = Rule::DataDependentBranch;
        assert!(is_suppressed(text, &index, 1, rule));
        assert!(is_suppressed(text, &index, 2, rule));
        assert!(!is_suppressed(text, &index, 3, rule));
    }

    #[test]
    fn a_problem_both_passes_find_keeps_the_static_message_and_is_marked_confirmed() {
        // (is static, code, line, message, confirmed)
        type Item = (bool, &'static str, u32, &'static str, bool);
        let key = |item: &Item| (item.0, (item.1, item.2));
        let confirm = |item: &mut Item, _: &Item| item.4 = true;
        let mut items: Vec<Item> = vec![
            (true, "PT101", 5, "`if` on `h.mean() > 0`", false),
            (true, "PT102", 7, "`.item()`", false),
        ];
        let traced = (false, "PT101", 5, "Could not guard on Eq(u0, 1)", false);
        merge_traced(&mut items, traced, key, confirm);
        assert_eq!(items.len(), 2);
        assert_eq!(items[0], (true, "PT101", 5, "`if` on `h.mean() > 0`", true));
        // A new problem is added; the same one found again (another entrypoint) is not.
        let other = (false, "PT401", 11, "guard on batch", false);
        merge_traced(&mut items, other, key, confirm);
        merge_traced(&mut items, other, key, confirm);
        assert_eq!(items.len(), 3);
        assert_eq!(items[2].1, "PT401");
    }

    #[test]
    fn timeouts_and_crashes_become_pt502_on_the_anchor() {
        let anchor = Anchor {
            file: PathBuf::from("/p/m.py"),
            line: 12,
        };
        let result = JobResult {
            targets: None,
            id: 1,
            status: Status::Crashed,
            diagnostics: Vec::new(),
            detail: Some("the trace crashed with SIGSEGV".to_owned()),
            output: "Fatal Python error: Segmentation fault\n".to_owned(),
            output_truncated: false,
            elapsed: None,
            export: None,
            shapes: Vec::new(),
            dependencies: Vec::new(),
            passed_lines: Vec::new(),
            replayed: false,
        };
        let diagnostics = from_result(&result, &anchor);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].rule, Rule::WorkerCrash);
        assert_eq!(diagnostics[0].line, 12);
        assert!(diagnostics[0].message.contains("SIGSEGV"));
        assert!(diagnostics[0].message.contains("Segmentation fault"));
    }
}
