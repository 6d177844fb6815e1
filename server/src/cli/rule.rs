//! `pt2lsp rule`: lists the rules, or prints their documentation, like `ruff rule`.

use std::io::Write;

use anyhow::{Result, bail};
use pt2lsp_analyzer::Rule;
use serde::Serialize;

use crate::cli::ExitStatus;
use crate::cli::args::{RuleArgs, RuleFormat};
use crate::cli::output;

#[derive(Serialize)]
struct RuleInfo {
    code: &'static str,
    name: &'static str,
    summary: &'static str,
    default_severity: &'static str,
    /// False for rules only the tracer reports.
    is_static: bool,
    doc_path: String,
    /// The whole page; left out of the list, which is for choosing a rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    doc: Option<&'static str>,
}

impl RuleInfo {
    fn new(rule: Rule, with_doc: bool) -> Self {
        Self {
            code: rule.code(),
            name: rule.name(),
            summary: rule.summary(),
            default_severity: rule.default_severity().as_str(),
            is_static: rule.is_static(),
            doc_path: rule.doc_path(),
            doc: with_doc.then(|| rule.doc()),
        }
    }
}

/// What the arguments ask for.
enum Request {
    /// One line per rule.
    List,
    /// Every page.
    All,
    /// One rule's page.
    One(Rule),
}

pub fn run(args: &RuleArgs) -> Result<ExitStatus> {
    let request = match (&args.rule, args.all) {
        (_, true) => Request::All,
        (Some(query), false) => Request::One(find(query.trim())?),
        (None, false) => Request::List,
    };
    output::with_stdout(|out| match (request, args.format) {
        (Request::List, RuleFormat::Text) => write_list(out),
        (Request::All, RuleFormat::Text) => {
            for (index, rule) in Rule::ALL.iter().enumerate() {
                if index > 0 {
                    writeln!(out)?;
                }
                write_markdown(*rule, out)?;
            }
            Ok(())
        }
        (Request::One(rule), RuleFormat::Text) => write_markdown(rule, out),
        (Request::One(rule), RuleFormat::Json) => {
            serde_json::to_writer_pretty(&mut *out, &RuleInfo::new(rule, true))?;
            writeln!(out)
        }
        (request, RuleFormat::Json) => {
            let with_doc = matches!(request, Request::All);
            let infos: Vec<RuleInfo> = Rule::ALL
                .iter()
                .map(|rule| RuleInfo::new(*rule, with_doc))
                .collect();
            serde_json::to_writer_pretty(&mut *out, &infos)?;
            writeln!(out)
        }
    })?;
    Ok(ExitStatus::Success)
}

/// The rule a code (any case) or a name stands for; an error that lists the rules otherwise,
/// narrowed to those the query starts when it is a prefix (`PT1`).
fn find(query: &str) -> Result<Rule> {
    if let Some(rule) = Rule::from_code_or_name(query) {
        return Ok(rule);
    }
    let starting: Vec<Rule> = Rule::ALL
        .iter()
        .copied()
        .filter(|rule| {
            rule.code()
                .get(..query.len())
                .is_some_and(|start| !query.is_empty() && start.eq_ignore_ascii_case(query))
        })
        .collect();
    let (heading, rules) = if starting.is_empty() {
        ("the rules are".to_owned(), Rule::ALL.to_vec())
    } else {
        (
            format!("the rules whose code starts with {query} are"),
            starting,
        )
    };
    let listed: Vec<String> = rules
        .iter()
        .map(|rule| format!("  {} {}", rule.code(), rule.name()))
        .collect();
    bail!(
        "unknown rule `{query}`; {heading}:\n{}\nName one by code (PT101) or name \
         (data-dependent-branch); `pt2lsp rule` lists them with a summary.",
        listed.join("\n")
    )
}

/// One line per rule: code, name, severity and summary in aligned columns.
fn write_list(out: &mut dyn Write) -> std::io::Result<()> {
    let width = |column: fn(Rule) -> &'static str| {
        Rule::ALL
            .iter()
            .map(|rule| column(*rule).len())
            .max()
            .unwrap_or_default()
    };
    let name_width = width(Rule::name);
    let severity_width = width(|rule| rule.default_severity().as_str());
    for rule in Rule::ALL {
        let summary = rule.summary().trim_end_matches('.');
        let tracer = if rule.is_static() { "" } else { " (tracer)" };
        writeln!(
            out,
            "{}  {:name_width$}  {:severity_width$}  {summary}{tracer}",
            rule.code(),
            rule.name(),
            rule.default_severity().as_str(),
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "`pt2lsp rule PT101` prints a rule's page; `pt2lsp rule --all` prints every page."
    )
}

fn write_markdown(rule: Rule, out: &mut dyn Write) -> std::io::Result<()> {
    let found_by = if rule.is_static() {
        "static analysis (`pt2lsp check`)"
    } else {
        "the tracer only (it runs the real exporter)"
    };
    writeln!(out, "# {} ({})", rule.name(), rule.code())?;
    writeln!(out)?;
    writeln!(out, "{}.", rule.summary().trim_end_matches('.'))?;
    writeln!(out)?;
    writeln!(
        out,
        "Default severity: {}. Found by {found_by}.",
        rule.default_severity().as_str()
    )?;
    writeln!(out)?;
    writeln!(out, "{}", rule.doc().trim_end())
}
