// The user's `pt2lsp.*` settings, turned into the options the server reads (`initializationOptions`
// and `workspace/didChangeConfiguration`). Pure: no `vscode` import, so `npm test` runs it in node.
//
// The server layers the editor's settings over the project's `[tool.pt2lsp]`: a key the editor
// sends always wins. So only the keys the user actually set are sent, never the manifest's
// defaults; an unset `strict` lets the project's `pyproject.toml` decide.

import * as path from "node:path";

/** The settings as read from VS Code, each `undefined` unless the user set it somewhere. */
export interface UserSettings {
  serverPath?: unknown;
  python?: unknown;
  trace?: unknown;
  strict?: unknown;
  unsafeFixes?: unknown;
  timeout?: unknown;
  inlayHints?: unknown;
  followLibraries?: unknown;
  maxFileSize?: unknown;
  select?: unknown;
  ignore?: unknown;
}

/** What the server accepts under the `pt2lsp` key (see lsp/src/settings.rs). */
export interface ServerSettings {
  python?: string;
  trace?: "on-save" | "on-open-and-save" | "off";
  strict?: boolean;
  unsafeFixes?: boolean;
  timeout?: number;
  inlayHints?: boolean;
  followLibraries?: boolean;
  maxFileSize?: number;
  select?: string[];
  ignore?: string[];
}

/** Where VS Code found a setting (`WorkspaceConfiguration.inspect`), defaults left out. */
export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * Settings that name a program to run. An untrusted workspace must not choose them: VS Code
 * drops their workspace values from `get()` (package.json's `restrictedConfigurations`), and
 * `inspect()`, which this extension reads, must do the same.
 */
export const RESTRICTED_KEYS: readonly string[] = ["server.path", "python"];

/** The value the user set for `key` (under `pt2lsp.`), or undefined when only the default applies. */
export function explicitValue(key: string, inspected: Inspected | undefined, trusted: boolean): unknown {
  if (inspected === undefined) {
    return undefined;
  }
  if (!trusted && RESTRICTED_KEYS.includes(key)) {
    return inspected.globalValue;
  }
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

/** Everything that decides the settings besides the user's own values. */
export interface Context {
  /** VS Code's workspace trust: untrusted workspaces get static analysis only. */
  trusted: boolean;
  /** The interpreter selected in the Python extension, when it is installed. */
  pythonFromExtension?: string;
  /** For `~` and `${workspaceFolder}` in paths. */
  home?: string;
  workspaceFolder?: string;
}

export interface Resolved {
  settings: ServerSettings;
  /** Values that were ignored, one sentence each, for the output channel. */
  warnings: string[];
}

/** Expands a leading `~` and `${workspaceFolder}`; makes a relative path absolute against the folder. */
export function expandPath(value: string, context: Pick<Context, "home" | "workspaceFolder">): string {
  let expanded = value.trim();
  if (context.workspaceFolder !== undefined) {
    expanded = expanded.split("${workspaceFolder}").join(context.workspaceFolder);
  }
  if (context.home !== undefined && (expanded === "~" || expanded.startsWith("~/"))) {
    expanded = context.home + expanded.slice(1);
  }
  // A bare name such as `python3` is looked up on PATH by whoever runs it; only paths with a
  // separator are anchored to the workspace.
  const hasSeparator = expanded.includes("/") || expanded.includes("\\");
  if (hasSeparator && !path.isAbsolute(expanded) && context.workspaceFolder !== undefined) {
    expanded = path.join(context.workspaceFolder, expanded);
  }
  return expanded;
}

function codes(key: string, value: unknown, warnings: string[]): string[] | undefined {
  if (value === undefined) {
    return undefined;
  }
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) {
    return value.map((item: string) => item.trim()).filter((item) => item !== "");
  }
  warnings.push(`ignoring pt2lsp.${key}: expected a list of rule codes such as ["PT1"]`);
  return undefined;
}

/** The settings to send to the server, given what the user set and the workspace's state. */
export function resolveSettings(user: UserSettings, context: Context): Resolved {
  const warnings: string[] = [];
  const settings: ServerSettings = {};

  if (!context.trusted) {
    // The tracer imports and runs the workspace's code: never in an untrusted workspace. The
    // interpreter is left out too, since nothing will run it.
    settings.trace = "off";
  } else {
    if (user.trace === "on-save" || user.trace === "on-open-and-save" || user.trace === "off") {
      settings.trace = user.trace;
    } else if (user.trace !== undefined) {
      warnings.push(`ignoring pt2lsp.trace: expected "on-save", "on-open-and-save" or "off", got ${JSON.stringify(user.trace)}`);
    }
    if (typeof user.python === "string" && user.python.trim() !== "") {
      settings.python = expandPath(user.python, context);
    } else if (user.python !== undefined && user.python !== "") {
      warnings.push("ignoring pt2lsp.python: expected a path to a Python interpreter");
    }
    if (settings.python === undefined && context.pythonFromExtension) {
      settings.python = context.pythonFromExtension;
    }
  }

  if (typeof user.strict === "boolean") {
    settings.strict = user.strict;
  } else if (user.strict !== undefined) {
    warnings.push("ignoring pt2lsp.strict: expected true or false");
  }
  if (typeof user.unsafeFixes === "boolean") {
    settings.unsafeFixes = user.unsafeFixes;
  } else if (user.unsafeFixes !== undefined) {
    warnings.push("ignoring pt2lsp.unsafeFixes: expected true or false");
  }
  if (typeof user.timeout === "number" && Number.isFinite(user.timeout) && user.timeout > 0) {
    settings.timeout = user.timeout;
  } else if (user.timeout !== undefined) {
    warnings.push("ignoring pt2lsp.timeout: expected a positive number of seconds");
  }
  if (typeof user.inlayHints === "boolean") {
    settings.inlayHints = user.inlayHints;
  } else if (user.inlayHints !== undefined) {
    warnings.push("ignoring pt2lsp.inlayHints: expected true or false");
  }
  if (typeof user.followLibraries === "boolean") {
    settings.followLibraries = user.followLibraries;
  } else if (user.followLibraries !== undefined) {
    warnings.push("ignoring pt2lsp.followLibraries: expected true or false");
  }
  if (typeof user.maxFileSize === "number" && Number.isInteger(user.maxFileSize) && user.maxFileSize > 0) {
    settings.maxFileSize = user.maxFileSize;
  } else if (user.maxFileSize !== undefined) {
    warnings.push("ignoring pt2lsp.maxFileSize: expected a positive whole number of KiB");
  }
  const select = codes("select", user.select, warnings);
  if (select !== undefined) {
    settings.select = select;
  }
  const ignore = codes("ignore", user.ignore, warnings);
  if (ignore !== undefined) {
    settings.ignore = ignore;
  }
  return { settings, warnings };
}

/** The payload of `initializationOptions` and of `workspace/didChangeConfiguration`'s `settings`. */
export function serverPayload(settings: ServerSettings): { pt2lsp: ServerSettings } {
  return { pt2lsp: settings };
}

/** Whether a change to these settings needs a new server process rather than new settings. */
export function needsRestart(before: UserSettings, after: UserSettings): boolean {
  return before.serverPath !== after.serverPath;
}
