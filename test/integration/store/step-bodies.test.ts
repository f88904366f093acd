import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { canonicalJson, sha256Hex } from '../../../src/domain/canonical-json.js';
import { Executor } from '../../../src/executor/executor.js';
import { MIGRATIONS } from '../../../src/store/migrations.js';
import { BODY_APART_CHARS } from '../../../src/store/step-bodies.js';
import { runCli } from '../../helpers/run-cli.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A large step's body is stored once apart from its row (step_bodies), so its changes of status do not
 * write its content again; and a database made before that migration (whole steps in their rows) still
 * reads, decides and runs.
 */

const PERSON = actorFor('window');

/** Text over the split threshold, in lines (so a diff of it is a real one). */
function largeText(tag: string): string {
  const lines: string[] = [];
  for (let index = 0; lines.join('\n').length < BODY_APART_CHARS * 2; index++) lines.push(`${tag} line ${index} ${'x'.repeat(index % 40)}`);
  return `${lines.join('\n')}\n`;
}

/** A blob of the data directory's backups, by its sha256. */
const blobFile = (dataDir: string, hash: string) => path.join(dataDir, 'blobs', hash.slice(0, 2), hash.slice(2));

function rowOf(dataDir: string, stepId: string) {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    const row = db.prepare('SELECT step_json, body_apart FROM steps WHERE step_id = ?').get(stepId) as {
      step_json: string;
      body_apart: number;
    };
    const body = db.prepare('SELECT step_json, content_blob FROM step_bodies WHERE step_id = ?').get(stepId) as
      { step_json: string; content_blob: string | null } | undefined;
    return { row, body: body?.step_json ?? null, contentBlob: body?.content_blob ?? null };
  } finally {
    db.close();
  }
}

/** The whole canonical step, as the code before content blobs stored it in step_bodies (and before step_bodies, in its row). */
function wholeStepJson(dataDir: string, stepId: string): string {
  const { body, contentBlob } = rowOf(dataDir, stepId);
  const step = JSON.parse(body!) as { args: Record<string, unknown> };
  if (contentBlob !== null) step.args.content = fs.readFileSync(blobFile(dataDir, contentBlob), 'utf8');
  return canonicalJson(step);
}

