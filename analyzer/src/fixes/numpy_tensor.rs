//! The PT201 fixes: a tensor turned into a NumPy array (`.numpy()`, `np.asarray(t)`,
//! `np.array(t)`) where a tensor does the same stays a tensor.
//!
//! Measured with torch 2.15 (non-strict export fails on every conversion; strict export traces
//! them through `torch._numpy`; eager outputs of the original and the rewrite compared):
//!
//! - Straight back to torch: `torch.from_numpy(t.numpy())`, `torch.as_tensor`, `torch.asarray`
//!   share the tensor's memory, so they are `t`; `torch.tensor(...)` and `np.array` copy, so
//!   they are `t.clone()` (without the clone an in-place update of the result would reach `t`).
//!   Same values, dtype, device (`.numpy()` only runs on the CPU; a `.cpu()`/`.detach()` in `t`
//!   stays) and sharing, so the rewrite is safe; the one difference is that a tensor that
//!   requires grad, on which `.numpy()` raises, no longer raises. The same holds through a name
//!   (`a = t.numpy()` … `torch.from_numpy(a)`) when every read of the name goes straight back.
//! - `.item()` and `.tolist()` of the array are the tensor's own (same Python numbers): safe.
//!   The tensor's `.tolist()` asks for every size, which fixes a dimension declared dynamic
//!   (an error with `Dim`, silently with `Dim.AUTO`): only a tensor of static sizes gets it.
//! - A reduction of the array (`.std()`, `.mean()`, `.sum()`, `.max()`, …) has a torch method;
//!   NumPy's `std`/`var` divide by n, so they become `std(correction=0)`/`var(correction=0)`.
//!   The result is a 0-d tensor instead of a NumPy scalar (arithmetic with tensors is the
//!   same, values agree to rounding; a branch on it becomes a branch on a tensor): unsafe.
//! - Returned from the exported model's `forward`: the exported program returns a tensor there
//!   anyway (strict export already does), so dropping `.numpy()` exports, but eager callers get
//!   a tensor instead of an array: unsafe.
//!
//! Everything else gets no fix: NumPy functions and methods with arguments differ from torch's
//! in names (`axis`/`dim`), defaults and dtype promotion, so no rewrite is mechanical.

use std::collections::HashMap;

use ruff_text_size::{Ranged, TextRange, TextSize};

use super::as_primary;
use crate::diagnostic::{Applicability, Edit, Fix};
use crate::names::Resolve;
use crate::semantic::SemanticModel;
use crate::syntax::ast::visitor::{self, Visitor};
use crate::syntax::ast::{self, Expr, ExprContext, Stmt};

/// Torch calls that make a tensor of an array: whether each copies it.
const BACK_TO_TORCH: &[(&str, bool)] = &[
    ("torch.from_numpy", false),
    ("torch.as_tensor", false),
    ("torch.asarray", false),
    ("torch.tensor", true),
];

/// Methods of an array with no arguments, the tensor method that computes the same, and whether
/// the result is the same Python value (`item`, `tolist`) rather than a tensor for a NumPy scalar.
/// `tolist` is offered only for a tensor whose sizes are known to be static (see the module
/// documentation).
const ARRAY_METHODS: &[(&str, &str, bool)] = &[
    ("item", "item()", true),
    ("tolist", "tolist()", true),
    ("sum", "sum()", false),
    ("mean", "mean()", false),
    ("std", "std(correction=0)", false),
    ("var", "var(correction=0)", false),
    ("max", "max()", false),
    ("min", "min()", false),
    ("prod", "prod()", false),
    ("argmax", "argmax()", false),
    ("argmin", "argmin()", false),
    ("any", "any()", false),
    ("all", "all()", false),
];

