//! Generates the rule registry from the rule files: each file in `src/rules/` (other than
//! `mod.rs`) declares its rule with `declare_rule! { code, name, summary, finds, severity,
//! is_static, doc }`, and this script writes from those declarations the `Rule` enum, `Rule::ALL`
//! and the table of each rule's `RuleMeta` (included by `src/registry.rs`), and the rules' module
//! list with the call of every static rule's `check` (included by `src/rules/mod.rs`).
//!
//! So adding a rule is adding its file: nothing else lists the rules. The order is the codes'
//! order, which is also `Rule`'s `Ord`.

use std::fmt::Write;
use std::path::Path;

/// One rule file's declaration, as written.
struct Declaration {
    /// The file's stem: the rule's module.
    module: String,
    code: String,
    name: String,
    is_static: bool,
    /// The declaration's fields, verbatim: the body of a `RuleMeta` literal.
    body: String,
}

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let rules_dir = Path::new(&manifest_dir).join("src").join("rules");
    // A directory makes cargo rerun the script when any file in it changes, is added or goes.
    // It is named by its absolute path: the generated modules name their files that way, and
    // cargo gives a copy of the workspace the same build directory (`pip wheel ./python` builds
    // from a temporary copy into this `target/`). A build here after one in a copy finds the
    // copy's directory gone and runs the script again, instead of including deleted files.
    println!("cargo:rerun-if-changed={}", rules_dir.display());

    let mut declarations = Vec::new();
    let entries = std::fs::read_dir(&rules_dir).expect("src/rules is readable");
    for entry in entries {
        let path = entry.expect("src/rules is readable").path();
        let is_rule_file = path.extension().is_some_and(|ext| ext == "rs")
            && path.file_stem().is_some_and(|stem| stem != "mod");
        if !is_rule_file {
            continue;
        }
        let module = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .expect("rule file names are UTF-8")
            .to_owned();
        let text = std::fs::read_to_string(&path).expect("a rule file is readable");
        match declaration(&module, &text) {
            Ok(declaration) => declarations.push(declaration),
            Err(problem) => panic!("src/rules/{module}.rs: {problem}"),
        }
    }
    declarations.sort_by(|a, b| a.code.cmp(&b.code));
    for pair in declarations.windows(2) {
        assert!(
            pair[0].code != pair[1].code,
            "src/rules/{}.rs and src/rules/{}.rs both declare {}: codes are unique",
            pair[0].module,
            pair[1].module,
            pair[0].code
        );
    }

    let generated = Path::new(&out_dir);
    write_if_changed(&generated.join("registry.rs"), &registry(&declarations));
    write_if_changed(
        &generated.join("rule_modules.rs"),
        &rule_modules(&rules_dir, &declarations),
    );
}

/// The rule's declaration in its file's text: the fields of its `declare_rule! { ... }`.
fn declaration(module: &str, text: &str) -> Result<Declaration, String> {
    const OPENING: &str = "\ndeclare_rule! {";
    let start = text.find(OPENING).ok_or(
        "no `declare_rule! { ... }` at the start of a line: each file in rules/ declares one rule",
    )? + OPENING.len();
    let length = closing_brace(&text[start..]).ok_or("`declare_rule! {` is never closed")?;
    let body = &text[start..start + length];
    let fields = fields(body)?;
    let field = |name: &str| {
        fields
            .iter()
            .find(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
            .ok_or(format!("the declaration has no `{name}`"))
    };
    for name in ["summary", "finds", "severity", "doc"] {
        field(name)?;
    }
    let code = string_value(field("code")?).ok_or("`code` is not a string literal")?;
    let name = string_value(field("name")?).ok_or("`name` is not a string literal")?;
    let is_static = match field("is_static")? {
        "true" => true,
        "false" => false,
        other => return Err(format!("`is_static` is `{other}`, not `true` or `false`")),
    };
    let well_formed = code.len() == 5
        && code.starts_with("PT")
        && code[2..].bytes().all(|byte| byte.is_ascii_digit());
    if !well_formed {
        return Err(format!(
            "code `{code}` is not `PT` and three digits (a rule's code never changes)"
        ));
    }
    if name.replace('-', "_") != module {
        return Err(format!(
            "declares `{name}`: a rule's file is named after the rule, `{}.rs`",
            name.replace('-', "_")
        ));
    }
    Ok(Declaration {
        module: module.to_owned(),
        code,
        name,
        is_static,
        body: body.trim_matches('\n').to_owned(),
    })
}

/// The length of `text` up to the `}` that closes a brace opened just before it, skipping
/// braces inside string literals (a page's examples hold Python dicts) and comments.
fn closing_brace(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 1_usize;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at);
                }
            }
            b'"' | b'r' => {
                if let Some(end) = string_end(text, at) {
                    at = end;
                    continue;
                }
            }
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                at += text[at..].find('\n')?;
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// Where the string literal starting at `at` ends (one past its last byte), for `"..."`,
/// `r"..."` and `r#"..."#`; `None` when no literal starts there.
fn string_end(text: &str, at: usize) -> Option<usize> {
    let rest = &text[at..];
    if let Some(raw) = rest.strip_prefix('r') {
        // An `r` inside a word (`for`) starts no literal.
        let in_word = text[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        if in_word || !raw[hashes..].starts_with('"') {
            return None;
        }
        let closing = format!("\"{}", "#".repeat(hashes));
        let content = at + 1 + hashes + 1;
        return Some(content + text[content..].find(&closing)? + closing.len());
    }
    let mut escaped = false;
    for (offset, c) in rest.char_indices().skip(1) {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some(at + offset + 1),
            _ => escaped = false,
        }
    }
    None
}