describe('large step bodies apart from their rows', () => {
  it('stores a large write once apart, runs it, finds it in lists, and keeps the audit log whole', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const content = largeText('new');
    const target = path.join(workspace, 'big.txt');
    const [big, small] = await executor.propose(
      {
        steps: [
          { id: 'big', action: 'writeFile', args: { path: target, content } },
          { id: 'small', action: 'writeFile', args: { path: path.join(workspace, 'small.txt'), content: 'small\n' } },
        ],
      },
      PERSON,
    );
    expect(big!.status).toBe('awaiting_consent');
    const stored = rowOf(dataDir, 'big');
    expect(stored.row.body_apart).toBe(1);
    expect(stored.row.step_json.length).toBeLessThan(1024);
    expect(stored.row.step_json).not.toContain('"content"');
    // The content itself is kept once, as the backup blob of the write's post-image; the body names it.
    expect(stored.body).toBe(stored.row.step_json);
    expect(stored.contentBlob).toBe(sha256Hex(Buffer.from(content)));
    expect(fs.readFileSync(blobFile(dataDir, stored.contentBlob!), 'utf8')).toBe(content);
    // A small step keeps its whole self in its row, as before.
    const smallStored = rowOf(dataDir, small!.step.id);
    expect(smallStored.row.body_apart).toBe(0);
    expect(smallStored.body).toBeNull();
    expect(JSON.parse(smallStored.row.step_json).args.content).toBe('small\n');

    expect(executor.getStep('big').step.args).toMatchObject({ content });
    const done = await executor.approve('big', PERSON, { previewHash: big!.previewHash });
    expect(done.status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe(content);
    // The row the status changes rewrote still holds no content; the body is the one written at proposal.
    expect(rowOf(dataDir, 'big').row.step_json).not.toContain('"content"');
    expect(rowOf(dataDir, 'big')).toEqual(stored);
    // The run's backup of its post-image is that same blob.
    const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
    expect(db.prepare('SELECT post_hash FROM file_backups WHERE step_id = ?').all('big')).toEqual([{ post_hash: stored.contentBlob }]);
    db.close();
    // Lists and their text search read the row alone.
    const page = executor.listStepSummariesFor({ text: 'big.txt' }, PERSON);
    expect(page.items.map((item) => item.id)).toContain('big');
    expect((await executor.verifyAudit()).ok).toBe(true);
  });

  it('keeps an edited large step apart, and the first proposal on record', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const target = path.join(workspace, 'big.txt');
    const first = largeText('first');
    await executor.propose({ steps: [{ id: 'big', action: 'writeFile', args: { path: target, content: first } }] }, PERSON);
    const second = largeText('second');
    const edited = await executor.editStep('big', PERSON, { content: second });
    expect(edited.step.args).toMatchObject({ content: second });
    await expect.poll(() => executor.getStep('big').status).toBe('awaiting_consent');
    const stored = rowOf(dataDir, 'big');
    expect(stored.row.body_apart).toBe(1);
    expect(JSON.parse(stored.body!).args.content).toBe(second);
    // An edit down to a small content brings the step back into its row.
    await executor.editStep('big', PERSON, { content: 'short\n' });
    await expect.poll(() => executor.getStep('big').status).toBe('awaiting_consent');
    const third = executor.getStep('big');
    expect(third.step.args).toMatchObject({ content: 'short\n' });
    expect(rowOf(dataDir, 'big')).toMatchObject({ row: { body_apart: 0 }, body: null });
    const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
    const proposed = db.prepare('SELECT proposed_step_json FROM steps WHERE step_id = ?').get('big') as { proposed_step_json: string };
    db.close();
    expect(JSON.parse(proposed.proposed_step_json).args.content).toBe(first);
    const done = await executor.approve('big', PERSON, { previewHash: third.previewHash });
    expect(done.status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe('short\n');
    expect((await executor.verifyAudit()).ok).toBe(true);
  });

  it('reads, decides and runs a large step stored by the schema before step_bodies', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'big.txt');
    const content = largeText('old');
    const first = Executor.open(dataDir);
    const [waiting] = await first.propose({ steps: [{ id: 'old', action: 'writeFile', args: { path: target, content } }] }, PERSON);
    first.close();
    // Put the database back the way the schema before this migration stored it: the whole canonical step
    // in its row (what that code wrote, byte for byte), no step_bodies table, no body_apart column.
    const whole = wholeStepJson(dataDir, 'old');
    const db = new Database(path.join(dataDir, 'executor.db'));
    db.prepare('UPDATE steps SET step_json = ? WHERE step_id = ?').run(whole, 'old');
    // The later migrations are undone first: content blobs, previews back in their rows, the skills' errors in a row.
    db.exec(`ALTER TABLE step_bodies DROP COLUMN content_blob;
      UPDATE steps SET preview_json = (SELECT preview_json FROM step_previews WHERE preview_id = steps.preview_ref) WHERE preview_ref IS NOT NULL;
      DROP TABLE step_previews; ALTER TABLE steps DROP COLUMN preview_ref;
      DROP TABLE step_bodies; ALTER TABLE steps DROP COLUMN body_apart; ALTER TABLE skills DROP COLUMN errors_in_row; DROP TABLE plans_being_stored;`);
    db.pragma(`user_version = ${MIGRATIONS.findIndex((sql) => sql.includes('CREATE TABLE step_bodies'))}`);
    db.close();

    const executor = closeAfter(Executor.open(dataDir));
    const migrated = rowOf(dataDir, 'old');
    expect(migrated.row.body_apart).toBe(0);
    expect(migrated.body).toBeNull();
    const read = executor.getStep('old');
    expect(read.step.args).toMatchObject({ content });
    expect(read.stepHash).toBe(waiting!.stepHash);
    const done = await executor.approve('old', PERSON, { previewHash: waiting!.previewHash });
    expect(done.status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe(content);
    // A new large step in the migrated database goes apart.
    await executor.propose({ steps: [{ id: 'new', action: 'writeFile', args: { path: path.join(workspace, 'n.txt'), content } }] }, PERSON);
    expect(rowOf(dataDir, 'new').row.body_apart).toBe(1);
    expect((await executor.verifyAudit()).ok).toBe(true);
  });

  it('keeps large base64 content as the blob of its bytes, and gives back the very text', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const bytes = Buffer.alloc(BODY_APART_CHARS * 2);
    for (let index = 0; index < bytes.length; index++) bytes[index] = (index * 7919) & 0xff;
    const content = bytes.toString('base64');
    const target = path.join(workspace, 'blob.bin');
    const [step] = await executor.propose(
      { steps: [{ id: 'bin', action: 'writeFile', args: { path: target, content, encoding: 'base64' } }] },
      PERSON,
    );
    expect(rowOf(dataDir, 'bin').contentBlob).toBe(sha256Hex(bytes));
    executor.close();
    // The CLI's own reader (no host running) reads it from the blob too.
    const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', 'bin']);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.json<{ step: { args: { content: string } } }>().step.args.content).toBe(content);
    // A fresh process reads the content from the blob, not from the cache of the one that stored it.
    const reopened = closeAfter(Executor.open(dataDir));
    const read = reopened.getStep('bin');
    expect(read.step.args).toMatchObject({ content, encoding: 'base64' });
    expect(read.stepHash).toBe(step!.stepHash);
    expect((await reopened.approve('bin', PERSON, { previewHash: step!.previewHash })).status).toBe('executed');
    expect(fs.readFileSync(target).equals(bytes)).toBe(true);
  });

  it('reads, decides and runs a large step whose whole body a database before content blobs holds in step_bodies', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'big.txt');
    const content = largeText('kept');
    const first = Executor.open(dataDir);
    const [waiting] = await first.propose({ steps: [{ id: 'kept', action: 'writeFile', args: { path: target, content } }] }, PERSON);
    first.close();
    // As the code before content blobs stored it: the whole canonical step in step_bodies, no content_blob column, no blob.
    const whole = wholeStepJson(dataDir, 'kept');
    fs.rmSync(blobFile(dataDir, rowOf(dataDir, 'kept').contentBlob!));
    const db = new Database(path.join(dataDir, 'executor.db'));
    db.prepare('UPDATE step_bodies SET step_json = ? WHERE step_id = ?').run(whole, 'kept');
    // Later migrations are undone too (the skills' errors in a row), so each runs again from there.
    db.exec(
      'ALTER TABLE step_bodies DROP COLUMN content_blob; ALTER TABLE skills DROP COLUMN errors_in_row; DROP TABLE plans_being_stored',
    );
    db.pragma(`user_version = ${MIGRATIONS.findIndex((sql) => sql.includes('ADD COLUMN content_blob'))}`);
    db.close();

    const executor = closeAfter(Executor.open(dataDir));
    expect(rowOf(dataDir, 'kept')).toMatchObject({ body: whole, contentBlob: null });
    const read = executor.getStep('kept');
    expect(read.step.args).toMatchObject({ content });
    expect(read.stepHash).toBe(waiting!.stepHash);
    expect((await executor.approve('kept', PERSON, { previewHash: waiting!.previewHash })).status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe(content);
    expect((await executor.verifyAudit()).ok).toBe(true);
  });

  it('reads a large step whose body the database lost as content lost, not a crash, and lists the others', async () => {
    const { dataDir, workspace } = tempSetup();
    const first = Executor.open(dataDir);
    await first.propose(
      { steps: [{ id: 'lost', action: 'writeFile', args: { path: path.join(workspace, 'b.txt'), content: largeText('x') } }] },
      PERSON,
    );
    first.close();
    const db = new Database(path.join(dataDir, 'executor.db'));
    db.prepare('DELETE FROM step_bodies WHERE step_id = ?').run('lost');
    db.close();
    // A fresh process: the parsed-step cache of the one that proposed it does not count.
    const executor = closeAfter(Executor.open(dataDir));
    const lost = executor.getStep('lost');
    expect(lost.contentLost).toEqual({ blob: null, why: 'missing' });
    expect(lost.step.args).toMatchObject({ path: path.join(workspace, 'b.txt'), content: '' });
    expect(executor.listSteps().map((record) => record.step.id)).toEqual(['lost']);
    await expect(executor.approve('lost', PERSON)).rejects.toMatchObject({ code: 'STEP_CONTENT_LOST' });
    expect((await executor.reject('lost', PERSON, 'its body is gone')).status).toBe('rejected');
  });

  it("still stops all agents and expires the other waiting steps when a waiting step's content blob is gone", async () => {
    const { dataDir, workspace } = tempSetup();
    const first = Executor.open(dataDir);
    await first.propose(
      { steps: [{ id: 'gone', action: 'writeFile', args: { path: path.join(workspace, 'b.txt'), content: largeText('g') } }] },
      PERSON,
    );
    await first.propose(
      {
        consentExpirySeconds: 1,
        steps: [{ id: 'soon', action: 'writeFile', args: { path: path.join(workspace, 's.txt'), content: 's\n' } }],
      },
      PERSON,
    );
    first.close();
    // The database was copied without its blobs folder (or the blob was lost): that one step's content is lost (content-lost.test.ts).
    fs.rmSync(blobFile(dataDir, rowOf(dataDir, 'gone').contentBlob!));
    const executor = closeAfter(Executor.open(dataDir));
    // The stop switch does not need any step's content.
    expect((await executor.pause(PERSON, 'checking')).paused).toBe(true);
    expect(executor.resume(PERSON).paused).toBe(false);
    // Every other waiting step's clock still runs out.
    await expect.poll(() => executor.getStep('soon').status, { timeout: 10_000 }).toBe('expired');
    expect(executor.getStep('gone').contentLost).toMatchObject({ why: 'missing' });
  });
});
