"""Do the shapes pt2lsp infers agree with the exported program's?

For every file given that exports with real torch, the inlay hints of `pt2lsp serve` (a shape
after each assignment that changes one) are compared with the exported graph: the tensor each
assigned line produces last (`node.meta["val"]`, placed by its `stack_trace`) at the example
inputs. A hint's `Dim` names take the example's sizes; `_` and `?` are unknown. Prints
agreements, unknowns and disagreements; exits 1 on a disagreement.

    python bench/shape_agreement.py --binary target/release/pt2lsp --python .venv/bin/python FILES...
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

EXPORT = r'''
import inspect, json, os, re, runpy, sys, torch

def shapes(path):
    sys.path.insert(0, os.path.dirname(path))
    ns = runpy.run_path(path)
    args = ns["example_args"]; kwargs = ns.get("example_kwargs") or {}
    ep = torch.export.export(ns["model"], tuple(args), kwargs, dynamic_shapes=ns.get("dynamic_shapes"), strict=bool(ns.get("strict", False)))
    def concrete(size):
        try:
            return int(size)
        except Exception:
            return int(size.node.hint)
    by_line = {}
    for node in ep.graph.nodes:
        val = node.meta.get("val")
        trace = node.meta.get("stack_trace") or ""
        if not isinstance(val, torch.Tensor) or node.op != "call_function":
            continue
        lines = [int(m.group(1)) for m in re.finditer(r'File "%s", line (\d+)' % re.escape(path), trace)]
        if lines:
            by_line.setdefault(lines[-1], []).append([concrete(s) for s in val.shape])
    # The example's size of each Dim, by name.
    dims = {}
    spec = ns.get("dynamic_shapes") or {}
    names = list(inspect.signature(ns["model"].forward).parameters)
    values = dict(zip(names, args)); values.update(kwargs)
    items = spec.items() if isinstance(spec, dict) else zip(names, spec)
    for name, entry in items:
        tensor = values.get(name)
        if not isinstance(tensor, torch.Tensor) or entry is None:
            continue
        pairs = entry.items() if isinstance(entry, dict) else enumerate(entry)
        for index, dim in pairs:
            dim_name = getattr(dim, "__name__", None)
            if dim_name:
                dims[dim_name] = tensor.shape[index]
    return {"lines": by_line, "dims": dims}

# torch is imported once and the exporter warmed up by one tiny export (its lazy imports cost
# more than most fixtures' exports); each file is exported in a forked child, so that nothing
# one file registers (custom ops, dynamo caches) reaches the next. The model may print: results
# are the lines with the marker.
class _Tiny(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + x.shape[0]

torch.export.export(_Tiny(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: torch.export.Dim("b")}})
for path in sys.argv[1:]:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            result = {"path": path, **shapes(path)}
        except BaseException as exc:
            result = {"path": path, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        sys.stdout.write("PT2LSP-SHAPES " + json.dumps(result) + "\n")
        sys.stdout.flush()
        os._exit(0)
    os.waitpid(pid, 0)
'''


def lsp_hints(binary: str, path: Path) -> list[tuple[int, str]]:
    proc = subprocess.Popen([binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(message: dict) -> None:
        body = json.dumps(message).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        proc.stdin.flush()

    def receive(wanted: int) -> dict:
        while True:
            length = 0
            while (line := proc.stdout.readline().strip()) != b"":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            message = json.loads(proc.stdout.read(length))
            if message.get("id") == wanted and "method" not in message:
                return message

    uri = path.resolve().as_uri()
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": None}})
    receive(1)
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": path.read_text()}}})
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 100000, "character": 0}}
    send({"jsonrpc": "2.0", "id": 2, "method": "textDocument/inlayHint", "params": {"textDocument": {"uri": uri}, "range": whole}})
    hints = receive(2).get("result") or []
    send({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
    receive(3)
    send({"jsonrpc": "2.0", "method": "exit"})
    proc.wait(timeout=10)
    return [(hint["position"]["line"] + 1, hint["label"].removeprefix(": ")) for hint in hints]


def evaluate(shape: str, dims: dict[str, int]) -> list[int | None]:
    sizes = []
    for part in shape.strip("[]").split(", ") if shape != "[]" else []:
        if part in ("_", "?"):
            sizes.append(None)
            continue
        try:
            sizes.append(int(eval(part, {"__builtins__": {}}, dict(dims))))
        except Exception:
            sizes.append(None)
    return sizes


@dataclasses.dataclass
class Agreement:
    agree: int = 0
    unknown: int = 0
    # `file:line: inferred ..., exported ...`, one per disagreeing hint.
    disagreements: list[str] = dataclasses.field(default_factory=list)
    # How many files exported (the others have nothing to compare with).
    exported: int = 0


def exported_shapes(python: str, paths: list[Path]) -> dict[str, dict]:
    """{path: {"lines": {line: sizes}, "dims": {Dim name: example size}}} of the files that export."""
    run = subprocess.run([python, "-c", EXPORT, *(str(path.resolve()) for path in paths)], capture_output=True, text=True)
    found = {}
    for line in run.stdout.splitlines():
        if line.startswith("PT2LSP-SHAPES "):
            result = json.loads(line.removeprefix("PT2LSP-SHAPES "))
            if "error" not in result:
                found[result["path"]] = result
    return found


def agreement(binary: str, python: str, paths: list[Path]) -> Agreement:
    """The editor's inferred shapes against the exported programs', dimension by dimension."""
    counts = Agreement()
    exported = exported_shapes(python, paths)
    for path in paths:
        result = exported.get(str(path.resolve()))
        if result is None:
            continue
        counts.exported += 1
        lines, dims = result["lines"], result["dims"]
        hints = lsp_hints(binary, path)
        for line in sorted({line for line, _ in hints}):
            tensors = lines.get(str(line))
            if not tensors:
                continue  # a parameter, or a line the graph does not name
            # `q, k, v = x.chunk(3)`: one hint per name, the line's last tensors in order.
            shown = [shape for hint_line, shape in hints if hint_line == line]
            for shape, actual in zip(reversed(shown), reversed(tensors)):
                compare(counts, f"{path}:{line}", shape, actual, dims)
    return counts


def compare(counts: Agreement, where: str, shape: str, actual: list[int], dims: dict[str, int]) -> None:
    """Counts one hint's dimensions against the exported tensor's."""
    inferred = evaluate(shape, dims)
    if len(inferred) != len(actual):
        counts.disagreements.append(f"{where}: inferred {shape}, exported {actual}")
        return
    for mine, theirs in zip(inferred, actual):
        if mine is None:
            counts.unknown += 1
        elif mine == theirs:
            counts.agree += 1
        else:
            counts.disagreements.append(f"{where}: inferred {shape} = {inferred}, exported {actual}")
            return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("files", nargs="+", type=Path)
    options = parser.parse_args()
    counts = agreement(options.binary, options.python, options.files)
    for disagreement in counts.disagreements:
        print(disagreement)
    print(
        f"{counts.exported} files exported; dimensions: {counts.agree} agree, {counts.unknown} unknown, "
        f"{len(counts.disagreements)} disagree"
    )
    return 1 if counts.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
