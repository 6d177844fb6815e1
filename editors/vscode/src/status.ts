// The tracer's state for the status bar, driven by the server's `$/progress` notifications.
// Pure: the extension feeds it progress values and renders what `view()` returns.
//
// The contract with the server: a work-done progress whose token starts with `pt2lsp/trace`, or
// whose `begin` title mentions tracing or exporting, is a tracer job; its `end` message says
// whether it failed ("failed", "crashed", "timed out", "2 errors", "1 problem: m.py:5", or a message starting with "error"). Any other progress
// (the workspace scan, `pt2lsp/scan/N`) shows as indexing. A tracer that has never run is idle.

export type TracerState = "starting" | "idle" | "indexing" | "tracing" | "failed" | "static" | "stopped";

/** The LSP work-done progress values, as far as this module reads them. */
export type ProgressValue =
  | { kind: "begin"; title?: string; message?: string; percentage?: number }
  | { kind: "report"; message?: string; percentage?: number }
  | { kind: "end"; message?: string };

export interface StatusView {
  text: string;
  tooltip: string;
  /** Draw the item with the error background. */
  error: boolean;
}

// "2 errors" and "2 problems: m.py:5, n.py:11" are failures, "no errors", "no problems" and
// "0 errors" are not.
const FAILURE = /\b(fail(ed|ure|s)?|crash(ed|es)?|timed out|[1-9]\d* (errors?|problems?))\b|^error\b/i;

export function isTracerJob(token: string, title: string | undefined): boolean {
  return token.startsWith("pt2lsp/trace") || /\b(trac(e|es|ing)|export(s|ing)?)\b/i.test(title ?? "");
}

export function isFailure(message: string | undefined): boolean {
  return FAILURE.test(message ?? "");
}

export class TracerStatus {
  /** Running tracer jobs and scans, by token, with their latest message. */
  private readonly traces = new Map<string, string | undefined>();
  private readonly scans = new Map<string, string | undefined>();
  private running = false;
  private starting = false;
  private lastFailure: string | undefined;
  private lastResult: string | undefined;

  /** `staticOnly`: tracing is off (the setting, or an untrusted workspace). */
  constructor(private staticOnly: boolean) {}

  setStaticOnly(staticOnly: boolean): void {
    this.staticOnly = staticOnly;
  }

  serverStarting(): void {
    this.running = false;
    this.starting = true;
  }

  serverRunning(): void {
    this.running = true;
    this.starting = false;
  }

  serverStopped(): void {
    this.running = false;
    this.starting = false;
    this.traces.clear();
    this.scans.clear();
  }

  /** Feeds one `$/progress` value. */
  progress(token: string | number, value: ProgressValue): void {
    const key = String(token);
    switch (value.kind) {
      case "begin":
        if (isTracerJob(key, value.title)) {
          this.traces.set(key, value.message ?? value.title);
          this.lastFailure = undefined;
        } else {
          this.scans.set(key, value.message ?? value.title);
        }
        break;
      case "report":
        if (this.traces.has(key)) {
          this.traces.set(key, value.message ?? this.traces.get(key));
        } else if (this.scans.has(key)) {
          this.scans.set(key, value.message ?? this.scans.get(key));
        }
        break;
      case "end":
        if (this.traces.delete(key)) {
          if (isFailure(value.message)) {
            this.lastFailure = value.message;
          } else {
            this.lastResult = value.message;
          }
        } else {
          this.scans.delete(key);
        }
        break;
    }
  }

  get state(): TracerState {
    if (this.starting) {
      return "starting";
    }
    if (!this.running) {
      return "stopped";
    }
    if (this.traces.size > 0) {
      return "tracing";
    }
    if (this.lastFailure !== undefined) {
      return "failed";
    }
    if (this.scans.size > 0) {
      return "indexing";
    }
    return this.staticOnly ? "static" : "idle";
  }

  view(): StatusView {
    const more = "Click to show the output.";
    switch (this.state) {
      case "starting":
        return { text: "$(loading~spin) pt2lsp", tooltip: `pt2lsp: starting the server. ${more}`, error: false };
      case "stopped":
        return { text: "$(circle-slash) pt2lsp", tooltip: `pt2lsp: the server is not running. ${more}`, error: true };
      case "tracing": {
        const message = [...this.traces.values()].filter(Boolean).pop();
        return {
          text: "$(sync~spin) pt2lsp: tracing",
          tooltip: `pt2lsp: the tracer is running torch.export${message ? ` (${message})` : ""}. ${more}`,
          error: false,
        };
      }
      case "failed":
        return {
          text: "$(error) pt2lsp: trace failed",
          tooltip: `pt2lsp: the last trace failed${this.lastFailure ? `: ${this.lastFailure}` : ""}. ${more}`,
          error: true,
        };
      case "indexing":
        return { text: "$(sync~spin) pt2lsp: indexing", tooltip: `pt2lsp: indexing the workspace. ${more}`, error: false };
      case "static":
        return {
          text: "$(shield) pt2lsp: static",
          tooltip: `pt2lsp: static analysis only; the tracer is off (pt2lsp.trace, or an untrusted workspace). ${more}`,
          error: false,
        };
      case "idle":
        return {
          text: "$(check) pt2lsp",
          tooltip: `pt2lsp: tracer idle${this.lastResult ? ` (last: ${this.lastResult})` : ""}. ${more}`,
          error: false,
        };
    }
  }
}
