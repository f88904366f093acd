import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { ExecutorError } from '../../../src/domain/errors.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const cli = actorFor('cli');
const person = actorFor('window');
const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };
const open: Executor[] = [];
const FIXTURE = path.resolve(import.meta.dirname, '../../fixtures/crash-during-propose.ts');

function start(policy: Record<string, unknown> = {}) {
  const setup = tempSetup(policy);
  const executor = Executor.open(setup.dataDir);
  open.push(executor);
  return { ...setup, executor };
}

function reopen(dataDir: string, options: { resumeUnfinished?: boolean } = {}): Executor {
  const executor = Executor.open(dataDir, options);
  open.push(executor);
  return executor;
}

afterEach(() => {
  while (open.length) open.pop()!.close();
});

async function errorOf(promise: Promise<unknown>): Promise<ExecutorError> {
  try {
    await promise;
  } catch (error) {
    return error as ExecutorError;
  }
  throw new Error('expected a rejection');
}

/** Lets wall-clock time pass with the event loop held, so no timer can act first (what approve and open must catch themselves). */
function holdEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Resolves with the first step event that matches. */
function nextStep(executor: Executor, matches: (record: StepRecord) => boolean): Promise<StepRecord> {
  return new Promise((resolve) => {
    const listener = (record: StepRecord) => {
      if (!matches(record)) return;
      executor.off('step', listener);
      resolve(record);
    };
    executor.on('step', listener);
  });
}

const write = (p: string, content: string, id?: string) => ({ ...(id ? { id } : {}), action: 'writeFile', args: { path: p, content } });

describe('a plan whose earlier step did not run', () => {
  it('sends a person-approved later step back to the person when the first step fails, naming it (the issue scenario)', async () => {
    const { executor, workspace } = start();
    const [first, second] = await executor.propose({ steps: [write('first.txt', '1'), write('second.txt', '2')] }, cli);
    // The person approves the second step first: it waits for the first.
    expect((await executor.approve(second!.step.id, person)).status).toBe('approved');
    // Then the first one cannot be written (its path became a directory) and fails.
    fs.mkdirSync(path.join(workspace, 'first.txt'));
    const ran = await executor.approve(first!.step.id, person);
    expect(ran.status).toBe('failed');

    const later = executor.getStep(second!.step.id);
    expect(later.status).toBe('awaiting_consent');
    expect(later.blockedBy).toMatchObject({ stepId: first!.step.id, status: 'failed' });
    expect(later.blockedBy!.reason).toContain(first!.step.id);
    const reconsent = executor
      .getAudit({ filters: { stepId: second!.step.id }, order: 'asc' })
      .entries.find((entry) => entry.action === 'step.reconsent');
    expect(JSON.stringify(reconsent)).toContain(`${first!.step.id} earlier in this plan failed`);
    expect(fs.existsSync(path.join(workspace, 'second.txt'))).toBe(false);

    // Approved again, knowing the first failed: that yes holds, and the step runs.
    expect((await executor.approve(second!.step.id, person)).status).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'second.txt'), 'utf8')).toBe('2');
  });

  it('an approval given after the first break but before a later one goes back to the person (the reviewer case)', async () => {
    const { executor, workspace } = start();
    const [first, second, third] = await executor.propose(
      { steps: [write('first.txt', '1'), write('second.txt', '2'), write('third.txt', '3')] },
      cli,
    );
    fs.mkdirSync(path.join(workspace, 'first.txt'));
    expect((await executor.approve(first!.step.id, person)).status).toBe('failed');
    // Approved knowing the first failed; it waits for the second …
    expect((await executor.approve(third!.step.id, person)).status).toBe('approved');
    // … which the person then rejects: the plan broke again, after that yes.
    await executor.reject(second!.step.id, person, 'not this one');
    expect(executor.getStep(third!.step.id).status).toBe('awaiting_consent');
    expect(fs.existsSync(path.join(workspace, 'third.txt'))).toBe(false);
  });

  it('sends back every later approved step, not only the next one, and never runs them', async () => {
    const { executor, workspace } = start();
    const records = await executor.propose(
      { steps: [write('a.txt', 'a'), write('b.txt', 'b'), write('c.txt', 'c'), write('d.txt', 'd')] },
      cli,
    );
    await executor.approve(records[1]!.step.id, person);
    await executor.approve(records[3]!.step.id, person);
    await executor.reject(records[0]!.step.id, person, 'not a');
    const statuses = executor.planSteps(records[0]!.step.planId).map((record) => record.status);
    expect(statuses).toEqual(['rejected', 'awaiting_consent', 'awaiting_consent', 'awaiting_consent']);
    for (const record of executor.planSteps(records[0]!.step.planId).slice(1))
      expect(record.blockedBy).toMatchObject({ stepId: records[0]!.step.id, status: 'rejected' });
    expect(fs.readdirSync(workspace)).toEqual([]);
  });

  it('a step waiting behind an undecided one says which, and listings carry it', async () => {
    const { executor } = start();
    const records = await executor.propose({ steps: [write('a.txt', 'a'), write('b.txt', 'b')] }, cli);
    await executor.approve(records[1]!.step.id, person);
    const listed = executor.listSteps({ status: ['approved'] });
    expect(listed[0]!.blockedBy).toMatchObject({ stepId: records[0]!.step.id, status: 'awaiting_consent' });
    expect(executor.getStep(records[0]!.step.id).blockedBy).toBeUndefined();
  });
});

