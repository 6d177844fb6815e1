// The Python extension's interpreter, through both API generations and their failures.

import assert from "node:assert/strict";
import { test } from "node:test";

import { interpreterFromApi } from "../src/python";

test("the environments API: the resolved executable", async () => {
  const api = {
    environments: {
      getActiveEnvironmentPath: () => ({ path: "/w/.venv" }),
      resolveEnvironment: async () => ({ executable: { uri: { fsPath: "/w/.venv/bin/python" } } }),
    },
  };
  assert.equal(await interpreterFromApi(api), "/w/.venv/bin/python");
});

test("an environment that does not resolve falls back to its path", async () => {
  const api = {
    environments: {
      getActiveEnvironmentPath: () => ({ path: "/usr/bin/python3" }),
      resolveEnvironment: async () => {
        throw new Error("gone");
      },
    },
  };
  assert.equal(await interpreterFromApi(api), "/usr/bin/python3");
});

test("the older settings API: one-word commands only", async () => {
  assert.equal(await interpreterFromApi({ settings: { getExecutionDetails: () => ({ execCommand: ["/opt/py/bin/python"] }) } }), "/opt/py/bin/python");
  assert.equal(await interpreterFromApi({ settings: { getExecutionDetails: () => ({ execCommand: ["conda", "run", "python"] }) } }), undefined);
});

test("no extension or a throwing API gives no interpreter", async () => {
  assert.equal(await interpreterFromApi(undefined), undefined);
  const api = {
    environments: {
      getActiveEnvironmentPath: () => {
        throw new Error("not ready");
      },
    },
  };
  assert.equal(await interpreterFromApi(api), undefined);
});
