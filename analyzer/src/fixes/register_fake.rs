//! The PT301 fix: a fake kernel for a custom operator, written from its signature and from what
//! its implementation returns.
//!
//! A fake kernel only says what the output looks like (shape, dtype, device). The common case is
//! an elementwise operator, whose output is `torch.empty_like` of its input; a reduction over a
//! literal dimension and `x.new_*(...)` are written exactly; anything else gets the first tensor
//! input's shape as a guess. Every kernel carries a comment asking the user to confirm it, and
//! the fix is unsafe: a wrong fake kernel exports silently and gives wrong shapes downstream.

use std::collections::{HashMap, HashSet};

use ruff_text_size::{Ranged, TextRange};

use super::{import_member, indentation_at, line_end};
use crate::SourceFile;
use crate::catalogue::{self, ShapeRule};
use crate::custom_ops::{CustomOp, Implementation, OpDefinition};
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::names;
use crate::syntax::ast::{self, Expr, Stmt};

/// The fix that registers a fake kernel for `op`, or `None` when the operator's outputs cannot
/// be written (a non-tensor output, no tensor input to shape one from).
pub(crate) fn fake_kernel_fix(
    op: &CustomOp<'_>,
    body: &[Stmt],
    file: SourceFile<'_>,
) -> Option<Fix> {
    let torch = torch_module(body, file);
    let kernel = match &op.definition {
        OpDefinition::Decorated { function, .. } => {
            decorated_kernel(function, file.text, &torch.name)?
        }
        OpDefinition::Schema {
            schema,
            last_statement,
            implementation,
        } => schema_kernel(
            &op.name,
            schema,
            *last_statement,
            *implementation,
            file.text,
            &torch.name,
        )?,
    };
    let function_name = unused_name(body, &kernel.function_name);
    let indentation = indentation_at(file.text, kernel.after.start());
    let body_indentation = format!("{indentation}    ");
    // Two blank lines around a top-level definition, one inside a block (PEP 8).
    let blank = if indentation.is_empty() { "\n\n" } else { "\n" };
    let mut text = format!(
        "{blank}{indentation}{}\n{indentation}def {function_name}({}):\n{body_indentation}# {}\n{body_indentation}return {}\n",
        kernel.decorator, kernel.parameters, kernel.comment, kernel.output
    );
    let at = line_end(file.text, kernel.after.end());
    if at.to_usize() == file.text.len() && !file.text.ends_with('\n') {
        text.insert(0, '\n');
    }
    let mut edits = Vec::new();
    edits.extend(torch.edit);
    edits.push(Edit {
        range: TextRange::empty(at),
        content: text,
    });
    Some(Fix {
        title: format!("Register a fake kernel for `{}`", op.name),
        edits,
        applicability: Applicability::Unsafe,
    })
}

/// How the file names the `torch` module, and the import to add when it has none.
struct TorchName {
    name: String,
    edit: Option<Edit>,
}

fn torch_module(body: &[Stmt], file: SourceFile<'_>) -> TorchName {
    let imported = import_member(body, file, "torch", "library");
    match (imported.edit, imported.name.strip_suffix(".library")) {
        (None, Some(module)) => TorchName {
            name: module.to_owned(),
            edit: None,
        },
        (edit, _) => TorchName {
            name: "torch".to_owned(),
            edit: edit.map(|edit| Edit {
                range: edit.range,
                content: "import torch\n".to_owned(),
            }),
        },
    }
}

/// `name`, or `name_2`, `name_3`... when a top-level definition already uses it.
fn unused_name(body: &[Stmt], name: &str) -> String {
    let taken: HashSet<&str> = body
        .iter()
        .filter_map(|stmt| match stmt {
            Stmt::FunctionDef(def) => Some(def.name.as_str()),
            Stmt::ClassDef(def) => Some(def.name.as_str()),
            _ => None,
        })
        .collect();
    let mut candidate = name.to_owned();
    let mut suffix = 2;
    while taken.contains(candidate.as_str()) {
        candidate = format!("{name}_{suffix}");
        suffix += 1;
    }
    candidate
}

/// The pieces of one fake kernel.
struct Kernel {
    decorator: String,
    function_name: String,
    parameters: String,
    comment: &'static str,
    output: String,
    /// The statement the kernel goes after.
    after: TextRange,
}

const CONFIRM: &str = "Fake kernel (shape and dtype only): confirm they match the real output.";
const GUESSED: &str = "Fake kernel: this output shape is a guess; make it match the real output.";
const NO_OUTPUT: &str = "Fake kernel: the operator returns nothing.";

