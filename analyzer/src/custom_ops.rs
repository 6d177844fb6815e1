//! Custom operators and their fake kernels: `torch.library.custom_op`, `Library.define`,
//! `register_fake`, `impl_abstract` and `Meta` implementations.

use rustc_hash::FxHashMap;

use crate::syntax::ast::visitor::{self, Visitor};
use ruff_text_size::{Ranged, TextRange};

use crate::names::{self, Resolve};
use crate::syntax::ast::{self, Expr, Stmt};

/// A custom operator defined in the file.
#[derive(Debug, Clone)]
pub(crate) struct CustomOp<'a> {
    /// `namespace::name`.
    pub(crate) name: String,
    /// The decorator or `define` call that makes it.
    pub(crate) range: TextRange,
    /// Whether a fake or meta kernel is registered for it in this file or the workspace.
    pub(crate) has_fake: bool,
    /// How it is defined, which is what a fake kernel is written from.
    pub(crate) definition: OpDefinition<'a>,
}

impl CustomOp<'_> {
    /// Whether torch makes its fake kernel itself: an operator that mutates an argument and
    /// returns nothing (measured: export passes for `custom_op` and `Library.define` alike).
    pub(crate) fn has_trivial_fake(&self) -> bool {
        match &self.definition {
            OpDefinition::Decorated {
                function,
                mutates_args,
            } => {
                *mutates_args
                    && function
                        .returns
                        .as_deref()
                        .is_some_and(Expr::is_none_literal_expr)
            }
            OpDefinition::Schema { schema, .. } => {
                let (arguments, returns) = schema.rsplit_once("->").unwrap_or((schema, ""));
                arguments.contains("!)") && returns.trim() == "()"
            }
        }
    }
}

/// The source a custom operator is made from.
#[derive(Debug, Clone)]
pub(crate) enum OpDefinition<'a> {
    /// `@torch.library.custom_op("ns::op", mutates_args=...)` on a Python function.
    Decorated {
        function: &'a ast::StmtFunctionDef,
        /// `mutates_args` names an argument (or is `"unknown"`).
        mutates_args: bool,
    },
    /// `lib.define(schema)` or `torch.library.define("ns::op", schema)`.
    Schema {
        schema: String,
        /// The last statement that defines or implements the operator: a fake kernel goes
        /// after it.
        last_statement: TextRange,
        /// The Python kernel registered for it, when one is.
        implementation: Option<Implementation<'a>>,
    },
}

/// A Python kernel given to `Library.impl` or `torch.library.impl`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Implementation<'a> {
    Function(&'a ast::StmtFunctionDef),
    Lambda(&'a ast::ExprLambda),
}

/// An operator definition before its kernels are matched to it.
#[derive(Debug, Clone)]
#[allow(
    clippy::struct_field_names,
    reason = "`definition` is the same field of `CustomOp`"
)]
pub(crate) struct Definition<'a> {
    pub(crate) name: String,
    pub(crate) range: TextRange,
    pub(crate) definition: OpDefinition<'a>,
}

/// A kernel registration `lib.impl("op", kernel, "CPU")`, by operator.
struct KernelRegistration<'a> {
    op: String,
    statement: TextRange,
    kernel: KernelRef<'a>,
}

enum KernelRef<'a> {
    Name(String),
    Resolved(Implementation<'a>),
}

/// Definitions and registrations found in one file.
#[derive(Default)]
pub(crate) struct Registrations<'a> {
    pub(crate) definitions: Vec<Definition<'a>>,
    pub(crate) fakes: Vec<String>,
    /// `custom_op`-decorated functions of this file: Python name and operator, so that another
    /// file's `@name.register_fake` can be traced back to the operator.
    pub(crate) op_functions: Vec<(String, String)>,
    /// `@name.register_fake` on a name this file imports: the qualified name it refers to.
    pub(crate) imported_fakes: Vec<String>,
}

/// Dispatch keys whose kernel also serves fake tensors.
fn serves_fake_tensors(key: &str) -> bool {
    matches!(
        key,
        "Meta" | "CompositeImplicitAutograd" | "CompositeExplicitAutograd"
    )
}

/// `ns::op.overload` → `ns::op`.
fn canonical(op: &str) -> String {
    match op.split_once("::") {
        Some((namespace, rest)) => {
            format!("{namespace}::{}", rest.split('.').next().unwrap_or(rest))
        }
        None => op.to_owned(),
    }
}

/// The operator name a schema string defines: `foo(Tensor x) -> Tensor` → `foo`.
fn schema_name(schema: &str) -> &str {
    let end = schema.find('(').unwrap_or(schema.len());
    schema[..end].trim().split('.').next().unwrap_or_default()
}

