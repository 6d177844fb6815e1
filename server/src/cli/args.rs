//! The command-line grammar (clap derive); `--help` is generated from the doc comments here.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cli::output::OutputFormat;
use crate::cli::shard::Shard;
use pt2lsp_tracer::targets::DeploymentTarget;
use pt2lsp_tracer::worker::StartMethod;

const ABOUT: &str = "Tell whether torch.export will accept your PyTorch model, and why not.";

const LONG_ABOUT: &str = "\
Tell whether torch.export will accept your PyTorch model, and why not.

pt2lsp reads Python source and reports every construct that torch.export rejects or silently \
specialises (data-dependent branches, .item() in control flow, custom ops without fake \
kernels, ...) on the exact line, without running the model.";

const AFTER_HELP: &str = "\
`pt2lsp --check PATH...` is the same as `pt2lsp check PATH...`.

Examples:
  pt2lsp check                       Check every Python file under the current directory
  pt2lsp check models/ --format json Machine-readable report of one directory
  pt2lsp check --select PT1 --strict Only the data-dependence rules, for strict export
  pt2lsp check --watch models/       Check again on every save, until Ctrl-C
  pt2lsp check --trace models/       Also run torch.export on the models' entrypoints
  pt2lsp export models/net.py        Write models/net.pt2 and check it against eager
  pt2lsp check --fix models/         Apply the safe fixes, then report what remains
  pt2lsp check --diff --unsafe-fixes Show every fix as a diff, write nothing
  pt2lsp rule                        List the rules
  pt2lsp rule PT101                  Explain a rule

Exit status: 0 when no error was found, 1 when one was, 2 on a usage or I/O problem.";

/// `pt2lsp`: a checker for `torch.export` problems, on the command line and in editors.
#[derive(Debug, Parser)]
#[command(
    name = "pt2lsp",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    arg_required_else_help = true,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check Python files and report every problem torch.export would have with them.
    #[command(after_help = CHECK_AFTER_HELP)]
    Check(CheckArgs),
    /// List the rules, or explain one: what it finds, why export fails, and how to fix it.
    #[command(after_help = RULE_AFTER_HELP)]
    Rule(RuleArgs),
    /// Run the language server over stdin and stdout, for editors.
    Serve,
    /// Export a model with torch.export to a .pt2 file, then load it back and check it against
    /// the eager model.
    #[command(after_help = EXPORT_AFTER_HELP)]
    Export(ExportArgs),
    /// Merge the JSON or SARIF reports of `check --shard K/N` into the one report the unsharded
    /// check would print.
    #[command(after_help = MERGE_AFTER_HELP)]
    Merge(MergeArgs),
}

const MERGE_AFTER_HELP: &str = "\
Each shard analyses every file and traces its own entrypoints: a static finding is in every \
shard's report, a traced one in one. The merged report keeps each finding once (the traced one \
where a shard has it), ordered as `check` orders them, in the inputs' format, on stdout.

Examples:
  pt2lsp check --trace --shard 1/2 --format sarif > shard-1.sarif
  pt2lsp check --trace --shard 2/2 --format sarif > shard-2.sarif
  pt2lsp merge shard-1.sarif shard-2.sarif > pt2lsp.sarif

Exit status: 0 when the merged report holds no error, 1 when it does, 2 when a report cannot be \
read or the formats differ.";

/// Options of `pt2lsp merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' reports, all JSON (`--format json`) or all SARIF (`--format sarif`).
    #[arg(value_name = "REPORT", required = true)]
    pub reports: Vec<PathBuf>,
}

const EXPORT_AFTER_HELP: &str = "\
The entrypoint is the file's own (module-level `model` and `example_args`, optional \
`example_kwargs`, `dynamic_shapes`, `strict`; named `model`) or a [[tool.pt2lsp.entrypoints]] \
table whose `model` lives in FILE (named by its `name`). This runs the project's code, in its \
own Python, in a separate process.

The file is written to a temporary name beside OUT and renamed onto it, then loaded back with \
torch.export.load and run on the example inputs against the eager model.

Exit status: 0 when the file was written and matches the eager model, 1 when the model does not \
export (its problems are printed like `check --trace`) or the written program disagrees with \
eager, 2 on a usage or setup problem (no such entrypoint, no Python with torch).";

