//! Lists and module lists: what appends, displays and unpacking know of their items, one by
//! one where the code that filled them ran once per item, joined where it did not.

use std::rc::Rc;

use super::{Interpreter, TensorInfo, Value, element_of};

/// The most items a list keeps one by one; a longer one is a list of its items' join.
const MAX_LIST_ITEMS: usize = 256;

impl Interpreter<'_, '_> {
    /// `self.blocks.append(Block(...))` in an `__init__` the construction pass runs: the
    /// module list with one more module (or several, for `extend`).
    pub(super) fn grown_modules(
        &self,
        element: &Value,
        items: Option<Rc<[Value]>>,
        method: &str,
        args: &[Value],
    ) -> Value {
        let added = match (method, args) {
            ("append", [item]) | ("insert", [_, item]) => item.clone(),
            ("extend", [items]) => element_of(items),
            _ => Value::Module(None, None),
        };
        // In a loop run abstractly the append runs for an unknown number of iterations: the
        // modules are no longer known one by one.
        let items = items.filter(|_| self.looping == 0).and_then(|items| {
            let added: Vec<Value> = match (method, args) {
                ("append", [item]) => vec![item.clone()],
                ("extend", [Value::Tuple(more) | Value::Modules(_, Some(more))]) => more.to_vec(),
                _ => return None,
            };
            Some(items.iter().cloned().chain(added).collect())
        });
        let element = module_elements(Some(&Value::Tuple(Rc::from(vec![element.clone(), added]))));
        Value::Modules(Rc::new(element), items)
    }

    /// `self.main.append(layer)` / `self.main.add_module("conv", layer)` on an `nn.Sequential`
    /// being built: one more step, while every step is known and the call ran once.
    pub(super) fn grown_sequential(&self, steps: &[Value], method: &str, args: &[Value]) -> Value {
        let added = match (method, args) {
            ("append", [step]) | ("add_module", [_, step]) => Some(step),
            _ => None,
        };
        match added {
            Some(step @ (Value::Layer(_) | Value::Module(Some(_), _) | Value::Sequential(_)))
                if self.looping == 0 && steps.len() < MAX_LIST_ITEMS =>
            {
                Value::Sequential(steps.iter().chain([step]).cloned().collect())
            }
            _ => Value::Module(None, None),
        }
    }
}

/// A local list after `append(x)` / `extend(xs)` / `insert(i, x)`: its items one by one while
/// they are known so; else a list of tensors while everything in it is a tensor, else unknown.
pub(super) fn grown_list(list: &Value, method: &str, args: &[Value]) -> Value {
    // A list whose items are known one by one stays so: an append in straight-line code (or
    // in a loop the interpreter unrolls) adds exactly one item. The join where an abstract
    // loop's paths meet makes it a list of unknown length (`Value::join`).
    if let Value::Tuple(items) = list {
        let added: Option<Vec<Value>> = match (method, args) {
            ("append", [item]) => Some(vec![item.clone()]),
            ("extend", [Value::Tuple(more) | Value::Modules(_, Some(more))]) => Some(more.to_vec()),
            _ => None,
        };
        if let Some(added) = added.filter(|added| items.len() + added.len() <= MAX_LIST_ITEMS) {
            return Value::Tuple(items.iter().cloned().chain(added).collect());
        }
    }
    let added: Vec<&Value> = match (method, args) {
        ("append", [item]) | ("insert", [_, item]) => vec![item],
        ("extend", [Value::Tuple(items)]) => items.iter().collect(),
        ("extend", [tensors @ Value::Tensors(_)]) => vec![tensors],
        _ => return Value::Unknown,
    };
    let existing: Vec<&Value> = match list {
        Value::Tuple(items) => items.iter().collect(),
        tensors @ Value::Tensors(_) => vec![tensors],
        _ => return Value::Unknown,
    };
    let mut joined: Option<TensorInfo> = None;
    for item in existing.into_iter().chain(added) {
        let (Value::Tensor(info) | Value::Tensors(info)) = item else {
            return Value::Unknown;
        };
        joined = Some(match joined {
            None => info.clone(),
            Some(earlier) => match Value::Tensor(earlier).join(&Value::Tensor(info.clone())) {
                Value::Tensor(info) => info,
                _ => return Value::Unknown,
            },
        });
    }
    joined.map_or(Value::Unknown, Value::Tensors)
}

/// The modules of `nn.ModuleList(items)` in order, when each is known: a display or list of
/// modules, another list's known items, or none (`nn.ModuleList()`, filled by appends).
pub(super) fn module_items(items: Option<&Value>) -> Option<Rc<[Value]>> {
    let items: Rc<[Value]> = match items {
        None => Rc::from(Vec::new()),
        Some(Value::Tuple(items)) => items.clone(),
        Some(Value::Modules(_, items)) => items.clone()?,
        Some(_) => return None,
    };
    items
        .iter()
        .all(|item| {
            matches!(
                item,
                Value::Module(..) | Value::Layer(_) | Value::Sequential(_)
            )
        })
        .then_some(items)
}

/// What each module of `nn.ModuleList(items)` / `nn.ModuleDict(items)` is: the join of a
/// display's elements, of a comprehension's element, of a mapping's values.
pub(super) fn module_elements(items: Option<&Value>) -> Value {
    let element = match items {
        Some(Value::Tuple(items)) => items.iter().fold(Value::Bottom, |acc, item| acc.join(item)),
        Some(Value::Modules(element, _)) => (**element).clone(),
        Some(Value::Object(mapping)) => mapping
            .fields
            .borrow()
            .values()
            .fold(Value::Bottom, |acc, item| acc.join(item)),
        // `nn.ModuleList()`: empty until `append` fills it.
        None => Value::Bottom,
        _ => Value::Module(None, None),
    };
    match element {
        module @ (Value::Module(..) | Value::Layer(_) | Value::Bottom) => module,
        _ => Value::Module(None, None),
    }
}

/// `items.pop()` / `items.pop(i)` of a list whose items are known: the item and the list
/// without it; at an index the analysis cannot read, an unknown item and a list of unknown
/// length.
pub(super) fn popped(items: &[Value], args: &[Value]) -> (Value, Value) {
    let index = match args {
        [] => Some(-1),
        [index] => index
            .known_constant()
            .and_then(crate::semantic::value::integer),
        _ => None,
    };
    let length = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let position = index
        .map(|index| if index < 0 { index + length } else { index })
        .and_then(|index| usize::try_from(index).ok())
        .filter(|index| *index < items.len());
    if let Some(position) = position {
        let mut rest = items.to_vec();
        let item = rest.remove(position);
        return (item, Value::Tuple(Rc::from(rest)));
    }
    let all = Value::Tuple(Rc::from(items.to_vec()));
    let item = match element_of(&all) {
        Value::Bottom => Value::Unknown,
        item => item,
    };
    (item, all.join(&Value::Tuple(Rc::from(Vec::new()))))
}
