//! The workspace index: the scan of the roots, each file's summary, the index built from
//! them, and the sources it reads other files' text from (open buffers first, then disk).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use pt2lsp_analyzer::{ModuleSummary, ParseCache, WorkspaceIndex};
use ropey::Rope;
use tower_lsp_server::ls_types::{self as lsp, MessageType};

use super::{Session, SettingsSource};
use crate::workspace::{self, Scope};
use pt2lsp_project::check;
use pt2lsp_project::libraries::{self, Libraries, LibrarySources};
use pt2lsp_project::table_programs::table_programs;
use pt2lsp_project::walk;

/// Files summarised per step of a workspace scan: small enough for steady progress reports and
/// for a newer scan to stop an older one soon, large enough to keep the scan threads busy.
const SCAN_CHUNK: usize = 256;
/// The summaries of the workspace's files, sorted by path so that the index never depends on
/// the order files were scanned in, and kept in one vector so the index is built from them
/// without a copy.
#[derive(Debug, Default)]
pub(super) struct Summaries {
    pub(super) paths: Vec<PathBuf>,
    pub(super) summaries: Vec<ModuleSummary>,
}

impl Summaries {
    /// Inserts or replaces one file's summary; true when it changed.
    fn insert(&mut self, path: PathBuf, summary: ModuleSummary) -> bool {
        match self.paths.binary_search(&path) {
            Ok(at) if self.summaries[at] == summary => false,
            Ok(at) => {
                self.summaries[at] = summary;
                true
            }
            Err(at) => {
                self.paths.insert(at, path);
                self.summaries.insert(at, summary);
                true
            }
        }
    }

    fn remove(&mut self, path: &Path) -> bool {
        let Ok(at) = self
            .paths
            .binary_search_by(|probe| probe.as_path().cmp(path))
        else {
            return false;
        };
        self.paths.remove(at);
        self.summaries.remove(at);
        true
    }

    fn retain(&mut self, mut keep: impl FnMut(&Path) -> bool) {
        let mut index = 0;
        let paths = &self.paths;
        self.summaries.retain(|_| {
            index += 1;
            keep(&paths[index - 1])
        });
        self.paths.retain(|path| keep(path));
        self.paths.shrink_to_fit();
        self.summaries.shrink_to_fit();
    }
}

/// The session's workspace part: what each root's project excludes, each file's summary, the
/// indexes built from them, the texts analyses read and the installed libraries. Shared (an
/// `Arc`) with the blocking tasks that summarise files and build the index: they hold this
/// part, not the session.
#[derive(Debug, Default)]
pub struct WorkspaceState {
    /// What each root's project excludes, as of the last scan of that root.
    scopes: RwLock<Vec<Scope>>,
    pub(super) summaries: RwLock<Summaries>,
    /// The indexes and the number of the rebuild that made them; a slower, older rebuild
    /// never replaces a newer one.
    index: RwLock<(u64, Arc<Namespaces>)>,
    index_builds: AtomicU64,
    /// Bumped by every workspace scan, so an older scan that finishes late is dropped.
    scan_generation: AtomicU64,
    /// The open documents' texts, which whole-program analysis reads before the disk.
    pub(super) buffers: Arc<Buffers>,
    /// Set when an edit changed a file's summary; the analysis that sees it rebuilds the index.
    pub(super) summaries_changed: AtomicBool,
    /// Other files' syntax trees, kept across index rebuilds until their text changes.
    parses: Arc<ParseCache>,
    /// The installed libraries entrypoints' analyses follow calls into, loaded by each scan.
    libraries: RwLock<Option<Arc<Libraries>>>,
    /// Roots added for files opened in a directory a folder's walk skips (a git-ignored
    /// `scratch/`): each is a project of its own, as `pt2lsp check` takes it
    /// (`walk::within_walk`), and a module namespace of its own.
    opened_projects: RwLock<Vec<PathBuf>>,
}

