//! The file's export specification: which class is exported, its example inputs, and the
//! `Dim`s that `dynamic_shapes` gives each `forward` parameter.

use rustc_hash::FxHashMap;
use std::rc::Rc;

use crate::syntax::ast::visitor::{self, Visitor};
use ruff_text_size::{Ranged, TextRange, TextSize};

use super::SemanticModel;
use super::interpreter::ParameterRole;
use super::symbolic::SymSize;
use super::value::{DimDecl, DimSize, TensorDims, Value};
use crate::names::{self, Resolve};
use crate::syntax::ast::{self, Expr, Stmt};

mod dim_reader;
mod example_reader;
mod model_class;
mod parameters;
use dim_reader::{Assumed, DimReader, ForeignSpec, spec_item};
use example_reader::ExampleReader;
use model_class::ModelResolver;
use parameters::{PassedVarargs, forward_parameters};

/// A mistake in `dynamic_shapes` that `torch.export` rejects before tracing.
#[derive(Debug, Clone)]
pub(crate) struct SpecProblem {
    pub(crate) range: TextRange,
    pub(crate) message: String,
}

/// What an example input is, as far as the entrypoint's role for a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExampleClass {
    /// A tensor built by a torch factory (`torch.randn(4, 8)`), directly or through a name.
    Tensor,
    /// `None`: the parameter is `None` while tracing.
    None,
    /// Anything else: a number, a structure, a call the analysis does not read.
    Other,
}

/// The exported model and how its `forward` is called, from `model` / `example_args` /
/// `example_kwargs` or an export call.
#[derive(Debug, Default)]
pub(crate) struct Entrypoint {
    pub(crate) model_class: Option<usize>,
    /// The function of the analysed file whose body builds the model, when it is not built at
    /// module level (an export call in `main()`): the construction pass runs it when the
    /// module-level code does not reach it.
    pub(crate) scope: Option<usize>,
    /// The parameters the example inputs feed, in the order torch sees them (positional
    /// arguments, then keyword arguments), when the file spells them out.
    bound: Option<Vec<(String, ExampleClass)>>,
    /// Parameter names of the model's `forward`, after `self`.
    parameters: Vec<String>,
    /// Instances of the file's own classes that the exporter must flatten but cannot (PT404).
    pub(crate) unregistered: Vec<UnregisteredValue>,
    /// Every example input is a tensor the file builds on the CPU (`torch.randn(2, 8)`, moved
    /// nowhere): a tensor traced code moves to CUDA meets them on two devices (PT604).
    pub(crate) examples_on_cpu: bool,
    /// The model and its inputs come from an export call, not from the module-level `model`
    /// and `example_args`: the tracer runs the file as a script (`__name__ == "__main__"`)
    /// to reach the call, where it imports a file of module-level names.
    pub(crate) runs_as_main: bool,
}

/// Where an instance of a class with no pytree registration crosses the export boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Boundary {
    /// In the example inputs: the example as written in `example_args` / `example_kwargs`.
    Input,
    /// Returned from the exported `forward`: the `return` statement.
    Output,
}

/// An instance of one of the file's classes that no pytree registration covers.
#[derive(Debug, Clone)]
pub(crate) struct UnregisteredValue {
    pub(crate) range: TextRange,
    /// The class, in `SemanticModel::classes`.
    pub(crate) class: usize,
    pub(crate) boundary: Boundary,
    /// `@dataclass`: `torch.export.register_dataclass` registers it as it is.
    pub(crate) is_dataclass: bool,
}

impl Entrypoint {
    /// How the example inputs feed `forward`'s parameter `name`.
    pub(crate) fn role(&self, name: &str, _position: usize) -> ParameterRole {
        let Some(bound) = &self.bound else {
            return ParameterRole::Input;
        };
        match bound.iter().find(|(bound, _)| bound == name) {
            Some((_, ExampleClass::Tensor)) => ParameterRole::PassedTensor,
            Some((_, ExampleClass::None)) => ParameterRole::PassedNone,
            None if self.parameters.iter().any(|parameter| parameter == name) => {
                ParameterRole::Defaulted
            }
            Some((_, ExampleClass::Other)) | None => ParameterRole::Input,
        }
    }
}

/// One size of an example tensor that the file spells as a number.
#[derive(Debug, Clone)]
struct ExampleSize {
    index: usize,
    value: i64,
    /// The argument of the factory call that gives it, for a fix to rewrite.
    at: Option<TextRange>,
}

/// An example tensor as the file builds it.
#[derive(Debug, Clone, Default)]
struct ExampleTensor {
    rank: Option<usize>,
    sizes: Vec<ExampleSize>,
    /// Built on the CPU: a factory without a device, moved nowhere else (`.float()`, `.cpu()`).
    on_cpu: bool,
}

/// One example input, in the order torch sees them.
#[derive(Debug, Clone)]
struct ExampleInput {
    /// The parameter it feeds, when `forward`'s signature is known.
    name: Option<String>,
    /// Where it is written in `example_args` / `example_kwargs`.
    range: TextRange,
    tensor: Option<ExampleTensor>,
}

/// An example input the exporter rejects for a dimension declared dynamic (PT405).
#[derive(Debug, Clone)]
pub(crate) struct ExampleProblem {
    /// The example as written in `example_args` / `example_kwargs`.
    pub(crate) range: TextRange,
    pub(crate) message: String,
    /// The `Dim`'s name (torch's name for it).
    pub(crate) dim: String,
    /// The example's size: 0 or 1 (specialised), or outside the `Dim`'s range.
    pub(crate) size: i64,
    /// The size argument to rewrite, and the size that keeps the dimension dynamic.
    pub(crate) edit: Option<(TextRange, i64)>,
}

