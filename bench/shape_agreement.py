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
import json
import re
import subprocess
import sys
from pathlib import Path

EXPORT = r'''
import json, runpy, sys, re, torch
path = sys.argv[1]
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
        by_line[lines[-1]] = [concrete(s) for s in val.shape]
# The example's size of each Dim, by name.
dims = {}
spec = ns.get("dynamic_shapes") or {}
import inspect
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
print(json.dumps({"lines": by_line, "dims": dims}))
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("files", nargs="+", type=Path)
    options = parser.parse_args()
    agree = unknown = disagree = 0
    for path in options.files:
        run = subprocess.run([options.python, "-c", EXPORT, str(path.resolve())], capture_output=True, text=True)
        if run.returncode != 0:
            continue
        exported = json.loads(run.stdout.strip().splitlines()[-1])
        lines, dims = exported["lines"], exported["dims"]
        for line, shape in lsp_hints(options.binary, path):
            actual = lines.get(str(line))
            if actual is None:
                continue  # a parameter, or a line the graph does not name
            inferred = evaluate(shape, dims)
            if len(inferred) != len(actual):
                disagree += 1
                print(f"{path}:{line}: inferred {shape}, exported {actual}")
                continue
            for mine, theirs in zip(inferred, actual):
                if mine is None:
                    unknown += 1
                elif mine == theirs:
                    agree += 1
                else:
                    disagree += 1
                    print(f"{path}:{line}: inferred {shape} = {inferred}, exported {actual}")
                    break
    print(f"dimensions: {agree} agree, {unknown} unknown, {disagree} disagree")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
