import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { logKeyHandoverNote } from '../../../../src/audit/checkpoint-note.js';
import { generateSignerKey, parseSignerKey } from '../../../../src/audit/signed-note.js';
import { runCli } from '../../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';
import { startWitness } from '../../../helpers/witness-process.js';

/**
 * After `executor keys rotate` the log signs its checkpoints with a new key. The rotation record
 * carries a handover note signed by the outgoing key; the publisher hands it to a witness that
 * answers 403, and `executor witness serve` (a separate process here) trusts the new key from then
 * on, also after a restart, and no longer the retired one.
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
  it('the rotation hands the new log key to the witness process, which cosigns on, keeps it over a restart, and refuses forged or retired handovers', async () => {
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
    expect(record[0]!.args.logKeyHandover).toContain(`${origin}\nlog-key-handover\n${newLogKey.slice(origin!.length + 1)}\n\n\u2014 ${origin} `);

    // The witness was started with the old key only: the publish hands over the new one and is cosigned.
    expect(publish(dataDir).results).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);
    await witness.stderrMatching(/log-key handover .*now trusts/);
    const verified = cli(dataDir, ['--json', 'audit', 'verify']);
    expect(verified.status, verified.stdout).toBe(0);

    // Restarted with the same old --log line, the witness still trusts the new key and cosigns more.
    await witness.stop();
    witness = await startWitness(['--key-file', keyFile, '--log', oldLogKey, '--state-dir', stateDir, '--port', String(new URL(witness.info.url).port)]);
    expect(publish(dataDir).results).toEqual([expect.objectContaining({ witness: 'w1', kind: 'cosigned' })]);

    // Hostile handovers: a key the witness never trusted, the rotation's own note replayed (the old key is retired), garbage.
    const stranger = parseSignerKey(generateSignerKey(origin!).skey);
    const thief = generateSignerKey(origin!);
    const forged = await post(`${witness.info.url}/executor/log-key-handover`, logKeyHandoverNote(origin!.slice('executor.audit/'.length), stranger, thief.vkey));
    expect(forged.status).toBe(403);
    const replayed = await post(`${witness.info.url}/executor/log-key-handover`, record[0]!.args.logKeyHandover);
    expect(replayed.status).toBe(200);
    expect(replayed.text).toMatch(/already trusts/);
    expect((await post(`${witness.info.url}/executor/log-key-handover`, 'not a note')).status).toBe(400);
    expect((await post(`${witness.info.url}/executor/log-key-handover`, `${origin}\nlog-key-handover\n${thief.vkey}\n\n`)).status).toBe(400);
    const state = fs.readdirSync(path.join(stateDir, 'logs'));
    expect(state.some((file) => file.endsWith('.keys.json'))).toBe(true);
    await witness.stop();
  }, MANY_CLI_RUNS_MS);
});