/// What kind of value a parameter holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParamKind {
    Tensor,
    Scalar,
    Other,
}

fn decorated_kernel(function: &ast::StmtFunctionDef, text: &str, torch: &str) -> Option<Kernel> {
    let mut kinds = Vec::new();
    for parameter in function.parameters.iter_non_variadic_params() {
        let kind = parameter
            .parameter
            .annotation
            .as_deref()
            .map_or(ParamKind::Other, |annotation| {
                annotation_kind(&text[annotation.range()])
            });
        kinds.push((parameter.parameter.name.to_string(), kind));
    }
    let returns = function
        .returns
        .as_deref()
        .map(|returns| text[returns.range()].replace(' ', ""));
    let parameters = text[function.parameters.range()]
        .trim_start_matches('(')
        .trim_end_matches(')')
        .to_owned();
    let (comment, output) = if returns.as_deref() == Some("None") {
        (NO_OUTPUT, "None".to_owned())
    } else {
        let count = returns.as_deref().map_or(1, return_count);
        outputs(
            &Scope::new(text, &kinds, &function.body),
            returned_values(&function.body),
            count,
            torch,
        )?
    };
    Some(Kernel {
        decorator: format!("@{}.register_fake", function.name),
        function_name: format!("_{}_fake", function.name),
        parameters,
        comment,
        output,
        after: function.range(),
    })
}

/// The number of tensors a return annotation names: `tuple[Tensor, Tensor]` is two.
fn return_count(annotation: &str) -> usize {
    let lower = annotation.to_ascii_lowercase();
    if lower.starts_with("tuple[") {
        annotation.matches("Tensor").count().max(1)
    } else {
        1
    }
}

fn annotation_kind(annotation: &str) -> ParamKind {
    let annotation = annotation.trim().trim_matches(['"', '\'']);
    match annotation.rsplit('.').next().unwrap_or(annotation) {
        "Tensor" => ParamKind::Tensor,
        "float" | "int" | "bool" | "SymInt" | "SymFloat" | "SymBool" | "Number" | "str" => {
            ParamKind::Scalar
        }
        _ => ParamKind::Other,
    }
}

fn schema_kernel(
    op: &str,
    schema: &str,
    last_statement: TextRange,
    implementation: Option<Implementation<'_>>,
    text: &str,
    torch: &str,
) -> Option<Kernel> {
    let parsed = parse_schema(schema)?;
    // The kernel is called with the schema's arguments in order; naming them as the
    // implementation does lets its return expression be reused as written.
    let (implementation_names, statements, returned) = match implementation {
        Some(Implementation::Function(function)) => (
            function
                .parameters
                .iter_non_variadic_params()
                .map(|parameter| parameter.parameter.name.to_string())
                .collect::<Vec<_>>(),
            &function.body[..],
            returned_values(&function.body),
        ),
        Some(Implementation::Lambda(lambda)) => (
            lambda
                .parameters
                .iter()
                .flat_map(|parameters| parameters.iter_non_variadic_params())
                .map(|parameter| parameter.parameter.name.to_string())
                .collect(),
            &[][..],
            vec![&*lambda.body],
        ),
        None => (Vec::new(), &[][..], Vec::new()),
    };
    let names: Vec<String> = if implementation_names.len() == parsed.arguments.len() {
        implementation_names
    } else {
        parsed
            .arguments
            .iter()
            .map(|argument| argument.name.clone())
            .collect()
    };
    let returned = if names.len() == parsed.arguments.len() && !returned.is_empty() {
        returned
    } else {
        Vec::new()
    };
    let kinds: Vec<(String, ParamKind)> = names
        .iter()
        .zip(&parsed.arguments)
        .map(|(name, argument)| (name.clone(), argument.kind))
        .collect();
    let mut parameters = Vec::new();
    for (index, (name, argument)) in names.iter().zip(&parsed.arguments).enumerate() {
        if argument.keyword_only && (index == 0 || !parsed.arguments[index - 1].keyword_only) {
            parameters.push("*".to_owned());
        }
        parameters.push(name.clone());
    }
    let (comment, output) = match parsed.returns.as_slice() {
        [] => (NO_OUTPUT, "None".to_owned()),
        returns if returns.iter().all(|kind| *kind == ParamKind::Tensor) => outputs(
            &Scope::new(text, &kinds, statements),
            returned,
            returns.len(),
            torch,
        )?,
        _ => return None,
    };
    let short = op.rsplit("::").next().unwrap_or(op);
    Some(Kernel {
        decorator: format!("@{torch}.library.register_fake(\"{op}\")"),
        function_name: format!("_{short}_fake"),
        parameters: parameters.join(", "),
        comment,
        output,
        after: last_statement,
    })
}

