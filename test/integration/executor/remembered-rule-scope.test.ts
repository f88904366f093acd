import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { ExecutorError } from '../../../src/domain/errors.js';
import { ruleChoicesForStep } from '../../../src/domain/remembered-rule.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const person = actorFor('window');
// Agents are the identities the host issued (meta.agent); B gives the very name A gives.
const agentA = { ...actorFor('mcp', 'agent-a'), agent: 'agent-A1' };
const agentB = { ...actorFor('mcp', 'agent-a'), agent: 'agent-B2' };
const opened: Executor[] = [];
afterEach(() => {
  for (const executor of opened.splice(0)) executor.close();
});

function open(dataDir: string): Executor {
  const executor = Executor.open(dataDir);
  opened.push(executor);
  return executor;
}

function closeLast(executor: Executor): void {
  opened.splice(opened.indexOf(executor), 1);
  executor.close();
}

const write = (id: string, file: string, content = 'x\n') => ({
  planId: `plan-${id}`,
  steps: [{ id, action: 'writeFile', args: { path: file, content } }],
});

function auditOf(
  executor: Executor,
  stepId?: string,
): { seq: number; kind: string; stepId: string | null; detail: Record<string, unknown> }[] {
  const page = executor.getAudit({ limit: 1000, order: 'asc', ...(stepId ? { filters: { stepId } } : {}) });
  return page.entries.map((entry) => ({
    seq: entry.seq,
    kind: entry.action,
    stepId: entry.stepId,
    detail: (entry.args ?? {}) as Record<string, unknown>,
  }));
}

/** Approves agent A's first write with a rule for its folder, as the window does. */
async function rememberFolderRule(executor: Executor, workspace: string, lifetime: 'hour' | 'day' | 'week' | 'never' = 'never') {
  fs.mkdirSync(path.join(workspace, 'src'), { recursive: true });
  const [first] = await executor.propose(write('first', path.join(workspace, 'src', 'a.ts')), agentA);
  expect(first!.status).toBe('awaiting_consent');
  const choice = ruleChoicesForStep(first!, executor.getPolicy().workspaceRoots).find(
    (option) => option.draft.kind === 'file' && option.draft.glob === 'src/**',
  )!;
  // An agent's step ids are the host's: the id it asked for is not the one it gets.
  return executor.approveAndRemember(first!.step.id, person, { previewHash: first!.previewHash!, rule: choice.draft, lifetime });
}

