//! `--format sarif`: SARIF 2.1.0, the format GitHub code scanning uploads.
//!
//! Every rule is listed in `tool.driver.rules` (with its documentation as the help GitHub shows
//! next to an alert), not only the rules that fired, so an alert that disappears keeps its
//! description. Columns are counted in characters (`columnKind: unicodeCodePoints`), the same
//! columns the text and JSON formats print. Paths under the current directory are relative to
//! `%SRCROOT%`, which GitHub resolves to the repository checkout.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use pt2lsp_analyzer::{Rule, Severity};
use serde_json::{Value, json};

use super::{FileReport, Source, path_string};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The repository Cargo.toml declares, whose `docs/rules/` a rule's `helpUri` links; without
/// one there is no link (the page itself is in `help`), rather than one that may not open.
fn repository() -> Option<&'static str> {
    Some(env!("CARGO_PKG_REPOSITORY")).filter(|declared| !declared.is_empty())
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The "What it does" section of a rule's page: a paragraph, as `fullDescription` wants.
fn what_it_does(doc: &str) -> &str {
    let Some((_, rest)) = doc.split_once("## What it does") else {
        return doc.trim();
    };
    rest.split("\n## ").next().unwrap_or(rest).trim()
}

fn rule_descriptor(rule: Rule) -> Value {
    let description = what_it_does(rule.doc());
    let mut descriptor = json!({
        "id": rule.code(),
        "name": rule.name(),
        "shortDescription": { "text": rule.summary() },
        "fullDescription": { "text": description, "markdown": description },
        "help": { "text": rule.doc(), "markdown": rule.doc() },
        "defaultConfiguration": { "level": level(rule.default_severity()) },
        "properties": { "tags": [if rule.is_static() { "static" } else { "tracer" }] },
    });
    if let Some(repository) = repository() {
        descriptor["helpUri"] = json!(format!("{repository}/blob/main/{}", rule.doc_path()));
    }
    descriptor
}

/// A region of the schema's positions (`pt2lsp_project::schema`): the JSON report's numbers.
fn region(cell: Option<u32>, (line, column, end_line, end_column): (u32, u32, u32, u32)) -> Value {
    let mut region = json!({
        "startLine": line,
        "startColumn": column,
        "endLine": end_line,
        "endColumn": end_column,
    });
    // SARIF has no cells: the region's lines are the cell's, and the cell is a property.
    if let Some(cell) = cell {
        region["properties"] = json!({ "cell": cell });
    }
    region
}

fn artifact_location(path: &Path) -> Value {
    if path.is_absolute() {
        json!({ "uri": file_uri(path) })
    } else {
        json!({ "uri": percent_encode(&path_string(path), false), "uriBaseId": "%SRCROOT%" })
    }
}

fn file_uri(path: &Path) -> String {
    let text = path_string(path);
    let slash = if text.starts_with('/') { "" } else { "/" };
    format!("file://{slash}{}", percent_encode(&text, true))
}

/// RFC 3986 percent-encoding of a path. A `:` is kept only in absolute paths (a Windows drive);
/// in a relative reference it would read as a URI scheme.
fn percent_encode(text: &str, keep_colon: bool) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/')
            || (keep_colon && byte == b':');
        if keep {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

pub(super) fn render(reports: &[FileReport], out: &mut dyn Write) -> io::Result<()> {
    let mut results = Vec::new();
    for report in reports {
        let location = artifact_location(&report.path);
        for diagnostic in report.located() {
            let rule_index = Rule::ALL
                .iter()
                .position(|rule| rule.code() == diagnostic.code);
            let span = (
                diagnostic.line,
                diagnostic.column,
                diagnostic.end_line,
                diagnostic.end_column,
            );
            let mut result = json!({
                "ruleId": diagnostic.code,
                "ruleIndex": rule_index,
                "level": level(diagnostic.severity),
                "message": { "text": diagnostic.message },
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": location,
                        "region": region(diagnostic.cell, span),
                    }
                }],
            });
            if !diagnostic.related.is_empty() {
                result["relatedLocations"] = diagnostic
                    .related
                    .iter()
                    .enumerate()
                    .map(|(id, related)| {
                        json!({
                            "id": id,
                            "physicalLocation": {
                                "artifactLocation": artifact_location(Path::new(&related.file)),
                                "region": {
                                    "startLine": related.line,
                                    "startColumn": related.column,
                                },
                            },
                            "message": { "text": related.message },
                        })
                    })
                    .collect();
            }
            if diagnostic.source != Source::Static.as_str() {
                result["properties"] = json!({ "source": diagnostic.source });
                if let Some(data) = &diagnostic.data {
                    result["properties"]["data"] = data.clone();
                }
            }
            if let Some(fix) = &diagnostic.fix {
                let replacements: Vec<Value> = fix
                    .edits
                    .iter()
                    .map(|edit| {
                        let span = (edit.line, edit.column, edit.end_line, edit.end_column);
                        json!({
                            "deletedRegion": region(edit.cell, span),
                            "insertedContent": { "text": edit.content },
                        })
                    })
                    .collect();
                result["fixes"] = json!([{
                    "description": { "text": fix.title },
                    "artifactChanges": [{ "artifactLocation": location, "replacements": replacements }],
                }]);
            }
            results.push(result);
        }
    }

    let mut run = json!({
        "tool": {
            "driver": {
                "name": "pt2lsp",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": Rule::ALL.iter().copied().map(rule_descriptor).collect::<Vec<_>>(),
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": results,
    });
    if let Some(repository) = repository() {
        run["tool"]["driver"]["informationUri"] = json!(repository);
    }
    // Relative paths are relative to the current directory (see `walk::display_path`); saying
    // which one lets a viewer other than GitHub find the files.
    if let Ok(cwd) = std::env::current_dir() {
        let mut base = file_uri(&cwd);
        if !base.ends_with('/') {
            base.push('/');
        }
        run["originalUriBaseIds"] = json!({ "%SRCROOT%": { "uri": base } });
    }

    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [run],
    });
    serde_json::to_writer_pretty(&mut *out, &log)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_percent_encoded() {
        assert_eq!(
            percent_encode("models/my model#1.py", false),
            "models/my%20model%231.py"
        );
        assert_eq!(percent_encode("a:b.py", false), "a%3Ab.py");
        assert_eq!(file_uri(Path::new("/tmp/é.py")), "file:///tmp/%C3%A9.py");
    }

    #[test]
    fn full_description_is_the_first_section() {
        let doc = "## What it does\nFinds x.\n\n## Why export fails\nBecause.\n";
        assert_eq!(what_it_does(doc), "Finds x.");
    }
}
