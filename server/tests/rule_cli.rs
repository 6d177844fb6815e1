//! `pt2lsp rule` as users reach for it, through the real binary: the list without an argument,
//! every page with `--all`, one page by code or name, and an unknown code answered with the
//! codes that exist.

use std::process::Command;

use pt2lsp_analyzer::Rule;
use serde_json::Value;

#[path = "support/run.rs"]
mod support;

use support::{Run, run};

fn pt2lsp(args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_pt2lsp"))
        .args(args)
        .env_remove("NO_COLOR"))
}

#[test]
fn without_an_argument_the_rules_are_listed_one_line_each() {
    let list = pt2lsp(&["rule"]);
    assert_eq!(list.code, 0, "{list:?}");
    assert_eq!(list.stderr, "");
    let lines: Vec<&str> = list.stdout.lines().collect();
    for (line, rule) in lines.iter().zip(Rule::ALL) {
        let columns: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            columns[..3],
            [rule.code(), rule.name(), rule.default_severity().as_str()],
            "{line}"
        );
        assert!(
            line.contains(rule.summary().trim_end_matches('.')),
            "{line}"
        );
        assert_eq!(line.ends_with("(tracer)"), !rule.is_static(), "{line}");
    }
    // Then a blank line and how to read a page.
    assert_eq!(lines[Rule::ALL.len()], "");
    assert!(lines[Rule::ALL.len() + 1].contains("pt2lsp rule PT101"));
    // The columns line up: every summary starts at the same place.
    let starts: Vec<Option<usize>> = lines
        .iter()
        .zip(Rule::ALL)
        .map(|(line, rule)| line.find(rule.summary().trim_end_matches('.')))
        .collect();
    assert!(starts.iter().all(|start| *start == starts[0]), "{starts:?}");

    let json: Value = serde_json::from_str(&pt2lsp(&["rule", "--format", "json"]).stdout).unwrap();
    let rules = json.as_array().unwrap();
    assert_eq!(rules.len(), Rule::ALL.len());
    let branch = rules
        .iter()
        .find(|rule| rule["code"] == "PT101")
        .expect("PT101 is listed");
    assert_eq!(branch["default_severity"], "error");
    assert!(branch.get("doc").is_none(), "{branch}");
}

#[test]
fn all_prints_every_page_and_one_rule_prints_its_own() {
    let all = pt2lsp(&["rule", "--all"]);
    assert_eq!(all.code, 0, "{all:?}");
    for rule in Rule::ALL {
        let heading = format!("# {} ({})\n", rule.name(), rule.code());
        assert_eq!(all.stdout.matches(&heading).count(), 1, "{heading}");
        let page = pt2lsp(&["rule", rule.code()]);
        assert!(page.stdout.starts_with(&heading), "{page:?}");
        assert!(all.stdout.contains(&page.stdout), "{}", rule.code());
    }
    let by_name = pt2lsp(&["rule", "data-dependent-branch"]);
    assert_eq!(by_name.stdout, pt2lsp(&["rule", "pt101"]).stdout);

    let json: Value =
        serde_json::from_str(&pt2lsp(&["rule", "--all", "--format", "json"]).stdout).unwrap();
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .all(|rule| rule["doc"].is_string())
    );
}

#[test]
fn an_unknown_rule_says_which_exist() {
    let unknown = pt2lsp(&["rule", "PT999"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert_eq!(unknown.stdout, "");
    assert!(
        unknown.stderr.contains("unknown rule `PT999`"),
        "{unknown:?}"
    );
    for rule in Rule::ALL {
        let line = format!("  {} {}\n", rule.code(), rule.name());
        assert!(unknown.stderr.contains(&line), "{line}{unknown:?}");
    }
    // A prefix narrows the list to the rules it starts.
    let prefix = pt2lsp(&["rule", "PT1"]);
    assert_eq!(prefix.code, 2, "{prefix:?}");
    assert!(prefix.stderr.contains("  PT101 data-dependent-branch\n"));
    assert!(!prefix.stderr.contains("PT201"), "{prefix:?}");
}

#[test]
fn help_teaches_with_examples() {
    let help = pt2lsp(&["rule", "--help"]);
    assert_eq!(help.code, 0, "{help:?}");
    for example in [
        "pt2lsp rule PT101",
        "pt2lsp rule --all",
        "pt2lsp rule data-dependent-branch",
        "# pt2lsp: ignore[PT101]",
    ] {
        assert!(help.stdout.contains(example), "{example}\n{}", help.stdout);
    }
    let top = pt2lsp(&["--help"]);
    assert!(top.stdout.contains("pt2lsp rule "), "{}", top.stdout);
}