describe('approve and remember, through the Executor', () => {
  it("saves the rule scoped to the agent whose step it was, with the chosen lifetime, in the approval's transaction", async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = open(dataDir);
    const before = Date.now();
    const { step, rule } = await rememberFolderRule(executor, workspace, 'day');
    expect(step.status).toBe('executed');
    expect(step.step.meta.agent).toBe('agent-A1');
    expect(rule).toMatchObject({ kind: 'file', glob: 'src/**', root: workspace, proposer: { kind: 'agent', agentId: 'agent-A1' } });
    const expiresAt = Date.parse(rule.expiresAt!);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 86_400_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 86_400_000);
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'policy.json'), 'utf8')).remembered).toEqual([rule]);
    const records = auditOf(executor, step.step.id);
    const approved = records.find((record) => record.kind === 'step.approved')!;
    const changed = records.find((record) => record.kind === 'policy.changed')!;
    // One transaction: the policy change follows the approval directly.
    expect(changed.seq).toBe(approved.seq + 1);
    expect(changed.detail.remembered).toEqual(rule);
  });

  it("counts a hit and writes rule.applied with the approval when the rule approves agent A's step; agent B's identical step and the person's still ask", async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = open(dataDir);
    const { rule } = await rememberFolderRule(executor, workspace);
    const heard: string[] = [];
    executor.on('step', (record) => {
      if (record.evaluation?.approvedByRules?.length && record.status === 'approved') heard.push(record.step.id);
    });

    const [covered] = await executor.propose(write('covered', path.join(workspace, 'src', 'b.ts')), agentA);
    expect(covered!.status).toBe('executed');
    expect(covered!.evaluation!.approvedByRules).toEqual([rule.id]);
    expect(heard).toEqual([covered!.step.id]);
    const records = auditOf(executor, covered!.step.id);
    const approved = records.find((record) => record.kind === 'step.approved')!;
    const applied = records.filter((record) => record.kind === 'rule.applied');
    expect(applied).toHaveLength(1);
    expect(applied[0]!.detail).toEqual({ ruleId: rule.id });
    expect(applied[0]!.seq).toBe(approved.seq + 1);
    expect(executor.listRuleHits()).toEqual([{ ruleId: rule.id, hits: 1, lastHitAt: expect.any(String), lastStepId: covered!.step.id }]);

    const [otherAgent] = await executor.propose(write('other-agent', path.join(workspace, 'src', 'b.ts'), 'y\n'), agentB);
    expect(otherAgent!.status).toBe('awaiting_consent');
    const [own] = await executor.propose(write('own', path.join(workspace, 'src', 'c.ts')), person);
    expect(own!.status).toBe('awaiting_consent');
    const [unnamed] = await executor.propose(write('unnamed', path.join(workspace, 'src', 'd.ts')), actorFor('mcp'));
    expect(unnamed!.status).toBe('awaiting_consent');
    // A session the host issued no identity, giving A's name: not A.
    const [nameOnly] = await executor.propose(write('name-only', path.join(workspace, 'src', 'd2.ts')), actorFor('mcp', 'agent-a'));
    expect(nameOnly!.status).toBe('awaiting_consent');
    expect(fs.readFileSync(path.join(workspace, 'src', 'b.ts'), 'utf8')).toBe('x\n');

    const [covered2] = await executor.propose(write('covered-2', path.join(workspace, 'src', 'e.ts')), agentA);
    expect(executor.listRuleHits()[0]).toMatchObject({ hits: 2, lastStepId: covered2!.step.id });

    // Hits are durable: a restart keeps them. Removing the rule drops its count.
    closeLast(executor);
    const reopened = open(dataDir);
    expect(reopened.listRuleHits()[0]).toMatchObject({ ruleId: rule.id, hits: 2 });
    reopened.setPolicy({ ...reopened.getPolicy(), remembered: [] }, person);
    expect(reopened.listRuleHits()).toEqual([]);
    expect((await reopened.propose(write('after-removal', path.join(workspace, 'src', 'f.ts')), agentA))[0]!.status).toBe(
      'awaiting_consent',
    );
  });

  it('asks the person once the rule has expired, and counts no hit', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = open(dataDir);
    const { rule } = await rememberFolderRule(executor, workspace, 'hour');
    const past = new Date(Date.now() - 1000).toISOString();
    executor.setPolicy({ ...executor.getPolicy(), remembered: [{ ...rule, expiresAt: past }] }, person);
    const [step] = await executor.propose(write('late', path.join(workspace, 'src', 'b.ts')), agentA);
    expect(step!.status).toBe('awaiting_consent');
    expect(step!.evaluation!.approvedByRules).toBeUndefined();
    expect(fs.existsSync(path.join(workspace, 'src', 'b.ts'))).toBe(false);
    expect(executor.listRuleHits()).toEqual([]);
    expect(auditOf(executor, step!.step.id).some((record) => record.kind === 'rule.applied')).toBe(false);
  });

  it('refuses a rule that is not one of the choices offered for the step, and approves nothing then', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = open(dataDir);
    fs.mkdirSync(path.join(workspace, 'src'));
    const [step] = await executor.propose(write('s', path.join(workspace, 'src', 'a.ts')), agentA);
    const widened = [
      { kind: 'file', root: workspace, glob: '**', maxRisk: 'MEDIUM' },
      { kind: 'file', root: path.dirname(workspace), glob: 'workspace/src/**', maxRisk: 'MEDIUM' },
      { kind: 'file', root: workspace, glob: 'src/**', maxRisk: 'HIGH' },
      { kind: 'file', root: workspace, glob: 'src/**', maxRisk: 'MEDIUM', proposer: { kind: 'person' } },
      { kind: 'command', prefix: ['timeout', '60'], root: workspace, maxRisk: 'MEDIUM' },
      { kind: 'url', host: 'example.com', maxRisk: 'MEDIUM' },
      null,
      'src/**',
    ];
    const maxRisk = step!.evaluation!.risk;
    expect(ruleChoicesForStep(step!, [workspace]).map((choice) => choice.draft)).toContainEqual({
      kind: 'file',
      root: workspace,
      glob: 'src/**',
      maxRisk,
    });
    for (const rule of widened) {
      const error = await executor.approveAndRemember(step!.step.id, person, { rule, lifetime: 'day' }).catch((caught: unknown) => caught);
      expect(error, JSON.stringify(rule)).toBeInstanceOf(ExecutorError);
      expect((error as ExecutorError).code).toBe('INVALID_INPUT');
    }
    const lifetime = await executor
      .approveAndRemember(step!.step.id, person, {
        rule: { kind: 'file', root: workspace, glob: 'src/**', maxRisk },
        lifetime: 'forever' as never,
      })
      .catch((caught: unknown) => caught);
    expect((lifetime as ExecutorError).code).toBe('INVALID_INPUT');
    expect(executor.getStep(step!.step.id).status).toBe('awaiting_consent');
    expect(executor.getPolicy().remembered).toEqual([]);
    expect(auditOf(executor).some((record) => record.kind === 'policy.changed')).toBe(false);
  });

  it('rolls the approval back when the rule cannot be saved', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = open(dataDir);
    fs.mkdirSync(path.join(workspace, 'src'));
    const [step] = await executor.propose(write('s', path.join(workspace, 'src', 'a.ts')), agentA);
    const choice = ruleChoicesForStep(step!, [workspace])[0]!;
    // policy.json replaced by a directory: the atomic rename of the new policy fails.
    fs.rmSync(path.join(dataDir, 'policy.json'));
    fs.mkdirSync(path.join(dataDir, 'policy.json'));
    fs.writeFileSync(path.join(dataDir, 'policy.json', 'keep'), '');
    const failure = await executor.approveAndRemember(step!.step.id, person, { rule: choice.draft, lifetime: 'never' }).then(
      () => null,
      (caught: unknown) => caught as NodeJS.ErrnoException,
    );
    expect(failure).not.toBeNull();
    expect(failure!.code).toMatch(/^E(ISDIR|NOTEMPTY|EXIST|PERM)$/);
    expect(auditOf(executor).map((record) => record.kind)).not.toContain('policy.changed');
    expect(executor.getStep(step!.step.id).status).toBe('awaiting_consent');
    expect(executor.getPolicy().remembered).toEqual([]);
    expect(auditOf(executor, step!.step.id).map((record) => record.kind)).not.toContain('step.approved');
    expect(fs.existsSync(path.join(workspace, 'src', 'a.ts'))).toBe(false);
    expect(fs.readdirSync(dataDir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it("loads a policy.json with rules from before scoping: they cover the person's own steps, never an agent's", async () => {
    const { dataDir, workspace } = tempSetup();
    const old = { id: 'old-rule', kind: 'file', root: workspace, glob: '*.md', maxRisk: 'MEDIUM', createdAt: '2025-06-01T00:00:00.000Z' };
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], remembered: [old] }));
    const executor = open(dataDir);
    expect(executor.getPolicy().remembered[0]).toMatchObject({ ...old, proposer: { kind: 'person' }, madeBeforeScoping: true });
    expect((await executor.propose(write('agent-md', path.join(workspace, 'notes.md')), agentA))[0]!.status).toBe('awaiting_consent');
    expect((await executor.propose(write('own-md', path.join(workspace, 'own.md')), person))[0]!.status).toBe('executed');
    expect(executor.listRuleHits()).toMatchObject([{ ruleId: 'old-rule', hits: 1, lastStepId: 'own-md' }]);
  });

  it('refuses a wrapper rule sent through setPolicy, naming the word, and leaves the policy as it was', () => {
    const { dataDir, workspace } = tempSetup();
    const executor = open(dataDir);
    for (const prefix of [['timeout', '60'], ['busybox', 'sh', '-c'], ['nice'], ['python3']]) {
      const rule = {
        id: 'w',
        kind: 'command',
        prefix,
        root: workspace,
        maxRisk: 'HIGH',
        createdAt: new Date().toISOString(),
        proposer: { kind: 'agent', agentId: 'agent-a' },
      };
      let caught: unknown;
      try {
        executor.setPolicy({ ...executor.getPolicy(), remembered: [rule] }, person);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(ExecutorError);
      expect((caught as ExecutorError).code).toBe('POLICY_INVALID');
      expect((caught as ExecutorError).message).toContain(`"${prefix[0]}"`);
    }
    expect(executor.getPolicy().remembered).toEqual([]);
  });
});
