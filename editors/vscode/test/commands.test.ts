// Command arguments and the messages shown when the server refuses a command.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  COMMANDS,
  defaultExportPath,
  describeCommandFailure,
  exportArguments,
  isUnsupportedCommand,
  retraceArguments,
  serverCommandsToRegister, serverReportedExport } from "../src/commands";

test("pt2lsp.exportPt2 is sent [uri, entry or null, output path]", () => {
  assert.deepEqual(exportArguments("file:///m.py", "/out/m.pt2"), ["file:///m.py", null, "/out/m.pt2"]);
  assert.deepEqual(exportArguments("file:///m.py", "/out/m.pt2", "encoder"), ["file:///m.py", "encoder", "/out/m.pt2"]);
  assert.deepEqual(retraceArguments("file:///m.py"), ["file:///m.py"]);
  assert.deepEqual(retraceArguments(), []);
});

test("the save dialog suggests the model's name with .pt2", () => {
  assert.equal(defaultExportPath("/w/models/encoder.py"), "/w/models/encoder.pt2");
  assert.equal(defaultExportPath("/w/notes"), "/w/notes.pt2");
});

test("a server without the command gets a message that says to update it", () => {
  // What pt2lsp 0.1 answers: invalid params, "unknown command".
  const error = { code: -32602, message: "unknown command `pt2lsp.exportPt2`" };
  assert.ok(isUnsupportedCommand(error));
  const message = describeCommandFailure(COMMANDS.exportPt2, error);
  assert.match(message, /cannot export the model to \.pt2 yet/);
  assert.match(message, /unknown command/);
  assert.ok(isUnsupportedCommand({ code: -32601, message: "Method not found" }));
});

test("a model that does not export lists each problem with its file and line", () => {
  const error = {
    code: -32803,
    message: "export_net.py (model) does not export: ...",
    data: {
      status: "failed",
      diagnostics: [
        { file: "/w/mymodels/heads.py", line: 11, place: "mymodels/heads.py:11", code: "PT401", message: "guard on batch" },
        { file: "/w/mymodels/helpers.py", line: 5, code: "PT101", message: "data-dependent branch" },
      ],
    },
  };
  assert.equal(
    describeCommandFailure(COMMANDS.exportPt2, error),
    "pt2lsp could not export the model to .pt2, 2 problems: mymodels/heads.py:11: PT401 guard on batch; " +
      "/w/mymodels/helpers.py:5: PT101 data-dependent branch",
  );
});

test("other failures pass the server's reason through", () => {
  const message = describeCommandFailure(COMMANDS.retrace, { code: -32603, message: "worker crashed" });
  assert.equal(message, "pt2lsp could not run the tracer again: worker crashed");
  assert.match(describeCommandFailure(COMMANDS.exportPt2, new Error("connection closed")), /connection closed/);
  assert.match(describeCommandFailure("pt2lsp.other", "boom"), /`pt2lsp.other`: boom/);
});

test("the language client registers only the server commands the extension does not wrap", () => {
  assert.deepEqual(serverCommandsToRegister(["pt2lsp.reanalyze", "pt2lsp.exportPt2", "pt2lsp.retrace"]), ["pt2lsp.reanalyze"]);
  assert.deepEqual(serverCommandsToRegister(undefined), []);
});

test("the client stays quiet after an export the server reported itself", () => {
  assert.equal(serverReportedExport({ status: "exported", file: "/m.py", report: {} }), true);
  assert.equal(serverReportedExport({ status: "failed" }), false);
  assert.equal(serverReportedExport(null), false);
  assert.equal(serverReportedExport(undefined), false);
});