#[derive(Debug, Default)]
pub(crate) struct ShapesSpec {
    by_name: FxHashMap<String, Rc<TensorDims>>,
    by_position: Vec<Rc<TensorDims>>,
    /// The example inputs: positional, then keyword.
    inputs: Vec<ExampleInput>,
    /// The example's size of each named `Dim`; `None` when inputs disagree.
    dim_examples: FxHashMap<String, Option<i64>>,
    pub(crate) problems: Vec<SpecProblem>,
    pub(crate) example_problems: Vec<ExampleProblem>,
    /// Examples of size 0 or 1 on a dimension declared `Dim.AUTO`: export specialises them and
    /// makes the dimension static, with no error (PT406).
    pub(crate) auto_examples: Vec<ExampleProblem>,
    /// The spec is written but the analysis cannot read it (a name imported from elsewhere, a
    /// function's result): any input may have dynamic dimensions.
    unreadable: bool,
    /// Inputs whose entry the analysis cannot read, by name and by position: their dimensions
    /// may be dynamic or static.
    unreadable_inputs: Vec<(Option<String>, Option<usize>)>,
    /// The `Dim`s the spec takes from another workspace module (`from pkg.dims import BATCH`).
    pub(crate) imported_dims: Vec<ImportedDim>,
}

/// A `Dim` bound at module level in another workspace module and used by the spec: its fixes
/// are edits of that module, carried there by a companion diagnostic.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ImportedDim {
    /// The `Dim`'s name (the string given to `Dim`).
    pub(crate) name: String,
    /// The dotted module that binds it.
    pub(crate) module: String,
    /// The `Dim(...)` call there, in that module's text.
    pub(crate) range: TextRange,
    /// The module-level name of the spec that writes it there, when the entry file's spec is
    /// that module's (`DYNAMIC_SHAPES`): a fix may then edit the spec as well as the `Dim`.
    pub(crate) spec: Option<String>,
}

impl ShapesSpec {
    /// Whether a dimension may be dynamic: one is declared, or some entry cannot be read.
    pub(crate) fn has_dynamic_dims(&self) -> bool {
        self.unreadable
            || !self.unreadable_inputs.is_empty()
            || self
                .by_name
                .values()
                .chain(self.by_position.iter())
                .any(|dims| dims.is_dynamic())
    }

    /// The size the example inputs give dimension `dim`, when they spell it as a literal.
    pub(crate) fn example_size(&self, dim: &str) -> Option<i64> {
        self.dim_examples.get(dim).copied().flatten()
    }

    /// The index in `inputs` of the example feeding `forward`'s parameter `name` at `position`:
    /// by name when the inputs were bound to the signature, else by position.
    fn input_index(&self, name: &str, position: usize) -> Option<usize> {
        if self.inputs.iter().any(|input| input.name.is_some()) {
            self.inputs
                .iter()
                .position(|input| input.name.as_deref() == Some(name))
        } else {
            Some(position)
        }
    }

    fn example_tensor(&self, index: Option<usize>) -> Option<&ExampleTensor> {
        index
            .and_then(|index| self.inputs.get(index))
            .and_then(|input| input.tensor.as_ref())
    }

    /// Records the example's sizes of the `Dim`s that input `index` declares, and checks them
    /// against what the exporter accepts for a dynamic dimension.
    fn note_examples(&mut self, index: Option<usize>, dims: &TensorDims, label: &str) {
        let mut found = Vec::new();
        for (at, dim) in dims.declared() {
            let size = self
                .example_tensor(index)
                .and_then(|tensor| tensor.sizes.iter().find(|size| size.index == at))
                .cloned();
            // `Dim.DYNAMIC` fails on a 0/1 example as a named `Dim` does; `Dim.AUTO` makes the
            // dimension static instead, and a derived dim's range follows its root's.
            let dynamic_hint = dim.automatic && dim.name == "DYNAMIC";
            if !dim.automatic {
                let value = size.as_ref().map(|size| size.value);
                let entry = self.dim_examples.entry(dim.name.clone()).or_insert(value);
                if *entry != value {
                    *entry = None;
                }
            }
            if dim.is_auto() {
                if let (Some(size), Some(index)) = (&size, index) {
                    if size.value <= 1 {
                        self.note_auto_example(index, at, size, label);
                    }
                }
                continue;
            }
            if dim.automatic && !dynamic_hint {
                continue;
            }
            if let (Some(size), Some(index)) = (size, index) {
                found.push((index, at, Rc::clone(dim), size, dynamic_hint));
            }
        }
        for (index, at, dim, size, dynamic_hint) in found {
            self.check_example_size(index, at, &dim, &size, dynamic_hint, label);
        }
    }

    /// An example of size 0 or 1 on a `Dim.AUTO` dimension, which export makes static.
    fn note_auto_example(&mut self, index: usize, at: usize, size: &ExampleSize, label: &str) {
        let Some(input) = self.inputs.get(index) else {
            return;
        };
        let value = size.value;
        self.auto_examples.push(ExampleProblem {
            range: input.range,
            message: format!(
                "The example for `{label}` has size {value} in dimension {at}, declared `Dim.AUTO`: export specializes sizes 0 and 1, so it makes the dimension static and the program accepts only size {value}; give the example a size of at least 2"
            ),
            dim: "AUTO".to_owned(),
            size: value,
            edit: size.at.map(|at| (at, 2)),
        });
    }

    fn check_example_size(
        &mut self,
        index: usize,
        at: usize,
        dim: &DimDecl,
        size: &ExampleSize,
        dynamic_hint: bool,
        label: &str,
    ) {
        let value = size.value;
        let low = dim.low();
        let high = dim.max;
        let shown = if dynamic_hint {
            "`Dim.DYNAMIC`".to_owned()
        } else {
            format!("`{}`", dim.name)
        };
        // An unbacked `ShapeVar` is not specialised at 0 or 1 (measured: an example of size
        // 1 exports with the range kept).
        let (message, target) = if value <= 1 && !dim.unbacked {
            let failure = if dynamic_hint {
                format!("\"export 0/1 specialized due to hint of {value}\"")
            } else {
                format!(
                    "\"You marked {} as dynamic but your code specialized it to be a constant ({value})\"",
                    dim.name
                )
            };
            (
                format!(
                    "The example for `{label}` has size {value} in dimension {at}, declared dynamic as {shown}: the exporter specializes sizes 0 and 1, so export fails with {failure}; give the example a size of at least 2"
                ),
                high.is_none_or(|high| low <= high).then_some(low),
            )
        } else if value < low || high.is_some_and(|high| value > high) {
            let upper = high.map_or_else(|| "int_oo".to_owned(), |high| high.to_string());
            (
                format!(
                    "The example for `{label}` has size {value} in dimension {at}, outside the range [{low}, {upper}] of {shown}: export fails with \"{value} not in range [{low}, {upper}]\"; give the example a size inside the range"
                ),
                high.is_none_or(|high| low <= high)
                    .then(|| high.map_or(value.max(low), |high| value.clamp(low, high))),
            )
        } else {
            return;
        };
        let Some(input) = self.inputs.get(index) else {
            return;
        };
        self.example_problems.push(ExampleProblem {
            range: input.range,
            message,
            dim: dim.name.clone(),
            size: value,
            edit: size.at.zip(target),
        });
    }

