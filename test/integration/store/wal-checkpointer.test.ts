import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyDataDir } from '../../../src/audit/verify/audit-verifier.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { giveBackWal, openDatabase, WAL_KEPT_BYTES } from '../../../src/store/database.js';
import { WalCheckpointer } from '../../../src/store/wal-checkpointer.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const PERSON = actorFor('cli');

const walBytes = (dataDir: string) => fs.statSync(path.join(dataDir, 'executor.db-wal'), { throwIfNoEntry: false })?.size ?? 0;

async function proposeMany(executor: Executor, workspace: string, prefix: string, count: number) {
  for (let index = 0; index < count; index++) {
    await executor.submit(
      {
        planId: `${prefix}-${index}`,
        steps: [
          { id: `${prefix}-${index}`, action: 'writeFile', args: { path: path.join(workspace, `${prefix}-${index}.txt`), content: 'x\n' } },
        ],
      },
      PERSON,
    );
  }
}

describe('the host copies the WAL back on a thread of its own, not inside a request commit', () => {
  it('copies every committed frame back while proposals commit, keeps the WAL small, and leaves none at close', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir, { checkpointOffThread: true, resumeUnfinished: false }));
    // More than SQLite's 1000-page auto-checkpoint: without the thread, one of these commits would copy the WAL back itself.
    await proposeMany(executor, workspace, 'a', 150);
    let report = await executor.nextWalCheckpoint()!;
    expect(report.walFrames).toBeGreaterThan(0);
    while (report.copiedFrames < report.walFrames) report = await executor.nextWalCheckpoint()!;
    // All copied: the next commit starts the WAL over (and SQLite trims it to journal_size_limit).
    await proposeMany(executor, workspace, 'b', 1);
    expect(walBytes(dataDir)).toBeLessThanOrEqual(WAL_KEPT_BYTES + 256 * 1024);

    executor.close();
    expect(walBytes(dataDir)).toBe(0);
    const again = closeAfter(Executor.open(dataDir, { resumeUnfinished: false }));
    expect(again.listSteps({ limit: 1000 })).toHaveLength(151);
    again.close();
    expect((await verifyDataDir(dataDir, { keyStore: new FileKeyStore(dataDir), workers: 1 })).ok).toBe(true);
  });

  it('closes right after commits the thread may be copying back, leaving no WAL; a process without it (the CLI) has no thread', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = Executor.open(dataDir, { checkpointOffThread: true, resumeUnfinished: false });
    await proposeMany(executor, workspace, 'c', 40);
    const checkpoint = executor.nextWalCheckpoint()!;
    await checkpoint;
    await proposeMany(executor, workspace, 'd', 40);
    executor.close();
    expect(walBytes(dataDir)).toBe(0);

    const cli = closeAfter(Executor.open(dataDir, { resumeUnfinished: false }));
    expect(cli.nextWalCheckpoint()).toBeNull();
    expect(cli.listSteps({ limit: 1000 })).toHaveLength(80);
  });

  it('holds the thread still while the host gives the WAL back itself (a full disk), then checkpoints again', async () => {
    const dataDir = tempDir();
    const db = openDatabase(dataDir);
    const checkpointer = WalCheckpointer.start(db, dataDir, { everyMs: 5 });
    try {
      db.exec('CREATE TABLE filler (text TEXT)');
      const insert = db.prepare('INSERT INTO filler VALUES (?)');
      for (let round = 0; round < 20; round++) {
        for (let index = 0; index < 50; index++) insert.run('x'.repeat(4000));
        // The thread checkpoints every 5 ms meanwhile; the host's TRUNCATE must never meet it.
        checkpointer.holdWhile(() => giveBackWal(db));
        expect(walBytes(dataDir)).toBe(0);
      }
      insert.run('after');
      const report = await checkpointer.nextCheckpoint();
      expect(report.walFrames).toBeGreaterThan(0);
    } finally {
      checkpointer.stop();
      giveBackWal(db);
      db.close();
    }
    expect(walBytes(dataDir)).toBe(0);
  });
});
