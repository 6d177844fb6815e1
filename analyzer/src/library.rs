//! Installed libraries (a configured interpreter's site-packages) as the analysis sees them:
//! their modules' summaries resolved once, so an entrypoint's analysis can follow calls from
//! the workspace into them.
//!
//! Library files are read, never reported on: what an analysis finds in one lands on the
//! workspace line whose call reaches it, with the library's line as related information
//! (see `crate::check_file`). The caller finds the distributions and caches their summaries
//! by name and version; this index only resolves them.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::SourceFile;
use crate::names;
use crate::summary::{InstalledClasses, ModuleSummary, Resolver, import_targets};
use crate::syntax::ast::{self, visitor, visitor::Visitor};

/// How many library files one entrypoint's analysis may load, besides the workspace's.
pub(crate) const MAX_LIBRARY_FILES: usize = 64;

/// An installed distribution, as its `.dist-info` names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Distribution {
    pub name: String,
    pub version: String,
}

/// The cross-file facts of installed libraries' modules.
#[derive(Debug, Default)]
pub struct LibraryIndex {
    distributions: Vec<Distribution>,
    /// Every library module, with its distribution's index in `distributions`.
    modules: FxHashMap<String, usize>,
    /// For each library module, the library modules it imports.
    imports: FxHashMap<String, Vec<String>>,
    /// Qualified names (re-exports included) of library classes that derive from `nn.Module`.
    module_classes: FxHashSet<String>,
    fake_kernels: FxHashSet<String>,
    /// What each library module binds at module level.
    symbols: FxHashMap<String, Symbols>,
}

/// A library module's module-level names, for following re-exports to definitions.
#[derive(Debug, Default)]
struct Symbols {
    /// Names bound by imports (and `A = b.c` aliases), with what they refer to.
    aliases: FxHashMap<String, String>,
    /// Classes and functions it defines.
    defined: FxHashSet<String>,
    /// The modules it star-imports, last first: the last binding wins.
    stars: Vec<String>,
}

impl LibraryIndex {
    /// Resolves the distributions' summaries together: libraries import each other
    /// (timm imports torchvision), never the workspace.
    pub fn new(libraries: &[(Distribution, Vec<ModuleSummary>)]) -> Self {
        let mut modules = FxHashMap::default();
        let mut distributions = Vec::with_capacity(libraries.len());
        for (index, (distribution, summaries)) in libraries.iter().enumerate() {
            distributions.push(distribution.clone());
            for summary in summaries {
                modules.entry(summary.module.clone()).or_insert(index);
            }
        }
        let summaries: Vec<&ModuleSummary> = libraries
            .iter()
            .flat_map(|(_, summaries)| summaries)
            .collect();
        // Installed files are named by their packages: no namespace names.
        let namespace = FxHashMap::default();
        let resolver = Resolver::new(&summaries, None, &namespace);
        let module_classes = resolver.module_classes();
        let fake_kernels = resolver.fake_kernels(&summaries);
        let imports = summaries
            .iter()
            .map(|summary| {
                let targets = import_targets(summary, |name| {
                    modules.contains_key(name).then(|| name.to_owned())
                });
                (summary.module.clone(), targets)
            })
            .collect();
        let symbols = summaries
            .iter()
            .map(|summary| {
                let symbols = Symbols {
                    aliases: summary.imports.iter().cloned().collect(),
                    defined: summary
                        .classes
                        .iter()
                        .map(|(class, _)| class)
                        .chain(&summary.functions)
                        .cloned()
                        .collect(),
                    stars: summary.star_imports.iter().rev().cloned().collect(),
                };
                (summary.module.clone(), symbols)
            })
            .collect();
        Self {
            distributions,
            modules,
            imports,
            module_classes,
            fake_kernels,
            symbols,
        }
    }

    /// Where the library name `qualified` is defined, spelled there: re-exports, aliases and
    /// star imports followed, as Python binds them. `transformers.BertModel` is
    /// `transformers.models.bert.modeling_bert.BertModel`, through the star imports that the
    /// lazy packages make under `TYPE_CHECKING`. A name that leaves the libraries
    /// (`timm.layers._assert` is `torch._assert`) is given as it is spelled outside; `None`
    /// when a library module does not bind it.
    pub fn definition(&self, qualified: &str) -> Option<String> {
        let mut name = qualified.to_owned();
        for _ in 0..16 {
            if self.contains(&name) {
                return Some(name);
            }
            let Some((module, rest)) = self.split_module(&name) else {
                return Some(name);
            };
            let (head, tail) = rest
                .split_once('.')
                .map_or((rest, None), |(h, t)| (h, Some(t)));
            let symbols = self.symbols.get(module)?;
            let target = if let Some(alias) = symbols.aliases.get(head) {
                alias.clone()
            } else if symbols.defined.contains(head) {
                return Some(name);
            } else {
                let star = symbols
                    .stars
                    .iter()
                    .find(|star| self.binds(star, head, 0))?;
                format!("{star}.{head}")
            };
            let next = match tail {
                Some(tail) => format!("{target}.{tail}"),
                None => target,
            };
            if next == name {
                return Some(name);
            }
            name = next;
        }
        None
    }

