//! Entrypoint tables as the static pass reads them: each `[[tool.pt2lsp.entrypoints]]` with a
//! `model` becomes a small Python module, `model = EXPRESSION` and its example inputs and
//! `dynamic_shapes` likewise, each name the expressions use imported from the module its string
//! names. The analysis follows it as it follows an entry file of the user's, so the `Dim`s a
//! table declares reach the model's files. Its lines, and where the string is written on one
//! line its columns, are those of the strings in `pyproject.toml`, so a note that names the
//! entrypoint points into the table.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pt2lsp_analyzer::{Edit, Fix, LineIndex, TextRange, TextSize};

use crate::config::{Entrypoint, TablePlace};

/// One table's module: its dotted name (one no file has), the configuration file it stands
/// for, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableProgram {
    pub module: String,
    pub path: PathBuf,
    pub text: String,
    /// Where the table's strings are written in the configuration file.
    pub place: TablePlace,
}

impl TableProgram {
    /// The info companions this table's own analysis gives (the fix of a guard in another
    /// file on a `Dim` the table's string writes), each placed and fixed where the string is
    /// written in `configuration`, the configuration file's text; a companion whose fix
    /// cannot be placed exactly is left out. `pt2lsp check` and the editor both ask this.
    pub fn companions(
        &self,
        configuration: &str,
        settings: &pt2lsp_analyzer::Settings,
        workspace: &pt2lsp_analyzer::WorkspaceIndex,
    ) -> Vec<pt2lsp_analyzer::Diagnostic> {
        if !workspace.is_entrypoint(&self.module) {
            return Vec::new();
        }
        let report = pt2lsp_analyzer::check_file(
            pt2lsp_analyzer::SourceFile {
                text: &self.text,
                module: Some(&self.module),
                is_package: false,
                namespace: None,
            },
            settings,
            workspace,
        );
        report
            .diagnostics
            .into_iter()
            .filter(|diagnostic| {
                diagnostic.rule == pt2lsp_analyzer::Rule::DynamicDimGuard
                    && diagnostic.severity == pt2lsp_analyzer::Severity::Info
            })
            .filter_map(|diagnostic| {
                let fix = self.fix_in_configuration(configuration, diagnostic.fix.as_ref()?)?;
                let range = fix.edits.first()?.range;
                Some(pt2lsp_analyzer::Diagnostic {
                    range,
                    fix: Some(fix),
                    ..diagnostic
                })
            })
            .collect()
    }

    /// Whether this is the table written in the configuration file `file` with a key on the
    /// 1-based `line` (paths compared as given: both absolute, or both as shown).
    pub fn is_written_at(&self, file: &std::path::Path, line: u32) -> bool {
        self.path == file && self.place.keys.values().any(|at| *at == line)
    }

    /// `fix`, made on this program's text, as the same edits of the configuration file's text
    /// `configuration`: a `Dim(...)` written inside a table string is fixed where it is
    /// written. `None` when any edit cannot be placed exactly, rather than a wrong edit: an
    /// edit over several lines, on a line whose string has no known column (written over
    /// several lines, or with an escape before its expression), or after an escape in the
    /// string (`\"` or `\\` in a basic string shifts every column after it; a literal string
    /// `'...'` has none); or new text the string cannot hold as written (a `'` in a literal
    /// string, a line break).
    pub fn fix_in_configuration(&self, configuration: &str, fix: &Fix) -> Option<Fix> {
        let program_lines = LineIndex::new(&self.text);
        let configuration_lines = LineIndex::new(configuration);
        let edits = fix
            .edits
            .iter()
            .map(|edit| {
                self.edit_in_configuration(
                    edit,
                    configuration,
                    &program_lines,
                    &configuration_lines,
                )
            })
            .collect::<Option<Vec<Edit>>>()?;
        Some(Fix {
            title: fix.title.clone(),
            edits,
            applicability: fix.applicability,
        })
    }

    fn edit_in_configuration(
        &self,
        edit: &Edit,
        configuration: &str,
        program_lines: &LineIndex,
        configuration_lines: &LineIndex,
    ) -> Option<Edit> {
        let start = program_lines.line_column(edit.range.start());
        let end = program_lines.line_column(edit.range.end());
        if start.line != end.line {
            return None;
        }
        // The 1-based line is the table's; the key written on it gives the expression's column.
        let line = start.line + 1;
        let expression_column = self
            .place
            .keys
            .iter()
            .find(|(_, at)| **at == line)
            .and_then(|(key, _)| self.place.expressions.get(key))
            .copied()? as usize;
        let (program_start, program_line) = line_at(&self.text, program_lines, start.line);
        let (configuration_start, configuration_line) =
            line_at(configuration, configuration_lines, start.line);
        let (from, to) = (
            edit.range.start().to_usize() - program_start,
            edit.range.end().to_usize() - program_start,
        );
        // Byte for byte the same from the expression's start through the edit: no escape
        // shifts the columns before it, and the edit lies inside the string.
        if from < expression_column
            || program_line.get(expression_column..to)?
                != configuration_line.get(expression_column..to)?
        {
            return None;
        }
        // The string's opening quote is the last quote before its expression (`module:` has
        // none).
        let quote = configuration_line[..expression_column]
            .chars()
            .rev()
            .find(|c| *c == '"' || *c == '\'')?;
        if edit.content.contains(['\n', '\r']) {
            return None;
        }
        let content = if quote == '"' {
            edit.content.replace('\\', "\\\\").replace('"', "\\\"")
        } else if edit.content.contains('\'') {
            return None;
        } else {
            edit.content.clone()
        };
        let at = |offset: usize| TextSize::new((configuration_start + offset) as u32);
        Some(Edit {
            range: TextRange::new(at(from), at(to)),
            content,
        })
    }
}