fn string_argument(call: &ast::ExprCall, index: usize) -> Option<&str> {
    call.arguments
        .args
        .get(index)
        .and_then(names::string_literal)
}

/// The last names of the callees the collector looks for, by any spelling: `Library`, the
/// `torch.library` functions and decorators, and the methods of a library or an operator.
const REGISTRATION_NAMES: &[&str] = &[
    "Library",
    "custom_op",
    "triton_op",
    "register_fake",
    "register_abstract",
    "register_meta",
    "impl_abstract",
    "define",
    "impl",
    "_register_fake",
];

struct Collector<'r, 'a> {
    resolve: &'r dyn Resolve,
    /// The innermost statement being visited.
    statement: Option<&'a Stmt>,
    /// Functions by name, to find the kernel `lib.impl("op", kernel)` names.
    functions: FxHashMap<&'a str, &'a ast::StmtFunctionDef>,
    kernels: Vec<KernelRegistration<'a>>,
    /// Variables holding a `torch.library.Library("ns", ...)`, by namespace.
    libraries: FxHashMap<String, String>,
    /// Python names of `custom_op`-decorated functions, by operator.
    python_names: FxHashMap<String, String>,
    /// `@foo.register_fake` on a Python name not yet mapped to an operator, with the qualified
    /// name it resolves to through the file's imports.
    fake_by_python_name: Vec<(String, Option<String>)>,
    found: Registrations<'a>,
}

/// Whether a `custom_op`'s `mutates_args` names anything: `()` and `[]` do not.
fn mutates_args(call: &ast::ExprCall) -> bool {
    call.arguments
        .find_keyword("mutates_args")
        .is_some_and(|keyword| match &keyword.value {
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                !elts.is_empty()
            }
            _ => true,
        })
}

fn kernel_ref(expr: &Expr) -> Option<KernelRef<'_>> {
    match expr {
        Expr::Name(name) => Some(KernelRef::Name(name.id.to_string())),
        Expr::Lambda(lambda) => Some(KernelRef::Resolved(Implementation::Lambda(lambda))),
        _ => None,
    }
}

