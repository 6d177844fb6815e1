//! Facts that cross files: which classes are `nn.Module`s, which custom ops have fake kernels,
//! which files export a model and which files their analysis reaches.
//!
//! Each file contributes a [`ModuleSummary`] (`crate::summary`), made from its syntax alone
//! (imports, class bases, fake registrations), so summaries can be computed in parallel and
//! cached per file. The
//! [`WorkspaceIndex`] resolves them together once. Whole-program analysis also needs other
//! files' bodies: the caller hands the index a [`WorkspaceSources`], which the analysis asks
//! for a module's text when it follows a call into it; the analysis itself reads no file.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::SourceFile;
use crate::library::LibraryIndex;
use crate::summary::{InstalledClasses, ModuleSummary, Resolver, import_targets};
use crate::{names, syntax};

/// Where the analysis reads other workspace files' text. The CLI answers from the texts it
/// already read, the language server from its open documents or the disk.
pub trait WorkspaceSources: Send + Sync {
    /// The text of workspace module `module` (dotted), whether it is a package's
    /// `__init__.py`, and its path (for related locations); `None` when it is not in the
    /// workspace or cannot be read.
    fn source(&self, module: &str) -> Option<ModuleSource>;
}

/// One workspace file's text, as [`WorkspaceSources`] gives it.
#[derive(Debug, Clone)]
pub struct ModuleSource {
    pub text: Arc<str>,
    pub is_package: bool,
    pub path: PathBuf,
}

/// Parsed workspace files, one per module, each kept with the text it was parsed from, so an
/// analysis that loads a program re-parses only the files whose text changed since the last
/// one. An editor keeps one for its whole session, across index rebuilds: a keystroke in one
/// file of a program then costs one parse, not one per file. The text is compared whole (a
/// pointer comparison first), so a stale tree is never returned, whatever the caller's
/// versions say.
#[derive(Default)]
pub struct ParseCache {
    /// For each module, the text last parsed and its tree.
    files: Mutex<FxHashMap<String, ParsedText>>,
    parses: AtomicU64,
}

/// A text and its syntax tree.
type ParsedText = (Arc<str>, Arc<syntax::Parsed>);

impl fmt::Debug for ParseCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParseCache")
            .field("files", &self.files.lock().map_or(0, |files| files.len()))
            .field("parses", &self.parses())
            .finish()
    }
}

impl ParseCache {
    /// How many texts this cache has parsed (misses), for tests and benchmarks.
    pub fn parses(&self) -> u64 {
        self.parses.load(Ordering::Relaxed)
    }

    /// Forgets `module`'s tree (its file was deleted or left the workspace).
    pub fn forget(&self, module: &str) {
        if let Ok(mut files) = self.files.lock() {
            files.remove(module);
        }
    }

    /// Keeps `parsed`, parsed from `text`, as `module`'s tree: a caller that parsed the file
    /// already spares the analyses that load it a second parse.
    pub(crate) fn keep(&self, module: &str, text: Arc<str>, parsed: Arc<syntax::Parsed>) {
        if let Ok(mut files) = self.files.lock() {
            files.insert(module.to_owned(), (text, parsed));
        }
    }

    /// `module`'s syntax tree for `text`: the cached one when it was parsed from the same text.
    pub(crate) fn parse(&self, module: &str, text: &Arc<str>) -> Arc<syntax::Parsed> {
        if let Some(parsed) = self.files.lock().ok().and_then(|files| {
            files
                .get(module)
                .filter(|(cached, _)| Arc::ptr_eq(cached, text) || **cached == **text)
                .map(|(_, parsed)| Arc::clone(parsed))
        }) {
            return parsed;
        }
        // Parsed outside the lock: two analyses parsing different files do not wait for each
        // other; two parsing the same text at once both parse, and either tree is right.
        let parsed = Arc::new(syntax::parse(text));
        self.parses.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut files) = self.files.lock() {
            files.insert(module.to_owned(), (Arc::clone(text), Arc::clone(&parsed)));
        }
        parsed
    }
}

/// How many files one entrypoint's analysis may load: past it, calls are not followed.
pub(crate) const MAX_PROGRAM_FILES: usize = 96;

/// An entrypoint's program, a derived fact of the workspace: the texts of the entrypoint and of
/// the files its analysis may follow, parsed, and, once an analysis of the entrypoint has run,
/// the modules it entered. Both are functions of those texts and the index alone, so whichever
/// check computes them first, every check reads the same.
pub(crate) struct EntryProgram {
    pub(crate) entry: String,
    /// The entrypoint's text as read, `None` when the sources had none.
    pub(crate) entry_text: Option<Arc<str>>,
    /// The other files, nearest first, workspace files before libraries'.
    pub(crate) files: Vec<LoadedFile>,
    /// The modules the entrypoint's analysis entered: a module the import graph says it may
    /// reach but that it did not enter gets nothing from it.
    entered: std::sync::OnceLock<FxHashSet<String>>,
}

impl EntryProgram {
    pub(crate) fn new(entry: &str, entry_text: Option<Arc<str>>, files: Vec<LoadedFile>) -> Self {
        Self {
            entry: entry.to_owned(),
            entry_text,
            files,
            entered: std::sync::OnceLock::new(),
        }
    }

    /// What an analysis of the entrypoint over this program entered, once one has run.
    pub(crate) fn entered(&self) -> Option<&FxHashSet<String>> {
        self.entered.get()
    }

    /// Records what an analysis of the entrypoint over this program entered. Every analysis
    /// of it enters the same modules, so the first record stands.
    pub(crate) fn note_entered(&self, modules: FxHashSet<String>) -> &FxHashSet<String> {
        self.entered.get_or_init(|| modules)
    }
}

