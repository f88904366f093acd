/**
 * `executor model …` as a person types it, in a child process. The model is a scripted
 * OpenAI-compatible server on loopback (the one allowed fake).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, runCliAsync } from '../../helpers/run-cli.js';
import { say, startScriptedOpenAiServer } from '../../helpers/scripted-openai-server.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const KEY = 'sk-proj-CLI9f8e7d6c5b4a3z2y1';

// Each CLI call starts a fresh Node; on a loaded 2-core machine a dozen of them take a while.
describe('executor model', { timeout: 300_000 }, () => {
  it('set, set-key from stdin, show and check: the key kept apart, never printed, never in the policy', async () => {
    const { dataDir } = tempSetup();
    const cli = (args: string[], input?: string) => runCli(['--data-dir', dataDir, ...args], { input });

    const empty = cli(['model', 'show']);
    expect(empty.status, empty.stderr).toBe(0);
    expect(empty.stdout).toContain('No model is set up');

    const server = closeAfter(await startScriptedOpenAiServer([say('OK'), { kind: 'error', status: 401, echoAuthorization: true }]));
    const set = cli(['model', 'set', '--provider', 'openai', '--base-url', server.baseUrl, '--model', 'llama3.1']);
    expect(set.status, set.stderr).toBe(0);
    expect(set.stdout).toContain('llama3.1');
    expect(set.stdout).toMatch(/key\s+none/);

    const kept = cli(['model', 'set-key'], `${KEY}\n`);
    expect(kept.status, kept.stderr).toBe(0);
    expect(kept.stdout + kept.stderr).not.toContain(KEY);
    const keyFile = path.join(dataDir, 'keys', 'model-key.openai');
    expect(fs.readFileSync(keyFile, 'utf8')).toBe(KEY);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).not.toContain(KEY);

    const shown = cli(['--json', 'model', 'show']);
    expect(shown.json()).toMatchObject({
      settings: { provider: 'openai', model: 'llama3.1', baseUrl: server.baseUrl },
      keySet: { openai: true, anthropic: false },
    });
    expect(shown.stdout).not.toContain(KEY);

    // Changing one field keeps the others.
    const narrowed = cli(['--json', 'model', 'set', '--model', 'qwen2.5', '--stream']);
    expect(narrowed.json()).toMatchObject({ settings: { provider: 'openai', model: 'qwen2.5', baseUrl: server.baseUrl, stream: true } });

    // runCli blocks this thread; the server in it must keep answering, so the check runs asynchronously.
    const ok = await runCliAsync(['--data-dir', dataDir, 'model', 'check']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^OK: qwen2.5 at http:\/\/127\.0\.0\.1:\d+\/v1 answered in \d+ ms/);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);

    const refused = await runCliAsync(['--data-dir', dataDir, 'model', 'check']);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toContain('Not working (MODEL_REFUSED): The key was not accepted');
    expect(refused.stdout + refused.stderr).not.toContain(KEY.slice(8, 20));

    const cleared = cli(['model', 'set-key', '--clear']);
    expect(cleared.status, cleared.stderr).toBe(0);
    expect(fs.existsSync(keyFile)).toBe(false);
  });

  it('never takes the key from the command line, and says so without echoing it', () => {
    const { dataDir } = tempSetup();
    const argv = runCli(['--data-dir', dataDir, 'model', 'set-key', '--provider', 'openai', KEY]);
    expect(argv.status).not.toBe(0);
    expect(argv.stdout + argv.stderr).not.toContain(KEY);
    expect(fs.existsSync(path.join(dataDir, 'keys', 'model-key.openai'))).toBe(false);
  });

  it('refuses an empty stdin, a key with spaces, and a set-key with no provider named anywhere', () => {
    const { dataDir } = tempSetup();
    const emptyStdin = runCli(['--data-dir', dataDir, 'model', 'set-key', '--provider', 'openai'], { input: '' });
    expect(emptyStdin.status).not.toBe(0);
    expect(emptyStdin.stderr).toContain('No key arrived on stdin');
    const spaced = runCli(['--data-dir', dataDir, 'model', 'set-key', '--provider', 'openai'], { input: 'sk-one two' });
    expect(spaced.status).not.toBe(0);
    expect(spaced.stderr).toContain('INVALID_INPUT');
    expect(spaced.stderr).not.toContain('sk-one two');
    const nobody = runCli(['--data-dir', dataDir, 'model', 'set-key'], { input: KEY });
    expect(nobody.status).not.toBe(0);
    expect(nobody.stderr).toContain('--provider openai or --provider anthropic');
  });

  it('refuses bad settings in words: a first set without provider or model, an address that is not http, a key in policy.json', () => {
    const { dataDir } = tempSetup();
    const noProvider = runCli(['--data-dir', dataDir, 'model', 'set', '--model', 'x']);
    expect(noProvider.status).not.toBe(0);
    expect(noProvider.stderr).toContain('--provider openai');
    const noModel = runCli(['--data-dir', dataDir, 'model', 'set', '--provider', 'anthropic']);
    expect(noModel.status).not.toBe(0);
    expect(noModel.stderr).toContain('--model NAME');
    const ftp = runCli(['--data-dir', dataDir, 'model', 'set', '--provider', 'openai', '--model', 'm', '--base-url', 'ftp://example.com']);
    expect(ftp.status).not.toBe(0);
    expect(ftp.stderr).toContain('http:// or https://');
    const policyFile = path.join(dataDir, 'policy.json');
    const policy = JSON.parse(fs.readFileSync(policyFile, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(policyFile, JSON.stringify({ ...policy, model: { provider: 'openai', model: 'm', apiKey: KEY } }));
    const keyInPolicy = runCli(['--data-dir', dataDir, 'model', 'show']);
    expect(keyInPolicy.status).not.toBe(0);
    expect(keyInPolicy.stderr).toContain('POLICY_INVALID');
    expect(keyInPolicy.stderr).toContain('executor model set-key');
    expect(keyInPolicy.stderr).not.toContain(KEY);
  });
});