/// Where whole-program analysis reads other workspace files: an open document's current
/// text wins over the file on disk, so an unsaved edit to a helper changes the diagnostics of
/// the files that reach it. Texts are handed out as shared strings and kept: a buffer's for
/// its version, a file's until a watched-file change or its metadata says it changed, so the
/// analyzer's parse cache sees the same text again and does not parse it again.
#[derive(Debug, Default)]
pub(super) struct Buffers {
    /// Open documents' texts by path, with their versions.
    open: RwLock<HashMap<PathBuf, (i32, Rope)>>,
    /// Texts already handed out, by path, and where each came from.
    texts: Mutex<HashMap<PathBuf, (Origin, Arc<str>)>>,
}

/// Where a handed-out text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// An open document, at this version.
    Buffer(i32),
    /// The file on disk, with its modification time and size when it was read: a client
    /// without file watching still gets a file changed by another program read again.
    Disk(Option<SystemTime>, u64),
}

impl Origin {
    /// What the file on disk is now, by its metadata; `None` when it cannot be read.
    fn disk(path: &Path) -> Option<Self> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(Self::Disk(metadata.modified().ok(), metadata.len()))
    }
}

impl Buffers {
    /// Records an open document's text at `version` (on open and after every edit). Cheap: a
    /// rope's clone shares its nodes; the text is built only when an analysis asks for it.
    pub(super) fn set_open(&self, path: &Path, version: i32, rope: Rope) {
        if let Ok(mut open) = self.open.write() {
            open.insert(path.to_owned(), (version, rope));
        }
    }

    /// A closed document: the file on disk is what other files import again.
    pub(super) fn close(&self, path: &Path) {
        if let Ok(mut open) = self.open.write() {
            open.remove(path);
        }
        self.forget(path);
    }

    /// Whether an open document stands for `path`.
    fn is_open(&self, path: &Path) -> bool {
        self.open.read().is_ok_and(|open| open.contains_key(path))
    }

    /// Forgets the text kept for `path` (it changed on disk).
    pub(super) fn forget(&self, path: &Path) {
        if let Ok(mut texts) = self.texts.lock() {
            texts.remove(path);
        }
    }

    /// The text of `path` as analyses should see it: the open document's, else the disk's.
    fn text(&self, path: &Path) -> Option<Arc<str>> {
        let open = self
            .open
            .read()
            .ok()
            .and_then(|open| open.get(path).cloned());
        let origin = match &open {
            Some((version, _)) => Origin::Buffer(*version),
            None => Origin::disk(path)?,
        };
        if let Some(text) = self.texts.lock().ok().and_then(|texts| {
            texts
                .get(path)
                .filter(|(kept, _)| *kept == origin)
                .map(|(_, text)| Arc::clone(text))
        }) {
            return Some(text);
        }
        let text: Arc<str> = match open {
            Some((_, rope)) => Arc::from(rope.to_string()),
            None => Arc::from(std::fs::read_to_string(path).ok()?),
        };
        if let Ok(mut texts) = self.texts.lock() {
            texts.insert(path.to_owned(), (origin, Arc::clone(&text)));
        }
        Some(text)
    }
}

/// Related places are counted against the texts analyses read: an open document's, else the
/// file's on disk (a library's included).
impl crate::diagnostics::RelatedTexts for Buffers {
    fn text(&self, file: &Path) -> Option<Arc<str>> {
        Buffers::text(self, file)
    }
}

/// The workspace's modules, read through [`Buffers`], then the installed libraries' modules:
/// what the index hands the analyzer.
struct BufferSources {
    modules: HashMap<String, PathBuf>,
    buffers: Arc<Buffers>,
    libraries: Option<LibrarySources>,
    /// The modules of the entrypoint tables, by name: the configuration file and the text.
    tables: HashMap<String, (PathBuf, Arc<str>)>,
}

