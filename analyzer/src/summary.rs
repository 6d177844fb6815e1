//! A file's summary: what it contributes to the workspace (imports, classes and their bases,
//! custom operators and fake kernels), extracted without analysing it, and the resolver that
//! decides from summaries alone which classes are `nn.Module`s. The layer below the workspace
//! index and the installed libraries' index, which both build on summaries.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use crate::SourceFile;
use crate::catalogue;
use crate::custom_ops::registrations;
use crate::names::{self, Resolve};
use crate::syntax::{self, ast};

/// What the resolver asks of the installed libraries: whether a module is one of theirs, and
/// whether a qualified class of theirs derives from `nn.Module`.
pub(crate) trait InstalledClasses {
    fn contains(&self, module: &str) -> bool;
    fn is_module_class(&self, qualified: &str) -> bool;
}

/// What one file contributes to the workspace, extracted without analysing it.
///
/// Summaries of installed libraries are cached on disk (see `LibraryIndex`): a change to
/// the fields or to what they mean must bump [`SUMMARY_FORMAT`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleSummary {
    /// The file's dotted module name.
    pub module: String,
    /// The other dotted names Python imports the file by, when it lies in a namespace package
    /// (PEP 420: a directory without `__init__.py`): `wavenet.networks` for
    /// `wavenet/networks.py`, whose module is `networks`. The caller, which knows where the
    /// file is on disk, sets them (`pt2lsp_project::walk::namespace_names`); the index maps
    /// each to `module` where no regular module has that name ([`WorkspaceIndex`]).
    ///
    /// [`WorkspaceIndex`]: crate::WorkspaceIndex
    #[serde(default)]
    pub namespace_names: Vec<String>,
    /// Classes defined at module level, each with the qualified names of its bases.
    pub classes: Vec<(String, Vec<String>)>,
    /// Module-level names bound by imports, with the qualified name each refers to.
    pub imports: Vec<(String, String)>,
    /// Functions defined at module level.
    #[serde(default)]
    pub functions: Vec<String>,
    /// Custom operators (`ns::op`) that get a fake or meta kernel in this file.
    pub fake_kernels: Vec<String>,
    /// `custom_op` functions defined here: Python name and operator.
    pub custom_ops: Vec<(String, String)>,
    /// `@name.register_fake` on an imported operator function, by its qualified name.
    pub imported_fakes: Vec<String>,
    /// Modules whose public names `from module import *` binds here, in source order.
    #[serde(default)]
    pub star_imports: Vec<String>,
    /// Every module the file imports at module level (`import a.b` gives `a.b`, `from a import
    /// b` gives `a` and `a.b`): the edges of the import graph.
    pub imported_modules: Vec<String>,
    /// The file exports a model: a module-level `model = ...` or a call to an `export`
    /// function. Its analysis follows the model into the files it imports.
    pub is_entrypoint: bool,
    /// Whether the file's own report may change with facts from other files: a class with a
    /// `forward` whose bases are not all known, or a custom op without a local fake kernel.
    pub needs_workspace: bool,
}

/// The version of [`ModuleSummary`]'s layout and meaning, for caches of summaries.
pub const SUMMARY_FORMAT: u32 = 4;

/// The modules `summary`'s file imports that `module` names, as it names them (an import of a
/// namespace name is an edge to the module it names), itself excluded, sorted, each once: its
/// edges in an import graph.
pub fn import_targets(
    summary: &ModuleSummary,
    module: impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut targets: Vec<String> = summary
        .imported_modules
        .iter()
        .filter_map(|name| module(name))
        .filter(|name| *name != summary.module)
        .collect();
    targets.sort();
    targets.dedup();
    targets
}

/// A qualified name split at its last dot: `a.b.C` is `("a.b", "C")`. The resolver's maps are
/// keyed by the parts as the summaries hold them, so building them copies no string.
type Qualified<'s> = (&'s str, &'s str);