describe('reject and cancel from every state before running', () => {
  it('rejects an evaluated step (preview still being prepared) and preparation then leaves it alone', async () => {
    const { executor } = start();
    const submitted = await executor.submit({ steps: [write('a.txt', 'a'), write('b.txt', 'b')] }, cli);
    expect(submitted.map((record) => record.status)).toEqual(['evaluated', 'evaluated']);
    expect((await executor.reject(submitted[0]!.step.id, person, 'no')).status).toBe('rejected');
    await executor.preparePlan(submitted[0]!.step.planId, cli);
    expect(executor.getStep(submitted[0]!.step.id).status).toBe('rejected');
    expect(executor.getStep(submitted[1]!.step.id).status).toBe('awaiting_consent');
  });

  it('an agent cancels its own evaluated and approved steps; running and finished ones are refused', async () => {
    const { executor } = start();
    const submitted = await executor.submit({ steps: [write('a.txt', 'a')] }, agent);
    expect((await executor.cancel(submitted[0]!.step.id, agent)).status).toBe('rejected');
    const records = await executor.propose({ steps: [write('b.txt', 'b'), write('c.txt', 'c')] }, agent);
    await executor.approve(records[1]!.step.id, person);
    expect((await executor.cancel(records[1]!.step.id, agent)).status).toBe('rejected');
    await executor.approve(records[0]!.step.id, person);
    expect((await errorOf(executor.cancel(records[0]!.step.id, agent))).code).toBe('ILLEGAL_TRANSITION');
  });
});

describe('consent expiry', () => {
  it('a plan asks for a short expiry: the sweep expires the waiting step, records why, and an approval is refused', async () => {
    const { executor } = start();
    const expired = nextStep(executor, (record) => record.status === 'expired');
    const [record] = await executor.propose({ consentExpirySeconds: 1, steps: [write('a.txt', 'a')] }, agent);
    expect(record!.consentExpiresAt).toBeDefined();
    expect(Date.parse(record!.consentExpiresAt!) - Date.parse(record!.updatedAt)).toBe(1000);
    const done = await expired;
    expect(done.step.id).toBe(record!.step.id);
    expect(done.error).toMatchObject({ code: 'CONSENT_EXPIRED' });
    expect(done.consentExpiresAt).toBeUndefined();
    const audit = executor.getAudit({ filters: { stepId: record!.step.id }, order: 'asc' }).entries.map((entry) => entry.action);
    expect(audit.at(-1)).toBe('step.expired');
    expect((await errorOf(executor.approve(record!.step.id, person))).code).toBe('CONSENT_EXPIRED');
  });

  it('a plan cannot ask for longer than the policy allows', async () => {
    const { executor } = start({ consentExpirySeconds: 60 });
    const [record] = await executor.propose({ consentExpirySeconds: 3600, steps: [write('a.txt', 'a')] }, agent);
    expect(Date.parse(record!.consentExpiresAt!) - Date.parse(record!.updatedAt)).toBe(60_000);
  });

  it('approve refuses a step past its expiry even before the sweep got to it', async () => {
    const { executor } = start({ consentExpirySeconds: 1 });
    const [record] = await executor.propose({ steps: [write('a.txt', 'a')] }, cli);
    holdEventLoop(1100);
    const error = await errorOf(executor.approve(record!.step.id, person));
    expect(error.code).toBe('CONSENT_EXPIRED');
    expect(executor.getStep(record!.step.id).status).toBe('expired');
  });

  it('an unused approval expires: execute refuses it, and later steps go back to the person', async () => {
    const { executor, workspace } = start({ consentExpirySeconds: 1 });
    const records = await executor.propose({ steps: [write('a.txt', 'a'), write('b.txt', 'b')] }, cli);
    await executor.approve(records[1]!.step.id, person);
    holdEventLoop(1100);
    const error = await errorOf(executor.executeStep(records[1]!.step.id, person));
    // The earlier step expired first or this approval did: either way nothing ran.
    expect(['CONSENT_EXPIRED', 'PLAN_ORDER']).toContain(error.code);
    expect(executor.getStep(records[1]!.step.id).status).toBe('expired');
    expect(fs.readdirSync(workspace)).toEqual([]);
  });

  it('steps whose expiry passed while no host ran are expired at open', async () => {
    const { executor, dataDir } = start({ consentExpirySeconds: 1 });
    const records = await executor.propose({ steps: [write('a.txt', 'a'), write('b.txt', 'b')] }, cli);
    await executor.approve(records[1]!.step.id, person);
    executor.close();
    holdEventLoop(1100);
    const again = reopen(dataDir);
    expect(again.planSteps(records[0]!.step.planId).map((record) => record.status)).toEqual(['expired', 'expired']);
  });
});

