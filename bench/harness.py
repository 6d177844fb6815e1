"""What every benchmark shares: pinned versions, the fetched corpus and tools, the build, timing.

Everything fetched lives under bench/.cache (git-ignored) and is fetched once: the `.py` files of
the transformers and timm wheels, and one virtual environment per peer tool (ruff, TorchFix),
each installed from PyPI at its pinned version. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
import venv
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
RESULTS = ROOT / "bench" / "RESULTS.md"
# The tracer's interpreter: the test environment's, with real torch (scripts/test.sh makes it).
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"

WHEELS = {"transformers": "5.23.0", "timm": "1.0.31"}
RUFF = "0.17.6"
TORCHFIX = "0.7.0"


@dataclass
class Section:
    """One `## ` section of RESULTS.md and the numbers it reports.

    `numbers` is what `run.py --fast` checks: every stage must have produced each of them as a
    finite positive value, or the harness is broken (it never judges their size)."""

    heading: str
    body: str
    numbers: dict[str, float] = field(default_factory=dict)
    # When and under what load it was measured, set by run.py: sections of one file may come
    # from different runs (`run.py --stage`).
    measured: str = ""

    def markdown(self) -> str:
        when = f"_{self.measured}_\n\n" if self.measured else ""
        # The numbers ride along in a comment, so a partial rerun can rebuild the summary table.
        numbers = f"\n<!-- numbers: {json.dumps(self.numbers)} -->\n" if self.numbers else ""
        return f"{self.heading}\n\n{when}{self.body.strip()}\n{numbers}"

    @classmethod
    def parse(cls, text: str) -> Section:
        """The inverse of `markdown`, for the sections of an existing RESULTS.md."""
        heading, _, rest = text.partition("\n")
        numbers: dict[str, float] = {}
        found = re.search(r"^<!-- numbers: (.*) -->$", rest, re.MULTILINE)
        if found:
            numbers = json.loads(found.group(1))
            rest = rest[: found.start()] + rest[found.end() :]
        measured = re.match(r"\s*_(.*)_\n", rest)
        if measured:
            rest = rest[measured.end() :]
        return cls(heading, rest.strip() + "\n", numbers, measured.group(1) if measured else "")


def sections_of(path: Path) -> list[Section]:
    """The `## ` sections of a results file, in order."""
    if not path.exists():
        return []
    chunks = re.split(r"^(?=## )", path.read_text(), flags=re.MULTILINE)
    return [Section.parse(chunk) for chunk in chunks if chunk.startswith("## ")]


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=True, **kwargs)


def timed(command: list[str], cwd: Path | None = None) -> float:
    """Wall time of one run, output discarded; the exit status is the tool's verdict, not ours."""
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


# The corpus is checked as a project of its own. Without a project file of its own, `pt2lsp
# check` would take the pt2lsp repository around `bench/.cache` for the corpus's project and read
# its files (fixtures, tests) as context: it would check transformers and timm plus this
# repository, and the fixtures' entrypoints would change the corpus's diagnostics.
PROJECT_MARKER = "# Marks this directory as a project of its own (bench/harness.py).\n"


def own_project(directory: Path) -> Path:
    """`directory`, marked as the root of a Python project (an empty `pyproject.toml`)."""
    marker = directory / "pyproject.toml"
    if not marker.exists():
        marker.write_text(PROJECT_MARKER)
    return directory


def corpus() -> Path:
    """The `.py` files of the pinned transformers and timm wheels, unzipped once."""
    target = CACHE / "corpus"
    marker = target / ".complete"
    if marker.exists():
        return own_project(target)
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"]
    run(pip + ["-d", str(wheels)] + [f"{name}=={version}" for name, version in WHEELS.items()])
    for wheel in wheels.glob("*.whl"):
        if not any(wheel.name.startswith(f"{name}-{version}-") for name, version in WHEELS.items()):
            continue
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.endswith(".py"):
                    archive.extract(member, target)
    marker.touch()
    return own_project(target)


def tool(name: str, version: str, executable: str) -> Path:
    """`executable` from a virtual environment of its own holding `name==version` from PyPI."""
    env = CACHE / f"{name.lower()}-{version}-venv"
    binary = env / "bin" / executable
    if binary.exists():
        return binary
    venv.create(env, with_pip=True, clear=True)
    run([str(env / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", f"{name}=={version}"])
    return binary


def ruff() -> Path:
    return tool("ruff", RUFF, "ruff")


def torchfix() -> Path:
    return tool("TorchFix", TORCHFIX, "torchfix")


def build() -> Path:
    """target/release/pt2lsp, built now (a no-op when it is up to date)."""
    run(["cargo", "build", "--release", "--quiet", "-p", "pt2lsp"], cwd=ROOT)
    return ROOT / "target" / "release" / "pt2lsp"


def lines_of(files: list[Path]) -> int:
    return sum(path.read_bytes().count(b"\n") for path in files)


def write_section(section: Section) -> None:
    """Replaces `section`'s heading in RESULTS.md (or appends it), keeping every other section.

    For refreshing one stage by hand; `run.py` rewrites the whole file."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(section.heading)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.markdown() + "\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section.markdown()
    RESULTS.write_text(text.rstrip("\n") + "\n")


def output_of(command: list[str], cwd: Path | None = None) -> str:
    """First line a command prints, or "unknown" when it cannot run (a version probe)."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, timeout=120)
    except OSError:
        return "unknown"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[-1].strip() if done.returncode == 0 and lines else "unknown"


def machine() -> str:
    """CPU model, cores, memory and OS, for the header of RESULTS.md."""
    cpu = "unknown CPU"
    meminfo = {}
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, value = line.partition(":")
            meminfo[key] = int(value.split()[0])
    except (OSError, StopIteration):
        pass
    memory = f"{meminfo['MemTotal'] / 1024**2:.0f} GiB RAM" if "MemTotal" in meminfo else "unknown RAM"
    system = platform.platform()
    try:
        pretty = re.search(r'^PRETTY_NAME="?([^"\n]*)', Path("/etc/os-release").read_text(), re.MULTILINE)
        if pretty:
            system = f"{pretty.group(1)}, Linux {platform.release()}"
    except OSError:
        pass
    return f"{cpu} ({platform.machine()}), {os.cpu_count()} cores, {memory}; {system}"


def pt2lsp_revision() -> str:
    """The git revision of the tree being measured, `+dirty` when it has uncommitted changes."""
    revision = output_of(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    return revision + ("+dirty" if dirty else "")


def tracer_stage_main(doc: str, measure, fast_help: str) -> int:
    """The command line of a stage that runs pt2lsp with the tracer: `--fast` (`fast_help`,
    nothing written), `--python`, `--binary`; prints the section and, unless fast, writes it."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help=f"{fast_help}, nothing written")
    parser.add_argument("--python", type=Path, default=VENV_PYTHON, help="the interpreter with torch")
    parser.add_argument("--binary", type=Path, help="use this pt2lsp instead of building target/release/pt2lsp")
    args = parser.parse_args()
    binary = args.binary.resolve() if args.binary else build()
    section = measure(binary, args.python.absolute(), args.fast)
    print(section.markdown())
    if not args.fast:
        write_section(section)
    return 0