impl<'a> Collector<'_, 'a> {
    /// Whether a call of `callee` may define or register an operator, by its last name
    /// through the file's imports: most calls of a file are ruled out here, before their
    /// qualified names are built.
    fn may_register(&self, callee: &Expr) -> bool {
        self.resolve
            .last_name(callee)
            .is_some_and(|last| REGISTRATION_NAMES.contains(&last))
    }

    fn qualified(&self, expr: &Expr) -> Option<String> {
        self.resolve.qualified(expr)
    }

    fn statement_range(&self, fallback: TextRange) -> TextRange {
        self.statement.map_or(fallback, Ranged::range)
    }

    fn schema_definition(&mut self, name: String, schema: &str, call: &ast::ExprCall) {
        let last_statement = self.statement_range(call.range());
        self.found.definitions.push(Definition {
            name,
            range: call.range(),
            definition: OpDefinition::Schema {
                schema: schema.to_owned(),
                last_statement,
                implementation: None,
            },
        });
    }

    fn library_namespace(&self, expr: &Expr) -> Option<String> {
        let Expr::Name(name) = expr else { return None };
        self.libraries.get(name.id.as_str()).cloned()
    }

    fn decorator(&mut self, decorator: &'a Expr, function: &'a ast::StmtFunctionDef) {
        match decorator {
            Expr::Call(call) if self.may_register(&call.func) => {
                let callee = self.qualified(&call.func).unwrap_or_default();
                match callee.as_str() {
                    "torch.library.custom_op"
                    | "torch._library.custom_ops.custom_op"
                    | "torch.library.triton_op" => {
                        if let Some(op) = string_argument(call, 0) {
                            let op = canonical(op);
                            self.python_names
                                .insert(function.name.to_string(), op.clone());
                            // triton_op builds its fake kernel from the Python implementation.
                            if callee.ends_with("triton_op") {
                                self.found.fakes.push(op);
                            } else {
                                self.found.definitions.push(Definition {
                                    name: op,
                                    range: decorator.range(),
                                    definition: OpDefinition::Decorated {
                                        function,
                                        mutates_args: mutates_args(call),
                                    },
                                });
                            }
                        }
                    }
                    "torch.library.register_fake"
                    | "torch.library.impl_abstract"
                    | "torch.library.register_meta" => {
                        if let Some(op) = string_argument(call, 0) {
                            self.found.fakes.push(canonical(op));
                        }
                    }
                    "torch.library.impl" => {
                        self.impl_call(call);
                        if let Some(op) = self.impl_target(call) {
                            self.kernels.push(KernelRegistration {
                                op,
                                statement: function.range(),
                                kernel: KernelRef::Resolved(Implementation::Function(function)),
                            });
                        }
                    }
                    _ => {
                        if let Expr::Attribute(attribute) = &*call.func {
                            self.method_registration(attribute);
                        }
                    }
                }
            }
            Expr::Attribute(attribute) => self.method_registration(attribute),
            _ => {}
        }
    }

    /// `@op.register_fake` / `op.register_fake(fn)` on a `custom_op` function.
    fn method_registration(&mut self, attribute: &ast::ExprAttribute) {
        if matches!(
            attribute.attr.as_str(),
            "register_fake" | "register_abstract" | "register_meta"
        ) {
            if let Expr::Name(name) = &*attribute.value {
                let qualified = self.qualified(&attribute.value);
                self.fake_by_python_name
                    .push((name.id.to_string(), qualified));
            }
        }
    }

    /// The operator `torch.library.impl("ns::op", ...)` or `torch.library.impl(lib, "op", ...)`
    /// registers a kernel for.
    fn impl_target(&self, call: &ast::ExprCall) -> Option<String> {
        if let Some(op) = string_argument(call, 0).filter(|op| op.contains("::")) {
            return Some(canonical(op));
        }
        let namespace = self.library_namespace(call.arguments.args.first()?)?;
        Some(format!(
            "{namespace}::{}",
            schema_name(string_argument(call, 1)?)
        ))
    }

    /// `torch.library.impl("ns::op", "Meta")` or `torch.library.impl(lib, "op", "Meta")`.
    fn impl_call(&mut self, call: &ast::ExprCall) {
        let keys: Vec<&str> = call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value))
            .flat_map(|arg| match arg {
                Expr::List(ast::ExprList { elts, .. })
                | Expr::Tuple(ast::ExprTuple { elts, .. }) => elts
                    .iter()
                    .filter_map(names::string_literal)
                    .collect::<Vec<_>>(),
                other => names::string_literal(other).into_iter().collect(),
            })
            .collect();
        if !keys.iter().any(|key| serves_fake_tensors(key)) {
            return;
        }
        if let Some(op) = string_argument(call, 0).filter(|op| op.contains("::")) {
            self.found.fakes.push(canonical(op));
        } else if let (Some(namespace), Some(op)) = (
            call.arguments
                .args
                .first()
                .and_then(|lib| self.library_namespace(lib)),
            string_argument(call, 1),
        ) {
            self.found
                .fakes
                .push(format!("{namespace}::{}", schema_name(op)));
        }
    }

    fn call(&mut self, call: &'a ast::ExprCall) {
        if !self.may_register(&call.func) {
            return;
        }
        let callee = self.qualified(&call.func).unwrap_or_default();
        match callee.as_str() {
            "torch.library.register_fake" | "torch.library.impl_abstract" => {
                if let Some(op) = string_argument(call, 0) {
                    self.found.fakes.push(canonical(op));
                }
                return;
            }
            "torch.library.define" => {
                if let Some(op) = string_argument(call, 0) {
                    let schema = string_argument(call, 1).unwrap_or_default();
                    self.schema_definition(canonical(op), schema, call);
                }
                return;
            }
            "torch.library.impl" => {
                // Called with the function directly: `torch.library.impl("ns::op", "Meta", fn)`.
                if call.arguments.args.len() >= 3 {
                    self.impl_call(call);
                    if let (Some(op), Some(kernel)) = (
                        self.impl_target(call),
                        call.arguments.args.last().and_then(kernel_ref),
                    ) {
                        let statement = self.statement_range(call.range());
                        self.kernels.push(KernelRegistration {
                            op,
                            statement,
                            kernel,
                        });
                    }
                }
                return;
            }
            _ => {}
        }
        let Expr::Attribute(attribute) = &*call.func else {
            return;
        };
        if attribute.attr.as_str() == "register_fake" {
            self.method_registration(attribute);
            return;
        }
        let Some(namespace) = self.library_namespace(&attribute.value) else {
            return;
        };
        match attribute.attr.as_str() {
            "define" => {
                if let Some(schema) = string_argument(call, 0) {
                    let name = format!("{namespace}::{}", schema_name(schema));
                    self.schema_definition(name, schema, call);
                }
            }
            "impl" => {
                let key = string_argument(call, 2).or_else(|| {
                    call.arguments
                        .find_keyword("dispatch_key")
                        .and_then(|k| names::string_literal(&k.value))
                });
                if let (Some(op), Some(key)) = (string_argument(call, 0), key) {
                    let op = format!("{namespace}::{}", schema_name(op));
                    if serves_fake_tensors(key) {
                        self.found.fakes.push(op);
                    } else if let Some(kernel) = call.arguments.args.get(1).and_then(kernel_ref) {
                        let statement = self.statement_range(call.range());
                        self.kernels.push(KernelRegistration {
                            op,
                            statement,
                            kernel,
                        });
                    }
                }
            }
            "_register_fake" => {
                if let Some(op) = string_argument(call, 0) {
                    self.found
                        .fakes
                        .push(format!("{namespace}::{}", schema_name(op)));
                }
            }
            _ => {}
        }
    }
}

