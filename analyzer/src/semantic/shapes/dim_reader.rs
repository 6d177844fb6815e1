//! Reading `dynamic_shapes`: each input's entry (`{0: batch}`, `(batch, None)`, `None`,
//! `TensorSpec([B, STATIC])`) and the dimensions it names (`Dim("batch", max=64)`, `Dim.AUTO`,
//! derived `2 * d`, `@dynamic_spec`'s `ShapeVar("B")`), as declared.

use std::rc::Rc;

use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashMap;

use super::{Gathered, GlobalNames, ImportedDim, SpecProblem, gathered_in};
use crate::names::{self, Resolve};
use crate::semantic::SemanticModel;
use crate::semantic::symbolic::SymSize;
use crate::semantic::value::{DimDecl, DimSize, TensorDims};
use crate::syntax::ast::{self, Expr};

/// The module of `@dynamic_spec` and its vocabulary (`ShapeVar`, `TensorSpec`, `ParamsSpec`,
/// `ShapesSpec`, `STATIC`), new in torch 2.15 and exported nowhere else.
const DYNAMIC_SPEC_MODULE: &str = "torch.fx.experimental.dynamic_spec";

/// The name of `@dynamic_spec`'s vocabulary a qualified name is (`ShapeVar`), if it is one.
pub(super) fn spec_item(qualified: &str) -> Option<&str> {
    qualified
        .strip_prefix(DYNAMIC_SPEC_MODULE)?
        .strip_prefix('.')
}

/// The bounds `ShapesSpec(assumptions=[B > 4, B <= 64])` gives a `ShapeVar`, by its name.
pub(super) type Assumed = FxHashMap<String, (Option<i64>, Option<i64>)>;

pub(super) struct DimReader<'g, 'm, 'a> {
    /// The imports of the file the declaration is written in.
    pub(super) names: &'m dyn Resolve,
    pub(super) gathered: &'g Gathered<'a>,
    pub(super) assumed: Assumed,
    /// The program's files, where a `Dim` imported from another workspace module is read
    /// (`from pkg.dims import BATCH`).
    pub(super) program: &'m SemanticModel<'m>,
    /// The `Dim`s read where another module binds them, so that a fix can edit them there.
    pub(super) imported: std::cell::RefCell<Vec<ImportedDim>>,
    /// The spec is another module's (`from pkg.shapes import DYNAMIC_SHAPES`).
    pub(super) foreign: Option<ForeignSpec>,
}

