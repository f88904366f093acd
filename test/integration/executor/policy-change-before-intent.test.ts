import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { Executor } from '../../../src/executor/executor.js';
import { openExecutor } from '../../helpers/open-executor.js';

/*
 * An approved step is weighed again before it runs (approvalOutgrown), then made ready, backed up, and
 * marked running once the requests that came meanwhile are answered (whenClearOfOthers): requests go
 * first. A request among them may change the policy (a root removed, a secret pattern added): the step
 * must then not apply on the verdict of the policy before it. The request is made exactly where the step
 * yields to requests after its temporary file was made (the write's prepareAhead): the executor, its
 * database, policy.json and the workspace are real.
 */

const person = actorFor('cli');

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs `change` as a request heard while the step waits for requests after its temporary file exists. */
function changePolicyWhileStepYields(
  executor: Executor,
  workspace: string,
  target: string,
  change: () => void,
): { changed: () => boolean } {
  let changed = false;
  const original = executor.requests.whenClearOfOthers.bind(executor.requests);
  vi.spyOn(executor.requests, 'whenClearOfOthers').mockImplementation(() => {
    const temporary = fs.readdirSync(workspace).some((name) => name !== path.basename(target) && name.includes(path.basename(target)));
    if (temporary && !changed) {
      changed = true;
      change();
    }
    return original();
  });
  return { changed: () => changed };
}

async function approvedWrite(executor: Executor, target: string, id: string): Promise<void> {
  await executor.propose({ steps: [{ id, action: 'writeFile', args: { path: target, content: 'landed\n' } }] }, person);
  await expect.poll(() => executor.getStep(id).status, { timeout: 30_000 }).toBe('awaiting_consent');
}

describe('a policy change heard while an approved step yields to requests before it runs', () => {
  it('the workspace root removed: the write does not land', async () => {
    const { executor, workspace, base } = openExecutor({ autoApprove: 'none' });
    const target = path.join(workspace, 'w.txt');
    await approvedWrite(executor, target, 'w');
    const elsewhere = path.join(base, 'elsewhere');
    fs.mkdirSync(elsewhere);
    const seam = changePolicyWhileStepYields(executor, workspace, target, () => {
      executor.setPolicy({ ...executor.getPolicy(), workspaceRoots: [elsewhere] }, person);
    });
    const answer = await executor.approve('w', person).catch((error: unknown) => error);
    expect(seam.changed()).toBe(true);
    expect(fs.existsSync(target)).toBe(false);
    expect(fs.readdirSync(workspace)).toEqual([]);
    // Denied now (outside every root): it fails before any effect, saying the policy denies it.
    const step = executor.getStep('w');
    expect(step.status).toBe('failed');
    expect(step.error).toMatchObject({ code: 'POLICY_DENIED', details: { beforeAnyEffect: true } });
    expect(answer).toMatchObject({ status: 'failed' });
    expect((await executor.verifyAudit()).ok).toBe(true);
  }, 60_000);

  it('a secret pattern added for the path: the write goes back to the person, not applied', async () => {
    const { executor, workspace } = openExecutor({ autoApprove: 'none' });
    const target = path.join(workspace, 'w.txt');
    await approvedWrite(executor, target, 'w');
    const seam = changePolicyWhileStepYields(executor, workspace, target, () => {
      const policy = executor.getPolicy();
      executor.setPolicy({ ...policy, secretGlobs: [...policy.secretGlobs, '**/w.txt'] }, person);
    });
    await executor.approve('w', person).catch(() => undefined);
    expect(seam.changed()).toBe(true);
    expect(fs.existsSync(target)).toBe(false);
    expect(executor.getStep('w').status).toBe('awaiting_consent');
  }, 60_000);

  it("another plan's steps applied meanwhile (the run pool runs plans side by side) make the path part of a git directory: back to the person", async () => {
    const { executor, workspace } = openExecutor({ autoApprove: 'none' });
    const target = path.join(workspace, 'r', 'notes.txt');
    fs.mkdirSync(path.dirname(target));
    await approvedWrite(executor, target, 'a');
    expect(executor.getStep('a').evaluation?.risk).toBe('MEDIUM');
    const gitFiles = ['HEAD', 'objects/x', 'refs/x'];
    await executor.propose(
      {
        steps: gitFiles.map((name, index) => ({
          id: `b${index}`,
          action: 'writeFile',
          args: { path: path.join(workspace, 'r', name), content: 'x\n' },
        })),
      },
      person,
    );
    await expect
      .poll(() => gitFiles.map((_, index) => executor.getStep(`b${index}`).status), { timeout: 30_000 })
      .toEqual(gitFiles.map(() => 'awaiting_consent'));
    let otherPlanRan = false;
    const original = executor.requests.whenClearOfOthers.bind(executor.requests);
    vi.spyOn(executor.requests, 'whenClearOfOthers').mockImplementation(() => {
      const temporary =
        fs.existsSync(path.dirname(target)) && fs.readdirSync(path.dirname(target)).some((name) => name.includes('notes.txt'));
      if (!temporary || otherPlanRan) return original();
      otherPlanRan = true;
      // The other plan runs forward while this step yields: its steps apply, as in the run pool.
      return (async () => {
        for (const index of [2, 1]) await executor.approve(`b${index}`, person, { execute: false });
        await executor.approve('b0', person);
        await original();
      })();
    });
    await executor.approve('a', person).catch(() => undefined);
    expect(otherPlanRan).toBe(true);
    expect(gitFiles.map((_, index) => executor.getStep(`b${index}`).status)).toEqual(['executed', 'executed', 'executed']);
    // A fresh weighing asks (it writes inside a git directory now): the step waits for the person, nothing written.
    expect(fs.existsSync(target)).toBe(false);
    expect(executor.getStep('a').status).toBe('awaiting_consent');
  }, 60_000);
});
