//! The interpreter's calls of Python builtins (`int`, `len`, `range`, `min`, `getattr`, …) and
//! of `math` functions on numbers the program computes.

use std::rc::Rc;

use ruff_text_size::Ranged;

use crate::catalogue;
use crate::syntax::ast::{self, Expr};

use super::{
    BoolContext, CompareOp, Env, EventKind, Guard, GuardKind, Interpreter, Interval, ScalarUse,
    SizeOrigin, Value, element_of, exact_items,
};

impl Interpreter<'_, '_> {
    pub(super) fn builtin_call(
        &mut self,
        name: &str,
        call: &ast::ExprCall,
        args: &[Value],
        env: &mut Env,
    ) -> Value {
        let first = args.first().cloned().unwrap_or(Value::Unknown);
        // A number made from a value read at trace time is read at trace time too.
        if let Value::Baked(_) = first {
            if matches!(
                name,
                "int" | "float" | "round" | "abs" | "min" | "max" | "bool"
            ) {
                return first;
            }
        }
        if name == "next" && !matches!(first, Value::Tensor(_) | Value::Tensors(_)) {
            // An iterator that outlives the call (on the module, or module-level): each eager
            // call takes the next element, the exported program the one it took while exporting.
            let kept = call.arguments.args.first().and_then(|expr| match expr {
                Expr::Name(name)
                    if !env.binds(name.id.as_str())
                        && self
                            .model
                            .globals_in(self.file)
                            .contains_key(name.id.as_str()) =>
                {
                    Some(name.id.to_string())
                }
                expr => super::self_attribute(expr).map(|attribute| format!("self.{attribute}")),
            });
            if let Some(iterator) = kept {
                self.record(EventKind::IteratorAdvanced { iterator }, call.range());
            }
        }
        match name {
            "int" | "float" => match first {
                Value::Tensor(info) if info.assumed => Value::Unknown,
                Value::Tensor(_) => {
                    self.record(
                        EventKind::Scalar {
                            value: first,
                            usage: ScalarUse::Conversion,
                        },
                        call.range(),
                    );
                    Value::DataScalar(Interval::default())
                }
                // `int()` of a number read from tensor data asks the symbolic integer for its
                // value: non-strict export fails there (the rule knows the mode).
                Value::DataScalar(interval) if name == "int" => {
                    self.record(
                        EventKind::Scalar {
                            value: Value::DataScalar(interval),
                            usage: ScalarUse::Conversion,
                        },
                        call.range(),
                    );
                    Value::DataScalar(interval)
                }
                Value::DataScalar(interval) => Value::DataScalar(interval),
                // Measured: non-strict `int()` of a dynamic size asks for its value, which
                // fixes the dimension (strict export keeps it symbolic).
                size @ Value::Size {
                    origin: SizeOrigin::Dynamic { .. },
                    ..
                } if name == "int" => {
                    self.record(
                        EventKind::Scalar {
                            value: size.clone(),
                            usage: ScalarUse::Conversion,
                        },
                        call.range(),
                    );
                    size
                }
                size @ Value::Size { .. } => size,
                Value::Number(number) if name == "int" => Value::Number(number.trunc()),
                number @ Value::Number(_) => number,
                // `int(res)` of a string the program split out of a known one (`"16,8"`).
                Value::Str(text) if args.len() == 1 => {
                    let text = text.trim();
                    let parsed = if name == "int" {
                        #[allow(clippy::cast_precision_loss)] // Checked by `integer` below.
                        text.parse::<i64>().ok().map(|number| number as f64)
                    } else {
                        text.parse::<f64>().ok()
                    };
                    parsed
                        .filter(|number| {
                            name == "float" || crate::semantic::value::integer(*number).is_some()
                        })
                        .map_or(Value::Unknown, Value::Number)
                }
                _ => Value::Unknown,
            },
            "bool" => {
                // Non-strict export fails at `bool()` itself (the rules say so from the event);
                // strict export captures a symbolic boolean, which fails only where it decides
                // control flow: the result carries the guard to that use.
                let result = match &first {
                    Value::DataScalar(interval) => Value::Guard(Guard {
                        kind: GuardKind::Data,
                        decided: interval.decide(CompareOp::NotEq, 0.0).is_some(),
                        suggestion: None,
                    }),
                    Value::Guard(guard) if matches!(guard.kind, GuardKind::Data) => first.clone(),
                    _ => Value::Unknown,
                };
                if let Some(argument) = call.arguments.args.first() {
                    self.record_truthiness(first, argument, BoolContext::BoolCall);
                }
                result
            }
            "len" => match first {
                Value::Tensor(info) => {
                    let size = self.size_of(&info, 0);
                    self.record(
                        EventKind::Scalar {
                            value: size.clone(),
                            usage: ScalarUse::Len,
                        },
                        call.range(),
                    );
                    size
                }
                Value::Tuple(items) | Value::Modules(_, Some(items)) => {
                    #[allow(clippy::cast_precision_loss)] // A display has few elements.
                    Value::Number(items.len() as f64)
                }
                // `while len(emb.shape) < len(h.shape):` compares ranks.
                Value::Shape(info) => super::tensor_sizes::rank_of(&info),
                _ => Value::Unknown,
            },
            "range" => {
                for (value, expr) in args.iter().zip(call.arguments.args.iter()) {
                    if matches!(value, Value::DataScalar(_) | Value::Size { .. }) {
                        self.record(
                            EventKind::Scalar {
                                value: value.clone(),
                                usage: ScalarUse::Range,
                            },
                            expr.range(),
                        );
                    }
                }
                // `range(depth)` of a known, small count: the numbers themselves, so a loop
                // over them runs once per number with the number known.
                match known_range(args) {
                    Some(numbers) => Value::Tuple(numbers.into_iter().map(Value::Number).collect()),
                    None => Value::Iter(Rc::new(Value::Unknown)),
                }
            }
            "min" | "max" => {
                let numbers: Option<Vec<f64>> = args
                    .iter()
                    .map(|arg| match arg {
                        Value::Number(number) => Some(*number),
                        _ => None,
                    })
                    .collect();
                if let Some(numbers) = numbers.filter(|numbers| numbers.len() > 1) {
                    let pick = if name == "min" { f64::min } else { f64::max };
                    let first = numbers[0];
                    return Value::Number(numbers[1..].iter().copied().fold(first, pick));
                }
                if args.iter().any(Value::is_tensor) {
                    Value::tensor()
                } else if args.iter().any(|arg| matches!(arg, Value::DataScalar(_))) {
                    Value::DataScalar(Interval::default())
                } else {
                    args.iter()
                        .fold(Value::Bottom, |acc, arg| match (acc, arg) {
                            (Value::Size { origin, .. }, Value::Size { origin: other, .. }) => {
                                Value::Size {
                                    origin: origin.combine(other),
                                    interval: Interval::default(),
                                    sym: None,
                                }
                            }
                            (size @ Value::Size { .. }, _) => size,
                            (_, size @ Value::Size { .. }) => size.clone(),
                            _ => Value::Unknown,
                        })
                }
            }
            "abs" | "round" => match first {
                value @ (Value::Tensor(_) | Value::DataScalar(_) | Value::Size { .. }) => value,
                Value::Number(number) if name == "abs" => Value::Number(number.abs()),
                Value::Number(number) if args.len() == 1 => Value::Number(number.round_ties_even()),
                _ => Value::Unknown,
            },
            "sum" => match first {
                Value::Tensors(_) => Value::tensor(),
                Value::Tuple(items) if items.iter().any(Value::is_tensor) => Value::tensor(),
                _ => Value::Unknown,
            },
            "setattr" => {
                let name = match args.get(1) {
                    Some(Value::Str(name)) => Some(name.as_ref()),
                    _ => None,
                };
                let value = args.get(2).cloned().unwrap_or(Value::Unknown);
                match &first {
                    Value::Object(instance) => self.set_field(instance, name, value),
                    Value::Building(index) => match name {
                        Some(name) => self.write_field(*index, name, value),
                        None => self.forget_fields(*index),
                    },
                    _ => {}
                }
                Value::None
            }
            // `getattr(nn, "LSTM")`: a module's member named by a known string.
            "getattr" => match (&first, args.get(1)) {
                (Value::Qualified(module), Some(Value::Str(member))) => {
                    let qualified = format!("{module}.{member}");
                    self.model
                        .resolve_qualified(&qualified)
                        .unwrap_or_else(|| Value::Qualified(Rc::from(qualified)))
                }
                (Value::Object(instance), Some(Value::Str(member))) => instance
                    .field(member)
                    .or_else(|| args.get(2).cloned())
                    .unwrap_or(Value::Unknown),
                // `getattr(self, f"down{i}")`: the submodule an unrolled `__init__` loop set.
                (Value::Module(..) | Value::Building(_), Some(Value::Str(member)))
                    if args.len() == 2 =>
                {
                    let receiver = first.clone();
                    self.attribute(&receiver, member)
                }
                _ => Value::Unknown,
            },
            "tuple" | "list" => match first {
                value @ (Value::Shape(_)
                | Value::Tensors(_)
                | Value::Tuple(_)
                | Value::DataScalars
                | Value::Modules(..)) => value,
                _ => Value::Unknown,
            },
            // Over sequences whose items are known one by one, the pairs are known one by one.
            "zip" if !args.is_empty() && args.iter().all(|arg| exact_items(arg).is_some()) => {
                let sequences: Vec<Rc<[Value]>> = args.iter().filter_map(exact_items).collect();
                let length = sequences.iter().map(|items| items.len()).min().unwrap_or(0);
                Value::Tuple(
                    (0..length)
                        .map(|index| {
                            Value::Tuple(
                                sequences.iter().map(|items| items[index].clone()).collect(),
                            )
                        })
                        .collect(),
                )
            }
            // `zip(self.layers, routed)` with the layers known one by one and the other
            // sequence not: the layers are still known in their order (the sequences a model
            // zips are parallel), each beside what the other sequence holds.
            "zip" if args.iter().any(|arg| exact_items(arg).is_some()) => {
                let length = args
                    .iter()
                    .filter_map(exact_items)
                    .map(|items| items.len())
                    .min()
                    .unwrap_or(0);
                Value::Tuple(
                    (0..length)
                        .map(|index| {
                            Value::Tuple(
                                args.iter()
                                    .map(|arg| match exact_items(arg) {
                                        Some(items) => items[index].clone(),
                                        None => element_of(arg),
                                    })
                                    .collect(),
                            )
                        })
                        .collect(),
                )
            }
            "zip" => Value::Iter(Rc::new(Value::Tuple(args.iter().map(element_of).collect()))),
            "enumerate" if args.len() == 1 && exact_items(&first).is_some() => {
                let items = exact_items(&first).unwrap_or_else(|| Rc::from(Vec::new()));
                Value::Tuple(
                    items
                        .iter()
                        .enumerate()
                        .map(|(index, item)| {
                            #[allow(clippy::cast_precision_loss)] // Few items.
                            let index = Value::Number(index as f64);
                            Value::Tuple(Rc::from(vec![index, item.clone()]))
                        })
                        .collect(),
                )
            }
            "enumerate" => Value::Iter(Rc::new(Value::Tuple(Rc::from(vec![
                Value::Unknown,
                element_of(&first),
            ])))),
            "reversed" if exact_items(&first).is_some() => {
                let items = exact_items(&first).unwrap_or_else(|| Rc::from(Vec::new()));
                Value::Tuple(items.iter().rev().cloned().collect())
            }
            "reversed" | "iter" => Value::Iter(Rc::new(element_of(&first))),
            "print" => {
                self.record(
                    EventKind::Call {
                        qualified: "print".to_owned(),
                        tensor_argument: false,
                    },
                    call.range(),
                );
                Value::Unknown
            }
            _ if catalogue::UNTRACEABLE_BUILTINS.contains(&name) => {
                self.record(
                    EventKind::Call {
                        qualified: name.to_owned(),
                        tensor_argument: false,
                    },
                    call.range(),
                );
                Value::Unknown
            }
            _ => {
                let _ = env;
                Value::Unknown
            }
        }
    }
}

