import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyDataDir } from '../../../src/audit/verify/audit-verifier.js';
import { FileKeyStore } from '../../../src/audit/keys/key-store.js';
import { actorFor } from '../../../src/domain/actor.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { Executor, type ExecutorOptions } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const PERSON = actorFor('cli');
const opened: Executor[] = [];
afterEach(() => {
  for (const executor of opened.splice(0)) executor.close();
});

function open(policy: Record<string, unknown> = {}, options: ExecutorOptions = {}) {
  const setup = tempSetup({ lightSandbox: { warmWorkers: 0 }, ...policy });
  const executor = Executor.open(setup.dataDir, options);
  opened.push(executor);
  return { executor, ...setup };
}

/** Code whose dry run takes `ms` of real time and reports when it ran, by the host's clock. */
function slowCode(id: string, ms: number) {
  return {
    id,
    action: 'runCode',
    args: { code: `const from = Date.now(); while (Date.now() - from < ${ms}) {} return [from, Date.now()];`, timeoutMs: 5000 },
  };
}

function writeStep(id: string, file: string, content = 'x\n') {
  return { id, action: 'writeFile', args: { path: file, content } };
}

/** Resolves with the step once an event shows it in one of `statuses` (listening starts now). */
function stepReaches(executor: Executor, stepId: string, statuses: string[]): Promise<StepRecord> {
  return new Promise((resolve) => {
    const listener = (record: StepRecord) => {
      if (record.step.id !== stepId || !statuses.includes(record.status)) return;
      executor.off('step', listener);
      resolve(record);
    };
    executor.on('step', listener);
  });
}

function ranDuring(record: StepRecord): [number, number] {
  if (record.preview?.kind !== 'codeRun' || !record.preview.result.ok) throw new Error(`no run in ${JSON.stringify(record.preview)}`);
  return record.preview.result.value as [number, number];
}