impl<'a> Visitor<'a> for Collector<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        let outer = self.statement.replace(stmt);
        match stmt {
            Stmt::Assign(assign) => {
                if let ([target], Expr::Call(call)) = (assign.targets.as_slice(), &*assign.value) {
                    let callee = self
                        .may_register(&call.func)
                        .then(|| self.qualified(&call.func))
                        .flatten();
                    if callee.as_deref() == Some("torch.library.Library") {
                        if let (Some(namespace), Some(variable)) =
                            (string_argument(call, 0), names::dotted(target))
                        {
                            self.libraries.insert(
                                variable.rsplit('.').next().unwrap_or_default().to_owned(),
                                namespace.to_owned(),
                            );
                        }
                    }
                }
            }
            Stmt::FunctionDef(function) => {
                self.functions.insert(function.name.as_str(), function);
                for decorator in &function.decorator_list {
                    self.decorator(&decorator.expression, function);
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
        self.statement = outer;
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            self.call(call);
        }
        visitor::walk_expr(self, expr);
    }

    fn visit_decorator(&mut self, _decorator: &'a ast::Decorator) {
        // Decorators were read with their function; walking them again as calls would count
        // `@torch.library.register_fake("ns::op")` twice, which is harmless but wasteful.
    }
}

/// Finds every operator definition and fake registration in a file.
/// Whether `text` may define or register an operator. Every way to reach the registration
/// functions names `torch.library` (or `torch._library`, or a `Library`) where it is imported
/// or used; only a method registration on an operator imported from another file
/// (`op.register_fake`) names nothing but its method. A library created in another file is not
/// followed anyway (the collector knows the libraries its file creates). Most files name none
/// of these, and need no walk.
fn may_register_in(text: &str) -> bool {
    [
        "ibrary",
        "register_fake",
        "register_abstract",
        "register_meta",
    ]
    .iter()
    .any(|name| text.contains(name))
}

pub(crate) fn registrations<'a>(
    body: &'a [Stmt],
    text: &str,
    resolve: &dyn Resolve,
) -> Registrations<'a> {
    if !may_register_in(text) {
        return Registrations::default();
    }
    let mut collector = Collector {
        resolve,
        statement: None,
        functions: FxHashMap::default(),
        kernels: Vec::new(),
        libraries: FxHashMap::default(),
        python_names: FxHashMap::default(),
        fake_by_python_name: Vec::new(),
        found: Registrations::default(),
    };
    collector.visit_body(body);
    for (python_name, qualified) in std::mem::take(&mut collector.fake_by_python_name) {
        if let Some(op) = collector.python_names.get(&python_name) {
            collector.found.fakes.push(op.clone());
        } else if let Some(qualified) = qualified.filter(|q| q != &python_name) {
            // An operator imported from another file: the workspace index maps it back.
            collector.found.imported_fakes.push(qualified);
        }
    }
    collector.found.op_functions = collector
        .python_names
        .iter()
        .map(|(name, op)| (name.clone(), op.clone()))
        .collect();
    collector.found.op_functions.sort();
    // A schema operator's kernels: the fake kernel is written from the first Python one and
    // goes after the last registration.
    for registration in &collector.kernels {
        let implementation = match &registration.kernel {
            KernelRef::Resolved(implementation) => Some(*implementation),
            KernelRef::Name(name) => collector
                .functions
                .get(name.as_str())
                .map(|function| Implementation::Function(function)),
        };
        for definition in &mut collector.found.definitions {
            if let OpDefinition::Schema {
                last_statement,
                implementation: kernel,
                ..
            } = &mut definition.definition
            {
                if definition.name == registration.op {
                    if registration.statement.end() > last_statement.end() {
                        *last_statement = registration.statement;
                    }
                    if kernel.is_none() {
                        *kernel = implementation;
                    }
                }
            }
        }
    }
    collector.found
}