/// Options of `pt2lsp export`.
#[derive(Debug, Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each bool is one on/off command-line flag"
)]
pub struct ExportArgs {
    /// The Python file whose entrypoint to export.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The entrypoint to export: `model` for the file's own, or the `name` of a
    /// [[tool.pt2lsp.entrypoints]] table [default: the file's own, else its only one].
    #[arg(long, value_name = "NAME")]
    pub entry: Option<String>,

    /// Where to write the .pt2 file; a directory means the default name in it [default:
    /// <stem>.pt2 beside FILE, or in `out-dir` from pyproject.toml; <name>.pt2 for a configured
    /// entrypoint].
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,

    /// The Python interpreter with torch [default: `python` from pyproject.toml, else the Python
    /// pt2lsp was pip-installed into, else $VIRTUAL_ENV/bin/python, else python3].
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<PathBuf>,

    /// Seconds the export may take before it is reported (PT502) and killed [default:
    /// `timeout` from pyproject.toml, else 60].
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub timeout: Option<f64>,

    /// Address space, in MiB, the export may map beyond the warmed-up worker's own [default:
    /// the machine's memory].
    #[arg(long, value_name = "MIB")]
    pub memory_limit: Option<u64>,

    /// How the tracer starts the process that exports: `fork` (a warm process forked, the
    /// default on Linux) or `spawn` (a fresh process, the default on macOS and Windows, where
    /// forking after importing torch is unsafe) [default: `start-method` from pyproject.toml].
    #[arg(long, value_name = "METHOD", value_parser = start_method)]
    pub start_method: Option<StartMethod>,

    /// Export with strict=True (TorchDynamo), whatever pyproject.toml says.
    #[arg(long, overrides_with = "no_strict")]
    pub strict: bool,

    /// Export with the default non-strict mode, whatever pyproject.toml says.
    #[arg(long, overrides_with = "strict")]
    pub no_strict: bool,

    /// Write this deployment target's artefact instead of the .pt2: `onnx` (a .onnx file, run
    /// with onnxruntime), `aoti` (an AOTInductor package, <stem>.aoti.pt2), `executorch` (a .pte,
    /// XNNPACK-delegated, run with ExecuTorch's runtime); each is checked against eager on the
    /// example inputs. A lowering that fails gets its diagnostics instead.
    #[arg(long = "target", value_name = "TARGET", value_parser = artefact_target)]
    pub target: Option<DeploymentTarget>,

    /// Write the .pt2 even when the exported program disagrees with the eager model (PT601: a
    /// Python value frozen by the export, or the check of the written file); the disagreement
    /// is still reported, and the exit status is 0.
    #[arg(long)]
    pub allow_divergence: bool,

    /// text for people; json prints one object (the report, or the diagnostics).
    #[arg(long = "output-format", visible_alias = "format", value_enum, default_value_t = ExportFormat::Text)]
    pub format: ExportFormat,

    /// Read configuration from this file instead of searching for pyproject.toml.
    #[arg(long, value_name = "FILE", conflicts_with = "isolated")]
    pub config: Option<PathBuf>,

    /// Ignore every configuration file; use only the command line.
    #[arg(long)]
    pub isolated: bool,

    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// When the text report uses colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// What was written, or the problems, for people.
    Text,
    /// One JSON object: `status`, and the report or the diagnostics.
    Json,
}

impl ExportArgs {
    /// `--strict` → `Some(true)`, `--no-strict` → `Some(false)`, neither → the config decides.
    pub fn strict_override(&self) -> Option<bool> {
        if self.strict {
            Some(true)
        } else if self.no_strict {
            Some(false)
        } else {
            None
        }
    }
}

const CHECK_AFTER_HELP: &str = "\
Configuration comes from the nearest pyproject.toml with a [tool.pt2lsp] table, searched \
upward from the first PATH (keys, in kebab-case: select, ignore, strict, exclude, fix, unsafe-fixes, trace, python, \
timeout, memory-limit, start-method, cache-dir, out-dir, entrypoints). \
Command-line flags override it.