impl BufferSources {
    fn new(
        paths: &[PathBuf],
        summaries: &[ModuleSummary],
        buffers: Arc<Buffers>,
        libraries: Option<LibrarySources>,
    ) -> Self {
        Self {
            modules: paths
                .iter()
                .zip(summaries)
                .filter(|(_, summary)| !summary.module.is_empty())
                .map(|(path, summary)| (summary.module.clone(), path.clone()))
                .collect(),
            buffers,
            libraries,
            tables: HashMap::new(),
        }
    }
}

impl pt2lsp_analyzer::WorkspaceSources for BufferSources {
    fn source(&self, module: &str) -> Option<pt2lsp_analyzer::ModuleSource> {
        if let Some((path, text)) = self.tables.get(module) {
            return Some(pt2lsp_analyzer::ModuleSource {
                text: Arc::clone(text),
                is_package: false,
                path: path.clone(),
            });
        }
        let Some(path) = self.modules.get(module) else {
            return self.libraries.as_ref()?.source(module);
        };
        Some(pt2lsp_analyzer::ModuleSource {
            text: self.buffers.text(path)?,
            is_package: path.file_stem().is_some_and(|stem| stem == "__init__"),
            path: path.clone(),
        })
    }
}

impl WorkspaceState {
    /// The project `path` belongs to when it lies under one of `roots` in a directory that
    /// root's walk skips (see [`Session::adopt_project`]); `None` when the walk reads it, when
    /// it is under no root, or before the root's first scan. Blocking: lists directories.
    fn skipped_project(&self, path: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
        // A file the scan indexed is one a walk read: most opens stop here, listing nothing.
        let indexed = self.summaries.read().ok().is_some_and(|all| {
            all.paths
                .binary_search_by(|probe| probe.as_path().cmp(path))
                .is_ok()
        });
        if indexed {
            return None;
        }
        let directory = path.parent()?;
        let scopes = self.scopes.read().ok()?;
        let scope = scopes
            .iter()
            .filter(|scope| roots.contains(&scope.root) && path.starts_with(&scope.root))
            .max_by_key(|scope| scope.root.components().count())?;
        let skipped = scope.skipped_above(directory)?;
        Some(check::project_root(
            directory,
            None,
            scope.exclude(),
            directory,
        ))
        .filter(|project| project.starts_with(&skipped))
    }

    /// The dotted module name of a workspace file, from its summary; `None` for a file the
    /// scan did not index.
    pub(super) fn module_of(&self, path: &Path) -> Option<String> {
        let all = self.summaries.read().ok()?;
        let at = all
            .paths
            .binary_search_by(|probe| probe.as_path().cmp(path))
            .ok()?;
        Some(all.summaries[at].module.clone()).filter(|module| !module.is_empty())
    }

    /// The directories the index's namespaces are rooted at: the workspace's Python projects.
    pub(super) fn namespace_roots(&self) -> Vec<PathBuf> {
        self.index.read().map_or_else(
            |_| Vec::new(),
            |index| {
                index
                    .1
                    .spaces
                    .iter()
                    .filter_map(|space| space.root.clone())
                    .collect()
            },
        )
    }

    /// The index of the Python project `path` belongs to (the empty index for a buffer with
    /// no path, or before the first scan).
    pub fn index_of(&self, path: Option<&Path>) -> Arc<WorkspaceIndex> {
        self.index
            .read()
            .map(|index| index.1.of(path))
            .unwrap_or_default()
    }

    /// `path` and the workspace files that import it, directly or through others, by the
    /// import graph of its namespace's index: the same edges the static analysis's programs
    /// follow, so a save traces the entrypoints whose programs the edit changes. At most
    /// `limit` files; `path` alone for a file the scan has not indexed.
    pub(super) fn importing_files(&self, path: &Path, limit: usize) -> Vec<PathBuf> {
        let Some(module) = self.module_of(path) else {
            return vec![path.to_path_buf()];
        };
        let namespaces = match self.index.read() {
            Ok(index) => Arc::clone(&index.1),
            Err(_) => return vec![path.to_path_buf()],
        };
        let mut files = namespaces.importing(path, &module, limit);
        files.sort();
        files
    }