/** Proposes a plan in a child process and SIGKILLs it at the chosen moment of propose. */
async function killDuringPropose(dataDir: string, moment: 'while-weighing' | 'while-previewing', steps: number): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, dataDir, moment, String(steps)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('frozen')) {
        child.kill('SIGKILL');
        resolve();
      } else if (out.includes('finished')) reject(new Error(`child did not freeze: ${out}`));
    });
    child.on('exit', (code) => reject(new Error(`child exited (${code}) before freezing: ${stderr}`)));
  });
  await exited;
}

describe('restart after a SIGKILL during propose', () => {
  it('killed while weighing (a plan stored apart from its weighing, as earlier versions did): every step is proposed; reject works on it, and a restart weighs and prepares the rest', async () => {
    const { dataDir } = tempSetup();
    await killDuringPropose(dataDir, 'while-weighing', 4);

    const inspect = reopen(dataDir, { resumeUnfinished: false });
    expect(inspect.planSteps('crashed-plan').map((record) => record.status)).toEqual(['proposed', 'proposed', 'proposed', 'proposed']);
    expect((await inspect.reject('s3', person, 'not after a crash')).status).toBe('rejected');
    inspect.close();
    open.pop();

    const executor = reopen(dataDir);
    await executor.settled();
    const statuses = executor.planSteps('crashed-plan').map((record) => record.status);
    expect(statuses).toEqual(['awaiting_consent', 'awaiting_consent', 'awaiting_consent', 'rejected']);
    expect(executor.getStep('s0').preview).toMatchObject({ kind: 'fileChanges' });
    const audit = executor.getAudit({ filters: { stepId: 's1' }, order: 'asc' }).entries;
    expect(audit.map((entry) => entry.action)).toEqual(
      expect.arrayContaining(['step.evaluated', 'step.recovered', 'step.consent_requested']),
    );
  });

  it('killed while previewing: approved steps run when their approval holds, and go back to the person when the plan broke', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    await killDuringPropose(dataDir, 'while-previewing', 5);

    const inspect = reopen(dataDir, { resumeUnfinished: false });
    expect(inspect.planSteps('crashed-plan').map((record) => record.status)).toEqual([
      'approved',
      'approved',
      'evaluated',
      'evaluated',
      'evaluated',
    ]);
    inspect.close();
    open.pop();
    // The first step can no longer be written: it fails on restart, and nothing after it runs on the policy's word.
    fs.mkdirSync(path.join(workspace, 'file-0.txt'));

    const executor = reopen(dataDir);
    await executor.settled();
    const records = executor.planSteps('crashed-plan');
    expect(records.map((record) => record.status)).toEqual([
      'failed',
      'awaiting_consent',
      'awaiting_consent',
      'awaiting_consent',
      'awaiting_consent',
    ]);
    for (const record of records.slice(1)) expect(record.blockedBy).toMatchObject({ stepId: 's0', status: 'failed' });
    expect(fs.readdirSync(workspace)).toEqual(['file-0.txt']);
  });

  it('killed while previewing, nothing broken: the restart finishes the plan', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'MEDIUM' });
    await killDuringPropose(dataDir, 'while-previewing', 5);
    const executor = reopen(dataDir);
    await executor.settled();
    expect(executor.planSteps('crashed-plan').map((record) => record.status)).toEqual([
      'executed',
      'executed',
      'executed',
      'executed',
      'executed',
    ]);
    expect(fs.readdirSync(workspace).sort()).toEqual(['file-0.txt', 'file-1.txt', 'file-2.txt', 'file-3.txt', 'file-4.txt']);
    const recovered = executor.getAudit({ filters: { stepId: 's0' }, order: 'asc' }).entries.map((entry) => entry.action);
    expect(recovered).toEqual(expect.arrayContaining(['step.recovered', 'step.executed']));
  });
});

