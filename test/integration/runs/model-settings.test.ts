/**
 * Model settings and the sealed API key through the Executor's real methods (real SQLite, real key
 * files), and checkModel against a scripted model server on loopback (the one allowed fake).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Executor } from '../../../src/executor/executor.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { localClient } from '../../../src/ipc/server/local-client.js';
import { startScriptedAnthropicServer } from '../../helpers/scripted-anthropic-server.js';
import { say, startScriptedOpenAiServer, type ScriptedServer } from '../../helpers/scripted-openai-server.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const KEY = 'sk-proj-Hq7uQ2x9LmN4pR8sT1vW';
const opened: Array<{ executor: Executor; clients: ExecutorClient[] }> = [];
const servers: ScriptedServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
  while (opened.length) {
    const { executor, clients } = opened.pop()!;
    for (const client of clients) client.close();
    await executor.settled();
    executor.close();
  }
});

function open() {
  const { dataDir } = tempSetup();
  const executor = Executor.open(dataDir, { resumeUnfinished: false });
  const person = localClient(executor, 'cli');
  const agent = localClient(executor, 'mcp', 'some-agent');
  opened.push({ executor, clients: [person, agent] });
  return { dataDir, executor, person, agent };
}

/** Every byte Executor keeps in its data directory, except the key file itself. */
function everythingStoredBut(dataDir: string, except: string): string {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (full !== except) out.push(fs.readFileSync(full).toString('latin1'));
    }
  };
  walk(dataDir);
  return out.join('\n');
}

async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string; details?: unknown }> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: { code: string; message: string; details?: unknown }) => error,
  );
}

describe('model settings and the API key', () => {
  it('keeps the key in a 0600 file of keys/, audited as model.key_set, and nowhere else: not the policy, the log, nor any answer', async () => {
    const { dataDir, executor, person } = open();
    await person.setModelSettings({ settings: { provider: 'openai', baseUrl: 'http://127.0.0.1:9/v1', model: 'llama3.1' } });
    const view = await person.setModelKey({ provider: 'openai', key: `${KEY}\n` });
    expect(view.keySet).toEqual({ openai: true, anthropic: false });
    expect(JSON.stringify(view)).not.toContain(KEY);
    expect(JSON.stringify(await person.getModelSettings())).not.toContain(KEY);

    const keyFile = path.join(dataDir, 'keys', 'model-key.openai');
    expect(fs.readFileSync(keyFile, 'utf8')).toBe(KEY);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(executor.modelApiKey('openai')).toBe(KEY);

    await executor.settled();
    const stored = everythingStoredBut(dataDir, keyFile);
    expect(stored).not.toContain(KEY);
    expect(stored).not.toContain(KEY.slice(8, 20));
    const records = (await person.getAudit({ filters: { action: 'model.key_set' } })).entries;
    expect(records).toHaveLength(1);
    expect(JSON.stringify(records[0])).toContain('"set":true');

    // Erasing overwrites and removes the file; that too is on record.
    await person.setModelKey({ provider: 'openai', key: null });
    expect(fs.existsSync(keyFile)).toBe(false);
    expect((await person.getModelSettings()).keySet.openai).toBe(false);
    expect((await person.getAudit({ filters: { action: 'model.key_set' } })).entries).toHaveLength(2);
  });

  it('saves settings in policy.json, audited as a policy change, and clears them with null', async () => {
    const { dataDir, person } = open();
    await person.setModelSettings({ settings: { provider: 'anthropic', model: 'claude-x', stream: true } });
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).model).toEqual({
      provider: 'anthropic',
      model: 'claude-x',
      stream: true,
    });
    expect((await person.getPolicy()).workspaceRoots).toHaveLength(1);
    const cleared = await person.setModelSettings({ settings: null });
    expect(cleared.settings).toBeNull();
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).model).toBeUndefined();
    expect((await person.getAudit({ filters: { action: 'policy.changed' } })).entries.length).toBeGreaterThanOrEqual(2);
  });

  it('refuses a key inside the settings, and a key that cannot be one, without quoting it', async () => {
    const { person, dataDir } = open();
    const inSettings = await refusal(person.setModelSettings({ settings: { provider: 'openai', model: 'm', apiKey: KEY } as never }));
    expect(inSettings.code).toBe('IPC_INVALID_PARAMS');
    expect(inSettings.message).toContain('set-key');
    expect(JSON.stringify(inSettings)).not.toContain(KEY);
    const spaced = await refusal(person.setModelKey({ provider: 'openai', key: `${KEY} ${KEY}` }));
    expect(spaced.code).toBe('INVALID_INPUT');
    expect(JSON.stringify(spaced)).not.toContain(KEY);
    expect(fs.existsSync(path.join(dataDir, 'keys', 'model-key.openai'))).toBe(false);
  });

  it('an agent may neither read the model settings, nor set the key, nor make the model calls', async () => {
    const { agent } = open();
    for (const call of [
      () => agent.getModelSettings(),
      () => agent.setModelKey({ provider: 'openai', key: KEY }),
      () => agent.setModelSettings({ settings: null }),
      () => agent.checkModel(),
    ]) {
      expect((await refusal(call())).code).toBe('IPC_FORBIDDEN');
    }
  });
});

