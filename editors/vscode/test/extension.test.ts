// The glue in extension.ts, run against a fake `vscode` and a fake language client: which binary
// starts with which options, what trust changes, what the status bar shows, what the user is told
// when the server refuses a command. No VS Code needed.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import Module from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, test } from "node:test";

type Listener = (...args: unknown[]) => unknown;

class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(fsPath: string): Uri {
    return new Uri("file", fsPath);
  }
  toString(): string {
    return `file://${this.fsPath}`;
  }
}

/** What the fake editor saw and what the fake user answers. */
interface World {
  trusted: boolean;
  /** User settings and the workspace's .vscode/settings.json, by key under `pt2lsp.`. */
  settings: Record<string, unknown>;
  workspaceSettings: Record<string, unknown>;
  commands: Map<string, Listener>;
  messages: { level: string; text: string }[];
  statusItem: { text?: string; tooltip?: string; command?: string };
  saveDialogAnswer?: Uri;
  trustListeners: Listener[];
  clients: FakeClient[];
  /** How the fake server answers `workspace/executeCommand`. */
  executeCommand: (params: { command: string; arguments: unknown[] }) => Promise<unknown>;
}

let world: World;

class FakeClient {
  running = false;
  requests: { method: string; params: { command: string; arguments: unknown[] } }[] = [];
  notifications: { method: string; params: unknown }[] = [];
  registered: unknown[] = [];
  private readonly feature = {
    register: (data: unknown) => {
      this.registered.push(data);
    },
  };
  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: { command: string; args: string[] },
    readonly clientOptions: {
      initializationOptions: unknown;
      middleware: { handleWorkDoneProgress: (token: unknown, params: unknown, next: Listener) => void };
    },
  ) {
    world.clients.push(this);
  }
  getFeature(method: string) {
    return method === "workspace/executeCommand" ? this.feature : undefined;
  }
  private stateListeners: Listener[] = [];
  onDidChangeState(listener: Listener): { dispose(): void } {
    this.stateListeners.push(listener);
    return { dispose() {} };
  }
  private setState(newState: number): void {
    for (const listener of this.stateListeners) {
      listener({ newState });
    }
  }
  async start(): Promise<void> {
    this.setState(fakeClientModule.State.Starting);
    this.running = true;
    this.setState(fakeClientModule.State.Running);
    // What the client does with the initialize result's executeCommandProvider.
    this.feature.register({ id: "x", registerOptions: { commands: ["pt2lsp.reanalyze", "pt2lsp.exportPt2", "pt2lsp.retrace"] } });
  }
  isRunning(): boolean {
    return this.running;
  }
  async stop(): Promise<void> {
    this.running = false;
    this.setState(fakeClientModule.State.Stopped);
  }
  async dispose(): Promise<void> {}
  async sendRequest(type: { method: string }, params: { command: string; arguments: unknown[] }): Promise<unknown> {
    this.requests.push({ method: type.method, params });
    return world.executeCommand(params);
  }
  async sendNotification(type: { method: string }, params: unknown): Promise<void> {
    this.notifications.push({ method: type.method, params });
  }
}

const document = { languageId: "python", uri: Uri.file("/w/model.py"), isDirty: false, save: async () => true };

function fakeVscode() {
  const disposable = { dispose() {} };
  const message = (level: string) => async (text: string) => {
    world.messages.push({ level, text });
    return undefined;
  };
  return {
    Uri,
    ThemeColor: class {
      constructor(readonly id: string) {}
    },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ProgressLocation: { Notification: 15 },
    window: {
      activeTextEditor: { document },
      createOutputChannel: () => ({ appendLine() {}, show() {}, dispose() {} }),
      createStatusBarItem: () => Object.assign(world.statusItem, { show() {}, dispose() {} }),
      showErrorMessage: message("error"),
      showWarningMessage: message("warning"),
      showInformationMessage: message("info"),
      showSaveDialog: async () => world.saveDialogAnswer,
      withProgress: (_options: unknown, task: () => unknown) => task(),
    },
    workspace: {
      get isTrusted() {
        return world.trusted;
      },
      workspaceFolders: [{ uri: Uri.file("/w") }],
      getConfiguration: () => ({
        inspect: (key: string) => ({
          defaultValue: "x",
          globalValue: world.settings[key],
          workspaceValue: world.workspaceSettings[key],
        }),
      }),
      onDidChangeConfiguration: () => disposable,
      onDidGrantWorkspaceTrust: (listener: Listener) => {
        world.trustListeners.push(listener);
        return disposable;
      },
      openTextDocument: async () => document,
    },
    commands: {
      registerCommand: (id: string, callback: Listener) => {
        assert.ok(!world.commands.has(id), `${id} registered twice`);
        world.commands.set(id, callback);
        return disposable;
      },
      executeCommand: async () => undefined,
    },
    extensions: { getExtension: () => undefined },
  };
}

const fakeClientModule = {
  LanguageClient: FakeClient,
  DidChangeConfigurationNotification: { type: { method: "workspace/didChangeConfiguration" } },
  ExecuteCommandRequest: { type: { method: "workspace/executeCommand" }, method: "workspace/executeCommand" },
  State: { Stopped: 1, Running: 2, Starting: 3 },
  TransportKind: { stdio: 0 },
};

const moduleInternals = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
const load = moduleInternals._load;
let extensionPath: string;