    /// Whether a file lies in an excluded part of a workspace root, so the index leaves it out.
    pub fn is_excluded(&self, path: &Path) -> bool {
        self.scopes
            .read()
            .is_ok_and(|scopes| scopes.iter().any(|scope| scope.excludes(path)))
    }

    /// Replaces one file's summary (drops it when `None`), with the file's namespace names
    /// ([`workspace::with_namespace_names`]); true when it changed. The caller rebuilds the
    /// index once after a batch of updates.
    pub fn update_summary(&self, path: &Path, summary: Option<ModuleSummary>) -> bool {
        let summary = summary.map(|summary| workspace::with_namespace_names(summary, path));
        let Ok(mut all) = self.summaries.write() else {
            return false;
        };
        match summary {
            Some(summary) => all.insert(path.to_owned(), summary),
            None => all.remove(path),
        }
    }

    /// Re-summarises files from disk (`None` for a deleted one), leaving out excluded ones;
    /// true when a summary changed. Blocking: reads the files.
    pub fn summarise_from_disk(&self, files: &[(PathBuf, bool)]) -> bool {
        let mut changed = false;
        for (path, deleted) in files {
            if self.is_excluded(path) {
                continue;
            }
            let summary = if *deleted {
                None
            } else {
                workspace::summarize_file(path)
            };
            changed |= self.update_summary(path, summary);
        }
        changed
    }

    pub fn forget_root(&self, root: &Path) {
        if let Ok(mut all) = self.summaries.write() {
            all.retain(|path| !path.starts_with(root));
        }
        if let Ok(mut scopes) = self.scopes.write() {
            scopes.retain(|scope| scope.root != root);
        }
    }

    /// Whether `fresh` scopes exclude other files than the current ones.
    fn scopes_differ(&self, fresh: &[Scope]) -> bool {
        self.scopes.read().map_or(true, |scopes| {
            scopes.len() != fresh.len()
                || scopes
                    .iter()
                    .zip(fresh)
                    .any(|(old, new)| !old.same_patterns(new))
        })
    }

    /// Installs a scan's scopes and summaries: all of them (`full`), or those under `roots`,
    /// keeping the other roots'.
    fn install_scan(
        &self,
        full: bool,
        roots: &[PathBuf],
        scopes: Vec<Scope>,
        summaries: Vec<(PathBuf, ModuleSummary)>,
    ) {
        if let (Ok(mut current), Ok(mut all)) = (self.scopes.write(), self.summaries.write()) {
            if full {
                *all = Summaries::default();
                current.clear();
            } else {
                all.retain(|path| !roots.iter().any(|root| path.starts_with(root)));
                current.retain(|scope| !roots.contains(&scope.root));
            }
            current.extend(scopes);
            for (path, summary) in summaries {
                all.insert(path, summary);
            }
        }
    }

