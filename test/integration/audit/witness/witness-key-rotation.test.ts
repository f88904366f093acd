import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { logKeyHandoverNote } from '../../../../src/audit/format/checkpoint-note.js';
import { generateSignerKey, parseSignerKey } from '../../../../src/audit/format/signed-note.js';
import { runCli } from '../../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';
import { startWitness } from '../../../helpers/witness-process.js';
import { originHash } from '../../../../src/audit/witness/witness-state.js';

/**
 * After `executor keys rotate` the log signs its checkpoints with a new key. The rotation record
 * carries a handover note signed by the outgoing key; the publisher hands it to a witness that
 * answers 403, and `executor witness serve` (a separate process here) trusts the new key from then
 * on, also after a restart. A handover only adds a key: whoever holds a copy of the key store can
 * hand the witness a key of their own, but cannot lock the real log out, nor get a checkpoint that
 * does not extend the witnessed tree cosigned.
 */

const MANY_CLI_RUNS_MS = 480_000;

function cli(dataDir: string, args: string[]) {
  return runCli(['--data-dir', dataDir, ...args], { timeoutMs: 120_000 });
}

function publish(dataDir: string) {
  const result = cli(dataDir, ['--json', 'witness', 'publish']);
  expect(result.status, result.stderr).not.toBe(2);
  return { status: result.status, results: result.json<{ witness: string; kind: string; message?: string }[]>() };
}

async function post(url: string, body: string) {
  const response = await fetch(url, { method: 'POST', body });
  return { status: response.status, text: await response.text() };
}

