//! Which files the tracer exports, found without running anything.
//!
//! A file follows the ExportDB convention when it binds `model` at module level together with
//! `example_args` (or `example_kwargs` / `dynamic_shapes`: the worker then reports the missing
//! `example_args` as PT503). A configured entrypoint belongs to the module its `model` reference
//! names. Everything else gets the static analysis only. The scan is textual — column-0
//! assignments, `def`s and imports outside triple-quoted strings — because the analyzer's
//! syntax tree stays inside the analyzer; a file the scan misreads is at worst traced for
//! nothing or not traced.

use std::path::{Path, PathBuf};

/// Module-level names the convention uses.
const CONVENTION: [&str; 4] = ["model", "example_args", "example_kwargs", "dynamic_shapes"];

/// The 1-based lines where `names` are bound at module level (the last binding of each).
pub fn module_bindings<'a>(text: &str, names: &[&'a str]) -> Vec<(&'a str, u32)> {
    let mut found: Vec<(&'a str, u32)> = Vec::new();
    let mut in_string: Option<&str> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index as u32 + 1;
        let starts_code = in_string.is_none()
            && line
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_');
        if starts_code {
            for name in bound_names(line) {
                if let Some(wanted) = names.iter().find(|wanted| **wanted == name) {
                    found.retain(|(known, _)| known != wanted);
                    found.push((wanted, number));
                }
            }
        }
        in_string = track_triple_quotes(line, in_string);
    }
    found
}

/// Names a column-0 statement binds: `a = ...`, `a: T = ...`, `a, b = ...`, `def a`,
/// `class a`, `import a.b as c`, `from m import a, b as c`.
fn bound_names(line: &str) -> Vec<&str> {
    let code = line.split('#').next().unwrap_or("");
    for keyword in ["def ", "class ", "async def "] {
        if let Some(rest) = code.strip_prefix(keyword) {
            let name = rest
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next();
            return name.and_then(identifier).into_iter().collect();
        }
    }
    if let Some(rest) = code.strip_prefix("from ") {
        let Some((_, imported)) = rest.split_once(" import ") else {
            return Vec::new();
        };
        return imported
            .split(',')
            .filter_map(|item| identifier(item.rsplit(" as ").next().unwrap_or(item)))
            .collect();
    }
    if let Some(rest) = code.strip_prefix("import ") {
        return rest
            .split(',')
            .filter_map(|item| {
                let item = item.trim();
                match item.split_once(" as ") {
                    Some((_, alias)) => identifier(alias),
                    None => identifier(item.split('.').next().unwrap_or(item)),
                }
            })
            .collect();
    }
    let Some(position) = assignment_operator(code) else {
        return Vec::new();
    };
    let target = &code[..position];
    let target = target.split(':').next().unwrap_or(target);
    target.split(',').filter_map(identifier).collect()
}

/// `text` when it is one Python identifier, once brackets and blanks are stripped.
fn identifier(text: &str) -> Option<&str> {
    let text = text
        .trim()
        .trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
        .trim();
    let starts_well = text
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_');
    (starts_well && text.chars().all(|c| c.is_alphanumeric() || c == '_')).then_some(text)
}

/// The byte position of the first `=` that is an assignment, not `==`, `<=`, `>=`, `!=`, and
/// not inside brackets (a keyword argument).
fn assignment_operator(code: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    let mut depth = 0_i32;
    for (index, byte) in bytes.iter().enumerate() {
        match byte {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'"' | b'\'' => return None,
            b'=' if depth == 0 => {
                let before = index.checked_sub(1).map(|i| bytes[i]);
                let after = bytes.get(index + 1);
                let compound = matches!(
                    before,
                    Some(
                        b'=' | b'<'
                            | b'>'
                            | b'!'
                            | b'+'
                            | b'-'
                            | b'*'
                            | b'/'
                            | b'%'
                            | b'&'
                            | b'|'
                            | b'^'
                            | b'@'
                    )
                );
                if !compound && after != Some(&b'=') {
                    return Some(index);
                }
                return None;
            }
            _ => {}
        }
    }
    None
}