    /// Builds the indexes from the current summaries and installs them unless a build that
    /// started later got there first. Blocking: a tenth of a second for a workspace as large
    /// as transformers.
    fn rebuild(&self, settings: &SettingsSource) {
        let Ok(all) = self.summaries.read() else {
            return;
        };
        // Numbered under the read lock: a later number always saw at least as new a set.
        let build = self.index_builds.fetch_add(1, Ordering::SeqCst) + 1;
        let libraries = self
            .libraries
            .read()
            .ok()
            .and_then(|libraries| libraries.clone());
        // One index per Python project under the folders, as `pt2lsp check` builds them:
        // `models.net` names one file in each.
        let paths: Vec<&Path> = all.paths.iter().map(PathBuf::as_path).collect();
        let opened = self
            .opened_projects
            .read()
            .map(|opened| opened.clone())
            .unwrap_or_default();
        let keys = walk::namespaces_within(&paths, &opened);
        let mut members: BTreeMap<Option<PathBuf>, (Vec<PathBuf>, Vec<ModuleSummary>)> =
            BTreeMap::new();
        for ((path, summary), key) in all.paths.iter().zip(&all.summaries).zip(&keys) {
            let (paths, summaries) = members.entry(key.clone()).or_default();
            paths.push(path.clone());
            summaries.push(summary.clone());
        }
        drop(all);
        let mut spaces: Vec<_> = members
            .into_iter()
            .map(|(root, (paths, mut summaries))| {
                let mut sources = BufferSources::new(
                    &paths,
                    &summaries,
                    Arc::clone(&self.buffers),
                    libraries.as_ref().map(Libraries::sources),
                );
                // The modules the project's entrypoint tables stand for, as `pt2lsp check`
                // adds them (`table_programs`). Blocking: reads `pyproject.toml`.
                let entrypoints = paths
                    .first()
                    .map(|path| settings.resolve(Some(path)).0.entrypoints)
                    .unwrap_or_default();
                for table in table_programs(&entrypoints) {
                    summaries.push(pt2lsp_analyzer::summarize(
                        &table.text,
                        &table.module,
                        false,
                    ));
                    sources
                        .tables
                        .insert(table.module, (table.path, Arc::from(table.text)));
                }
                let index = WorkspaceIndex::with_libraries(
                    &summaries,
                    libraries
                        .as_ref()
                        .map(|libraries| Arc::clone(&libraries.index)),
                )
                .with_sources(Arc::new(sources))
                .with_parse_cache(Arc::clone(&self.parses));
                let modules = summaries
                    .into_iter()
                    .map(|summary| summary.module)
                    .collect();
                (root, paths, modules, index)
            })
            .collect();
        // The namespaces of one project learn what the others' entrypoints import, as
        // `pt2lsp check` links them.
        let mut roots = walk::NamespaceRoots::with_boundaries(&opened);
        let mut projects: BTreeMap<Option<PathBuf>, Vec<&mut WorkspaceIndex>> = BTreeMap::new();
        for (_, paths, _, index) in &mut spaces {
            let project = paths.first().and_then(|path| roots.of(path));
            projects.entry(project).or_default().push(index);
        }
        for namespaces in projects.values_mut() {
            pt2lsp_analyzer::link_namespaces(namespaces);
        }
        let spaces = spaces
            .into_iter()
            .map(|(root, paths, modules, index)| (root, paths, modules, Arc::new(index)))
            .collect();
        let index = Namespaces::new(spaces);
        if let Ok(mut current) = self.index.write() {
            if build > current.0 {
                *current = (build, Arc::new(index));
            }
        }
    }
}

/// The scope of each root: what its project excludes, with the warnings reading the projects
/// gave. Blocking: reads `pyproject.toml`s.
fn scopes_of(settings: &SettingsSource, roots: &[PathBuf]) -> (Vec<Scope>, Vec<String>) {
    let mut warnings = Vec::new();
    let scopes = roots
        .iter()
        .map(|root| {
            let project = settings.projects.find(root, &mut |w| warnings.push(w));
            Scope::new(root, project.as_deref(), &mut |w| warnings.push(w))
        })
        .collect();
    (scopes, warnings)
}