/// Every module-level name of the workspace, for deciding which classes are modules.
pub(crate) struct Resolver<'s> {
    /// Import bindings (and `Base = nn.Module` aliases) by module and name: what they refer to.
    aliases: FxHashMap<Qualified<'s>, &'s str>,
    /// Classes by module and name: their bases, qualified.
    bases: FxHashMap<Qualified<'s>, &'s [String]>,
    /// The modules each module star-imports, for names bound by `from m import *`.
    stars: FxHashMap<&'s str, &'s [String]>,
    /// Installed libraries, for names the workspace imports from them.
    libraries: Option<&'s dyn InstalledClasses>,
    /// The module each namespace name names (see [`ModuleSummary::namespace_names`]).
    namespace: &'s FxHashMap<String, String>,
}

impl<'s> Resolver<'s> {
    pub(crate) fn new(
        summaries: &[&'s ModuleSummary],
        libraries: Option<&'s dyn InstalledClasses>,
        namespace: &'s FxHashMap<String, String>,
    ) -> Self {
        let mut resolver = Resolver {
            aliases: FxHashMap::default(),
            bases: FxHashMap::default(),
            stars: FxHashMap::default(),
            libraries,
            namespace,
        };
        for summary in summaries {
            let module = summary.module.as_str();
            for (local, qualified) in &summary.imports {
                resolver
                    .aliases
                    .insert((module, local.as_str()), qualified.as_str());
            }
            for (class, class_bases) in &summary.classes {
                resolver
                    .bases
                    .insert((module, class.as_str()), class_bases.as_slice());
            }
            if !summary.star_imports.is_empty() {
                resolver
                    .stars
                    .insert(module, summary.star_imports.as_slice());
            }
        }
        resolver
    }

    /// The qualified names (re-exports included) of every class that derives from
    /// `nn.Module`.
    pub(crate) fn module_classes(&self) -> FxHashSet<String> {
        // Every name is asked about: sized once, the memo is never rehashed.
        let mut memo = FxHashMap::with_capacity_and_hasher(
            self.bases.len() + self.aliases.len(),
            rustc_hash::FxBuildHasher,
        );
        let found: Vec<Qualified<'s>> = self
            .bases
            .keys()
            .chain(self.aliases.keys())
            .copied()
            .filter(|name| self.is_module(*name, &mut memo, 0))
            .collect();
        // Names a star import re-exports (`torchvision.models.ResNet` from `from .resnet
        // import *`), through chains of star imports; private names are not exported.
        let mut by_module: FxHashMap<&str, Vec<&str>> = FxHashMap::default();
        for (module, name) in &found {
            by_module.entry(module).or_default().push(name);
        }
        let mut classes: FxHashSet<String> = found
            .iter()
            .map(|(module, name)| format!("{module}.{name}"))
            .collect();
        for _ in 0..4 {
            let mut added = Vec::new();
            for (module, stars) in &self.stars {
                for star in *stars {
                    for name in by_module.get(self.module(star)).into_iter().flatten() {
                        if !name.starts_with('_') && classes.insert(format!("{module}.{name}")) {
                            added.push((*module, *name));
                        }
                    }
                }
            }
            if added.is_empty() {
                break;
            }
            for (module, name) in added {
                by_module.entry(module).or_default().push(name);
            }
        }
        classes
    }

    /// The custom operators that get a fake kernel: registered by name, or with
    /// `@op.register_fake` on an operator function imported from another file, followed
    /// through re-exports to its `custom_op`.
    pub(crate) fn fake_kernels(&self, summaries: &[&ModuleSummary]) -> FxHashSet<String> {
        let mut fake_kernels: FxHashSet<String> = summaries
            .iter()
            .flat_map(|summary| summary.fake_kernels.iter().cloned())
            .collect();
        let op_functions: FxHashMap<String, &str> = summaries
            .iter()
            .flat_map(|summary| {
                summary.custom_ops.iter().map(move |(function, op)| {
                    (format!("{}.{function}", summary.module), op.as_str())
                })
            })
            .collect();
        for summary in summaries {
            for imported in &summary.imported_fakes {
                let mut name = imported.clone();
                for _ in 0..16 {
                    let function = match name.rsplit_once('.') {
                        Some((module, function)) if self.namespace.contains_key(module) => {
                            format!("{}.{function}", self.namespace[module])
                        }
                        _ => name.clone(),
                    };
                    if let Some(op) = op_functions.get(&function) {
                        fake_kernels.insert((*op).to_owned());
                        break;
                    }
                    match self.alias(&name) {
                        Some(target) if target != name => target.clone_into(&mut name),
                        _ => break,
                    }
                }
            }
        }
        fake_kernels
    }

    /// What the qualified `name` is an alias of, when a workspace module binds it.
    fn alias(&self, name: &str) -> Option<&'s str> {
        let (module, name) = name.rsplit_once('.')?;
        let module = self.namespace.get(module).map_or(module, String::as_str);
        self.aliases.get(&(module, name)).copied()
    }

