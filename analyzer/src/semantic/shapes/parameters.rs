//! `forward`'s parameters as `dynamic_shapes` and the example inputs bind to them: the named
//! ones, and `*args`, which takes the positional inputs past them as one tuple.

use crate::syntax::ast::{self, Expr};

pub(super) struct ForwardParameters {
    /// Every parameter after `self`, positional ones first.
    pub(super) names: Vec<String>,
    /// How many of `names` can be passed by position.
    pub(super) positional: usize,
    /// The name of `*args`.
    pub(super) varargs: Option<String>,
    pub(super) has_kwargs: bool,
}

/// `forward`'s `*args` parameter as the example inputs fill it.
pub(super) struct PassedVarargs {
    pub(super) name: String,
    /// Its place among the top-level entries of a tuple `dynamic_shapes`.
    pub(super) slot: usize,
    /// How many example inputs it takes, when the analysis can count them.
    pub(super) count: Option<usize>,
}

impl PassedVarargs {
    /// What torch rejects in the `dynamic_shapes` entry of `*args` (measured on torch 2.15):
    /// the key itself when no input fills it, an entry other than a tuple (torch binds the
    /// inputs as a tuple, and a list, a dict or `None` do not match its structure), a tuple
    /// of another length.
    pub(super) fn entry_problem(&self, value: &Expr) -> Option<String> {
        let name = &self.name;
        if self.count == Some(0) {
            return Some(format!(
                "`dynamic_shapes` key `{name}` names `*{name}`, which the example inputs pass nothing to; torch wants exactly the inputs given: remove the key"
            ));
        }
        let kind = match value {
            Expr::List(_) => "a list",
            Expr::Dict(_) => "a dict",
            Expr::NoneLiteral(_) => "`None`",
            Expr::Tuple(tuple) => {
                let count = self.count?;
                if tuple
                    .elts
                    .iter()
                    .any(|element| matches!(element, Expr::Starred(_)))
                    || tuple.elts.len() == count
                {
                    return None;
                }
                return Some(format!(
                    "`dynamic_shapes[\"{name}\"]` has {} entries but `*{name}` takes {count} example inputs; give one entry per input (`None` for a static one)",
                    tuple.elts.len()
                ));
            }
            _ => return None,
        };
        Some(format!(
            "`dynamic_shapes[\"{name}\"]` is {kind}, but torch binds `*{name}`'s inputs as a tuple and wants a tuple here, with one entry per input (`None` for a static one)"
        ))
    }
}

impl ForwardParameters {
    /// The parameter each example input feeds (`positional` arguments, then `keywords` by
    /// name), or `None` when the call does not bind (too many arguments, an unknown keyword, a
    /// parameter given twice): torch rejects such calls before tracing, and the analysis does
    /// not guess.
    pub(super) fn bind(
        &self,
        positional: usize,
        keywords: &[(String, &Expr)],
    ) -> Option<Vec<String>> {
        if positional > self.positional {
            return None;
        }
        let mut bound: Vec<String> = self.names[..positional].to_vec();
        for (name, _) in keywords {
            let known = self.names.iter().any(|parameter| parameter == name);
            if bound.contains(name) || !(known || self.has_kwargs) {
                return None;
            }
            bound.push(name.clone());
        }
        Some(bound)
    }
}

pub(super) fn forward_parameters(def: &ast::StmtFunctionDef) -> ForwardParameters {
    let parameters = &def.parameters;
    let positional: Vec<String> = parameters
        .posonlyargs
        .iter()
        .chain(parameters.args.iter())
        .skip(1)
        .map(|parameter| parameter.parameter.name.to_string())
        .collect();
    let count = positional.len();
    let mut names = positional;
    names.extend(
        parameters
            .kwonlyargs
            .iter()
            .map(|parameter| parameter.parameter.name.to_string()),
    );
    ForwardParameters {
        names,
        positional: count,
        varargs: parameters
            .vararg
            .as_ref()
            .map(|parameter| parameter.name.to_string()),
        has_kwargs: parameters.kwarg.is_some(),
    }
}