/// One argument of an operator schema.
struct SchemaArgument {
    name: String,
    kind: ParamKind,
    keyword_only: bool,
}

struct Schema {
    arguments: Vec<SchemaArgument>,
    /// The kinds of the outputs; empty for `-> ()`.
    returns: Vec<ParamKind>,
}

/// `shift(Tensor x, float alpha=1.0, *, bool flag=False) -> (Tensor, Tensor)`; the name
/// before the parenthesis is optional (`torch.library.define("ns::op", "(Tensor x) -> Tensor")`).
fn parse_schema(schema: &str) -> Option<Schema> {
    let open = schema.find('(')?;
    let close = open + matching_paren(&schema[open..])?;
    let mut arguments = Vec::new();
    let mut keyword_only = false;
    for argument in split_top_level(&schema[open + 1..close]) {
        let argument = argument.trim();
        if argument.is_empty() {
            continue;
        }
        if argument == "*" {
            keyword_only = true;
            continue;
        }
        let declaration = argument.split('=').next().unwrap_or(argument).trim();
        let (ty, name) = declaration.rsplit_once(char::is_whitespace)?;
        arguments.push(SchemaArgument {
            name: name.trim().to_owned(),
            kind: schema_type_kind(ty.trim()),
            keyword_only,
        });
    }
    let returns = schema[close + 1..].trim().strip_prefix("->")?.trim();
    let returns = returns
        .strip_prefix('(')
        .and_then(|inner| inner.strip_suffix(')'))
        .unwrap_or(returns);
    let returns = split_top_level(returns)
        .into_iter()
        .map(str::trim)
        .filter(|ty| !ty.is_empty())
        .map(|ty| schema_type_kind(ty.split_whitespace().next().unwrap_or(ty)))
        .collect();
    Some(Schema { arguments, returns })
}