Fixes: a diagnostic marked [*] has a fix that --fix applies. Safe fixes keep the model's \
behaviour (a torch._check hint, a register_fake kernel, a Dim range); unsafe ones need a look \
first (a branch rewritten as torch.cond) and are applied only with --unsafe-fixes:
  pt2lsp check --fix .                    Apply the safe fixes, report what remains
  pt2lsp check --diff --unsafe-fixes .    Print every fix as a unified diff, write nothing
  pt2lsp check --fix --unsafe-fixes m.py  Apply every fix to m.py
  pt2lsp check --fix --trace models/      Also apply the exporter's suggested Dim ranges

Tracing in a CI matrix of N machines: each runs `pt2lsp check --trace --shard K/N .` with its
own K (1..N); together they trace every entrypoint once. A second `--trace` replays the results \
of entrypoints whose files did not change from .pt2lsp_cache (--no-cache traces everything).

Exit status: 0 when no error-severity diagnostic was found, 1 when one was, 2 on a usage or \
I/O problem (a missing path, an unreadable file, a bad pyproject.toml, an unknown rule). \
`--watch` runs until Ctrl-C and then exits 0; only a problem before its first report exits 2.";

/// Options of `pt2lsp check`.
#[derive(Debug, Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "each bool is one on/off command-line flag"
)]
pub struct CheckArgs {
    /// Files or directories to check [default: .]. Directories are walked for *.py, *.pyi and
    /// *.ipynb (Jupyter notebooks) files, skipping hidden files and what .gitignore or .ignore
    /// exclude; a file named here is always checked. The rest of the project is read for
    /// cross-file facts either way, so a file gets the same diagnostics however it is named.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// How to print the report: text for people, json for scripts, sarif for GitHub code
    /// scanning, github for annotations in a GitHub Actions log, concise for lines a terminal
    /// or an editor jumps to (in a notebook, at the line of its JSON file).
    #[arg(long, visible_alias = "output-format", value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// Write the report to FILE instead of stdout (replaced whole, never half-written).
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,

    /// Colours in the text report: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// Print the files a run would check, one per line, and exit without checking them.
    #[arg(long)]
    pub show_files: bool,

    /// Print the resolved settings and where each came from (the command line, the
    /// configuration file, or the default), and exit without checking.
    #[arg(long)]
    pub show_settings: bool,

    /// Rules to run, as codes or prefixes (PT101, PT1, PT), comma-separated or repeated.
    /// Replaces `select` and `ignore` from pyproject.toml [default: PT].
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub select: Option<Vec<String>>,

    /// Rules to skip, as codes or prefixes, comma-separated or repeated. Added to `ignore` from
    /// pyproject.toml; a more specific --select wins (--select PT101 --ignore PT1 runs PT101).
    #[arg(long, value_delimiter = ',', value_name = "RULES")]
    pub ignore: Option<Vec<String>>,

    /// Check for `torch.export.export(..., strict=True)`: Dynamo-only problems (print,
    /// untraceable calls, graph breaks) become errors.
    #[arg(long, overrides_with = "no_strict")]
    pub strict: bool,

    /// Check for the default non-strict export, whatever pyproject.toml says.
    #[arg(long, overrides_with = "strict")]
    pub no_strict: bool,

    /// Glob patterns of files or directories to skip while walking, comma-separated or repeated,
    /// added to `exclude` from pyproject.toml. A bare name (`build`) matches at any depth; a
    /// pattern with a slash is relative to the directory of the configuration file. venv,
    /// site-packages, node_modules, dist, _build, buck-out and __pypackages__ are always skipped.
    #[arg(long, value_delimiter = ',', value_name = "GLOBS")]
    pub exclude: Vec<String>,

    /// Read configuration from this file instead of searching for pyproject.toml.
    #[arg(long, value_name = "FILE", conflicts_with = "isolated")]
    pub config: Option<PathBuf>,

    /// Ignore every configuration file; use only the command line.
    #[arg(long)]
    pub isolated: bool,

    /// Exit with 0 even when errors were found (2 still reports a usage or I/O problem).
    #[arg(long)]
    pub exit_zero: bool,

    /// Print the diagnostics only: no summary line and no warnings.
    #[arg(short, long)]
    pub quiet: bool,

    /// Print how many times each rule fired instead of the diagnostics (text or json). In
    /// json, with `--trace`, also how many entrypoints were traced, run and replayed, and the
    /// export calls it could not reach: `{"rules": [...], "trace": {...}}`.
    #[arg(long)]
    pub statistics: bool,

