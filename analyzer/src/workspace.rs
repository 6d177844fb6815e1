//! Facts that cross files: which classes are `nn.Module`s, which custom ops have fake kernels.
//!
//! Each file contributes a [`ModuleSummary`], made from its syntax alone (imports, class bases,
//! fake registrations), so summaries can be computed in parallel and cached per file. The
//! [`WorkspaceIndex`] resolves them together once.

use std::collections::{HashMap, HashSet};

use crate::SourceFile;
use crate::semantic::{names, registrations, torch_api_is_module_base};
use crate::syntax::{self, ast};

/// What one file contributes to the workspace, extracted without analysing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleSummary {
    /// The file's dotted module name.
    pub module: String,
    /// Classes defined at module level, each with the qualified names of its bases.
    pub classes: Vec<(String, Vec<String>)>,
    /// Module-level names bound by imports, with the qualified name each refers to.
    pub imports: Vec<(String, String)>,
    /// Custom operators (`ns::op`) that get a fake or meta kernel in this file.
    pub fake_kernels: Vec<String>,
    /// Whether the file's own report may change with facts from other files: a class with a
    /// `forward` whose bases are not all known, or a custom op without a local fake kernel.
    pub needs_workspace: bool,
}

/// The workspace's cross-file facts, built once from every file's summary.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceIndex {
    /// Qualified names (including re-exports) of classes that derive from `nn.Module`.
    module_classes: HashSet<String>,
    fake_kernels: HashSet<String>,
}

impl WorkspaceIndex {
    pub fn new(summaries: &[ModuleSummary]) -> Self {
        let mut aliases: HashMap<String, String> = HashMap::new();
        let mut bases: HashMap<String, &[String]> = HashMap::new();
        for summary in summaries {
            for (local, qualified) in &summary.imports {
                aliases.insert(format!("{}.{local}", summary.module), qualified.clone());
            }
            for (class, class_bases) in &summary.classes {
                bases.insert(format!("{}.{class}", summary.module), class_bases);
            }
        }
        let resolver = Resolver {
            aliases: &aliases,
            bases: &bases,
        };
        let mut memo = HashMap::new();
        let module_classes = bases
            .keys()
            .chain(aliases.keys())
            .filter(|name| resolver.is_module(name, &mut memo, 0))
            .cloned()
            .collect();
        let fake_kernels = summaries
            .iter()
            .flat_map(|summary| summary.fake_kernels.iter().cloned())
            .collect();
        Self {
            module_classes,
            fake_kernels,
        }
    }

    pub fn is_module_class(&self, qualified_name: &str) -> bool {
        self.module_classes.contains(qualified_name)
    }

    pub fn has_fake_kernel(&self, op: &str) -> bool {
        self.fake_kernels.contains(op)
    }
}

struct Resolver<'s> {
    aliases: &'s HashMap<String, String>,
    bases: &'s HashMap<String, &'s [String]>,
}

impl Resolver<'_> {
    fn is_module(&self, name: &str, memo: &mut HashMap<String, bool>, depth: usize) -> bool {
        if depth > 32 {
            return false;
        }
        if let Some(known) = memo.get(name) {
            return *known;
        }
        // Guard against import cycles: assume "no" while this name is being resolved.
        memo.insert(name.to_owned(), false);
        let result = torch_api_is_module_base(name)
            || self
                .aliases
                .get(name)
                .is_some_and(|target| self.is_module(target, memo, depth + 1))
            || self.bases.get(name).is_some_and(|bases| {
                bases
                    .iter()
                    .any(|base| self.is_module(base, memo, depth + 1))
            });
        memo.insert(name.to_owned(), result);
        result
    }
}

/// Extracts a file's summary: its imports, its classes' bases, its fake registrations.
pub fn summarize(source: &str, module: &str) -> ModuleSummary {
    let parsed = syntax::parse(source);
    let file = SourceFile {
        text: source,
        module: Some(module),
        is_package: false,
    };
    summarize_parsed(&parsed.module.body, file)
}

pub(crate) fn summarize_parsed(body: &[ast::Stmt], file: SourceFile<'_>) -> ModuleSummary {
    let module = file.module.unwrap_or_default();
    let statements = names::module_level_statements(body);
    let mut imports = Vec::new();
    let mut local_classes = HashSet::new();
    for stmt in &statements {
        match stmt {
            ast::Stmt::Import(_) | ast::Stmt::ImportFrom(_) => {
                imports.extend(names::import_bindings(stmt, file));
            }
            ast::Stmt::ClassDef(class) => {
                local_classes.insert(class.name.to_string());
            }
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
    let import_map: HashMap<String, String> = imports.iter().cloned().collect();
    let resolve = |expr: &ast::Expr| -> Option<String> {
        let dotted = names::dotted(expr)?;
        let (head, rest) = dotted
            .split_once('.')
            .map_or((dotted.as_str(), None), |(h, r)| (h, Some(r)));
        let head = if let Some(qualified) = import_map.get(head) {
            qualified.clone()
        } else if local_classes.contains(head) {
            format!("{module}.{head}")
        } else {
            head.to_owned()
        };
        Some(match rest {
            Some(rest) => format!("{head}.{rest}"),
            None => head,
        })
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
                    .filter_map(&resolve)
                    .collect(),
            )),
            _ => None,
        })
        .collect();
    let fake_kernels = registrations(body, &resolve).fakes;
    // Aliases that resolve through this module's imports are recorded fully qualified.
    let imports = imports
        .into_iter()
        .map(|(local, qualified)| {
            let (head, rest) = qualified
                .split_once('.')
                .map_or((qualified.as_str(), None), |(h, r)| (h, Some(r)));
            let resolved = match (import_map.get(head), rest) {
                (Some(target), Some(rest)) if target != &qualified => format!("{target}.{rest}"),
                _ => qualified.clone(),
            };
            (local, resolved)
        })
        .collect();
    ModuleSummary {
        module: module.to_owned(),
        classes,
        imports,
        fake_kernels,
        // Without the analysis, a summary cannot tell; `check_and_summarize` refines it.
        needs_workspace: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_bases_resolve_across_files_and_re_exports() {
        let base = summarize(
            "import torch.nn as nn\nclass Base(nn.Module):\n    pass\n",
            "pkg.base",
        );
        let init = summarize("from .base import Base\n", "pkg");
        let init = ModuleSummary {
            imports: vec![("Base".into(), "pkg.base.Base".into())],
            ..init
        };
        let child = summarize(
            "from pkg import Base\nclass Child(Base):\n    pass\nclass Plain:\n    pass\n",
            "pkg.child",
        );
        let index = WorkspaceIndex::new(&[base, init, child]);
        assert!(index.is_module_class("pkg.base.Base"));
        assert!(index.is_module_class("pkg.Base"));
        assert!(index.is_module_class("pkg.child.Child"));
        assert!(!index.is_module_class("pkg.child.Plain"));
    }

    #[test]
    fn fake_kernels_are_collected() {
        let summary = summarize(
            "import torch\n@torch.library.register_fake(\"ns::op\")\ndef _(x):\n    return x\n",
            "ops",
        );
        assert_eq!(summary.fake_kernels, vec!["ns::op".to_owned()]);
    }
}
