// package.json declares what the code uses: every command the extension registers, every setting
// it reads, and limited support for untrusted workspaces.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { COMMANDS } from "../src/commands";

// Compiled to out/test/, two levels below the package.
const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));

test("every command is contributed with a title", () => {
  const contributed = new Map<string, string>(manifest.contributes.commands.map((c: { command: string; title: string }) => [c.command, c.title]));
  assert.deepEqual([...contributed.keys()].sort(), Object.values(COMMANDS).sort());
  assert.equal(contributed.get(COMMANDS.exportPt2), "Export model to .pt2…");
});

test("the settings are declared with the server's values", () => {
  const properties = manifest.contributes.configuration.properties;
  for (const key of ["pt2lsp.server.path", "pt2lsp.python", "pt2lsp.trace", "pt2lsp.strict", "pt2lsp.timeout"]) {
    assert.ok(properties[key], `${key} is declared`);
  }
  assert.deepEqual(properties["pt2lsp.trace"].enum, ["on-save", "on-open-and-save", "off"]);
  assert.equal(properties["pt2lsp.strict"].type, "boolean");
  assert.equal(properties["pt2lsp.timeout"].type, "number");
});

test("the extension starts for Python files and for Jupyter notebooks", () => {
  assert.deepEqual(manifest.activationEvents, ["onLanguage:python", "onNotebook:jupyter-notebook"]);
});

test("untrusted workspaces are supported in a limited way, without choosing binaries", () => {
  const untrusted = manifest.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, "limited");
  assert.deepEqual(untrusted.restrictedConfigurations.sort(), ["pt2lsp.python", "pt2lsp.server.path"]);
});

test("the manifest is complete enough for vsce to package without prompts", () => {
  assert.ok(manifest.repository?.url);
  assert.ok(manifest.scripts.package.includes("--no-dependencies"), "the bundle carries the dependencies");
  assert.ok(manifest.license);
  assert.ok(manifest.publisher);
  assert.equal(manifest.main, "./dist/extension.js");
  assert.ok(manifest.activationEvents.includes("onLanguage:python"));
});
