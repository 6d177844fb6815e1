//! `pt2lsp rule`: prints a rule's documentation, like `ruff rule`.

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
    doc: &'static str,
}

impl RuleInfo {
    fn new(rule: Rule) -> Self {
        Self {
            code: rule.code(),
            name: rule.name(),
            summary: rule.summary(),
            default_severity: rule.default_severity().as_str(),
            is_static: rule.is_static(),
            doc_path: rule.doc_path(),
            doc: rule.doc(),
        }
    }
}

pub fn run(args: &RuleArgs) -> Result<ExitStatus> {
    let rules: Vec<Rule> = match (&args.rule, args.all) {
        (_, true) => Rule::ALL.to_vec(),
        (Some(query), false) => match Rule::from_code_or_name(query.trim()) {
            Some(rule) => vec![rule],
            None => bail!(
                "unknown rule `{query}`; rules are named by code (PT101) or name \
                 (data-dependent-branch), and `pt2lsp rule --all` lists them"
            ),
        },
        // clap requires one of the two.
        (None, false) => bail!("name a rule or pass --all"),
    };
    output::with_stdout(|out| match args.format {
        RuleFormat::Text => {
            for (index, rule) in rules.iter().enumerate() {
                if index > 0 {
                    writeln!(out)?;
                }
                write_markdown(*rule, out)?;
            }
            Ok(())
        }
        RuleFormat::Json => {
            let infos: Vec<RuleInfo> = rules.into_iter().map(RuleInfo::new).collect();
            if args.all {
                serde_json::to_writer_pretty(&mut *out, &infos)?;
            } else {
                serde_json::to_writer_pretty(&mut *out, &infos[0])?;
            }
            writeln!(out)
        }
    })?;
    Ok(ExitStatus::Success)
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
