#!/usr/bin/env python3
"""Measures the language server as an editor feels it: edit-to-diagnostics latency and memory.

Starts `pt2lsp serve` (release build) over stdio with the whole corpus (transformers and timm) as
the workspace, opens the 4,121-line `modeling_seamless_m4t_v2.py`, waits for the background scan of
the workspace to end, then replays realistic incremental edits (a line typed character by
character inside `forward` methods, typos fixed with backspace, whole lines deleted and undone)
at typing cadence, in two scenarios:

  steady   one edit every 50-100 ms
  bursts   bursts of 4-16 edits 15-35 ms apart, separated by 300-800 ms pauses

For every `didChange` version it records the time until `publishDiagnostics` for that version
arrives. A version superseded before the server analysed it is legitimately never published:
the table says how many were, and the latency percentiles cover those. "Settle" is the time from
the last edit of a burst to the diagnostics of that burst's final version, the wait a user sees
when they stop typing. Peak RSS (VmHWM) of the server is read after the scan and after the edits.

    python3 bench/lsp_latency.py          # 200 edits per scenario, the whole corpus as the
                                          # workspace; replaces its section of RESULTS.md
    python3 bench/lsp_latency.py --fast   # 20 edits, one package as the workspace (CI: keeps the
                                          # harness from rotting; asserts nothing about time)

Standard library only. The corpus comes from harness.corpus(); `bench/run.py` runs this as one
of its stages.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import CACHE, WHEELS, Section, build, corpus, write_section

TARGET = "transformers/models/seamless_m4t_v2/modeling_seamless_m4t_v2.py"
HEADING = "## Language server: didChange to publishDiagnostics, memory"
# How long to wait for any one answer before calling the run broken.
TIMEOUT = 120.0

# Lines a user might add before a `return` in `forward`: plain arithmetic, a data-dependent
# scalar, a data-dependent branch, a print. Typed one character at a time, each prefix is a
# state the server must analyse (most are syntax errors: an open bracket, a dangling operator).
LINES = [
    "hidden_states = hidden_states * self.scale + residual",
    "scale = hidden_states.abs().max().item()",
    "if hidden_states.sum() > 0: hidden_states = -hidden_states",
    "print(hidden_states.shape, hidden_states.dtype)",
    "hidden_states = torch.nn.functional.dropout(hidden_states, p=0.1)",
]


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# --------------------------------------------------------------------------------------------
# A minimal LSP client: Content-Length frames on the server's stdin and stdout.


class Client:
    """Talks to one server process; a reader thread timestamps every message on arrival."""

    def __init__(self, command: list[str], stderr_path: Path, env: dict[str, str] | None = None):
        self.stderr = stderr_path.open("wb")
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0, env=env
        )
        self.write_lock = threading.Lock()
        self.incoming: queue.Queue[tuple[float, dict]] = queue.Queue()
        # Messages read by `wait`, with their arrival times, until `drain` takes them.
        self.backlog: list[tuple[float, dict]] = []
        self.next_id = 1
        threading.Thread(target=self._read_loop, daemon=True).start()

    def send(self, message: dict) -> float:
        """Writes one message; returns the time just before it was written."""
        body = json.dumps(message).encode()
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self.write_lock:
            sent = time.perf_counter()
            self.process.stdin.write(frame)
            self.process.stdin.flush()
        return sent

    def notify(self, method: str, params) -> float:
        return self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params) -> dict:
        request_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m)[1]

    def wait(self, matches, timeout: float = TIMEOUT) -> tuple[float, dict]:
        """The first message not yet drained that `matches`, with its arrival time."""
        for arrived, message in self.backlog:
            if matches(message):
                return arrived, message
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no matching message from the server")
            try:
                arrived, message = self.incoming.get(timeout=remaining)
            except queue.Empty:
                raise TimeoutError("no matching message from the server") from None
            self.backlog.append((arrived, message))
            if matches(message):
                return arrived, message

    def drain(self) -> list[tuple[float, dict]]:
        """Every message received and not yet drained, in arrival order."""
        drained, self.backlog = self.backlog, []
        while True:
            try:
                drained.append(self.incoming.get_nowait())
            except queue.Empty:
                return drained

    def _read_loop(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = b""
            while len(body) < length:
                chunk = stream.read(length - len(body))
                if not chunk:
                    return
                body += chunk
            arrived = time.perf_counter()
            message = json.loads(body)
            if "id" in message and "method" in message:
                # The server's own requests (progress tokens, watchers): answer as an editor does.
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            self.incoming.put((arrived, message))

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        except (OSError, TimeoutError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.stderr.close()


def memory_kib(pid: int) -> dict[str, int]:
    """VmHWM (peak resident set) and VmRSS of a process, in KiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            values[key] = int(rest.split()[0])
    return values


