//! `[tool.pt2lsp]` in `pyproject.toml`: finding it, reading it, and saying precisely what is wrong.
//!
//! The table is read by hand rather than through serde so that every error names the file and
//! the key (`pyproject.toml: tool.pt2lsp.strict must be true or false, not "yes"`), and so that
//! keys owned by features still to come (`python`, `trace`, `entrypoints`, ...) are accepted
//! without being interpreted here.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use toml::{Table, Value};

/// Keys this module reads.
const CHECK_KEYS: [&str; 4] = ["select", "ignore", "strict", "exclude"];

/// Documented keys read by the tracer and the exporter, accepted here without a warning.
const OTHER_KEYS: [&str; 5] = ["python", "trace", "timeout", "entrypoints", "out_dir"];

/// The settings `pt2lsp check` takes from a configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The file the settings came from; `None` when there was none.
    pub path: Option<PathBuf>,
    pub select: Option<Vec<String>>,
    pub ignore: Option<Vec<String>>,
    pub strict: Option<bool>,
    pub exclude: Vec<String>,
    /// Problems worth telling the user that do not stop the run (unknown keys).
    pub warnings: Vec<String>,
}

impl Config {
    /// The directory relative `exclude` patterns are anchored to.
    pub fn root(&self) -> Option<&Path> {
        self.path.as_deref().and_then(Path::parent)
    }
}

/// Finds the nearest `pyproject.toml` with a `[tool.pt2lsp]` table at or above `start`.
///
/// A `pyproject.toml` without the table is skipped, as ruff skips one without `[tool.ruff]`:
/// a monorepo's inner projects need not configure pt2lsp. One that is not valid TOML stops the
/// search with an error, because it cannot be told whether it meant to configure pt2lsp.
pub fn discover(start: &Path) -> Result<Config> {
    for directory in start.ancestors() {
        let candidate = directory.join("pyproject.toml");
        if !candidate.is_file() {
            continue;
        }
        let document = read_toml(&candidate)?;
        if let Some(table) = pt2lsp_table(&document, &candidate)? {
            return parse_table(table, &candidate);
        }
    }
    Ok(Config::default())
}

/// Reads the file given with `--config`: a `pyproject.toml` (its `[tool.pt2lsp]` table), or
/// any other TOML file whose top level is the table itself (a `pt2lsp.toml`).
pub fn load(path: &Path) -> Result<Config> {
    let document = read_toml(path)?;
    let is_pyproject = path
        .file_name()
        .is_some_and(|name| name == "pyproject.toml");
    if is_pyproject {
        match pt2lsp_table(&document, path)? {
            Some(table) => parse_table(table, path),
            None => Ok(Config {
                path: Some(path.to_path_buf()),
                warnings: vec![format!("{}: no [tool.pt2lsp] table", path.display())],
                ..Config::default()
            }),
        }
    } else {
        parse_table(&document, path)
    }
}

fn read_toml(path: &Path) -> Result<Table> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.parse::<Table>()
        .with_context(|| format!("{} is not valid TOML", path.display()))
}

fn pt2lsp_table<'a>(document: &'a Table, path: &Path) -> Result<Option<&'a Table>> {
    let Some(tool) = document.get("tool") else {
        return Ok(None);
    };
    let Some(value) = tool.as_table().and_then(|tool| tool.get("pt2lsp")) else {
        return Ok(None);
    };
    match value.as_table() {
        Some(table) => Ok(Some(table)),
        None => bail!(
            "{}: tool.pt2lsp must be a table, not {}",
            path.display(),
            describe(value)
        ),
    }
}

fn parse_table(table: &Table, path: &Path) -> Result<Config> {
    let mut config = Config {
        path: Some(path.to_path_buf()),
        ..Config::default()
    };
    // A `pt2lsp.toml` has no `tool.pt2lsp.` prefix; name keys the way the user wrote them.
    let prefix = if path
        .file_name()
        .is_some_and(|name| name == "pyproject.toml")
    {
        "tool.pt2lsp."
    } else {
        ""
    };
    for (key, value) in table {
        let name = || format!("{}: {prefix}{key}", path.display());
        match key.as_str() {
            "select" => config.select = Some(strings(value).with_context(name)?),
            "ignore" => config.ignore = Some(strings(value).with_context(name)?),
            "exclude" => config.exclude = strings(value).with_context(name)?,
            "strict" => match value {
                Value::Boolean(strict) => config.strict = Some(*strict),
                other => bail!("{}: must be true or false, not {}", name(), describe(other)),
            },
            known if OTHER_KEYS.contains(&known) => {}
            unknown => config.warnings.push(format!(
                "{}: unknown key `{prefix}{unknown}` (known keys: {})",
                path.display(),
                CHECK_KEYS
                    .iter()
                    .chain(&OTHER_KEYS)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    Ok(config)
}

/// An array of strings; a lone string is refused rather than guessed at, since
/// `select = "PT1"` is more often a forgotten bracket than a wish for one selector.
fn strings(value: &Value) -> Result<Vec<String>> {
    let Value::Array(items) = value else {
        bail!("must be an array of strings, not {}", describe(value));
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(text) => Ok(text.clone()),
            other => bail!(
                "must be an array of strings, but contains {}",
                describe(other)
            ),
        })
        .collect()
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(text) => format!("the string {text:?}"),
        Value::Integer(number) => format!("the integer {number}"),
        Value::Float(number) => format!("the number {number}"),
        Value::Boolean(flag) => format!("the boolean {flag}"),
        Value::Datetime(datetime) => format!("the date {datetime}"),
        Value::Array(_) => "an array".to_owned(),
        Value::Table(_) => "a table".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config> {
        let table: Table = text.parse().unwrap();
        parse_table(&table, Path::new("pyproject.toml"))
    }

    #[test]
    fn reads_the_check_keys_and_tolerates_the_others() {
        let config = parse(
            r#"
            select = ["PT1"]
            ignore = ["PT101"]
            strict = true
            exclude = ["build"]
            python = ".venv/bin/python"
            trace = "off"
            timeout = 60
            out_dir = "out"
            [[entrypoints]]
            name = "encoder"
            "#,
        )
        .unwrap();
        assert_eq!(config.select.as_deref(), Some(&["PT1".to_owned()][..]));
        assert_eq!(config.ignore.as_deref(), Some(&["PT101".to_owned()][..]));
        assert_eq!(config.strict, Some(true));
        assert_eq!(config.exclude, ["build"]);
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    }

    #[test]
    fn unknown_keys_warn_and_wrong_types_fail_naming_the_key() {
        let config = parse("selekt = []").unwrap();
        assert_eq!(config.warnings.len(), 1);
        assert!(
            config.warnings[0].contains("tool.pt2lsp.selekt"),
            "{:?}",
            config.warnings
        );

        let error = format!("{:#}", parse("strict = \"yes\"").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.strict") && error.contains("\"yes\""),
            "{error}"
        );
        let error = format!("{:#}", parse("select = \"PT1\"").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.select") && error.contains("array"),
            "{error}"
        );
        let error = format!("{:#}", parse("exclude = [1]").unwrap_err());
        assert!(
            error.contains("tool.pt2lsp.exclude") && error.contains("integer 1"),
            "{error}"
        );
    }
}
