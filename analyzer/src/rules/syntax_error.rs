//! PT001 `syntax-error`: the file does not parse as Python.

use crate::diagnostic::Severity;
use crate::registry::declare_rule;

declare_rule! {
    code: "PT001",
    name: "syntax-error",
    summary: "The file does not parse as Python",
    finds: "the file does not parse (the rest is still analysed)",
    severity: Severity::Error,
    is_static: true,
    doc: r#"## What it does
Reports a syntax error. The rest of the file is still analysed: the parser recovers, so a
missing colon after `if x.sum() > 0` still yields the data-dependent branch it guards.

## Why export fails
Python cannot import the file, so nothing in it can be exported.

## Example
```python
class M(torch.nn.Module):
    def forward(self, x)
        return x
```

## Fix
Correct the syntax at the reported position.
"#,
}

use crate::registry::Rule;
use crate::rules::Checker;

pub(crate) fn check(checker: &mut Checker) {
    for error in &checker.parsed.errors {
        let message = format!("Syntax error: {}", error.message);
        checker.report(Rule::SyntaxError, Severity::Error, error.range, message);
    }
}