# --------------------------------------------------------------------------------------------
# The edit stream.


@dataclass
class Edit:
    """One `didChange`: a range of the text before it, in LSP (UTF-16) positions, and new text."""

    start: tuple[int, int]
    end: tuple[int, int]
    text: str

    def change(self) -> dict:
        return {
            "range": {
                "start": {"line": self.start[0], "character": self.start[1]},
                "end": {"line": self.end[0], "character": self.end[1]},
            },
            "text": self.text,
        }


@dataclass
class Buffer:
    """The client's copy of the document, so every edit's positions are right."""

    lines: list[str]
    limit: int
    edits: list[Edit] = field(default_factory=list)

    def replace(self, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        """Replaces a range given as (line, code point) pairs and records the edit; does
        nothing once `limit` edits are recorded, so `lines` is the text after exactly those."""
        if len(self.edits) >= self.limit:
            return
        (sl, sc), (el, ec) = start, end
        self.edits.append(Edit((sl, utf16_len(self.lines[sl][:sc])), (el, utf16_len(self.lines[el][:ec])), text))
        joined = self.lines[sl][:sc] + text + self.lines[el][ec:]
        self.lines[sl : el + 1] = joined.split("\n")

    def type_line(self, after: int, indent: str, code: str, rng: random.Random) -> int:
        """Enter at the end of line `after` (auto-indented), then `code` key by key, with the
        odd typo fixed by backspace. Returns the new line's number."""
        end = len(self.lines[after])
        self.replace((after, end), (after, end), "\n" + indent)
        line, column = after + 1, len(indent)
        for char in code:
            if char.isalpha() and rng.random() < 0.06:
                wrong = rng.randint(1, 2)
                for _ in range(wrong):
                    self.replace((line, column), (line, column), rng.choice("asdfghjkl"))
                    column += 1
                for _ in range(wrong):
                    self.replace((line, column - 1), (line, column), "")
                    column -= 1
            self.replace((line, column), (line, column), char)
            column += 1
        return line

    def delete_line(self, line: int) -> str:
        """Deletes a whole line with the break before it, in one edit (as `dd` sends it)."""
        removed = self.lines[line]
        self.replace((line - 1, len(self.lines[line - 1])), (line, len(removed)), "")
        return removed

    def restore_line(self, after: int, text: str) -> None:
        """Undo of `delete_line`: the line comes back in one edit."""
        end = len(self.lines[after])
        self.replace((after, end), (after, end), "\n" + text)


def return_lines_in_forward(lines: list[str]) -> list[int]:
    """Lines `        return ...` in the body of a `def forward`: where a user adds a statement."""
    found, in_forward = [], False
    for number, line in enumerate(lines):
        if re.match(r" {4}def \w+\(", line):
            in_forward = line.startswith("    def forward(")
        elif in_forward and re.match(r" {8}return\b", line):
            found.append(number)
    return found


def edit_stream(text: str, count: int, seed: int) -> tuple[list[Edit], str]:
    """`count` realistic edits of `text` (lines typed before `return`s of `forward` methods,
    half of them deleted again, half of those deletions undone) and the text they leave."""
    rng = random.Random(seed)
    buffer = Buffer(text.split("\n"), count)
    while len(buffer.edits) < count:
        targets = return_lines_in_forward(buffer.lines)
        if not targets:
            raise SystemExit(f"{TARGET}: no `return` in a forward method to edit before")
        line = buffer.type_line(rng.choice(targets) - 1, " " * 8, rng.choice(LINES), rng)
        if rng.random() < 0.5:
            removed = buffer.delete_line(line)
            if rng.random() < 0.5:
                buffer.restore_line(line - 1, removed)
    return buffer.edits, "\n".join(buffer.lines)


def cadence(count: int, scenario: str, seed: int) -> list[tuple[float, bool]]:
    """(pause before the edit, whether it ends a burst) for each of `count` edits."""
    rng = random.Random(seed)
    if scenario == "steady":
        return [(rng.uniform(0.050, 0.100), True) for _ in range(count)]
    delays: list[tuple[float, bool]] = []
    while len(delays) < count:
        burst = rng.randint(4, 16)
        for i in range(burst):
            pause = rng.uniform(0.300, 0.800) if i == 0 else rng.uniform(0.015, 0.035)
            delays.append((pause, i == burst - 1))
    delays = delays[:count]
    delays[-1] = (delays[-1][0], True)
    return delays


# --------------------------------------------------------------------------------------------
# One scenario.


@dataclass
class Outcome:
    scenario: str
    edits: int
    published: int
    latencies_ms: list[float]
    settle_ms: list[float]
    # What the last version's publication said, for the harness's own check.
    final_diagnostics: list[dict]


def file_uri(path: Path) -> str:
    return path.resolve().as_uri()


def is_publication(message: dict, uri: str, version: int | None = None) -> bool:
    if message.get("method") != "textDocument/publishDiagnostics":
        return False
    params = message["params"]
    return params["uri"] == uri and (version is None or params.get("version") == version)


def replay(client: Client, uri: str, version: int, edits: list[Edit], scenario: str, seed: int) -> tuple[Outcome, int]:
    """Sends `edits` after `version` at the scenario's cadence; times every publication."""
    sent: dict[int, float] = {}
    burst_ends: list[int] = []
    for edit, (pause, ends_burst) in zip(edits, cadence(len(edits), scenario, seed)):
        time.sleep(pause)
        version += 1
        sent[version] = client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [edit.change()]},
        )
        if ends_burst and scenario != "steady":
            burst_ends.append(version)
    # The final version is always published, and publications arrive in version order.
    _, last = client.wait(lambda m, v=version: is_publication(m, uri, v))
    published: dict[int, float] = {}
    for arrived, message in client.drain():
        if is_publication(message, uri):
            published.setdefault(message["params"].get("version"), arrived)
    latencies = [(published[v] - sent[v]) * 1000 for v in sent if v in published]
    settle = [(published[v] - sent[v]) * 1000 for v in burst_ends if v in published]
    final = last["params"]["diagnostics"]
    return Outcome(scenario, len(edits), len(latencies), latencies, settle, final), version