/// The offset of the parenthesis closing the one `text` starts with.
fn matching_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (index, character) in text.char_indices() {
        match character {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` split at the commas outside parentheses and brackets.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (index, character) in text.char_indices() {
        match character {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// `Tensor`, `Tensor(a!)` are tensors; `Tensor?` and `Tensor[]` are not always one.
fn schema_type_kind(ty: &str) -> ParamKind {
    let base = ty.split('(').next().unwrap_or(ty);
    if base == "Tensor" && !ty.ends_with('?') && !ty.ends_with(']') {
        ParamKind::Tensor
    } else if matches!(
        ty,
        "int" | "float" | "bool" | "SymInt" | "Scalar" | "str" | "ScalarType"
    ) {
        ParamKind::Scalar
    } else {
        ParamKind::Other
    }
}

/// The values a function body returns (not those of nested functions).
fn returned_values(body: &[Stmt]) -> Vec<&Expr> {
    let mut found = Vec::new();
    walk_statements(body, &mut |stmt| {
        if let Stmt::Return(ret) = stmt {
            if let Some(value) = &ret.value {
                found.push(&**value);
            }
        }
    });
    found
}

fn walk_statements<'a>(body: &'a [Stmt], visit: &mut impl FnMut(&'a Stmt)) {
    for stmt in body {
        visit(stmt);
        match stmt {
            Stmt::If(if_stmt) => {
                walk_statements(&if_stmt.body, visit);
                for clause in &if_stmt.elif_else_clauses {
                    walk_statements(&clause.body, visit);
                }
            }
            Stmt::For(for_stmt) => {
                walk_statements(&for_stmt.body, visit);
                walk_statements(&for_stmt.orelse, visit);
            }
            Stmt::While(while_stmt) => {
                walk_statements(&while_stmt.body, visit);
                walk_statements(&while_stmt.orelse, visit);
            }
            Stmt::With(with) => walk_statements(&with.body, visit),
            Stmt::Try(try_stmt) => {
                walk_statements(&try_stmt.body, visit);
                for ast::ExceptHandler::ExceptHandler(handler) in &try_stmt.handlers {
                    walk_statements(&handler.body, visit);
                }
                walk_statements(&try_stmt.orelse, visit);
                walk_statements(&try_stmt.finalbody, visit);
            }
            _ => {}
        }
    }
}

/// What the implementation's names are: parameters by kind, and locals assigned exactly once.
struct Scope<'s> {
    text: &'s str,
    kinds: HashMap<&'s str, ParamKind>,
    /// The first tensor parameter, in order: the shape a guess takes.
    first_tensor: Option<&'s str>,
    locals: HashMap<String, &'s Expr>,
}

impl<'s> Scope<'s> {
    fn new(text: &'s str, kinds: &'s [(String, ParamKind)], body: &'s [Stmt]) -> Self {
        let mut assigned: HashMap<String, Option<&'s Expr>> = HashMap::new();
        walk_statements(body, &mut |stmt| match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    if let Expr::Name(name) = target {
                        assigned
                            .entry(name.id.to_string())
                            .and_modify(|value| *value = None)
                            .or_insert(Some(&assign.value));
                    }
                }
            }
            Stmt::AugAssign(ast::StmtAugAssign { target, .. })
            | Stmt::AnnAssign(ast::StmtAnnAssign { target, .. }) => {
                if let Expr::Name(name) = &**target {
                    assigned.insert(name.id.to_string(), None);
                }
            }
            _ => {}
        });
        Scope {
            text,
            kinds: kinds
                .iter()
                .map(|(name, kind)| (name.as_str(), *kind))
                .collect(),
            first_tensor: kinds
                .iter()
                .find(|(_, kind)| *kind == ParamKind::Tensor)
                .map(|(name, _)| name.as_str()),
            locals: assigned
                .into_iter()
                .filter_map(|(name, value)| Some((name, value?)))
                .filter(|(name, _)| !kinds.iter().any(|(parameter, _)| parameter == name))
                .collect(),
        }
    }

    /// Whether `expr` reads only parameters, literals and `torch`: the fake kernel can say it.
    fn reads_only_parameters(&self, expr: &Expr, torch: &str) -> bool {
        let mut ok = true;
        let mut check = |name: &str| {
            if !self.kinds.contains_key(name) && name != torch {
                ok = false;
            }
        };
        visit_names(expr, &mut check);
        ok
    }
}

fn visit_names(expr: &Expr, visit: &mut impl FnMut(&str)) {
    use crate::syntax::ast::visitor::{self, Visitor};
    struct Names<'v, F: FnMut(&str)>(&'v mut F);
    impl<'a, F: FnMut(&str)> Visitor<'a> for Names<'_, F> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Name(name) = expr {
                (self.0)(name.id.as_str());
            }
            visitor::walk_expr(self, expr);
        }
    }
    Names(visit).visit_expr(expr);
}

/// The dtype of an output.
#[derive(Debug, Clone, PartialEq)]
enum Dtype {
    /// What the inputs' type promotion gives.
    Promoted,
    /// An expression naming the dtype (`torch.bool`, `y.dtype`).
    Named(String),
}

/// What an expression of the implementation is, for writing its fake.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    /// A Python number: it does not change an output's shape.
    Scalar,
    /// A tensor the shape of the given tensor parameters broadcast together.
    Broadcast {
        tensors: Vec<String>,
        dtype: Dtype,
    },
    /// A tensor the fake kernel builds with this exact expression.
    Written(String),
    Unknown,
}

impl Shape {
    fn like(tensor: &str) -> Shape {
        Shape::Broadcast {
            tensors: vec![tensor.to_owned()],
            dtype: Dtype::Promoted,
        }
    }

    fn with_dtype(self, dtype: Dtype) -> Shape {
        match self {
            Shape::Broadcast { tensors, .. } => Shape::Broadcast { tensors, dtype },
            other => other,
        }
    }

    /// The shape of an elementwise combination of `shapes`.
    fn broadcast(shapes: impl IntoIterator<Item = Shape>) -> Shape {
        let mut tensors: Vec<String> = Vec::new();
        let mut dtype = Dtype::Promoted;
        let mut any_tensor = false;
        for shape in shapes {
            match shape {
                Shape::Scalar => {}
                Shape::Broadcast {
                    tensors: more,
                    dtype: more_dtype,
                } => {
                    if !any_tensor {
                        dtype = more_dtype;
                    } else if more_dtype != dtype {
                        dtype = Dtype::Promoted;
                    }
                    any_tensor = true;
                    for tensor in more {
                        if !tensors.contains(&tensor) {
                            tensors.push(tensor);
                        }
                    }
                }
                Shape::Written(_) | Shape::Unknown => return Shape::Unknown,
            }
        }
        if any_tensor {
            Shape::Broadcast { tensors, dtype }
        } else {
            Shape::Scalar
        }
    }
}

/// Elementwise functions whose output is boolean.
const PREDICATES: &[&str] = &[
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "greater",
    "less",
    "isnan",
    "isinf",
    "isfinite",
    "isposinf",
    "isneginf",
    "signbit",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
];

/// Conversions to a fixed dtype.
const CONVERSIONS: &[(&str, &str)] = &[
    ("float", "float32"),
    ("double", "float64"),
    ("half", "float16"),
    ("bfloat16", "bfloat16"),
    ("int", "int32"),
    ("long", "int64"),
    ("short", "int16"),
    ("bool", "bool"),
    ("byte", "uint8"),
];

const FACTORIES_LIKE: &[&str] = &[
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
];

const NEW_FACTORIES: &[&str] = &[
    "new_zeros",
    "new_ones",
    "new_empty",
    "new_full",
    "new_tensor",
];

fn infer(expr: &Expr, scope: &Scope<'_>, torch: &str, depth: usize) -> Shape {
    if depth > 8 {
        return Shape::Unknown;
    }
    let infer_in = |expr: &Expr| infer(expr, scope, torch, depth + 1);
    match expr {
        Expr::NumberLiteral(_) | Expr::BooleanLiteral(_) => Shape::Scalar,
        Expr::Name(name) => match scope.kinds.get(name.id.as_str()) {
            Some(ParamKind::Tensor) => Shape::like(name.id.as_str()),
            Some(ParamKind::Scalar) => Shape::Scalar,
            Some(ParamKind::Other) => Shape::Unknown,
            None => scope
                .locals
                .get(name.id.as_str())
                .map_or(Shape::Unknown, |value| infer_in(value)),
        },
        Expr::BinOp(operation) => {
            if operation.op == ast::Operator::MatMult {
                return Shape::Unknown;
            }
            Shape::broadcast([infer_in(&operation.left), infer_in(&operation.right)])
        }
        Expr::UnaryOp(operation) => match operation.op {
            ast::UnaryOp::Not => Shape::Unknown,
            _ => infer_in(&operation.operand),
        },
        Expr::Compare(compare) if compare.ops.len() == 1 => {
            let shape = Shape::broadcast(
                std::iter::once(&*compare.left)
                    .chain(compare.comparators.iter())
                    .map(infer_in),
            );
            shape.with_dtype(Dtype::Named(format!("{torch}.bool")))
        }
        Expr::If(if_expr) => {
            let body = infer_in(&if_expr.body);
            if body == infer_in(&if_expr.orelse) {
                body
            } else {
                Shape::Unknown
            }
        }
        Expr::Call(call) => infer_call(call, scope, torch, depth),
        _ => Shape::Unknown,
    }
}

fn infer_call(call: &ast::ExprCall, scope: &Scope<'_>, torch: &str, depth: usize) -> Shape {
    let infer_in = |expr: &Expr| infer(expr, scope, torch, depth + 1);
    let Expr::Attribute(attribute) = &*call.func else {
        return Shape::Unknown;
    };
    let name = attribute.attr.as_str();
    let receiver = infer_in(&attribute.value);
    // An elementwise method of an output written exactly keeps it (`x.sum(-1).sqrt()`).
    if let Shape::Written(_) = receiver {
        let options_only = call
            .arguments
            .args
            .iter()
            .all(|argument| matches!(infer_in(argument), Shape::Scalar));
        return if catalogue::keeps_shape(name) && options_only {
            receiver
        } else {
            Shape::Unknown
        };
    }
    // A method of a tensor of the implementation, or a function of a module (`torch`,
    // `torch.nn.functional`) whose first argument plays the receiver's part.
    let (subject, rest): (Shape, &[Expr]) = if matches!(receiver, Shape::Broadcast { .. }) {
        (receiver, &call.arguments.args[..])
    } else if names::dotted(&attribute.value).is_some() && !call.arguments.args.is_empty() {
        (infer_in(&call.arguments.args[0]), &call.arguments.args[1..])
    } else {
        return Shape::Unknown;
    };
    let Shape::Broadcast {
        tensors,
        dtype: subject_dtype,
    } = &subject
    else {
        return Shape::Unknown;
    };
    let dtype_keyword = call
        .arguments
        .find_keyword("dtype")
        .map(|keyword| Dtype::Named(names::dotted(&keyword.value).unwrap_or_default()));
    // Ops that keep the shape but set the dtype (`isnan`, `half`, `to`) are read below.
    let sets_dtype = PREDICATES.contains(&name)
        || CONVERSIONS.iter().any(|(method, _)| *method == name)
        || matches!(name, "to" | "type_as");
    if catalogue::keeps_shape(name) && !sets_dtype {
        let arguments = rest
            .iter()
            .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value))
            .map(|argument| match infer_in(argument) {
                // Dims, thresholds and other options do not change the shape.
                Shape::Unknown | Shape::Written(_) => Shape::Scalar,
                shape => shape,
            });
        // `torch.where(condition, a, b)` has the values' dtype: the condition goes last.
        let shape = if name == "where" {
            Shape::broadcast(arguments.chain(std::iter::once(subject.clone())))
        } else {
            Shape::broadcast(std::iter::once(subject.clone()).chain(arguments))
        };
        return match dtype_keyword {
            Some(dtype) => shape.with_dtype(dtype),
            None => shape,
        };
    }
    if PREDICATES.contains(&name) {
        let shape =
            Shape::broadcast(std::iter::once(subject.clone()).chain(rest.iter().map(infer_in)));
        return shape.with_dtype(Dtype::Named(format!("{torch}.bool")));
    }
    if let Some((_, dtype)) = CONVERSIONS.iter().find(|(method, _)| *method == name) {
        if rest.is_empty() {
            return subject.with_dtype(Dtype::Named(format!("{torch}.{dtype}")));
        }
    }
    match name {
        "to" => {
            // `.to(torch.float16)`, `.to(dtype=...)`; `.to(device)` keeps the dtype.
            let positional = rest
                .first()
                .and_then(names::dotted)
                .filter(|dotted| dotted.starts_with(&format!("{torch}.")));
            return match (dtype_keyword, positional) {
                (Some(dtype), _) => subject.with_dtype(dtype),
                (None, Some(dtype)) => subject.with_dtype(Dtype::Named(dtype)),
                (None, None) if rest.len() <= 1 => subject,
                (None, None) => Shape::Unknown,
            };
        }
        "type_as" => {
            return match rest.first() {
                Some(Expr::Name(other)) => {
                    subject.with_dtype(Dtype::Named(format!("{}.dtype", other.id)))
                }
                _ => Shape::Unknown,
            };
        }
        _ => {}
    }
    if FACTORIES_LIKE.contains(&name) {
        return match dtype_keyword {
            Some(dtype) => subject.with_dtype(dtype),
            None => subject,
        };
    }
    let [tensor] = tensors.as_slice() else {
        return Shape::Unknown;
    };
    if NEW_FACTORIES.contains(&name) && name != "new_tensor" {
        let sizes = if name == "new_full" {
            &rest[..rest.len().min(1)]
        } else {
            rest
        };
        let all_known = sizes
            .iter()
            .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value))
            .all(|argument| scope.reads_only_parameters(argument, torch));
        if !all_known || sizes.is_empty() {
            return Shape::Unknown;
        }
        let mut arguments: Vec<String> = sizes
            .iter()
            .map(|size| scope.text[size.range()].to_owned())
            .collect();
        for keyword in &call.arguments.keywords {
            if let Some(arg) = &keyword.arg {
                if matches!(arg.as_str(), "dtype" | "device") {
                    arguments.push(format!("{arg}={}", &scope.text[keyword.value.range()]));
                }
            }
        }
        if call.arguments.find_keyword("dtype").is_none() {
            if let Dtype::Named(dtype) = subject_dtype {
                arguments.push(format!("dtype={dtype}"));
            }
        }
        return Shape::Written(format!("{tensor}.new_empty({})", arguments.join(", ")));
    }
    // Reductions that return indices too when given a `dim` have a pair of results: not here.
    if let Some(ShapeRule::Reduction {
        dtype,
        indices_with_dim: false,
    }) = catalogue::shape_rule(name)
    {
        let bool_subject = *subject_dtype == Dtype::Named(format!("{torch}.bool"));
        let dtype = match (dtype, subject_dtype) {
            (Some(dtype), _) => Some(format!("{torch}.{dtype}")),
            // Sums and products of booleans count: they are int64.
            (None, _) if bool_subject && matches!(name, "sum" | "prod" | "nansum") => {
                Some(format!("{torch}.int64"))
            }
            (None, Dtype::Named(dtype)) => Some(dtype.clone()),
            (None, Dtype::Promoted) => None,
        };
        return reduction(tensor, call, rest, dtype).unwrap_or(Shape::Unknown);
    }
    Shape::Unknown
}

/// The fake output of `tensor.<reduction>(dim, keepdim=...)` over no dimension or one literal
/// dimension.
fn reduction(
    tensor: &str,
    call: &ast::ExprCall,
    rest: &[Expr],
    dtype: Option<String>,
) -> Option<Shape> {
    let dim = rest.first().or_else(|| {
        call.arguments
            .find_keyword("dim")
            .map(|keyword| &keyword.value)
    });
    let keepdim = match call
        .arguments
        .find_keyword("keepdim")
        .map(|keyword| &keyword.value)
        .or_else(|| rest.get(1))
    {
        None => false,
        Some(Expr::BooleanLiteral(literal)) => literal.value,
        Some(_) => return None,
    };
    let other_keywords = call.arguments.keywords.iter().any(|keyword| {
        !matches!(
            keyword.arg.as_ref().map(ast::Identifier::as_str),
            Some("dim" | "keepdim" | "dtype")
        )
    });
    if other_keywords || rest.len() > 2 {
        return None;
    }
    let dtype_argument = dtype.map_or(String::new(), |dtype| format!(", dtype={dtype}"));
    let shape = match dim {
        None if !keepdim => "()".to_owned(),
        None => return None,
        Some(dim) => {
            let dim = names::int_literal(dim)?;
            match (dim, keepdim) {
                (-1, false) => format!("{tensor}.shape[:-1]"),
                (-1, true) => format!("(*{tensor}.shape[:-1], 1)"),
                (0, false) => format!("{tensor}.shape[1:]"),
                (0, true) => format!("(1, *{tensor}.shape[1:])"),
                (dim, false) => format!("{tensor}.shape[:{dim}] + {tensor}.shape[{}:]", dim + 1),
                (dim, true) => format!(
                    "(*{tensor}.shape[:{dim}], 1, *{tensor}.shape[{}:])",
                    dim + 1
                ),
            }
        }
    };
    Some(Shape::Written(format!(
        "{tensor}.new_empty({shape}{dtype_argument})"
    )))
}

/// The `return` expression of the fake kernel for `count` outputs, and its comment.
fn outputs(
    scope: &Scope<'_>,
    returned: Vec<&Expr>,
    count: usize,
    torch: &str,
) -> Option<(&'static str, String)> {
    let guess = scope.first_tensor?;
    // Each return statement gives a candidate per output; the first one inferred wins, and
    // returns that disagree make it a guess.
    let mut per_output: Vec<Vec<Shape>> = vec![Vec::new(); count];
    for value in returned {
        let items: Vec<&Expr> = match value {
            Expr::Tuple(tuple) if count > 1 => tuple.elts.iter().collect(),
            other => vec![other],
        };
        if items.len() != count {
            continue;
        }
        for (index, item) in items.into_iter().enumerate() {
            per_output[index].push(infer(item, scope, torch, 0));
        }
    }
    let mut exact = true;
    let mut rendered = Vec::new();
    for candidates in per_output {
        let known: Vec<&Shape> = candidates
            .iter()
            .filter(|shape| matches!(shape, Shape::Broadcast { .. } | Shape::Written(_)))
            .collect();
        let chosen = if let Some(first) = known.first() {
            if known.len() != candidates.len() || known.iter().any(|shape| shape != first) {
                exact = false;
            }
            render(first, torch)
        } else {
            exact = false;
            format!("{torch}.empty_like({guess})")
        };
        rendered.push(chosen);
    }
    let output = if rendered.len() == 1 {
        rendered.remove(0)
    } else {
        rendered.join(", ")
    };
    Some((if exact { CONFIRM } else { GUESSED }, output))
}

fn render(shape: &Shape, torch: &str) -> String {
    match shape {
        Shape::Written(text) => text.clone(),
        Shape::Broadcast { tensors, dtype } => {
            let dtype_argument = match dtype {
                Dtype::Promoted => None,
                Dtype::Named(name) => Some(name.clone()),
            };
            match tensors.as_slice() {
                [tensor] => match dtype_argument {
                    None => format!("{torch}.empty_like({tensor})"),
                    Some(dtype) => format!("{torch}.empty_like({tensor}, dtype={dtype})"),
                },
                [first, second, ..] => {
                    let shapes: Vec<String> = tensors
                        .iter()
                        .map(|tensor| format!("{tensor}.shape"))
                        .collect();
                    let dtype = dtype_argument
                        .unwrap_or_else(|| format!("{torch}.result_type({first}, {second})"));
                    format!(
                        "{first}.new_empty({torch}.broadcast_shapes({}), dtype={dtype})",
                        shapes.join(", ")
                    )
                }
                [] => format!("{torch}.empty(())"),
            }
        }
        Shape::Scalar | Shape::Unknown => format!("{torch}.empty(())"),
    }
}

#[cfg(test)]
mod tests {
    use crate::{FixMode, Rule, Settings, apply_fixes, check, compatible_fixes};

    /// The fake kernel the fix writes for one operator defined by `definition`.
    fn kernel(definition: &str) -> String {
        let source = format!("import torch\n\n{definition}\n");
        let report = check(&source, &Settings::default());
        let diagnostic = report
            .diagnostics
            .iter()
            .find(|diagnostic| diagnostic.rule == Rule::MissingFakeKernel)
            .unwrap_or_else(|| panic!("no PT301 for:\n{definition}"));
        let Some(fix) = &diagnostic.fix else {
            return "(no fix)\n".to_owned();
        };
        let fixed = apply_fixes(
            &source,
            &compatible_fixes(&report.diagnostics, FixMode::Unsafe),
        );
        assert!(
            check(&fixed, &Settings::default())
                .diagnostics
                .iter()
                .all(|diagnostic| diagnostic.rule != Rule::MissingFakeKernel),
            "PT301 left after the fix:\n{fixed}"
        );
        fix.edits
            .iter()
            .map(|edit| edit.content.trim_matches('\n'))
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    }

    #[test]
    fn outputs_are_read_off_the_implementation() {
        let cases = [
            // A comparison is boolean; a conversion fixes the dtype.
            "@torch.library.custom_op(\"t::positive\", mutates_args=())\ndef positive(x: torch.Tensor) -> torch.Tensor:\n    return x > 0",
            "@torch.library.custom_op(\"t::half\", mutates_args=())\ndef half(x: torch.Tensor) -> torch.Tensor:\n    return (x * 2).to(torch.float16)",
            // Three tensors broadcast together through torch.where.
            "@torch.library.custom_op(\"t::pick\", mutates_args=())\ndef pick(mask: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:\n    return torch.where(mask, a, b)",
            // new_* keeps its size arguments when they read only parameters.
            "@torch.library.custom_op(\"t::grid\", mutates_args=())\ndef grid(x: torch.Tensor, k: int) -> torch.Tensor:\n    out = x.new_zeros(x.shape[0], k)\n    return out",
            // Reductions: to a scalar, and over a dimension kept.
            "@torch.library.custom_op(\"t::total\", mutates_args=())\ndef total(x: torch.Tensor) -> torch.Tensor:\n    return x.sum()",
            "@torch.library.custom_op(\"t::avg\", mutates_args=())\ndef avg(x: torch.Tensor) -> torch.Tensor:\n    return x.mean(dim=1, keepdim=True)",
            "@torch.library.custom_op(\"t::count\", mutates_args=())\ndef count(x: torch.Tensor) -> torch.Tensor:\n    return (x > 0).sum(0)",
            // Two outputs, one of them unknown: a guess, said so.
            "@torch.library.custom_op(\"t::split2\", mutates_args=())\ndef split2(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:\n    return x.relu(), x @ x.T",
            // An operator that returns nothing without mutating anything still needs a kernel.
            "@torch.library.custom_op(\"t::log\", mutates_args=())\ndef log(x: torch.Tensor) -> None:\n    print(x)",
            // Schema operators: keyword-only arguments, a lambda kernel, no kernel at all.
            "lib = torch.library.Library(\"s\", \"DEF\")\nlib.define(\"blend(Tensor a, Tensor b, *, float w=0.5) -> Tensor\")\nlib.impl(\"blend\", lambda a, b, *, w=0.5: a * w + b * (1 - w), \"CPU\")",
            "torch.library.define(\"s2::noimpl\", \"(Tensor x, int n) -> Tensor\")",
            "lib = torch.library.Library(\"s3\", \"DEF\")\nlib.define(\"size_of(Tensor x) -> int\")",
        ];
        let mut rendered = String::new();
        for case in cases {
            rendered.push_str(case);
            rendered.push_str("\n----\n");
            rendered.push_str(&kernel(case));
            rendered.push('\n');
        }
        insta::assert_snapshot!(rendered);
    }

    #[test]
    fn schemas_are_parsed() {
        use super::ParamKind::{Other, Scalar, Tensor};
        let schema = super::parse_schema(
            "op(Tensor(a!) x, Tensor? bias, int[] sizes, *, bool flag=False) -> (Tensor, Tensor)",
        )
        .unwrap();
        let arguments: Vec<_> = schema
            .arguments
            .iter()
            .map(|argument| (argument.name.as_str(), argument.kind, argument.keyword_only))
            .collect();
        assert_eq!(
            arguments,
            [
                ("x", Tensor, false),
                ("bias", Other, false),
                ("sizes", Other, false),
                ("flag", Scalar, true)
            ]
        );
        assert_eq!(schema.returns, [Tensor, Tensor]);
        assert!(
            super::parse_schema("(Tensor x) -> ()")
                .unwrap()
                .returns
                .is_empty()
        );
    }
}