    /// The dimensions of `forward`'s parameter `name` at `position` (after `self`); `None` when
    /// its entry cannot be read, so that nothing takes them for static.
    pub(crate) fn dims_for(&self, name: &str, position: usize) -> Option<Rc<TensorDims>> {
        let index = self.input_index(name, position);
        let unreadable = self.unreadable
            || self
                .unreadable_inputs
                .iter()
                .any(|(unread_name, unread_index)| {
                    unread_name.as_deref() == Some(name)
                        || (unread_index.is_some() && *unread_index == index)
                });
        if unreadable {
            return None;
        }
        let example = self.example_tensor(index);
        let declared = self
            .by_name
            .get(name)
            .or_else(|| index.and_then(|index| self.by_position.get(index)));
        let mut sizes: Vec<(usize, DimSize)> =
            declared.map(|dims| dims.sizes.clone()).unwrap_or_default();
        // The example's sizes hold for every dimension not declared dynamic.
        if let Some(example) = example {
            for size in &example.sizes {
                if !sizes.iter().any(|(index, _)| *index == size.index) {
                    sizes.push((size.index, DimSize::Sym(SymSize::constant(size.value))));
                }
            }
        }
        sizes.sort_by_key(|(index, _)| *index);
        Some(Rc::new(TensorDims {
            rank: declared
                .and_then(|dims| dims.rank)
                .or_else(|| example.and_then(|example| example.rank)),
            sizes,
        }))
    }
}

/// Every binding of a name, in source order, with the statement that makes it.
type Bindings<'a> = FxHashMap<&'a str, Vec<(TextRange, &'a Expr)>>;

/// Everything the spec is assembled from, gathered in one walk over the file.
#[derive(Default)]
struct Gathered<'a> {
    /// Every `name = value` in any scope; the last one wins.
    assignments: FxHashMap<&'a str, &'a Expr>,
    /// Every `name = value` in any scope, in source order.
    bindings: Bindings<'a>,
    /// Names bound by `a, b = dims("a", "b")`.
    dims_helper: FxHashMap<&'a str, (&'a str, TextRange)>,
    export_calls: Vec<&'a ast::ExprCall>,
    /// Names of classes given a pytree registration anywhere in the file.
    registered: Vec<String>,
    /// Names whose value is changed in place (`inputs.append(x)`, `inputs += [x]`,
    /// `inputs[0] = x`): their literal does not list what they hold.
    mutated: Vec<&'a str>,
    /// The `default=` of each `add_argument` call, by the attribute it sets on the parsed
    /// namespace: what `args.<name>` is when the script runs with no arguments.
    argument_defaults: FxHashMap<String, &'a Expr>,
}

/// List methods that change a list in place.
const MUTATES: &[&str] = &["append", "extend", "insert", "pop", "remove", "clear"];

/// The functions that register a type with pytree, by their last name (imported any way).
const REGISTERS: &[&str] = &[
    "register_dataclass",
    "register_pytree_node",
    "_register_pytree_node",
    "register_pytree_node_class",
    "register_constant",
];

impl<'a> Gathered<'a> {
    /// What a name used at `at` holds: the last binding whose statement ends before it, else
    /// the last binding anywhere (a function's name read inside another function, say).
    fn binding_at(&self, name: &str, at: TextSize) -> Option<&'a Expr> {
        let bindings = self.bindings.get(name)?;
        bindings
            .iter()
            .rev()
            .find(|(statement, _)| statement.end() <= at)
            .or_else(|| {
                bindings
                    .iter()
                    .rev()
                    .find(|(statement, _)| !statement.contains(at))
            })
            .map(|(_, value)| *value)
    }

    /// The expression a name stands for, followed through plain `a = b` aliases.
    fn resolve(&self, expr: &'a Expr) -> Option<&'a Expr> {
        let mut current = expr;
        for _ in 0..8 {
            let Expr::Name(name) = current else {
                return Some(current);
            };
            current = self.binding_at(name.id.as_str(), name.start())?;
        }
        None
    }

    /// The elements of a tuple or list an expression stands for: a literal, a name bound to
    /// one, or `tuple(...)` / `list(...)` of one (`example_args = tuple(inputs)`).
    fn sequence(&self, expr: &'a Expr) -> Option<&'a [Expr]> {
        if let Expr::Name(name) = expr {
            if self.mutated.contains(&name.id.as_str()) {
                return None;
            }
        }
        let mut current = self.resolve(expr)?;
        for _ in 0..8 {
            match current {
                Expr::Call(call)
                    if names::dotted(&call.func)
                        .is_some_and(|callee| callee == "tuple" || callee == "list")
                        && call.arguments.keywords.is_empty() =>
                {
                    let [single] = call.arguments.args.as_ref() else {
                        return None;
                    };
                    if let Expr::Name(name) = single {
                        if self.mutated.contains(&name.id.as_str()) {
                            return None;
                        }
                    }
                    current = self.resolve(single)?;
                }
                other => return elements(other),
            }
        }
        None
    }
}

struct Gatherer<'m, 's, 'a> {
    model: &'m SemanticModel<'s>,
    gathered: Gathered<'a>,
}