describe('a witness follows the log across `executor keys rotate`', () => {
  it(
    'the rotation hands the new log key to the witness process, which cosigns on, keeps it over a restart, and refuses forged handovers',
    async () => {
      const { dataDir } = tempSetup();
      expect(publish(dataDir).status).toBe(0);
      const oldLogKey = cli(dataDir, ['witness', 'log-key']).stdout.trim();
      const keyFile = path.join(tempDir(), 'witness.key');
      const stateDir = path.join(path.dirname(keyFile), 'state');
      expect(runCli(['witness', 'key', '--key-file', keyFile, '--name', 'witness.test/team']).status).toBe(0);
      let witness = await startWitness(['--key-file', keyFile, '--log', oldLogKey, '--state-dir', stateDir]);
      expect(cli(dataDir, ['witness', 'add', witness.info.url, witness.info.vkey, '--name', 'w1']).status).toBe(0);
      expect(publish(dataDir).results).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);

      const rotated = cli(dataDir, ['--json', 'keys', 'rotate', '--reason', 'test']);
      expect(rotated.status, rotated.stderr).toBe(0);
      const newLogKey = cli(dataDir, ['witness', 'log-key']).stdout.trim();
      expect(newLogKey).not.toBe(oldLogKey);
      const [origin] = oldLogKey.split('=');
      const record = cli(dataDir, ['--json', 'audit', 'show', '--action', 'key.rotated']).json<{ args: { logKeyHandover: string } }[]>();
      expect(record[0]!.args.logKeyHandover).toContain(
        `${origin}\nlog-key-handover\n${newLogKey.slice(origin!.length + 1)}\n\n\u2014 ${origin} `,
      );

      // The witness was started with the old key only: the publish hands over the new one and is cosigned.
      expect(publish(dataDir).results).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);
      await witness.stderrMatching(/log-key handover .*now trusts/);
      const verified = cli(dataDir, ['--json', 'audit', 'verify']);
      expect(verified.status, verified.stdout).toBe(0);

      // Restarted with the same old --log line, the witness still trusts the new key and cosigns more.
      await witness.stop();
      witness = await startWitness([
        '--key-file',
        keyFile,
        '--log',
        oldLogKey,
        '--state-dir',
        stateDir,
        '--port',
        String(new URL(witness.info.url).port),
      ]);
      expect(publish(dataDir).results).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);

      // Hostile handovers: a key the witness never trusted, the rotation's own note replayed, garbage.
      const stranger = parseSignerKey(generateSignerKey(origin!).skey);
      const thief = generateSignerKey(origin!);
      const forged = await post(
        `${witness.info.url}/executor/log-key-handover`,
        logKeyHandoverNote(origin!.slice('executor.audit/'.length), stranger, thief.vkey),
      );
      expect(forged.status).toBe(403);
      const replayed = await post(`${witness.info.url}/executor/log-key-handover`, record[0]!.args.logKeyHandover);
      expect(replayed.status).toBe(200);
      expect(replayed.text).toMatch(/already trusts/);
      expect((await post(`${witness.info.url}/executor/log-key-handover`, 'not a note')).status).toBe(400);
      expect((await post(`${witness.info.url}/executor/log-key-handover`, `${origin}\nlog-key-handover\n${thief.vkey}\n\n`)).status).toBe(
        400,
      );
      const state = fs.readdirSync(path.join(stateDir, 'logs'));
      expect(state.some((file) => file.endsWith('.keys.json'))).toBe(true);
      await witness.stop();
    },
    MANY_CLI_RUNS_MS,
  );

  it(
    'a handover from a stolen copy of the current key store does not lock the real log out, and is withdrawn for good once the real key signs again',
    async () => {
      const { dataDir, base } = tempSetup();
      expect(publish(dataDir).status).toBe(0);
      const realLogKey = cli(dataDir, ['witness', 'log-key']).stdout.trim();
      const keyFile = path.join(tempDir(), 'witness.key');
      const stateDir = path.join(path.dirname(keyFile), 'state');
      expect(runCli(['witness', 'key', '--key-file', keyFile, '--name', 'witness.test/team']).status).toBe(0);
      const witness = await startWitness(['--key-file', keyFile, '--log', realLogKey, '--state-dir', stateDir]);
      expect(cli(dataDir, ['witness', 'add', witness.info.url, witness.info.vkey, '--name', 'w1']).status).toBe(0);
      expect(publish(dataDir).results).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);

      // The thief copies the data directory (the current key store with it) and rotates there: the
      // rotation record carries a handover signed by the real log key, naming the thief's key.
      const thiefDir = path.join(base, 'thief');
      fs.cpSync(dataDir, thiefDir, { recursive: true });
      expect(cli(thiefDir, ['--json', 'keys', 'rotate', '--reason', 'theft']).status).toBe(0);
      const thiefLogKey = cli(thiefDir, ['witness', 'log-key']).stdout.trim();
      expect(thiefLogKey).not.toBe(realLogKey);
      const note = cli(thiefDir, ['--json', 'audit', 'show', '--action', 'key.rotated']).json<{ args: { logKeyHandover: string } }[]>()[0]!
        .args.logKeyHandover;
      const taken = await post(`${witness.info.url}/executor/log-key-handover`, note);
      expect(taken.status).toBe(200);
      await witness.stderrMatching(/log-key handover .*now trusts .* as well/);

      // (1) The real host's next checkpoint is still cosigned. Signed by the key that "rotated away",
      // it shows the handover was no rotation: the witness withdraws the handed-over key, for good.
      expect(cli(dataDir, ['roots', 'add', tempDir()]).status).toBe(0);
      expect(publish(dataDir).results).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);
      await witness.stderrMatching(/log-key handover .*no longer trusts .*no rotation/);
      const keysFile = path.join(stateDir, 'logs', `${originHash(realLogKey.slice(0, realLogKey.indexOf('=')))}.keys.json`);
      const thiefVkey = thiefLogKey.slice(thiefLogKey.indexOf('=') + 1);
      expect(JSON.parse(fs.readFileSync(keysFile, 'utf8'))).toEqual(expect.objectContaining({ learned: [], withdrawn: [thiefVkey] }));
      const again = await post(`${witness.info.url}/executor/log-key-handover`, note);
      expect(again.status).toBe(403);
      expect(again.text).toMatch(/withdrew/);

      // (2) The thief's log, signed by the withdrawn key, is refused (403), its handover too: nothing cosigned.
      const stolen = publish(thiefDir).results;
      expect(stolen).toHaveLength(1);
      expect(stolen[0]!.kind, JSON.stringify(stolen)).toBe('refused');
      await witness.stderrMatching(/^403 POST \/add-checkpoint/m);
      // The witness still holds the real log's tree: the real host cosigns on.
      expect(cli(dataDir, ['roots', 'add', tempDir()]).status).toBe(0);
      expect(publish(dataDir).results).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);
      const verified = cli(dataDir, ['--json', 'audit', 'verify']);
      expect(verified.status, verified.stdout).toBe(0);
      await witness.stop();
    },
    MANY_CLI_RUNS_MS,
  );

  it(
    'a key that --log names is trusted even when an old key file lists it as retired',
    async () => {
      const { dataDir } = tempSetup();
      expect(publish(dataDir).status).toBe(0);
      const realLogKey = cli(dataDir, ['witness', 'log-key']).stdout.trim();
      const [origin, realVkey] = [realLogKey.slice(0, realLogKey.indexOf('=')), realLogKey.slice(realLogKey.indexOf('=') + 1)];
      const keyFile = path.join(tempDir(), 'witness.key');
      const stateDir = path.join(path.dirname(keyFile), 'state');
      expect(runCli(['witness', 'key', '--key-file', keyFile, '--name', 'witness.test/team']).status).toBe(0);
      // What a witness from before wrote after a thief's handover: the thief's key learned, the real one retired.
      fs.mkdirSync(path.join(stateDir, 'logs'), { recursive: true });
      const keysFile = path.join(stateDir, 'logs', `${originHash(origin)}.keys.json`);
      fs.writeFileSync(
        keysFile,
        `${JSON.stringify({ origin, learned: [generateSignerKey(origin).vkey], retired: [realVkey] }, null, 2)}\n`,
        { mode: 0o600 },
      );
      const witness = await startWitness(['--key-file', keyFile, '--log', realLogKey, '--state-dir', stateDir]);
      expect(cli(dataDir, ['witness', 'add', witness.info.url, witness.info.vkey, '--name', 'w1']).status).toBe(0);
      expect(publish(dataDir).results).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);
      expect(JSON.parse(fs.readFileSync(keysFile, 'utf8'))).toEqual(expect.objectContaining({ retired: [realVkey] }));
      await witness.stop();
    },
    MANY_CLI_RUNS_MS,
  );
});