/// One workspace file loaded for whole-program analysis, owned by the caller of
/// `SemanticModel::build` so that the model can borrow its syntax tree.
pub(crate) struct LoadedFile {
    pub(crate) module: String,
    pub(crate) source: ModuleSource,
    /// Shared with the workspace's parse cache.
    pub(crate) parsed: Arc<syntax::Parsed>,
}

/// Where one entrypoint's program is kept; its lock is held while the program loads.
type ProgramSlot = Arc<Mutex<Option<Arc<EntryProgram>>>>;

/// The workspace's cross-file facts, built once from every file's summary.
#[derive(Clone, Default)]
pub struct WorkspaceIndex {
    /// Qualified names (including re-exports) of classes that derive from `nn.Module`.
    module_classes: FxHashSet<String>,
    fake_kernels: FxHashSet<String>,
    /// Every workspace module, with the workspace modules it imports.
    imports: FxHashMap<String, Vec<String>>,
    /// The module each namespace name names (PEP 420, [`ModuleSummary::namespace_names`]).
    namespace: FxHashMap<String, String>,
    /// Each module's namespace names that [`Self::namespace`] keeps.
    namespace_names: FxHashMap<String, Vec<String>>,
    /// Each module's longest namespace name, as its summary has it ([`SourceFile::namespace`]).
    outermost: FxHashMap<String, String>,
    /// Entrypoint modules.
    entrypoints: FxHashSet<String>,
    /// For each module an entrypoint's analysis may reach, those entrypoints.
    reached_by: FxHashMap<String, Vec<String>>,
    /// For each module, the names it imports that no module here defines nor a library:
    /// modules of the project's other namespaces, reached through `sys.path` (see
    /// [`link_namespaces`]).
    imports_beyond: FxHashMap<String, Vec<String>>,
    /// What the entrypoints of the project's other namespaces reach here.
    from_other_namespaces: OtherNamespaces,
    sources: Option<Arc<dyn WorkspaceSources>>,
    /// Each entrypoint's program and what its analysis entered: derived facts, computed on
    /// first demand and kept while every text they were computed from is unchanged, so an
    /// answer never depends on which file asked first (see [`EntryProgram`]).
    programs: Arc<Mutex<FxHashMap<String, ProgramSlot>>>,
    /// Other files' syntax trees, by content; shared with the caller, so it can outlive the
    /// index (see [`ParseCache`]).
    parse_cache: Option<Arc<ParseCache>>,
    /// The installed libraries the workspace imports, when an interpreter is configured.
    libraries: Option<Arc<LibraryIndex>>,
}

impl fmt::Debug for WorkspaceIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkspaceIndex")
            .field("module_classes", &self.module_classes.len())
            .field("fake_kernels", &self.fake_kernels)
            .field("entrypoints", &self.entrypoints)
            .field("sources", &self.sources.is_some())
            .finish_non_exhaustive()
    }
}