impl<'a> DimReader<'_, '_, 'a> {
    /// The `@dynamic_spec` name `expr` calls (`TensorSpec` for `T([...])` imported as `T`).
    pub(super) fn spec_call<'e>(&self, expr: &'e Expr) -> Option<(String, &'e ast::ExprCall)> {
        let Expr::Call(call) = expr else {
            return None;
        };
        let qualified = self.names.qualified(&call.func)?;
        Some((spec_item(&qualified)?.to_owned(), call))
    }

    /// The mapping a `ShapesSpec(params, assumptions=...)` / `ParamsSpec({...})` wraps, its
    /// assumptions, and whether the spec is written with `@dynamic_spec`'s types (whose
    /// mapping leaves the inputs it does not name static); `expr` itself otherwise.
    pub(super) fn unwrap_spec<'e>(&self, expr: &'e Expr) -> (&'e Expr, Option<&'e Expr>, bool)
    where
        'a: 'e,
    {
        let mut current = expr;
        let mut assumptions = None;
        let mut typed = false;
        for _ in 0..4 {
            let Some((name, call)) = self.spec_call(current) else {
                break;
            };
            if name == "ShapesSpec" {
                assumptions = call
                    .arguments
                    .find_keyword("assumptions")
                    .map(|keyword| &keyword.value)
                    .or(assumptions);
            } else if name != "ParamsSpec" {
                break;
            }
            typed = true;
            let Some(params) = call
                .arguments
                .args
                .first()
                .or_else(|| Some(&call.arguments.find_keyword("params")?.value))
            else {
                break;
            };
            current = self.resolve(params).unwrap_or(params);
        }
        if let Expr::Dict(dict) = current {
            typed |= dict
                .items
                .iter()
                .any(|item| self.spec_call(&item.value).is_some());
        }
        (current, assumptions, typed)
    }

    /// The bounds a list of `ShapesSpec` assumptions gives each `ShapeVar`: comparisons of one
    /// with a number (`B > 4`, `64 >= B`); the others (`B % 2 == 0`) say nothing the ranges
    /// can hold.
    pub(super) fn assumptions(&self, list: &Expr) -> Assumed {
        let mut assumed = Assumed::default();
        let Some(elements) = self.gathered.sequence(list) else {
            return assumed;
        };
        for element in elements {
            let Expr::Compare(compare) = element else {
                continue;
            };
            let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
                continue;
            };
            let (var, bound, op) = match (
                self.dim(&compare.left, 0),
                names::int_literal(right),
                self.dim(right, 0),
                names::int_literal(&compare.left),
            ) {
                (Some(var), Some(bound), ..) => (var, bound, *op),
                (None, None, Some(var), Some(bound)) => (var, bound, flipped(*op)),
                _ => continue,
            };
            if !var.unbacked {
                continue;
            }
            let entry = assumed.entry(var.name).or_default();
            let (low, high) = match op {
                ast::CmpOp::Gt => (Some(bound + 1), None),
                ast::CmpOp::GtE => (Some(bound), None),
                ast::CmpOp::Lt => (None, Some(bound - 1)),
                ast::CmpOp::LtE => (None, Some(bound)),
                ast::CmpOp::Eq => (Some(bound), Some(bound)),
                _ => (None, None),
            };
            entry.0 = entry.0.max(low);
            entry.1 = match (entry.1, high) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        assumed
    }

    /// One parameter's entry: `{0: batch}`, `(batch, None)`, or `None`.
    /// One parameter's entry; `unknown` is set when some of it cannot be read (a `Dim` imported
    /// from elsewhere, a function's result), so that its dimensions are not taken for static.
    pub(super) fn tensor_dims(
        &self,
        expr: &Expr,
        rank: Option<usize>,
        label: &str,
        problems: &mut Vec<SpecProblem>,
        unknown: &mut bool,
    ) -> TensorDims {
        let mut dims = TensorDims {
            rank,
            sizes: Vec::new(),
        };
        match expr {
            Expr::Dict(dict) => {
                for item in &dict.items {
                    let Some(index) = item.key.as_ref().and_then(names::int_literal) else {
                        *unknown = true;
                        continue;
                    };
                    let key = item.key.as_ref().expect("an integer key");
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
                    if let Some(dim) = self.entry_dim(&item.value) {
                        dims.sizes
                            .push((index, DimSize::Sym(SymSize::dim(Rc::new(dim)))));
                    } else if !self.is_static(&item.value, 0) {
                        *unknown = true;
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
                    if let Some(dim) = self.entry_dim(element) {
                        dims.sizes
                            .push((index, DimSize::Sym(SymSize::dim(Rc::new(dim)))));
                    } else if !self.is_static(element, 0) {
                        *unknown = true;
                    }
                }
            }
            Expr::Name(_) => match self.resolve(expr) {
                Some(resolved) if !matches!(resolved, Expr::Name(_)) => {
                    return self.tensor_dims(resolved, rank, label, problems, unknown);
                }
                _ => *unknown = !self.is_static(expr, 0),
            },
            Expr::NoneLiteral(_) => {}
            // `TensorSpec([B, STATIC])`: one entry per dimension, as a list.
            Expr::Call(_) => {
                if let Some(("TensorSpec", call)) = self
                    .spec_call(expr)
                    .as_ref()
                    .map(|(name, call)| (name.as_str(), *call))
                {
                    let listed = call
                        .arguments
                        .args
                        .first()
                        .or_else(|| Some(&call.arguments.find_keyword("dims")?.value));
                    if let Some(listed) = listed {
                        return self.tensor_dims(listed, rank, label, problems, unknown);
                    }
                }
                *unknown = true;
            }
            _ => *unknown = true,
        }
        dims
    }

    /// An entry that says "static": `None`, a number, `STATIC` of `@dynamic_spec`,
    /// `Dim.STATIC`, or a name bound to one.
    fn is_static(&self, expr: &Expr, depth: usize) -> bool {
        if depth > 8 {
            return false;
        }
        match expr {
            Expr::NoneLiteral(_) => true,
            _ if names::int_literal(expr).is_some() => true,
            Expr::Name(_) | Expr::Attribute(_) => {
                let qualified = self.names.qualified(expr);
                if qualified
                    .as_deref()
                    .is_some_and(|q| spec_item(q) == Some("STATIC") || q.ends_with("Dim.STATIC"))
                {
                    return true;
                }
                self.resolve(expr)
                    .filter(|resolved| !std::ptr::eq(*resolved, expr))
                    .is_some_and(|resolved| self.is_static(resolved, depth + 1))
            }
            _ => false,
        }
    }

    fn resolve<'e>(&self, expr: &'e Expr) -> Option<&'e Expr>
    where
        'a: 'e,
    {
        match expr {
            Expr::Name(name) => self.gathered.assignments.get(name.id.as_str()).copied(),
            // `args.max_len` of `args = parser.parse_args()`: the argument's default.
            Expr::Attribute(attribute) => {
                let parsed = self.resolve(&attribute.value)?;
                self.gathered
                    .parsed_argument(parsed, attribute.attr.as_str())
            }
            _ => None,
        }
    }

    /// `ShapeVar("B", min=1, max=64)`, with what the spec's assumptions add to its bounds.
    fn shape_var(&self, call: &ast::ExprCall) -> DimDecl {
        let name = call
            .arguments
            .args
            .first()
            .or_else(|| Some(&call.arguments.find_keyword("name")?.value))
            .and_then(names::string_literal)
            .unwrap_or("_")
            .to_owned();
        let bound = |key: &str| {
            let value = &call.arguments.find_keyword(key)?.value;
            names::int_literal(value).or_else(|| names::int_literal(self.resolve(value)?))
        };
        let written = |key: &str| call.arguments.find_keyword(key).is_some();
        let (min, max) = (bound("min"), bound("max"));
        let (assumed_min, assumed_max) = self.assumed.get(&name).copied().unwrap_or_default();
        DimDecl {
            min: min.max(assumed_min),
            max: match (max, assumed_max) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            bounds_unknown: (written("min") && min.is_none()) || (written("max") && max.is_none()),
            automatic: false,
            unbacked: true,
            range: call.range(),
            name,
            derived: false,
        }
    }

    /// A `Dim` expression; `None` for a static entry.
    fn dim(&self, expr: &Expr, depth: usize) -> Option<DimDecl> {
        if depth > 8 {
            return None;
        }
        match expr {
            Expr::Call(call) => {
                let callee = self.names.qualified(&call.func)?;
                if spec_item(&callee) == Some("ShapeVar") {
                    return Some(self.shape_var(call));
                }
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
                    unbacked: false,
                    range: call.range(),
                    derived: false,
                })
            }
            Expr::Attribute(attribute) => match attribute.attr.as_str() {
                "AUTO" | "DYNAMIC" => Some(DimDecl {
                    name: attribute.attr.to_string(),
                    min: None,
                    max: None,
                    bounds_unknown: false,
                    automatic: true,
                    unbacked: false,
                    range: expr.range(),
                    derived: false,
                }),
                _ => self.imported_dim(expr, depth),
            },
            Expr::Name(name) => {
                if let Some((dim, range)) = self.gathered.dims_helper.get(name.id.as_str()) {
                    return Some(DimDecl {
                        name: (*dim).to_owned(),
                        min: None,
                        max: None,
                        bounds_unknown: false,
                        automatic: false,
                        unbacked: false,
                        range: *range,
                        derived: false,
                    });
                }
                match self.resolve(expr) {
                    Some(resolved) => self.dim(resolved, depth + 1),
                    None => self.imported_dim(expr, depth),
                }
            }
            // `TensorSpec([B := ShapeVar("B"), STATIC])`.
            Expr::Named(named) => self.dim(&named.value, depth + 1),
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