describe('an approval given before the plan broke', () => {
  it('cannot be used by executeStep directly either: the step goes back to the person', async () => {
    const { executor, workspace } = start();
    const records = await executor.propose({ steps: [write('a.txt', 'a'), write('b.txt', 'b')] }, cli);
    // Both approved without running the plan forward; the first then fails when run on its own (executeStep does not advance the plan).
    await executor.approve(records[1]!.step.id, person, { execute: false });
    await executor.approve(records[0]!.step.id, person, { execute: false });
    fs.mkdirSync(path.join(workspace, 'a.txt'));
    expect((await executor.executeStep(records[0]!.step.id, person)).status).toBe('failed');
    expect(executor.getStep(records[1]!.step.id).status).toBe('approved');
    const sentBack = await executor.executeStep(records[1]!.step.id, person);
    expect(sentBack.status).toBe('awaiting_consent');
    expect(fs.existsSync(path.join(workspace, 'b.txt'))).toBe(false);
    await executor.approve(records[1]!.step.id, person, { execute: false });
    expect((await executor.executeStep(records[1]!.step.id, person)).status).toBe('executed');
    expect(fs.readdirSync(workspace).sort()).toEqual(['a.txt', 'b.txt']);
  });

  it('a policy approval never holds over a broken plan, even when given after it', async () => {
    const { executor, workspace } = start({ autoApprove: 'MEDIUM' });
    const submitted = await executor.submit({ steps: [write('a.txt', 'a'), write('b.txt', 'b')] }, cli);
    await executor.reject(submitted[0]!.step.id, person, 'no');
    await executor.preparePlan(submitted[0]!.step.planId, cli);
    const later = executor.getStep(submitted[1]!.step.id);
    expect(later.status).toBe('awaiting_consent');
    expect(later.blockedBy).toMatchObject({ stepId: submitted[0]!.step.id, status: 'rejected' });
    expect(fs.readdirSync(workspace)).toEqual([]);
  });
});

describe('a proposal is stored and weighed in one transaction', () => {
  it('a SIGKILL while weighing leaves nothing of the plan: it was never acknowledged, and nothing waits half-stored', async () => {
    const { dataDir } = tempSetup();
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `
      const { Executor } = await import(${JSON.stringify(new URL('../../../src/executor/executor.ts', import.meta.url).pathname)});
      const { StepDesk } = await import(${JSON.stringify(new URL('../../../src/executor/step-desk.ts', import.meta.url).pathname)});
      const { actorFor } = await import(${JSON.stringify(new URL('../../../src/domain/actor.ts', import.meta.url).pathname)});
      let weighed = 0;
      const proto = StepDesk.prototype;
      const evaluateStep = proto.evaluateStep;
      proto.evaluateStep = function (...args) {
        if (++weighed === 3) { process.stdout.write('frozen\\n'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); }
        return evaluateStep.apply(this, args);
      };
      const executor = Executor.open(${JSON.stringify(dataDir)});
      const steps = Array.from({ length: 4 }, (_, i) => ({ id: 's' + i, action: 'writeFile', args: { path: 'file-' + i + '.txt', content: 'x' } }));
      await executor.propose({ planId: 'crashed-plan', steps }, actorFor('cli'));
    `,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      let out = '';
      let err = '';
      child.stderr.on('data', (chunk) => (err += chunk));
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('frozen')) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.once('exit', (code) => reject(new Error(`child exited (${code}) before freezing: ${err}`)));
    });
    await exited;
    const executor = reopen(dataDir);
    await executor.settled();
    expect(executor.listSteps({ planId: 'crashed-plan' })).toEqual([]);
  });
});
