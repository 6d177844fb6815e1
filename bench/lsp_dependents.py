"""LSP latency across files: an edit to a helper re-publishes the open files that depend on it.

The editor is simulated over stdio against `pt2lsp serve`, as in `lsp_latency.py`. The workspace
is a copy of `fixtures/projects/three_files` (`export_net.py` exports `mymodels.net.Net`, whose
head in `mymodels/heads.py` guards the batch dim the entry file declares dynamic). All of the
package's files are open. Each edit, unsaved, takes the guard out of `heads.py` or puts it back
(a whole-document change), at a steady pace: the next edit is sent once every open file has been
published again, plus a pause. Measured from the `didChange` to:

- `edited`: the publication of `heads.py` at the new version;
- `dependents`: the last publication of the other open files of the program (`export_net.py`,
  `mymodels/net.py`, `mymodels/helpers.py`), which the edit made stale although their own
  versions did not change.

With `--corpus DIR` (by default `bench/.cache/corpus` when fetched) a last scenario takes the
whole corpus as the workspace and edits `transformers/cache_utils.py`, which both of the
entrypoints inside transformers reach, with their two files open.

With `--large FILE` a second scenario adds that file (by default the corpus's 4,121-line
seamless_m4t_v2 modeling file, when `bench/.cache` has it) to the package as
`mymodels/big.py`, imported by `mymodels/net.py` and open, so the program is as large as a
real model's and a re-parse of every file on each keystroke would show.

Nothing is asserted about time. The script checks what it measures: each edit toggles
`heads.py`'s PT401 and every dependent is published again, or it fails.

    python3 bench/lsp_dependents.py --binary target/release/pt2lsp --count 200
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import CACHE, ROOT, build
from lsp_latency import Client, file_uri, is_publication, percentile

FIXTURE = ROOT / "fixtures" / "projects" / "three_files"
GUARD = "        if h.shape[0] > 4:  # error[PT401]\n            return self.out(h)\n"
CORPUS = CACHE / "corpus"
LARGE = CORPUS / "transformers" / "models" / "seamless_m4t_v2" / "modeling_seamless_m4t_v2.py"
TIMEOUT = 60.0
PAUSE = 0.05


def package(into: Path, large: Path | None) -> list[Path]:
    """The package under `into`; returns its Python files, `heads.py` first."""
    shutil.copytree(FIXTURE, into, dirs_exist_ok=True)
    files = [
        into / "mymodels" / "heads.py",
        into / "export_net.py",
        into / "mymodels" / "net.py",
        into / "mymodels" / "helpers.py",
    ]
    if large is not None:
        shutil.copyfile(large, into / "mymodels" / "big.py")
        net = into / "mymodels" / "net.py"
        net.write_text(
            net.read_text().replace("from .heads import Head\n", "from . import big\nfrom .heads import Head\n")
        )
        files.append(into / "mymodels" / "big.py")
    return files


def scenario(binary: Path, count: int, large: Path | None, edited_only: bool) -> dict:
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp).resolve()
        files = package(root, large)
        stderr = root.parent / f"pt2lsp-dependents-{root.name}.stderr"
        client = Client([str(binary), "serve"], stderr)
        try:
            return drive(client, root, files, count, edited_only)
        finally:
            client.close()
            stderr.unlink(missing_ok=True)


def drive(client: Client, root: Path, files: list[Path], count: int, edited_only: bool) -> dict:
    """The three-file scenarios: the guard in `heads.py` goes and comes back, and its PT401
    with it (checked unless `edited_only`)."""
    guarded = files[0].read_text()
    assert GUARD in guarded, "the fixture changed"
    unguarded = guarded.replace(GUARD, "")

    def edit(version: int) -> tuple[str, list[str] | None]:
        if version % 2 == 0:
            return unguarded, None if edited_only else []
        return guarded, None if edited_only else ["PT401"]

    return drive_files(client, root, files, count, edit, edited_only)


def drive_files(client: Client, root: Path, files: list[Path], count: int, edit, edited_only: bool) -> dict:
    """Opens `files` in a server on `root` and edits the first one `count` times: `edit(version)`
    gives the text and the rule codes its publication must have (`None`: not checked). Times
    `didChange` to the edited file's publication and to the last re-publication of the others
    (unless `edited_only`)."""
    root_uri = file_uri(root)
    client.request(
        "initialize",
        {
            "processId": None,
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "root"}],
            "initializationOptions": {},
            "capabilities": {"window": {"workDoneProgress": True}},
        },
    )
    client.notify("initialized", {})
    client.wait(
        lambda m: (
            m.get("method") == "$/progress"
            and str(m["params"]["token"]).startswith("pt2lsp/scan")
            and m["params"]["value"].get("kind") == "end"
        ),
        timeout=TIMEOUT,
    )
    uris = [file_uri(path) for path in files]
    texts = [path.read_text() for path in files]
    for uri, text in zip(uris, texts):
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
    for uri in uris:
        client.wait(lambda m, u=uri: is_publication(m, u, 1), timeout=TIMEOUT)
    time.sleep(1.0)
    client.drain()

    edited, dependents = uris[0], uris[1:]
    edited_ms: list[float] = []
    dependents_ms: list[float] = []
    for version in range(2, count + 2):
        text, expected = edit(version)
        sent = client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": edited, "version": version}, "contentChanges": [{"text": text}]},
        )
        arrived, message = client.wait(lambda m, v=version: is_publication(m, edited, v), timeout=TIMEOUT)
        codes = [d.get("code") for d in message["params"]["diagnostics"]]
        if expected is not None and codes != expected:
            raise SystemExit(f"{files[0].name} v{version}: {codes}, expected {expected}")
        edited_ms.append((arrived - sent) * 1000)
        last = arrived
        for uri in [] if edited_only else dependents:
            arrived, _ = client.wait(lambda m, u=uri: is_publication(m, u), timeout=TIMEOUT)
            last = max(last, arrived)
        dependents_ms.append((last - sent) * 1000)
        time.sleep(PAUSE)
        client.drain()
    return {
        "files": len(files),
        "lines": sum(t.count("\n") for t in texts),
        "edited": edited_ms,
        "dependents": dependents_ms,
    }


def corpus_scenario(binary: Path, count: int, corpus: Path, edited_only: bool) -> dict:
    """The whole corpus as the workspace: `transformers/cache_utils.py` (2,404 lines), which both
    entrypoints inside transformers reach, is edited (a blank line added and taken away at its
    end) with the two entry files open."""
    edited = corpus / "transformers" / "cache_utils.py"
    entries = [
        corpus / "transformers" / "integrations" / "executorch.py",
        corpus / "transformers" / "exporters" / "exporter_dynamo.py",
    ]
    client = Client([str(binary), "serve"], Path(tempfile.gettempdir()) / "pt2lsp-dependents-corpus.stderr")
    try:
        text = edited.read_text()

        def edit(version: int) -> tuple[str, list[str] | None]:
            return text + ("\n" if version % 2 == 0 else ""), None

        return drive_files(client, corpus, [edited, *entries], count, edit, edited_only)
    finally:
        client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", type=Path, help="a built pt2lsp (default: build target/release/pt2lsp)")
    parser.add_argument("--count", type=int, default=200, help="edits per scenario")
    parser.add_argument(
        "--edited-only",
        action="store_true",
        help="time the edited file only, for a build that does not re-publish dependents (to compare)",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS if CORPUS.exists() else None,
        help="the fetched corpus (transformers and timm), for the scenario with it as the workspace",
    )
    parser.add_argument(
        "--large", type=Path, default=LARGE if LARGE.exists() else None, help="a large module to add to the program"
    )
    args = parser.parse_args()
    binary = args.binary or build()
    scenarios = [("three files", None)]
    if args.large is not None:
        scenarios.append((f"three files + {args.large.name}", args.large))
    print("| program | files | lines | edits | edited p50 | p99 | dependents p50 | p99 | max |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, large in scenarios:
        result = scenario(binary, args.count, large, args.edited_only)
        edited, dependents = result["edited"], result["dependents"]
        print(
            f"| {name} | {result['files']} | {result['lines']} | {len(edited)} "
            f"| {percentile(edited, 50):.1f} | {percentile(edited, 99):.1f} "
            f"| {percentile(dependents, 50):.1f} | {percentile(dependents, 99):.1f} | {max(dependents):.1f} |"
        )
    if args.corpus is not None:
        result = corpus_scenario(binary, args.count, args.corpus.resolve(), args.edited_only)
        edited, dependents = result["edited"], result["dependents"]
        print(
            f"| corpus: cache_utils.py and its 2 entrypoints open | {result['files']} | {result['lines']} "
            f"| {len(edited)} | {percentile(edited, 50):.1f} | {percentile(edited, 99):.1f} "
            f"| {percentile(dependents, 50):.1f} | {percentile(dependents, 99):.1f} | {max(dependents):.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