/// The `field: value` pairs of a declaration's body, values verbatim.
fn fields(body: &str) -> Result<Vec<(String, String)>, String> {
    let mut fields = Vec::new();
    let mut rest = body;
    loop {
        rest = rest.trim_start();
        while let Some(comment) = rest.strip_prefix("//") {
            rest = comment[comment.find('\n').unwrap_or(comment.len())..].trim_start();
        }
        if rest.is_empty() {
            return Ok(fields);
        }
        let (name, after) = rest
            .split_once(':')
            .ok_or_else(|| format!("expected `field: value` at `{}`", first_line(rest)))?;
        let name = name.trim();
        if !name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            return Err(format!("expected a field name at `{}`", first_line(rest)));
        }
        let after = after.trim_start();
        // A value is a string literal, or a path or literal up to the next comma.
        let length = match string_end(after, 0) {
            Some(end) if after.starts_with('"') || after.starts_with('r') => end,
            _ => after.find(',').unwrap_or(after.len()),
        };
        fields.push((name.to_owned(), after[..length].trim().to_owned()));
        rest = after[length..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// The text of a plain string literal without escapes (`"PT101"`).
fn string_value(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains(['"', '\\'])).then(|| inner.to_owned())
}

/// `data-dependent-branch` → `DataDependentBranch`.
fn variant(name: &str) -> String {
    name.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

fn registry(declarations: &[Declaration]) -> String {
    let mut out = String::from(
        "// Generated by analyzer/build.rs from the `declare_rule!` of each file in src/rules/.\n\n",
    );
    out.push_str(
        "/// Every rule pt2lsp knows, static or tracer-only, in the order of their codes.\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]\n\
         pub enum Rule {\n",
    );
    for rule in declarations {
        let _ = writeln!(
            out,
            "    /// {} `{}`\n    {},",
            rule.code,
            rule.name,
            variant(&rule.name)
        );
    }
    out.push_str("}\n\nimpl Rule {\n    /// Every rule, in the order of their codes.\n    pub const ALL: &[Rule] = &[\n");
    for rule in declarations {
        let _ = writeln!(out, "        Rule::{},", variant(&rule.name));
    }
    out.push_str("    ];\n\n    /// What the rule's file declares of it.\n    pub(crate) fn meta(self) -> &'static RuleMeta {\n        match self {\n");
    for (index, rule) in declarations.iter().enumerate() {
        let _ = writeln!(
            out,
            "            Rule::{} => &DECLARED[{index}],",
            variant(&rule.name)
        );
    }
    let _ = writeln!(
        out,
        "        }}\n    }}\n}}\n\n/// Each rule's declaration, in the order of `Rule::ALL`.\nstatic DECLARED: [RuleMeta; {}] = [",
        declarations.len()
    );
    for rule in declarations {
        let _ = writeln!(
            out,
            "    // src/rules/{}.rs\n    RuleMeta {{\n{}\n    }},",
            rule.module, rule.body
        );
    }
    out.push_str("];\n");
    out
}

fn rule_modules(rules_dir: &Path, declarations: &[Declaration]) -> String {
    let mut out =
        String::from("// Generated by analyzer/build.rs: one module per file in src/rules/.\n\n");
    let mut modules: Vec<&Declaration> = declarations.iter().collect();
    modules.sort_by(|a, b| a.module.cmp(&b.module));
    for rule in modules {
        // A `mod` in an included file is looked for beside the generated file, so the path
        // says where the rule's file is.
        let path = rules_dir.join(format!("{}.rs", rule.module));
        let _ = writeln!(
            out,
            "#[path = {:?}]\npub(crate) mod {};",
            path.to_string_lossy(),
            rule.module
        );
    }
    out.push_str(
        "\n/// Runs the check of every rule the static pass reports, in the order of their codes.\n\
         fn check_each(checker: &mut Checker<'_>) {\n",
    );
    for rule in declarations.iter().filter(|rule| rule.is_static) {
        let _ = writeln!(out, "    {}::check(checker);", rule.module);
    }
    out.push_str("}\n");
    out
}

/// Writes `text` to `path` unless it is there already, so an unchanged registry does not
/// make cargo rebuild what depends on it.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    std::fs::write(path, text).expect("OUT_DIR is writable");
}
