import Database from 'better-sqlite3';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256Of } from '../../../src/backup/blob-store.js';
import { BODY_APART_CHARS } from '../../../src/store/step-bodies.js';
import { runCli, runCliAsync } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A real `executor serve` SIGKILLed mid-proposal of a large write, after the write's content went to blobs/ and
 * before its row committed (the test holds the database's write lock, so the commit waits right there): the blob
 * is an orphan no row names. The next serve collects it at start, and keeps the blob of a step that was stored.
 */

function largeText(tag: string): string {
  const lines: string[] = [];
  for (let index = 0; lines.join('\n').length < BODY_APART_CHARS * 4; index++) lines.push(`${tag} line ${index}`);
  return `${lines.join('\n')}\n`;
}

const blobFile = (dataDir: string, hash: string) => path.join(dataDir, 'blobs', hash.slice(0, 2), hash.slice(2));

function planFile(base: string, name: string, content: string, workspace: string): string {
  const file = path.join(base, `${name}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify({ steps: [{ id: name, action: 'writeFile', args: { path: path.join(workspace, `${name}.txt`), content } }] }),
  );
  return file;
}

describe('orphan blobs after a host killed mid-proposal', { timeout: 180_000 }, () => {
  it('are collected by the next host at start; a stored step keeps its blob', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const first = await startServe(dataDir);
    const stored = largeText('stored');
    expect(runCli(['--data-dir', dataDir, 'propose', planFile(base, 'stored', stored, workspace)]).status).toBe(1);

    const orphanContent = largeText('orphan');
    const orphan = blobFile(dataDir, sha256Of(Buffer.from(orphanContent)));
    // The database's write lock, held here: the host writes the blob, then waits for the lock to commit the row.
    const lock = new Database(path.join(dataDir, 'executor.db'));
    lock.exec('BEGIN IMMEDIATE');
    const proposing = runCliAsync(['--data-dir', dataDir, 'propose', planFile(base, 'orphan', orphanContent, workspace)]).catch(() => null);
    try {
      await expect.poll(() => fs.existsSync(orphan), { timeout: 60_000, interval: 20 }).toBe(true);
      first.child.kill('SIGKILL');
      await once(first.child, 'exit');
    } finally {
      lock.exec('ROLLBACK');
      lock.close();
    }
    await proposing;
    // Killed between the blob and its row: on disk, named by nothing.
    expect(fs.existsSync(orphan)).toBe(true);
    const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
    expect(db.prepare("SELECT count(*) AS n FROM steps WHERE step_id = 'orphan'").get()).toEqual({ n: 0 });
    db.close();

    const second = await startServe(dataDir);
    await expect.poll(() => fs.existsSync(orphan), { timeout: 60_000 }).toBe(false);
    expect(fs.existsSync(blobFile(dataDir, sha256Of(Buffer.from(stored))))).toBe(true);
    const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'stored']);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.json<{ contentLost?: unknown; step: { args: { content: string } } }>()).toMatchObject({
      step: { args: { content: stored } },
    });
    expect(shown.json<{ contentLost?: unknown }>().contentLost).toBeUndefined();
    await second.stop();
  });
});