describe('checkModel', () => {
  it('says which model answered, sending the kept key', async () => {
    const server = await startScriptedOpenAiServer([say('OK')]);
    servers.push(server);
    const { person } = open();
    await person.setModelSettings({ settings: { provider: 'openai', baseUrl: server.baseUrl, model: 'llama3.1' } });
    await person.setModelKey({ provider: 'openai', key: KEY });
    const check = await person.checkModel();
    expect(check).toMatchObject({ ok: true, model: 'llama3.1', endpoint: server.baseUrl });
    expect(check.message).toContain('llama3.1');
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(server.requests[0]!.body!.max_tokens).toBeLessThanOrEqual(16);
  });

  it('says plainly that the key was refused, without the key the server echoed, and makes one call only', async () => {
    const server = await startScriptedAnthropicServer([
      { kind: 'error', status: 401, echoAuthorization: true, message: `invalid x-api-key ${KEY}` },
      say('never'),
    ]);
    servers.push(server);
    const { person } = open();
    await person.setModelKey({ provider: 'anthropic', key: KEY });
    const check = await person.checkModel({ settings: { provider: 'anthropic', baseUrl: server.baseUrl, model: 'claude-x' } });
    expect(check).toMatchObject({ ok: false, code: 'MODEL_REFUSED' });
    expect(check.message).toMatch(/^The key was not accepted/);
    expect(JSON.stringify(check)).not.toContain(KEY.slice(8, 20));
    expect(server.requests).toHaveLength(1);
    // Unsaved settings were checked, not saved.
    expect((await person.getModelSettings()).settings).toBeNull();
  });

  it('checks a key not kept yet, and says when nothing is set up', async () => {
    const server = await startScriptedOpenAiServer([say('OK')]);
    servers.push(server);
    const { person } = open();
    const none = await person.checkModel();
    expect(none).toMatchObject({ ok: false, code: 'MODEL_NOT_CONFIGURED' });
    const withKey = await person.checkModel({
      settings: { provider: 'openai', baseUrl: server.baseUrl, model: 'm' },
      key: 'sk-trial-000111222',
    });
    expect(withKey.ok).toBe(true);
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-trial-000111222');
    expect((await person.getModelSettings()).keySet.openai).toBe(false);
  });

  it('suggests /v1 when an OpenAI-compatible address without it answers 404, as Ollama does', async () => {
    const server = await startScriptedOpenAiServer([say('OK')]);
    servers.push(server);
    const { person } = open();
    const root = server.baseUrl.replace(/\/v1\/?$/, '');
    const check = await person.checkModel({ settings: { provider: 'openai', baseUrl: root, model: 'm' } });
    expect(check).toMatchObject({ ok: false, code: 'MODEL_REFUSED' });
    expect(check.message).toContain(`answer under /v1: try ${root}/v1.`);
    const right = await person.checkModel({ settings: { provider: 'openai', baseUrl: `${root}/v1`, model: 'm' } });
    expect(right.ok).toBe(true);
  });

  it('says nothing answers at an address where nothing listens', async () => {
    const { person } = open();
    const check = await person.checkModel({ settings: { provider: 'openai', baseUrl: 'http://127.0.0.1:9/v1', model: 'm' } });
    expect(check).toMatchObject({ ok: false, code: 'MODEL_UNAVAILABLE' });
    expect(check.message).toContain('Nothing answers at that address');
  });
});

describe('a run in a real host', () => {
  it('talks to the saved model with the kept key, and the key appears nowhere the run leaves', async () => {
    const { startHost } = await import('../../../src/ipc/host/host.js');
    const { connectToHost } = await import('../../../src/ipc/transports/node-client.js');
    const { waitForRun, ended } = await import('../../helpers/run-waits.js');
    const server = await startScriptedOpenAiServer([say('Nothing to do.')]);
    servers.push(server);
    const { dataDir } = tempSetup();
    const host = await startHost(dataDir);
    const api = await connectToHost(dataDir, 'cli');
    try {
      await api.setModelSettings({ settings: { provider: 'openai', baseUrl: server.baseUrl, model: 'llama3.1' } });
      await api.setModelKey({ provider: 'openai', key: KEY });
      const { id } = await api.startRun({ task: 'look around' });
      expect((await waitForRun(api, id, ended)).status).toBe('completed');
      expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(server.requests[0]!.body!.model).toBe('llama3.1');
      const trace = await api.getRunTrace({ runId: id });
      expect(JSON.stringify(trace)).not.toContain(KEY);
    } finally {
      api.close();
      await host.close();
    }
    expect(everythingStoredBut(dataDir, path.join(dataDir, 'keys', 'model-key.openai'))).not.toContain(KEY);
  });
});