/// `math.ceil(d_model / 16)` and the like on Python numbers the program computed: the number.
pub(super) fn math_of_numbers(qualified: &str, args: &[Value]) -> Option<f64> {
    let function = qualified.strip_prefix("math.")?;
    let numbers: Vec<f64> = args
        .iter()
        .map(|arg| match arg {
            Value::Number(number) => Some(*number),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let result = match (function, numbers.as_slice()) {
        ("ceil", [x]) => x.ceil(),
        ("floor", [x]) => x.floor(),
        ("trunc", [x]) => x.trunc(),
        ("sqrt", [x]) if *x >= 0.0 => x.sqrt(),
        ("log", [x]) if *x > 0.0 => x.ln(),
        ("log", [x, base]) if *x > 0.0 && *base > 0.0 => x.log(*base),
        ("log2", [x]) if *x > 0.0 => x.log2(),
        ("log10", [x]) if *x > 0.0 => x.log10(),
        ("exp", [x]) => x.exp(),
        ("pow", [x, y]) => x.powf(*y),
        ("fabs", [x]) => x.abs(),
        _ => return None,
    };
    result.is_finite().then_some(result)
}

/// The numbers `range(args)` yields, when its bounds are known integers and they are few.
fn known_range(args: &[Value]) -> Option<Vec<f64>> {
    let bounds: Option<Vec<i64>> = args
        .iter()
        .map(|arg| match arg {
            Value::Number(number) => crate::semantic::value::integer(*number),
            _ => None,
        })
        .collect();
    let (first, end, step) = match bounds?.as_slice() {
        [end] => (0, *end, 1),
        [first, end] => (*first, *end, 1),
        [first, end, step] if *step != 0 => (*first, *end, *step),
        _ => return None,
    };
    let mut numbers = Vec::new();
    let mut current = first;
    while (step > 0 && current < end) || (step < 0 && current > end) {
        if numbers.len() == super::MAX_UNROLL {
            return None;
        }
        #[allow(clippy::cast_precision_loss)] // Small integers.
        numbers.push(current as f64);
        current += step;
    }
    Some(numbers)
}

/// A method of a string the program computed (`"16,8".split(",")`, `name.lower()`): its
/// value, for the methods whose result is plain text or a list of it.
pub(super) fn string_method(text: &str, name: &str, args: &[Value]) -> Value {
    let string = |text: &str| Value::Str(Rc::from(text));
    let argument = |index: usize| match args.get(index) {
        Some(Value::Str(text)) => Some(text.clone()),
        _ => None,
    };
    match (name, args.len()) {
        ("split", 0) => Value::Tuple(text.split_whitespace().map(string).collect()),
        ("split", 1) => match argument(0) {
            Some(separator) if !separator.is_empty() => {
                Value::Tuple(text.split(&*separator).map(string).collect())
            }
            _ => Value::Unknown,
        },
        ("strip", 0) => string(text.trim()),
        ("lstrip", 0) => string(text.trim_start()),
        ("rstrip", 0) => string(text.trim_end()),
        ("lower", 0) => string(&text.to_lowercase()),
        ("upper", 0) => string(&text.to_uppercase()),
        ("replace", 2) => match (argument(0), argument(1)) {
            (Some(old), Some(new)) if !old.is_empty() => string(&text.replace(&*old, &new)),
            _ => Value::Unknown,
        },
        ("startswith" | "endswith", 1) => match argument(0) {
            Some(affix) => {
                let holds = if name == "startswith" {
                    text.starts_with(&*affix)
                } else {
                    text.ends_with(&*affix)
                };
                Value::Number(f64::from(u8::from(holds)))
            }
            None => Value::Unknown,
        },
        _ => Value::Unknown,
    }
}