def without_versions(diagnostics: list[dict]) -> list[dict]:
    return [{**d, "data": {**d.get("data", {}), "version": None}} for d in diagnostics]


# --------------------------------------------------------------------------------------------
# Report.


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100): a p99 of fewer than 100 samples is their max."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def row(outcome: Outcome) -> str:
    def pair(values: list[float]) -> str:
        if not values:
            return "– | –"
        return f"{percentile(values, 50):.1f} | {percentile(values, 99):.1f}"

    latencies, settle = outcome.latencies_ms, outcome.settle_ms
    most = f"{max(latencies):.1f}" if latencies else "–"
    bursts = str(len(settle)) if outcome.scenario != "steady" else "–"
    return (
        f"| {outcome.scenario} | {outcome.edits} | {outcome.published} | {pair(latencies)} | {most} "
        f"| {bursts} | {pair(settle)} |"
    )


def measure(binary: Path, count: int, seed: int, fast: bool, python: Path | None = None) -> Section:
    """Both scenarios against one server; the whole corpus as the workspace (one package with
    `fast`)."""
    tree = corpus()
    target = tree / TARGET
    workspace = target.parent if fast else tree
    text = target.read_text(encoding="utf-8")
    lines = len(text.splitlines())
    files = sum(1 for _ in workspace.rglob("*.py"))
    uri, root = file_uri(target), file_uri(workspace)

    log = CACHE / "lsp_latency.stderr"
    log.parent.mkdir(parents=True, exist_ok=True)
    client = Client([str(binary), "serve"], log)
    outcomes: list[Outcome] = []
    try:
        began = time.perf_counter()
        client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root,
                "workspaceFolders": [{"uri": root, "name": workspace.name}],
                # With an interpreter the session also follows the installed libraries the
                # corpus imports (torchvision, huggingface_hub, safetensors).
                "initializationOptions": {"python": str(python), "trace": "off"} if python else {},
                "capabilities": {
                    "window": {"workDoneProgress": True},
                    "workspace": {"workspaceFolders": True},
                    "textDocument": {"publishDiagnostics": {"versionSupport": True}},
                },
            },
        )
        client.notify("initialized", {})
        # The editor opens the file at once; the scan of the workspace runs meanwhile.
        version = 0
        opened = client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}},
        )
        first, _ = client.wait(lambda m: is_publication(m, uri, 0))
        open_ms = (first - opened) * 1000
        scanned, end = client.wait(
            lambda m: m.get("method") == "$/progress" and m["params"]["value"].get("kind") == "end",
            timeout=600,
        )
        scan_s, scan_message = scanned - began, end["params"]["value"].get("message", "")
        # The end of the scan re-analyses open documents; let that pass before measuring.
        time.sleep(0.5)
        client.drain()
        after_scan = memory_kib(client.process.pid)

        for number, scenario in enumerate(("steady", "bursts")):
            scenario_seed = seed + number
            # Reopening resets the server's copy to `text`, the base the edit stream is built on.
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            version += 1
            client.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}},
            )
            client.wait(lambda m, v=version: is_publication(m, uri, v))
            time.sleep(0.2)
            client.drain()
            edits, final = edit_stream(text, count, scenario_seed)
            outcome, version = replay(client, uri, version, edits, scenario, scenario_seed)
            outcomes.append(outcome)
            # The harness checks itself (never the time): the diagnostics of the last edited
            # version must be those of its text opened afresh, or an edit was misapplied.
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            version += 1
            client.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": final}},
            )
            fresh = client.wait(lambda m, v=version: is_publication(m, uri, v))[1]["params"]["diagnostics"]
            if without_versions(fresh) != without_versions(outcome.final_diagnostics):
                raise SystemExit(f"{scenario}: the edited document's diagnostics differ from its text's")
        after_edits = memory_kib(client.process.pid)
    finally:
        client.close()

    table = "\n".join(
        [
            "| scenario | edits | published | p50 ms | p99 ms | max ms | bursts | settle p50 ms | settle p99 ms |",
            "|---|---|---|---|---|---|---|---|---|",
            *(row(outcome) for outcome in outcomes),
        ]
    )
    where = (
        f"`{workspace.relative_to(tree)}/`"
        if fast
        else (f"the whole corpus (transformers {WHEELS['transformers']} + timm {WHEELS['timm']})")
    )
    memory = (
        f"Server memory: peak RSS **{after_scan['VmHWM'] / 1024:.1f} MB** after the workspace scan "
        f'("{scan_message}" of {files:,} .py files in {where}, done {scan_s:.2f} s after initialize); '
        f"peak {after_edits['VmHWM'] / 1024:.1f} MB and current {after_edits['VmRSS'] / 1024:.1f} MB after the edits."
    )
    opening = f"First diagnostics {open_ms:.1f} ms after didOpen of the {lines:,}-line file, while the scan ran."
    if python:
        opening += (
            " The session was given an interpreter, so it also follows the installed libraries the corpus "
            "imports (torchvision, huggingface_hub, safetensors), loaded with the scan."
        )
    body = (
        f"`didChange` to the `publishDiagnostics` of that version on `{TARGET}` ({lines:,} lines), "
        f"with {where} as the workspace, {count} edits per scenario. Steady: one edit every "
        "50-100 ms. Bursts: 4-16 edits 15-35 ms apart, 300-800 ms between bursts. Latency "
        "percentiles cover the published versions (a version superseded before its analysis "
        "is never published); settle is the last edit of a burst to the diagnostics of that "
        "version. Percentiles are nearest-rank; target p99 ≤ 20 ms.\n\n"
        f"{table}\n\n{memory}\n{opening}\n"
    )
    latencies = [value for outcome in outcomes for value in outcome.latencies_ms]
    return Section(
        HEADING,
        body,
        {
            "p50 ms": percentile(latencies, 50),
            "p99 ms": percentile(latencies, 99),
            "peak RSS MB": after_edits["VmHWM"] / 1024,
        },
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fast", action="store_true", help="20 edits, one package as the workspace, no RESULTS.md")
    parser.add_argument("--edits", type=int, help="edits per scenario (default 200, 20 with --fast)")
    parser.add_argument("--binary", type=Path, help="use this pt2lsp instead of building target/release/pt2lsp")
    parser.add_argument("--seed", type=int, default=7, help="seed of the edit stream and the cadence")
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    parser.add_argument("--python", type=Path, help="the session follows this interpreter's installed libraries")
    args = parser.parse_args()
    binary = args.binary.resolve() if args.binary else build()
    section = measure(binary, args.edits or (20 if args.fast else 200), args.seed, args.fast, args.python)
    print(section.markdown())
    if not args.fast and not args.no_write:
        write_section(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