/// The installed libraries the workspace imports, for the interpreter `root`'s settings name
/// (see `project::libraries`), with what to tell the user; `None` when none is named, when
/// `follow-libraries` is off, or when the workspace imports none. Blocking: may summarise a
/// library not yet in the cache.
fn load_libraries(
    settings: &SettingsSource,
    root: &Path,
    workspace: &WorkspaceState,
    pool: &rayon::ThreadPool,
) -> (Option<Arc<Libraries>>, Vec<(MessageType, String)>) {
    let (settings, warnings) = settings.resolve(Some(&root.join("pyproject.toml")));
    let mut said: Vec<(MessageType, String)> = warnings
        .into_iter()
        .map(|warning| (MessageType::WARNING, warning))
        .collect();
    if !settings.follow_libraries {
        return (None, said);
    }
    let project_dir = settings.project_dir();
    let Some(python) = pt2lsp_project::interpreter::configured_interpreter(
        None,
        settings.python.as_deref(),
        project_dir.as_deref(),
        std::env::var_os("VIRTUAL_ENV").as_deref().map(Path::new),
    ) else {
        return (None, said);
    };
    let sites = match libraries::site_packages(&python) {
        Ok(sites) => sites,
        Err(error) => {
            said.push((
                MessageType::WARNING,
                format!("calls into installed libraries are not followed: {error:#}"),
            ));
            return (None, said);
        }
    };
    let Some(imported) = workspace
        .summaries
        .read()
        .ok()
        .map(|all| libraries::imported_top_level(&all.summaries))
    else {
        return (None, said);
    };
    let cache = (!pt2lsp_tracer::cache::disabled_by_environment()).then(|| {
        pt2lsp_tracer::cache::TraceCache::in_project(
            project_dir.as_deref().unwrap_or(root),
            settings.cache_dir.as_deref(),
        )
        .dir()
        .to_path_buf()
    });
    let started = std::time::Instant::now();
    let loaded = libraries::load(&sites, imported, cache.as_deref(), pool);
    if loaded.index.is_empty() {
        return (None, said);
    }
    said.push((
        MessageType::INFO,
        format!(
            "following calls into installed {} ({} modules, {} summarised now, {:.2} s)",
            loaded.describe(),
            loaded.index.len(),
            loaded.summarised,
            started.elapsed().as_secs_f64()
        ),
    ));
    (Some(Arc::new(loaded)), said)
}

impl Session {
    /// After a watched-file change: forgets what was read from disk for `path` and, unless an
    /// open document stands for it, re-analyses the open documents that read it.
    pub fn file_changed(self: &Arc<Self>, path: &Path) {
        let workspace = &self.workspace;
        workspace.buffers.forget(path);
        if workspace.buffers.is_open(path) {
            return;
        }
        if let Some(module) = workspace.module_of(path) {
            if !path.exists() {
                // Deleted: its tree is no use to any program any more.
                workspace.parses.forget(&module);
            }
        }
        self.schedule_dependents(path, None);
    }

    /// After `path` was opened: when it lies in a directory that its folder's walk skips
    /// (git-ignored, hidden, excluded), that directory is a project of its own, as `pt2lsp
    /// check` takes it; it becomes a root, is scanned and indexed as its own namespace, so the
    /// file reads its siblings there, never the folder's modules of the same names. Files the
    /// folders' walks read, and files outside every folder, are left as they are.
    pub fn adopt_project(self: &Arc<Self>, path: &Path) {
        let session = Arc::clone(self);
        let path = path.to_path_buf();
        let roots = self.roots();
        let workspace = Arc::clone(&self.workspace);
        tokio::spawn(async move {
            let found =
                tokio::task::spawn_blocking(move || workspace.skipped_project(&path, &roots))
                    .await
                    .ok()
                    .flatten();
            let Some(project) = found else {
                return;
            };
            let mut roots = session.roots();
            if roots.contains(&project) {
                return;
            }
            roots.push(project.clone());
            session.set_roots(roots);
            if let Ok(mut opened) = session.workspace.opened_projects.write() {
                opened.push(project.clone());
            }
            session.log(
                MessageType::INFO,
                format!(
                    "{} is not read by its folder's walk: indexing it as a project of its own",
                    project.display()
                ),
            );
            session.scan(Some(vec![project])).await;
        });
    }

    /// Whether a changed `pyproject.toml` changed what the scan excludes.
    pub async fn scopes_changed(&self) -> bool {
        let settings = self.settings_source();
        let roots = self.roots();
        let Ok((fresh, warnings)) =
            tokio::task::spawn_blocking(move || scopes_of(&settings, &roots)).await
        else {
            return true;
        };
        for warning in warnings {
            self.log(MessageType::WARNING, warning);
        }
        self.workspace.scopes_differ(&fresh)
    }