/// The module of each table read from a file that names a `model` (by position in `entrypoints`).
pub fn table_programs(entrypoints: &[Entrypoint]) -> Vec<TableProgram> {
    entrypoints
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| table_program(index, entry))
        .collect()
}

fn table_program(index: usize, entry: &Entrypoint) -> Option<TableProgram> {
    let place = entry.place.as_ref()?;
    entry.model.as_ref()?;
    let strings = [
        ("model", "model", &entry.model),
        ("example-args", "example_args", &entry.example_args),
        ("example-kwargs", "example_kwargs", &entry.example_kwargs),
        ("dynamic-shapes", "dynamic_shapes", &entry.dynamic_shapes),
    ];
    // 1-based line -> its statements; the imports go on the header's line, above every key.
    let mut lines: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut imports: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (key, name, value) in strings {
        let Some(value) = value else { continue };
        let (module, expression) = value.split_once(':')?;
        let (module, expression) = (module.trim(), expression.trim());
        if module.is_empty() || !module.split('.').all(is_identifier) || expression.is_empty() {
            return None;
        }
        let expression = expression.replace(['\n', '\r'], " ");
        let line = place.line_of(key);
        let assignment = format!("{name} = ");
        let statement = match place.expressions.get(key) {
            // Padded so that the expression starts at the column it has in the file.
            Some(&column) if column as usize >= assignment.len() => {
                format!("{assignment:width$}{expression}", width = column as usize)
            }
            _ => format!("{assignment}{expression}"),
        };
        lines.entry(line).or_default().push(statement);
        let names = imports.entry(module).or_default();
        for used in free_names(value.split_once(':')?.1) {
            if !names.contains(&used) {
                names.push(used);
            }
        }
    }
    let statements: Vec<String> = imports
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(module, names)| format!("from {module} import {}", names.join(", ")))
        .collect();
    if !statements.is_empty() {
        let header = lines.entry(place.header).or_default();
        header.splice(0..0, statements);
    }
    let last = *lines.keys().next_back()?;
    let text: String = (1..=last)
        .map(|line| {
            lines
                .get(&line)
                .map_or_else(String::new, |all| all.join("; "))
                + "\n"
        })
        .collect();
    Some(TableProgram {
        module: format!("__pt2lsp_entrypoint_table_{}__", index + 1),
        path: place.file.clone(),
        text,
        place: place.clone(),
    })
}

/// The 0-based `line` of `text`: where it starts, and its text without the line break.
fn line_at<'t>(text: &'t str, lines: &LineIndex, line: u32) -> (usize, &'t str) {
    let from = lines.line_start(line, text).to_usize();
    let to = lines.line_start(line + 1, text).to_usize().max(from);
    (from, text[from..to].trim_end_matches(['\n', '\r']))
}

