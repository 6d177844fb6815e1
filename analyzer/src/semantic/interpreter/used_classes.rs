//! The module classes a model is made of, read from the names its classes' methods use: what
//! an exported model may run, so that a class it never names is not reported as exported.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::semantic::SemanticModel;
use crate::syntax::ast::Expr;
use crate::syntax::ast::visitor::{self, Visitor};

/// The module classes of the analysed file that class `root` names anywhere in its methods,
/// and those they name, `root` included: the classes its model may be made of (a `ModuleList`
/// of `Block`s names `Block` in `__init__`).
pub(super) fn classes_used_from(model: &SemanticModel<'_>, root: usize) -> FxHashSet<usize> {
    classes_named_from(model, [root], |info| info.file == 0)
}

/// The module classes of every file of the program that the `roots`' methods name, directly
/// or through the classes they name, matched by name (two classes of one name both count): what
/// the exported model may run. A class none of them names is never part of it.
pub(crate) fn classes_used_across(
    model: &SemanticModel<'_>,
    roots: impl IntoIterator<Item = usize>,
) -> FxHashSet<usize> {
    classes_named_from(model, roots, |_| true)
}

fn classes_named_from(
    model: &SemanticModel<'_>,
    roots: impl IntoIterator<Item = usize>,
    counts: impl Fn(&crate::semantic::ClassInfo<'_>) -> bool,
) -> FxHashSet<usize> {
    struct Names<'n>(&'n mut FxHashSet<String>);
    impl<'a> Visitor<'a> for Names<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            match expr {
                Expr::Name(name) => {
                    self.0.insert(name.id.to_string());
                }
                // `blocks.Block(dim)` of `import zoo.blocks as blocks`.
                Expr::Attribute(attribute) => {
                    self.0.insert(attribute.attr.to_string());
                }
                _ => {}
            }
            visitor::walk_expr(self, expr);
        }
    }
    let by_name: FxHashMap<&str, Vec<usize>> = model
        .classes
        .iter()
        .enumerate()
        .filter(|(_, info)| info.is_module && counts(info))
        .fold(FxHashMap::default(), |mut by_name, (index, info)| {
            by_name
                .entry(info.def.name.as_str())
                .or_default()
                .push(index);
            by_name
        });
    let mut used: FxHashSet<usize> = roots.into_iter().collect();
    let mut pending: Vec<usize> = used.iter().copied().collect();
    while let Some(class) = pending.pop() {
        let mut names = FxHashSet::default();
        for &function in model.classes[class].methods.values() {
            let mut collector = Names(&mut names);
            for stmt in &model.functions[function].def.body {
                collector.visit_stmt(stmt);
            }
        }
        for name in &names {
            for &named in by_name.get(name.as_str()).into_iter().flatten() {
                if used.insert(named) {
                    pending.push(named);
                }
            }
        }
    }
    used
}