/// Which triple-quote delimiter is open after `line`, given the one open before it.
fn track_triple_quotes<'q>(line: &str, mut open: Option<&'q str>) -> Option<&'q str> {
    let mut rest = line;
    loop {
        if let Some(delimiter) = open {
            let Some(at) = rest.find(delimiter) else {
                return open;
            };
            rest = &rest[at + 3..];
            open = None;
        } else {
            let double = rest.find("\"\"\"");
            let single = rest.find("'''");
            let (at, delimiter) = match (double, single) {
                (Some(d), Some(s)) if s < d => (s, "'''"),
                (Some(d), _) => (d, "\"\"\""),
                (None, Some(s)) => (s, "'''"),
                (None, None) => return None,
            };
            // A `#` before the quotes makes them part of a comment.
            if rest[..at].contains('#') {
                return None;
            }
            rest = &rest[at + 3..];
            open = Some(delimiter);
        }
    }
}

/// The line of `model =` when the file follows the ExportDB convention.
pub fn convention_anchor(text: &str) -> Option<u32> {
    let bindings = module_bindings(text, &CONVENTION);
    let model = bindings.iter().find(|(name, _)| *name == "model")?.1;
    let has_inputs = bindings.iter().any(|(name, _)| *name != "model");
    has_inputs.then_some(model)
}

/// The file a `module:attribute` reference's module lives in, under `root` (or `root/src`).
pub fn module_file(reference: &str, root: &Path) -> Option<PathBuf> {
    let module = reference.split(':').next()?.trim();
    pt2lsp_project::table_problems::project_module_file(root, module)
}

/// The name a `module:EXPRESSION` reference's expression starts from: `build_model` in
/// `pkg:build_model(ModelConfig()).eval()`, `CONFIG` in `pkg:CONFIG.shapes`; `None` when it
/// starts with anything else (a literal, a parenthesis).
pub fn reference_attribute(reference: &str) -> Option<&str> {
    let (_, expression) = reference.split_once(':')?;
    let expression = expression.trim_start();
    let end = expression
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(expression.len());
    let name = &expression[..end];
    name.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        .then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_convention_needs_model_and_inputs() {
        let text = "import torch\n\nclass M(torch.nn.Module):\n    model = 1\n\nmodel = M()\nexample_args = (torch.randn(2),)\n";
        assert_eq!(convention_anchor(text), Some(6));
        assert_eq!(convention_anchor("model = M()\nmodel.eval()\n"), None);
        assert_eq!(
            convention_anchor("model = M()\ndynamic_shapes = {}\n"),
            Some(1)
        );
        assert_eq!(
            convention_anchor("from data import example_args\nmodel: M = M()\n"),
            Some(2)
        );
        assert_eq!(
            convention_anchor("model, example_args = build()\n"),
            Some(1)
        );
    }

    #[test]
    fn strings_comparisons_and_keywords_are_not_bindings() {
        let text = "\"\"\"Docs.\nmodel = M()\n\"\"\"\nif model == 1:\n    pass\nf(model=1)\nexample_args = ()\n";
        assert_eq!(convention_anchor(text), None);
        assert_eq!(bound_names("x += 1"), Vec::<&str>::new());
        assert_eq!(bound_names("def model(x):"), ["model"]);
        assert_eq!(bound_names("import a.b as model, c"), ["model", "c"]);
    }

    #[test]
    fn references_resolve_to_module_files() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("models")).unwrap();
        std::fs::write(root.path().join("models/encoder.py"), "").unwrap();
        assert_eq!(
            module_file("models.encoder:build()", root.path()),
            Some(root.path().join("models/encoder.py"))
        );
        assert_eq!(module_file("models.missing:x", root.path()), None);
        assert_eq!(reference_attribute("m:build_model()"), Some("build_model"));
        assert_eq!(reference_attribute("m:CONFIG.shapes"), Some("CONFIG"));
        assert_eq!(
            reference_attribute("m: build_model(ModelConfig(hidden=8)).eval()"),
            Some("build_model")
        );
        assert_eq!(reference_attribute("m:(torch.randn(2),)"), None);
    }
}