impl WorkspaceIndex {
    pub fn new<'s>(summaries: impl IntoIterator<Item = &'s ModuleSummary>) -> Self {
        Self::with_libraries(summaries, None)
    }

    /// The index of the workspace's `summaries`, whose imports of installed libraries'
    /// modules resolve through `libraries`: a workspace class deriving from a library's
    /// module class is a module, and an entrypoint's analysis may follow calls into the
    /// libraries' files (their texts come through the [`WorkspaceSources`]).
    pub fn with_libraries<'s>(
        summaries: impl IntoIterator<Item = &'s ModuleSummary>,
        libraries: Option<Arc<LibraryIndex>>,
    ) -> Self {
        let summaries: Vec<&ModuleSummary> = summaries.into_iter().collect();
        let modules: FxHashSet<&str> = summaries.iter().map(|s| s.module.as_str()).collect();
        let in_library = |name: &str| {
            !modules.contains(name) && libraries.as_ref().is_some_and(|l| l.contains(name))
        };
        let namespace = namespace_of(&summaries, &modules, &in_library);
        let resolver = Resolver::new(
            &summaries,
            libraries
                .as_deref()
                .map(|index| index as &dyn InstalledClasses),
            &namespace,
        );
        let module_classes = resolver.module_classes();
        let fake_kernels = resolver.fake_kernels(&summaries);
        let imports: FxHashMap<String, Vec<String>> = summaries
            .iter()
            .map(|summary| {
                let targets = import_targets(summary, |name| {
                    if modules.contains(name) || in_library(name) {
                        Some(name.to_owned())
                    } else {
                        namespace.get(name).cloned()
                    }
                });
                (summary.module.clone(), targets)
            })
            .collect();
        let imports_beyond = summaries
            .iter()
            .filter_map(|summary| {
                let mut beyond: Vec<String> = summary
                    .imported_modules
                    .iter()
                    .filter(|name| {
                        !modules.contains(name.as_str())
                            && !namespace.contains_key(name.as_str())
                            && !in_library(name)
                    })
                    .cloned()
                    .collect();
                beyond.sort();
                beyond.dedup();
                (!beyond.is_empty()).then(|| (summary.module.clone(), beyond))
            })
            .collect();
        let mut namespace_names: FxHashMap<String, Vec<String>> = FxHashMap::default();
        for (name, module) in &namespace {
            namespace_names
                .entry(module.clone())
                .or_default()
                .push(name.clone());
        }
        for names in namespace_names.values_mut() {
            names.sort();
        }
        let outermost = summaries
            .iter()
            .filter_map(|summary| {
                let longest = summary
                    .namespace_names
                    .iter()
                    .max_by_key(|name| name.len())?;
                Some((summary.module.clone(), longest.clone()))
            })
            .collect();
        let entrypoints: FxHashSet<String> = summaries
            .iter()
            .filter(|summary| summary.is_entrypoint)
            .map(|summary| summary.module.clone())
            .collect();
        let mut reached_by: FxHashMap<String, Vec<String>> = FxHashMap::default();
        let mut sorted: Vec<&String> = entrypoints.iter().collect();
        sorted.sort();
        for entry in sorted {
            for module in closure(&imports, entry) {
                if &module != entry {
                    reached_by.entry(module).or_default().push(entry.clone());
                }
            }
        }
        Self {
            module_classes,
            fake_kernels,
            imports,
            namespace,
            namespace_names,
            outermost,
            entrypoints,
            reached_by,
            imports_beyond,
            from_other_namespaces: OtherNamespaces::default(),
            sources: None,
            programs: Arc::default(),
            parse_cache: None,
            libraries,
        }
    }

    /// The index with a reader of other files' text, which whole-program analysis needs.
    #[must_use]
    pub fn with_sources(mut self, sources: Arc<dyn WorkspaceSources>) -> Self {
        self.sources = Some(sources);
        self
    }

    /// The index parses other files through `cache`, which keeps each file's tree until its
    /// text changes, across indexes: an editor keeps one for its session.
    #[must_use]
    pub fn with_parse_cache(mut self, cache: Arc<ParseCache>) -> Self {
        self.parse_cache = Some(cache);
        self
    }

    /// Whether `module` exports a model (see [`ModuleSummary::is_entrypoint`]).
    pub fn is_entrypoint(&self, module: &str) -> bool {
        self.entrypoints.contains(module)
    }

    /// Why nothing the project exports runs `module`'s code: the project has entrypoints and
    /// none of them is `module` or may reach it. `None` when one does, and when the project has
    /// no entrypoint at all (then every file is analysed for what it would do if exported).
    /// A file beside the export scripts counts as much as one in a package: a loss kept in
    /// `splitcross.py` at the top of a checkout is no more exported than `models/matcher.py`,
    /// and whether the checkout's directory is a valid package name must not decide it.
    /// The entrypoints of the project's other namespaces count too ([`link_namespaces`]).
    pub fn unexported(&self, module: &str) -> Option<String> {
        let others = &self.from_other_namespaces;
        if (self.entrypoints.is_empty() && others.entrypoints.is_empty())
            || self.is_entrypoint(module)
            || !self.entrypoints_reaching(module).is_empty()
            || others.reached.contains(module)
        {
            return None;
        }
        // The first three by name, found in one pass: asked for every file of a project
        // that may have hundreds of entrypoints.
        let mut first: Vec<&str> = Vec::with_capacity(4);
        let mut count = 0;
        for entry in self.entrypoints.iter().chain(&others.entrypoints) {
            count += 1;
            let at = first.partition_point(|shown| *shown < entry.as_str());
            // Two namespaces' scripts may share a name (`train` in each example's directory).
            if first.get(at) == Some(&entry.as_str()) {
                continue;
            }
            if at < 3 {
                first.insert(at, entry);
                first.truncate(3);
            }
        }
        let shown = first
            .iter()
            .map(|entry| format!("`{entry}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let more = if count > 3 { ", …" } else { "" };
        Some(format!(
            "no entrypoint exports this: the project's entrypoints ({shown}{more}) do not import \
             `{module}`"
        ))
    }

    /// The names this namespace's entrypoints import, directly or through its modules, that
    /// it does not define: what they may find in the project's other namespaces.
    fn entrypoints_import_beyond(&self) -> FxHashSet<&str> {
        let mut reached: FxHashSet<&str> = self.entrypoints.iter().map(String::as_str).collect();
        reached.extend(self.reached_by.keys().map(String::as_str));
        reached
            .into_iter()
            .filter_map(|module| self.imports_beyond.get(module))
            .flatten()
            .map(String::as_str)
            .collect()
    }

    /// Records that the project's other namespaces have `entrypoints`, which import `names`:
    /// the modules here those names stand for, and what they import here, are exported.
    fn reached_from_other_namespaces(&mut self, entrypoints: Vec<String>, names: &FxHashSet<&str>) {
        let mut reached = FxHashSet::default();
        for name in names {
            let module = self.module_named(name);
            if !self.imports.contains_key(module) || reached.contains(module) {
                continue;
            }
            reached.extend(closure(&self.imports, module));
        }
        self.from_other_namespaces = OtherNamespaces {
            entrypoints,
            reached,
        };
    }

    /// The entrypoints whose analysis may reach `module`, in name order.
    pub fn entrypoints_reaching(&self, module: &str) -> &[String] {
        self.reached_by.get(module).map_or(&[], Vec::as_slice)
    }

    /// Whether `module`'s report may change with whole-program analysis, as far as the import
    /// graph tells: it is an entrypoint that imports workspace files, or an entrypoint may
    /// reach it. `pt2lsp_analyzer::takes_part_in_program` answers exactly, from what the
    /// entrypoints' analyses enter.
    pub fn may_take_part_in_program(&self, module: &str) -> bool {
        (self.is_entrypoint(module) && self.imports.get(module).is_some_and(|i| !i.is_empty()))
            || !self.entrypoints_reaching(module).is_empty()
    }

    /// `entry`'s program: the one computed before while none of the texts it read has
    /// changed, else `load`'s, kept for the next caller. Callers asking for one entrypoint at
    /// once wait for one load.
    pub(crate) fn program(
        &self,
        entry: &str,
        load: impl FnOnce() -> EntryProgram,
    ) -> Arc<EntryProgram> {
        let slot = self
            .programs
            .lock()
            .map(|mut programs| Arc::clone(programs.entry(entry.to_owned()).or_default()));
        let Ok(slot) = slot else {
            return Arc::new(load());
        };
        let Ok(mut held) = slot.lock() else {
            return Arc::new(load());
        };
        if let Some(program) = held.as_ref().filter(|program| self.unchanged(program)) {
            return Arc::clone(program);
        }
        let program = Arc::new(load());
        *held = Some(Arc::clone(&program));
        program
    }

    /// Whether every text `program` was computed from is still the text the sources give.
    fn unchanged(&self, program: &EntryProgram) -> bool {
        let same = |module: &str, text: Option<&Arc<str>>| {
            let now = self.source(module).map(|source| source.text);
            match (now.as_ref(), text) {
                (Some(now), Some(then)) => Arc::ptr_eq(now, then) || **now == **then,
                (None, None) => true,
                _ => false,
            }
        };
        same(&program.entry, program.entry_text.as_ref())
            && program
                .files
                .iter()
                .all(|file| same(&file.module, Some(&file.source.text)))
    }

    /// The workspace modules an analysis starting at `module` may enter, `module` first,
    /// nearest first, bounded.
    pub(crate) fn program_of(&self, module: &str) -> Vec<String> {
        closure(&self.imports, module)
    }

    pub(crate) fn source(&self, module: &str) -> Option<ModuleSource> {
        self.sources.as_ref()?.source(self.module_named(module))
    }

    /// The module `name` names: itself, or the module a namespace name stands for
    /// ([`ModuleSummary::namespace_names`]: `wavenet.networks` for `networks`).
    pub fn module_named<'n>(&'n self, name: &'n str) -> &'n str {
        self.namespace.get(name).map_or(name, String::as_str)
    }

    /// `module`'s file as the analysis reads it: its place in its packages, and in the
    /// namespace packages above them ([`SourceFile::namespace`]).
    pub(crate) fn file<'f>(
        &'f self,
        text: &'f str,
        module: &'f str,
        is_package: bool,
    ) -> SourceFile<'f> {
        SourceFile {
            text,
            module: Some(module),
            is_package,
            namespace: self.outermost.get(module).map(String::as_str),
        }
    }

    /// The namespace names the index keeps for `module`, sorted.
    pub(crate) fn namespace_names(&self, module: &str) -> &[String] {
        self.namespace_names.get(module).map_or(&[], Vec::as_slice)
    }

    /// `qualified` with its module part named as the index names it: `wavenet.networks.Net`
    /// is `networks.Net` when `wavenet.networks` is a namespace name of `networks`.
    fn canonical<'n>(&self, qualified: &'n str) -> Cow<'n, str> {
        if self.namespace.is_empty() {
            return Cow::Borrowed(qualified);
        }
        match names::split_at_module(qualified, |module| self.namespace.contains_key(module)) {
            Some((module, rest)) => Cow::Owned(format!("{}.{rest}", self.namespace[module])),
            None => Cow::Borrowed(qualified),
        }
    }

    /// Another file's syntax tree, from the parse cache when the index has one.
    pub(crate) fn parse(&self, module: &str, text: &Arc<str>) -> Arc<syntax::Parsed> {
        match &self.parse_cache {
            Some(cache) => cache.parse(module, text),
            None => Arc::new(syntax::parse(text)),
        }
    }

    /// The syntax tree of the file being checked. A file that entrypoints' programs also load
    /// goes through the parse cache, so that loading it again for their analyses costs a text
    /// comparison, not a second parse of the text just edited.
    pub(crate) fn parse_checked(&self, file: SourceFile<'_>) -> Arc<syntax::Parsed> {
        match (&self.parse_cache, file.module) {
            (Some(cache), Some(module))
                if self.is_entrypoint(module) || !self.entrypoints_reaching(module).is_empty() =>
            {
                cache.parse(module, &Arc::from(file.text))
            }
            _ => Arc::new(syntax::parse(file.text)),
        }
    }

    /// The modules whose report may change when `module`'s text changes: the entrypoints
    /// whose analysis may reach it (and `module` itself when it is one), and every module
    /// those entrypoints may reach, since their values flow through it. Sorted, without
    /// `module`. An editor re-analyses the open ones after an edit.
    pub fn dependents(&self, module: &str) -> Vec<String> {
        let mut entries: Vec<&str> = self
            .entrypoints_reaching(module)
            .iter()
            .map(String::as_str)
            .collect();
        if self.is_entrypoint(module) {
            entries.push(module);
        }
        let mut found: FxHashSet<String> = FxHashSet::default();
        for entry in entries {
            found.extend(closure(&self.imports, entry));
        }
        found.remove(module);
        let mut found: Vec<String> = found.into_iter().collect();
        found.sort();
        found
    }

    /// `module` and the workspace modules whose import closure (the one entrypoints' programs
    /// follow, [`closure`]) reaches it: those that import it, directly or through others, and,
    /// for a package, those that import any of its submodules (Python runs the package's
    /// `__init__` first). Sorted, at most `limit` (`module` first among them). A save traces
    /// the entrypoints among them.
    pub fn importing(&self, module: &str, limit: usize) -> Vec<String> {
        if !self.imports.contains_key(module) {
            return vec![module.to_owned()];
        }
        // The closure's edges, reversed: each import target, and each package of a module,
        // back to the module that brings it in.
        let mut importers: FxHashMap<&str, Vec<&str>> = FxHashMap::default();
        for (from, targets) in &self.imports {
            for target in targets {
                if self.imports.contains_key(target.as_str()) {
                    importers.entry(target).or_default().push(from);
                }
            }
            if let Some((package, _)) = from.rsplit_once('.') {
                if self.imports.contains_key(package) {
                    importers.entry(package).or_default().push(from);
                }
            }
        }
        let mut seen: FxHashSet<&str> = FxHashSet::from_iter([module]);
        let mut queue = vec![module];
        while let Some(at) = queue.pop() {
            for importer in importers.get(at).into_iter().flatten() {
                if seen.len() >= limit {
                    break;
                }
                if seen.insert(importer) {
                    queue.push(importer);
                }
            }
        }
        let mut found: Vec<String> = seen
            .into_iter()
            .filter(|found| *found != module)
            .map(str::to_owned)
            .collect();
        found.sort();
        found.insert(0, module.to_owned());
        found
    }

    pub fn is_module_class(&self, qualified_name: &str) -> bool {
        let qualified_name = self.canonical(qualified_name);
        let qualified_name = qualified_name.as_ref();
        self.module_classes.contains(qualified_name)
            || self
                .libraries
                .as_ref()
                .is_some_and(|libraries| libraries.is_module_class(qualified_name))
    }

    pub fn has_fake_kernel(&self, op: &str) -> bool {
        self.fake_kernels.contains(op)
            || self
                .libraries
                .as_ref()
                .is_some_and(|libraries| libraries.has_fake_kernel(op))
    }

    /// Whether `module` is an installed library's, not the workspace's: the analysis follows
    /// calls into it but reports nothing in it.
    pub fn is_library(&self, module: &str) -> bool {
        !self.imports.contains_key(self.module_named(module))
            && self
                .libraries
                .as_ref()
                .is_some_and(|libraries| libraries.contains(module))
    }

    /// The installed libraries, when the index has them.
    pub fn libraries(&self) -> Option<&LibraryIndex> {
        self.libraries.as_deref()
    }
}

