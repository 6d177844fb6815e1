// The VS Code side of pt2lsp: starts `pt2lsp serve` with vscode-languageclient, keeps its settings
// in step with VS Code's (and with workspace trust), shows the tracer's state in the status bar,
// and contributes the export, retrace, restart and output commands.
//
// Decisions live in the plain modules beside this one (settings, binary, status, commands,
// python), which `npm test` checks without VS Code; this file only wires them to the editor.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";

import { findServer } from "./binary";
import {
  COMMANDS,
  defaultExportPath,
  describeCommandFailure,
  exportArguments,
  retraceArguments,
  serverCommandsToRegister,
  serverReportedExport,
} from "./commands";
import { interpreterFromApi, PYTHON_EXTENSION_ID, type PythonApi } from "./python";
import { explicitValue, expandPath, needsRestart, resolveSettings, serverPayload, type ServerSettings, type UserSettings } from "./settings";
import { type ProgressValue, TracerStatus } from "./status";

const SECTION = "pt2lsp";

class Controller implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly output = vscode.window.createOutputChannel("pt2lsp");
  private readonly item = vscode.window.createStatusBarItem("pt2lsp.status", vscode.StatusBarAlignment.Right, 100);
  private readonly status = new TracerStatus(!vscode.workspace.isTrusted);
  private readonly disposables: vscode.Disposable[] = [];
  private user: UserSettings = readUserSettings();
  /** The settings the running server was last sent, to answer `workspace/configuration` with. */
  private sent: ServerSettings = {};
  private pythonApi: PythonApi | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.item.name = "pt2lsp";
    this.item.command = COMMANDS.showOutput;
    this.render();
    this.item.show();
    this.disposables.push(this.output, this.item);
  }

  async start(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    // The settings first: the selected interpreter's environment may hold the server. An
    // untrusted workspace names no interpreter, so no binary from it is run.
    const settings = await this.currentSettings();
    const found = findServer({
      interpreter: settings.python,
      configured:
        typeof this.user.serverPath === "string" && this.user.serverPath.trim() !== ""
          ? expandPath(this.user.serverPath, { home: os.homedir(), workspaceFolder: folder })
          : undefined,
      extensionPath: this.context.extensionPath,
      platform: process.platform,
      pathEnv: process.env.PATH,
      pathExt: process.env.PATHEXT,
      isFile: (candidate) => {
        try {
          return fs.statSync(candidate).isFile();
        } catch {
          return false;
        }
      },
    });
    if (found.kind === "missing") {
      this.output.appendLine(found.message);
      this.status.serverStopped();
      this.render();
      const choice = await vscode.window.showErrorMessage(found.message, "Open Settings");
      if (choice === "Open Settings") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "pt2lsp.server.path");
      }
      return;
    }
    this.output.appendLine(`Starting ${found.command} serve (${found.source})`);
    const serverOptions: ServerOptions = {
      command: found.command,
      args: ["serve"],
      transport: TransportKind.stdio,
      options: { cwd: folder },
    };
    const clientOptions: LanguageClientOptions = {
      // Python files. Notebooks' Python cells are synced as notebooks (`notebookDocument/*`),
      // which the client does by itself for the server's `notebookDocumentSync` capability.
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "untitled", language: "python" },
      ],
      initializationOptions: serverPayload(settings),
      outputChannel: this.output,
      middleware: {
        handleWorkDoneProgress: (token, params, next) => {
          this.status.progress(token, params as ProgressValue);
          this.render();
          next(token, params);
        },
        workspace: {
          // The server pulls the `pt2lsp` section when a push carries none; answer with the
          // resolved settings (trust applied, unset keys left out), not VS Code's raw section.
          configuration: async (params, token, next) => {
            const answer = await next(params, token);
            if (!Array.isArray(answer)) {
              return answer;
            }
            return params.items.map((item, index) => (item.section === SECTION ? serverPayload(this.sent).pt2lsp : answer[index]));
          },
        },
      },
    };
    const client = new LanguageClient("pt2lsp", "pt2lsp", serverOptions, clientOptions);
    leaveWrappedCommandsToTheExtension(client);
    client.onDidChangeState((event) => {
      if (event.newState === State.Running) {
        this.status.serverRunning();
      } else if (event.newState === State.Starting) {
        this.status.serverStarting();
      } else {
        this.status.serverStopped();
      }
      this.render();
    });
    this.client = client;
    this.sent = settings;
    this.status.serverStarting();
    this.render();
    try {
      await client.start();
    } catch (error) {
      this.output.appendLine(`The server failed to start: ${String(error)}`);
      void vscode.window.showErrorMessage(`pt2lsp: the server failed to start (${String(error)}).`, "Show Output").then((choice) => {
        if (choice) {
          this.output.show();
        }
      });
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop();
      } catch (error) {
        this.output.appendLine(`Stopping the server failed: ${String(error)}`);
      }
      await client.dispose().catch(() => undefined);
    }
    this.status.serverStopped();
    this.render();
  }

  async restart(): Promise<void> {
    await this.stop();
    this.user = readUserSettings();
    await this.start();
  }

  /** Sends the current settings to the running server. */
  async pushSettings(): Promise<void> {
    const settings = await this.currentSettings();
    this.render();
    if (!this.client?.isRunning()) {
      return;
    }
    this.sent = settings;
    await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: serverPayload(settings) });
  }

  async onConfigurationChanged(): Promise<void> {
    const before = this.user;
    this.user = readUserSettings();
    if (needsRestart(before, this.user)) {
      await this.restart();
    } else {
      await this.pushSettings();
    }
  }

  async exportPt2(target?: vscode.Uri, entry?: string): Promise<void> {
    const client = this.runningClient();
    const document = await this.pythonDocument(target);
    if (!client || !document) {
      return;
    }
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage(
        "pt2lsp: exporting runs your model's code, which is off in an untrusted workspace. Trust the workspace to export.",
      );
      return;
    }
    if (document.isDirty && !(await document.save())) {
      return;
    }
    const output = await vscode.window.showSaveDialog({
      title: "Export model to .pt2",
      saveLabel: "Export",
      defaultUri: document.uri.scheme === "file" ? vscode.Uri.file(defaultExportPath(document.uri.fsPath)) : undefined,
      filters: { "PyTorch exported program": ["pt2"] },
    });
    if (!output) {
      return;
    }
    const name = path.basename(document.uri.fsPath);
    try {
      const result: unknown = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `pt2lsp: exporting ${name} to ${path.basename(output.fsPath)}…` },
        () =>
          client.sendRequest(ExecuteCommandRequest.type, {
            command: COMMANDS.exportPt2,
            arguments: exportArguments(document.uri.toString(), output.fsPath, entry),
          }),
      );
      // A server that reports the export (`status: "exported"`) has already shown its message,
      // with the size and node count; one notification is enough.
      if (!serverReportedExport(result)) {
        void vscode.window.showInformationMessage(`pt2lsp: exported ${name} to ${output.fsPath}`);
      }
    } catch (error) {
      this.reportCommandFailure(COMMANDS.exportPt2, error);
    }
  }

  async retrace(target?: vscode.Uri): Promise<void> {
    const client = this.runningClient();
    if (!client) {
      return;
    }
    if (!vscode.workspace.isTrusted || this.sent.trace === "off") {
      void vscode.window.showInformationMessage(
        vscode.workspace.isTrusted
          ? "pt2lsp: the tracer is off (pt2lsp.trace); only the static analysis runs."
          : "pt2lsp: the tracer is off in an untrusted workspace; only the static analysis runs.",
      );
      return;
    }
    const uri = target ?? pythonEditorUri();
    try {
      await client.sendRequest(ExecuteCommandRequest.type, {
        command: COMMANDS.retrace,
        arguments: retraceArguments(uri?.toString()),
      });
    } catch (error) {
      this.reportCommandFailure(COMMANDS.retrace, error);
    }
  }

  showOutput(): void {
    this.output.show(true);
  }

  dispose(): void {
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }

  private reportCommandFailure(command: string, error: unknown): void {
    const message = describeCommandFailure(command, error);
    this.output.appendLine(message);
    void vscode.window.showErrorMessage(message, "Show Output").then((choice) => {
      if (choice) {
        this.output.show();
      }
    });
  }

  private runningClient(): LanguageClient | undefined {
    if (this.client?.isRunning()) {
      return this.client;
    }
    void vscode.window.showErrorMessage("pt2lsp: the server is not running.", "Restart", "Show Output").then((choice) => {
      if (choice === "Restart") {
        void this.restart();
      } else if (choice) {
        this.output.show();
      }
    });
    return undefined;
  }

  private async pythonDocument(target?: vscode.Uri): Promise<vscode.TextDocument | undefined> {
    const uri = target ?? pythonEditorUri();
    if (!uri) {
      void vscode.window.showWarningMessage("pt2lsp: open the Python file of the model to export first.");
      return undefined;
    }
    return vscode.workspace.openTextDocument(uri);
  }

  private async currentSettings(): Promise<ServerSettings> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const { settings, warnings } = resolveSettings(this.user, {
      trusted: vscode.workspace.isTrusted,
      pythonFromExtension: await this.pythonFromExtension(folder?.uri),
      home: os.homedir(),
      workspaceFolder: folder?.uri.fsPath,
    });
    for (const warning of warnings) {
      this.output.appendLine(warning);
    }
    this.status.setStaticOnly(settings.trace === "off");
    return settings;
  }

  private async pythonFromExtension(resource?: vscode.Uri): Promise<string | undefined> {
    const extension = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
    if (!extension) {
      return undefined;
    }
    try {
      const api = extension.isActive ? extension.exports : await extension.activate();
      if (api !== this.pythonApi) {
        this.pythonApi = api;
        watchInterpreter(api, () => void this.pushSettings(), this.disposables);
      }
      return await interpreterFromApi(api, resource);
    } catch (error) {
      this.output.appendLine(`The Python extension's API failed: ${String(error)}`);
      return undefined;
    }
  }

  private render(): void {
    const view = this.status.view();
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.error ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }
}

