//! The rule pages that diagnostics and hovers link to, written from the binary's own
//! documentation: a link always opens, offline, the page of the version that reported the
//! diagnostic, whatever repository or website exists.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pt2lsp_analyzer::Rule;
use tower_lsp_server::ls_types::Uri;

/// Where this process wrote the pages, or `None` when it could not.
static DIRECTORY: OnceLock<Option<PathBuf>> = OnceLock::new();

/// The directory of the pages, written on first use.
fn directory() -> Option<&'static Path> {
    DIRECTORY.get_or_init(write_pages).as_deref()
}

/// The user's cache directory: `$XDG_CACHE_HOME`, else `~/.cache` (`%LOCALAPPDATA%` on
/// Windows). Not the temporary directory, which the server leaves as it found it.
fn cache_home() -> Option<PathBuf> {
    let from = |name: &str| {
        std::env::var_os(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    from("XDG_CACHE_HOME")
        .or_else(|| from("HOME").map(|home| home.join(".cache")))
        .or_else(|| from("LOCALAPPDATA"))
}

/// Writes each rule's page (the same text as the repository's `docs/rules/`) under the user's
/// cache directory, in a directory per version. A page already there with the same text is
/// left alone; another is replaced whole, so an editor never opens half a page.
fn write_pages() -> Option<PathBuf> {
    let dir = cache_home()?
        .join("pt2lsp")
        .join(format!("rules-{}", env!("CARGO_PKG_VERSION")));
    std::fs::create_dir_all(&dir).ok()?;
    for rule in Rule::ALL {
        let path = dir.join(format!("{}.md", rule.code()));
        let page = rule.page();
        if std::fs::read_to_string(&path).ok().as_deref() != Some(page.as_str()) {
            let partial = dir.join(format!(".{}.md.{}", rule.code(), std::process::id()));
            std::fs::write(&partial, &page).ok()?;
            std::fs::rename(&partial, &path).ok()?;
        }
    }
    Some(dir)
}

/// The link to `rule`'s page, or `None` when the pages could not be written: no link is better
/// than one that does not open.
pub fn url(rule: Rule) -> Option<Uri> {
    Uri::from_file_path(directory()?.join(format!("{}.md", rule.code())))
}