fn is_identifier(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Python's keywords and the builtins an expression over a module uses without the module
/// binding them: not imported from it.
const NOT_FROM_THE_MODULE: [&str; 58] = [
    "False",
    "None",
    "True",
    "and",
    "await",
    "else",
    "for",
    "if",
    "in",
    "is",
    "lambda",
    "not",
    "or",
    "abs",
    "all",
    "any",
    "bool",
    "bytes",
    "callable",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "frozenset",
    "getattr",
    "hasattr",
    "hash",
    "id",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "object",
    "pow",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
    "complex",
];

/// The names an expression reads from its globals, in order: identifiers outside strings that
/// are not an attribute (`.eval`), a keyword argument's name (`hidden=8`), a keyword or a
/// builtin. A name a comprehension or `lambda` binds is taken too; importing it finds nothing,
/// which leaves it unknown to the analysis, as an unresolved name is.
fn free_names(expression: &str) -> Vec<&str> {
    let bytes = expression.as_bytes();
    let mut names: Vec<&str> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte == b'"' || byte == b'\'' {
            // Past the string literal (a backslash escapes the next character).
            at += 1;
            while at < bytes.len() && bytes[at] != byte {
                at += if bytes[at] == b'\\' { 2 } else { 1 };
            }
            at += 1;
            continue;
        }
        if byte.is_ascii_digit() {
            while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                at += 1;
            }
            continue;
        }
        if !(byte.is_ascii_alphabetic() || byte == b'_') {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
            at += 1;
        }
        let name = &expression[start..at];
        let before = expression[..start].trim_end();
        let after = expression[at..].trim_start();
        let attribute = before.ends_with('.');
        let keyword_argument = after.starts_with('=') && !after.starts_with("==");
        if !attribute
            && !keyword_argument
            && !NOT_FROM_THE_MODULE.contains(&name)
            && !names.contains(&name)
        {
            names.push(name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TablePlace;

    #[test]
    fn the_names_an_expression_reads_from_its_module() {
        assert_eq!(
            free_names(" build_model(ModelConfig(hidden=8, name='x.y'), 2).eval()"),
            ["build_model", "ModelConfig"]
        );
        assert_eq!(
            free_names("(torch.randn(4, 8), tuple(SIZES), len(x) == 2)"),
            ["torch", "SIZES", "x"]
        );
    }

    #[test]
    fn a_table_is_a_module_whose_lines_and_columns_are_the_table_s() {
        let entry = Entrypoint {
            model: Some("tablepkg:build_model(ModelConfig(hidden=8)).eval()".to_owned()),
            example_args: Some("tablepkg:(torch.randn(4, 8),)".to_owned()),
            dynamic_shapes: Some("tablepkg.spec:DYNAMIC_SHAPES".to_owned()),
            place: Some(TablePlace {
                file: PathBuf::from("/p/pyproject.toml"),
                header: 3,
                keys: [("model", 5), ("example-args", 6), ("dynamic-shapes", 7)]
                    .into_iter()
                    .map(|(key, line)| (key.to_owned(), line))
                    .collect(),
                expressions: [("model", 18), ("dynamic-shapes", 31)]
                    .into_iter()
                    .map(|(key, column)| (key.to_owned(), column))
                    .collect(),
            }),
            ..Entrypoint::default()
        };
        let programs = table_programs(&[Entrypoint::default(), entry]);
        assert_eq!(programs.len(), 1);
        assert_eq!(programs[0].module, "__pt2lsp_entrypoint_table_2__");
        assert_eq!(programs[0].path, PathBuf::from("/p/pyproject.toml"));
        assert_eq!(
            programs[0].text,
            "\n\nfrom tablepkg import build_model, ModelConfig, torch; \
             from tablepkg.spec import DYNAMIC_SHAPES\n\n\
             model =           build_model(ModelConfig(hidden=8)).eval()\n\
             example_args = (torch.randn(4, 8),)\n\
             dynamic_shapes =               DYNAMIC_SHAPES\n"
        );
        // A string that is not `module:expression` is the tracer's to report: no program.
        let bad = Entrypoint {
            model: Some("tablepkg".to_owned()),
            place: Some(TablePlace::default()),
            ..Entrypoint::default()
        };
        assert_eq!(table_programs(&[bad]), []);
    }

    /// The program of the first table written in `configuration`.
    fn program_of(configuration: &str) -> TableProgram {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pyproject.toml");
        std::fs::write(&file, configuration).unwrap();
        let config = crate::config::load(&file).unwrap();
        table_programs(&config.entrypoints.unwrap()).remove(0)
    }

    /// `Dim('batch', min=2, max=64)` becomes `min=5`, as torch suggests, edited on the program
    /// and carried to the configuration's text.
    fn fixed(configuration: &str) -> Option<String> {
        let program = program_of(configuration);
        let constraints = [pt2lsp_analyzer::DimConstraint::Range {
            name: "batch".to_owned(),
            min: Some(5),
            max: Some(64),
        }];
        let fix = pt2lsp_analyzer::dim_constraint_fix(
            &program.text,
            &constraints,
            pt2lsp_analyzer::Applicability::Safe,
        )
        .expect("the program's spec is edited");
        let fix = program.fix_in_configuration(configuration, &fix)?;
        Some(pt2lsp_analyzer::apply_fixes(configuration, &[&fix]))
    }

    #[test]
    fn a_fix_of_a_dim_in_a_table_string_edits_the_string() {
        let table = "[tool.pt2lsp]\n[[tool.pt2lsp.entrypoints]]\nmodel = \"pkg:build()\"\n\
                     example-args = \"pkg:(torch.randn(8, 8),)\"\n";
        // A basic string: the new text's quotes are escaped.
        let basic = format!(
            "{table}dynamic-shapes = \"pkg.spec:{{'x': {{0: Dim('batch', min=2, max=64)}}}}\"\n"
        );
        let after = fixed(&basic).expect("an exact place");
        assert!(after.contains("min=5"), "{after}");
        assert!(toml::from_str::<toml::Table>(&after).is_ok(), "{after}");
        // A literal string has no escapes: columns are the program's.
        let literal = format!(
            "{table}dynamic-shapes = 'pkg.spec:{{\"x\": {{0: Dim(\"batch\", min=2, max=64)}}}}'\n"
        );
        let after = fixed(&literal).expect("an exact place");
        assert!(after.contains("min=5"), "{after}");
        assert!(toml::from_str::<toml::Table>(&after).is_ok(), "{after}");
        // An escape before the `Dim` shifts the columns: no edit rather than a wrong one.
        let escaped = format!(
            "{table}dynamic-shapes = \"pkg.spec:{{\\\"x\\\": {{0: Dim('batch', min=2, max=64)}}}}\"\n"
        );
        assert_eq!(fixed(&escaped), None);
    }
}