/** The settings the user set somewhere (user, workspace or folder); defaults count as unset. */
function readUserSettings(): UserSettings {
  const configuration = vscode.workspace.getConfiguration(SECTION);
  const explicit = (key: string): unknown => explicitValue(key, configuration.inspect(key), vscode.workspace.isTrusted);
  return {
    serverPath: explicit("server.path"),
    python: explicit("python"),
    trace: explicit("trace"),
    strict: explicit("strict"),
    unsafeFixes: explicit("unsafeFixes"),
    timeout: explicit("timeout"),
    inlayHints: explicit("inlayHints"),
    followLibraries: explicit("followLibraries"),
    maxFileSize: explicit("maxFileSize"),
    select: explicit("select"),
    ignore: explicit("ignore"),
  };
}

function pythonEditorUri(): vscode.Uri | undefined {
  const document = vscode.window.activeTextEditor?.document;
  return document?.languageId === "python" ? document.uri : undefined;
}

/** Re-sends the settings when the user picks another interpreter in the Python extension. */
function watchInterpreter(api: PythonApi, changed: () => void, disposables: vscode.Disposable[]): void {
  const environments = api.environments as { onDidChangeActiveEnvironmentPath?: vscode.Event<unknown> } | undefined;
  const event = environments?.onDidChangeActiveEnvironmentPath;
  if (typeof event === "function") {
    disposables.push(event(changed));
  }
}

