//! What is wrong with an entrypoint table's strings that can be judged without running
//! anything: a table with no `model`, a string that is not `module:EXPRESSION`, an expression
//! that does not parse, a module found neither in the project nor in the interpreter's
//! installed libraries. Each is PT503 on its key's line in the configuration file (the table's
//! header when the key is missing). `pt2lsp check` and the editor both ask this function, so
//! they report the same problems; what only running the strings shows (a missing name, an
//! exception) is the tracer's to find, on the same lines.

use std::path::{Path, PathBuf};

use pt2lsp_analyzer::{Diagnostic, LineIndex, Rule, Severity, TextRange, TextSize};

use crate::config::Entrypoint;
use crate::libraries;

/// Where the tracer's worker may import a table's module from: the project (its root and
/// `src/`, which the tracer puts on `sys.path`) and, when the interpreter's files are found,
/// its installed libraries and standard library.
#[derive(Debug, Clone)]
pub struct ModuleSearch {
    project: Vec<PathBuf>,
    /// `None` when the interpreter's libraries cannot be found: a module missing from the
    /// project is then unknown, not missing.
    installed: Option<Installed>,
}

#[derive(Debug, Clone, Default)]
struct Installed {
    /// site-packages, the standard library, and the directories `.pth` files add.
    dirs: Vec<PathBuf>,
    /// The texts of setuptools' editable finders (`__editable___*_finder.py`), which map a
    /// top-level name to a directory anywhere.
    editable_finders: Vec<String>,
}

impl ModuleSearch {
    /// The project under `root`, and the libraries of `python` (a path, or a name looked up on
    /// `PATH`), found from where it is installed without running it.
    pub fn new(root: &Path, python: &Path) -> Self {
        let installed = crate::interpreter::on_path(python)
            .and_then(|python| libraries::site_packages(&python).ok())
            .map(|sites| Installed::of(&sites));
        Self {
            project: vec![root.to_path_buf(), root.join("src")],
            installed,
        }
    }

    /// `Some(false)` when `module` is nowhere the worker could import it from; `None` when
    /// that cannot be known (the interpreter's libraries were not found).
    pub fn is_found(&self, module: &str) -> Option<bool> {
        if self
            .project
            .iter()
            .any(|base| module_file_under(base, module).is_some() || is_namespace(base, module))
        {
            return Some(true);
        }
        let installed = self.installed.as_ref()?;
        // An installed library's own submodules are the tracer's to judge: only the top-level
        // name is looked for.
        let top = module.split('.').next().unwrap_or(module);
        let found = installed.dirs.iter().any(|dir| top_level_in(dir, top))
            || installed.editable_finders.iter().any(|finder| {
                finder.contains(&format!("'{top}'")) || finder.contains(&format!("\"{top}\""))
            });
        Some(found)
    }
}

impl Installed {
    fn of(sites: &[PathBuf]) -> Self {
        let mut installed = Installed::default();
        for site in sites {
            installed.add_site(site);
            // `lib/python3.X/site-packages`: its parent is the standard library of a system
            // interpreter; a virtual environment's is that of the interpreter it was made from.
            if let Some(stdlib) = site.parent() {
                installed.dirs.push(stdlib.to_path_buf());
                installed.dirs.push(stdlib.join("lib-dynload"));
            }
            if let Some(home) = site
                .ancestors()
                .nth(3)
                .and_then(|env| std::fs::read_to_string(env.join("pyvenv.cfg")).ok())
                .and_then(|cfg| venv_home(&cfg))
            {
                for base in libraries::site_packages(&home.join("python3")).unwrap_or_default() {
                    if let Some(stdlib) = base.parent() {
                        installed.dirs.push(stdlib.to_path_buf());
                        installed.dirs.push(stdlib.join("lib-dynload"));
                    }
                }
            }
        }
        installed.dirs.dedup();
        installed
    }

