import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { ExecutorError } from '../../../src/domain/errors.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const person = actorFor('cli');
// Agents as the host's sessions make them: an issued identity, and a name that is only a label.
const agentA = { ...actorFor('mcp', 'agent-a 1.0'), agent: 'agent-AAAAAAAAAAAAAAAAAAAAAA' };
const agentB = { ...actorFor('mcp', 'agent-b 1.0'), agent: 'agent-BBBBBBBBBBBBBBBBBBBBBB' };
/** Another agent that claims agent A's name: the name decides nothing. */
const impostor = { ...actorFor('mcp', 'agent-a 1.0'), agent: 'agent-CCCCCCCCCCCCCCCCCCCCCC' };
const open: Executor[] = [];

function start(policy: Record<string, unknown> = {}) {
  const setup = tempSetup(policy);
  const executor = Executor.open(setup.dataDir);
  open.push(executor);
  return { ...setup, executor };
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

const write = (workspace: string, name: string) => ({ action: 'writeFile', args: { path: path.join(workspace, name), content: name } });

describe('Executor: agent limits', () => {
  it('counts only undecided steps against openSteps: a decided one frees its place', async () => {
    const { executor, workspace } = start({ agentLimits: { openSteps: 2, stepsPerMinute: 100 } });
    const [first] = await executor.propose({ steps: [write(workspace, 'a')] }, agentA);
    await executor.propose({ steps: [write(workspace, 'b')] }, agentA);
    const refused = await errorOf(executor.propose({ steps: [write(workspace, 'c')] }, agentA));
    expect(refused.code).toBe('RATE_LIMITED');
    expect(refused.details).toMatchObject({ limit: 'openSteps', open: 2, allowed: 2 });
    // Nothing of the refused plan was stored.
    expect(executor.listSteps()).toHaveLength(2);

    await executor.reject(first!.step.id, person, 'no');
    expect((await executor.propose({ steps: [write(workspace, 'c')] }, agentA))[0]!.status).toBe('awaiting_consent');
  });

  it('keeps each issued identity to its own per-minute budget, whatever name it gives, and never limits the person', async () => {
    const { executor, workspace } = start({ agentLimits: { openSteps: 100, stepsPerMinute: 3 } });
    await executor.propose({ steps: [write(workspace, 'a'), write(workspace, 'b')] }, agentA);
    const refused = await errorOf(executor.propose({ steps: [write(workspace, 'c'), write(workspace, 'd')] }, agentA));
    expect(refused.code).toBe('RATE_LIMITED');
    expect(refused.message).toMatch(
      /proposed 2 step\(s\) in the last minute, and this plan adds 2; the policy allows 3 per minute\. Try again in about \d+ s\./,
    );
    expect((refused.details as { retryAfterSeconds: number }).retryAfterSeconds).toBeGreaterThan(0);
    expect((refused.details as { retryAfterSeconds: number }).retryAfterSeconds).toBeLessThanOrEqual(60);
    expect(await executor.propose({ steps: [write(workspace, 'e'), write(workspace, 'f')] }, agentB)).toHaveLength(2);
    // Claiming A's name neither spends nor borrows A's budget.
    expect(await executor.propose({ steps: [write(workspace, 'e2'), write(workspace, 'f2')] }, impostor)).toHaveLength(2);
    expect(
      await executor.propose(
        { steps: [write(workspace, 'g'), write(workspace, 'h'), write(workspace, 'i'), write(workspace, 'j')] },
        person,
      ),
    ).toHaveLength(4);
    const tooBig = await errorOf(executor.propose({ steps: [1, 2, 3, 4].map((n) => write(workspace, `big${n}`)) }, agentB));
    expect(tooBig.message).toContain('A plan of 4 steps can never fit; split it.');
  });
});

describe('Executor: cancel', () => {
  it("lets an agent withdraw its own waiting step, answers another agent's as an unknown id, and lets the person cancel any", async () => {
    const { executor, workspace } = start();
    const [mine] = await executor.propose({ steps: [write(workspace, 'a')] }, agentA);
    const [theirs] = await executor.propose({ steps: [write(workspace, 'b')] }, agentB);
    const refused = await errorOf(executor.cancel(theirs!.step.id, agentA));
    const unknown = await errorOf(executor.cancel('step-does-not-exist', agentA));
    expect(refused.code).toBe('NOT_FOUND');
    expect(refused.message).toBe(unknown.message.replace('step-does-not-exist', theirs!.step.id));
    expect((await errorOf(executor.cancel(mine!.step.id, impostor))).code).toBe('NOT_FOUND');

    const cancelled = await executor.cancel(mine!.step.id, agentA);
    expect(cancelled).toMatchObject({ status: 'rejected', rejectedReason: 'cancelled by the agent that proposed it' });
    const byPerson = await executor.cancel(theirs!.step.id, person);
    expect(byPerson.rejectedReason).toBe('cancelled from the cli channel');
    expect(fs.existsSync(path.join(workspace, 'a'))).toBe(false);
    // A second cancel answers with the step as the first left it, and records nothing more: a double cancel is idempotent.
    expect(await executor.cancel(mine!.step.id, agentA)).toMatchObject({
      status: 'rejected',
      rejectedReason: 'cancelled by the agent that proposed it',
    });
    const kinds = executor.getAudit({ filters: { stepId: mine!.step.id }, order: 'asc' }).entries.map((entry) => entry.action);
    expect(kinds.at(-1)).toBe('step.cancelled');
  });

  it('does not let an agent cancel a step the person proposed', async () => {
    const { executor, workspace } = start();
    const [personal] = await executor.propose({ steps: [write(workspace, 'p')] }, person);
    expect((await errorOf(executor.cancel(personal!.step.id, agentA))).code).toBe('NOT_FOUND');
    expect(executor.getStep(personal!.step.id).status).toBe('awaiting_consent');
  });
});
