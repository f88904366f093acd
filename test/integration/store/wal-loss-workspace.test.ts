import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Issue 24 §4b: the database comes back behind what Executor wrote (its newest records lost) and the
 * head file's marks do not name a step that ran (they are cleared once a checkpoint holds a run, and a
 * copy of executor.db from before it brings the step back `approved`). At open, an approved file write
 * whose target already holds exactly its content ran: it becomes interrupted (RECORDS_LOST, saying it
 * was found done in the workspace) and is not written again; one whose target differs stays approved.
 */
const person = actorFor('cli');

describe('a lost tail the marks miss: the workspace is compared at open', () => {
  it('an approved write whose file already holds its content is not run again', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'none' });
    const done = path.join(workspace, 'done.txt');
    const other = path.join(workspace, 'other.txt');
    const first = Executor.open(dataDir, { log: () => undefined });
    const proposed = await first.propose(
      {
        steps: [
          { id: 'ran', action: 'writeFile', args: { path: done, content: 'written once\n' } },
          { id: 'later', action: 'writeFile', args: { path: other, content: 'not yet\n' } },
        ],
      },
      person,
    );
    for (const record of proposed) await first.approve(record.step.id, person, { previewHash: record.previewHash, execute: false });
    expect(first.getStep('ran').status).toBe('approved');
    first.close();
    // The copy a person might restore: both steps approved, nothing run.
    const copy = tempDir('db-copy-');
    fs.copyFileSync(path.join(dataDir, 'executor.db'), path.join(copy, 'executor.db'));

    const second = Executor.open(dataDir, { log: () => undefined });
    await second.advancePlan(proposed[0]!.step.planId, person);
    expect(second.getStep('ran').status).toBe('executed');
    expect(second.getStep('later').status).toBe('executed');
    second.close();
    // The second file is changed by hand afterwards: it no longer holds that step's content.
    fs.writeFileSync(other, 'edited by hand\n');
    const mtime = fs.statSync(done).mtimeMs;

    // The database goes back to the copy: the newest records are lost, and the marks were cleared at the clean close.
    for (const suffix of ['-wal', '-shm']) fs.rmSync(path.join(dataDir, `executor.db${suffix}`), { force: true });
    fs.copyFileSync(path.join(copy, 'executor.db'), path.join(dataDir, 'executor.db'));
    const third = closeAfter(Executor.open(dataDir, { log: () => undefined }));
    const ran = third.getStep('ran');
    expect(ran.status).toBe('interrupted');
    expect(ran.error).toMatchObject({ code: 'RECORDS_LOST' });
    expect(ran.error!.message).toMatch(/already holds exactly the content it writes/);
    expect(third.getStep('later').status).not.toBe('interrupted');
    expect(fs.statSync(done).mtimeMs).toBe(mtime);
    const lost = third.getAudit({ limit: 10_000 }).entries.filter((entry) => entry.action === 'audit.tail_lost');
    expect(lost).toHaveLength(1);
    expect(JSON.stringify(lost)).toContain('stepsFoundDoneInWorkspace');
  });
});