    /// Check, then check again whenever a Python file (.py, .pyi, .ipynb) or a pyproject.toml
    /// that the check reads is created, changed or deleted, until Ctrl-C. On a terminal the
    /// screen is cleared before each report; a line on stderr says when and what changed. Works
    /// with the other options: --fix fixes each change (its own writes are not a change),
    /// --output-file is rewritten each time, --trace traces again what changed.
    #[arg(
        short,
        long,
        conflicts_with_all = ["show_files", "show_settings"]
    )]
    pub watch: bool,

    /// Also run the real exporter on every entrypoint among the checked files, and on the
    /// project's entrypoints elsewhere that reach them (the script that exports a checked
    /// model file): each call of `torch.export.export` (or `draft_export`,
    /// `torch.onnx.export`), reached by running the script or the function around it; a file
    /// with module-level `model` and `example_args` (the ExportDB convention); or an
    /// `[[tool.pt2lsp.entrypoints]]` table. This runs the project's code, in its own Python,
    /// with the project's root on `sys.path`. A project file the trace finds a problem in is
    /// reported too, with all its diagnostics. A static error on a line that an export which
    /// succeeded ran is dropped: the exporter passed it.
    #[arg(long)]
    pub trace: bool,

    /// With --trace: keep the static errors the exporter contradicted, as info diagnostics
    /// that say which export passed the line.
    #[arg(long, requires = "trace")]
    pub show_contradicted: bool,

    /// Trace only shard K of N (1 <= K <= N) of the entrypoints, for a CI matrix of N
    /// machines: each entrypoint goes to one shard by a stable hash of its file's path and its
    /// name, so the N shards together trace each exactly once. Static analysis is not split.
    #[arg(long, value_name = "K/N", requires = "trace")]
    pub shard: Option<Shard>,

    /// The Python interpreter with torch: --trace runs it, and the static check follows calls
    /// into the libraries installed for it (transformers, timm, torchvision...) [default:
    /// `python` from pyproject.toml, else the Python pt2lsp was pip-installed into, else
    /// $VIRTUAL_ENV/bin/python; else python3 for --trace, and no libraries followed].
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<PathBuf>,

    /// Do not follow calls into installed libraries: what the model does inside them is
    /// unknown, as without an interpreter [default: `follow-libraries` from pyproject.toml,
    /// else follow them].
    #[arg(long)]
    pub no_follow_libraries: bool,

    /// Seconds each entrypoint may take under --trace before it is reported (PT502) and
    /// killed [default: `timeout` from pyproject.toml, else 60].
    #[arg(long, value_name = "SECONDS", requires = "trace", value_parser = positive_seconds)]
    pub timeout: Option<f64>,

    /// Address space, in MiB, each traced entrypoint may map beyond the warmed-up worker's own;
    /// past it the trace fails with PT502 [default: `memory-limit` from pyproject.toml, else the
    /// machine's memory].
    #[arg(long, value_name = "MIB", requires = "trace")]
    pub memory_limit: Option<u64>,

    /// How the tracer starts each entrypoint's process: `fork` (a warm process forked per job,
    /// the default on Linux) or `spawn` (a pool of warm fresh processes, one job each: the
    /// default on macOS and Windows) [default: `start-method` from pyproject.toml, else
    /// $PT2LSP_START_METHOD, else the platform's].
    #[arg(long, value_name = "METHOD", requires = "trace", value_parser = start_method)]
    pub start_method: Option<StartMethod>,

    /// A deployment target every entrypoint is lowered for: the static pass warns on calls it
    /// cannot run (PT707) and, with --trace, after each entrypoint exports, the program is
    /// lowered for it and what fails there is reported on your lines: core-aten
    /// (run_decompositions), pt2 (save, load, run against eager), onnx (torch.onnx.export),
    /// aoti (AOTInductor build), executorch (XNNPACK, to_executorch). Repeat it or separate
    /// names with commas; added to `targets` from pyproject.toml [default: none].
    #[arg(
        long = "target",
        value_name = "TARGET",
        value_delimiter = ',',
        value_parser = deployment_target
    )]
    pub targets: Vec<DeploymentTarget>,

    /// Trace every entrypoint again, ignoring (and not updating) the trace cache. By default a
    /// trace's result is kept in the cache directory and replayed, without starting Python,
    /// while none of the files it imported or read has changed.
    #[arg(long, requires = "trace")]
    pub no_cache: bool,

    /// Where --trace keeps its results [default: `cache-dir` from pyproject.toml, else
    /// .pt2lsp_cache in the project root]. Safe to delete; restore it between CI runs
    /// (actions/cache) to re-trace only what changed.
    #[arg(
        long,
        value_name = "DIR",
        requires = "trace",
        conflicts_with = "no_cache"
    )]
    pub cache_dir: Option<PathBuf>,

    /// Apply the safe fixes (those marked [*]) to the files, then report what remains. Fixes
    /// are applied in rounds until none is left (at most 10); a file is rewritten only when it
    /// changed. With --trace, the fixes the exporter suggests (Dim ranges) are applied too.
    #[arg(long, overrides_with = "no_fix", help_heading = FIX_HEADING)]
    pub fix: bool,

    /// Report only; ignore `fix = true` from pyproject.toml.
    #[arg(long, overrides_with = "fix", help_heading = FIX_HEADING)]
    pub no_fix: bool,

    /// Also apply (with --fix) or offer (without) the unsafe fixes: rewrites that keep the
    /// export working but may change what the model computes in a corner case (a branch turned
    /// into torch.cond evaluates both sides). Read them first: --diff --unsafe-fixes.
    #[arg(long, overrides_with = "no_unsafe_fixes", help_heading = FIX_HEADING)]
    pub unsafe_fixes: bool,

    /// Never apply unsafe fixes, whatever pyproject.toml says.
    #[arg(long, overrides_with = "unsafe_fixes", help_heading = FIX_HEADING)]
    pub no_unsafe_fixes: bool,

    /// Print, as a unified diff, what --fix would change, and write nothing. Exit status 1 when
    /// there is something to fix.
    #[arg(long, conflicts_with = "fix_only", help_heading = FIX_HEADING)]
    pub diff: bool,

    /// Like --fix, but print only how many problems were fixed, not the ones that remain; the
    /// exit status is 0 unless a file could not be read or written.
    #[arg(long, help_heading = FIX_HEADING)]
    pub fix_only: bool,
}

