//! PT605 `float-size`: a size given to `view`, `reshape`, `expand`, `repeat` or a factory is a
//! Python float (`self.pt = (window - kernel) / skip`): torch takes only ints there.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT605",
    name: "float-size",
    summary: "A size given to a view, an expansion or a factory is a float",
    finds: "a size argument of `view`, `reshape`, `expand`, `repeat`, `new_zeros` or a factory \
        (`torch.zeros`, `torch.randn`, …) that the program computes as a number with a \
        fractional part, most often a true division `/` of ints written for Python 2",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Finds a size given to an op that takes sizes — `view`, `reshape`, `expand`, `repeat`,
`new_zeros`, `new_ones`, `new_empty`, `new_full`, and the factories `torch.zeros`, `ones`,
`empty`, `full`, `rand`, `randn` — that the program computes as a number with a fractional
part: a true division of sizes (`(window - kernel) / skip`), a float literal, a configuration
value scaled by a float. The values are followed where the program computes them: a
constructor argument, an argparse default, a configuration field, an attribute set in
`__init__`.

Only numbers known to have a fractional part are reported: the analysis does not tell the float
`7.0` from the int `7`, so a division that happens to come out whole is not reported, although
torch rejects it too.

The tracer reports torch's own exception on the same line.

## Why export fails
Sizes are ints. Code written for Python 2, where `/` of two ints is floor division, computes
sizes with `/`; under Python 3 they are floats, and torch rejects them: `TypeError: view():
argument 'size' failed to unpack the object at pos 3 with error "type must be tuple of ints,but
got float"` (measured, torch 2.15). The model fails to run in eager as well as to export; the exporter
stops at the first forward it traces.

## Example
```python
class Model(nn.Module):
    def __init__(self, window, kernel, skip):
        super().__init__()
        self.skip = skip
        self.periods = (window - kernel) / skip  # 6.75 for 168, 6 and 24

    def forward(self, x):
        s = x[:, :, -int(self.periods * self.skip):]
        return s.view(x.shape[0], x.shape[1], self.periods, self.skip)
```

## Fix
Compute the size as an int where it is defined, as Python 2 did:

```python
self.periods = (window - kernel) // skip
```

or convert it where it is used (`int(self.periods)`), when the fraction is meant to be dropped.
"#,
}

use crate::registry::Rule;
use crate::rules::Checker;
use crate::semantic::EventKind;

pub(crate) fn check(checker: &mut Checker) {
    for event in &checker.model.events {
        let EventKind::FloatSize { op, value } = &event.kind else {
            continue;
        };
        let text = checker.model.text(event.range);
        let message = format!(
            "`{text}` is {value}, a float, where `{op}` takes a size: torch accepts only ints there, and raises \"TypeError: {op}(): argument 'size' failed to unpack the object ... type must be tuple of ints,but got float\" (in eager too); compute it with `//` where it is defined, or convert it with `int(...)`"
        );
        checker.report(
            Rule::FloatSize,
            Checker::failure_severity(event),
            event.range,
            message,
        );
    }
}
