import Database from 'better-sqlite3';
import fc from 'fast-check';
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
 * The collector of orphan blobs (src/backup/blob-collector.ts) over a real data directory: it takes a blob no row
 * names and nothing holds, and never one a row names or is about to name (a proposal writing its blob right now).
 */

const PERSON = actorFor('window');

function namedContentBlobs(dataDir: string): Map<string, string> {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    const rows = db.prepare('SELECT step_id, content_blob FROM step_bodies WHERE content_blob IS NOT NULL').all() as {
      step_id: string;
      content_blob: string;
    }[];
    return new Map(rows.map((row) => [row.step_id, row.content_blob]));
  } finally {
    db.close();
  }
}

const deskOf = (executor: Executor) => (executor as unknown as { desk: StepDesk }).desk;

describe('collecting orphan blobs', () => {
  it('takes an old blob no row names, and keeps contents, backups and the blobs of a run', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const target = path.join(workspace, 'done.txt');
    fs.writeFileSync(target, largeText('before'));
    const [done] = await executor.propose(
      { steps: [{ id: 'done', action: 'writeFile', args: { path: target, content: largeText('after') } }] },
      PERSON,
    );
    expect((await executor.approve('done', PERSON, { previewHash: done!.previewHash })).status).toBe('executed');
    await executor.propose({ steps: [{ id: 'waits', action: 'writeFile', args: { path: 'w.txt', content: largeText('waits') } }] }, PERSON);
    const orphan = plantOldBlob(dataDir, largeText('orphan'));
    const preImage = sha256Of(Buffer.from(largeText('before')));

    const outcome = await executor.collectOrphanBlobs();
    expect(outcome.removed).toEqual([orphan]);
    expect(fs.existsSync(blobFile(dataDir, orphan))).toBe(false);
    // The backup of what the write replaced, and both contents, stay.
    expect(fs.existsSync(blobFile(dataDir, preImage))).toBe(true);
    for (const hash of namedContentBlobs(dataDir).values()) expect(fs.existsSync(blobFile(dataDir, hash))).toBe(true);
    expect((await executor.revertStep('done', PERSON)).status).toBe('reverted');
    expect(fs.readFileSync(target, 'utf8')).toBe(largeText('before'));
    expect(executor.listSteps().every((record) => record.contentLost === undefined)).toBe(true);
  });

  it('keeps an unnamed blob while it is leased, put within the grace, or younger than the grace', async () => {
    const { dataDir } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const blobs = deskOf(executor).blobs;
    const leased = plantOldBlob(dataDir, 'leased\n');
    const lease = blobs.lease();
    lease.add(leased);
    const young = sha256Of(Buffer.from('young\n'));
    fs.mkdirSync(path.dirname(blobFile(dataDir, young)), { recursive: true });
    fs.writeFileSync(blobFile(dataDir, young), 'young\n');
    // Its time set exactly: the kernel stamps a write with a coarse clock that may lag the host's start by a few ms,
    // which would make a file written just after the open look older than the host (and so a dead host's).
    const now = new Date();
    fs.utimesSync(blobFile(dataDir, young), now, now);
    // Found there already by a put of this process (a proposal reusing an old blob): protected as if written now.
    const reused = plantOldBlob(dataDir, 'reused\n');
    blobs.put(Buffer.from('reused\n'));

    const first = await executor.collectOrphanBlobs(60_000);
    expect(first.removed).toEqual([]);
    lease.release();
    const second = await executor.collectOrphanBlobs(60_000);
    expect(second.removed).toEqual([leased]);
    // With no grace at all, only what this process holds protects: nothing does now.
    const third = await executor.collectOrphanBlobs(0);
    expect(third.removed.sort()).toEqual([young, reused].sort());
  });

  it("takes only files named as a blob (or a dead process's unfinished blob write), whatever else lies in blobs/", async () => {
    const { dataDir } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const anHourAgo = new Date(Date.now() - 2 * 3600 * 1000);
    const hex = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 62, maxLength: 62 });
    // Names that are not a blob's: any text, a hash one character short or long, upper case, a stray suffix.
    const name = fc.oneof(
      fc.string({ minLength: 1, maxLength: 60 }).filter((text) => !/[/\0]/.test(text) && text !== '.' && text !== '..'),
      hex.map((text) => text.slice(1)),
      hex.map((text) => `${text}0`),
      hex.map((text) => text.toUpperCase()),
      hex.map((text) => `${text}.bak`),
    );
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(name, { minLength: 1, maxLength: 6 }), async (names) => {
        const folder = path.join(dataDir, 'blobs', 'ab');
        fs.mkdirSync(folder, { recursive: true });
        const files = names.map((entry) => path.join(folder, entry));
        for (const file of files) {
          fs.writeFileSync(file, 'not a blob');
          fs.utimesSync(file, anHourAgo, anHourAgo);
        }
        await executor.collectOrphanBlobs(0);
        for (const file of files) expect(fs.existsSync(file), file).toBe(true);
        for (const file of files) fs.rmSync(file);
      }),
      { numRuns: 40 },
    );
    // A temporary sibling of a blob write left by a process that is gone, and an orphan blob, both go.
    const orphan = plantOldBlob(dataDir, 'orphan\n');
    const temporary = path.join(dataDir, 'blobs', orphan.slice(0, 2), `.${orphan.slice(2)}.executor-0a1b2c3d4e5f.tmp`);
    fs.writeFileSync(temporary, 'half');
    fs.utimesSync(temporary, anHourAgo, anHourAgo);
    const outcome = await executor.collectOrphanBlobs(0);
    expect(outcome).toMatchObject({ removed: [orphan], removedTemporary: 1 });
    expect(fs.existsSync(temporary)).toBe(false);
  });

  it('never removes a blob a proposal is writing or about to name, with sweeps running all the while', async () => {
    const { dataDir } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    let proposing = true;
    let sweeps = 0;
    // No grace: the leases and this process's own puts are all that protect a blob between its write and its row.
    const sweeping = (async () => {
      while (proposing) {
        await executor.collectOrphanBlobs(0);
        sweeps += 1;
      }
    })();
    const ids = Array.from({ length: 16 }, (_, index) => `p${index}`);
    await Promise.all(
      ids.map((id, index) =>
        executor.propose(
          // Every fourth content is one an earlier proposal also wrote: found on disk, not written again.
          { steps: [{ id, action: 'writeFile', args: { path: `${id}.txt`, content: largeText(`c${index % 4 === 3 ? 0 : index}`) } }] },
          PERSON,
        ),
      ),
    );
    proposing = false;
    await sweeping;
    expect(sweeps).toBeGreaterThan(1);
    await executor.collectOrphanBlobs(0);
    const named = namedContentBlobs(dataDir);
    expect([...named.keys()].sort()).toEqual([...ids].sort());
    for (const [stepId, hash] of named) expect(fs.existsSync(blobFile(dataDir, hash)), stepId).toBe(true);
    // A fresh process reads every content back from its blob.
    executor.close();
    const reopened = closeAfter(Executor.open(dataDir));
    for (const id of ids) expect(reopened.getStep(id).contentLost, id).toBeUndefined();
  });
});