/**
 * vscode-languageclient registers a VS Code command for each command the server advertises. The
 * extension registers `pt2lsp.exportPt2` and `pt2lsp.retrace` itself (with a save dialog and
 * error messages), so the client must skip those or its registration fails.
 */
function leaveWrappedCommandsToTheExtension(client: LanguageClient): void {
  type Registration = { id: string; registerOptions: { commands?: string[] } };
  const feature = (client as unknown as { getFeature(method: string): { register(data: Registration): void } | undefined }).getFeature(
    ExecuteCommandRequest.method,
  );
  if (!feature) {
    return;
  }
  const register = feature.register.bind(feature);
  feature.register = (data) =>
    register({ ...data, registerOptions: { ...data.registerOptions, commands: serverCommandsToRegister(data.registerOptions.commands) } });
}

let controller: Controller | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const current = new Controller(context);
  controller = current;
  context.subscriptions.push(
    current,
    vscode.commands.registerCommand(COMMANDS.exportPt2, (uri?: vscode.Uri, entry?: string) =>
      current.exportPt2(uri instanceof vscode.Uri ? uri : undefined, typeof entry === "string" ? entry : undefined),
    ),
    vscode.commands.registerCommand(COMMANDS.retrace, (uri?: vscode.Uri) => current.retrace(uri instanceof vscode.Uri ? uri : undefined)),
    vscode.commands.registerCommand(COMMANDS.restartServer, () => current.restart()),
    vscode.commands.registerCommand(COMMANDS.showOutput, () => current.showOutput()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(SECTION)) {
        void current.onConfigurationChanged();
      }
    }),
    // Trust can be granted while the window is open (never revoked without a reload): the tracer
    // may run from then on, and the workspace's own server path and interpreter count.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void current.onConfigurationChanged()),
  );
  await current.start();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