impl DimReader<'_, '_, '_> {
    /// A `Dim` bound at module level in another workspace module of the program
    /// (`from pkg.dims import BATCH`, or `dims.BATCH`), read with that file's own imports and
    /// bindings. It is placed at `expr`, the name in this file's spec: the diagnostics that name
    /// it and the hover stay in this file, and no fix edits a `Dim` this file does not hold.
    fn imported_dim(&self, expr: &Expr, depth: usize) -> Option<DimDecl> {
        if depth > 8 {
            return None;
        }
        let (module, file, value) = module_binding(self.program, self.names, expr)?;
        let names = GlobalNames(self.program.globals_in(file));
        let gathered = gathered_in(self.program, file);
        let reader = DimReader {
            names: &names,
            gathered: &gathered,
            assumed: Assumed::default(),
            program: self.program,
            imported: std::cell::RefCell::default(),
            foreign: None,
        };
        let declared = reader.dim(value, depth + 1)?;
        self.imported.borrow_mut().push(ImportedDim {
            name: declared.name.clone(),
            module,
            range: declared.range,
            spec: None,
        });
        Some(DimDecl {
            range: expr.range(),
            ..declared
        })
    }

    /// A `Dim` of an input's entry, placed in the entry file when the spec is another
    /// module's: at the name the entry file's spec writes, and recorded with that module, so
    /// that a fix edits it there.
    fn entry_dim(&self, expr: &Expr) -> Option<DimDecl> {
        let before = self.imported.borrow().len();
        let dim = self.dim(expr, 0)?;
        let Some(foreign) = &self.foreign else {
            return Some(dim);
        };
        // A `Dim` the spec's module imports itself is recorded where that module's import
        // leads; one it writes is its own.
        if self.imported.borrow().len() == before {
            self.imported.borrow_mut().push(ImportedDim {
                name: dim.name.clone(),
                module: foreign.module.clone(),
                range: dim.range,
                spec: Some(foreign.binding.clone()),
            });
        }
        Some(DimDecl {
            range: foreign.at,
            ..dim
        })
    }
}

