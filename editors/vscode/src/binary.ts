// Finds the `pt2lsp` binary: the `pt2lsp.server.path` setting, else the `pt2lsp` installed in the
// selected Python environment (pip puts it beside the interpreter), else the binary bundled in
// the extension's `bin/` (a per-platform .vsix), else `pt2lsp` on PATH. Pure: the file system is
// passed in as `isFile`.

import * as path from "node:path";

export interface Discovery {
  /** `pt2lsp.server.path`, already expanded; empty or undefined when unset. */
  configured?: string;
  /** The selected Python interpreter (the Python extension's, or `pt2lsp.python`), if any. */
  interpreter?: string;
  /** The extension's install directory, which may hold `bin/pt2lsp`. */
  extensionPath: string;
  platform: NodeJS.Platform;
  /** `$PATH` (and on Windows `$PATHEXT`), to look the binary up when nothing else names it. */
  pathEnv?: string;
  pathExt?: string;
  isFile: (candidate: string) => boolean;
}

export type Found =
  | { kind: "found"; command: string; source: "setting" | "environment" | "bundled" | "path" }
  | { kind: "missing"; message: string };

export function executableName(platform: NodeJS.Platform): string {
  return platform === "win32" ? "pt2lsp.exe" : "pt2lsp";
}

/** Where pip installs the `pt2lsp` command of the environment `interpreter` belongs to: beside
 * it (`.venv/bin/python`, `.venv/Scripts/python.exe`, a conda env's `python.exe` with
 * `Scripts/` under it). */
export function environmentCandidates(interpreter: string, platform: NodeJS.Platform): string[] {
  const windows = platform === "win32";
  const paths = windows ? path.win32 : path.posix;
  const dir = paths.dirname(interpreter);
  const name = windows ? "pt2lsp.exe" : "pt2lsp";
  const candidates = [paths.join(dir, name)];
  if (windows) {
    candidates.push(paths.join(dir, "Scripts", name));
  }
  return candidates;
}

/** Where a `.vsix` built for one platform carries the server. */
export function bundledPath(extensionPath: string, platform: NodeJS.Platform): string {
  const join = platform === "win32" ? path.win32.join : path.posix.join;
  return join(extensionPath, "bin", executableName(platform));
}

/** The first `name` on PATH, trying each of PATHEXT's suffixes on Windows. */
export function searchPath(
  name: string,
  pathEnv: string | undefined,
  platform: NodeJS.Platform,
  isFile: (candidate: string) => boolean,
  pathExt?: string,
): string | undefined {
  if (!pathEnv) {
    return undefined;
  }
  const windows = platform === "win32";
  const join = windows ? path.win32.join : path.posix.join;
  const separator = windows ? ";" : ":";
  const suffixes = windows ? ["", ...(pathExt ?? ".EXE;.CMD;.BAT").split(";").filter(Boolean)] : [""];
  for (const dir of pathEnv.split(separator)) {
    if (dir === "") {
      continue;
    }
    for (const suffix of suffixes) {
      const candidate = join(dir, name + suffix);
      if (isFile(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

export function findServer(discovery: Discovery): Found {
  const configured = discovery.configured?.trim();
  if (configured) {
    if (discovery.isFile(configured)) {
      return { kind: "found", command: configured, source: "setting" };
    }
    // A bare name in the setting means "this name on PATH".
    const onPath =
      !configured.includes("/") && !configured.includes("\\")
        ? searchPath(configured, discovery.pathEnv, discovery.platform, discovery.isFile, discovery.pathExt)
        : undefined;
    if (onPath) {
      return { kind: "found", command: onPath, source: "setting" };
    }
    return {
      kind: "missing",
      message: `pt2lsp.server.path is set to "${configured}", which is not a file. Fix the setting or clear it to use the bundled server or \`pt2lsp\` on PATH.`,
    };
  }
  const interpreter = discovery.interpreter?.trim();
  if (interpreter) {
    const installed = environmentCandidates(interpreter, discovery.platform).find(discovery.isFile);
    if (installed) {
      return { kind: "found", command: installed, source: "environment" };
    }
  }
  const bundled = bundledPath(discovery.extensionPath, discovery.platform);
  if (discovery.isFile(bundled)) {
    return { kind: "found", command: bundled, source: "bundled" };
  }
  const name = executableName(discovery.platform).replace(/\.exe$/, "");
  const onPath = searchPath(name, discovery.pathEnv, discovery.platform, discovery.isFile, discovery.pathExt);
  if (onPath) {
    return { kind: "found", command: onPath, source: "path" };
  }
  return {
    kind: "missing",
    message:
      "The pt2lsp server was not found: not in the selected Python environment, not bundled with this extension, and not on PATH. " +
      "Install it into your environment (`pip install ./python` in a pt2lsp checkout) or set pt2lsp.server.path.",
  };
}
