#!/usr/bin/env python3
"""The language server under a save storm: a 500-file workspace with 100 entrypoints.

A generated project: `pkg/common.py` (imported by every model), 300 helper modules, 100 model
modules (`pkg/models/m<i>.py`, each using three helpers and `common`; every fifth calls
`common.gate`, which branches on a tensor's value: PT101) and 100 ExportDB-style entry files
(`export_m<i>.py`). `pt2lsp serve` (release build, real torch, the trace cache off so every trace
runs) opens three entry files and `common.py`, then `common.py` is edited and saved in bursts:
each save shifts `gate`'s branch down one line and re-plans all 100 traces, cancelling the ones
the previous save queued.

What is checked (a run that fails one of these exits non-zero):
- none lost: after the last save, every entrypoint has a trace that ended with a result (not
  "cancelled"), and every failing one reports `pkg/common.py` at the final line of the branch;
- none stale: the last diagnostics published for `common.py` (open, at its final version) carry
  the trace's PT101 on the final line and on no earlier one;
- the open documents first: the three open entry files' traces end among the first of the last
  burst.

What is measured: from the last save to the open files' trace results and to the last trace's
end; the server's peak resident memory (VmHWM) and the worker's (the zygote and its children,
proportional set sizes summed, sampled every 200 ms).

    python3 bench/lsp_load.py              # 500 files, 100 entrypoints; replaces its section
    python3 bench/lsp_load.py --fast       # 60 files, 12 entrypoints, nothing written
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Section, tracer_stage_main
from lsp_latency import Client, memory_kib

HEADING = "## Language server under load: 500 files, 100 entrypoints, saves in bursts"
OPEN_ENTRIES = 3
HELPERS_PER_MODEL = 3
FAILING_EVERY = 5


def file_uri(path: Path) -> str:
    return path.resolve().as_uri()


def common_text(shift: int) -> str:
    """`common.py` with `shift` comment lines on top: `gate`'s branch moves with them."""
    comments = "".join(f"# revision {index}\n" for index in range(shift))
    return (
        f"{comments}import torch\n\nSCALE = {shift + 1}\n\n\ndef gate(x):\n"
        "    if x.sum() > 0:\n        return x * SCALE\n    return -x\n\n\n"
        "def scale(x):\n    return x * SCALE\n"
    )


def gate_line(shift: int) -> int:
    return common_text(shift).splitlines().index("    if x.sum() > 0:") + 1


def generate(root: Path, entrypoints: int) -> int:
    """Writes the project; returns how many Python files it has."""
    package = root / "pkg"
    (package / "helpers").mkdir(parents=True)
    (package / "models").mkdir()
    for init in (package, package / "helpers", package / "models"):
        (init / "__init__.py").write_text("")
    (package / "common.py").write_text(common_text(0))
    for index in range(entrypoints * HELPERS_PER_MODEL):
        (package / "helpers" / f"h{index}.py").write_text(
            f"import torch\n\n\ndef helper_{index}(x):\n    return torch.relu(x) + {index % 7}\n"
        )
    for index in range(entrypoints):
        helpers = range(index * HELPERS_PER_MODEL, (index + 1) * HELPERS_PER_MODEL)
        imports = "".join(f"from pkg.helpers.h{h} import helper_{h}\n" for h in helpers)
        body = "".join(f"        x = helper_{h}(x)\n" for h in helpers)
        tail = "        return common.gate(x)\n" if index % FAILING_EVERY == 0 else "        return common.scale(x)\n"
        (package / "models" / f"m{index}.py").write_text(
            f"import torch\n\nfrom pkg import common\n{imports}\n\nclass M{index}(torch.nn.Module):\n"
            f"    def __init__(self):\n        super().__init__()\n        self.linear = torch.nn.Linear(8, 8)\n\n"
            f"    def forward(self, x):\n        x = self.linear(x)\n{body}{tail}"
        )
        (root / f"export_m{index}.py").write_text(
            f"import torch\n\nfrom pkg.models.m{index} import M{index}\n\n"
            f"model = M{index}()\nexample_args = (torch.randn(4, 8),)\n"
        )
    return sum(1 for _ in root.rglob("*.py"))


