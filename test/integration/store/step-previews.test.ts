import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import type { Preview } from '../../../src/domain/step-record.js';
import type { StepRepository } from '../../../src/store/step-repository.js';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { PREVIEW_APART_CHARS } from '../../../src/store/step-previews.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A large preview is stored once apart from its step's row (step_previews), so the step's changes of status
 * do not write its diff again; a new preview replaces the old one whole; and a database made before that
 * migration (previews in their rows) still reads, decides and runs.
 */

const PERSON = actorFor('window');

type StepsInternals = Pick<StepRepository, 'transition'>;

/** A file and its rewrite with every line changed: the diff of the two is well over the split threshold. */
function largePair(tag: string): { before: string; after: string } {
  const lines: string[] = [];
  for (let index = 0; lines.join('\n').length < PREVIEW_APART_CHARS; index++) lines.push(`${tag} line ${index} ${'y'.repeat(index % 30)}`);
  return { before: `${lines.join('\n')}\n`, after: `${lines.map((line) => `${line} changed`).join('\n')}\n` };
}

function storedOf(dataDir: string, stepId: string) {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    const row = db.prepare('SELECT preview_json, preview_ref, preview_hash FROM steps WHERE step_id = ?').get(stepId) as {
      preview_json: string | null;
      preview_ref: number | null;
      preview_hash: string | null;
    };
    const apart = db.prepare('SELECT preview_id, preview_json FROM step_previews WHERE step_id = ?').all(stepId) as {
      preview_id: number;
      preview_json: string;
    }[];
    return { row, apart };
  } finally {
    db.close();
  }
}

