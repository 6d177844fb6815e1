// Settings → what the server is sent: only what the user set, trust applied, bad values dropped.

import assert from "node:assert/strict";
import { test } from "node:test";

import { explicitValue, expandPath, needsRestart, resolveSettings, serverPayload } from "../src/settings";

const trusted = { trusted: true, home: "/home/ada", workspaceFolder: "/work/proj" };

test("unset settings send nothing, so the project's pyproject.toml decides", () => {
  assert.deepEqual(resolveSettings({}, trusted), { settings: {}, warnings: [] });
});

test("settings the user set are sent under the pt2lsp key", () => {
  const { settings, warnings } = resolveSettings(
    {
      trace: "on-save",
      strict: true,
      unsafeFixes: true,
      timeout: 30,
      inlayHints: false,
      followLibraries: false,
      maxFileSize: 4096,
      select: ["PT1", " PT4 "],
      ignore: ["PT402"],
      python: "~/venv/bin/python",
    },
    trusted,
  );
  assert.deepEqual(warnings, []);
  assert.deepEqual(serverPayload(settings), {
    pt2lsp: {
      trace: "on-save",
      strict: true,
      unsafeFixes: true,
      timeout: 30,
      inlayHints: false,
      followLibraries: false,
      maxFileSize: 4096,
      select: ["PT1", "PT4"],
      ignore: ["PT402"],
      python: "/home/ada/venv/bin/python",
    },
  });
});

test("an untrusted workspace gets trace off and no interpreter, whatever the settings say", () => {
  const { settings } = resolveSettings(
    { trace: "on-save", python: "/usr/bin/python3", strict: true },
    { ...trusted, trusted: false, pythonFromExtension: "/venv/bin/python" },
  );
  assert.deepEqual(settings, { trace: "off", strict: true });
});

test("the Python extension's interpreter is used unless pt2lsp.python is set", () => {
  const context = { ...trusted, pythonFromExtension: "/work/proj/.venv/bin/python" };
  assert.equal(resolveSettings({}, context).settings.python, "/work/proj/.venv/bin/python");
  assert.equal(resolveSettings({ python: "" }, context).settings.python, "/work/proj/.venv/bin/python");
  assert.equal(resolveSettings({ python: "/opt/py/bin/python" }, context).settings.python, "/opt/py/bin/python");
});

test("bad values are reported and dropped, the others still sent", () => {
  const { settings, warnings } = resolveSettings(
    {
      trace: "always",
      strict: "yes",
      unsafeFixes: 1,
      timeout: -1,
      inlayHints: "no",
      followLibraries: "yes",
      maxFileSize: 1.5,
      select: "PT1",
      ignore: ["PT2"],
    },
    trusted,
  );
  assert.deepEqual(settings, { ignore: ["PT2"] });
  assert.equal(warnings.length, 8);
  assert.match(warnings[0], /pt2lsp\.trace/);
});

test("paths expand ~ and ${workspaceFolder}; relative paths are anchored to the folder", () => {
  assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", trusted), "/work/proj/.venv/bin/python");
  assert.equal(expandPath("~/bin/pt2lsp", trusted), "/home/ada/bin/pt2lsp");
  assert.equal(expandPath(".venv/bin/python", trusted), "/work/proj/.venv/bin/python");
  assert.equal(expandPath("python3", trusted), "python3");
});

test("only a new server path needs a new server process", () => {
  assert.equal(needsRestart({ serverPath: "/a" }, { serverPath: "/b" }), true);
  assert.equal(needsRestart({ serverPath: "/a", strict: true }, { serverPath: "/a", strict: false }), false);
});

test("an untrusted workspace's own server path and interpreter are not read", () => {
  const inspected = { globalValue: "/home/ada/bin/pt2lsp", workspaceValue: "./evil" };
  assert.equal(explicitValue("server.path", inspected, false), "/home/ada/bin/pt2lsp");
  assert.equal(explicitValue("server.path", inspected, true), "./evil");
  assert.equal(explicitValue("python", { workspaceValue: "./evil/python" }, false), undefined);
  assert.equal(explicitValue("strict", { workspaceValue: true, globalValue: false }, false), true);
  assert.equal(explicitValue("timeout", { workspaceFolderValue: 5, workspaceValue: 10 }, true), 5);
  assert.equal(explicitValue("trace", undefined, true), undefined);
});
