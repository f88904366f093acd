import { applyPatch } from 'diff';
import { afterEach, describe, expect, it } from 'vitest';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { toStepSummary } from '../../../src/domain/step-summary.js';
import { desktopNotify, titleWithCount } from '../../../renderer/desktop-notify.js';
import { explainError } from '../../../renderer/error-text.js';
import { displayPath, summarizeStep } from '../../../renderer/step-text.js';
import { groupByPlan, ruleChoicesFor } from '../../../renderer/views/queue-view.js';
import { ruleNoticeFor } from '../../../renderer/app.js';
import { reverseUnifiedDiff } from '../../../renderer/components/diff-view.js';
import { unifiedLineDiff } from '../../../src/backup/line-diff.js';
import { defaultPolicy } from '../../../src/policy/policy-file.js';

function waiting(
  id: string,
  planId: string,
  position: number,
  createdAt: string,
  risk: 'LOW' | 'MEDIUM' | 'HIGH' | 'CRITICAL',
  path = `/ws/${id}.txt`,
): StepRecord {
  return {
    step: {
      id,
      planId,
      action: 'writeFile',
      args: { path, content: 'x' },
      meta: { origin: 'agent', client: 'agent-a', agent: 'agent-A1' },
    },
    position,
    status: 'awaiting_consent',
    stepHash: 'h',
    evaluation: {
      allowed: risk !== 'CRITICAL',
      risk,
      consent: risk === 'CRITICAL' ? 'deny' : 'confirm',
      reasons: [],
      mitigations: [],
      reversible: true,
    },
    preview: null,
    previewHash: null,
    approval: null,
    rejectedReason: null,
    result: null,
    error: null,
    createdAt,
    updatedAt: createdAt,
    startedAt: null,
    finishedAt: null,
    revertedAt: null,
  };
}

afterEach(() => {
  delete (globalThis as { executorShell?: unknown }).executorShell;
});

describe('the queue', () => {
  it('groups steps by plan, newest plan first, each plan in run order', () => {
    const summary = (record: StepRecord) => toStepSummary(record, ['/ws']);
    const groups = groupByPlan([
      summary(waiting('b2', 'old', 1, '2026-01-01T00:00:02Z', 'LOW')),
      summary(waiting('n1', 'new', 0, '2026-01-02T00:00:00Z', 'LOW')),
      summary(waiting('b1', 'old', 0, '2026-01-01T00:00:01Z', 'LOW')),
    ]);
    expect(groups.map((group) => [group.planId, group.steps.map((step) => step.id)])).toEqual([
      ['new', ['n1']],
      ['old', ['b1', 'b2']],
    ]);
  });

  it('offers remembered rules for file steps inside a root, and none for CRITICAL ones', () => {
    const policy = { ...defaultPolicy(), workspaceRoots: ['/ws'] };
    expect(
      ruleChoicesFor(waiting('a', 'p', 0, '2026-01-01T00:00:00Z', 'MEDIUM', '/ws/src/a.ts'), policy).map((choice) => choice.draft),
    ).toEqual([
      { kind: 'file', root: '/ws', glob: 'src/a.ts', maxRisk: 'MEDIUM' },
      { kind: 'file', root: '/ws', glob: 'src/*.ts', maxRisk: 'MEDIUM' },
      { kind: 'file', root: '/ws', glob: 'src/**', maxRisk: 'MEDIUM' },
    ]);
    expect(ruleChoicesFor(waiting('c', 'p', 0, '2026-01-01T00:00:00Z', 'CRITICAL', '/ws/src/a.ts'), policy)).toEqual([]);
    expect(ruleChoicesFor(waiting('o', 'p', 0, '2026-01-01T00:00:00Z', 'MEDIUM', '/elsewhere/a.ts'), policy)).toEqual([]);
    // An agent the host issued no identity cannot be told from any other, whatever name it gave
    // itself: no rule could be scoped to it.
    const unnamed = waiting('u', 'p', 0, '2026-01-01T00:00:00Z', 'MEDIUM', '/ws/src/a.ts');
    expect(ruleChoicesFor({ ...unnamed, step: { ...unnamed.step, meta: { origin: 'agent' } } }, policy)).toEqual([]);
    expect(ruleChoicesFor({ ...unnamed, step: { ...unnamed.step, meta: { origin: 'agent', client: 'agent-a' } } }, policy)).toEqual([]);
  });

  it('notices a step only when a remembered rule approved it, naming the rule and the agent', () => {
    const base = waiting('n', 'p', 0, '2026-01-01T00:00:00Z', 'MEDIUM', '/ws/src/a.ts');
    const policyApproval = { by: { user: 'me', channel: 'policy' as const }, at: 't', stepHash: 'h', previewHash: null };
    const byRule = {
      ...base,
      status: 'approved' as const,
      approval: policyApproval,
      evaluation: { ...base.evaluation!, consent: 'none' as const, approvedByRules: ['rule-1'] },
    };
    expect(ruleNoticeFor(byRule, ['/ws'])).toEqual({
      stepId: 'n',
      ruleIds: ['rule-1'],
      text: 'Approved by your rule rule-1 for agent agent-a: Write src/a.ts',
    });
    // Approved by the auto-approve level, or by the person: no rule notice.
    expect(ruleNoticeFor({ ...byRule, evaluation: { ...byRule.evaluation, approvedByRules: undefined } }, ['/ws'])).toBeNull();
    expect(ruleNoticeFor({ ...byRule, approval: { ...policyApproval, by: { user: 'me', channel: 'window' } } }, ['/ws'])).toBeNull();
  });

  it('names steps with paths relative to their root, and keeps paths outside every root whole', () => {
    expect(summarizeStep(waiting('a', 'p', 0, 't', 'LOW', '/ws/src/a.ts').step, ['/ws'])).toBe('Write src/a.ts');
    expect(displayPath('/etc/passwd', ['/ws'])).toBe('/etc/passwd');
  });
});