    /// The library module a qualified name lies in (the longest such prefix), with the rest.
    fn split_module<'n>(&self, name: &'n str) -> Option<(&'n str, &'n str)> {
        names::split_at_module(name, |module| self.contains(module))
    }

    /// Whether `module` binds public `name`, itself or through its star imports.
    fn binds(&self, module: &str, name: &str, depth: usize) -> bool {
        let Some(symbols) = self.symbols.get(module) else {
            return false;
        };
        !name.starts_with('_')
            && (symbols.aliases.contains_key(name)
                || symbols.defined.contains(name)
                || self.contains(&format!("{module}.{name}"))
                || (depth < 6
                    && symbols
                        .stars
                        .iter()
                        .any(|star| self.binds(star, name, depth + 1))))
    }

    /// The distributions the index was built from, in the order given.
    pub fn distributions(&self) -> &[Distribution] {
        &self.distributions
    }

    /// How many library modules the index holds.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// Whether `module` (dotted) is a module of one of the libraries.
    pub fn contains(&self, module: &str) -> bool {
        self.modules.contains_key(module)
    }

    /// The distribution that installed `module`.
    pub fn distribution_of(&self, module: &str) -> Option<&Distribution> {
        self.distributions.get(*self.modules.get(module)?)
    }

    pub(crate) fn imports_of(&self, module: &str) -> &[String] {
        self.imports.get(module).map_or(&[], Vec::as_slice)
    }

    /// The library modules an analysis of the workspace files `bodies` may enter: the
    /// modules that define the library names they use (imported by name, or spelled through
    /// an imported library module: `transformers.BertModel`), then what those import, nearest
    /// first, at most [`MAX_LIBRARY_FILES`]. Not the packages' `__init__` files the names are
    /// spelled through: names are resolved to their definitions ([`Self::definition`]).
    pub(crate) fn modules_used_by<'b>(
        &self,
        bodies: impl IntoIterator<Item = (&'b [ast::Stmt], SourceFile<'b>)>,
        is_workspace: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let mut names = Vec::new();
        for (body, file) in bodies {
            self.names_used(body, file, &mut names);
        }
        let mut queue: VecDeque<String> = VecDeque::new();
        for name in names {
            let Some(defined) = self.definition(&name) else {
                continue;
            };
            let module = if self.contains(&defined) {
                Some(defined.as_str())
            } else {
                self.split_module(&defined).map(|(module, _)| module)
            };
            if let Some(module) = module.filter(|module| !is_workspace(module)) {
                queue.push_back(module.to_owned());
            }
        }
        let mut seen: FxHashSet<String> = FxHashSet::default();
        let mut order = Vec::new();
        while let Some(module) = queue.pop_front() {
            if order.len() == MAX_LIBRARY_FILES {
                break;
            }
            if is_workspace(&module) || !seen.insert(module.clone()) {
                continue;
            }
            queue.extend(self.imports_of(&module).iter().cloned());
            order.push(module);
        }
        order
    }

    /// The library names a file uses: its imports' targets, and the attribute chains spelled
    /// through a library module it imports.
    fn names_used(&self, body: &[ast::Stmt], file: SourceFile<'_>, out: &mut Vec<String>) {
        let mut modules: FxHashMap<String, String> = FxHashMap::default();
        for stmt in names::module_level_statements(body) {
            for (local, qualified) in names::import_bindings(stmt, file) {
                let top = qualified.split('.').next().unwrap_or_default();
                if self.contains(top) {
                    if self.contains(&qualified) {
                        modules.insert(local, qualified.clone());
                    }
                    out.push(qualified);
                }
            }
        }
        if modules.is_empty() {
            return;
        }
        let mut spelled = Spelled {
            modules: &modules,
            out,
        };
        for stmt in body {
            spelled.visit_stmt(stmt);
        }
    }

    pub(crate) fn is_module_class(&self, qualified_name: &str) -> bool {
        self.module_classes.contains(qualified_name)
    }

    pub(crate) fn has_fake_kernel(&self, op: &str) -> bool {
        self.fake_kernels.contains(op)
    }
}

/// Collects `module.attr.attr` chains whose head names an imported library module.
struct Spelled<'m> {
    modules: &'m FxHashMap<String, String>,
    out: &'m mut Vec<String>,
}

impl<'a> Visitor<'a> for Spelled<'_> {
    fn visit_expr(&mut self, expr: &'a ast::Expr) {
        if let ast::Expr::Attribute(_) = expr {
            if let Some(dotted) = names::dotted(expr) {
                let (head, rest) = dotted.split_once('.').unwrap_or((&dotted, ""));
                if let Some(module) = self.modules.get(head) {
                    self.out.push(format!("{module}.{rest}"));
                    return;
                }
            }
        }
        visitor::walk_expr(self, expr);
    }
}

/// The resolver's questions, answered from the libraries' own classes.
impl InstalledClasses for LibraryIndex {
    fn contains(&self, module: &str) -> bool {
        LibraryIndex::contains(self, module)
    }

    fn is_module_class(&self, qualified: &str) -> bool {
        LibraryIndex::is_module_class(self, qualified)
    }
}
