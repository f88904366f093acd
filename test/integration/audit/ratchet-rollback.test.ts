import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SignedAuditLog } from '../../../src/audit/log/audit-log.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import { DATABASE_FILE, openDatabase, type Db } from '../../../src/store/database.js';
import { appendNotes, buildAuditLog, verifyLogAt, withAuditLog } from '../../helpers/audit-log-fixture.js';

const PERSON = actorFor('cli');
const RATCHET_THEN_DIE = path.join(import.meta.dirname, 'fixtures', 'ratchet-then-die.ts');

interface KeyState {
  current: { epoch: number; epochKey: string };
  certificates?: { epoch: number; retired?: { epoch: number; epochKey: string } }[];
}

const keyState = (dataDir: string) => JSON.parse(new FileKeyStore(dataDir).read('audit-keys')!.toString()) as KeyState;

/** `count` records in one transaction that then throws: all of it rolls back. */
function rolledBack(db: Db, log: SignedAuditLog, count: number, before?: () => void): void {
  expect(() =>
    db.transaction(() => {
      before?.();
      for (let index = 0; index < count; index++) log.append({ kind: 'policy.changed', actor: PERSON, detail: { index } });
      throw new Error('the change failed after its records');
    })(),
  ).toThrow('the change failed');
}

function epochsOf(dataDir: string): { seq: number; epoch: number }[] {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    return db.prepare("SELECT seq, json_extract(body, '$.epoch') AS epoch FROM audit_records ORDER BY seq").all() as {
      seq: number;
      epoch: number;
    }[];
  } finally {
    db.close();
  }
}

async function expectIntact(dataDir: string): Promise<void> {
  expect((await verifyLogAt(dataDir)).problem).toBeNull();
  // Every ratchet is settled: no outgoing key is left in the store once its certificate committed.
  expect(keyState(dataDir).certificates ?? []).toEqual([]);
  const epochs = epochsOf(dataDir).map((row) => row.epoch);
  expect(epochs).toEqual([...epochs].sort((a, b) => a - b));
}

