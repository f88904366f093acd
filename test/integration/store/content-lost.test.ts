import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { sha256Hex } from '../../../src/domain/canonical-json.js';
import { Executor } from '../../../src/executor/executor.js';
import { stepOutcomeText } from '../../../src/mcp/outcome-text.js';
import { BODY_APART_CHARS } from '../../../src/store/step-bodies.js';
import { runCli } from '../../helpers/run-cli.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A large write keeps its content once, as a backup blob (step-bodies.ts). When that blob is lost (a database copied
 * without blobs/, a blob deleted, cut short or changed), the step is "content lost": listed and shown with those words
 * on every surface, never approved or run, still rejected, cancelled, expired and reverted.
 */

const PERSON = actorFor('window');
const AGENT = { ...actorFor('mcp', 'agent-a 1.0'), agent: 'agent-AAAAAAAAAAAAAAAAAAAAAA' };

function largeText(tag: string): string {
  const lines: string[] = [];
  for (let index = 0; lines.join('\n').length < BODY_APART_CHARS * 2; index++) lines.push(`${tag} line ${index} ${'x'.repeat(index % 40)}`);
  return `${lines.join('\n')}\n`;
}

const blobFile = (dataDir: string, hash: string) => path.join(dataDir, 'blobs', hash.slice(0, 2), hash.slice(2));

function contentBlobOf(dataDir: string, stepId: string): string {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return (db.prepare('SELECT content_blob FROM step_bodies WHERE step_id = ?').get(stepId) as { content_blob: string }).content_blob;
  } finally {
    db.close();
  }
}

/** The ways a blob is lost, each as it leaves the file (or no file). */
const DAMAGE = {
  deleted: { why: 'missing', damage: (file: string) => fs.rmSync(file) },
  'blobs folder left behind': {
    why: 'missing',
    damage: (file: string) => fs.rmSync(path.dirname(path.dirname(file)), { recursive: true }),
  },
  truncated: { why: 'corrupt', damage: (file: string) => fs.truncateSync(file, 100) },
  'changed, same size': {
    why: 'corrupt',
    damage: (file: string) => {
      const bytes = fs.readFileSync(file);
      bytes[bytes.length - 2] = bytes[bytes.length - 2]! ^ 1;
      fs.writeFileSync(file, bytes);
    },
  },
} as const;

async function proposeThenLose(
  damage: (file: string) => void,
  steps: { id: string; content: string }[] = [{ id: 'big', content: largeText('big') }],
) {
  const { dataDir, workspace } = tempSetup();
  const first = Executor.open(dataDir);
  const proposed = await first.propose(
    {
      steps: [
        ...steps.map((step) => ({
          id: step.id,
          action: 'writeFile',
          args: { path: path.join(workspace, `${step.id}.txt`), content: step.content },
        })),
        { id: 'small', action: 'writeFile', args: { path: path.join(workspace, 'small.txt'), content: 'small\n' } },
      ],
    },
    PERSON,
  );
  first.close();
  damage(blobFile(dataDir, contentBlobOf(dataDir, steps[0]!.id)));
  return { dataDir, workspace, proposed };
}