/// What the entrypoints of a project's other namespaces reach in one namespace.
#[derive(Clone, Debug, Default)]
struct OtherNamespaces {
    /// Their entrypoints, in name order.
    entrypoints: Vec<String>,
    /// The modules of this namespace they import, and what those import in it.
    reached: FxHashSet<String>,
}

/// Tells each of one project's namespaces (the indexes a check builds for it: a script's
/// directory that defines a top-level name another directory defines too is a namespace of
/// its own) which of its modules the other namespaces' entrypoints import. A directory they
/// put on `sys.path` (`sys.path.append('utils')`, then `from head import Head`) is then no
/// less reached than it would be in one namespace: whether its files share a name with a file
/// elsewhere in the project must not decide whether code in them is exported. The answer
/// does not depend on the order of `indexes`.
pub fn link_namespaces(indexes: &mut [&mut WorkspaceIndex]) {
    let beyond: Vec<(Vec<String>, FxHashSet<String>)> = indexes
        .iter()
        .map(|index| {
            let names = index
                .entrypoints_import_beyond()
                .into_iter()
                .map(str::to_owned)
                .collect();
            (index.entrypoints.iter().cloned().collect(), names)
        })
        .collect();
    for (at, index) in indexes.iter_mut().enumerate() {
        let mut entrypoints: Vec<String> = Vec::new();
        let mut names: FxHashSet<&str> = FxHashSet::default();
        for (other, (their_entrypoints, their_names)) in beyond.iter().enumerate() {
            if other != at {
                entrypoints.extend(their_entrypoints.iter().cloned());
                names.extend(their_names.iter().map(String::as_str));
            }
        }
        entrypoints.sort();
        entrypoints.dedup();
        index.reached_from_other_namespaces(entrypoints, &names);
    }
}

