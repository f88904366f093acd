import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256Of } from '../../../src/backup/blob-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import type { StepDesk } from '../../../src/executor/step-desk.js';
import { blobFile, largeText, plantOldBlob } from '../../helpers/orphan-blobs.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The collector of orphan blobs reads what the rows name (every preview's changeset walked as JSON, every dry-run
 * record read) on a thread of its own, over a connection of its own to the very database file the host opened: on
 * the host's thread a sweep over many large previews held every request for as long.
 */

const PERSON = actorFor('window');

const deskOf = (executor: Executor) => (executor as unknown as { desk: StepDesk }).desk;

/** The SQL the host's own connection prepares while `work` runs. */
async function preparedOnHost<T>(desk: StepDesk, work: () => Promise<T>): Promise<{ result: T; sql: string[] }> {
  const sql: string[] = [];
  const prepare = desk.db.prepare.bind(desk.db);
  const spied = (text: string) => {
    sql.push(text);
    return prepare(text);
  };
  Object.defineProperty(desk.db, 'prepare', { value: spied, configurable: true, writable: true });
  try {
    return { result: await work(), sql };
  } finally {
    Object.defineProperty(desk.db, 'prepare', { value: prepare, configurable: true, writable: true });
  }
}

describe('collecting orphan blobs off the host thread', () => {
  it("walks no preview's JSON on the host's connection, and keeps a blob only a large preview's changeset names", async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const target = path.join(workspace, 'waits.txt');
    const before = largeText('before');
    fs.writeFileSync(target, before);
    const [waiting] = await executor.propose(
      { steps: [{ id: 'waits', action: 'writeFile', args: { path: target, content: largeText('after') } }] },
      PERSON,
    );
    expect(waiting!.status).toBe('awaiting_consent');
    // Its preview (a diff over 16 KiB, kept in step_previews) names the file's present content by its hash.
    const preImage = sha256Of(Buffer.from(before));
    expect(waiting!.preview?.kind === 'fileChanges' && waiting!.preview.files[0]!.preHash).toBe(preImage);
    expect(plantOldBlob(dataDir, before)).toBe(preImage);
    const orphan = plantOldBlob(dataDir, largeText('orphan'));
    const desk = deskOf(executor);

    const { result: outcome, sql } = await preparedOnHost(desk, () => executor.collectOrphanBlobs(0));
    expect(outcome.removed).toEqual([orphan]);
    expect(fs.existsSync(blobFile(dataDir, preImage))).toBe(true);
    expect(sql.filter((text) => /json_each|step_previews|file_backups/.test(text))).toEqual([]);

    // The same sweep read on the host's thread (no identity to open the file by) does walk them there: the spy sees it.
    const orphanAgain = plantOldBlob(dataDir, largeText('orphan again'));
    desk.databaseIdentity = () => null;
    const inThread = await preparedOnHost(desk, () => executor.collectOrphanBlobs(0));
    expect(inThread.result.removed).toEqual([orphanAgain]);
    expect(inThread.sql.some((text) => text.includes('json_each'))).toBe(true);
  });

  it('takes nothing when the database file by its name is not the one the host opened', async () => {
    const { dataDir } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const orphan = plantOldBlob(dataDir, largeText('orphan'));
    const desk = deskOf(executor);
    const opened = desk.databaseIdentity()!;
    desk.databaseIdentity = () => ({ dev: opened.dev, ino: opened.ino + 1 });
    await expect(executor.collectOrphanBlobs(0)).rejects.toThrow(/no longer the database this host opened/);
    expect(fs.existsSync(blobFile(dataDir, orphan))).toBe(true);
    desk.databaseIdentity = () => opened;
    expect((await executor.collectOrphanBlobs(0)).removed).toEqual([orphan]);
  });

  it('stops its reader when the host closes mid-sweep, and the closed host took nothing after', async () => {
    const { dataDir } = tempSetup();
    const executor = Executor.open(dataDir, { orphanSweeps: { everyMs: 3600_000, graceMs: 0 } });
    const orphans = Array.from({ length: 50 }, (_unused, index) => plantOldBlob(dataDir, `orphan ${index}\n`));
    const sweep = executor.collectOrphanBlobs(0).then(
      (outcome) => outcome,
      (error: unknown) => error,
    );
    executor.close();
    const ended = await sweep;
    // Either it finished before the close reached it, or it was stopped: never a removal after the host closed.
    const removed = ended instanceof Error ? [] : (ended as { removed: string[] }).removed;
    for (const hash of orphans) expect(fs.existsSync(blobFile(dataDir, hash))).toBe(!removed.includes(hash));
    // The data directory opens again (no connection of the sweep's left holding it).
    closeAfter(Executor.open(dataDir)).close();
  });
});
