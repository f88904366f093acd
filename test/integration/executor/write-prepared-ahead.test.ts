import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A write's new content goes to its temporary file beside the target while its backup and intent record are written
 * (ReadyRun.prepareAhead): the target is touched only by the rename after both. What that leaves when the step does
 * not go on (taken back, or the host stopped before its intent record) is no temporary file at all.
 */

const person = actorFor('cli');
const temporaries = (dir: string) => fs.readdirSync(dir).filter((name) => name.endsWith('.tmp'));

describe('a write prepared ahead of its intent record', () => {
  it('runs to the same file as before, and leaves no temporary file beside it', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    const executor = closeAfter(Executor.open(dataDir));
    const target = path.join(workspace, 'notes.txt');
    fs.writeFileSync(target, 'old\n'.repeat(50_000));
    const content = 'new\n'.repeat(60_000);
    const [record] = await executor.propose({ steps: [{ id: 'w', action: 'writeFile', args: { path: target, content } }] }, person);
    expect(record!.status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe(content);
    expect(temporaries(workspace)).toEqual([]);
    expect((await executor.revertStep('w', person)).status).toBe('reverted');
    expect(fs.readFileSync(target, 'utf8')).toBe('old\n'.repeat(50_000));
  });

  it('a host stopped before the intent record left its temporary file: the next open removes it, and the step still runs', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'held.txt');
    fs.writeFileSync(target, 'before\n');
    const content = 'after\n'.repeat(1000);
    {
      const executor = Executor.open(dataDir);
      // Approved behind an earlier step still undecided: it waits, approved, and has not run.
      const [, waiting] = await executor.propose(
        {
          planId: 'plan',
          steps: [
            { id: 'first', action: 'writeFile', args: { path: path.join(workspace, 'first.txt'), content: 'first\n' } },
            { id: 'held', action: 'writeFile', args: { path: target, content } },
          ],
        },
        person,
      );
      expect((await executor.approve('held', person, { previewHash: waiting!.previewHash })).status).toBe('approved');
      executor.close();
    }
    // As a host killed between the temporary file and the intent record leaves it (atomic-write.ts names it so).
    const left = path.join(workspace, '.held.txt.executor-0123456789ab.tmp');
    fs.writeFileSync(left, content);
    const executor = closeAfter(Executor.open(dataDir));
    expect(fs.existsSync(left)).toBe(false);
    expect(fs.readFileSync(target, 'utf8')).toBe('before\n');
    expect(executor.getStep('held').status).toBe('approved');
    const first = executor.getStep('first');
    expect((await executor.approve('first', person, { previewHash: first.previewHash })).status).toBe('executed');
    await expect.poll(() => executor.getStep('held').status).toBe('executed');
    expect(fs.readFileSync(target, 'utf8')).toBe(content);
    expect(temporaries(workspace)).toEqual([]);
  });
  it("the next open removes only the temporary files a write makes (12 hex digits, a regular file): a person's own look-alike file and a folder so named stay, and the open goes on", async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'kept.txt');
    fs.writeFileSync(target, 'before\n');
    {
      const executor = Executor.open(dataDir);
      const [, waiting] = await executor.propose(
        {
          planId: 'plan',
          steps: [
            { id: 'first', action: 'writeFile', args: { path: path.join(workspace, 'first.txt'), content: 'first\n' } },
            { id: 'kept', action: 'writeFile', args: { path: target, content: 'after\n' } },
          ],
        },
        person,
      );
      expect((await executor.approve('kept', person, { previewHash: waiting!.previewHash })).status).toBe('approved');
      executor.close();
    }
    // The person's own files, named near what a write's temporary file is named: none of them is one.
    const own = ['.kept.txt.executor-draft.tmp', '.kept.txt.executor-.tmp', '.kept.txt.executor-0123456789ab.old.tmp'];
    for (const name of own) fs.writeFileSync(path.join(workspace, name), 'mine\n');
    // A folder, and a link, named exactly as a temporary file would be: not a file this host wrote.
    const folder = path.join(workspace, '.kept.txt.executor-0123456789ab.tmp');
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'inside.txt'), 'mine\n');
    const left = path.join(workspace, '.kept.txt.executor-a1b2c3d4e5f6.tmp');
    fs.writeFileSync(left, 'after\n');
    const executor = closeAfter(Executor.open(dataDir));
    expect(fs.existsSync(left)).toBe(false);
    for (const name of own) expect(fs.readFileSync(path.join(workspace, name), 'utf8')).toBe('mine\n');
    expect(fs.readFileSync(path.join(folder, 'inside.txt'), 'utf8')).toBe('mine\n');
    expect(executor.getStep('kept').status).toBe('approved');
  });
  it('a host killed after a Cancel came while the temporary file was still being written: the next open removes that file too', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'withdrawn.txt');
    fs.writeFileSync(target, 'before\n');
    {
      const executor = Executor.open(dataDir);
      const [, waiting] = await executor.propose(
        {
          planId: 'plan',
          steps: [
            { id: 'first', action: 'writeFile', args: { path: path.join(workspace, 'first.txt'), content: 'first\n' } },
            { id: 'withdrawn', action: 'writeFile', args: { path: target, content: 'after\n' } },
          ],
        },
        person,
      );
      expect((await executor.approve('withdrawn', person, { previewHash: waiting!.previewHash })).status).toBe('approved');
      // The person's no commits at once; the run takes its temporary file back only once that file's write returns.
      expect((await executor.cancel('withdrawn', person)).status).toBe('rejected');
      executor.close();
    }
    // As a host killed in between leaves it.
    const left = path.join(workspace, '.withdrawn.txt.executor-00ff00ff00ff.tmp');
    fs.writeFileSync(left, 'after\n');
    const executor = closeAfter(Executor.open(dataDir));
    expect(fs.existsSync(left)).toBe(false);
    expect(fs.readFileSync(target, 'utf8')).toBe('before\n');
    expect(executor.getStep('withdrawn').status).toBe('rejected');
  });
});