@dataclass
class WorkerMemory:
    """Peak resident memory of the server's descendants (the worker and its job children)."""

    server_pid: int
    peak_kib: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.wait(0.2):
            self.peak_kib = max(self.peak_kib, sum(_pss_kib(pid) for pid in _descendants(self.server_pid)))


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, stack = [], list(children.get(pid, []))
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def _pss_kib(pid: int) -> int:
    """Proportional set size: pages shared by the zygote and its forked children (torch, mostly)
    counted once between them, as resident sums would not."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def is_progress(message: dict, kind: str) -> bool:
    if message.get("method") != "$/progress":
        return False
    params = message["params"]
    return str(params.get("token", "")).startswith("pt2lsp/trace") and params["value"].get("kind") == kind


def run_load(binary: Path, python: Path, entrypoints: int, bursts: int, saves_per_burst: int) -> dict:
    project = Path(tempfile.mkdtemp(prefix="pt2lsp-load-")).resolve()
    files = generate(project, entrypoints)
    common = project / "pkg" / "common.py"
    open_entries = [project / f"export_m{index}.py" for index in range(OPEN_ENTRIES)]
    env = {**os.environ, "PT2LSP_NO_CACHE": "1"}
    client = Client([str(binary), "serve"], project / "server.stderr", env)
    memory = WorkerMemory(client.process.pid)
    sampler = threading.Thread(target=memory.run, daemon=True)
    sampler.start()
    root = file_uri(project)
    try:
        client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root,
                "workspaceFolders": [{"uri": root, "name": project.name}],
                "capabilities": {"window": {"workDoneProgress": True}},
                "initializationOptions": {"python": str(python), "timeout": 300},
            },
        )
        client.notify("initialized", {})
        client.wait(
            lambda m: m.get("method") == "$/progress"
            and str(m["params"].get("token", "")).startswith("pt2lsp/scan")
            and m["params"]["value"].get("kind") == "end",
            timeout=300,
        )
        for path in [*open_entries, common]:
            client.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": file_uri(path), "languageId": "python", "version": 1, "text": path.read_text()}},
            )
        client.drain()
        version, shift, last_save = 1, 0, 0.0
        for burst in range(bursts):
            for _ in range(saves_per_burst):
                shift += 1
                version += 1
                text = common_text(shift)
                common.write_text(text)
                uri = file_uri(common)
                client.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
                )
                last_save = client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
                time.sleep(0.15)
            if burst + 1 < bursts:
                time.sleep(2.0)  # traces of this burst run; the next burst cancels the rest
        return settle(client, project, entrypoints, shift, version, last_save, files, memory)
    finally:
        memory.stop.set()
        client.close()
        shutil.rmtree(project, ignore_errors=True)


def settle(client, project, entrypoints, shift, version, last_save, files, memory) -> dict:
    """Waits for every entrypoint's last trace to end; checks and measures the outcome."""
    titles: dict[str, str] = {}
    ends: dict[str, list[tuple[float, int, str]]] = {}
    published: list[dict] = []
    deadline = time.monotonic() + 600
    while True:
        for arrived, message in client.drain():
            if message.get("method") == "$/progress" and str(message["params"].get("token", "")).startswith("pt2lsp/trace"):
                _record(message, arrived, titles, ends)
            elif message.get("method") == "textDocument/publishDiagnostics":
                published.append(message["params"])
        # The last burst's traces: the newest `entrypoints` tickets, one per entrypoint.
        tickets = sorted(int(token.rsplit("/", 1)[1]) for token in titles)
        if len(tickets) >= entrypoints:
            final_ticket_floor = tickets[-entrypoints]
            done = len(ends) >= entrypoints and all(
                any(ticket >= final_ticket_floor and text != "cancelled" for _, ticket, text in events)
                for events in ends.values()
            )
            if done:
                break
        if time.monotonic() > deadline:
            raise SystemExit(f"load: not every entrypoint's last trace ended within 600 s ({len(ends)} of {entrypoints})")
        time.sleep(0.2)
    final = {name: next(e for e in events if e[1] >= final_ticket_floor) for name, events in ends.items()}
    problems = []
    line = gate_line(shift)
    for name, (_, _, text) in final.items():
        index = int(name.removeprefix("export_m").removesuffix(".py"))
        if index % FAILING_EVERY == 0 and f"pkg/common.py:{line}" not in text:
            problems.append(f"{name}: ended with {text!r}, expected pkg/common.py:{line}")
        if index % FAILING_EVERY != 0 and text != "no problems":
            problems.append(f"{name}: ended with {text!r}, expected no problems")
    # The last publication for common.py, which is open at `version`.
    time.sleep(1.0)
    uri = file_uri(project / "pkg" / "common.py")
    published += [message["params"] for _, message in client.drain() if message.get("method") == "textDocument/publishDiagnostics"]
    publications = [params for params in published if params["uri"] == uri]
    if not publications:
        problems.append("no diagnostics were published for pkg/common.py")
    else:
        last = publications[-1]
        traced = sorted(
            d["range"]["start"]["line"] + 1
            for d in last["diagnostics"]
            if d.get("code") == "PT101" and d.get("data", {}).get("source", "").endswith("trace")
        )
        if last.get("version") != version or traced != [line]:
            problems.append(f"common.py's last publication: version {last.get('version')}, traced PT101 on lines {traced}; expected version {version}, line {line}")
    order = sorted(final.items(), key=lambda item: item[1][0])
    ranks = [rank for rank, (name, _) in enumerate(order) if name in {f"export_m{i}.py" for i in range(OPEN_ENTRIES)}]
    if max(ranks) >= OPEN_ENTRIES + 2:
        problems.append(f"the open entry files' traces ended at ranks {ranks} of {len(order)}")
    if problems:
        raise SystemExit("load:\n  " + "\n  ".join(problems))
    open_latency = max(final[f"export_m{i}.py"][0] for i in range(OPEN_ENTRIES)) - last_save
    all_latency = max(event[0] for event in final.values()) - last_save
    server = memory_kib(client.process.pid)
    return {
        "files": files,
        "entrypoints": entrypoints,
        "open s": open_latency,
        "all s": all_latency,
        "server peak MB": server["VmHWM"] / 1024,
        "worker peak MB": memory.peak_kib / 1024,
        "ranks": ranks,
    }