/// A spec bound at module level in another workspace module (`from pkg.shapes import
/// DYNAMIC_SHAPES`): where the entry file names it, and where it is bound.
pub(super) struct ForeignSpec {
    pub(super) module: String,
    /// The module-level name bound to it there.
    pub(super) binding: String,
    /// The name in the entry file's spec (`dynamic_shapes=DYNAMIC_SHAPES`).
    pub(super) at: TextRange,
}

/// The value a module-level name of another workspace module of the program is bound to,
/// for `expr` naming it in a file whose imports `names` resolves (`BATCH` of `from pkg.dims
/// import BATCH`, `dims.BATCH`): the module's dotted name, its file and the value.
pub(super) fn module_binding<'s>(
    program: &SemanticModel<'s>,
    names: &dyn Resolve,
    expr: &Expr,
) -> Option<(String, u32, &'s Expr)> {
    let qualified = names.qualified(expr)?;
    let (module, name) = qualified.rsplit_once('.')?;
    let file = program.file_id(module)?;
    let value = names::module_level_statements(program.body_in(file))
        .into_iter()
        .rev()
        .find_map(|stmt| match stmt {
            ast::Stmt::Assign(assign) => match assign.targets.as_slice() {
                [Expr::Name(target)] if target.id.as_str() == name => Some(&*assign.value),
                _ => None,
            },
            ast::Stmt::AnnAssign(assign) => match (&*assign.target, &assign.value) {
                (Expr::Name(target), Some(value)) if target.id.as_str() == name => Some(&**value),
                _ => None,
            },
            _ => None,
        })?;
    Some((module.to_owned(), file, value))
}

/// The comparison `b op a` for `a op b`.
fn flipped(op: ast::CmpOp) -> ast::CmpOp {
    match op {
        ast::CmpOp::Gt => ast::CmpOp::Lt,
        ast::CmpOp::GtE => ast::CmpOp::LtE,
        ast::CmpOp::Lt => ast::CmpOp::Gt,
        ast::CmpOp::LtE => ast::CmpOp::GtE,
        other => other,
    }
}

impl<'a> Gathered<'a> {
    /// `args.<attribute>` where `args` is bound to `parsed`: the `add_argument` default when
    /// `parsed` is `parser.parse_args()`, what the script runs with when given no argument.
    pub(super) fn parsed_argument(&self, parsed: &Expr, attribute: &str) -> Option<&'a Expr> {
        let Expr::Call(call) = parsed else {
            return None;
        };
        let Expr::Attribute(method) = &*call.func else {
            return None;
        };
        if method.attr.as_str() != "parse_args" {
            return None;
        }
        self.argument_defaults.get(attribute).copied()
    }
}