impl<'a> Visitor<'a> for Gatherer<'_, '_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::ClassDef(class) = stmt {
            let registers = class.decorator_list.iter().any(|decorator| {
                let callee = match &decorator.expression {
                    Expr::Call(call) => &*call.func,
                    other => other,
                };
                self.model
                    .last_name(callee)
                    .is_some_and(|last| REGISTERS.contains(&last))
                    && names::dotted(callee).is_some()
            });
            if registers {
                self.gathered.registered.push(class.name.to_string());
            }
        }
        match stmt {
            Stmt::AugAssign(augmented) => {
                if let Expr::Name(name) = &*augmented.target {
                    self.gathered.mutated.push(name.id.as_str());
                }
            }
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    if let Expr::Subscript(subscript) = target {
                        if let Expr::Name(name) = &*subscript.value {
                            self.gathered.mutated.push(name.id.as_str());
                        }
                    }
                }
            }
            _ => {}
        }
        if let Stmt::Assign(assign) = stmt {
            match assign.targets.as_slice() {
                [Expr::Name(name)] => {
                    // The later binding wins: `seq = Dim("seq", max=8)` after `dims(...)`.
                    self.gathered.dims_helper.remove(name.id.as_str());
                    self.gathered
                        .assignments
                        .insert(name.id.as_str(), &assign.value);
                    self.gathered
                        .bindings
                        .entry(name.id.as_str())
                        .or_default()
                        .push((assign.range, &assign.value));
                }
                // `h, w = Dim("height"), Dim("width")`: each name its own value.
                [Expr::Tuple(tuple)] if matches!(&*assign.value, Expr::Tuple(_)) => {
                    let values = match &*assign.value {
                        Expr::Tuple(values) if values.elts.len() == tuple.elts.len() => {
                            &values.elts[..]
                        }
                        _ => &[],
                    };
                    for (target, value) in tuple.elts.iter().zip(values) {
                        if let Expr::Name(name) = target {
                            self.gathered.dims_helper.remove(name.id.as_str());
                            self.gathered.assignments.insert(name.id.as_str(), value);
                            self.gathered
                                .bindings
                                .entry(name.id.as_str())
                                .or_default()
                                .push((assign.range, value));
                        }
                    }
                }
                [Expr::Tuple(tuple)] => {
                    if let Expr::Call(call) = &*assign.value {
                        if self
                            .model
                            .qualified(&call.func)
                            .is_some_and(|q| q.ends_with("dims"))
                        {
                            for (target, arg) in tuple.elts.iter().zip(call.arguments.args.iter()) {
                                if let (Expr::Name(name), Some(dim)) =
                                    (target, names::string_literal(arg))
                                {
                                    self.gathered.assignments.remove(name.id.as_str());
                                    self.gathered
                                        .dims_helper
                                        .insert(name.id.as_str(), (dim, call.range()));
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
            if let Expr::Attribute(attribute) = &*call.func {
                if attribute.attr.as_str() == "add_argument" {
                    if let (Some(dest), Some(default)) = (
                        names::argparse_destination(call),
                        call.arguments.find_keyword("default"),
                    ) {
                        self.gathered.argument_defaults.insert(dest, &default.value);
                    }
                }
                if let (Expr::Name(name), true) = (
                    &*attribute.value,
                    MUTATES.contains(&attribute.attr.as_str()),
                ) {
                    self.gathered.mutated.push(name.id.as_str());
                }
            }
            let callee = self
                .model
                .last_name(&call.func)
                .filter(|last| EXPORT_FUNCTIONS.contains(last) || REGISTERS.contains(last))
                .and_then(|_| self.model.qualified(&call.func));
            if callee.as_deref().is_some_and(is_export_function) {
                self.gathered.export_calls.push(call);
            }
            // Through the imports: `from torch.export import register_dataclass as register`.
            let registers = callee.is_some_and(|name| {
                REGISTERS.contains(&name.rsplit('.').next().unwrap_or_default())
            });
            if let (true, Some(registered)) = (
                registers,
                call.arguments.args.first().and_then(names::dotted),
            ) {
                let class = registered.rsplit('.').next().unwrap_or_default().to_owned();
                self.gathered.registered.push(class);
            }
        }
        visitor::walk_expr(self, expr);
    }
}

/// The last names of [`is_export_function`]'s functions.
const EXPORT_FUNCTIONS: &[&str] = &["export", "draft_export", "_export"];

pub(crate) fn is_export_function(qualified: &str) -> bool {
    matches!(
        qualified,
        "torch.export.export"
            | "torch.export.draft_export"
            | "torch.export._trace._export"
            | "torch._export.export"
    )
}

/// `strict = True` at module level, or `strict=True` in an export call.
pub(crate) fn declares_strict(body: &[Stmt]) -> bool {
    names::module_level_statements(body).iter().any(|stmt| {
        matches!(stmt, Stmt::Assign(assign)
            if matches!(assign.targets.as_slice(), [Expr::Name(name)] if name.id.as_str() == "strict")
            && matches!(&*assign.value, Expr::BooleanLiteral(literal) if literal.value))
    })
}

/// The elements of a literal tuple or list, `None` when they cannot be listed (a call, a
/// starred element).
fn elements(expr: &Expr) -> Option<&[Expr]> {
    match expr {
        Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })
            if !elts.iter().any(Expr::is_starred_expr) =>
        {
            Some(elts)
        }
        _ => None,
    }
}

/// The entries of a literal `{"name": value}` or `dict(name=value)`, `None` otherwise.
fn keyword_entries(expr: &Expr) -> Option<Vec<(String, &Expr)>> {
    match expr {
        Expr::Dict(dict) => dict
            .items
            .iter()
            .map(|item| {
                let key = names::string_literal(item.key.as_ref()?)?;
                Some((key.to_owned(), &item.value))
            })
            .collect(),
        Expr::Call(call)
            if names::dotted(&call.func).is_some_and(|callee| callee == "dict")
                && call.arguments.args.is_empty() =>
        {
            call.arguments
                .keywords
                .iter()
                .map(|keyword| Some((keyword.arg.as_ref()?.to_string(), &keyword.value)))
                .collect()
        }
        _ => None,
    }
}

/// The `return` statements of a function body with their values, outside nested functions.
fn return_statements(body: &[Stmt]) -> Vec<(TextRange, &Expr)> {
    let mut statements = Vec::new();
    let mut stack: Vec<&Stmt> = body.iter().collect();
    while let Some(stmt) = stack.pop() {
        match stmt {
            Stmt::Return(ret) => {
                if let Some(value) = ret.value.as_deref() {
                    statements.push((ret.range, value));
                }
            }
            Stmt::If(if_stmt) => {
                stack.extend(&if_stmt.body);
                for clause in &if_stmt.elif_else_clauses {
                    stack.extend(&clause.body);
                }
            }
            Stmt::With(with) => stack.extend(&with.body),
            Stmt::For(for_stmt) => stack.extend(&for_stmt.body),
            Stmt::While(while_stmt) => stack.extend(&while_stmt.body),
            Stmt::Try(try_stmt) => {
                stack.extend(&try_stmt.body);
                for ast::ExceptHandler::ExceptHandler(handler) in &try_stmt.handlers {
                    stack.extend(&handler.body);
                }
                stack.extend(&try_stmt.orelse);
                stack.extend(&try_stmt.finalbody);
            }
            _ => {}
        }
    }
    statements.sort_by_key(|(range, _)| range.start());
    statements
}

/// Finds instances of the file's own classes that pytree cannot flatten, inside the
/// containers it can (tuples, lists, dicts).
struct Flattening<'g, 'm, 'a> {
    model: &'m SemanticModel<'a>,
    gathered: &'g Gathered<'a>,
}

impl<'a> Flattening<'_, '_, 'a> {
    /// The first unregistered class instance in `expr`, and whether it is a dataclass.
    fn unregistered_in(&self, expr: &'a Expr, depth: usize) -> Option<(usize, bool)> {
        if depth > 8 {
            return None;
        }
        match expr {
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                elts.iter()
                    .find_map(|element| self.unregistered_in(element, depth + 1))
            }
            Expr::Dict(dict) => dict
                .items
                .iter()
                .find_map(|item| self.unregistered_in(&item.value, depth + 1)),
            Expr::Name(name) => {
                let bound = self.gathered.binding_at(name.id.as_str(), name.start())?;
                self.unregistered_in(bound, depth + 1)
            }
            Expr::Call(call) => {
                let callee = names::dotted(&call.func)?;
                let Some(Value::Class(class)) = self.model.globals.get(callee.as_str()) else {
                    return None;
                };
                let info = &self.model.classes[*class];
                // Only a plain class is known to be unflattenable: a base from elsewhere (a
                // `NamedTuple`, transformers' `ModelOutput`) may register itself.
                let plain = info.def.arguments.as_ref().is_none_or(|arguments| {
                    arguments
                        .args
                        .iter()
                        .all(|base| names::dotted(base).is_some_and(|name| name == "object"))
                        && arguments.keywords.is_empty()
                });
                let name = info.def.name.as_str();
                if !plain || info.is_module || self.gathered.registered.iter().any(|r| r == name) {
                    return None;
                }
                let is_dataclass = names::is_dataclass(info.def);
                Some((*class, is_dataclass))
            }
            _ => None,
        }
    }
}