describe('large previews apart from their rows', () => {
  it('stores a large diff once apart, keeps it through the changes of status, and shows it on every read', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'big.txt');
    const { before, after } = largePair('big');
    fs.writeFileSync(target, before);
    const executor = closeAfter(Executor.open(dataDir));
    const [big, small] = await executor.propose(
      {
        steps: [
          { id: 'big', action: 'writeFile', args: { path: target, content: after } },
          { id: 'small', action: 'writeFile', args: { path: path.join(workspace, 'small.txt'), content: 'small\n' } },
        ],
      },
      PERSON,
    );
    expect(big!.status).toBe('awaiting_consent');
    const diff = big!.preview?.kind === 'fileChanges' ? big!.preview.files[0]!.diff : null;
    expect(diff).toContain('+big line 1 y changed');
    const stored = storedOf(dataDir, 'big');
    expect(stored.row.preview_json).toBeNull();
    expect(stored.apart).toHaveLength(1);
    expect(stored.row.preview_ref).toBe(stored.apart[0]!.preview_id);
    expect(JSON.parse(stored.apart[0]!.preview_json)).toEqual(big!.preview);
    // A small preview stays in its row, as before.
    expect(storedOf(dataDir, small!.step.id)).toMatchObject({ row: { preview_ref: null }, apart: [] });
    expect(JSON.parse(storedOf(dataDir, small!.step.id).row.preview_json!)).toEqual(small!.preview);

    const done = await executor.approve('big', PERSON, { previewHash: big!.previewHash });
    expect(done.status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe(after);
    // The row changed status three times; the preview apart is the one written at proposal, under the same id.
    expect(storedOf(dataDir, 'big')).toEqual(stored);
    expect(done.preview).toEqual(big!.preview);
    // A fresh process reads it from the database, not from the cache of the one that wrote it.
    executor.close();
    const reopened = closeAfter(Executor.open(dataDir));
    expect(reopened.getStep('big').preview).toEqual(big!.preview);
    expect((await reopened.verifyAudit()).ok).toBe(true);
  });

  it('replaces a large preview whole when the step is edited, leaving no earlier copy', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'big.txt');
    const { before, after } = largePair('first');
    fs.writeFileSync(target, before);
    const executor = closeAfter(Executor.open(dataDir));
    await executor.propose({ steps: [{ id: 'big', action: 'writeFile', args: { path: target, content: after } }] }, PERSON);
    const first = storedOf(dataDir, 'big');
    expect(first.apart).toHaveLength(1);
    // An edit to a content that differs on every line again: a new large preview, under a new id.
    await executor.editStep('big', PERSON, { content: `${after.replaceAll('changed', 'edited')}` });
    await expect.poll(() => executor.getStep('big').status).toBe('awaiting_consent');
    const second = storedOf(dataDir, 'big');
    expect(second.apart).toHaveLength(1);
    expect(second.apart[0]!.preview_id).not.toBe(first.apart[0]!.preview_id);
    const shown = executor.getStep('big');
    expect(shown.preview?.kind === 'fileChanges' ? shown.preview.files[0]!.diff : null).toContain('+first line 1 y edited');
    // An edit down to one changed line: a small diff, back in the row, nothing left apart.
    await executor.editStep('big', PERSON, { content: before.replace('first line 1 y\n', 'first line 1 y tweaked\n') });
    await expect.poll(() => executor.getStep('big').status).toBe('awaiting_consent');
    expect(storedOf(dataDir, 'big')).toMatchObject({ row: { preview_ref: null }, apart: [] });
    expect(storedOf(dataDir, 'big').row.preview_json).toContain('+first line 1 y tweaked');
    expect((await executor.verifyAudit()).ok).toBe(true);
  });

  it('reads, decides and runs a step whose large preview a database before step_previews holds in its row', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'big.txt');
    const { before, after } = largePair('old');
    fs.writeFileSync(target, before);
    const first = Executor.open(dataDir);
    const [waiting] = await first.propose({ steps: [{ id: 'old', action: 'writeFile', args: { path: target, content: after } }] }, PERSON);
    first.close();
    // Put the database back the way the schema before this migration stored it: the canonical preview in its
    // row (what that code wrote, byte for byte), no step_previews table, no preview_ref column.
    const db = new Database(path.join(dataDir, 'executor.db'));
    db.exec(`UPDATE steps SET preview_json = (SELECT preview_json FROM step_previews WHERE preview_id = steps.preview_ref) WHERE preview_ref IS NOT NULL;
      DROP TABLE step_previews; ALTER TABLE steps DROP COLUMN preview_ref; ALTER TABLE step_bodies DROP COLUMN content_blob;
      ALTER TABLE skills DROP COLUMN errors_in_row; DROP TABLE plans_being_stored;`);
    db.pragma(`user_version = ${MIGRATIONS.findIndex((sql) => sql.includes('CREATE TABLE step_previews'))}`);
    db.close();

    const executor = closeAfter(Executor.open(dataDir));
    const migrated = storedOf(dataDir, 'old');
    expect(migrated.row.preview_ref).toBeNull();
    expect(migrated.apart).toEqual([]);
    expect(JSON.parse(migrated.row.preview_json!)).toEqual(waiting!.preview);
    const read = executor.getStep('old');
    expect(read.preview).toEqual(waiting!.preview);
    expect(read.previewHash).toBe(waiting!.previewHash);
    const done = await executor.approve('old', PERSON, { previewHash: waiting!.previewHash });
    expect(done.status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe(after);
    // The old row's preview was never moved: its status updates rewrote it in place, as the old code did.
    expect(storedOf(dataDir, 'old').row.preview_json).toBe(migrated.row.preview_json);
    // A new large preview in the migrated database goes apart.
    fs.writeFileSync(path.join(workspace, 'n.txt'), before);
    await executor.propose(
      { steps: [{ id: 'new', action: 'writeFile', args: { path: path.join(workspace, 'n.txt'), content: after } }] },
      PERSON,
    );
    expect(storedOf(dataDir, 'new').apart).toHaveLength(1);
    expect((await executor.verifyAudit()).ok).toBe(true);
  });

  it('refuses with a typed error, not a crash, when a large preview is missing', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'b.txt');
    const { before, after } = largePair('x');
    fs.writeFileSync(target, before);
    const first = Executor.open(dataDir);
    await first.propose({ steps: [{ id: 'lost', action: 'writeFile', args: { path: target, content: after } }] }, PERSON);
    first.close();
    const db = new Database(path.join(dataDir, 'executor.db'));
    db.prepare('DELETE FROM step_previews WHERE step_id = ?').run('lost');
    db.close();
    const executor = closeAfter(Executor.open(dataDir));
    expect(() => executor.getStep('lost')).toThrow(expect.objectContaining({ code: 'DATABASE_CORRUPT' }));
  });

  it('shows the preview committed under an id, not one a rolled-back transaction held under that id and read meanwhile', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    for (const id of ['a', 'b']) {
      const { before, after } = largePair(id);
      fs.writeFileSync(path.join(workspace, `${id}.txt`), before);
      await executor.propose(
        { steps: [{ id, action: 'writeFile', args: { path: path.join(workspace, `${id}.txt`), content: after } }] },
        PERSON,
      );
    }
    const a = executor.getStep('a');
    const b = executor.getStep('b');
    expect(b.status).toBe('awaiting_consent');
    const desk = (executor as unknown as { desk: { steps: StepsInternals; commits: { run<T>(work: () => T): Promise<T> } } }).desk;
    const marked = (preview: typeof a.preview, mark: string): Preview => {
      if (preview?.kind !== 'fileChanges') throw new Error('a write is previewed as file changes');
      return { ...preview, files: preview.files.map((file) => ({ ...file, diff: `${mark}\n${file.diff}` })) };
    };
    // A record whose savepoint fails after its large preview was stored and its record read (as a rule's hit
    // record failing after an auto-approval, or the group's commit on a full disk): the preview's id is free again.
    const rolledBack = desk.commits.run(() => {
      desk.steps.transition('a', 'rejected', PERSON, { preview: { preview: marked(a.preview, 'ROLLED BACK'), previewHash: 'h1' } });
      throw new Error('this record failed');
    });
    await expect(rolledBack).rejects.toThrow('this record failed');
    expect(executor.getStep('a').preview).toEqual(a.preview);
    // The next large preview stored (another step's) may get that id; it is what its step shows.
    const fresh = marked(b.preview, 'B AGAIN');
    await desk.commits.run(() => desk.steps.transition('b', 'rejected', PERSON, { preview: { preview: fresh, previewHash: 'h2' } }));
    expect(executor.getStep('b').preview).toEqual(fresh);
    executor.close();
    const reopened = closeAfter(Executor.open(dataDir));
    expect(reopened.getStep('b').preview).toEqual(fresh);
  });
});
