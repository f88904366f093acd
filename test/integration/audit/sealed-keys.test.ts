import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditReader } from '../../../src/audit/log/audit-reader.js';
import { SealedKeyStore } from '../../../src/audit/keys/sealed-key-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { startHostThread } from '../../../src/ipc/host/host-line.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { fakeSealer } from '../../helpers/fake-sealer.js';
import { runCli, runCliAsync } from '../../helpers/run-cli.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

// The OS keychain (Electron's safeStorage) cannot exist without the Electron binary: a fake sealer
// (AES-GCM under a test key) stands in for it. Everything else is real: SQLite, the worker thread
// the app runs its host on, the CLI in a child process.
const BOOTSTRAP = new URL('../../helpers/host-thread-bootstrap.mjs', import.meta.url);
const SECRET = 'api_key=sk-abcdefghijklmnopqrstuvwx';

function writePlan(workspace: string, id: string) {
  return { planId: `plan-${id}`, steps: [{ id, action: 'writeFile', args: { path: path.join(workspace, `${id}.txt`), content: SECRET } }] };
}

function keysDir(dataDir: string): string {
  return path.join(dataDir, 'keys');
}

function keyFiles(dataDir: string): string[] {
  return fs.readdirSync(keysDir(dataDir)).sort();
}

/** Every byte under keys/: where no plain key may appear. */
function keysDirBytes(dataDir: string): Buffer {
  return Buffer.concat(keyFiles(dataDir).map((name) => fs.readFileSync(path.join(keysDir(dataDir), name))));
}

/** The hex secrets inside the key state (K0s, epoch key, salt): none may be on disk once sealed. */
function secretsIn(keyState: Buffer): string[] {
  const state = JSON.parse(keyState.toString('utf8')) as {
    salt: string;
    current: { epochKey: string; signingKey: string };
    chains: { rootKey?: string }[];
  };
  return [
    state.salt,
    state.current.epochKey,
    state.current.signingKey,
    ...state.chains.flatMap((chain) => (chain.rootKey ? [chain.rootKey] : [])),
  ];
}

function expectSealedOnly(dataDir: string, secrets: string[]): void {
  expect(keyFiles(dataDir).every((name) => name.endsWith('.sealed'))).toBe(true);
  const onDisk = keysDirBytes(dataDir);
  for (const secret of secrets)
    expect(onDisk.includes(Buffer.from(secret)), `a key secret is on disk in plain: ${secret.slice(0, 8)}…`).toBe(false);
}