    /// The module `name` names: itself, or the module a namespace name stands for.
    fn module(&self, name: &'s str) -> &'s str {
        self.namespace.get(name).map_or(name, String::as_str)
    }

    /// A qualified name split at its last dot, its module part named as the summaries name it.
    fn split(&self, qualified: &'s str) -> Option<Qualified<'s>> {
        let (module, name) = qualified.rsplit_once('.')?;
        Some((self.module(module), name))
    }

    fn is_module(
        &self,
        name: Qualified<'s>,
        memo: &mut FxHashMap<Qualified<'s>, bool>,
        depth: usize,
    ) -> bool {
        if depth > 32 {
            return false;
        }
        if let Some(known) = memo.get(&name) {
            return *known;
        }
        // Guard against import cycles: assume "no" while this name is being resolved.
        memo.insert(name, false);
        let mut refers_to_module = |target: &'s str| {
            self.split(target)
                .is_some_and(|target| self.is_module(target, memo, depth + 1))
        };
        let alias = self.aliases.get(&name).copied();
        let bases = self.bases.get(&name).copied();
        let result = catalogue::is_module_base_in(name.0, name.1)
            || alias.is_some_and(&mut refers_to_module)
            || bases.is_some_and(|bases| bases.iter().any(|base| refers_to_module(base)))
            || (alias.is_none()
                && bases.is_none()
                && (self.stars.get(name.0).is_some_and(|stars| {
                    stars
                        .iter()
                        .any(|star| self.is_module((self.module(star), name.1), memo, depth + 1))
                }) || self.libraries.is_some_and(|libraries| {
                    libraries.contains(name.0)
                        && libraries.is_module_class(&format!("{}.{}", name.0, name.1))
                })));
        memo.insert(name, result);
        result
    }
}

/// What a file's module-level names refer to, from its summary's imports and classes alone.
struct FileNames {
    imports: FxHashMap<String, String>,
    /// The file's own classes, by name, with their qualified names.
    classes: FxHashMap<String, String>,
}

impl names::Resolve for FileNames {
    fn qualified(&self, expr: &ast::Expr) -> Option<String> {
        names::qualified_through(self, expr)
    }

