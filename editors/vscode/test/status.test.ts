// The status bar follows the server's $/progress: tracing while a tracer job runs, failed when
// its end says so, idle or static otherwise.

import assert from "node:assert/strict";
import { test } from "node:test";

import { isFailure, isTracerJob, TracerStatus } from "../src/status";

function running(staticOnly = false): TracerStatus {
  const status = new TracerStatus(staticOnly);
  status.serverStarting();
  assert.equal(status.state, "starting");
  status.serverRunning();
  return status;
}

test("a tracer job shows tracing, then idle when it ends well", () => {
  const status = running();
  assert.equal(status.state, "idle");
  status.progress("pt2lsp/trace/1", { kind: "begin", title: "pt2lsp: tracing model.py" });
  assert.equal(status.state, "tracing");
  assert.match(status.view().text, /tracing/);
  status.progress("pt2lsp/trace/1", { kind: "report", message: "entrypoint encoder" });
  assert.match(status.view().tooltip, /entrypoint encoder/);
  status.progress("pt2lsp/trace/1", { kind: "end", message: "exported 2 entrypoints" });
  assert.equal(status.state, "idle");
  assert.equal(status.view().error, false);
});

test("a failed trace stays failed until the next trace starts", () => {
  const status = running();
  status.progress(7, { kind: "begin", title: "Tracing model.py" });
  status.progress(7, { kind: "end", message: "export failed: 2 errors" });
  assert.equal(status.state, "failed");
  assert.equal(status.view().error, true);
  assert.match(status.view().tooltip, /export failed/);
  status.progress("pt2lsp/scan/2", { kind: "begin", title: "pt2lsp: indexing workspace" });
  status.progress("pt2lsp/scan/2", { kind: "end", message: "12 files indexed" });
  assert.equal(status.state, "failed");
  status.progress(8, { kind: "begin", title: "Tracing model.py" });
  assert.equal(status.state, "tracing");
});

test("the workspace scan shows as indexing, not tracing", () => {
  const status = running();
  status.progress("pt2lsp/scan/1", { kind: "begin", title: "pt2lsp: indexing workspace", percentage: 0 });
  assert.equal(status.state, "indexing");
  status.progress("pt2lsp/scan/1", { kind: "end", message: "3 files indexed" });
  assert.equal(status.state, "idle");
});

test("with the tracer off the item says static; a stopped server is an error", () => {
  const status = running(true);
  assert.equal(status.state, "static");
  status.serverStopped();
  assert.equal(status.state, "stopped");
  assert.equal(status.view().error, true);
});

test("job and failure classification", () => {
  assert.ok(isTracerJob("pt2lsp/trace/3", undefined));
  assert.ok(isTracerJob("x", "pt2lsp: exporting encoder"));
  assert.ok(!isTracerJob("pt2lsp/scan/1", "pt2lsp: indexing workspace"));
  assert.ok(isFailure("worker crashed"));
  assert.ok(isFailure("timed out after 60 s"));
  assert.ok(isFailure("2 errors"));
  assert.ok(isFailure("2 problems: mymodels/heads.py:11, mymodels/helpers.py:5"));
  assert.ok(isFailure("1 problem: if_sum.py:8"));
  assert.ok(!isFailure("no problems"));
  assert.ok(isFailure("Error: entrypoint `model` is not defined"));
  assert.ok(!isFailure("no errors found"));
  assert.ok(!isFailure("0 errors"));
  assert.ok(!isFailure(undefined));
});
