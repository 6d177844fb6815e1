//! Reading example inputs: the shapes of the tensors a script builds with torch factories
//! (`torch.randn(4, 8)`), through names and dtype or device conversions, with each size the
//! file spells as a number.

use ruff_text_size::Ranged;

use super::{ExampleSize, ExampleTensor, Gathered, elements};
use crate::names::{self, Resolve};
use crate::semantic::SemanticModel;
use crate::syntax::ast::{self, Expr};

/// Tensor methods that keep the shape of an example input (`torch.randn(4, 8).to(device)`).
const KEEPS_EXAMPLE_SHAPE: &[&str] = &[
    "to",
    "float",
    "double",
    "half",
    "bfloat16",
    "long",
    "int",
    "bool",
    "cpu",
    "cuda",
    "contiguous",
    "clone",
    "detach",
    "requires_grad_",
    "type",
];

/// Reads example tensors: torch factory calls, through names and dtype/device conversions.
pub(super) struct ExampleReader<'g, 'm, 'a> {
    pub(super) model: &'m SemanticModel<'a>,
    pub(super) gathered: &'g Gathered<'a>,
}

impl<'a> ExampleReader<'_, '_, 'a> {
    pub(super) fn tensor(&self, expr: &'a Expr, depth: usize) -> Option<ExampleTensor> {
        if depth > 8 {
            return None;
        }
        match expr {
            Expr::Name(name) => {
                let bound = self.gathered.binding_at(name.id.as_str(), name.start())?;
                self.tensor(bound, depth + 1)
            }
            Expr::Call(call) => {
                if let Expr::Attribute(attribute) = &*call.func {
                    let method = attribute.attr.as_str();
                    if KEEPS_EXAMPLE_SHAPE.contains(&method) {
                        if let Some(mut tensor) = self.tensor(&attribute.value, depth + 1) {
                            tensor.on_cpu = match method {
                                "cpu" => true,
                                "cuda" => false,
                                "to" | "type" => tensor.on_cpu && stays_on_device(call),
                                _ => tensor.on_cpu,
                            };
                            return Some(tensor);
                        }
                    }
                }
                let callee = self.model.qualified(&call.func)?;
                let (module, name) = callee.rsplit_once('.')?;
                if module != "torch" {
                    return None;
                }
                self.factory(name, call)
            }
            _ => None,
        }
    }

    /// The shape a torch factory call gives, with each size the file spells as a number.
    fn factory(&self, name: &str, call: &'a ast::ExprCall) -> Option<ExampleTensor> {
        let args = &call.arguments.args;
        let size_keyword = call.arguments.find_keyword("size").map(|k| &k.value);
        let sizes: Vec<&'a Expr> = match name {
            "randn" | "rand" | "zeros" | "ones" | "empty" => match (args.as_ref(), size_keyword) {
                ([], Some(size)) => elements(size)?.iter().collect(),
                ([single], _) if elements(single).is_some() => elements(single)?.iter().collect(),
                (args, _) if !args.is_empty() && args.iter().all(|a| !a.is_starred_expr()) => {
                    args.iter().collect()
                }
                _ => return None,
            },
            "full" => elements(args.first().or(size_keyword)?)?.iter().collect(),
            "randint" => args
                .iter()
                .chain(size_keyword)
                .find_map(elements)?
                .iter()
                .collect(),
            "arange" if args.len() == 1 => vec![&args[0]],
            "tensor" | "as_tensor" => {
                return Some(ExampleTensor {
                    rank: args.first().map(list_depth),
                    sizes: Vec::new(),
                    on_cpu: built_on_cpu(call),
                });
            }
            _ => return None,
        };
        let sizes_known = sizes
            .iter()
            .enumerate()
            .filter_map(|(index, size)| {
                let value = names::int_literal(size).or_else(|| self.int_name(size))?;
                Some(ExampleSize {
                    index,
                    value,
                    at: Some(size.range()),
                })
            })
            .collect();
        Some(ExampleTensor {
            rank: Some(sizes.len()),
            sizes: sizes_known,
            on_cpu: built_on_cpu(call),
        })
    }

    /// A name bound to an integer literal (`batch_size = 1`), or `args.<name>` of `args =
    /// parser.parse_args()` whose `add_argument` default is one: what the script runs with when
    /// no argument is given, as the tracer runs it.
    fn int_name(&self, expr: &Expr) -> Option<i64> {
        match expr {
            Expr::Name(name) => {
                names::int_literal(self.gathered.binding_at(name.id.as_str(), name.start())?)
            }
            Expr::Attribute(attribute) => {
                let Expr::Name(namespace) = &*attribute.value else {
                    return None;
                };
                let parsed = self
                    .gathered
                    .binding_at(namespace.id.as_str(), namespace.start())?;
                names::int_literal(
                    self.gathered
                        .parsed_argument(parsed, attribute.attr.as_str())?,
                )
            }
            _ => None,
        }
    }
}

/// A factory call without a device, or with `device="cpu"`.
fn built_on_cpu(call: &ast::ExprCall) -> bool {
    call.arguments
        .find_keyword("device")
        .is_none_or(|device| names::string_literal(&device.value) == Some("cpu"))
}

/// `.to(torch.float32)`, `.to("cpu")`, `.type(torch.float16)`: a conversion that leaves the
/// tensor on the CPU. A device the file does not spell (`.to(device)`) may be another.
fn stays_on_device(call: &ast::ExprCall) -> bool {
    let dtype = |expr: &Expr| {
        names::dotted(expr)
            .is_some_and(|name| name.starts_with("torch.") && !name.contains("device"))
    };
    call.arguments.keywords.iter().all(|keyword| {
        match keyword.arg.as_ref().map(ast::Identifier::as_str) {
            Some("dtype" | "non_blocking" | "copy" | "memory_format") => true,
            Some("device") => names::string_literal(&keyword.value) == Some("cpu"),
            _ => false,
        }
    }) && call
        .arguments
        .args
        .iter()
        .all(|arg| dtype(arg) || names::string_literal(arg) == Some("cpu"))
}

fn list_depth(expr: &Expr) -> usize {
    match expr {
        Expr::List(list) => 1 + list.elts.first().map_or(0, list_depth),
        Expr::Tuple(tuple) => 1 + tuple.elts.first().map_or(0, list_depth),
        _ => 0,
    }
}
