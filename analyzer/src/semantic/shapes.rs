//! The file's export specification: which class is exported, its example inputs, and the
//! `Dim`s that `dynamic_shapes` gives each `forward` parameter.

use std::collections::HashMap;
use std::rc::Rc;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_text_size::{Ranged, TextRange};

use super::SemanticModel;
use super::interpreter::ParameterRole;
use super::names;
use super::value::{DimDecl, TensorDims, Value};
use crate::syntax::ast::{self, Expr, Stmt};

/// A mistake in `dynamic_shapes` that `torch.export` rejects before tracing.
#[derive(Debug, Clone)]
pub(crate) struct SpecProblem {
    pub(crate) range: TextRange,
    pub(crate) message: String,
}

/// The exported model and how its `forward` is called, from `model` / `example_args` or an
/// export call.
#[derive(Debug, Default)]
pub(crate) struct Entrypoint {
    pub(crate) model_class: Option<usize>,
    /// How many positional example inputs there are, when the file says.
    positional_inputs: Option<usize>,
    /// Keyword example inputs, by name.
    keyword_inputs: Vec<String>,
    /// Parameter names of the model's `forward`, after `self`.
    parameters: Vec<String>,
}

impl Entrypoint {
    /// Whether the example inputs feed `forward`'s parameter `name` at `position`.
    pub(crate) fn role(&self, name: &str, position: usize) -> ParameterRole {
        let Some(count) = self.positional_inputs else {
            return ParameterRole::Input;
        };
        if position < count || self.keyword_inputs.iter().any(|keyword| keyword == name) {
            ParameterRole::Input
        } else if self.parameters.iter().any(|parameter| parameter == name) {
            ParameterRole::Defaulted
        } else {
            ParameterRole::Input
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct ShapesSpec {
    by_name: HashMap<String, Rc<TensorDims>>,
    by_position: Vec<Rc<TensorDims>>,
    ranks: Vec<Option<usize>>,
    /// Sizes of the example inputs written as literals (`torch.randn(4, 2)`), by position.
    example_sizes: Vec<Vec<(usize, i64)>>,
    /// The example's size of each named `Dim`; `None` when inputs disagree.
    dim_examples: HashMap<String, Option<i64>>,
    pub(crate) problems: Vec<SpecProblem>,
}

impl ShapesSpec {
    pub(crate) fn has_dynamic_dims(&self) -> bool {
        self.by_name
            .values()
            .chain(self.by_position.iter())
            .any(|dims| !dims.dynamic.is_empty())
    }

    /// The size the example inputs give dimension `dim`, when they spell it as a literal.
    pub(crate) fn example_size(&self, dim: &str) -> Option<i64> {
        self.dim_examples.get(dim).copied().flatten()
    }

    /// Records the example's sizes of the `Dim`s that input `position` declares.
    fn note_examples(&mut self, position: Option<usize>, dims: &TensorDims) {
        for (index, dim) in &dims.dynamic {
            if dim.automatic {
                continue;
            }
            let size = position
                .and_then(|position| self.example_sizes.get(position))
                .and_then(|sizes| sizes.iter().find(|(at, _)| at == index))
                .map(|(_, size)| *size);
            let entry = self.dim_examples.entry(dim.name.clone()).or_insert(size);
            if *entry != size {
                *entry = None;
            }
        }
    }

    /// The dimensions of `forward`'s parameter `name` at `position` (after `self`).
    pub(crate) fn dims_for(&self, name: &str, position: usize) -> Rc<TensorDims> {
        let rank = self.ranks.get(position).copied().flatten();
        let declared = self
            .by_name
            .get(name)
            .or_else(|| self.by_position.get(position));
        let dynamic = declared
            .map(|dims| dims.dynamic.clone())
            .unwrap_or_default();
        // The example's sizes hold for every dimension not declared dynamic.
        let literal = self
            .example_sizes
            .get(position)
            .map(|sizes| {
                sizes
                    .iter()
                    .filter(|(index, _)| {
                        !dynamic
                            .iter()
                            .any(|(dynamic_index, _)| dynamic_index == index)
                    })
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        Rc::new(TensorDims {
            rank: declared.and_then(|dims| dims.rank).or(rank),
            dynamic,
            literal,
        })
    }
}

/// Everything the spec is assembled from, gathered in one walk over the file.
#[derive(Default)]
struct Gathered<'a> {
    /// Every `name = value` in any scope; the last one wins.
    assignments: HashMap<String, &'a Expr>,
    /// Names bound by `a, b = dims("a", "b")`.
    dims_helper: HashMap<String, (String, TextRange)>,
    export_calls: Vec<&'a ast::ExprCall>,
}

struct Gatherer<'m, 's, 'a> {
    model: &'m SemanticModel<'s>,
    gathered: Gathered<'a>,
}

impl<'a> Visitor<'a> for Gatherer<'_, '_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::Assign(assign) = stmt {
            match assign.targets.as_slice() {
                [Expr::Name(name)] => {
                    // The later binding wins: `seq = Dim("seq", max=8)` after `dims(...)`.
                    self.gathered.dims_helper.remove(name.id.as_str());
                    self.gathered
                        .assignments
                        .insert(name.id.to_string(), &assign.value);
                }
                [Expr::Tuple(tuple)] => {
                    if let Expr::Call(call) = &*assign.value {
                        if qualified(self.model, &call.func).is_some_and(|q| q.ends_with("dims")) {
                            for (target, arg) in tuple.elts.iter().zip(call.arguments.args.iter()) {
                                if let (Expr::Name(name), Some(dim)) =
                                    (target, names::string_literal(arg))
                                {
                                    self.gathered.assignments.remove(name.id.as_str());
                                    self.gathered.dims_helper.insert(
                                        name.id.to_string(),
                                        (dim.to_owned(), call.range()),
                                    );
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            if qualified(self.model, &call.func).is_some_and(|q| is_export_function(&q)) {
                self.gathered.export_calls.push(call);
            }
        }
        visitor::walk_expr(self, expr);
    }
}

fn is_export_function(qualified: &str) -> bool {
    matches!(
        qualified,
        "torch.export.export"
            | "torch.export.draft_export"
            | "torch.export._trace._export"
            | "torch._export.export"
    )
}

/// The qualified name an expression refers to through the file's imports.
fn qualified(model: &SemanticModel, expr: &Expr) -> Option<String> {
    let dotted = names::dotted(expr)?;
    let (head, rest) = dotted
        .split_once('.')
        .map_or((dotted.as_str(), None), |(head, rest)| (head, Some(rest)));
    match model.globals.get(head) {
        Some(Value::Qualified(qualified)) => Some(match rest {
            Some(rest) => format!("{qualified}.{rest}"),
            None => qualified.to_string(),
        }),
        _ => Some(dotted.clone()),
    }
}

/// `strict = True` at module level, or `strict=True` in an export call.
pub(crate) fn declares_strict(body: &[Stmt]) -> bool {
    names::module_level_statements(body).iter().any(|stmt| {
        matches!(stmt, Stmt::Assign(assign)
            if matches!(assign.targets.as_slice(), [Expr::Name(name)] if name.id.as_str() == "strict")
            && matches!(&*assign.value, Expr::BooleanLiteral(literal) if literal.value))
    })
}

pub(crate) fn collect<'a>(
    body: &'a [Stmt],
    model: &SemanticModel,
) -> (Option<Entrypoint>, Option<ShapesSpec>) {
    let mut walker = Gatherer {
        model,
        gathered: Gathered::default(),
    };
    walker.visit_body(body);
    let gathered = walker.gathered;
    let module_level = |name: &str| {
        names::module_level_statements(body)
            .into_iter()
            .rev()
            .find_map(|stmt| match stmt {
                Stmt::Assign(assign) => match assign.targets.as_slice() {
                    [Expr::Name(target)] if target.id.as_str() == name => Some(&*assign.value),
                    _ => None,
                },
                _ => None,
            })
    };
    let export_call = gathered.export_calls.first().copied();
    let keyword = |name: &str| {
        export_call
            .and_then(|call| call.arguments.find_keyword(name))
            .map(|k| &k.value)
    };
    let resolve = |expr: &'a Expr| -> Option<&'a Expr> {
        match expr {
            Expr::Name(name) => gathered.assignments.get(name.id.as_str()).copied(),
            other => Some(other),
        }
    };

    let model_expr = module_level("model")
        .or_else(|| export_call.and_then(|call| call.arguments.args.first()))
        .or_else(|| keyword("mod"));
    let model_class = model_expr.and_then(resolve).and_then(|expr| match expr {
        Expr::Call(call) => {
            let call = without_module_methods(call);
            let dotted = names::dotted(&call.func)?;
            let global = model.globals.get(dotted.as_str()).map(|value| match value {
                // A class imported from another file of the program.
                Value::Qualified(qualified) => model
                    .resolve_qualified(qualified)
                    .unwrap_or_else(|| value.clone()),
                other => other.clone(),
            });
            match global {
                Some(Value::Class(class)) if model.classes[class].is_module => Some(class),
                // `model = build(cfg)`, where `build` (here or in another file) returns `M(...)`.
                Some(Value::Function(function)) => model.class_returned_by(function),
                // `Outer.Inner()`: a nested class, found by its own name when that is unique.
                _ => {
                    let last = dotted.rsplit('.').next()?;
                    let mut matching = model
                        .classes
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.def.name.as_str() == last);
                    match (matching.next(), matching.next()) {
                        (Some((index, class)), None) if class.is_module => Some(index),
                        _ => None,
                    }
                }
            }
        }
        _ => None,
    });
    let args_expr = module_level("example_args")
        .or_else(|| export_call.and_then(|call| call.arguments.args.get(1)))
        .or_else(|| keyword("args"));
    let example_sizes: Vec<Vec<(usize, i64)>> = match args_expr.and_then(resolve) {
        Some(Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })) => {
            elts.iter()
                .map(|element| match element {
                    Expr::Call(call) => names::dotted(&call.func)
                        .and_then(|callee| {
                            literal_shape(callee.rsplit('.').next().unwrap_or_default(), call)
                        })
                        .map(|dims| dims.literal)
                        .unwrap_or_default(),
                    _ => Vec::new(),
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let ranks: Vec<Option<usize>> = match args_expr.and_then(resolve) {
        Some(Expr::Tuple(tuple)) => tuple.elts.iter().map(example_rank).collect(),
        Some(Expr::List(list)) => list.elts.iter().map(example_rank).collect(),
        _ => Vec::new(),
    };
    let kwargs_expr = module_level("example_kwargs").or_else(|| keyword("kwargs"));
    let has_kwargs = kwargs_expr.is_some();
    let keyword_inputs = match kwargs_expr.and_then(resolve) {
        Some(Expr::Dict(dict)) => dict
            .items
            .iter()
            .filter_map(|item| item.key.as_ref().and_then(names::string_literal))
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    let parameters = model_class
        .and_then(|class| model.find_method(class, "forward"))
        .map(|forward| forward_parameters(model.functions[forward].def));
    let positional_inputs =
        match args_expr.and_then(resolve) {
            Some(
                Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }),
            ) if !elts.iter().any(Expr::is_starred_expr) => Some(elts.len()),
            _ => None,
        };
    let entry = model_class.map(|class| Entrypoint {
        model_class: Some(class),
        positional_inputs,
        keyword_inputs,
        parameters: parameters
            .as_ref()
            .map(|p| p.names.clone())
            .unwrap_or_default(),
    });
    let Some(spec_expr) = module_level("dynamic_shapes")
        .or_else(|| keyword("dynamic_shapes"))
        .and_then(resolve)
    else {
        return (entry, None);
    };
    let reader = DimReader {
        model,
        gathered: &gathered,
    };
    let mut spec = ShapesSpec {
        ranks,
        example_sizes,
        ..ShapesSpec::default()
    };
    match spec_expr {
        Expr::Dict(dict) => {
            if let Some(parameters) = &parameters {
                let keys: Vec<&str> = dict
                    .items
                    .iter()
                    .filter_map(|item| item.key.as_ref().and_then(names::string_literal))
                    .collect();
                let missing: Vec<&str> = parameters
                    .names
                    .iter()
                    .take(spec.ranks.len())
                    .map(String::as_str)
                    .filter(|name| !keys.contains(name))
                    .collect();
                let misnamed = keys
                    .iter()
                    .any(|key| !parameters.names.iter().any(|name| name == key));
                // A misspelled key is reported on itself; the input it meant is not "missing".
                if !missing.is_empty() && !misnamed && keys.len() == dict.items.len() {
                    spec.problems.push(SpecProblem {
                        range: spec_expr.range(),
                        message: format!(
                            "`dynamic_shapes` must name every input of `forward`; add {} (`None` keeps an input static)",
                            missing.iter().map(|name| format!("`\"{name}\": None`")).collect::<Vec<_>>().join(", ")
                        ),
                    });
                }
            }
            for item in &dict.items {
                let Some(key) = &item.key else { continue };
                let Some(name) = names::string_literal(key) else {
                    continue;
                };
                let position = parameters
                    .as_ref()
                    .and_then(|p| p.names.iter().position(|n| n == name));
                if let Some(parameters) = &parameters {
                    if position.is_none() && !parameters.has_kwargs {
                        spec.problems.push(SpecProblem {
                            range: key.range(),
                            message: format!(
                                "`dynamic_shapes` key `{name}` is not a parameter of `forward` (its parameters: {})",
                                parameters.names.join(", ")
                            ),
                        });
                        continue;
                    }
                }
                let rank = position.and_then(|p| spec.ranks.get(p).copied().flatten());
                let dims = reader.tensor_dims(&item.value, rank, name, &mut spec.problems);
                spec.note_examples(position, &dims);
                spec.by_name.insert(name.to_owned(), Rc::new(dims));
            }
        }
        Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
            if !has_kwargs && !spec.ranks.is_empty() && elts.len() != spec.ranks.len() {
                spec.problems.push(SpecProblem {
                    range: spec_expr.range(),
                    message: format!(
                        "`dynamic_shapes` has {} entries but `example_args` has {} inputs; give one entry per input (`None` for a static one)",
                        elts.len(),
                        spec.ranks.len()
                    ),
                });
            }
            for (position, element) in elts.iter().enumerate() {
                let rank = spec.ranks.get(position).copied().flatten();
                let label = parameters
                    .as_ref()
                    .and_then(|p| p.names.get(position).cloned())
                    .unwrap_or_else(|| format!("input {position}"));
                let dims = reader.tensor_dims(element, rank, &label, &mut spec.problems);
                spec.note_examples(Some(position), &dims);
                spec.by_position.push(Rc::new(dims));
            }
        }
        _ => {}
    }
    (entry, Some(spec))
}

struct ForwardParameters {
    names: Vec<String>,
    has_kwargs: bool,
}

fn forward_parameters(def: &ast::StmtFunctionDef) -> ForwardParameters {
    let parameters = &def.parameters;
    let names = parameters
        .posonlyargs
        .iter()
        .chain(parameters.args.iter())
        .chain(parameters.kwonlyargs.iter())
        .skip(1)
        .map(|parameter| parameter.parameter.name.to_string())
        .collect();
    ForwardParameters {
        names,
        has_kwargs: parameters.kwarg.is_some(),
    }
}

/// The dimensions of `torch.ones(8, 3)`-style factory calls whose sizes are all literals.
pub(crate) fn literal_shape(name: &str, call: &ast::ExprCall) -> Option<TensorDims> {
    if !matches!(name, "ones" | "zeros" | "randn" | "rand" | "empty" | "full") {
        return None;
    }
    let args = &call.arguments.args;
    let sizes: Vec<&Expr> = match (name, args.first()?) {
        (
            "full",
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }),
        ) => elts.iter().collect(),
        ("full", _) => return None,
        (_, Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }))
            if args.len() == 1 =>
        {
            elts.iter().collect()
        }
        _ => args.iter().collect(),
    };
    let literal: Option<Vec<(usize, i64)>> = sizes
        .iter()
        .enumerate()
        .map(|(index, size)| Some((index, names::int_literal(size)?)))
        .collect();
    Some(TensorDims {
        rank: Some(sizes.len()),
        dynamic: Vec::new(),
        literal: literal?,
    })
}

/// The rank of an example input built by a torch factory call.
fn example_rank(expr: &Expr) -> Option<usize> {
    let Expr::Call(call) = expr else { return None };
    let name = names::dotted(&call.func)?;
    let name = name.rsplit('.').next()?;
    let shape_of = |args: &[Expr]| -> Option<usize> {
        match args {
            [Expr::Tuple(tuple)] => Some(tuple.elts.len()),
            [Expr::List(list)] => Some(list.elts.len()),
            args if !args.is_empty() && args.iter().all(|arg| !matches!(arg, Expr::Starred(_))) => {
                Some(args.len())
            }
            _ => None,
        }
    };
    match name {
        "randn" | "rand" | "zeros" | "ones" | "empty" => shape_of(&call.arguments.args),
        "full" => match call.arguments.args.first()? {
            Expr::Tuple(tuple) => Some(tuple.elts.len()),
            Expr::List(list) => Some(list.elts.len()),
            _ => None,
        },
        "randint" => call.arguments.args.iter().find_map(|arg| match arg {
            Expr::Tuple(tuple) => Some(tuple.elts.len()),
            Expr::List(list) => Some(list.elts.len()),
            _ => None,
        }),
        "tensor" => call.arguments.args.first().map(list_depth),
        _ => None,
    }
}

fn list_depth(expr: &Expr) -> usize {
    match expr {
        Expr::List(list) => 1 + list.elts.first().map_or(0, list_depth),
        Expr::Tuple(tuple) => 1 + tuple.elts.first().map_or(0, list_depth),
        _ => 0,
    }
}

struct DimReader<'g, 'm, 'a> {
    model: &'m SemanticModel<'a>,
    gathered: &'g Gathered<'a>,
}