def _record(message: dict, arrived: float, titles: dict, ends: dict) -> None:
    token = str(message["params"]["token"])
    value = message["params"]["value"]
    if value.get("kind") == "begin":
        titles[token] = value.get("title", "").removeprefix("Tracing ")
    elif value.get("kind") == "end":
        ends.setdefault(titles.get(token, "?"), []).append((arrived, int(token.rsplit("/", 1)[1]), value.get("message", "")))


def measure(binary: Path, python: Path, fast: bool) -> Section:
    entrypoints = 12 if fast else 100
    result = run_load(binary, python, entrypoints, bursts=2, saves_per_burst=3)
    body = (
        f"A generated project of {result['files']} Python files with {result['entrypoints']} ExportDB-style "
        "entrypoints (every fifth fails on a branch in the shared `pkg/common.py`), `pt2lsp serve` with real torch "
        "and the trace cache off, three entry files and `common.py` open. `common.py` is edited and saved in two "
        "bursts of three saves 150 ms apart (2 s between bursts); each save re-plans every entrypoint's trace and "
        "cancels the one queued or running. Checked: every entrypoint's last trace ended with a result, every failing "
        "one on the final line; the open `common.py`'s last publication is of its final version with the trace's "
        "PT101 on that line only; the open entry files ran first.\n\n"
        "| measure | value |\n|---|---|\n"
        f"| last save → the open entry files' trace results | {result['open s']:.2f} s |\n"
        f"| last save → every entrypoint's trace ended | {result['all s']:.1f} s |\n"
        f"| ranks of the open entry files among the last traces | {', '.join(str(rank + 1) for rank in result['ranks'])} of {result['entrypoints']} |\n"
        f"| server peak RSS (VmHWM) | {result['server peak MB']:.0f} MB |\n"
        f"| worker peak memory (zygote and job children, PSS summed, sampled) | {result['worker peak MB']:.0f} MB |\n"
    )
    return Section(
        HEADING,
        body,
        {
            "open seconds": result["open s"],
            "all seconds": result["all s"],
            "server peak MB": result["server peak MB"],
            "worker peak MB": result["worker peak MB"],
        },
    )


def main() -> int:
    return tracer_stage_main(__doc__, measure, "60 files, 12 entrypoints")


if __name__ == "__main__":
    sys.exit(main())