/// A call that turns a tensor into an array.
struct Conversion {
    call: TextRange,
    /// The tensor converted: `x.detach()` of `x.detach().numpy()`.
    tensor: TextRange,
    /// Its text where an attribute may follow or a call stood (see [`as_primary`]).
    primary: String,
    /// `np.array` copies; `.numpy()` and `np.asarray` share the tensor's memory.
    copies: bool,
    /// Where the array goes.
    place: Place,
    /// The `def` that holds it, by its start.
    function: Option<TextSize>,
}

#[derive(Clone)]
enum Place {
    /// The one argument of a call in [`BACK_TO_TORCH`] at this range; whether it copies.
    BackToTorch(TextRange, bool),
    /// The receiver of an [`ARRAY_METHODS`] call at this range: the torch method, and whether
    /// the result is the same value.
    Method(TextRange, &'static str, bool),
    /// `name = <conversion>`.
    Assigned(String),
    /// The value, or an item of the tuple, that a `return` returns.
    Returned,
    Elsewhere,
}

/// How a function uses one name.
#[derive(Default)]
struct NameUses {
    stores: usize,
    /// Each read: the [`BACK_TO_TORCH`] call it is the argument of (range, copies), if it is.
    loads: Vec<Option<(TextRange, bool)>>,
}

/// The NumPy conversions of a file and what the fixes need to know around them, gathered in
/// one walk on the first PT201 that asks.
pub(crate) struct NumpyFixes {
    conversions: HashMap<TextRange, Conversion>,
    /// By the function's `def` start, then by name.
    scopes: HashMap<TextSize, HashMap<String, NameUses>>,
    /// The exported model's `forward`, by its `def` start.
    exported_forward: Option<TextSize>,
}

impl NumpyFixes {
    pub(crate) fn new(body: &[Stmt], model: &SemanticModel<'_>) -> Self {
        let mut walk = Walk {
            model,
            text: model.file.text,
            places: HashMap::new(),
            wrapped_names: HashMap::new(),
            functions: Vec::new(),
            in_lambda: 0,
            found: NumpyFixes {
                conversions: HashMap::new(),
                scopes: HashMap::new(),
                exported_forward: exported_forward(model),
            },
        };
        walk.visit_body(body);
        walk.found
    }