    /// Scans `roots` (all workspace roots when `None`) and rebuilds the index, reporting
    /// progress when the client can show it. Summaries of files under other roots are kept.
    ///
    /// Files are read and summarised one at a time per thread and only their summaries kept,
    /// on one thread fewer than the machine has cores, so an edit's analysis always finds a
    /// core free while a large workspace is indexed. The blocking steps hold the settings'
    /// inputs and the workspace part, not the session.
    pub async fn scan(self: Arc<Self>, roots: Option<Vec<PathBuf>>) {
        let workspace = Arc::clone(&self.workspace);
        let generation = workspace.scan_generation.fetch_add(1, Ordering::SeqCst) + 1;
        let full = roots.is_none();
        let roots = roots.unwrap_or_else(|| self.roots());
        let progress = self.begin_progress(generation).await;
        let settings = self.settings_source();
        let walk_roots = roots.clone();
        let (scopes, warnings) =
            tokio::task::spawn_blocking(move || scopes_of(&settings, &walk_roots))
                .await
                .unwrap_or_default();
        for warning in warnings {
            self.log(MessageType::WARNING, warning);
        }
        let walked = scopes.clone();
        let files = tokio::task::spawn_blocking(move || {
            walked
                .iter()
                .flat_map(Scope::python_files)
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let threads = std::thread::available_parallelism()
            .map_or(1, |cores| cores.get().saturating_sub(1))
            .max(1);
        let pool = match rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|n| format!("pt2lsp-scan-{n}"))
            .stack_size(crate::THREAD_STACK_BYTES)
            .build()
        {
            Ok(pool) => Arc::new(pool),
            Err(error) => {
                self.log(
                    MessageType::ERROR,
                    format!("cannot start the workspace scan: {error}"),
                );
                self.scanned.send_replace(true);
                return;
            }
        };
        let current = |workspace: &WorkspaceState| {
            workspace.scan_generation.load(Ordering::SeqCst) == generation
        };
        let mut summaries = Vec::with_capacity(files.len());
        for (done, chunk) in files.chunks(SCAN_CHUNK).enumerate() {
            if !current(&workspace) {
                return;
            }
            let chunk = chunk.to_vec();
            let pool = Arc::clone(&pool);
            let summarised = tokio::task::spawn_blocking(move || {
                use rayon::prelude::*;
                pool.install(|| {
                    chunk
                        .into_par_iter()
                        .filter_map(|path| {
                            workspace::summarize_file(&path).map(|summary| (path, summary))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .await
            .unwrap_or_default();
            summaries.extend(summarised);
            if let Some(progress) = &progress {
                let scanned = ((done + 1) * SCAN_CHUNK).min(files.len());
                let percentage = (scanned * 100 / files.len().max(1)) as u32;
                progress
                    .report_with_message(format!("{scanned}/{} files", files.len()), percentage)
                    .await;
            }
        }
        if !current(&workspace) {
            return;
        }
        let count = summaries.len();
        workspace.install_scan(full, &roots, scopes, summaries);
        // The scan's threads summarise a library version not in the cache yet.
        let libraries = match self.roots().into_iter().next() {
            Some(root) => {
                let settings = self.settings_source();
                let loading = Arc::clone(&workspace);
                let (libraries, said) = tokio::task::spawn_blocking(move || {
                    load_libraries(&settings, &root, &loading, &pool)
                })
                .await
                .unwrap_or_default();
                for (kind, message) in said {
                    self.log(kind, message);
                }
                libraries
            }
            None => None,
        };
        if let Ok(mut current) = workspace.libraries.write() {
            *current = libraries;
        }
        self.rebuild_index().await;
        if let Some(progress) = progress {
            progress
                .finish_with_message(format!("{count} files indexed"))
                .await;
        }
        self.log(MessageType::INFO, format!("indexed {count} Python files"));
        self.scanned.send_replace(true);
        self.schedule_all();
        self.publish_configurations().await;
    }

    async fn begin_progress(
        &self,
        generation: u64,
    ) -> Option<
        tower_lsp_server::OngoingProgress<
            tower_lsp_server::Bounded,
            tower_lsp_server::NotCancellable,
        >,
    > {
        if !self.flags().work_done_progress {
            return None;
        }
        let token = lsp::NumberOrString::String(format!("pt2lsp/scan/{generation}"));
        self.client
            .create_work_done_progress(token.clone())
            .await
            .ok()?;
        Some(
            self.client
                .progress(token, "pt2lsp: indexing workspace")
                .with_percentage(0)
                .begin()
                .await,
        )
    }

    /// Builds the index from the current summaries, off the reactor, holding only the
    /// workspace part.
    pub async fn rebuild_index(&self) {
        let workspace = Arc::clone(&self.workspace);
        let settings = self.settings_source();
        let _ = tokio::task::spawn_blocking(move || workspace.rebuild(&settings)).await;
    }
}

/// The workspace's indexes, one per module namespace (`walk::namespaces`: each Python
/// project, and each directory of scripts that names a module another one names too).
#[derive(Debug, Default)]
pub struct Namespaces {
    spaces: Vec<Namespace>,
    /// Each indexed file's namespace, by index into `spaces`.
    of_path: HashMap<PathBuf, usize>,
}

/// A namespace as a rebuild makes it: its root, its files, their modules and its index.
type BuiltNamespace = (
    Option<PathBuf>,
    Vec<PathBuf>,
    Vec<String>,
    Arc<WorkspaceIndex>,
);

/// One module namespace: its root, its index, and the file of each of its modules.
#[derive(Debug)]
struct Namespace {
    root: Option<PathBuf>,
    index: Arc<WorkspaceIndex>,
    files: HashMap<String, PathBuf>,
}

impl Namespaces {
    fn new(built: Vec<BuiltNamespace>) -> Self {
        let mut namespaces = Self::default();
        for (at, (root, paths, modules, index)) in built.into_iter().enumerate() {
            namespaces
                .of_path
                .extend(paths.iter().map(|path| (path.clone(), at)));
            namespaces.spaces.push(Namespace {
                root,
                index,
                files: modules.into_iter().zip(paths).collect(),
            });
        }
        namespaces
    }

    /// The files of `module` and of the modules of its namespace that import it (see
    /// [`WorkspaceIndex::importing`]), `path` being `module`'s; at most `limit`.
    fn importing(&self, path: &Path, module: &str, limit: usize) -> Vec<PathBuf> {
        let Some(space) = self.of_path.get(path).map(|&at| &self.spaces[at]) else {
            return vec![path.to_path_buf()];
        };
        space
            .index
            .importing(module, limit)
            .iter()
            .filter_map(|module| space.files.get(module).cloned())
            .collect()
    }

    /// The index of `path`'s namespace: the one it was indexed in, else (a file the scan has
    /// not indexed yet) the deepest namespace holding it; files outside every project share the
    /// rootless one.
    pub fn of(&self, path: Option<&Path>) -> Arc<WorkspaceIndex> {
        let Some(path) = path else {
            return Arc::default();
        };
        if let Some(&at) = self.of_path.get(path) {
            return Arc::clone(&self.spaces[at].index);
        }
        self.spaces
            .iter()
            .filter(|space| {
                space
                    .root
                    .as_ref()
                    .is_none_or(|root| path.starts_with(root))
            })
            .max_by_key(|space| {
                space
                    .root
                    .as_ref()
                    .map_or(0, |root| root.components().count())
            })
            .map(|space| Arc::clone(&space.index))
            .unwrap_or_default()
    }
}