    fn binding(&self, name: &str) -> Option<&str> {
        self.imports
            .get(name)
            .or_else(|| self.classes.get(name))
            .map(String::as_str)
    }
}

/// Extracts a file's summary: its imports, its classes' bases, its fake registrations.
/// `is_package` is true for a package's `__init__.py`, whose relative imports start at the
/// package itself (`from .head import Head` in `pkg/__init__.py` is `pkg.head`).
pub fn summarize(source: &str, module: &str, is_package: bool) -> ModuleSummary {
    let parsed = syntax::parse(source);
    let file = SourceFile {
        text: source,
        module: Some(module),
        is_package,
        namespace: None,
    };
    summarize_parsed(&parsed.module.body, file)
}

/// Whether a file follows the export convention the tracer traces (`pt2lsp_tracer`'s
/// `convention_anchor`): it binds `model` at module level with `example_args`,
/// `example_kwargs` or `dynamic_shapes` (assigned or imported). A script that only builds a
/// `model` (a training or visualisation script) exports nothing.
fn binds_convention(bound: &FxHashSet<&str>, imports: &[(String, String)]) -> bool {
    let binds = |name: &str| bound.contains(name) || imports.iter().any(|(local, _)| local == name);
    binds("model")
        && ["example_args", "example_kwargs", "dynamic_shapes"]
            .iter()
            .any(|name| binds(name))
}

pub(crate) fn summarize_parsed(body: &[ast::Stmt], file: SourceFile<'_>) -> ModuleSummary {
    let module = file.module.unwrap_or_default();
    let statements = names::module_level_statements(body);
    let mut imports = Vec::new();
    let mut imported_modules = Vec::new();
    let mut star_imports = Vec::new();
    let mut functions = Vec::new();
    let mut local_classes = FxHashSet::default();
    // The module-level names the tracer's convention reads: `model` with its example inputs.
    let mut bound: FxHashSet<&str> = FxHashSet::default();
    for stmt in &statements {
        let targets: &[ast::Expr] = match stmt {
            ast::Stmt::Assign(assign) => &assign.targets,
            ast::Stmt::AnnAssign(assign) => std::slice::from_ref(&*assign.target),
            _ => &[],
        };
        for target in targets {
            match target {
                ast::Expr::Name(name) => {
                    bound.insert(name.id.as_str());
                }
                ast::Expr::Tuple(ast::ExprTuple { elts, .. })
                | ast::Expr::List(ast::ExprList { elts, .. }) => {
                    bound.extend(elts.iter().filter_map(|elt| match elt {
                        ast::Expr::Name(name) => Some(name.id.as_str()),
                        _ => None,
                    }));
                }
                _ => {}
            }
        }
    }
    for stmt in &statements {
        match stmt {
            ast::Stmt::Import(import) => {
                imports.extend(names::import_bindings(stmt, file));
                imported_modules.extend(import.names.iter().map(|alias| alias.name.id.to_string()));
            }
            ast::Stmt::ImportFrom(_) => {
                if let Some(star) = names::star_import(stmt, file) {
                    imported_modules.push(star.clone());
                    star_imports.push(star);
                }
                let bindings = names::import_bindings(stmt, file);
                for (_, qualified) in &bindings {
                    if let Some((module, _)) = qualified.rsplit_once('.') {
                        imported_modules.push(module.to_owned());
                    }
                    imported_modules.push(qualified.clone());
                }
                imports.extend(bindings);
            }
            ast::Stmt::ClassDef(class) => {
                local_classes.insert(class.name.to_string());
            }
            ast::Stmt::FunctionDef(function) => functions.push(function.name.to_string()),
            ast::Stmt::Assign(assign) => {
                // `Base = nn.Module` style aliases count as imports for resolution.
                if let ([ast::Expr::Name(target)], Some(value)) =
                    (assign.targets.as_slice(), names::dotted(&assign.value))
                {
                    imports.push((target.id.to_string(), value));
                }
            }
            _ => {}
        }
    }
    let resolve = FileNames {
        imports: imports.iter().cloned().collect(),
        classes: local_classes
            .into_iter()
            .map(|class| {
                let qualified = format!("{module}.{class}");
                (class, qualified)
            })
            .collect(),
    };
    let classes = statements
        .iter()
        .filter_map(|stmt| match stmt {
            ast::Stmt::ClassDef(class) => Some((
                class.name.to_string(),
                class
                    .arguments
                    .iter()
                    .flat_map(|arguments| arguments.args.iter())
                    .filter_map(|base| resolve.qualified(base))
                    .collect(),
            )),
            _ => None,
        })
        .collect();
    let registrations = registrations(body, file.text, &resolve);
    // `torch.export.export(...)`, or `export(...)` with `export` imported from torch.export.
    let exports = file.text.contains("torch.export.export(")
        || (file.text.contains("export(")
            && imports
                .iter()
                .any(|(_, qualified)| qualified == "torch.export.export"));
    let convention = binds_convention(&bound, &imports);
    // Aliases that resolve through this module's imports are recorded fully qualified.
    let imports = imports
        .into_iter()
        .map(|(local, qualified)| {
            let (head, rest) = qualified
                .split_once('.')
                .map_or((qualified.as_str(), None), |(h, r)| (h, Some(r)));
            let resolved = match (resolve.imports.get(head), rest) {
                (Some(target), Some(rest)) if target != &qualified => format!("{target}.{rest}"),
                _ => qualified.clone(),
            };
            (local, resolved)
        })
        .collect();
    ModuleSummary {
        module: module.to_owned(),
        namespace_names: Vec::new(),
        classes,
        imports,
        functions,
        fake_kernels: registrations.fakes,
        custom_ops: registrations.op_functions,
        imported_fakes: registrations.imported_fakes,
        star_imports,
        imported_modules,
        is_entrypoint: exports || convention,
        // Without the analysis, a summary cannot tell; `summarize_and_check_alone` refines it.
        needs_workspace: true,
    }
}