impl DimReader<'_, '_, '_> {
    /// One parameter's entry: `{0: batch}`, `(batch, None)`, or `None`.
    fn tensor_dims(
        &self,
        expr: &Expr,
        rank: Option<usize>,
        label: &str,
        problems: &mut Vec<SpecProblem>,
    ) -> TensorDims {
        let mut dims = TensorDims {
            rank,
            dynamic: Vec::new(),
            literal: Vec::new(),
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
                        dims.dynamic.push((index, Rc::new(dim)));
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
                        dims.dynamic.push((index, Rc::new(dim)));
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
        let Expr::Name(name) = expr else { return None };
        self.gathered.assignments.get(name.id.as_str()).copied()
    }

    /// A `Dim` expression; `None` for a static entry.
    fn dim(&self, expr: &Expr, depth: usize) -> Option<DimDecl> {
        if depth > 8 {
            return None;
        }
        match expr {
            Expr::Call(call) => {
                let callee = qualified(self.model, &call.func)?;
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
                let bound = |key: &str| {
                    call.arguments
                        .find_keyword(key)
                        .and_then(|k| names::int_literal(&k.value))
                };
                Some(DimDecl {
                    name,
                    min: bound("min"),
                    max: bound("max"),
                    automatic,
                    range: call.range(),
                })
            }
            Expr::Attribute(attribute) => match attribute.attr.as_str() {
                "AUTO" | "DYNAMIC" => Some(DimDecl {
                    name: attribute.attr.to_string(),
                    min: None,
                    max: None,
                    automatic: true,
                    range: expr.range(),
                }),
                _ => None,
            },
            Expr::Name(name) => {
                if let Some((dim, range)) = self.gathered.dims_helper.get(name.id.as_str()) {
                    return Some(DimDecl {
                        name: dim.clone(),
                        min: None,
                        max: None,
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

/// `M(...).eval().to(device)` is the module `M(...)`: these methods return `self`.
fn without_module_methods(mut call: &ast::ExprCall) -> &ast::ExprCall {
    while let Expr::Attribute(attribute) = &*call.func {
        let Expr::Call(inner) = &*attribute.value else {
            break;
        };
        if !matches!(
            attribute.attr.as_str(),
            "eval"
                | "train"
                | "to"
                | "float"
                | "half"
                | "double"
                | "cpu"
                | "cuda"
                | "requires_grad_"
        ) {
            break;
        }
        call = inner;
    }
    call
}