describe('audit keys sealed by the OS keychain', { timeout: 240_000 }, () => {
  it('moves an installation with plain keys to sealed ones, finishing a migration a crash cut short, and the log stays verifiable', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    const cli = actorFor('cli');
    const before = Executor.open(dataDir);
    await before.propose(writePlan(workspace, 'w1'), cli);
    before.close();
    expect(keyFiles(dataDir)).toContain('audit-keys');
    const plainState = fs.readFileSync(path.join(keysDir(dataDir), 'audit-keys'));

    // A crash mid-migration: audit-keys was sealed durably but its plain file not yet erased, the anchor not reached.
    const sealer = fakeSealer();
    fs.writeFileSync(path.join(keysDir(dataDir), 'audit-keys.sealed'), sealer.seal(plainState), { mode: 0o600 });

    const sealed = Executor.open(dataDir, { keyStore: new SealedKeyStore(dataDir, sealer) });
    try {
      expectSealedOnly(dataDir, secretsIn(plainState));
      expect(sealed.keyStatus()).toMatchObject({ protection: 'os-keychain', protectionWarning: null });
      await sealed.propose(writePlan(workspace, 'w2'), cli);
      const report = await sealed.verifyAudit({ workers: 1 });
      expect(report.problem).toBeNull();
      expect(report.ok).toBe(true);
    } finally {
      sealed.close();
    }

    // Reopened (idempotent: nothing left to move), the chain carries on under the same keys.
    const again = Executor.open(dataDir, { keyStore: new SealedKeyStore(dataDir, sealer) });
    try {
      expect((await again.verifyAudit({ workers: 1 })).ok).toBe(true);
      expect(again.keyStatus().logId).toBe(JSON.parse(plainState.toString('utf8')).logId);
    } finally {
      again.close();
    }
    expectSealedOnly(dataDir, secretsIn(plainState));
  });

  it('the app (host thread) serves keys status with the warning, audit verify and audit hash to the CLI; without it the CLI refuses and creates nothing', async () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'MEDIUM' });
    const sealer = fakeSealer({ protection: 'plaintext' });
    const thread = closeAfter(await startHostThread({ dataDir, workerUrl: BOOTSTRAP, credentials: [], sealer }));
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(planFile, JSON.stringify(writePlan(workspace, 'w1')));
    // Async CLI runs: this thread is the one that answers the host thread's seal/unseal requests.
    const proposed = await runCliAsync(['--data-dir', dataDir, 'propose', planFile]);
    expect(proposed.status, proposed.stderr).toBe(0);

    const status = await runCliAsync(['--data-dir', dataDir, '--json', 'keys', 'status']);
    expect(status.status, status.stderr).toBe(0);
    expect(status.json()).toMatchObject({
      protection: 'plaintext',
      protectionWarning: expect.stringMatching(/fixed key/),
      location: keysDir(dataDir),
    });
    const statusText = await runCliAsync(['--data-dir', dataDir, 'keys', 'status']);
    expect(statusText.stdout).toMatch(/^warning +Test keychain fallback/m);

    const verified = await runCliAsync(['--data-dir', dataDir, '--json', 'audit', 'verify']);
    expect(verified.status, verified.stderr).toBe(0);
    expect(verified.json()).toMatchObject({ ok: true, problem: null });

    const hashed = await runCliAsync(['--data-dir', dataDir, '--json', 'audit', 'hash', SECRET]);
    expect(hashed.status, hashed.stderr).toBe(0);
    const found = hashed.json<{ digest: string; seqs: number[] }>();
    expect(found.seqs.length).toBeGreaterThan(0);
    // Through the app the search reports its progress like verify: the CLI prints it, a client hears its own events.
    const withProgress = await runCliAsync(['--data-dir', dataDir, '--json', 'audit', 'hash', '--progress', SECRET]);
    expect(withProgress.json<{ seqs: number[] }>().seqs).toEqual(found.seqs);
    expect(withProgress.stderr).toMatch(/searching… checked (\d+) of \1 records \(100%\)/);
    const person = await connectToHost(dataDir, 'cli');
    let heardFinal: (event: { checked: number; total: number }) => void = () => undefined;
    const final = new Promise<{ checked: number; total: number }>((resolve) => (heardFinal = resolve));
    await person.on('verify', (event) => event.progressId === 'hash-1' && event.checked === event.total && heardFinal(event));
    expect((await person.hashAuditValue({ value: SECRET, progressId: 'hash-1' })).seqs).toEqual(found.seqs);
    expect((await final).total).toBeGreaterThan(0);
    person.close();
    // "Was it this value?" is the person's question about their secrets, not the agent's.
    const agent = await connectToHost(dataDir, 'agent');
    await expect(agent.hashAuditValue({ value: SECRET })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    agent.close();

    await thread.close();

    // The same answer straight from the sealed keys, and no key secret on disk in plain.
    const keyStore = new SealedKeyStore(dataDir, sealer);
    const reader = new AuditReader(dataDir, keyStore);
    try {
      expect(reader.hashSecret(SECRET)).toEqual(found);
    } finally {
      reader.close();
    }
    expectSealedOnly(dataDir, secretsIn(keyStore.read('audit-keys')!));

    // No app running: every way in that needs the keys says so and writes no plain key.
    const filesBefore = keyFiles(dataDir);
    for (const args of [
      ['keys', 'status'],
      ['audit', 'verify'],
      ['audit', 'hash', SECRET],
      ['steps', 'list'],
      ['propose', planFile],
    ]) {
      const refused = runCli(['--data-dir', dataDir, ...args]);
      expect(refused.status, `executor ${args.join(' ')}: ${refused.stdout}`).not.toBe(0);
      expect(refused.stderr).toContain('AUDIT_KEY_UNAVAILABLE');
      expect(refused.stderr).toMatch(/sealed by the Executor desktop app.*Start the Executor app/);
    }
    expect(keyFiles(dataDir)).toEqual(filesBefore);
    // Reading what needs no key still works.
    expect(runCli(['--data-dir', dataDir, 'audit', 'show', '--limit', '3']).status).toBe(0);
  });
});