describe('the title and the desktop notification seam', () => {
  it('counts waiting steps in the title', () => {
    expect(titleWithCount(0)).toBe('Executor');
    expect(titleWithCount(1)).toBe('(1) Executor — 1 step waiting');
    expect(titleWithCount(3)).toBe('(3) Executor — 3 steps waiting');
  });

  it('notifies through the shell seam when the preload offers one (a fake here: no Electron binary exists in this environment)', () => {
    expect(desktopNotify('t', 'b')).toBe(false);
    const shown: { title: string; body: string }[] = [];
    (globalThis as { executorShell?: unknown }).executorShell = { notify: (notice: { title: string; body: string }) => shown.push(notice) };
    expect(desktopNotify('Executor: HIGH step waiting', 'x'.repeat(2000))).toBe(true);
    expect(shown).toEqual([{ title: 'Executor: HIGH step waiting', body: 'x'.repeat(500) }]);
    (globalThis as { executorShell?: unknown }).executorShell = {
      notify: () => {
        throw new Error('closed');
      },
    };
    expect(desktopNotify('t', 'b')).toBe(false);
  });
});

describe('errors and diffs', () => {
  it('says what to do next for typed errors, and something useful for unknown ones', () => {
    expect(explainError({ code: 'IPC_UNKNOWN_KEY', message: 'no session' }).next).toMatch(/Run `executor web-url` in a terminal/);
    expect(explainError({ code: 'STEP_CHANGED', message: 'm' }).next).toMatch(/preview again/);
    expect(explainError(new Error('boom'))).toMatchObject({ code: 'INTERNAL', message: 'boom' });
  });

  it('reverses a diff so revert shows what comes back, removed lines before added ones', () => {
    const forward = unifiedLineDiff('a\nb\nc\n', 'a\nB\nc\nd\n', 'f', 'f');
    if (!forward.ok) throw new Error(forward.reason);
    const reverse = reverseUnifiedDiff(forward.patch);
    // Applied to the new text, the reverse diff gives back the old text…
    expect(applyPatch('a\nB\nc\nd\n', reverse)).toBe('a\nb\nc\n');
    // …and no added line comes before a removed one within a run of changes.
    const body = reverse.split('\n').filter((line) => /^[-+ ]/.test(line) && !/^(---|\+\+\+) /.test(line));
    const runs = body.join('\n').split(/\n(?= )/);
    for (const run of runs) expect(run.replace(/^ .*\n?/, '')).toMatch(/^(-[^\n]*\n?)*(\+[^\n]*\n?)*$/);
    expect(body.some((line) => line.startsWith('+'))).toBe(true);
  });
});