/// Whether the file may export a model: it binds `model`, `example_args`, `example_kwargs`
/// or `dynamic_shapes` at module level, or may call an export function. A call of one is
/// written `…export(` (`torch.export.export(`, `draft_export(`, `te.export(`) unless the
/// function is bound under another name, which the file's globals then hold. Most files do
/// none of these, and need no walk for an entrypoint.
fn may_export(body: &[Stmt], model: &SemanticModel) -> bool {
    let binds_entry_name = names::module_level_statements(body).iter().any(|stmt| {
        let targets: &[Expr] = match stmt {
            Stmt::Assign(assign) => &assign.targets,
            Stmt::AnnAssign(assign) => std::slice::from_ref(&*assign.target),
            _ => return false,
        };
        targets.iter().any(|target| {
            matches!(target, Expr::Name(name) if matches!(
                name.id.as_str(),
                "model" | "example_args" | "example_kwargs" | "dynamic_shapes"
            ))
        })
    });
    binds_entry_name
        || model.file.text.contains("export(")
        || model.file.text.contains("dynamic_spec")
        || model
            .globals
            .values()
            .any(|value| matches!(value, Value::Qualified(name) if is_export_function(name)))
}

pub(crate) fn collect<'a>(
    body: &'a [Stmt],
    model: &SemanticModel,
) -> (Option<Entrypoint>, Option<ShapesSpec>) {
    if !may_export(body, model) {
        return (None, None);
    }
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
    let resolve = |expr: &'a Expr| gathered.resolve(expr);
    let resolver = ModelResolver {
        model,
        gathered: &gathered,
    };

    let model_expr = module_level("model")
        .or_else(|| export_call.and_then(|call| call.arguments.args.first()))
        .or_else(|| keyword("mod"));
    let model_class = model_expr.and_then(|expr| resolver.class_of(expr, 0));
    let args_expr = module_level("example_args")
        .or_else(|| export_call.and_then(|call| call.arguments.args.get(1)))
        .or_else(|| keyword("args"));
    let kwargs_expr = module_level("example_kwargs")
        .or_else(|| export_call.and_then(|call| call.arguments.args.get(2)))
        .or_else(|| keyword("kwargs"));
    // The example inputs as written: `example_args = ()` with keywords only is common.
    let args: Option<&[Expr]> = match args_expr {
        Some(expr) => gathered.sequence(expr),
        None if kwargs_expr.is_some() => Some(&[]),
        None => None,
    };
    let kwargs: Option<Vec<(String, &Expr)>> = match kwargs_expr {
        Some(expr) => resolve(expr).and_then(keyword_entries),
        None => Some(Vec::new()),
    };
    let parameters = model_class
        .and_then(|class| model.find_method(class, "forward"))
        .map(|forward| forward_parameters(model.functions[forward].def));
    let examples = ExampleReader {
        model,
        gathered: &gathered,
    };
    // Where an example is written for the user: in the tuple `example_args` stands for, or,
    // when that is a conversion of another sequence (`example_args = tuple(inputs)`), the
    // conversion.
    let written = |expr: &Expr| {
        let range = expr.range();
        let in_args = args
            .unwrap_or_default()
            .iter()
            .any(|element| element.range() == range);
        let anchor = if in_args { args_expr } else { kwargs_expr };
        anchor
            .and_then(|anchor| gathered.resolve(anchor))
            .map(Ranged::range)
            .filter(|anchor| !anchor.contains_range(range))
            .unwrap_or(range)
    };
    let inputs: Vec<ExampleInput> = match (args, &kwargs) {
        (Some(args), Some(kwargs)) => {
            let bound = parameters
                .as_ref()
                .and_then(|parameters| parameters.bind(args.len(), kwargs));
            args.iter()
                .chain(kwargs.iter().map(|(_, value)| *value))
                .enumerate()
                .map(|(index, expr)| ExampleInput {
                    name: bound.as_ref().and_then(|bound| bound.get(index).cloned()),
                    range: written(expr),
                    tensor: examples.tensor(expr, 0),
                })
                .collect()
        }
        (Some(args), None) => args
            .iter()
            .map(|expr| ExampleInput {
                name: None,
                range: written(expr),
                tensor: examples.tensor(expr, 0),
            })
            .collect(),
        _ => Vec::new(),
    };
    let all_bound = parameters.is_some()
        && args.is_some()
        && kwargs.is_some()
        && inputs.iter().all(|input| input.name.is_some());
    let bound: Option<Vec<(String, ExampleClass)>> = all_bound.then(|| {
        args.unwrap_or_default()
            .iter()
            .chain(kwargs.iter().flatten().map(|(_, value)| *value))
            .zip(&inputs)
            .map(|(expr, input)| {
                let class = if input.tensor.is_some() {
                    ExampleClass::Tensor
                } else if matches!(resolve(expr), Some(Expr::NoneLiteral(_))) {
                    ExampleClass::None
                } else {
                    ExampleClass::Other
                };
                (input.name.clone().unwrap_or_default(), class)
            })
            .collect()
    });
    let flattening = Flattening {
        model,
        gathered: &gathered,
    };
    let mut unregistered = Vec::new();
    for expr in args
        .unwrap_or_default()
        .iter()
        .chain(kwargs.iter().flatten().map(|(_, value)| *value))
    {
        if let Some((class, is_dataclass)) = flattening.unregistered_in(expr, 0) {
            unregistered.push(UnregisteredValue {
                range: written(expr),
                class,
                boundary: Boundary::Input,
                is_dataclass,
            });
        }
    }
    if let Some(forward) = model_class.and_then(|class| model.find_method(class, "forward")) {
        for (statement, value) in return_statements(&model.functions[forward].def.body) {
            if let Some((class, is_dataclass)) = flattening.unregistered_in(value, 0) {
                unregistered.push(UnregisteredValue {
                    range: statement,
                    class,
                    boundary: Boundary::Output,
                    is_dataclass,
                });
            }
        }
    }
    let scope = model_expr.and_then(|expr| {
        let range = expr.range();
        model
            .functions
            .iter()
            .enumerate()
            .filter(|(_, function)| {
                function.file == 0 && function.def.range().contains_range(range)
            })
            .max_by_key(|(_, function)| function.def.start())
            .map(|(index, _)| index)
    });
    // A model expression the resolver cannot name a class for (`vits.__dict__[arch](...)`) is
    // still an entrypoint: the construction pass may find the class it builds.
    // A `forward` decorated with `@dynamic_spec` declares its dimensions itself: its class is
    // what the file exports when nothing else says (`torch.compile` reads it too).
    let model_class = model_class.or_else(|| {
        (model_expr.is_none())
            .then(|| declared_spec(model, None))
            .flatten()
            .map(|declared| declared.class)
    });
    let entry =
        (model_class.is_some() || model_expr.is_some() || !unregistered.is_empty()).then(|| {
            Entrypoint {
                model_class,
                scope,
                bound: bound.clone(),
                parameters: parameters
                    .as_ref()
                    .map(|p| p.names.clone())
                    .unwrap_or_default(),
                unregistered,
                runs_as_main: module_level("model").is_none()
                    && module_level("example_args").is_none()
                    && export_call.is_some(),
                examples_on_cpu: !inputs.is_empty()
                    && inputs
                        .iter()
                        .all(|input| input.tensor.as_ref().is_some_and(|tensor| tensor.on_cpu)),
            }
        });
    let written_spec = module_level("dynamic_shapes").or_else(|| keyword("dynamic_shapes"));
    let declared = model_class.and_then(|class| declared_spec(model, Some(class)));
    let mut problems = Vec::new();
    if let (Some(written), Some(declared)) = (written_spec, &declared) {
        let at = export_call
            .and_then(|call| call.arguments.find_keyword("dynamic_shapes"))
            .map_or_else(|| written.range(), Ranged::range);
        problems.push(SpecProblem {
            range: at,
            message: format!(
                "`{}.forward` already declares its dynamic dimensions with `@dynamic_spec`, and torch takes one declaration or the other: export fails with \"ValueError: Both `@dynamic_spec(...)` is attached to the function/forward AND a `dynamic_shapes=` argument was passed\"; remove `dynamic_shapes` here or the decorator",
                model.classes[declared.class].def.name
            ),
        });
    }
    // The decorator's names are the names of the file that defines the class.
    let foreign_names;
    let foreign_gathered;
    // Written as a name another workspace module binds (`from pkg.shapes import
    // DYNAMIC_SHAPES`): read there, with that module's names.
    let imported = written_spec.and_then(|written| {
        // `DYNAMIC_SHAPES`, `shapes.DYNAMIC_SHAPES`, or a local name bound to one of them.
        let named = match resolve(written) {
            Some(named @ (Expr::Name(_) | Expr::Attribute(_))) => named,
            Some(_) => return None,
            None => written,
        };
        let (module, file, value) = dim_reader::module_binding(model, model, named)?;
        let binding = names::dotted(named)?.rsplit('.').next()?.to_owned();
        Some((
            ForeignSpec {
                module,
                binding,
                at: written.range(),
            },
            file,
            value,
        ))
    });
    // Written, but bound to nothing the file shows (a function's result).
    if written_spec.is_some_and(|written| resolve(written).is_none()) && imported.is_none() {
        return (
            entry,
            Some(ShapesSpec {
                inputs,
                problems,
                unreadable: true,
                ..ShapesSpec::default()
            }),
        );
    }
    let (foreign, imported) = match imported {
        Some((foreign, file, value)) => (Some(foreign), Some((file, value))),
        None => (None, None),
    };
    let (names, spec_gathered, spec_expr): (&dyn Resolve, &Gathered, Option<&Expr>) =
        match (imported, written_spec.and_then(resolve), &declared) {
            (Some((file, value)), ..) => {
                foreign_names = GlobalNames(model.globals_in(file));
                foreign_gathered = gathered_in(model, file);
                (&foreign_names, &foreign_gathered, Some(value))
            }
            (None, Some(written), _) => (model, &gathered, Some(written)),
            (None, None, Some(declared)) if declared.file == 0 => {
                (model, &gathered, Some(declared.spec))
            }
            (None, None, Some(declared)) => {
                foreign_names = GlobalNames(model.globals_in(declared.file));
                foreign_gathered = gathered_in(model, declared.file);
                (&foreign_names, &foreign_gathered, Some(declared.spec))
            }
            (None, None, None) => (model, &gathered, None),
        };
    let Some(spec_expr) = spec_expr else {
        return (entry, None);
    };
    let mut reader = DimReader {
        names,
        gathered: spec_gathered,
        assumed: Assumed::default(),
        program: model,
        imported: std::cell::RefCell::default(),
        foreign,
    };
    // `ShapesSpec(ParamsSpec({...}), assumptions=[...])`: the mapping, and the assumptions'
    // bounds. Its entries need not name every input: what it leaves out is static.
    let (spec_expr, assumptions, lists_some) = reader.unwrap_spec(spec_expr);
    let lists_some = lists_some || declared.is_some();
    if let Some(assumptions) = assumptions {
        reader.assumed = reader.assumptions(assumptions);
    }
    let problems_before = problems.len();
    let mut spec = ShapesSpec {
        inputs,
        problems,
        ..ShapesSpec::default()
    };
    // The inputs the exporter is given, when the file lists them all: `dynamic_shapes` must
    // name exactly these (measured: a key for a parameter left at its default fails too).
    let passed: Option<Vec<String>> = bound
        .as_ref()
        .filter(|_| {
            parameters
                .as_ref()
                .is_some_and(|p| !p.has_kwargs && p.varargs.is_none())
        })
        .map(|bound| bound.iter().map(|(name, _)| name.clone()).collect());
    // `*args` in the example inputs (`(data, *mems)`) pass a number of inputs the analysis
    // does not count.
    let counted_args = args.filter(|args| !args.iter().any(|arg| matches!(arg, Expr::Starred(_))));
    // `forward(self, data, *mems)`: torch binds the example inputs to the signature, so the
    // positional ones past `data` are one input, the tuple `mems`, named by one key or one
    // tuple entry. `None` for the count when it is not known.
    let varargs = parameters.as_ref().and_then(|p| {
        p.varargs.as_ref().map(|name| PassedVarargs {
            name: name.clone(),
            slot: p.positional,
            count: counted_args.map(|args| args.len().saturating_sub(p.positional)),
        })
    });
    // The top-level entries torch expects: one per bound parameter, keywords included.
    let input_count = match (counted_args, &kwargs, &varargs) {
        (Some(args), Some(kwargs), None) => Some((args.len(), kwargs.len())),
        (Some(args), Some(kwargs), Some(varargs)) => varargs.count.map(|count| {
            (
                args.len().min(varargs.slot) + usize::from(count > 0),
                kwargs.len(),
            )
        }),
        _ => None,
    };
    let rank_of = |spec: &ShapesSpec, index: Option<usize>| {
        spec.example_tensor(index).and_then(|tensor| tensor.rank)
    };
    match spec_expr {
        Expr::Dict(dict) => {
            let keys: Vec<&str> = dict
                .items
                .iter()
                .filter_map(|item| item.key.as_ref().and_then(names::string_literal))
                .collect();
            if let Some(parameters) = &parameters {
                let misnamed = keys.iter().any(|key| {
                    !parameters.names.iter().any(|name| name == key)
                        && parameters.varargs.as_deref() != Some(*key)
                });
                let missing: Vec<&str> = passed
                    .iter()
                    .flatten()
                    .map(String::as_str)
                    .filter(|name| !keys.contains(name))
                    .collect();
                // A misspelled key is reported on itself; the input it meant is not "missing".
                let readable_keys = keys.len() == dict.items.len() && !lists_some;
                if let Some(varargs) = &varargs {
                    if varargs.count.is_some_and(|count| count > 0)
                        && !keys.contains(&varargs.name.as_str())
                        && !misnamed
                        && readable_keys
                    {
                        spec.problems.push(SpecProblem {
                            range: spec_expr.range(),
                            message: format!(
                                "`dynamic_shapes` must name every example input of `forward`, and the inputs past the named parameters are one input, `{name}`: add `\"{name}\": (...)`, a tuple with one entry per input it takes (`None` keeps one static)",
                                name = varargs.name
                            ),
                        });
                    }
                }
                if !missing.is_empty() && !misnamed && readable_keys {
                    spec.problems.push(SpecProblem {
                        range: spec_expr.range(),
                        message: format!(
                            "`dynamic_shapes` must name every example input of `forward`; add {} (`None` keeps an input static)",
                            missing.iter().map(|name| format!("`\"{name}\": None`")).collect::<Vec<_>>().join(", ")
                        ),
                    });
                }
            }
            for item in &dict.items {
                // `**base`, a key held in a variable: entries the analysis cannot list.
                let Some(name) = item.key.as_ref().and_then(names::string_literal) else {
                    spec.unreadable = true;
                    continue;
                };
                let key = item.key.as_ref().expect("a string key");
                // `ParamsSpec`'s slots for `*args` and `**kwargs`.
                if name.starts_with('*') {
                    continue;
                }
                if let Some(varargs) = varargs.as_ref().filter(|varargs| varargs.name == name) {
                    if !lists_some {
                        if let Some(message) = varargs.entry_problem(&item.value) {
                            spec.problems.push(SpecProblem {
                                range: key.range(),
                                message,
                            });
                            continue;
                        }
                    }
                    // Its entries' dimensions belong to several inputs, which `forward` reads
                    // through the tuple: the analysis takes them for unknown.
                    spec.unreadable_inputs.push((Some(name.to_owned()), None));
                    continue;
                }
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
                if let Some(passed) = &passed {
                    if position.is_some() && !passed.iter().any(|input| input == name) {
                        spec.problems.push(SpecProblem {
                            range: key.range(),
                            message: format!(
                                "`dynamic_shapes` key `{name}` names a parameter the example inputs do not pass (they pass: {}); torch wants exactly the inputs given: remove the key, or pass `{name}` in `example_kwargs`",
                                passed.join(", ")
                            ),
                        });
                        continue;
                    }
                }
                let index = match &parameters {
                    Some(_) => position.and_then(|position| spec.input_index(name, position)),
                    None => unknown_forward_index(name, &keys, args, kwargs.as_deref()),
                };
                let rank = rank_of(&spec, index);
                let mut unknown = false;
                let dims =
                    reader.tensor_dims(&item.value, rank, name, &mut spec.problems, &mut unknown);
                if unknown {
                    spec.unreadable_inputs.push((Some(name.to_owned()), index));
                    continue;
                }
                spec.note_examples(index, &dims, name);
                spec.by_name.insert(name.to_owned(), Rc::new(dims));
            }
        }
        Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
            if let Some((positional, keywords)) = input_count {
                let count = positional + keywords;
                if elts.len() != count {
                    let inputs = if let Some(varargs) =
                        varargs.as_ref().filter(|v| v.count.is_some_and(|c| c > 0))
                    {
                        format!(
                            "the example inputs fill {count} parameters of `forward` (`*{}` takes {} of them as one)",
                            varargs.name,
                            varargs.count.unwrap_or_default()
                        )
                    } else if keywords == 0 {
                        format!("`example_args` has {positional} inputs")
                    } else {
                        format!(
                            "the example inputs are {count} ({positional} in `example_args`, {keywords} in `example_kwargs`)"
                        )
                    };
                    spec.problems.push(SpecProblem {
                        range: spec_expr.range(),
                        message: format!(
                            "`dynamic_shapes` has {} entries but {inputs}; give one entry per input (`None` for a static one)",
                            elts.len(),
                        ),
                    });
                }
            }
            for (position, element) in elts.iter().enumerate() {
                // The entry of `*mems`, and those after it, whose inputs the analysis does
                // not place: unknown.
                if let Some(varargs) = varargs.as_ref().filter(|varargs| {
                    position >= varargs.slot && varargs.count.is_none_or(|count| count > 0)
                }) {
                    let name = (position == varargs.slot).then(|| varargs.name.clone());
                    spec.unreadable_inputs.push((name, None));
                    spec.by_position.push(Rc::new(TensorDims::default()));
                    continue;
                }
                let rank = rank_of(&spec, Some(position));
                let label = spec
                    .inputs
                    .get(position)
                    .and_then(|input| input.name.clone())
                    .or_else(|| {
                        parameters
                            .as_ref()
                            .and_then(|p| p.names.get(position).cloned())
                    })
                    .unwrap_or_else(|| format!("input {position}"));
                let mut unknown = false;
                let dims =
                    reader.tensor_dims(element, rank, &label, &mut spec.problems, &mut unknown);
                if unknown {
                    let name = spec.inputs.get(position).and_then(|i| i.name.clone());
                    spec.unreadable_inputs.push((name, Some(position)));
                    spec.by_position.push(Rc::new(TensorDims::default()));
                    continue;
                }
                spec.note_examples(Some(position), &dims, &label);
                if let Some(name) = spec.inputs.get(position).and_then(|i| i.name.clone()) {
                    spec.by_name.insert(name, Rc::new(dims.clone()));
                }
                spec.by_position.push(Rc::new(dims));
            }
        }
        // `None`: every input static.
        Expr::NoneLiteral(_) => {}
        // A call, a comprehension: what it declares is not known.
        _ => spec.unreadable = true,
    }
    spec.imported_dims = reader.imported.take();
    // What is wrong with another module's spec is said where the entry file names it: the
    // ranges read there are in that module's text.
    if let Some(foreign) = &reader.foreign {
        for problem in &mut spec.problems[problems_before..] {
            problem.range = foreign.at;
        }
    }
    (entry, Some(spec))
}

