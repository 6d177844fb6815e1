//! The exporter as ground truth where it ran: a static error that a successful export
//! contradicts is not an error.
//!
//! A static error says "export fails here". An export that succeeded and ran the line (a graph
//! node was made on or under it, a guard was added there) passed it without failing, so the
//! static claim is wrong for that entrypoint. A constraint claim (PT401, PT403, PT405: "export
//! fails with Constraints violated") is wrong wherever the export of the dimensions it is about
//! succeeded, whether or not the line ran: the exporter checked every guard it added. The claim
//! stands while any export that reaches the file did not succeed (it failed, crashed or timed
//! out), or while a job's reach is unknown: the exporter said nothing that contradicts it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use pt2lsp_analyzer::Rule;

use super::diagnostics::normalized;
use super::protocol::{JobResult, Status};

/// What the traces of one run say about the files they reached.
#[derive(Debug, Default)]
pub struct GroundTruth {
    /// File → the lines exports that succeeded ran there, and the first such export's label.
    passed: HashMap<PathBuf, (HashSet<u32>, String)>,
    /// Files some export that succeeded reached (imported, ran), with its label.
    exported: HashMap<PathBuf, String>,
    /// Files some export that did not succeed reached.
    unsettled: HashSet<PathBuf>,
    /// A job that did not succeed and whose reach is unknown: nothing is contradicted.
    unknown_reach: bool,
}

impl GroundTruth {
    /// Adds one finished job, `label` naming its entrypoint (`scripts/export.py:23`).
    pub fn add(&mut self, result: &JobResult, label: &str) {
        let exported = Self::exported(result);
        match result.status {
            Status::Cancelled => return,
            _ if exported => {}
            _ if result.dependencies.is_empty() => {
                self.unknown_reach = true;
                return;
            }
            _ => {}
        }
        for file in &result.dependencies {
            self.add_file(file, exported, &[], label);
        }
        if exported {
            for passed in &result.passed_lines {
                self.add_file(&passed.file, true, &passed.lines, label);
            }
        }
    }

    /// Adds what one entrypoint's trace says of one file it reached: whether its export
    /// succeeded, and the file's lines it ran.
    pub fn add_file(&mut self, file: &Path, exported: bool, lines: &[u32], label: &str) {
        let file = normalized(file);
        if !exported {
            self.unsettled.insert(file);
            return;
        }
        self.exported
            .entry(file.clone())
            .or_insert_with(|| label.to_owned());
        if !lines.is_empty() {
            self.passed
                .entry(file)
                .or_insert_with(|| (HashSet::new(), label.to_owned()))
                .0
                .extend(lines.iter().copied());
        }
    }

    /// Whether the export of an entrypoint whose trace `result` is succeeded (a program was
    /// made, even if it then disagreed with eager).
    pub fn exported(result: &JobResult) -> bool {
        result.status == Status::Ok || !result.passed_lines.is_empty()
    }

    /// Whether every export that reached `file` succeeded and one of them ran `line`
    /// (1-based): whatever the code there does, it did not fail.
    pub fn ran_and_succeeded(&self, file: &Path, line: u32) -> bool {
        let file = normalized(file);
        !self.unknown_reach
            && !self.unsettled.contains(&file)
            && self
                .passed
                .get(&file)
                .is_some_and(|(lines, _)| lines.contains(&line))
    }

    /// Why the exporter contradicts static `diagnostic` at `line` (1-based) of `file`, or `None`:
    /// an error by its own line ([`GroundTruth::contradicts`]); a companion (an info PT401 on a
    /// `Dim` that carries the fix of a guard in another file) by that guard's place, its related
    /// location, since a contradicted guard needs no fix. Relative related paths are under
    /// `base`. `check --trace` and the editor both ask this.
    pub fn contradicts_static(
        &self,
        file: &Path,
        line: u32,
        diagnostic: &pt2lsp_analyzer::Diagnostic,
        base: &Path,
    ) -> Option<String> {
        use pt2lsp_analyzer::Severity;
        match diagnostic.severity {
            Severity::Error => self.contradicts(file, line, diagnostic.rule),
            Severity::Info if diagnostic.rule == Rule::DynamicDimGuard => {
                diagnostic.related.iter().find_map(|guard| {
                    let guard_file = base.join(&guard.file);
                    self.contradicts(&guard_file, guard.line, diagnostic.rule)
                        .map(|why| format!("its guard is contradicted: {why}"))
                })
            }
            _ => None,
        }
    }