describe('a large write whose content blob is lost', () => {
  for (const [name, { why, damage }] of Object.entries(DAMAGE)) {
    it(`is listed and shown as content lost (${name}), refused approval with STEP_CONTENT_LOST, and can be rejected`, async () => {
      const { dataDir, workspace, proposed } = await proposeThenLose(damage);
      const executor = closeAfter(Executor.open(dataDir));
      // Listing never fails for one bad step: the others read as ever.
      const listed = executor.listSteps();
      expect(listed.map((record) => record.step.id).sort()).toEqual(['big', 'small']);
      const big = executor.getStep('big');
      expect(big.contentLost).toEqual({ blob: sha256Hex(Buffer.from(largeText('big'))), why });
      // Never a guess at the content: empty, and the record says why.
      expect(big.step.args).toMatchObject({ content: '' });
      expect(big.status).toBe('awaiting_consent');
      expect(executor.getStep('small').contentLost).toBeUndefined();
      const summaries = executor.listStepSummariesFor({}, PERSON).items;
      // The window's list sees a missing blob by a stat; a damaged one once a read found it (the getStep above).
      expect(summaries.find((summary) => summary.id === 'big')!.contentLost).toEqual({ blob: big.contentLost!.blob, why });
      expect(summaries.find((summary) => summary.id === 'small')!.contentLost).toBeUndefined();
      // The MCP words.
      expect(stepOutcomeText(big)).toMatch(
        /^PENDING: waiting for the user[^\n]*\nCONTENT LOST: The backup blob [0-9a-f]{12}… that held its content /,
      );

      await expect(executor.approve('big', PERSON, { previewHash: proposed[0]!.previewHash })).rejects.toMatchObject({
        code: 'STEP_CONTENT_LOST',
        details: { stepId: 'big', why },
      });
      await expect(executor.editStep('big', PERSON, { content: 'new\n' })).rejects.toMatchObject({ code: 'STEP_CONTENT_LOST' });
      expect(fs.existsSync(path.join(workspace, 'big.txt'))).toBe(false);
      expect((await executor.reject('big', PERSON, 'its content is gone')).status).toBe('rejected');
      expect(executor.getStep('big').contentLost).toMatchObject({ why });
      // The log itself is whole; verify says which step lost its content.
      const report = await executor.verifyAudit();
      expect(report.ok).toBe(true);
      if (why === 'missing') expect(report.warnings.join('\n')).toMatch(/big/);
    });
  }

  it('is said in words by the CLI, `steps list` and `steps show`, with no host running', async () => {
    const { dataDir } = await proposeThenLose(DAMAGE.deleted.damage);
    const list = runCli(['--data-dir', dataDir, 'steps', 'list']);
    expect(list.status, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/big\s+Waiting for you.*its content is lost.*CONTENT LOST \(blob missing\)/);
    expect(list.stdout).toMatch(/small\s+Waiting for you/);
    const show = runCli(['--data-dir', dataDir, 'steps', 'show', 'big']);
    expect(show.status, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/Status {3}Waiting for you — content lost/);
    expect(show.stdout).toMatch(/Content {2}LOST: The backup blob [0-9a-f]{12}… that held its content is missing/);
    const json = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
    expect(json.status, json.stderr).toBe(0);
    const records = json.json<{ step: { id: string }; contentLost?: { why: string } }[]>();
    expect(records.find((record) => record.step.id === 'big')!.contentLost).toMatchObject({ why: 'missing' });
  });

  it('expires, is cancelled by its agent, and is held by the stop switch like any waiting step', async () => {
    const { dataDir, workspace } = tempSetup();
    const first = Executor.open(dataDir);
    await first.propose(
      {
        consentExpirySeconds: 1,
        steps: [{ id: 'soon', action: 'writeFile', args: { path: path.join(workspace, 's.txt'), content: largeText('s') } }],
      },
      PERSON,
    );
    const [theirs] = await first.propose(
      { steps: [{ id: 'theirs', action: 'writeFile', args: { path: 't.txt', content: largeText('t') } }] },
      AGENT,
    );
    first.close();
    fs.rmSync(blobFile(dataDir, contentBlobOf(dataDir, 'soon')));
    fs.rmSync(blobFile(dataDir, contentBlobOf(dataDir, theirs!.step.id)));
    const executor = closeAfter(Executor.open(dataDir));
    expect((await executor.pause(PERSON, 'checking')).paused).toBe(true);
    expect(executor.resume(PERSON).paused).toBe(false);
    expect(executor.getStep(theirs!.step.id).contentLost).toMatchObject({ why: 'missing' });
    expect((await executor.cancel(theirs!.step.id, AGENT)).status).toBe('rejected');
    await expect.poll(() => executor.getStep('soon').status, { timeout: 10_000 }).toBe('expired');
    expect(executor.getStep('soon').contentLost).toMatchObject({ why: 'missing' });
  });

  it('approved, then damaged under a running host: it fails before anything is written, with STEP_CONTENT_LOST', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const content = largeText('late');
    const target = path.join(workspace, 'late.txt');
    fs.writeFileSync(target, 'before\n');
    const [step] = await executor.propose({ steps: [{ id: 'late', action: 'writeFile', args: { path: target, content } }] }, PERSON);
    expect((await executor.approve('late', PERSON, { previewHash: step!.previewHash, execute: false })).status).toBe('approved');
    // The host still holds the parsed step (with its content): the run checks the blob by its hash all the same.
    const file = blobFile(dataDir, contentBlobOf(dataDir, 'late'));
    const bytes = fs.readFileSync(file);
    bytes[10] = bytes[10]! ^ 1;
    fs.writeFileSync(file, bytes);
    const ran = await executor.executeStep('late', PERSON);
    expect(ran.status).toBe('failed');
    expect(ran.error).toMatchObject({ code: 'STEP_CONTENT_LOST', details: { why: 'corrupt', beforeAnyEffect: true } });
    expect(fs.readFileSync(target, 'utf8')).toBe('before\n');
    expect(executor.getStep('late').contentLost).toMatchObject({ why: 'corrupt' });
  });

  it('executed, then lost: still listed, and reverted from the backup of what it replaced', async () => {
    const { dataDir, workspace } = tempSetup();
    const first = Executor.open(dataDir);
    const content = largeText('done');
    const target = path.join(workspace, 'done.txt');
    fs.writeFileSync(target, 'before\n');
    const [step] = await first.propose({ steps: [{ id: 'done', action: 'writeFile', args: { path: target, content } }] }, PERSON);
    expect((await first.approve('done', PERSON, { previewHash: step!.previewHash })).status).toBe('executed');
    first.close();
    fs.rmSync(blobFile(dataDir, contentBlobOf(dataDir, 'done')));
    const executor = closeAfter(Executor.open(dataDir));
    expect(executor.listSteps().map((record) => [record.step.id, record.status, record.contentLost?.why])).toEqual([
      ['done', 'executed', 'missing'],
    ]);
    // The file still holds what the step wrote: the revert checks it by hash (the row keeps it), and puts back the old file.
    expect((await executor.revertStep('done', PERSON)).status).toBe('reverted');
    expect(fs.readFileSync(target, 'utf8')).toBe('before\n');
    expect((await executor.verifyAudit()).ok).toBe(true);
  });

  it('executed, edited by hand, then damaged: the revert names the conflict and says the change since cannot be shown', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const target = path.join(workspace, 'edited.txt');
    const [step] = await executor.propose(
      { steps: [{ id: 'edited', action: 'writeFile', args: { path: target, content: largeText('e') } }] },
      PERSON,
    );
    expect((await executor.approve('edited', PERSON, { previewHash: step!.previewHash })).status).toBe('executed');
    fs.appendFileSync(target, 'by hand\n');
    const file = blobFile(dataDir, contentBlobOf(dataDir, 'edited'));
    const bytes = fs.readFileSync(file);
    bytes[0] = bytes[0]! ^ 1;
    fs.writeFileSync(file, bytes);
    const [entry] = executor.previewRevert('edited').files;
    expect(entry).toMatchObject({
      state: 'conflict',
      changedSince: null,
      changedSinceOmittedReason: expect.stringContaining('no longer kept'),
    });
    await expect(executor.revertStep('edited', PERSON)).rejects.toMatchObject({ code: 'REVERT_CONFLICT' });
    expect(fs.readFileSync(target, 'utf8')).toBe(`${largeText('e')}by hand\n`);
  });

  it('reads whole again once its blob is put back: a lost step is never remembered as lost', async () => {
    const { dataDir } = tempSetup();
    const first = Executor.open(dataDir);
    await first.propose({ steps: [{ id: 'back', action: 'writeFile', args: { path: 'back.txt', content: largeText('back') } }] }, PERSON);
    first.close();
    const file = blobFile(dataDir, contentBlobOf(dataDir, 'back'));
    const kept = fs.readFileSync(file);
    fs.rmSync(file);
    const executor = closeAfter(Executor.open(dataDir));
    expect(executor.getStep('back').contentLost).toMatchObject({ why: 'missing' });
    fs.writeFileSync(file, kept, { mode: 0o600 });
    const read = executor.getStep('back');
    expect(read.contentLost).toBeUndefined();
    expect(read.step.args).toMatchObject({ content: largeText('back') });
    expect(executor.listStepSummariesFor({}, PERSON).items[0]!.contentLost).toBeUndefined();
  });
});