    /// The fix for the conversion at `call`, if it has one; `static_shape`: the tensor's sizes
    /// are the same on every call (see [`ARRAY_METHODS`]).
    pub(crate) fn fix(&self, call: TextRange, static_shape: bool) -> Option<Fix> {
        let conversion = self.conversions.get(&call)?;
        let tensor = &conversion.primary;
        match &conversion.place {
            Place::BackToTorch(back, copies) => {
                let content = if *copies || conversion.copies {
                    format!("{tensor}.clone()")
                } else {
                    tensor.clone()
                };
                Some(Fix {
                    title: format!(
                        "Keep the tensor: `{content}` instead of a round trip through NumPy"
                    ),
                    edits: vec![Edit {
                        range: *back,
                        content,
                    }],
                    applicability: Applicability::Safe,
                })
            }
            Place::Method(method_call, method, same_value) => {
                if *method == "tolist()" && !static_shape {
                    return None;
                }
                let content = format!("{tensor}.{method}");
                let (title, applicability) = if *same_value {
                    (
                        format!("Ask the tensor: `{content}` is the same value"),
                        Applicability::Safe,
                    )
                } else {
                    (
                        format!(
                            "Compute it in torch: `{content}` (a 0-d tensor instead of a NumPy scalar)"
                        ),
                        Applicability::Unsafe,
                    )
                };
                Some(Fix {
                    title,
                    edits: vec![Edit {
                        range: *method_call,
                        content,
                    }],
                    applicability,
                })
            }
            Place::Assigned(name) => {
                let uses = self.scopes.get(&conversion.function?)?.get(name)?;
                if uses.stores != 1 || uses.loads.is_empty() {
                    return None;
                }
                let mut edits = vec![keep_tensor(conversion)];
                for load in &uses.loads {
                    let (back, copies) = (*load)?;
                    edits.push(Edit {
                        range: back,
                        content: if copies {
                            format!("{name}.clone()")
                        } else {
                            name.clone()
                        },
                    });
                }
                Some(Fix {
                    title: format!("Keep `{name}` a tensor: no round trip through NumPy"),
                    edits,
                    applicability: Applicability::Safe,
                })
            }
            Place::Returned
                if conversion.function.is_some()
                    && conversion.function == self.exported_forward =>
            {
                Some(Fix {
                    title: format!(
                        "Return the tensor `{tensor}`: the model returns a tensor instead of a NumPy array"
                    ),
                    edits: vec![keep_tensor(conversion)],
                    applicability: Applicability::Unsafe,
                })
            }
            Place::Returned | Place::Elsewhere => None,
        }
    }
}

/// The edit that leaves the tensor where the conversion was: `.numpy()` dropped, or
/// `np.array(t)` replaced by `t` (`t.clone()`: the array was a copy).
fn keep_tensor(conversion: &Conversion) -> Edit {
    if conversion.tensor.start() == conversion.call.start() {
        // `t.numpy()`: only the method goes, the tensor's own text stays as written.
        Edit {
            range: TextRange::new(conversion.tensor.end(), conversion.call.end()),
            content: String::new(),
        }
    } else {
        Edit {
            range: conversion.call,
            content: if conversion.copies {
                format!("{}.clone()", conversion.primary)
            } else {
                conversion.primary.clone()
            },
        }
    }
}

/// The `def` start of the `forward` of the model class the file's entrypoint exports.
fn exported_forward(model: &SemanticModel<'_>) -> Option<TextSize> {
    let class = model.entry.as_ref()?.model_class?;
    let method = model.find_method(class, "forward")?;
    let function = model.functions.get(method)?;
    (function.file == 0).then(|| function.def.start())
}

struct Walk<'m, 'a> {
    model: &'m SemanticModel<'a>,
    text: &'m str,
    /// Where the call at a range goes, set by its parent before the call is visited.
    places: HashMap<TextRange, Place>,
    /// Names read as the argument of a [`BACK_TO_TORCH`] call: that call and whether it copies.
    wrapped_names: HashMap<TextRange, (TextRange, bool)>,
    /// The enclosing `def`s, innermost last.
    functions: Vec<TextSize>,
    in_lambda: usize,
    found: NumpyFixes,
}

impl Walk<'_, '_> {
    /// The tensor and whether the array is a copy, when `call` converts a tensor to an array.
    fn conversion<'c>(&self, call: &'c ast::ExprCall) -> Option<(&'c Expr, bool)> {
        let arguments = &call.arguments;
        if let Expr::Attribute(method) = &*call.func {
            if method.attr.as_str() == "numpy" && arguments.is_empty() {
                return Some((&method.value, false));
            }
        }
        let ([array], []) = (&*arguments.args, &*arguments.keywords) else {
            return None;
        };
        if array.is_starred_expr() {
            return None;
        }
        match self.model.qualified(&call.func)?.as_str() {
            "numpy.asarray" => Some((array, false)),
            "numpy.array" => Some((array, true)),
            _ => None,
        }
    }

    /// Whether `call` makes a tensor of its one argument, and whether it copies.
    fn back_to_torch(&self, call: &ast::ExprCall) -> Option<bool> {
        let arguments = &call.arguments;
        if arguments.args.len() != 1 || !arguments.keywords.is_empty() {
            return None;
        }
        let qualified = self.model.qualified(&call.func)?;
        BACK_TO_TORCH
            .iter()
            .find(|(name, _)| *name == qualified)
            .map(|(_, copies)| *copies)
    }

    fn scope(&mut self) -> Option<&mut HashMap<String, NameUses>> {
        let function = *self.functions.last()?;
        Some(self.found.scopes.entry(function).or_default())
    }