const FIX_HEADING: &str = "Fixing";

fn start_method(text: &str) -> Result<StartMethod, String> {
    StartMethod::parse(text).ok_or_else(|| format!("`{text}` is not `fork` or `spawn`"))
}

fn deployment_target(text: &str) -> Result<DeploymentTarget, String> {
    DeploymentTarget::parse(text)
}

/// A target that writes an artefact of its own: `pt2` is what `export` writes without one, and
/// `core-aten` is a check, not a file.
fn artefact_target(text: &str) -> Result<DeploymentTarget, String> {
    match DeploymentTarget::parse(text)? {
        target @ (DeploymentTarget::Onnx
        | DeploymentTarget::Aoti
        | DeploymentTarget::ExecuTorch) => Ok(target),
        other => Err(format!(
            "`{other}` writes no artefact of its own (the .pt2 is what export writes without \
             --target); export writes onnx, aoti or executorch"
        )),
    }
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(seconds),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

impl CheckArgs {
    /// `--fix`/`--fix-only`/`--diff` → `Some(true)`, `--no-fix` → `Some(false)`, neither → the
    /// config decides.
    pub fn fix_override(&self) -> Option<bool> {
        if self.fix || self.fix_only || self.diff {
            Some(true)
        } else if self.no_fix {
            Some(false)
        } else {
            None
        }
    }

    /// `--unsafe-fixes` → `Some(true)`, `--no-unsafe-fixes` → `Some(false)`, neither → the
    /// config decides.
    pub fn unsafe_fixes_override(&self) -> Option<bool> {
        if self.unsafe_fixes {
            Some(true)
        } else if self.no_unsafe_fixes {
            Some(false)
        } else {
            None
        }
    }

    /// `--strict` → `Some(true)`, `--no-strict` → `Some(false)`, neither → the config decides.
    pub fn strict_override(&self) -> Option<bool> {
        if self.strict {
            Some(true)
        } else if self.no_strict {
            Some(false)
        } else {
            None
        }
    }
}

const RULE_AFTER_HELP: &str = "\
Examples:
  pt2lsp rule                        One line per rule: code, name, severity, what it finds
  pt2lsp rule PT101                  One rule's page: what it finds, why export fails, the fix
  pt2lsp rule data-dependent-branch  The same rule, by name
  pt2lsp rule --all                  Every page, one after the other (Markdown)
  pt2lsp rule --format json          The list as JSON, for scripts and editors

The pages are also in docs/rules/ of the repository. A diagnostic names its rule \
(`PT101 [error] ...`); silence one line with `# pt2lsp: ignore[PT101]`, or a rule everywhere \
with `ignore = [\"PT101\"]` in [tool.pt2lsp].";

/// Options of `pt2lsp rule`.
#[derive(Debug, Args)]
pub struct RuleArgs {
    /// A rule code (PT101, any case) or name (data-dependent-branch). Without one, the rules
    /// are listed.
    #[arg(value_name = "RULE", conflicts_with = "all")]
    pub rule: Option<String>,

    /// Print every rule's page.
    #[arg(long)]
    pub all: bool,

    /// text prints the list, or the Markdown pages; json prints each rule's code, name,
    /// severity and summary as an object (an array for the list and --all, which adds `doc`,
    /// the page).
    #[arg(long, visible_alias = "output-format", value_enum, default_value_t = RuleFormat::Text)]
    pub format: RuleFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RuleFormat {
    /// The list for people, or the rules' pages as Markdown.
    Text,
    /// Each rule's code, name, severity and summary as JSON, with its page for one rule or
    /// --all.
    Json,
}

/// Turns `pt2lsp [OPTIONS] --check PATH...` into `pt2lsp check [OPTIONS] PATH...`.
///
/// `--check` is the spelling some editors and pre-commit hooks expect. Rewriting it here keeps
/// one grammar (the `check` subcommand's) instead of a second, top-level copy of every option.
/// Nothing is rewritten when a subcommand comes first or after a `--`.
pub fn rewrite_check_flag(mut args: Vec<OsString>) -> Vec<OsString> {
    let is_subcommand = args
        .get(1)
        .and_then(|first| first.to_str())
        .is_some_and(|first| Cli::command_names().any(|name| name == first));
    if is_subcommand {
        return args;
    }
    let position = args
        .iter()
        .skip(1)
        .take_while(|arg| *arg != "--")
        .position(|arg| {
            arg.to_str()
                .is_some_and(|arg| arg == "--check" || arg.starts_with("--check="))
        });
    let Some(position) = position.map(|position| position + 1) else {
        return args;
    };
    let flag = args.remove(position);
    if let Some(value) = flag.to_str().and_then(|flag| flag.strip_prefix("--check=")) {
        args.insert(position, OsString::from(value));
    }
    args.insert(1.min(args.len()), OsString::from("check"));
    args
}

impl Cli {
    fn command_names() -> impl Iterator<Item = String> {
        use clap::CommandFactory;
        let command = Cli::command();
        let names: Vec<String> = command
            .get_subcommands()
            .flat_map(|sub| {
                std::iter::once(sub.get_name().to_owned())
                    .chain(sub.get_all_aliases().map(str::to_owned))
            })
            .chain(["help".to_owned()])
            .collect();
        names.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(args: &[&str]) -> Vec<String> {
        let args = args.iter().map(OsString::from).collect();
        rewrite_check_flag(args)
            .into_iter()
            .map(|arg| arg.into_string().unwrap())
            .collect()
    }

    #[test]
    fn check_flag_becomes_the_subcommand() {
        assert_eq!(
            rewrite(&["pt2lsp", "--check", "a.py"]),
            ["pt2lsp", "check", "a.py"]
        );
        assert_eq!(
            rewrite(&["pt2lsp", "--format", "json", "--check", "a.py"]),
            ["pt2lsp", "check", "--format", "json", "a.py"]
        );
        assert_eq!(
            rewrite(&["pt2lsp", "--check=a.py"]),
            ["pt2lsp", "check", "a.py"]
        );
        assert_eq!(
            rewrite(&["pt2lsp", "check", "--check"]),
            ["pt2lsp", "check", "--check"]
        );
        assert_eq!(rewrite(&["pt2lsp", "--version"]), ["pt2lsp", "--version"]);
    }

    #[test]
    fn the_grammar_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