    /// Why the exporter contradicts a static error of `rule` at `line` (1-based) of `file`, or
    /// `None` when nothing it did says so.
    pub fn contradicts(&self, file: &Path, line: u32, rule: Rule) -> Option<String> {
        if self.unknown_reach {
            return None;
        }
        let file = normalized(file);
        if self.unsettled.contains(&file) {
            return None;
        }
        if let Some((lines, label)) = self.passed.get(&file) {
            if lines.contains(&line) {
                return Some(format!("the export of {label} ran this line and succeeded"));
            }
        }
        let constraint = matches!(
            rule,
            Rule::DynamicDimGuard | Rule::InvalidDynamicShapes | Rule::SpecializingExampleSize
        );
        let label = self.exported.get(&file)?;
        constraint.then(|| {
            format!(
                "the export of {label} succeeded with the dimensions it declares: no constraint \
                 was violated"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::PassedLines;

    fn result(status: Status, dependencies: &[&str], passed: &[(&str, &[u32])]) -> JobResult {
        serde_json::from_value::<JobResult>(serde_json::json!({
            "id": 1,
            "status": status,
            "dependencies": dependencies,
            "passed_lines": passed
                .iter()
                .map(|(file, lines)| PassedLines { file: PathBuf::from(file), lines: lines.to_vec() })
                .collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    #[test]
    fn a_line_a_successful_export_ran_contradicts_a_static_error_there() {
        let mut truth = GroundTruth::default();
        truth.add(
            &result(
                Status::Ok,
                &["/p/export.py", "/p/m/head.py"],
                &[("/p/m/head.py", &[14])],
            ),
            "export.py:23",
        );
        let head = Path::new("/p/m/head.py");
        assert!(
            truth
                .contradicts(head, 14, Rule::DataDependentBranch)
                .is_some_and(|why| why.contains("export.py:23"))
        );
        // A line the export did not run: no evidence.
        assert_eq!(truth.contradicts(head, 20, Rule::DataDependentBranch), None);
        // A constraint claim is contradicted by the export succeeding at all.
        assert!(truth.contradicts(head, 20, Rule::DynamicDimGuard).is_some());
        // A file no export reached: nothing said.
        assert_eq!(
            truth.contradicts(Path::new("/p/m/loss.py"), 3, Rule::DynamicDimGuard),
            None
        );
    }

    #[test]
    fn a_line_ran_and_succeeded_only_where_every_export_reaching_its_file_succeeded() {
        let mut truth = GroundTruth::default();
        truth.add(
            &result(Status::Ok, &["/p/a.py", "/p/m.py"], &[("/p/m.py", &[5])]),
            "a.py:3",
        );
        let m = Path::new("/p/m.py");
        assert!(truth.ran_and_succeeded(m, 5));
        assert!(!truth.ran_and_succeeded(m, 6));
        truth.add(
            &result(Status::Failed, &["/p/b.py", "/p/m.py"], &[]),
            "b.py:3",
        );
        assert!(!truth.ran_and_succeeded(m, 5));
    }

    #[test]
    fn an_export_that_did_not_succeed_keeps_the_claims_on_the_files_it_reaches() {
        let mut truth = GroundTruth::default();
        truth.add(
            &result(Status::Ok, &["/p/a.py", "/p/m.py"], &[("/p/m.py", &[5])]),
            "a.py:3",
        );
        truth.add(
            &result(Status::Failed, &["/p/b.py", "/p/m.py"], &[]),
            "b.py:3",
        );
        assert_eq!(
            truth.contradicts(Path::new("/p/m.py"), 5, Rule::DataDependentBranch),
            None
        );
        // A crash whose reach is unknown contradicts nothing anywhere.
        let mut truth = GroundTruth::default();
        truth.add(
            &result(Status::Ok, &["/p/a.py"], &[("/p/a.py", &[5])]),
            "a.py:3",
        );
        truth.add(&result(Status::Crashed, &[], &[]), "c.py:1");
        assert_eq!(
            truth.contradicts(Path::new("/p/a.py"), 5, Rule::DataDependentBranch),
            None
        );
    }
}