    fn add_site(&mut self, site: &Path) {
        self.dirs.push(site.to_path_buf());
        let Ok(entries) = std::fs::read_dir(site) else {
            return;
        };
        for path in entries.flatten().map(|entry| entry.path()) {
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            let extension = path
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or_default();
            if extension.eq_ignore_ascii_case("pth") {
                // Each line that is not an `import` names a directory put on `sys.path`.
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for line in text.lines().map(str::trim) {
                    if line.is_empty() || line.starts_with('#') || line.starts_with("import") {
                        continue;
                    }
                    let dir = site.join(line);
                    if dir.is_dir() {
                        self.dirs.push(dir);
                    }
                }
            } else if name.starts_with("__editable__") && name.ends_with("_finder.py") {
                self.editable_finders
                    .push(std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
}

/// `home = /usr/bin` of a virtual environment's `pyvenv.cfg`.
fn venv_home(cfg: &str) -> Option<PathBuf> {
    cfg.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "home").then(|| PathBuf::from(value.trim()))
    })
}

/// The project's file for the dotted `module` (`pkg/sub.py` or `pkg/sub/__init__.py`, under
/// `root` or its `src/`), as the tracer's job imports it.
pub fn project_module_file(root: &Path, module: &str) -> Option<PathBuf> {
    [root.to_path_buf(), root.join("src")]
        .iter()
        .find_map(|base| module_file_under(base, module))
}

fn module_file_under(base: &Path, module: &str) -> Option<PathBuf> {
    if module.is_empty() || module.split('.').any(str::is_empty) {
        return None;
    }
    let relative: PathBuf = module.split('.').collect();
    let file = base.join(&relative).with_extension("py");
    if file.is_file() {
        return Some(file);
    }
    let package = base.join(&relative).join("__init__.py");
    package.is_file().then_some(package)
}

/// A directory without `__init__.py` is a namespace package Python imports too.
fn is_namespace(base: &Path, module: &str) -> bool {
    !module.split('.').any(str::is_empty) && base.join(module.replace('.', "/")).is_dir()
}

/// `name` is importable from `dir`: a module, a package (or namespace package), or a compiled
/// extension (`name.cpython-312-x86_64-linux-gnu.so`, `name.pyd`).
fn top_level_in(dir: &Path, name: &str) -> bool {
    if dir.join(format!("{name}.py")).is_file() || dir.join(name).is_dir() {
        return true;
    }
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let file = entry.file_name();
            let file = file.to_string_lossy();
            let extension = Path::new(&*file)
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or_default()
                .to_ascii_lowercase();
            file.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('.'))
                && (extension == "so" || extension == "pyd")
        })
    })
}

/// The keys whose strings are `module:EXPRESSION`, as the configuration spells them now.
const REFERENCE_KEYS: [&str; 4] = ["model", "example-args", "example-kwargs", "dynamic-shapes"];

/// The problems of the entrypoint tables `entries` that are written in `text` (the
/// configuration file each table's place names), as PT503 diagnostics on their lines in it.
pub fn table_problems(
    text: &str,
    entries: &[Entrypoint],
    modules: &ModuleSearch,
) -> Vec<Diagnostic> {
    let lines = LineIndex::new(text);
    let mut out = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let Some(place) = &entry.place else {
            continue;
        };
        let name = entry
            .name
            .clone()
            .unwrap_or_else(|| format!("#{}", index + 1));
        let mut problem = |line: u32, message: String| {
            out.push(Diagnostic {
                rule: Rule::EntrypointError,
                severity: Severity::Error,
                message,
                range: line_range(text, &lines, line.saturating_sub(1)),
                fix: None,
                related: Vec::new(),
            });
        };
        // A table with `script` gives a script's command line; it names no model.
        if entry.model.is_none() && entry.script.is_none() {
            problem(
                place.header,
                format!(
                    "entrypoint `{name}` has no `model` to trace (`model = \"module:build()\"`)"
                ),
            );
        }
        let values = [
            &entry.model,
            &entry.example_args,
            &entry.example_kwargs,
            &entry.dynamic_shapes,
        ];
        for (key, value) in REFERENCE_KEYS.into_iter().zip(values) {
            let Some(value) = value else { continue };
            let line = place.line_of(key);
            let (module, expression) = value
                .trim()
                .split_once(':')
                .map_or(("", ""), |(module, expression)| {
                    (module.trim(), expression.trim())
                });
            // As the worker reads it: dotted identifiers, a colon, something after it.
            if expression.is_empty() || !module.split('.').all(is_identifier) {
                problem(
                    line,
                    format!(
                        "entrypoint `{name}`: `{key} = \"{value}\"` is not a reference; write \
                         `module:expression`, e.g. `models.encoder:build_model()`"
                    ),
                );
                continue;
            }
            if let Some(error) = expression_error(expression) {
                problem(
                    line,
                    format!(
                        "entrypoint `{name}`: `{key} = \"{}\"`: `{expression}` is not a Python \
                         expression: {error}",
                        value.trim()
                    ),
                );
                continue;
            }
            if modules.is_found(module) == Some(false) {
                problem(
                    line,
                    format!(
                        "entrypoint `{name}`: `{key}` names the module `{module}`, which is found \
                         neither in the project nor in the interpreter's installed libraries"
                    ),
                );
            }
        }
    }
    out
}

