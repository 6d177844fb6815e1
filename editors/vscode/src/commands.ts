// The extension's commands and the server commands behind them: ids, arguments, and what to tell
// the user when the server refuses. Pure: no `vscode` import.

/** Commands the extension contributes (package.json's `contributes.commands`). */
export const COMMANDS = {
  exportPt2: "pt2lsp.exportPt2",
  retrace: "pt2lsp.retrace",
  restartServer: "pt2lsp.restartServer",
  showOutput: "pt2lsp.showOutput",
} as const;

/** Server commands (`workspace/executeCommand`) that the extension wraps in a command of the same id. */
export const WRAPPED_SERVER_COMMANDS: readonly string[] = [COMMANDS.exportPt2, COMMANDS.retrace];

/**
 * The server commands the language client should register as VS Code commands itself. It does so
 * for every command the server advertises; one with the id of a command the extension already
 * registered would fail with "command already exists", so those are left to the extension.
 */
export function serverCommandsToRegister(advertised: readonly string[] | undefined): string[] {
  return (advertised ?? []).filter((command) => !WRAPPED_SERVER_COMMANDS.includes(command));
}

/** `pt2lsp.exportPt2`'s arguments: the document, the entrypoint (null: the file's own), the output. */
export function exportArguments(uri: string, outputPath: string, entry?: string): [string, string | null, string] {
  return [uri, entry ?? null, outputPath];
}

/** `pt2lsp.retrace`'s arguments: the document to trace again, or none for every open document. */
export function retraceArguments(uri?: string): string[] {
  return uri === undefined ? [] : [uri];
}

/** The save dialog's suggestion: the model file with a `.pt2` extension. */
export function defaultExportPath(modelPath: string): string {
  return modelPath.replace(/\.pyi?$/i, "") + ".pt2";
}

/** JSON-RPC error codes that mean "this server has no such command". */
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;

/** A rejected `workspace/executeCommand`, as vscode-jsonrpc's ResponseError or anything thrown. */
export interface CommandError {
  code?: unknown;
  message?: unknown;
  /** For a model that does not export: `{ diagnostics: [{ file, line, place, code, message }] }`. */
  data?: unknown;
}

/**
 * The problems of a failed `pt2lsp.exportPt2`, one `file:line: CODE message` each (`place` is
 * the file relative to the project, as the server names it); empty when the error has none.
 */
export function exportProblems(error: CommandError): string[] {
  const data = error.data;
  if (typeof data !== "object" || data === null) {
    return [];
  }
  const diagnostics = (data as { diagnostics?: unknown }).diagnostics;
  if (!Array.isArray(diagnostics)) {
    return [];
  }
  return diagnostics.flatMap((item: unknown) => {
    if (typeof item !== "object" || item === null) {
      return [];
    }
    const { file, line, place, code, message } = item as Record<string, unknown>;
    const where = typeof place === "string" ? place : `${String(file)}:${String(line)}`;
    return [`${where}: ${String(code)} ${String(message)}`];
  });
}

export function isUnsupportedCommand(error: CommandError): boolean {
  const message = typeof error.message === "string" ? error.message : "";
  return (
    error.code === METHOD_NOT_FOUND ||
    ((error.code === INVALID_PARAMS || error.code === undefined) && /unknown command|not supported|unsupported/i.test(message))
  );
}

/** One sentence for an error notification when the server refuses or fails `command`. */
export function describeCommandFailure(command: string, error: unknown): string {
  const failure: CommandError = typeof error === "object" && error !== null ? (error as CommandError) : { message: String(error) };
  const said = typeof failure.message === "string" && failure.message !== "" ? failure.message : "no reason given";
  const what = command === COMMANDS.exportPt2 ? "export the model to .pt2" : command === COMMANDS.retrace ? "run the tracer again" : `run \`${command}\``;
  if (isUnsupportedCommand(failure)) {
    return `This pt2lsp server cannot ${what} yet: it does not support \`${command}\` (update pt2lsp). The server said: ${said}`;
  }
  const problems = command === COMMANDS.exportPt2 ? exportProblems(failure) : [];
  if (problems.length > 0) {
    const count = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
    return `pt2lsp could not ${what}, ${count}: ${problems.join("; ")}`;
  }
  return `pt2lsp could not ${what}: ${said}`;
}

/** Whether `pt2lsp.exportPt2`'s result says the server exported the file (and told the user so). */
export function serverReportedExport(result: unknown): boolean {
  return typeof result === "object" && result !== null && (result as { status?: unknown }).status === "exported";
}