beforeEach(() => {
  world = {
    trusted: true,
    settings: {},
    workspaceSettings: {},
    commands: new Map(),
    messages: [],
    statusItem: {},
    trustListeners: [],
    clients: [],
    executeCommand: async () => null,
  };
  extensionPath = fs.mkdtempSync(path.join(os.tmpdir(), "pt2lsp-ext-"));
  fs.mkdirSync(path.join(extensionPath, "bin"));
  fs.writeFileSync(path.join(extensionPath, "bin", "pt2lsp"), "");
  moduleInternals._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") {
      return fakeVscode();
    }
    if (request === "vscode-languageclient/node") {
      return fakeClientModule;
    }
    return load.call(this, request, ...rest);
  };
  delete require.cache[require.resolve("../src/extension")];
});

afterEach(() => {
  moduleInternals._load = load;
  fs.rmSync(extensionPath, { recursive: true, force: true });
});

async function activate() {
  const extension = require("../src/extension") as typeof import("../src/extension");
  await extension.activate({ extensionPath, subscriptions: [] } as never);
  assert.equal(world.clients.length, 1);
  return { extension, client: world.clients[0] };
}

test("activation registers the commands and starts the bundled server with the user's settings only", async () => {
  world.settings = { strict: true };
  const { extension, client } = await activate();
  assert.deepEqual([...world.commands.keys()].sort(), ["pt2lsp.exportPt2", "pt2lsp.restartServer", "pt2lsp.retrace", "pt2lsp.showOutput"]);
  assert.equal(client.serverOptions.command, path.join(extensionPath, "bin", "pt2lsp"));
  assert.deepEqual(client.serverOptions.args, ["serve"]);
  assert.deepEqual(client.clientOptions.initializationOptions, { pt2lsp: { strict: true } });
  assert.equal(world.statusItem.command, "pt2lsp.showOutput");
  // The client registers the server's own commands, never the two the extension wraps.
  assert.deepEqual(client.registered, [{ id: "x", registerOptions: { commands: ["pt2lsp.reanalyze"] } }]);
  await extension.deactivate();
});

test("an untrusted workspace starts with the tracer off, and trusting it turns the tracer back on", async () => {
  world.trusted = false;
  world.settings = { trace: "on-save", python: "/w/.venv/bin/python" };
  const { extension, client } = await activate();
  assert.deepEqual(client.clientOptions.initializationOptions, { pt2lsp: { trace: "off" } });
  world.trusted = true;
  for (const listener of world.trustListeners) {
    await listener();
  }
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(client.notifications, [
    { method: "workspace/didChangeConfiguration", params: { settings: { pt2lsp: { trace: "on-save", python: "/w/.venv/bin/python" } } } },
  ]);
  await extension.deactivate();
});

test("an untrusted workspace cannot choose the server binary; trusting it restarts with its choice", async () => {
  world.trusted = false;
  const evil = path.join(extensionPath, "evil");
  fs.writeFileSync(evil, "");
  world.workspaceSettings = { "server.path": evil };
  const { extension, client } = await activate();
  assert.equal(client.serverOptions.command, path.join(extensionPath, "bin", "pt2lsp"));
  world.trusted = true;
  for (const listener of world.trustListeners) {
    await listener();
  }
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(world.clients.length, 2);
  assert.equal(world.clients[1].serverOptions.command, evil);
  assert.equal(client.isRunning(), false);
  await extension.deactivate();
});

test("retrace in an untrusted workspace explains instead of asking the server", async () => {
  world.trusted = false;
  const { extension, client } = await activate();
  await world.commands.get("pt2lsp.retrace")!();
  assert.equal(client.requests.length, 0);
  assert.match(world.messages[0].text, /untrusted workspace/);
  await extension.deactivate();
});

test("export sends [uri, null, output] and turns an unknown-command error into a clear message", async () => {
  world.saveDialogAnswer = Uri.file("/w/model.pt2");
  world.executeCommand = async (params) => {
    throw Object.assign(new Error(`unknown command \`${params.command}\``), { code: -32602 });
  };
  const { extension, client } = await activate();
  await world.commands.get("pt2lsp.exportPt2")!();
  assert.deepEqual(client.requests, [
    { method: "workspace/executeCommand", params: { command: "pt2lsp.exportPt2", arguments: ["file:///w/model.py", null, "/w/model.pt2"] } },
  ]);
  assert.equal(world.messages.length, 1);
  assert.equal(world.messages[0].level, "error");
  assert.match(world.messages[0].text, /cannot export the model to \.pt2 yet.*unknown command/);
  await extension.deactivate();
});

test("export that succeeds says where the file is; a cancelled dialog sends nothing", async () => {
  const { extension, client } = await activate();
  await world.commands.get("pt2lsp.exportPt2")!();
  assert.equal(client.requests.length, 0);
  world.saveDialogAnswer = Uri.file("/w/out/encoder.pt2");
  await world.commands.get("pt2lsp.exportPt2")!();
  assert.equal(client.requests.length, 1);
  assert.match(world.messages[0].text, /exported model\.py to \/w\/out\/encoder\.pt2/);
  await extension.deactivate();
});

test("the status bar follows the server's progress", async () => {
  const { extension, client } = await activate();
  assert.equal(world.statusItem.text, "$(check) pt2lsp");
  const progress = client.clientOptions.middleware.handleWorkDoneProgress;
  const forwarded: unknown[] = [];
  progress("pt2lsp/trace/1", { kind: "begin", title: "pt2lsp: tracing model.py" }, (_token: unknown, params: unknown) => forwarded.push(params));
  assert.equal(world.statusItem.text, "$(sync~spin) pt2lsp: tracing");
  progress("pt2lsp/trace/1", { kind: "end", message: "export failed: 1 error" }, () => undefined);
  assert.match(world.statusItem.text ?? "", /trace failed/);
  assert.equal(forwarded.length, 1, "progress still reaches VS Code's own progress UI");
  await extension.deactivate();
  assert.match(world.statusItem.text ?? "", /circle-slash/);
});
