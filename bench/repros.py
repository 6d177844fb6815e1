#!/usr/bin/env python3
"""How well pt2lsp finds real users' export failures: the reproduction set in tests/repros.

Each case there is a user's code from a torch.export issue, labelled by the real exporter (torch
2.15): a failing case carries `# error[PTxxx]` on the line torch fails at; an exporting case
carries no mark (tests/python/test_repros.py proves both against real torch). This script runs

  - the static pass: `pt2lsp check --isolated --format json tests/repros`
  - the tracer:      the same with `--trace --python PY`

and prints, per pass, how many failing cases get an error-severity diagnostic on a marked line
(and how many of those with the marked code), how many exporting cases get a false error, and a
table per case. Only stdlib; nothing is written.

    python3 bench/repros.py --binary target/release/pt2lsp --python /work/main/.venv/bin/python
    python3 bench/repros.py --binary ... --static-only     # no Python needed
    python3 bench/repros.py --binary ... --json out.json   # the numbers and tables as JSON too
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPROS = ROOT / "tests" / "repros"
COMMENT_MARKS = re.compile(r"#\s*((?:(?:error|warning|info)\[PT\d{3}\]\s*)+)$")
MARK = re.compile(r"\b(error|warning|info)\[(PT\d{3})\]")


@dataclass
class Case:
    """One reproduction: its files and the error marks the real exporter put there."""

    name: str
    files: list[Path]
    marks: dict[tuple[str, int], set[str]]  # (resolved file, line) -> codes

    @property
    def fails(self) -> bool:
        return bool(self.marks)


@dataclass
class Outcome:
    """What one pass reported on one case."""

    errors: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, code)
    others: int = 0  # warnings and infos, reported but not scored

    def on_marked_line(self, case: Case) -> bool:
        return any((f, line) in case.marks for f, line, _ in self.errors)

    def with_marked_code(self, case: Case) -> bool:
        return any(code in case.marks.get((f, line), ()) for f, line, code in self.errors)


def load_cases(root: Path) -> list[Case]:
    cases = []
    for p in sorted(root.iterdir()):
        if p.name.startswith(("_", ".")) or p.name == "__pycache__":
            continue
        if p.is_file() and p.suffix == ".py":
            files = [p]
        elif p.is_dir():
            files = sorted(f for f in p.rglob("*.py") if "__pycache__" not in f.parts)
        else:
            continue
        marks: dict[tuple[str, int], set[str]] = {}
        for f in files:
            for i, text in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
                m = COMMENT_MARKS.search(text.rstrip())
                if m:
                    codes = {c for sev, c in MARK.findall(m.group(1)) if sev == "error"}
                    if codes:
                        marks[(str(f.resolve()), i)] = codes
        cases.append(Case(p.stem if p.is_file() else p.name, files, marks))
    return cases


def run_pass(binary: str, root: Path, trace: bool, python: str | None, timeout: int) -> tuple[list[dict], float]:
    cmd = [binary, "check", "--isolated", "--exit-zero", "--format", "json"]
    if trace:
        cmd += ["--trace", "--timeout", str(timeout)]
        if python:
            cmd += ["--python", python]
    cmd.append(str(root))
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    try:
        return json.loads(proc.stdout or "[]"), elapsed
    except json.JSONDecodeError:
        sys.exit(f"{' '.join(cmd)} printed no JSON:\n{proc.stdout[:2000]}\n{proc.stderr[-2000:]}")


def score(cases: list[Case], diagnostics: list[dict]) -> dict[str, Outcome]:
    owner = {str(f.resolve()): c.name for c in cases for f in c.files}
    outcomes = {c.name: Outcome() for c in cases}
    for d in diagnostics:
        path = Path(d["file"])
        f = str((path if path.is_absolute() else ROOT / path).resolve())
        name = owner.get(f)
        if name is None:
            continue
        if d.get("severity") == "error":
            outcomes[name].errors.append((f, int(d["line"]), d["code"]))
        else:
            outcomes[name].others += 1
    return outcomes


def summarize(label: str, cases: list[Case], outcomes: dict[str, Outcome], elapsed: float) -> dict:
    failing = [c for c in cases if c.fails]
    exporting = [c for c in cases if not c.fails]
    located = [c for c in failing if outcomes[c.name].on_marked_line(c)]
    coded = [c for c in failing if outcomes[c.name].with_marked_code(c)]
    false = [c for c in exporting if outcomes[c.name].errors]
    print(f"\n{label} ({elapsed:.2f} s)")
    print(f"  failing cases with an error on the marked line: {len(located)}/{len(failing)}"
          f" (with the marked code: {len(coded)}/{len(failing)})")
    print(f"  exporting cases with a false error:             {len(false)}/{len(exporting)}")
    return {
        "seconds": round(elapsed, 2),
        "failing": len(failing),
        "located": len(located),
        "located_with_code": len(coded),
        "exporting": len(exporting),
        "false_errors": len(false),
    }


def describe(case: Case, outcome: Outcome) -> str:
    if not outcome.errors:
        return "-"
    parts = []
    for f, line, code in sorted(set(outcome.errors), key=lambda e: (e[1], e[2])):
        hit = "*" if (f, line) in case.marks else ""
        parts.append(f"{code}@{line}{hit}")
    return " ".join(parts)


def table(cases: list[Case], passes: dict[str, dict[str, Outcome]]) -> list[dict]:
    rows = []
    heads = list(passes)
    print("\nper case (errors as CODE@line, * = on a marked line):")
    print(f"  {'case':44} {'torch':10} " + " ".join(f"{h:28}" for h in heads))
    for c in cases:
        expected = ", ".join(f"{'/'.join(sorted(codes))}@{line}" for (_, line), codes in sorted(c.marks.items(), key=lambda kv: kv[0][1]))
        verdicts = {}
        cells = []
        for h in heads:
            o = passes[h][c.name]
            if c.fails:
                verdict = "found" if o.on_marked_line(c) else ("elsewhere" if o.errors else "missed")
            else:
                verdict = "false error" if o.errors else "clean"
            verdicts[h] = {"verdict": verdict, "errors": describe(c, o)}
            cells.append(f"{verdict + ' ' + describe(c, o):28}")
        print(f"  {c.name:44} {expected or 'exports':10} " + " ".join(cells))
        rows.append({"case": c.name, "torch": expected or "exports", **verdicts})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(ROOT / "target" / "release" / "pt2lsp"))
    ap.add_argument("--python", help="the tracer's interpreter (torch 2.15); default: pt2lsp's own choice")
    ap.add_argument("--repros", default=str(REPROS))
    ap.add_argument("--timeout", type=int, default=300, help="seconds per traced entrypoint")
    ap.add_argument("--static-only", action="store_true")
    ap.add_argument("--json", help="also write the summary and the table here")
    args = ap.parse_args()

    root = Path(args.repros).resolve()
    cases = load_cases(root)
    print(f"{len(cases)} cases in {root.relative_to(ROOT) if root.is_relative_to(ROOT) else root}: "
          f"{sum(c.fails for c in cases)} fail with torch 2.15, {sum(not c.fails for c in cases)} export")

    passes: dict[str, dict[str, Outcome]] = {}
    summary: dict[str, dict] = {}
    diags, elapsed = run_pass(args.binary, root, False, None, args.timeout)
    passes["static"] = score(cases, diags)
    summary["static"] = summarize("static: pt2lsp check --format json", cases, passes["static"], elapsed)
    if not args.static_only:
        diags, elapsed = run_pass(args.binary, root, True, args.python, args.timeout)
        passes["trace"] = score(cases, diags)
        summary["trace"] = summarize("trace: pt2lsp check --trace --format json", cases, passes["trace"], elapsed)
    rows = table(cases, passes)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "cases": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
