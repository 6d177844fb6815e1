// Where the server binary comes from: the setting, the bundled bin/, then PATH.

import assert from "node:assert/strict";
import { test } from "node:test";

import { bundledPath, environmentCandidates, findServer, searchPath } from "../src/binary";

const files = (...paths: string[]) => (candidate: string) => paths.includes(candidate);

test("the setting wins over the bundled binary and PATH", () => {
  const found = findServer({
    configured: "/opt/pt2lsp/pt2lsp",
    extensionPath: "/ext",
    platform: "linux",
    pathEnv: "/usr/bin",
    isFile: files("/opt/pt2lsp/pt2lsp", "/ext/bin/pt2lsp", "/usr/bin/pt2lsp"),
  });
  assert.deepEqual(found, { kind: "found", command: "/opt/pt2lsp/pt2lsp", source: "setting" });
});

test("a setting that names no file is an error that says so", () => {
  const found = findServer({ configured: "/nope/pt2lsp", extensionPath: "/ext", platform: "linux", isFile: files("/ext/bin/pt2lsp") });
  assert.equal(found.kind, "missing");
  assert.match(found.kind === "missing" ? found.message : "", /pt2lsp\.server\.path.*\/nope\/pt2lsp/);
});

test("the bundled binary comes before PATH", () => {
  const found = findServer({ extensionPath: "/ext", platform: "linux", pathEnv: "/usr/bin", isFile: files("/ext/bin/pt2lsp", "/usr/bin/pt2lsp") });
  assert.deepEqual(found, { kind: "found", command: "/ext/bin/pt2lsp", source: "bundled" });
});

test("without a bundled binary, pt2lsp is looked up on PATH", () => {
  const found = findServer({ extensionPath: "/ext", platform: "linux", pathEnv: "/a::/usr/local/bin", isFile: files("/usr/local/bin/pt2lsp") });
  assert.deepEqual(found, { kind: "found", command: "/usr/local/bin/pt2lsp", source: "path" });
});

test("nothing found: the message tells how to install or configure", () => {
  const found = findServer({ extensionPath: "/ext", platform: "linux", pathEnv: "/usr/bin", isFile: files() });
  assert.equal(found.kind, "missing");
  assert.match(found.kind === "missing" ? found.message : "", /pip install \.\/python.*pt2lsp\.server\.path/);
});

test("Windows: pt2lsp.exe, PATHEXT and ; separators", () => {
  assert.equal(bundledPath("C:\\ext", "win32"), "C:\\ext\\bin\\pt2lsp.exe");
  assert.equal(searchPath("pt2lsp", "C:\\a;C:\\tools", "win32", files("C:\\tools\\pt2lsp.EXE"), ".COM;.EXE"), "C:\\tools\\pt2lsp.EXE");
});

test("the selected environment's pt2lsp comes before the bundled one and PATH", () => {
  const isFile = files("/proj/.venv/bin/pt2lsp", "/ext/bin/pt2lsp", "/usr/bin/pt2lsp");
  const found = findServer({ interpreter: "/proj/.venv/bin/python", extensionPath: "/ext", platform: "linux", pathEnv: "/usr/bin", isFile });
  assert.deepEqual(found, { kind: "found", command: "/proj/.venv/bin/pt2lsp", source: "environment" });
  // The setting still wins.
  const configured = findServer({ configured: "/usr/bin/pt2lsp", interpreter: "/proj/.venv/bin/python", extensionPath: "/ext", platform: "linux", isFile });
  assert.deepEqual(configured, { kind: "found", command: "/usr/bin/pt2lsp", source: "setting" });
});

test("an environment without pt2lsp falls back to the bundled binary", () => {
  const found = findServer({ interpreter: "/usr/bin/python3", extensionPath: "/ext", platform: "linux", isFile: files("/ext/bin/pt2lsp") });
  assert.deepEqual(found, { kind: "found", command: "/ext/bin/pt2lsp", source: "bundled" });
});

test("Windows environments: Scripts\\pt2lsp.exe beside a venv's python.exe, or under a conda env's", () => {
  assert.deepEqual(environmentCandidates("C:\\proj\\.venv\\Scripts\\python.exe", "win32"), [
    "C:\\proj\\.venv\\Scripts\\pt2lsp.exe",
    "C:\\proj\\.venv\\Scripts\\Scripts\\pt2lsp.exe",
  ]);
  const found = findServer({ interpreter: "C:\\conda\\envs\\ml\\python.exe", extensionPath: "C:\\ext", platform: "win32", isFile: files("C:\\conda\\envs\\ml\\Scripts\\pt2lsp.exe") });
  assert.deepEqual(found, { kind: "found", command: "C:\\conda\\envs\\ml\\Scripts\\pt2lsp.exe", source: "environment" });
});
