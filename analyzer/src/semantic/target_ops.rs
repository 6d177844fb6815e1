//! The torch calls a deployment target cannot run in any configuration: the table
//! `scripts/target_ops.py` makes from the target packages' own op lists and measures
//! (`analyzer/data/target_ops.tsv`), read once. The interpreter records a call of one of them
//! (`EventKind::TargetOp`); PT707 judges it against the targets the entrypoint names.

use std::sync::OnceLock;

use super::EventKind;

/// One ATen op with a Python entry of its own name that some targets cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetOp {
    /// The ATen op (`searchsorted`): `torch.searchsorted` and/or the method `Tensor.searchsorted`.
    pub(crate) name: &'static str,
    pub(crate) function: bool,
    pub(crate) method: bool,
    /// The targets that cannot run it (`core-aten`, `executorch`, `onnx`), in the table's order.
    pub(crate) targets: Vec<&'static str>,
    /// Its overloads a call without `out=` reaches (`searchsorted.Tensor`).
    pub(crate) overloads: Vec<&'static str>,
}

const TABLE: &str = include_str!("../../data/target_ops.tsv");

/// The rows of the table.
pub(crate) fn all() -> &'static [TargetOp] {
    static ROWS: OnceLock<Vec<TargetOp>> = OnceLock::new();
    ROWS.get_or_init(|| parse(TABLE))
}

/// What the table was measured with (`torch 2.15.0, executorch 1.5.1, onnxscript 0.7.2`).
pub(crate) fn measured_with() -> &'static str {
    TABLE
        .lines()
        .filter_map(|line| line.strip_prefix("# "))
        .find(|line| line.starts_with("torch "))
        .unwrap_or("the installed torch")
}

/// The row of `torch.<name>(...)`.
pub(crate) fn function(name: &str) -> Option<&'static TargetOp> {
    all().iter().find(|row| row.function && row.name == name)
}

/// The row of `tensor.<name>(...)`.
pub(crate) fn method(name: &str) -> Option<&'static TargetOp> {
    all().iter().find(|row| row.method && row.name == name)
}

/// The event of a call of `torch.<name>(...)` (`method`: `tensor.<name>(...)`), when the table
/// has the op.
pub(crate) fn call_event(name: &str, method: bool) -> Option<EventKind> {
    let row = if method {
        self::method(name)
    } else {
        function(name)
    };
    row.map(|_| EventKind::TargetOp {
        name: name.to_owned(),
        method,
        lowered_for: Vec::new(),
    })
}

/// The deployment targets the entrypoint of `module` is lowered for: those configured for every
/// entrypoint (`Settings::targets`), those of the `[[tool.pt2lsp.entrypoints]]` tables naming
/// `module` (`Settings::entrypoint_targets`) and the file's own `targets = [...]`, in that
/// order, each once. Empty when the file is no entrypoint: no export of it is written there
/// (`is_entrypoint`: an entrypoint the analysis found) and no table names it.
pub(crate) fn of_entrypoint(
    settings: &crate::Settings,
    module: Option<&str>,
    body: &[crate::syntax::ast::Stmt],
    is_entrypoint: bool,
) -> Vec<String> {
    let tables: Vec<&String> = settings
        .entrypoint_targets
        .iter()
        .filter(|(named, _)| module == Some(named.as_str()))
        .flat_map(|(_, targets)| targets)
        .collect();
    if !is_entrypoint && tables.is_empty() {
        return Vec::new();
    }
    let mut targets: Vec<String> = Vec::new();
    let declared = super::declared_targets(body);
    for target in settings.targets.iter().chain(tables).chain(&declared) {
        if !targets.contains(target) {
            targets.push(target.clone());
        }
    }
    targets
}

/// Adds `targets` to what each call of a target op among `events` is lowered for: the events
/// an entrypoint's analysis recorded, wherever they are reported later.
pub(crate) fn stamp<'e>(
    events: impl IntoIterator<Item = &'e mut super::Event>,
    targets: &[String],
) {
    if targets.is_empty() {
        return;
    }
    for event in events {
        if let EventKind::TargetOp { lowered_for, .. } = &mut event.kind {
            for target in targets {
                if !lowered_for.contains(target) {
                    lowered_for.push(target.clone());
                }
            }
        }
    }
}

fn parse(text: &'static str) -> Vec<TargetOp> {
    let list = |field: &'static str| -> Vec<&'static str> {
        field.split(',').filter(|part| !part.is_empty()).collect()
    };
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let name = fields.next()?;
            let entries = list(fields.next()?);
            let targets = list(fields.next()?);
            let overloads = list(fields.next().unwrap_or_default());
            Some(TargetOp {
                name,
                function: entries.contains(&"function"),
                method: entries.contains(&"method"),
                targets,
                overloads,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_table_reads() {
        let searchsorted = function("searchsorted").expect("a row for torch.searchsorted");
        assert_eq!(searchsorted.targets, ["core-aten", "executorch", "onnx"]);
        assert!(searchsorted.overloads.contains(&"searchsorted.Tensor"));
        // `Tensor.searchsorted` is not torch's binding of the op: no method row.
        assert_eq!(method("searchsorted"), None);
        assert!(method("histc").is_some() && function("histc").is_some());
        // Ops every target runs are not in it.
        assert_eq!(function("relu"), None);
        assert_eq!(function("cumsum"), None);
        assert!(
            measured_with().starts_with("torch 2."),
            "{}",
            measured_with()
        );
        assert!(
            all()
                .iter()
                .all(|row| !row.targets.is_empty() && (row.function || row.method))
        );
    }
}