/// The module each namespace name of `summaries` names ([`ModuleSummary::namespace_names`]),
/// as Python resolves them: a regular module of that name (`modules`), and an installed package
/// that holds it (`in_library` of any of its prefixes), win over namespace packages; a name two
/// files claim (two directories on the path, each with a `wavenet/networks.py`) names neither,
/// since which one Python imports depends on the order of `sys.path`.
fn namespace_of(
    summaries: &[&ModuleSummary],
    modules: &FxHashSet<&str>,
    in_library: &dyn Fn(&str) -> bool,
) -> FxHashMap<String, String> {
    let mut claimed: FxHashMap<&str, Option<&str>> = FxHashMap::default();
    for summary in summaries {
        for name in &summary.namespace_names {
            let shadowed = modules.contains(name.as_str())
                || name
                    .match_indices('.')
                    .any(|(dot, _)| in_library(&name[..dot]))
                || in_library(name);
            if shadowed {
                continue;
            }
            claimed
                .entry(name)
                .and_modify(|module| {
                    if *module != Some(summary.module.as_str()) {
                        *module = None;
                    }
                })
                .or_insert(Some(&summary.module));
        }
    }
    claimed
        .into_iter()
        .filter_map(|(name, module)| Some((name.to_owned(), module?.to_owned())))
        .collect()
}