    fn store(&mut self, name: &str, count: usize) {
        if let Some(scope) = self.scope() {
            scope.entry(name.to_owned()).or_default().stores += count;
        }
    }
}

impl<'b> Visitor<'b> for Walk<'_, '_> {
    fn visit_stmt(&mut self, stmt: &'b Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => {
                for decorator in &def.decorator_list {
                    self.visit_expr(&decorator.expression);
                }
                for parameter in &def.parameters {
                    if let Some(default) = parameter.default() {
                        self.visit_expr(default);
                    }
                }
                self.functions.push(def.start());
                for parameter in &def.parameters {
                    self.store(parameter.name().as_str(), 1);
                }
                self.visit_body(&def.body);
                self.functions.pop();
                return;
            }
            // A name another scope may rebind: never rewritten.
            Stmt::Global(ast::StmtGlobal { names, .. })
            | Stmt::Nonlocal(ast::StmtNonlocal { names, .. }) => {
                for name in names {
                    self.store(name.as_str(), 2);
                }
            }
            Stmt::Assign(assign) => {
                if let ([Expr::Name(target)], Expr::Call(_)) =
                    (assign.targets.as_slice(), &*assign.value)
                {
                    self.places
                        .insert(assign.value.range(), Place::Assigned(target.id.to_string()));
                }
            }
            Stmt::Return(ast::StmtReturn {
                value: Some(value), ..
            }) => {
                let values: Vec<&Expr> = match &**value {
                    Expr::Tuple(tuple) => tuple.elts.iter().collect(),
                    value => vec![value],
                };
                for value in values {
                    self.places.insert(value.range(), Place::Returned);
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'b Expr) {
        match expr {
            Expr::Lambda(_) => {
                self.in_lambda += 1;
                visitor::walk_expr(self, expr);
                self.in_lambda -= 1;
                return;
            }
            Expr::Name(name) => {
                let id = name.id.as_str();
                match name.ctx {
                    ExprContext::Load => {
                        let wrapped = self.wrapped_names.remove(&name.range());
                        let wrapped = wrapped.filter(|_| self.in_lambda == 0);
                        if let Some(scope) = self.scope() {
                            scope.entry(id.to_owned()).or_default().loads.push(wrapped);
                        }
                        // A closure's read is a use the enclosing functions cannot see through.
                        let depth = self.functions.len();
                        for outer in self.functions[..depth.saturating_sub(1)].iter().copied() {
                            let scope = self.found.scopes.entry(outer).or_default();
                            scope.entry(id.to_owned()).or_default().loads.push(None);
                        }
                    }
                    ExprContext::Store | ExprContext::Del => self.store(id, 1),
                    ExprContext::Invalid => {}
                }
            }
            Expr::Call(call) => {
                let place = self
                    .places
                    .remove(&call.range())
                    .unwrap_or(Place::Elsewhere);
                if let Some(copies) = self.back_to_torch(call) {
                    match &call.arguments.args[0] {
                        Expr::Name(name) => {
                            self.wrapped_names
                                .insert(name.range(), (call.range(), copies));
                        }
                        argument => {
                            self.places
                                .insert(argument.range(), Place::BackToTorch(call.range(), copies));
                        }
                    }
                }
                if let Expr::Attribute(method) = &*call.func {
                    let name = method.attr.as_str();
                    let known = ARRAY_METHODS.iter().find(|(array, ..)| *array == name);
                    if let Some((_, torch, same_value)) = known {
                        if call.arguments.is_empty() {
                            self.places.insert(
                                method.value.range(),
                                Place::Method(call.range(), torch, *same_value),
                            );
                        }
                    }
                }
                if let Some((tensor, copies)) = self.conversion(call) {
                    self.found.conversions.insert(
                        call.range(),
                        Conversion {
                            call: call.range(),
                            tensor: tensor.range(),
                            primary: as_primary(tensor, self.text),
                            copies,
                            place,
                            function: self.functions.last().copied(),
                        },
                    );
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}