describe('collecting orphan blobs while steps run', () => {
  it('never takes the backup of a file a run is replacing, with no grace and sweeps running all the while: every run reverts', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const ids = Array.from({ length: 12 }, (_, index) => `r${index}`);
    for (const id of ids) fs.writeFileSync(path.join(workspace, `${id}.txt`), index2text(id));
    const proposed = await Promise.all(
      ids.map((id) =>
        executor.propose({ steps: [{ id, action: 'writeFile', args: { path: `${id}.txt`, content: `new ${id}\n` } }] }, PERSON),
      ),
    );
    let running = true;
    let sweeps = 0;
    // No grace: only what this process holds protects a blob between its write and the row that names it.
    const sweeping = (async () => {
      while (running) {
        await executor.collectOrphanBlobs(0);
        sweeps += 1;
      }
    })();
    const done = await Promise.all(ids.map((id, index) => executor.approve(id, PERSON, { previewHash: proposed[index]![0]!.previewHash })));
    running = false;
    await sweeping;
    expect(sweeps).toBeGreaterThan(1);
    expect(done.map((record) => record.status)).toEqual(ids.map(() => 'executed'));
    for (const id of ids) {
      expect((await executor.revertStep(id, PERSON)).status, id).toBe('reverted');
      expect(fs.readFileSync(path.join(workspace, `${id}.txt`), 'utf8')).toBe(index2text(id));
    }
  });
});

/** A file's own text before a run replaces it: large, so its backup takes a while to write. */
function index2text(id: string): string {
  return largeText(`before ${id}`);
}
