import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * The orphan sweep reads what rows name on a thread of its own, over its own connection, in one read transaction. The
 * host's close gives the WAL back (a TRUNCATE checkpoint), which waits for every reader to leave the WAL: with that
 * reader in a long read (megabytes of previews' JSON walked) it held the host's thread for the whole busy timeout.
 * Closing never waits on the sweep.
 */

const person = actorFor('cli');

/** Open descriptors of this process on the database file: the host's own, and the sweep's reader once it opened. */
function databaseFds(dataDir: string): number {
  const file = fs.realpathSync(path.join(dataDir, 'executor.db'));
  let count = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === file) count += 1;
    } catch {
      /* closed meanwhile */
    }
  }
  return count;
}

describe.runIf(process.platform === 'linux')("closing the host while the sweep's reader is in its read", () => {
  it('closes at once: the WAL given back without waiting for the reader', async () => {
    const { dataDir, workspace } = tempSetup();
    {
      const executor = Executor.open(dataDir);
      await executor.propose(
        { steps: [{ id: 'w', action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'a\n' } }] },
        person,
      );
      executor.close();
    }
    // A preview kept apart whose changeset lists many files: the reader walks it (json_each) in its transaction.
    const db = new Database(path.join(dataDir, 'executor.db'));
    const files = Array.from({ length: 400_000 }, (_unused, index) => ({
      path: `f${index}`,
      preHash: index.toString(16).padStart(64, '0'),
    }));
    db.prepare('INSERT INTO step_previews (step_id, preview_json) VALUES (?, ?)').run('w', JSON.stringify({ kind: 'fileChanges', files }));
    db.close();

    const executor = closeAfter(Executor.open(dataDir));
    const before = databaseFds(dataDir);
    const sweep = executor.collectOrphanBlobs(0).catch((error: unknown) => error);
    await expect.poll(() => databaseFds(dataDir), { timeout: 30_000, interval: 1 }).toBeGreaterThan(before);
    const started = performance.now();
    executor.close();
    const took = performance.now() - started;
    await sweep;
    expect(took).toBeLessThan(1500);
  });
});