describe('proposals are acknowledged at once and prepared in the background', () => {
  it('answers with evaluated steps before any preview exists, then prepares them', async () => {
    const { executor, workspace } = open();
    const target = path.join(workspace, 'a.txt');
    const prepared = stepReaches(executor, 'w', ['awaiting_consent']);
    const acknowledged = await executor.submitAndSchedule({ planId: 'p', steps: [writeStep('w', target)] }, PERSON);
    expect(acknowledged.map((record) => record.status)).toEqual(['evaluated']);
    expect(acknowledged[0]!.preview).toBeNull();
    expect((await prepared).preview?.kind).toBe('fileChanges');
    expect(fs.existsSync(target)).toBe(false);
  });

  it("keeps one plan's steps in order, one at a time, while another plan prepares beside them", async () => {
    const { executor } = open({ preparation: { concurrency: 2 } });
    const done = stepReaches(executor, 'a3', ['awaiting_consent']);
    const otherDone = stepReaches(executor, 'b1', ['awaiting_consent']);
    await executor.submitAndSchedule({ planId: 'plan-a', steps: [slowCode('a1', 400), slowCode('a2', 400), slowCode('a3', 400)] }, PERSON);
    await executor.submitAndSchedule({ planId: 'plan-b', steps: [slowCode('b1', 400)] }, PERSON);
    await Promise.all([done, otherDone]);
    const [a1, a2, a3] = executor.planSteps('plan-a').map(ranDuring);
    const [b1] = executor.planSteps('plan-b').map(ranDuring);
    // Plan a: in order, never overlapping.
    expect(a1![1]).toBeLessThanOrEqual(a2![0]);
    expect(a2![1]).toBeLessThanOrEqual(a3![0]);
    // Plan b did not wait for all of plan a: it ran before a's last step started.
    expect(b1![0]).toBeLessThan(a3![0]);
  });

  it('prepares one plan at a time when the policy says concurrency 1', async () => {
    const { executor } = open({ preparation: { concurrency: 1 } });
    const done = Promise.all([stepReaches(executor, 'a1', ['awaiting_consent']), stepReaches(executor, 'b1', ['awaiting_consent'])]);
    await executor.submitAndSchedule({ planId: 'plan-a', steps: [slowCode('a1', 300)] }, PERSON);
    await executor.submitAndSchedule({ planId: 'plan-b', steps: [slowCode('b1', 300)] }, PERSON);
    await done;
    const [a] = executor.planSteps('plan-a').map(ranDuring);
    const [b] = executor.planSteps('plan-b').map(ranDuring);
    expect(a![1] <= b![0] || b![1] <= a![0]).toBe(true);
  });

  it('refuses a policy with a preparation concurrency below 1', () => {
    const { executor } = open();
    expect(() => executor.setPolicy({ ...executor.getPolicy(), preparation: { concurrency: 0 } }, PERSON)).toThrow(
      expect.objectContaining({ code: 'POLICY_INVALID' }),
    );
    expect(executor.getPolicy().preparation.concurrency).toBe(2);
  });

  it('runs an approved earlier step at once while a later step of the same plan still prepares', async () => {
    const { executor, workspace } = open();
    const target = path.join(workspace, 'first.txt');
    const firstReady = stepReaches(executor, 'first', ['awaiting_consent']);
    const laterReady = stepReaches(executor, 'later', ['awaiting_consent']);
    await executor.submitAndSchedule({ planId: 'p', steps: [writeStep('first', target), slowCode('later', 1500)] }, PERSON);
    const shown = await firstReady;
    expect(executor.getStep('later').status).toBe('evaluated');
    const approved = await executor.approve('first', PERSON, { previewHash: shown.previewHash });
    expect(approved.status).toBe('executed');
    // The later step's dry run was still under way: the approval did not wait for it.
    expect(executor.getStep('later').status).toBe('evaluated');
    expect(fs.readFileSync(target, 'utf8')).toBe('x\n');
    expect((await laterReady).status).toBe('awaiting_consent');
  });

  it('says why a step still preparing cannot be approved yet', async () => {
    const { executor } = open();
    const ready = stepReaches(executor, 'slow', ['awaiting_consent']);
    await executor.submitAndSchedule({ planId: 'p', steps: [slowCode('slow', 600)] }, PERSON);
    await expect(executor.approve('slow', PERSON)).rejects.toMatchObject({
      code: 'ILLEGAL_TRANSITION',
      message: expect.stringContaining('still preparing its preview'),
    });
    await ready;
  });

  it('runs what the policy approves once its plan is prepared, in order, without anyone asking', async () => {
    const { executor, workspace } = open({ autoApprove: 'MEDIUM' });
    const last = stepReaches(executor, 's3', ['executed', 'failed']);
    const files = ['1.txt', '2.txt', '3.txt'].map((name) => path.join(workspace, name));
    const order: string[] = [];
    executor.on('step', (record) => {
      if (record.status === 'executed') order.push(record.step.id);
    });
    await executor.submitAndSchedule(
      { planId: 'p', steps: files.map((file, index) => writeStep(`s${index + 1}`, file, `${index}\n`)) },
      PERSON,
    );
    expect((await last).status).toBe('executed');
    expect(order).toEqual(['s1', 's2', 's3']);
    await executor.whenPreparationsIdle();
  });

  it('closes at once while a preview is being prepared, and leaves the step evaluated with an intact log', async () => {
    const { executor, dataDir } = open();
    await executor.submitAndSchedule({ planId: 'p', steps: [slowCode('slow', 3000)] }, PERSON);
    // The dry run has started (its worker is running the loop) when the executor closes.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const startedAt = Date.now();
    executor.close();
    expect(Date.now() - startedAt).toBeLessThan(2000);
    await executor.whenPreparationsIdle();
    const again = Executor.open(dataDir);
    opened.push(again);
    expect(['evaluated', 'awaiting_consent']).toContain(again.getStep('slow').status);
    again.close();
    expect((await verifyDataDir(dataDir, { keyStore: new FileKeyStore(dataDir), workers: 1 })).ok).toBe(true);
  });

  it('reverting a step waits for a run of its own plan, never for another plan', async () => {
    const { executor, workspace } = open({ autoApprove: 'MEDIUM' });
    const done = stepReaches(executor, 'w', ['executed']);
    await executor.submitAndSchedule({ planId: 'p', steps: [writeStep('w', path.join(workspace, 'r.txt'))] }, PERSON);
    await done;
    // Another plan's long preparation is under way; the revert does not wait for it.
    const otherReady = stepReaches(executor, 'other', ['awaiting_consent', 'approved']);
    await executor.submitAndSchedule({ planId: 'q', steps: [slowCode('other', 1500)] }, PERSON);
    const reverted = await executor.revertStep('w', PERSON);
    expect(reverted.status).toBe('reverted');
    expect(executor.getStep('other').status).toBe('evaluated');
    expect(fs.existsSync(path.join(workspace, 'r.txt'))).toBe(false);
    await otherReady;
  });

  it('starts no preview while a request is under way, and prepares all 50 queued ones once it is answered', async () => {
    // Patience and deferral longer than this test can take on a busy machine: only the answer lets the previews go.
    const { executor, workspace, dataDir } = open({}, { requestGate: { patienceMs: 10 * 60_000, maxDeferMs: 10 * 60_000 } });
    const steps = Array.from({ length: 50 }, (_, index) => `w${index}`);
    const moved: string[] = [];
    executor.on('step', (record) => {
      if (record.status !== 'evaluated') moved.push(record.step.id);
    });
    const allReady = Promise.all(steps.map((id) => stepReaches(executor, id, ['awaiting_consent'])));
    // A request arrives (as the IPC server counts one) and is still being handled...
    const answered = executor.requests.begin();
    await Promise.all(
      steps.map((id) =>
        executor.submitAndSchedule({ planId: `plan-${id}`, steps: [writeStep(id, path.join(workspace, `${id}.txt`))] }, PERSON),
      ),
    );
    // ...while the host goes on with other work: another proposal's commit, a file read, many turns of the loop.
    await executor.submit({ planId: 'other', steps: [writeStep('other', path.join(workspace, 'other.txt'))] }, PERSON);
    await fs.promises.readFile(path.join(dataDir, 'policy.json'));
    for (let turn = 0; turn < 100; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
    expect(moved).toEqual([]);
    expect(executor.listSteps({ status: ['evaluated'], limit: 100 })).toHaveLength(51);
    answered();
    const ready = await allReady;
    expect(ready.map((record) => record.preview?.kind)).toEqual(steps.map(() => 'fileChanges'));
    await executor.whenPreparationsIdle();
  });

  it('a request under way past its patience (a container run, a verify) does not hold previews back', async () => {
    const { executor, workspace } = open({}, { requestGate: { patienceMs: 50, maxDeferMs: 10 * 60_000 } });
    // The request never ends within this test: previews go on once it is older than its patience.
    executor.requests.begin();
    const ready = stepReaches(executor, 'w', ['awaiting_consent']);
    await executor.submitAndSchedule({ planId: 'p', steps: [writeStep('w', path.join(workspace, 'w.txt'))] }, PERSON);
    expect((await ready).preview?.kind).toBe('fileChanges');
  });
});
