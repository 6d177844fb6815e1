//! PT404 `unregistered-input-type`: an instance of a class pytree cannot flatten crosses the
//! export boundary (an example input, or a value `forward` returns).

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT404",
    name: "unregistered-input-type",
    summary: "A dataclass or custom class without a pytree registration is an input or output",
    finds: "a dataclass or custom class without a pytree registration as an input or output",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds instances of the file's own classes (a `@dataclass`, a plain class) in the example inputs
(`example_args`, `example_kwargs`, the arguments of a `torch.export.export` call, inside tuples,
lists and dicts) and in the values the exported `forward` returns, when the file registers no
pytree node for the class (`torch.export.register_dataclass`,
`torch.utils._pytree.register_pytree_node`, `register_pytree_node_class`, `register_constant`,
imported any way). Classes with a base from elsewhere (a `NamedTuple`, transformers'
`ModelOutput`) are not reported: they may register themselves.

## Why export fails
The exporter flattens inputs and outputs into tensors with pytree, which knows only the
containers registered with it. An unregistered class in the inputs fails with `ValueError:
Unsupported input type <class 'Batch'>. Export only supports pytree containers of basic types`;
in the outputs, with `RuntimeError: Found <class 'Out'> in output, which is not a known type`
(pytorch issue #147400).

## Example
```python
@dataclass
class Batch:
    x: torch.Tensor
    mask: torch.Tensor

class M(torch.nn.Module):
    def forward(self, batch: Batch):
        return batch.x * batch.mask

model = M()
example_args = (Batch(torch.randn(2, 8), torch.ones(2, 8)),)
```

## Fix
Register the dataclass after its definition, so pytree flattens it into its fields:

```python
torch.export.register_dataclass(Batch)
```

A class that is not a dataclass needs `torch.utils._pytree.register_pytree_node(Cls,
flatten_fn, unflatten_fn)`, which pt2lsp cannot write for you; or pass its tensors directly.

Fix safety: unsafe. Registering changes nothing in eager code, but a type can be registered only
once: when another file of the program already registers it, the added line fails at import.
"#,
}

use ruff_text_size::{Ranged, TextRange};

use crate::diagnostic::{Applicability, Edit, Fix};
use crate::fixes::{import_member, line_end};
use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::{Boundary, UnregisteredValue};

pub(crate) fn check(checker: &mut Checker) {
    let Some(entry) = &checker.model.entry else {
        return;
    };
    for value in &entry.unregistered {
        let class = &checker.model.classes[value.class];
        let name = class.def.name.as_str();
        let kind = if value.is_dataclass {
            "dataclass"
        } else {
            "class"
        };
        let (place, failure) = match value.boundary {
            Boundary::Input => (
                "an example input",
                format!("\"Unsupported input type <class '{name}'>\""),
            ),
            Boundary::Output => (
                "returned from the exported `forward`",
                format!("\"Found <class '{name}'> in output, which is not a known type\""),
            ),
        };
        let remedy = if value.is_dataclass {
            format!("register it with `torch.export.register_dataclass({name})`")
        } else {
            format!(
                "register it with `torch.utils._pytree.register_pytree_node({name}, flatten, unflatten)`, or pass its tensors directly"
            )
        };
        let message = format!(
            "`{name}` ({kind} with no pytree registration) is {place}: export cannot flatten it and fails with {failure}; {remedy}"
        );
        let fix = value
            .is_dataclass
            .then(|| register_fix(checker, value))
            .flatten();
        checker.report_with_fix(
            Rule::UnregisteredInputType,
            Severity::Error,
            value.range,
            message,
            fix,
        );
    }
}

/// `torch.export.register_dataclass(Cls)` on the line after a module-level class.
fn register_fix(checker: &Checker, value: &UnregisteredValue) -> Option<Fix> {
    let class = checker.model.classes[value.class].def;
    let text = checker.model.file.text;
    let body = &checker.parsed.module.body;
    // Only a class defined at module level can be registered right after itself.
    if !body.iter().any(|stmt| stmt.range() == class.range()) {
        return None;
    }
    let imported = import_member(
        body,
        checker.model.file,
        "torch.export",
        "register_dataclass",
    );
    let at = line_end(text, class.end());
    let newline = if text[..at.to_usize()].ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let mut edits: Vec<Edit> = imported.edit.into_iter().collect();
    edits.push(Edit {
        range: TextRange::empty(at),
        content: format!("{newline}\n\n{}({})\n", imported.name, class.name),
    });
    Some(Fix {
        title: format!(
            "Register `{}` with `{}({})`",
            class.name, imported.name, class.name
        ),
        edits,
        applicability: Applicability::Unsafe,
    })
}
