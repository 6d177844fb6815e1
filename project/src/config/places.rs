//! Where each `[[tool.pt2lsp.entrypoints]]` table and its keys are written, so that a string
//! the tracer cannot resolve is reported on its own line in `pyproject.toml` (PT503).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

/// The place of one entrypoint table: its file, and the 1-based lines of its header and of
/// each key, by the key's spelling now (`example-args`, whichever spelling the file uses).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TablePlace {
    pub file: PathBuf,
    pub header: u32,
    pub keys: BTreeMap<String, u32>,
    /// For each `module:EXPRESSION` string written on one line, without escapes before its
    /// expression: the 0-based byte column where the expression starts on its line.
    pub expressions: BTreeMap<String, u32>,
}

impl TablePlace {
    /// The line of `key` (`model`, `example-args`), else the table's header.
    pub fn line_of(&self, key: &str) -> u32 {
        self.keys.get(key).copied().unwrap_or(self.header)
    }
}

type SpannedTable = Spanned<BTreeMap<Spanned<String>, Spanned<toml::Value>>>;

#[derive(Deserialize, Default)]
struct Document {
    #[serde(default)]
    tool: Option<Tool>,
    /// A `pt2lsp.toml`'s tables are at the top level.
    #[serde(default)]
    entrypoints: Option<Vec<SpannedTable>>,
}

#[derive(Deserialize, Default)]
struct Tool {
    #[serde(default)]
    pt2lsp: Option<Pt2lsp>,
}

#[derive(Deserialize, Default)]
struct Pt2lsp {
    #[serde(default)]
    entrypoints: Option<Vec<SpannedTable>>,
}

/// The places of the entrypoint tables of `file` (whose text is `text`), in order; empty when
/// the text does not read as such tables (the reader of the values says what is wrong).
pub fn entrypoint_places(text: &str, file: &Path) -> Vec<TablePlace> {
    let Ok(document) = toml::from_str::<Document>(text) else {
        return Vec::new();
    };
    let in_pyproject = file
        .file_name()
        .is_some_and(|name| name == "pyproject.toml");
    let tables = if in_pyproject {
        document.tool.and_then(|tool| tool.pt2lsp?.entrypoints)
    } else {
        document.entrypoints
    };
    let line = |offset: usize| {
        let before = text.get(..offset).unwrap_or(text);
        before.bytes().filter(|byte| *byte == b'\n').count() as u32 + 1
    };
    tables
        .unwrap_or_default()
        .into_iter()
        .map(|table| {
            let keys = table
                .get_ref()
                .keys()
                .map(|key| (key.get_ref().replace('_', "-"), line(key.span().start)))
                .collect::<BTreeMap<_, _>>();
            let expressions = table
                .get_ref()
                .iter()
                .filter_map(|(key, value)| {
                    let column = expression_column(text, value)?;
                    Some((key.get_ref().replace('_', "-"), column))
                })
                .collect();
            // The header is the nearest `[[...]]` above the table's first key (comments may
            // stand between them).
            let first = keys.values().min().copied();
            let header = header_above(text, first.unwrap_or_else(|| line(table.span().start)));
            TablePlace {
                file: file.to_path_buf(),
                header,
                keys,
                expressions,
            }
        })
        .collect()
}

/// Where the expression of a `module:EXPRESSION` string starts on its line (0-based byte
/// column): the string as written must hold `module:` and what follows verbatim up to it.
fn expression_column(text: &str, value: &Spanned<toml::Value>) -> Option<u32> {
    let toml::Value::String(string) = value.get_ref() else {
        return None;
    };
    let (module, expression) = string.split_once(':')?;
    let written = text.get(value.span())?;
    let opened = written.strip_prefix(['"', '\''])?;
    let leading = expression.len() - expression.trim_start().len();
    let prefix = &string[..module.len() + 1 + leading];
    if !opened.starts_with(prefix) || prefix.contains('\n') {
        return None;
    }
    let start = value.span().start + 1 + prefix.len();
    let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
    u32::try_from(start - line_start).ok()
}

/// The nearest line at or above the 1-based `line` that is a table header (`[[...]]`), else
/// `line`: comments and blank lines may stand between a header and its first key.
fn header_above(text: &str, line: u32) -> u32 {
    let lines: Vec<&str> = text.lines().collect();
    (1..=line)
        .rev()
        .find(|at| {
            lines
                .get(*at as usize - 1)
                .is_some_and(|code| code.trim_start().starts_with("[["))
        })
        .unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_table_and_key_has_its_line_whatever_the_spelling() {
        let text = "[project]\nname = \"x\"\n\n[tool.pt2lsp]\nstrict = false\n\n\
                    [[tool.pt2lsp.entrypoints]]\n# the small one\nname = \"small\"\n\
                    model = \"pkg:build_model(ModelConfig(hidden=8)).eval()\"\n\
                    example_args = \"pkg:(torch.randn(2, 8),)\"\n\n\
                    [[tool.pt2lsp.entrypoints]]\nmodel = \"pkg:oops(\"\n";
        let places = entrypoint_places(text, Path::new("/p/pyproject.toml"));
        assert_eq!(places.len(), 2, "{places:?}");
        assert_eq!(places[0].header, 7);
        assert_eq!(places[0].line_of("name"), 9);
        assert_eq!(places[0].line_of("model"), 10);
        assert_eq!(places[0].line_of("example-args"), 11);
        assert_eq!(places[0].line_of("dynamic-shapes"), 7);
        assert_eq!(places[0].expressions.get("model"), Some(&13));
        assert_eq!(places[0].expressions.get("example-args"), Some(&20));
        assert_eq!(places[0].expressions.get("name"), None);
        assert_eq!((places[1].header, places[1].line_of("model")), (13, 14));
        assert_eq!(places[1].file, Path::new("/p/pyproject.toml"));
        // A pt2lsp.toml's tables are at its top level.
        let own = entrypoint_places(
            "[[entrypoints]]\nmodel = \"m:x\"\n",
            Path::new("pt2lsp.toml"),
        );
        assert_eq!((own[0].header, own[0].line_of("model")), (1, 2));
    }
}
