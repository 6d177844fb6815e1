//! Reading `dynamic_shapes`: each input's entry (`{0: batch}`, `(batch, None)`, `None`) and the
//! `Dim`s it names (`Dim("batch", max=64)`, `Dim.AUTO`, derived `2 * d`), as declared.

use std::rc::Rc;

use ruff_text_size::Ranged;

use super::{Gathered, SpecProblem};
use crate::semantic::SemanticModel;
use crate::semantic::names::{self, Resolve};
use crate::semantic::symbolic::SymSize;
use crate::semantic::value::{DimDecl, DimSize, TensorDims};
use crate::syntax::ast::{self, Expr};

pub(super) struct DimReader<'g, 'm, 'a> {
    pub(super) model: &'m SemanticModel<'a>,
    pub(super) gathered: &'g Gathered<'a>,
}

impl DimReader<'_, '_, '_> {
    /// One parameter's entry: `{0: batch}`, `(batch, None)`, or `None`.
    pub(super) fn tensor_dims(
        &self,
        expr: &Expr,
        rank: Option<usize>,
        label: &str,
        problems: &mut Vec<SpecProblem>,
    ) -> TensorDims {
        let mut dims = TensorDims {
            rank,
            sizes: Vec::new(),
        };
        match expr {
            Expr::Dict(dict) => {
                for item in &dict.items {
                    let Some(key) = &item.key else { continue };
                    let Some(index) = names::int_literal(key) else {
                        continue;
                    };
                    let index = if index < 0 {
                        rank.map_or(-1, |rank| rank as i64 + index)
                    } else {
                        index
                    };
                    let Ok(index) = usize::try_from(index) else {
                        continue;
                    };
                    if let Some(rank) = rank {
                        if index >= rank {
                            problems.push(SpecProblem {
                                range: key.range(),
                                message: format!(
                                    "dimension {index} of `{label}` does not exist: its example input has {rank} dimension{}",
                                    if rank == 1 { "" } else { "s" }
                                ),
                            });
                            continue;
                        }
                    }
                    if let Some(dim) = self.dim(&item.value, 0) {
                        dims.sizes
                            .push((index, DimSize::Sym(SymSize::dim(Rc::new(dim)))));
                    }
                }
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                if let Some(rank) = rank {
                    if elts.len() != rank {
                        problems.push(SpecProblem {
                            range: expr.range(),
                            message: format!(
                                "`{label}` has {rank} dimensions but its `dynamic_shapes` entry lists {}",
                                elts.len()
                            ),
                        });
                    }
                }
                for (index, element) in elts.iter().enumerate() {
                    if let Some(dim) = self.dim(element, 0) {
                        dims.sizes
                            .push((index, DimSize::Sym(SymSize::dim(Rc::new(dim)))));
                    }
                }
            }
            Expr::Name(_) => {
                if let Some(resolved) = self.resolve(expr) {
                    if !matches!(resolved, Expr::Name(_)) {
                        return self.tensor_dims(resolved, rank, label, problems);
                    }
                }
            }
            _ => {}
        }
        dims
    }

    fn resolve(&self, expr: &Expr) -> Option<&Expr> {
        match expr {
            Expr::Name(name) => self.gathered.assignments.get(name.id.as_str()).copied(),
            // `args.max_len` of `args = parser.parse_args()`: the argument's default.
            Expr::Attribute(attribute) => {
                let Expr::Call(parsed) = self.resolve(&attribute.value)? else {
                    return None;
                };
                let Expr::Attribute(method) = &*parsed.func else {
                    return None;
                };
                if !matches!(method.attr.as_str(), "parse_args") {
                    return None;
                }
                self.gathered
                    .argument_defaults
                    .get(attribute.attr.as_str())
                    .copied()
            }
            _ => None,
        }
    }

    /// A `Dim` expression; `None` for a static entry.
    fn dim(&self, expr: &Expr, depth: usize) -> Option<DimDecl> {
        if depth > 8 {
            return None;
        }
        match expr {
            Expr::Call(call) => {
                let callee = self.model.qualified(&call.func)?;
                if !(callee.ends_with("Dim")
                    || callee.ends_with("Dim.DYNAMIC")
                    || callee.ends_with("Dim.AUTO"))
                {
                    return None;
                }
                let automatic = callee.ends_with("DYNAMIC") || callee.ends_with("AUTO");
                let name = call
                    .arguments
                    .args
                    .first()
                    .and_then(names::string_literal)
                    .unwrap_or("_")
                    .to_owned();
                // A bound written as a literal, or as a name bound to one in the file.
                let bound = |key: &str| {
                    let value = &call.arguments.find_keyword(key)?.value;
                    names::int_literal(value).or_else(|| names::int_literal(self.resolve(value)?))
                };
                let written = |key: &str| call.arguments.find_keyword(key).is_some();
                let (min, max) = (bound("min"), bound("max"));
                Some(DimDecl {
                    name,
                    min,
                    max,
                    bounds_unknown: (written("min") && min.is_none())
                        || (written("max") && max.is_none()),
                    automatic,
                    range: call.range(),
                })
            }
            Expr::Attribute(attribute) => match attribute.attr.as_str() {
                "AUTO" | "DYNAMIC" => Some(DimDecl {
                    name: attribute.attr.to_string(),
                    min: None,
                    max: None,
                    bounds_unknown: false,
                    automatic: true,
                    range: expr.range(),
                }),
                _ => None,
            },
            Expr::Name(name) => {
                if let Some((dim, range)) = self.gathered.dims_helper.get(name.id.as_str()) {
                    return Some(DimDecl {
                        name: (*dim).to_owned(),
                        min: None,
                        max: None,
                        bounds_unknown: false,
                        automatic: false,
                        range: *range,
                    });
                }
                self.dim(self.resolve(expr)?, depth + 1)
            }
            // A derived dimension (`2 * batch`): its range follows another's; the interpreter
            // does not reason about it.
            Expr::BinOp(binary) => {
                let base = self
                    .dim(&binary.left, depth + 1)
                    .or_else(|| self.dim(&binary.right, depth + 1))?;
                Some(DimDecl {
                    automatic: true,
                    range: expr.range(),
                    ..base
                })
            }
            _ => None,
        }
    }
}
