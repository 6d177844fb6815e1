//! Installed libraries for whole-program analysis: the configured interpreter's site-packages,
//! the distributions there that the workspace imports and that are built on torch, and their
//! modules' summaries, cached by distribution name and version.
//!
//! A distribution is followed when its metadata requires torch (any extra counts:
//! transformers lists torch as one) and the workspace, or a library already followed, imports
//! one of its top-level modules. torch itself is the analyzer's catalogue and is never read;
//! an editable install is the user's own code and is left to the workspace.
//!
//! Summarising transformers' 3,000 files takes most of a second; the summaries are written to
//! `libraries-v<format>/<name>-<version>.json` in the cache directory and read back in
//! milliseconds while that version stays installed. The analyzer reads no file: library texts
//! reach it through [`LibrarySources`], which reads a module's file the first time an
//! entrypoint's analysis asks for it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};
use pt2lsp_analyzer::{
    Distribution, LibraryIndex, ModuleSource, ModuleSummary, SUMMARY_FORMAT, SourceFile,
    WorkspaceSources,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Distributions that are never followed: torch is what the catalogue describes, and its
/// build companions hold no model code.
const NEVER_FOLLOWED: [&str; 4] = ["torch", "triton", "functorch", "torchgen"];

/// The installed libraries a check follows calls into: their index and where their files are.
#[derive(Debug, Default)]
pub struct Libraries {
    pub index: Arc<LibraryIndex>,
    /// Each library module's file and whether it is a package's `__init__.py`.
    files: HashMap<String, (PathBuf, bool)>,
    /// How many of them were summarised now rather than read from the cache.
    pub summarised: usize,
}

impl Libraries {
    /// A reader of the libraries' module texts for the analysis.
    pub fn sources(self: &Arc<Self>) -> LibrarySources {
        LibrarySources {
            libraries: Arc::clone(self),
            texts: Mutex::default(),
        }
    }
}

/// Reads library modules' texts on demand, each once.
pub struct LibrarySources {
    libraries: Arc<Libraries>,
    texts: Mutex<HashMap<String, Option<Arc<str>>>>,
}

impl WorkspaceSources for LibrarySources {
    fn source(&self, module: &str) -> Option<ModuleSource> {
        let (path, is_package) = self.libraries.files.get(module)?;
        let read = || fs::read_to_string(path).ok().map(Arc::<str>::from);
        let text = match self.texts.lock() {
            Ok(mut texts) => texts.entry(module.to_owned()).or_insert_with(read).clone(),
            Err(_) => read(),
        }?;
        Some(ModuleSource {
            text,
            is_package: *is_package,
            path: path.clone(),
        })
    }
}

/// The site-packages directories of `python`, found from where it is installed, never by
/// running it: static analysis runs no program, and an untrusted project's interpreter must
/// not start for it. A virtual environment (`<env>/bin/python` beside `<env>/pyvenv.cfg`)
/// and an installation prefix (`<prefix>/bin/python3`, through its symbolic links) keep their
/// libraries in `lib/python3.X/site-packages` (`dist-packages` on Debian, `Lib/site-packages`
/// on Windows).
pub fn site_packages(python: &Path) -> Result<Vec<PathBuf>> {
    let mut prefixes: Vec<PathBuf> = Vec::new();
    for interpreter in [Some(python.to_path_buf()), fs::canonicalize(python).ok()]
        .into_iter()
        .flatten()
    {
        // `<prefix>/bin/python`, or `<prefix>\python.exe` on Windows.
        for prefix in [
            interpreter.parent().and_then(Path::parent),
            interpreter.parent(),
        ]
        .into_iter()
        .flatten()
        {
            if !prefixes.iter().any(|known| known == prefix) {
                prefixes.push(prefix.to_path_buf());
            }
        }
    }
    let mut found: Vec<PathBuf> = Vec::new();
    for prefix in &prefixes {
        for lib in ["lib", "lib64"] {
            let Ok(entries) = fs::read_dir(prefix.join(lib)) else {
                continue;
            };
            let mut versions: Vec<PathBuf> = entries
                .flatten()
                .filter(|entry| entry.file_name().to_string_lossy().starts_with("python3"))
                .map(|entry| entry.path())
                .collect();
            versions.sort();
            for version in versions {
                for packages in ["site-packages", "dist-packages"] {
                    let dir = version.join(packages);
                    if dir.is_dir() {
                        found.push(dir);
                    }
                }
            }
        }
        let windows = prefix.join("Lib").join("site-packages");
        if windows.is_dir() {
            found.push(windows);
        }
    }
    found.dedup_by(|a, b| same_directory(a, b));
    if found.is_empty() {
        bail!(
            "no site-packages directory beside {} (looked in lib/python3.*/ under {})",
            python.display(),
            prefixes
                .iter()
                .map(|prefix| prefix.display().to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        );
    }
    Ok(found)
}

fn same_directory(a: &Path, b: &Path) -> bool {
    a == b || fs::canonicalize(a).ok() == fs::canonicalize(b).ok()
}

/// One distribution installed in a site-packages directory.
#[derive(Debug, Clone)]
struct Installed {
    distribution: Distribution,
    site: PathBuf,
    /// Its Python files, relative to `site`, from the `RECORD`.
    files: Vec<PathBuf>,
    /// The top-level modules it installs.
    top_level: BTreeSet<String>,
}

/// The torch-based, non-editable distributions installed in `sites`, by top-level module.
fn installed(sites: &[PathBuf]) -> Vec<Installed> {
    let mut found = Vec::new();
    for site in sites {
        let Ok(entries) = fs::read_dir(site) else {
            continue;
        };
        for entry in entries.flatten() {
            let dist_info = entry.path();
            if dist_info.extension().is_none_or(|ext| ext != "dist-info") {
                continue;
            }
            if let Some(installed) = read_distribution(site, &dist_info) {
                found.push(installed);
            }
        }
    }
    found.sort_by(|a, b| a.distribution.name.cmp(&b.distribution.name));
    found
}

fn read_distribution(site: &Path, dist_info: &Path) -> Option<Installed> {
    let metadata = fs::read_to_string(dist_info.join("METADATA")).ok()?;
    let (name, version, requires_torch) = parse_metadata(&metadata)?;
    if NEVER_FOLLOWED.contains(&normalise(&name).as_str()) || !requires_torch {
        return None;
    }
    // An editable install points at the user's own tree, which the workspace already holds.
    let editable = fs::read_to_string(dist_info.join("direct_url.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|url| url["dir_info"]["editable"] == serde_json::Value::Bool(true));
    if editable {
        return None;
    }
    let record = fs::read_to_string(dist_info.join("RECORD")).ok()?;
    let files: Vec<PathBuf> = record
        .lines()
        .filter_map(|line| line.split(',').next())
        .filter(|path| {
            Path::new(path).extension().is_some_and(|ext| ext == "py")
                && !path.starts_with("..")
                && !path.starts_with('/')
                && !path.contains(".dist-info/")
        })
        .map(PathBuf::from)
        .collect();
    let top_level = files
        .iter()
        .filter_map(|path| {
            let first = path.components().next()?.as_os_str().to_str()?;
            Some(first.strip_suffix(".py").unwrap_or(first).to_owned())
        })
        .collect();
    Some(Installed {
        distribution: Distribution { name, version },
        site: site.to_path_buf(),
        files,
        top_level,
    })
}

/// The name, the version and whether any requirement (under any extra) is torch.
fn parse_metadata(metadata: &str) -> Option<(String, String, bool)> {
    let mut name = None;
    let mut version = None;
    let mut requires_torch = false;
    // The headers end at the first empty line; the description follows.
    for line in metadata.lines().take_while(|line| !line.is_empty()) {
        if let Some(value) = line.strip_prefix("Name:") {
            name = Some(value.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("Version:") {
            version = Some(value.trim().to_owned());
        } else if let Some(requirement) = line.strip_prefix("Requires-Dist:") {
            let requirement = requirement.trim();
            let end = requirement
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
                .unwrap_or(requirement.len());
            requires_torch |= normalise(&requirement[..end]) == "torch";
        }
    }
    Some((name?, version?, requires_torch))
}

/// A distribution name as PEP 503 compares them.
fn normalise(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// A dotted module name for a file of a distribution: `timm/layers/mlp.py` is `timm.layers.mlp`,
/// a package's `__init__.py` its package.
fn module_of(relative: &Path) -> Option<(String, bool)> {
    let mut parts: Vec<&str> = relative
        .components()
        .map(|part| part.as_os_str().to_str())
        .collect::<Option<_>>()?;
    let last = parts.pop()?.strip_suffix(".py")?;
    let is_package = last == "__init__";
    if !is_package {
        parts.push(last);
    }
    if parts.is_empty()
        || parts
            .iter()
            .any(|part| part.contains('.') || part.contains('-'))
    {
        return None;
    }
    Some((parts.join("."), is_package))
}

/// One distribution's summaries as cached.
#[derive(Serialize, Deserialize)]
struct CachedSummaries {
    format: u32,
    /// The pt2lsp that wrote it: a new build may summarise differently.
    pt2lsp: String,
    name: String,
    version: String,
    summaries: Vec<ModuleSummary>,
}

/// The installed libraries that the workspace's `imported` top-level modules reach, with
/// every module's summary, from `cache_dir` when a summary of the same distribution version
/// is there (and written there when not, unless `cache_dir` is `None`).
pub fn load(
    sites: &[PathBuf],
    imported: impl IntoIterator<Item = String>,
    cache_dir: Option<&Path>,
    pool: &rayon::ThreadPool,
) -> Libraries {
    let available = installed(sites);
    let mut wanted: HashSet<String> = imported.into_iter().collect();
    let mut chosen: Vec<usize> = Vec::new();
    let mut loaded: Vec<(Distribution, Vec<ModuleSummary>)> = Vec::new();
    let mut files = HashMap::new();
    let mut summarised = 0;
    // Libraries import libraries (timm imports torchvision): follow until nothing new.
    loop {
        let next: Vec<usize> = (0..available.len())
            .filter(|index| !chosen.contains(index))
            .filter(|&index| {
                available[index]
                    .top_level
                    .iter()
                    .any(|top| wanted.contains(top))
            })
            .collect();
        if next.is_empty() {
            break;
        }
        for index in next {
            chosen.push(index);
            let installed = &available[index];
            let modules: Vec<(String, bool, PathBuf)> = installed
                .files
                .iter()
                .filter_map(|relative| {
                    let (module, is_package) = module_of(relative)?;
                    Some((module, is_package, installed.site.join(relative)))
                })
                .collect();
            let summaries = if let Some(cached) = read_cached(cache_dir, &installed.distribution) {
                cached
            } else {
                summarised += 1;
                let summaries = summarise(&modules, pool);
                if let Some(dir) = cache_dir {
                    // A cache that cannot be written costs the next run the same time,
                    // nothing else.
                    let _ = write_cached(dir, &installed.distribution, &summaries);
                }
                summaries
            };
            for summary in &summaries {
                for imported in summary.imported_modules.iter().chain(&summary.star_imports) {
                    let top = imported.split('.').next().unwrap_or_default();
                    if !wanted.contains(top) {
                        wanted.insert(top.to_owned());
                    }
                }
            }
            for (module, is_package, path) in modules {
                files.entry(module).or_insert((path, is_package));
            }
            loaded.push((installed.distribution.clone(), summaries));
        }
    }
    Libraries {
        index: Arc::new(LibraryIndex::new(&loaded)),
        files,
        summarised,
    }
}

impl Libraries {
    /// The distributions followed, for the user: `transformers 5.23.0, timm 1.0.31`.
    pub fn describe(&self) -> String {
        self.index
            .distributions()
            .iter()
            .map(|d| format!("{} {}", d.name, d.version))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn summarise(modules: &[(String, bool, PathBuf)], pool: &rayon::ThreadPool) -> Vec<ModuleSummary> {
    pool.install(|| {
        modules
            .par_iter()
            .filter_map(|(module, is_package, path)| {
                let text = fs::read_to_string(path).ok()?;
                let mut summary = pt2lsp_analyzer::summarize_file(SourceFile {
                    text: &text,
                    module: Some(module),
                    is_package: *is_package,
                    namespace: None,
                });
                // A library file is never an entrypoint of the user's project.
                summary.is_entrypoint = false;
                Some(summary)
            })
            .collect()
    })
}

fn cache_file(dir: &Path, distribution: &Distribution) -> PathBuf {
    let safe = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+') {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    dir.join(format!("libraries-v{SUMMARY_FORMAT}"))
        .join(format!(
            "{}-{}.json",
            safe(&distribution.name),
            safe(&distribution.version)
        ))
}

fn read_cached(dir: Option<&Path>, distribution: &Distribution) -> Option<Vec<ModuleSummary>> {
    let text = fs::read(cache_file(dir?, distribution)).ok()?;
    let cached: CachedSummaries = serde_json::from_slice(&text).ok()?;
    (cached.format == SUMMARY_FORMAT
        && cached.pt2lsp == env!("CARGO_PKG_VERSION")
        && cached.name == distribution.name
        && cached.version == distribution.version)
        .then_some(cached.summaries)
}

fn write_cached(
    dir: &Path,
    distribution: &Distribution,
    summaries: &[ModuleSummary],
) -> std::io::Result<()> {
    let path = cache_file(dir, distribution);
    super::prepare_cache_directory(dir)?;
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let cached = CachedSummaries {
        format: SUMMARY_FORMAT,
        pt2lsp: env!("CARGO_PKG_VERSION").to_owned(),
        name: distribution.name.clone(),
        version: distribution.version.clone(),
        summaries: summaries.to_vec(),
    };
    // Written aside and renamed: two checks sharing the directory never read half a file.
    let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let written = fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(&serde_json::to_vec(&cached).map_err(std::io::Error::other)?)
    });
    let renamed = written.and_then(|()| fs::rename(&temporary, &path));
    if renamed.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    renamed
}

/// The top-level modules a project's summaries import and do not define themselves: the
/// roots from which libraries are chosen. A package of the project shadows an installed one
/// of the same name.
pub fn imported_top_level<'s>(
    summaries: impl IntoIterator<Item = &'s ModuleSummary> + Clone,
) -> HashSet<String> {
    let top = |module: &'s str| module.split('.').next().unwrap_or_default();
    let own: HashSet<&str> = summaries
        .clone()
        .into_iter()
        .map(|summary| top(&summary.module))
        .collect();
    summaries
        .into_iter()
        .flat_map(|summary| summary.imported_modules.iter().chain(&summary.star_imports))
        .map(|module| top(module))
        .filter(|module| !own.contains(module))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_gives_the_name_the_version_and_a_torch_requirement_under_any_extra() {
        let transformers = "Metadata-Version: 2.1\nName: transformers\nVersion: 5.23.0\n\
            Requires-Dist: numpy>=1.17\nRequires-Dist: torch>=2.6; extra == \"torch\"\n\n\
            Requires-Dist: torch is in the description, not a header\n";
        assert_eq!(
            parse_metadata(transformers),
            Some(("transformers".into(), "5.23.0".into(), true))
        );
        let torchvision = "Name: torchvision\nVersion: 0.29.2\nRequires-Dist: torch (>=2.14.0)\n";
        assert_eq!(parse_metadata(torchvision).map(|m| m.2), Some(true));
        // `torchaudio` and `torch-geometric` are other distributions than torch.
        let other =
            "Name: x\nVersion: 1\nRequires-Dist: torchaudio\nRequires-Dist: torch-geometric\n";
        assert_eq!(parse_metadata(other).map(|m| m.2), Some(false));
        let description_only = "Name: y\nVersion: 1\n\nRequires-Dist: torch\n";
        assert_eq!(parse_metadata(description_only).map(|m| m.2), Some(false));
        assert_eq!(parse_metadata("Version: 1\n"), None);
    }

    #[test]
    fn site_packages_are_found_beside_the_interpreter_without_running_it() {
        let root = tempfile::tempdir().unwrap();
        let make = |path: &str| {
            let path = root.path().join(path);
            fs::create_dir_all(&path).unwrap();
            path
        };
        // A virtual environment; its `python` is a file that could not run.
        let venv_site = make("venv/lib/python3.11/site-packages");
        make("venv/bin");
        fs::write(root.path().join("venv/pyvenv.cfg"), "version = 3.11\n").unwrap();
        fs::write(root.path().join("venv/bin/python"), "not a program").unwrap();
        assert_eq!(
            site_packages(&root.path().join("venv/bin/python")).unwrap(),
            [venv_site]
        );
        // Nothing beside it: an error that says where it looked.
        let error = site_packages(&root.path().join("nowhere/bin/python"))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("no site-packages directory beside"),
            "{error}"
        );
    }

    #[test]
    #[cfg(unix)]
    fn an_interpreter_reached_through_a_symbolic_link_has_its_prefix_libraries() {
        let root = tempfile::tempdir().unwrap();
        // An installation prefix with Debian's layout.
        let dist = root.path().join("usr/lib/python3.12/dist-packages");
        fs::create_dir_all(&dist).unwrap();
        fs::create_dir_all(root.path().join("usr/bin")).unwrap();
        fs::create_dir_all(root.path().join("links")).unwrap();
        fs::write(root.path().join("usr/bin/python3.12"), "").unwrap();
        let link = root.path().join("links/python3");
        std::os::unix::fs::symlink(root.path().join("usr/bin/python3.12"), &link).unwrap();
        let found = site_packages(&link).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(same_directory(&found[0], &dist), "{found:?}");
    }

    #[test]
    fn record_paths_become_module_names() {
        assert_eq!(
            module_of(Path::new("timm/layers/mlp.py")),
            Some(("timm.layers.mlp".into(), false))
        );
        assert_eq!(
            module_of(Path::new("timm/layers/__init__.py")),
            Some(("timm.layers".into(), true))
        );
        assert_eq!(module_of(Path::new("six.py")), Some(("six".into(), false)));
        assert_eq!(module_of(Path::new("timm/data/readme.txt")), None);
        assert_eq!(module_of(Path::new("pkg-1.0/setup.py")), None);
    }
}