/// `start` and the workspace modules it imports, transitively, breadth first, at most
/// [`MAX_PROGRAM_FILES`]. Installed libraries' modules are not among them: an entrypoint's
/// analysis loads those it uses by name (see `LibraryIndex::modules_used_by`).
fn closure<'i>(imports: &'i FxHashMap<String, Vec<String>>, start: &'i str) -> Vec<String> {
    let mut seen: FxHashSet<&str> = FxHashSet::default();
    let mut order = Vec::new();
    let mut queue = VecDeque::from([start]);
    while let Some(module) = queue.pop_front() {
        if order.len() == MAX_PROGRAM_FILES {
            break;
        }
        if !seen.insert(module) {
            continue;
        }
        order.push(module.to_owned());
        for target in imports.get(module).into_iter().flatten() {
            if imports.contains_key(target.as_str()) {
                queue.push_back(target);
            }
        }
        // A package's `__init__` is imported before any of its submodules.
        let mut parent = module;
        while let Some((package, _)) = parent.rsplit_once('.') {
            if imports.contains_key(package) {
                queue.push_back(package);
            }
            parent = package;
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{summarize, summarize_parsed};

    #[test]
    fn module_bases_resolve_across_files_and_re_exports() {
        let base = summarize(
            "import torch.nn as nn\nclass Base(nn.Module):\n    pass\n",
            "pkg.base",
            false,
        );
        let init = summarize("from .base import Base\n", "pkg", true);
        assert_eq!(
            init.imports,
            [("Base".to_owned(), "pkg.base.Base".to_owned())]
        );
        let child = summarize(
            "from pkg import Base\nclass Child(Base):\n    pass\nclass Plain:\n    pass\n",
            "pkg.child",
            false,
        );
        let index = WorkspaceIndex::new(&[base, init, child]);
        assert!(index.is_module_class("pkg.base.Base"));
        assert!(index.is_module_class("pkg.Base"));
        assert!(index.is_module_class("pkg.child.Child"));
        assert!(!index.is_module_class("pkg.child.Plain"));
    }

    /// PEP 420: a namespace name names its module where Python would import that file by it,
    /// so its classes are modules and its importers' edges reach it; a regular module of the
    /// same name wins, and a name two files claim names neither.
    #[test]
    fn namespace_names_name_their_modules_unless_a_module_or_another_file_has_them() {
        let in_namespace = |text: &str, module: &str, names: &[&str]| {
            let mut summary = summarize(text, module, false);
            summary.namespace_names = names.iter().map(|name| (*name).to_owned()).collect();
            summary
        };
        let networks = in_namespace(
            "import torch\nclass Net(torch.nn.Module):\n    pass\n",
            "networks",
            &["wavenet.networks"],
        );
        let layers = in_namespace("import torch\n", "layers", &["wavenet.layers", "shared.x"]);
        let other = in_namespace("import torch\n", "other", &["shared.x"]);
        // A regular package module named as a namespace name of `config` would be.
        let regular = summarize("import torch\n", "wavenet.config", false);
        let config = in_namespace("import torch\n", "config", &["wavenet.config"]);
        let entry = summarize(
            "from wavenet.networks import Net\nfrom wavenet import layers\nmodel = Net()\n\
             example_args = ()\n",
            "export",
            false,
        );
        let index = WorkspaceIndex::new(&[networks, layers, other, regular, config, entry]);
        assert_eq!(index.module_named("wavenet.networks"), "networks");
        assert_eq!(index.module_named("wavenet.layers"), "layers");
        assert_eq!(index.module_named("wavenet.config"), "wavenet.config");
        assert_eq!(index.module_named("shared.x"), "shared.x");
        assert!(index.is_module_class("wavenet.networks.Net"));
        assert!(index.is_module_class("networks.Net"));
        assert_eq!(index.program_of("export"), ["export", "layers", "networks"]);
        assert_eq!(index.entrypoints_reaching("networks"), ["export"]);
    }

    #[test]
    fn fake_kernels_are_collected() {
        let summary = summarize(
            "import torch\n@torch.library.register_fake(\"ns::op\")\ndef _(x):\n    return x\n",
            "ops",
            false,
        );
        assert_eq!(summary.fake_kernels, vec!["ns::op".to_owned()]);
    }

    #[test]
    fn a_fake_kernel_registered_on_an_imported_op_counts_for_the_op() {
        let ops = summarize(
            "import torch\n@torch.library.custom_op(\"mylib::scale_add\", mutates_args=())\ndef scale_add(x, y, alpha):\n    return x * alpha + y\n",
            "myops.ops",
            false,
        );
        let fake = summarize(
            "import torch\nfrom .ops import scale_add\n@scale_add.register_fake\ndef _(x, y, alpha):\n    return torch.empty_like(x)\n",
            "myops.fake",
            false,
        );
        assert_eq!(
            ops.custom_ops,
            vec![("scale_add".to_owned(), "mylib::scale_add".to_owned())]
        );
        assert_eq!(fake.imported_fakes, vec!["myops.ops.scale_add".to_owned()]);
        let index = WorkspaceIndex::new(&[ops, fake]);
        assert!(index.has_fake_kernel("mylib::scale_add"));
    }

    #[test]
    fn the_parse_cache_parses_a_module_again_only_when_its_text_changed() {
        let cache = ParseCache::default();
        let first: Arc<str> = Arc::from("x = 1\n");
        let same: Arc<str> = Arc::from("x = 1\n");
        let edited: Arc<str> = Arc::from("x = 2\n");
        let tree = cache.parse("m", &first);
        assert!(Arc::ptr_eq(&tree, &cache.parse("m", &same)));
        assert_eq!(cache.parses(), 1);
        assert!(!Arc::ptr_eq(&tree, &cache.parse("m", &edited)));
        cache.parse("other", &first);
        assert_eq!(cache.parses(), 3);
        cache.forget("m");
        cache.parse("m", &edited);
        assert_eq!(cache.parses(), 4);
    }

    #[test]
    fn dependents_are_the_programs_of_the_entrypoints_that_reach_a_module() {
        let entry = summarize(
            "import torch\nfrom pkg.net import Net\nmodel = Net()\nexample_args = (torch.randn(2, 4),)\n",
            "export_net",
            false,
        );
        let other_entry = summarize(
            "import torch\nfrom pkg.solo import S\nmodel = S()\nexample_args = (torch.randn(2, 4),)\n",
            "other",
            false,
        );
        let net = summarize(
            "from .heads import Head\nfrom .helpers import f\n",
            "pkg.net",
            false,
        );
        let heads = summarize("import torch\n", "pkg.heads", false);
        let helpers = summarize("import torch\n", "pkg.helpers", false);
        let solo = summarize("import torch\n", "pkg.solo", false);
        let unrelated = summarize("import torch\n", "loose", false);
        let index =
            WorkspaceIndex::new(&[entry, other_entry, net, heads, helpers, solo, unrelated]);
        assert_eq!(
            index.dependents("pkg.heads"),
            ["export_net", "pkg.helpers", "pkg.net"]
        );
        assert_eq!(
            index.dependents("export_net"),
            ["pkg.heads", "pkg.helpers", "pkg.net"]
        );
        assert!(index.dependents("loose").is_empty());
    }

    #[test]
    fn the_modules_importing_a_module_are_those_whose_closure_reaches_it() {
        let files = [
            (
                "export_net",
                "import torch\nfrom pkg.net import Net\nmodel = Net()\nexample_args = (torch.randn(2, 4),)\n",
            ),
            ("other", "from pkg.solo import S\nmodel = S()\n"),
            ("pkg", ""),
            ("pkg.net", "from .heads import Head\n"),
            ("pkg.heads", "import torch\n"),
            ("pkg.solo", "import torch\n"),
            ("loose", "import torch\n"),
        ];
        let summaries: Vec<ModuleSummary> = files
            .iter()
            .map(|(module, text)| summarize(text, module, *module == "pkg"))
            .collect();
        let index = WorkspaceIndex::new(&summaries);
        // Relative imports resolved; the saved module first.
        assert_eq!(
            index.importing("pkg.heads", 100),
            ["pkg.heads", "export_net", "pkg.net"]
        );
        // A package's `__init__` runs before any of its submodules: whoever reaches one
        // reaches it.
        assert_eq!(
            index.importing("pkg", 100),
            [
                "pkg",
                "export_net",
                "other",
                "pkg.heads",
                "pkg.net",
                "pkg.solo"
            ]
        );
        assert_eq!(index.importing("loose", 100), ["loose"]);
        assert_eq!(index.importing("pkg.heads", 2).len(), 2);
        assert_eq!(index.importing("not.indexed", 100), ["not.indexed"]);
    }

    /// Texts in memory, as an editor's open buffers would give them.
    struct Texts(Mutex<FxHashMap<String, Arc<str>>>);

    impl Texts {
        fn of(files: &[(&str, &str)]) -> Self {
            Texts(Mutex::new(
                files
                    .iter()
                    .map(|(module, text)| ((*module).to_owned(), Arc::from(*text)))
                    .collect(),
            ))
        }
    }

    /// The summaries of `files` (module and text), `package` the one that is a package.
    fn summaries_of(files: &[(&str, &str)], package: &str) -> Vec<ModuleSummary> {
        files
            .iter()
            .map(|(module, text)| {
                let parsed = syntax::parse(text);
                let file = SourceFile {
                    text,
                    module: Some(module),
                    is_package: *module == package,
                    namespace: None,
                };
                summarize_parsed(&parsed.module.body, file)
            })
            .collect()
    }

    impl WorkspaceSources for Texts {
        fn source(&self, module: &str) -> Option<ModuleSource> {
            let text = self.0.lock().ok()?.get(module).cloned()?;
            Some(ModuleSource {
                text,
                is_package: module == "mymodels",
                path: PathBuf::from(format!("{}.py", module.replace('.', "/"))),
            })
        }
    }

    #[test]
    fn an_edit_to_one_file_of_a_program_parses_only_that_file_again() {
        let files = [
            (
                "export_net",
                "import torch\nfrom torch.export import Dim\nfrom mymodels.net import Net\nmodel = Net().eval()\nexample_args = (torch.randn(8, 16),)\ndynamic_shapes = {\"x\": {0: Dim(\"batch\")}}\n",
            ),
            ("mymodels", ""),
            (
                "mymodels.net",
                "from torch import nn\nfrom .heads import Head\nfrom .helpers import normalize\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.head = Head()\n    def forward(self, x):\n        return self.head(normalize(x))\n",
            ),
            ("mymodels.helpers", "def normalize(h):\n    return h\n"),
            (
                "mymodels.heads",
                "from torch import nn\nclass Head(nn.Module):\n    def forward(self, h):\n        if h.shape[0] > 4:\n            return h\n        return h.relu()\n",
            ),
        ];
        let summaries = summaries_of(&files, "mymodels");
        let texts = Arc::new(Texts::of(&files));
        let cache = Arc::new(ParseCache::default());
        let index = WorkspaceIndex::new(&summaries)
            .with_sources(Arc::clone(&texts) as Arc<dyn WorkspaceSources>)
            .with_parse_cache(Arc::clone(&cache));
        let check_heads = |text: &str| {
            let file = SourceFile {
                text,
                module: Some("mymodels.heads"),
                is_package: false,
                namespace: None,
            };
            crate::check_file(file, &crate::Settings::default(), &index)
                .diagnostics
                .iter()
                .map(|d| d.rule.code())
                .collect::<Vec<_>>()
        };
        let guarded = files[4].1;
        assert_eq!(check_heads(guarded), ["PT401"]);
        let first = cache.parses();
        assert_eq!(first, 5, "every file of the program, the entry included");
        // A keystroke in heads.py: its buffer changes, nothing else does. The checked text and
        // the program's copy of it are parsed once between them.
        let edited = guarded.replace("> 4", "> 5");
        texts
            .0
            .lock()
            .unwrap()
            .insert("mymodels.heads".to_owned(), Arc::from(edited.as_str()));
        assert_eq!(check_heads(&edited), ["PT401"]);
        assert_eq!(cache.parses(), first + 1);
        // The same text again: nothing to parse.
        assert_eq!(check_heads(&edited), ["PT401"]);
        assert_eq!(cache.parses(), first + 1);
    }

    /// Two entrypoints may reach `pkg.layers`; only `export_a`'s analysis enters it. Whether
    /// the entrypoints were checked before it or not, it gets the same diagnostics and the same
    /// related places.
    #[test]
    fn a_files_report_does_not_depend_on_which_files_were_checked_before_it() {
        let files = [
            (
                "export_a",
                "import torch\nfrom torch.export import Dim\nfrom pkg.net import Net\nmodel = Net().eval()\nexample_args = (torch.randn(8, 16),)\ndynamic_shapes = {\"x\": {0: Dim(\"batch\")}}\n",
            ),
            (
                "export_b",
                "import torch\nfrom torch.export import Dim\nfrom pkg.other import Small\nmodel = Small().eval()\nexample_args = (torch.randn(8, 16),)\ndynamic_shapes = {\"x\": {0: Dim(\"n\")}}\n",
            ),
            ("pkg", ""),
            (
                "pkg.net",
                "from torch import nn\nfrom .layers import Head\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.head = Head()\n    def forward(self, x):\n        return self.head(x)\n",
            ),
            (
                "pkg.other",
                "from torch import nn\nfrom .layers import count\nclass Small(nn.Module):\n    def forward(self, x):\n        return x * 2\ndef unused(x):\n    return count(x)\n",
            ),
            (
                "pkg.layers",
                "from torch import nn\nclass Head(nn.Module):\n    def forward(self, h):\n        if h.shape[0] > 4:\n            return h\n        return h.relu()\ndef count(x):\n    return int(x.shape[0])\n",
            ),
        ];
        let summaries = summaries_of(&files, "pkg");
        let index = || WorkspaceIndex::new(&summaries).with_sources(Arc::new(Texts::of(&files)));
        let check = |index: &WorkspaceIndex, at: usize| {
            let (module, text) = files[at];
            let file = SourceFile {
                text,
                module: Some(module),
                is_package: module == "pkg",
                namespace: None,
            };
            let report = crate::check_file(file, &crate::Settings::default(), index);
            format!("{:?}", report.diagnostics)
        };
        let layers = files.len() - 1;
        let alone = index();
        let first = check(&alone, layers);
        assert!(first.contains("DynamicDimGuard"), "{first}");
        assert!(crate::takes_part_in_program(&alone, "pkg.layers"));
        let entered_by_b = crate::entered_by(&alone, "export_b").expect("a program");
        let entered_by_b = entered_by_b.entered().expect("analysed");
        assert!(entered_by_b.contains("pkg.other") && !entered_by_b.contains("pkg.layers"));
        for order in [[0, 1], [1, 0]] {
            let after = index();
            for at in order {
                check(&after, at);
            }
            assert_eq!(check(&after, layers), first, "after checking {order:?}");
        }
    }

    /// `from module import *` binds what Python binds: `module`'s `__all__` when it lists its
    /// names, else its public module-level names, those it imports and star-imports itself
    /// included; a later binding of the same name replaces it; a cycle of star imports ends.
    /// Whether the entrypoint's model is found shows in `mymodels.net`'s report: its guard on the
    /// dynamic batch (PT401) when the entrypoint's analysis reaches it, else what the file
    /// alone finds there, a branch on a static size (PT402).
    #[test]
    fn a_star_import_binds_the_public_names_of_a_workspace_module() {
        const ENTRY: &str = "import torch\nfrom torch.export import Dim\nfrom mymodels.{from} import *\n{more}\
             torch.export.export({class}(4), (torch.randn(8, 16),), dynamic_shapes={\"x\": {0: Dim(\"batch\")}})\n";
        const NET: &str = "{head}from torch import nn\nclass {class}(nn.Module):\n    def __init__(self, limit):\n        \
             super().__init__()\n        self.limit = limit\n    def forward(self, x):\n        \
             if x.shape[0] > self.limit:\n            return x\n        return x.relu()\n";
        // Where `Net` is not bound, a second class of that name in `mymodels.api` keeps the
        // analysis from taking the one class of the name the program defines.
        const OTHER: &str = "import mymodels.api\n";
        const SAME: &str = "class {class}:\n    pass\n";
        // Imported from, what the entry adds, net's head, the class, api's text, what net gets.
        type Case<'c> = (&'c str, &'c str, &'c str, &'c str, &'c str, &'c [&'c str]);
        let cases: [Case<'_>; 8] = [
            ("net", "", "", "Net", "", &["PT401"]),
            ("net", "", "__all__ = [\"Net\"]\n", "Net", "", &["PT401"]),
            (
                "net",
                OTHER,
                "__all__ = (\"Other\",)\n",
                "Net",
                SAME,
                &["PT402"],
            ),
            (
                "net",
                "",
                "__all__ = [\"Other\"]\n__all__ += [\"Net\"]\n",
                "Net",
                "",
                &["PT401"],
            ),
            ("net", OTHER, "", "_Net", SAME, &["PT402"]),
            (
                "net",
                "def Net(limit):\n    return None\nimport mymodels.api\n",
                "",
                "Net",
                SAME,
                &["PT402"],
            ),
            ("api", "", "", "Net", "from .net import *\n", &["PT401"]),
            (
                "api",
                "",
                "from .api import *\n",
                "Net",
                "from .net import *\n",
                &["PT401"],
            ),
        ];
        for (from, more, head, class, api, expected) in cases {
            let entry = ENTRY
                .replace("{from}", from)
                .replace("{more}", more)
                .replace("{class}", class);
            let net = NET.replace("{head}", head).replace("{class}", class);
            let api = api.replace("{class}", class);
            let files = [
                ("export_net", entry.as_str()),
                ("mymodels", ""),
                ("mymodels.api", api.as_str()),
                ("mymodels.net", net.as_str()),
            ];
            let summaries = summaries_of(&files, "mymodels");
            let index = WorkspaceIndex::new(&summaries).with_sources(Arc::new(Texts::of(&files)));
            let file = SourceFile {
                text: &net,
                module: Some("mymodels.net"),
                is_package: false,
                namespace: None,
            };
            let codes: Vec<&str> = crate::check_file(file, &crate::Settings::default(), &index)
                .diagnostics
                .iter()
                .map(|d| d.rule.code())
                .collect();
            assert_eq!(codes, expected, "entry:\n{entry}\nnet:\n{net}\napi:\n{api}");
        }
    }
}