fn is_identifier(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The parser's first error for `expression` read as Python evaluates it (`eval` mode: one
/// expression, which may span lines), or `None` when it parses.
fn expression_error(expression: &str) -> Option<String> {
    // Inside parentheses an expression may span lines, as in `eval`; a statement does not
    // parse there, as in `eval`.
    let wrapped = format!("__pt2lsp_expression__ = (\n{expression}\n)\n");
    let report = pt2lsp_analyzer::check_syntax(&wrapped);
    let first = report.diagnostics.first()?;
    Some(
        first
            .message
            .strip_prefix("Syntax error: ")
            .unwrap_or(&first.message)
            .to_owned(),
    )
}

/// The code of a 0-based line, from its first non-blank character to its end.
fn line_range(text: &str, lines: &LineIndex, line: u32) -> TextRange {
    let start = lines.line_start(line, text).to_usize();
    let end = lines.line_start(line + 1, text).to_usize().max(start);
    let content = &text[start..end];
    let trimmed = content.trim_end_matches(['\n', '\r']);
    let indent = trimmed.len() - trimmed.trim_start().len();
    TextRange::new(
        TextSize::new((start + indent) as u32),
        TextSize::new((start + trimmed.len()) as u32),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_and_messages(text: &str, dir: &Path) -> Vec<(u32, String)> {
        let pyproject = dir.join("pyproject.toml");
        std::fs::write(&pyproject, text).unwrap();
        let config = crate::config::load(&pyproject).unwrap();
        let modules = ModuleSearch {
            project: vec![dir.to_path_buf(), dir.join("src")],
            installed: Some(Installed {
                dirs: vec![dir.join("site-packages")],
                editable_finders: vec!["MAPPING = {'editpkg': '/elsewhere/editpkg'}".to_owned()],
            }),
        };
        let lines = LineIndex::new(text);
        table_problems(text, &config.entrypoints.unwrap(), &modules)
            .into_iter()
            .map(|d| {
                assert_eq!(d.rule, Rule::EntrypointError);
                (lines.line_column(d.range.start()).line + 1, d.message)
            })
            .collect()
    }

    #[test]
    fn each_problem_is_on_its_key_s_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("models")).unwrap();
        std::fs::write(dir.path().join("models/encoder.py"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("site-packages/timm")).unwrap();
        let text = "[tool.pt2lsp]\n\n\
                    [[tool.pt2lsp.entrypoints]]\nname = \"good\"\n\
                    model = \"models.encoder:build(Config(hidden=8)).eval()\"\n\
                    example-args = \"timm:(torch.randn(2, 3),)\"\n\
                    dynamic-shapes = \"editpkg.spec:SHAPES\"\n\n\
                    [[tool.pt2lsp.entrypoints]]\nname = \"bad\"\n\
                    model = \"models.encodr:build()\"\n\
                    example_args = \"models.encoder\"\n\
                    example-kwargs = \"models.encoder:dict(x=\"\n\
                    dynamic-shapes = \"models.encoder:x = 1\"\n\n\
                    [[tool.pt2lsp.entrypoints]]\nname = \"empty\"\n";
        let found = lines_and_messages(text, dir.path());
        let lines: Vec<u32> = found.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [11, 12, 13, 14, 16], "{found:#?}");
        assert!(found[0].1.contains("`models.encodr`"), "{}", found[0].1);
        assert!(found[1].1.contains("module:expression"), "{}", found[1].1);
        assert!(
            found[2].1.contains("`dict(x=` is not a Python expression"),
            "{}",
            found[2].1
        );
        assert!(
            found[3].1.contains("`x = 1` is not a Python expression"),
            "{}",
            found[3].1
        );
        assert!(found[4].1.contains("no `model`"), "{}", found[4].1);
    }

    #[test]
    fn without_the_interpreter_s_libraries_a_module_outside_the_project_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let modules = ModuleSearch::new(dir.path(), &dir.path().join("no/bin/python"));
        assert_eq!(modules.is_found("timm"), None);
        std::fs::create_dir_all(dir.path().join("src/pkg")).unwrap();
        std::fs::write(dir.path().join("src/pkg/__init__.py"), "").unwrap();
        assert_eq!(modules.is_found("pkg"), Some(true));
        assert_eq!(
            project_module_file(dir.path(), "pkg"),
            Some(dir.path().join("src/pkg/__init__.py"))
        );
    }
}
