// The interpreter selected in the Python extension (ms-python.python), read through its public
// API. Pure: the extension passes the API object in, so tests use a fake one.
//
// Two API generations exist: `environments` (getActiveEnvironmentPath + resolveEnvironment,
// since 2022) and the older `settings.getExecutionDetails`. Either may be missing or throw.

export const PYTHON_EXTENSION_ID = "ms-python.python";

/** The parts of the Python extension's API this module reads. */
export interface PythonApi {
  environments?: {
    getActiveEnvironmentPath?: (resource?: unknown) => { path?: string } | undefined;
    resolveEnvironment?: (
      environment: unknown,
    ) => Promise<{ executable?: { uri?: { fsPath?: string } } } | undefined> | undefined;
  };
  settings?: {
    getExecutionDetails?: (resource?: unknown) => { execCommand?: string[] } | undefined;
  };
}

/** The selected interpreter's path, or undefined when the API gives none. */
export async function interpreterFromApi(api: PythonApi | undefined, resource?: unknown): Promise<string | undefined> {
  try {
    const active = api?.environments?.getActiveEnvironmentPath?.(resource);
    if (active?.path) {
      try {
        const resolved = await api?.environments?.resolveEnvironment?.(active);
        const executable = resolved?.executable?.uri?.fsPath;
        if (executable) {
          return executable;
        }
      } catch {
        // An environment that cannot be resolved still has the path the user selected.
      }
      return active.path;
    }
    const command = api?.settings?.getExecutionDetails?.(resource)?.execCommand;
    // A command of several words (`conda run -n env python`) is not an interpreter path.
    if (command?.length === 1 && command[0]) {
      return command[0];
    }
  } catch {
    // The Python extension's API failing must not keep pt2lsp from starting.
  }
  return undefined;
}
