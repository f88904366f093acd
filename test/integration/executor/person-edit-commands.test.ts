import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { actorFor, type Actor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { stepOutcomeText } from '../../../src/mcp/outcome-text.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Editing an agent's command line before approving it (real Docker dry runs): an edit the policy
 * forbids is refused and changes nothing; the agent is never told "Approved" for a version nobody
 * approved; an edit clears the proposal's dry-run times; and once the person edited a step, the
 * agent's cancel of it is refused in words.
 */

const PERSON = actorFor('window');
const AGENT: Actor = { ...actorFor('mcp', 'agent-a'), agent: 'agent-A1' };
const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => ({ code: 'none', message: '' }),
    (error: { code?: string; message: string }) => ({ code: error.code, message: error.message }),
  );

const hasDocker = dockerAvailable();

// Skipped only where no Docker engine answers (dockerAvailable says why); under CI=true a missing engine throws instead.
describe.skipIf(!hasDocker)("the person's edit of a command (real Docker)", () => {
  const open: Executor[] = [];
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);
  afterEach(() => {
    while (open.length) open.pop()!.close();
  });

  async function threeCommands(policy: Record<string, unknown> = {}) {
    const setup = tempSetup(policy);
    const executor = Executor.open(setup.dataDir, { resumeUnfinished: false });
    open.push(executor);
    const records = await executor.propose(
      {
        steps: [
          { id: 'ec1', action: 'runCommand', args: { argv: ['ls', '-la'] } },
          { id: 'ec2', action: 'runCommand', args: { command: 'echo hi' } },
          { id: 'ec3', action: 'runCommand', args: { command: 'echo hi3' } },
        ],
      },
      AGENT,
    );
    await executor.whenPreparationsIdle();
    // An agent's step ids are the host's (namespaced); the plan's order is kept.
    const [ec1, ec2, ec3] = records.map((record) => record.step.id) as [string, string, string];
    expect(executor.getStep(ec1).status).toBe('awaiting_consent');
    return { executor, ec1, ec2, ec3 };
  }

  it('refuses an edit the policy would deny, with words, and leaves the proposal and the plan as they were', async () => {
    const { executor, ec1, ec2, ec3 } = await threeCommands({ commands: { deny: ['curl', 'rm'] } });
    const before = executor.getStep(ec1);
    const refused = await codeOf(executor.editStep(ec1, PERSON, { command: 'rm -rf made3.txt' }));
    expect(refused.code).toBe('POLICY_DENIED');
    expect(refused.message).toContain('not saved');
    await executor.whenPreparationsIdle();
    const after = executor.getStep(ec1);
    expect(after).toMatchObject({ status: 'awaiting_consent', stepHash: before.stepHash, previewHash: before.previewHash });
    expect(after.edit).toBeUndefined();
    expect(after.step.args).toEqual(before.step.args);
    expect([ec2, ec3].map((id) => executor.getStep(id).status)).toEqual(['awaiting_consent', 'awaiting_consent']);
    expect(executor.getStep(ec2).blockedBy?.reason ?? '').not.toContain('denied');
    expect(stepOutcomeText(after)).toMatch(/^PENDING/);
    const kinds = executor.getAudit({ filters: { stepId: ec1 }, limit: 100, order: 'asc' }).entries.map((entry) => entry.action);
    expect(kinds).not.toContain('step.edited');
    expect(kinds).not.toContain('step.denied');
  });

  it('tells the agent "edited by the person" until approved, and clears the dry run of the version that no longer runs', async () => {
    const { executor, ec1 } = await threeCommands();
    expect(executor.getStep(ec1).runTimes?.dryRun).toBeDefined();
    const edited = await executor.editStep(ec1, PERSON, { command: 'echo person' });
    // The proposal's dry run is not this version's: its times go with it.
    expect(edited.runTimes).toBeUndefined();
    expect(executor.getStep(ec1).runTimes).toBeUndefined();
    await executor.whenPreparationsIdle();
    const waiting = executor.getStep(ec1);
    expect(waiting.status).toBe('awaiting_consent');
    expect(Date.parse(waiting.runTimes!.dryRun!.startedAt)).toBeGreaterThanOrEqual(Date.parse(waiting.edit!.at));
    const told = stepOutcomeText(waiting);
    expect(told).toContain('Edited by the person: echo person');
    expect(told).toContain('has not been approved');
    expect(told).not.toMatch(/approved:|before approving/i);

    await executor.approve(ec1, PERSON, { previewHash: waiting.previewHash });
    const ran = executor.getStep(ec1);
    expect(ran.status).toBe('executed');
    expect(stepOutcomeText(ran)).toContain('Approved: echo person');
  });

  it("refuses the agent's cancel of a step the person edited, during its new dry run and after, in words", async () => {
    const { executor, ec1, ec2 } = await threeCommands();
    await executor.editStep(ec1, PERSON, { command: 'sleep 2; echo person' });
    // Its dry run is under way: the agent may not withdraw the person's version.
    const during = await codeOf(executor.cancel(ec1, AGENT));
    expect(during.code).toBe('ILLEGAL_TRANSITION');
    expect(during.message).toContain('changed by the user');
    await executor.whenPreparationsIdle();
    expect(executor.getStep(ec1).status).toBe('awaiting_consent');
    const after = await codeOf(executor.cancel(ec1, AGENT));
    expect(after.code).toBe('ILLEGAL_TRANSITION');
    expect(executor.getStep(ec1).status).toBe('awaiting_consent');
    // Its own unedited step the agent still withdraws; the person still cancels their own version.
    expect((await executor.cancel(ec2, AGENT)).status).toBe('rejected');
    expect((await executor.cancel(ec1, PERSON)).status).toBe('rejected');
  });
});