/// The example input a `dynamic_shapes` key names when `forward`'s signature is unknown (a
/// library model): a key of `example_kwargs` names that input; the one key left names the one
/// positional input. With more positional inputs the signature would be needed, and the
/// analysis does not guess.
fn unknown_forward_index(
    name: &str,
    keys: &[&str],
    args: Option<&[Expr]>,
    kwargs: Option<&[(String, &Expr)]>,
) -> Option<usize> {
    let args = args?;
    let kwargs = kwargs?;
    if let Some(at) = kwargs.iter().position(|(key, _)| key == name) {
        return Some(args.len() + at);
    }
    let positional_keys = keys
        .iter()
        .filter(|key| !kwargs.iter().any(|(kwarg, _)| kwarg == *key))
        .count();
    (args.len() == 1 && positional_keys == 1).then_some(0)
}

/// A `forward` decorated with `@dynamic_spec(spec)`.
struct DeclaredSpec<'a> {
    class: usize,
    /// The file that defines the class (0: the analysed one).
    file: u32,
    /// The decorator's argument.
    spec: &'a Expr,
}

/// The `@dynamic_spec` declaration on `class`'s `forward`; with no class, the first module
/// class of the analysed file that has one.
fn declared_spec<'a>(model: &SemanticModel<'a>, class: Option<usize>) -> Option<DeclaredSpec<'a>> {
    let candidates: Vec<usize> = match class {
        Some(class) => vec![class],
        None => (0..model.classes.len())
            .filter(|&class| model.classes[class].file == 0 && model.classes[class].is_module)
            .collect(),
    };
    candidates.into_iter().find_map(|class| {
        let forward = model.find_method(class, "forward")?;
        let function = &model.functions[forward];
        let names = GlobalNames(model.globals_in(function.file));
        function.def.decorator_list.iter().find_map(|decorator| {
            let Expr::Call(call) = &decorator.expression else {
                return None;
            };
            let qualified = names.qualified(&call.func)?;
            if spec_item(&qualified) != Some("dynamic_spec") {
                return None;
            }
            Some(DeclaredSpec {
                class,
                file: function.file,
                spec: call
                    .arguments
                    .args
                    .first()
                    .or_else(|| Some(&call.arguments.find_keyword("spec")?.value))?,
            })
        })
    })
}

/// A file's imports, from its module-level bindings.
/// What a file of the program binds and calls, gathered as for the analysed file, so that a
/// declaration written there is read with that file's own bindings.
fn gathered_in<'s>(model: &SemanticModel<'s>, file: u32) -> Gathered<'s> {
    let mut walker = Gatherer {
        model,
        gathered: Gathered::default(),
    };
    walker.visit_body(model.body_in(file));
    walker.gathered
}

struct GlobalNames<'m>(&'m FxHashMap<String, Value>);

impl Resolve for GlobalNames<'_> {
    fn qualified(&self, expr: &Expr) -> Option<String> {
        names::qualified_through(self, expr)
    }

    fn binding(&self, name: &str) -> Option<&str> {
        match self.0.get(name) {
            Some(Value::Qualified(qualified)) => Some(qualified),
            _ => None,
        }
    }
}