describe('a ratchet inside a transaction that rolls back', () => {
  it('by record count: the log goes back to the outgoing epoch and ratchets again at the true head', async () => {
    const { dataDir } = buildAuditLog({ records: 1, epochMaxRecords: 2 });
    const before = keyState(dataDir).current;
    withAuditLog(
      dataDir,
      (db, log) => {
        rolledBack(db, log, 3);
        expect(log.keys.current().epoch).toBe(before.epoch + 2);
        // In the same tick, before the check after the transaction: the next append already goes back first.
        appendNotes(db, log, 5, 'after-rollback');
      },
      { epochMaxRecords: 2 },
    );
    expect(epochsOf(dataDir).some((row) => row.epoch > before.epoch)).toBe(true);
    expect(epochsOf(dataDir).filter((row) => row.epoch === before.epoch).length).toBe(2);
    await expectIntact(dataDir);
  });

  it('by time: the same, and the epoch after it starts at the true head', async () => {
    let clock = Date.parse('2026-11-24T08:00:00.000Z');
    const options = { epochMaxMs: 60_000, now: () => new Date(clock) };
    const { dataDir } = buildAuditLog({ records: 2, ...options });
    withAuditLog(
      dataDir,
      (db, log) => {
        const epoch = log.keys.current().epoch;
        rolledBack(db, log, 3, () => {
          log.append({ kind: 'policy.changed', actor: PERSON, detail: { first: true } });
          clock += 61_000;
        });
        appendNotes(db, log, 2, 'after-rollback');
        expect(log.keys.current().epoch).toBe(epoch + 1);
      },
      options,
    );
    await expectIntact(dataDir);
  });

  it('twice in a row, then a commit', async () => {
    const { dataDir } = buildAuditLog({ records: 1, epochMaxRecords: 2 });
    withAuditLog(
      dataDir,
      (db, log) => {
        rolledBack(db, log, 5);
        rolledBack(db, log, 3);
        appendNotes(db, log, 3, 'after-rollbacks');
      },
      { epochMaxRecords: 2 },
    );
    await expectIntact(dataDir);
  });

  it('twice in a row with the check after each transaction in between', async () => {
    const { dataDir } = buildAuditLog({ records: 1, epochMaxRecords: 2 });
    const db = openDatabase(dataDir);
    try {
      const log = SignedAuditLog.open(db, new FileKeyStore(dataDir), dataDir, { epochMaxRecords: 2 });
      const epoch = log.keys.current().epoch;
      rolledBack(db, log, 3);
      await new Promise(setImmediate);
      expect(log.keys.current().epoch).toBe(epoch);
      rolledBack(db, log, 3);
      await new Promise(setImmediate);
      expect(log.keys.current().epoch).toBe(epoch);
      appendNotes(db, log, 3, 'after-rollbacks');
      await new Promise(setImmediate);
    } finally {
      db.close();
    }
    await expectIntact(dataDir);
  });

  it("a checkpoint's ratchet (its epoch's time is over) inside a transaction that rolls back", async () => {
    let clock = Date.parse('2026-11-24T08:00:00.000Z');
    const options = { epochMaxMs: 60_000, now: () => new Date(clock) };
    const { dataDir } = buildAuditLog({ records: 2, ...options });
    withAuditLog(
      dataDir,
      (db, log) => {
        const epoch = log.keys.current().epoch;
        rolledBack(db, log, 1, () => {
          // A record the transaction holds, then the epoch's time runs out and a checkpoint seals that head.
          log.append({ kind: 'policy.changed', actor: PERSON, detail: { first: true } });
          clock += 61_000;
          log.checkpoint('heartbeat');
          expect(log.keys.current().epoch).toBe(epoch + 1);
        });
        log.checkpoint('heartbeat');
        expect(log.keys.current().epoch).toBe(epoch + 1);
        appendNotes(db, log, 2, 'after-rollback');
      },
      options,
    );
    await expectIntact(dataDir);
  });

  it('inside a savepoint that rolls back while its outer transaction commits', async () => {
    const { dataDir } = buildAuditLog({ records: 1, epochMaxRecords: 2 });
    withAuditLog(
      dataDir,
      (db, log) => {
        db.transaction(() => {
          log.append({ kind: 'policy.changed', actor: PERSON, detail: { outer: true } });
          rolledBack(db, log, 3);
          log.append({ kind: 'policy.changed', actor: PERSON, detail: { outer: 'after' } });
        })();
        appendNotes(db, log, 2, 'after');
      },
      { epochMaxRecords: 2 },
    );
    await expectIntact(dataDir);
  });

  it('committed: the outgoing keys are erased right after the transaction', async () => {
    const { dataDir } = buildAuditLog({ records: 1, epochMaxRecords: 2 });
    const db = openDatabase(dataDir);
    try {
      const log = SignedAuditLog.open(db, new FileKeyStore(dataDir), dataDir, { epochMaxRecords: 2 });
      appendNotes(db, log, 3, 'grouped', 3);
      expect(keyState(dataDir).certificates?.some((cert) => cert.retired)).toBe(true);
      await new Promise(setImmediate);
      expect(keyState(dataDir).certificates ?? []).toEqual([]);
    } finally {
      db.close();
    }
    await expectIntact(dataDir);
  });

  for (const when of ['before-commit', 'after-commit'] as const) {
    it(
      `a process killed between the ratchet and ${when === 'before-commit' ? 'the commit' : 'the erasure'}: reopened, the log is intact`,
      { timeout: 60_000 },
      async () => {
        const { dataDir } = buildAuditLog({ records: 1, epochMaxRecords: 2 });
        const head = epochsOf(dataDir).at(-1)!;
        const child = spawn(process.execPath, ['--import', 'tsx', RATCHET_THEN_DIE, dataDir, when], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, killed) => resolve(killed)));
        expect(signal, stderr).toBe('SIGKILL');
        // The key store holds the ratchet not yet settled, the outgoing keys with it.
        expect(keyState(dataDir).certificates?.some((cert) => cert.retired)).toBe(true);
        // Verify never writes: before any reopen it already reads the key store as the reopen will settle it.
        expect((await verifyLogAt(dataDir)).problem).toBeNull();
        withAuditLog(dataDir, (db, log) => appendNotes(db, log, 3, 'after-crash'), { epochMaxRecords: 2 });
        const rows = epochsOf(dataDir);
        expect(rows.length).toBe(head.seq + (when === 'before-commit' ? 3 : 6));
        await expectIntact(dataDir);
      },
    );
  }
});
