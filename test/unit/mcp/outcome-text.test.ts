import { describe, expect, it } from 'vitest';
import type { StepStatus } from '../../../src/domain/state-machine.js';
import { AGENT_CANCEL_REASON, type StepRecord } from '../../../src/domain/step-record.js';
import { outputText, planOutcomeText, stepOutcomeText } from '../../../src/mcp/outcome-text.js';

function record(status: StepStatus, patch: Partial<StepRecord> = {}, id = 'step-1'): StepRecord {
  return {
    step: { id, planId: 'plan-1', action: 'deleteFile', args: { path: '/w/a' }, meta: { origin: 'agent', client: 'c 1' } },
    position: 0,
    status,
    stepHash: 'h',
    evaluation: {
      allowed: status !== 'denied',
      risk: 'MEDIUM',
      consent: 'confirm',
      reasons: ['Deletes a inside /w.', 'Second reason.'],
      mitigations: [],
      reversible: true,
    },
    preview: null,
    previewHash: null,
    approval: null,
    rejectedReason: null,
    result: null,
    error: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    startedAt: null,
    finishedAt: null,
    revertedAt: null,
    ...patch,
  };
}

describe('stepOutcomeText', () => {
  it('says "Approved" of the person\'s edit only once they approved it; before, "edited by the person"', () => {
    const by = { user: 'me', channel: 'cli' } as const;
    const edit = {
      kind: 'command' as const,
      by,
      at: '2026-01-01T00:00:00.000Z',
      version: 2,
      proposedStepHash: 'p',
      commandBefore: 'curl x',
      commandAfter: 'rm -rf y',
    };
    const waiting = stepOutcomeText(record('awaiting_consent', { edit }));
    expect(waiting).toContain('Edited by the person: rm -rf y');
    expect(waiting).not.toMatch(/Approved|before approving/);
    const content = { ...edit, kind: 'content' as const, diff: '-a\n+b\n', commandBefore: undefined, commandAfter: undefined };
    expect(stepOutcomeText(record('rejected', { rejectedReason: 'no', edit: content }))).toContain('+ what was edited by the person');
    const approval = { by, at: '2026-01-01T00:00:01.000Z', stepHash: 'h', previewHash: 'ph' };
    const ran = stepOutcomeText(record('executed', { edit, approval, result: {} }));
    expect(ran).toContain('Approved: rm -rf y');
    expect(ran).toContain('before approving it');
  });

  it('says each outcome in the words the issue lists', () => {
    const approval = { by: { user: 'me', channel: 'window' as const }, at: '2026-01-01T00:00:01.000Z', stepHash: 'h', previewHash: null };
    expect(stepOutcomeText(record('executed', { result: { deleted: true }, approval }))).toBe(
      'EXECUTED: step step-1 ran.\nApproved by the user.\n{"deleted":true}',
    );
    const byPolicy = { ...approval, by: { user: 'me', channel: 'policy' as const } };
    expect(stepOutcomeText(record('executed', { result: {}, approval: byPolicy })).split('\n')[1]).toBe(
      "Approved without asking by the user's policy (its risk is under the auto-approve level).",
    );
    expect(stepOutcomeText(record('rejected', { rejectedReason: 'not now' }))).toBe('REJECTED by the user: not now');
    expect(stepOutcomeText(record('denied'))).toBe('DENIED by policy: Deletes a inside /w. Second reason.');
    expect(stepOutcomeText(record('failed', { error: { code: 'EXECUTION_FAILED', message: 'disk full' }, approval })).split('\n')[0]).toBe(
      'FAILED: EXECUTION_FAILED: disk full',
    );
    expect(stepOutcomeText(record('awaiting_consent'))).toBe('PENDING: waiting for the user; call step_status with step-1');
    // Approved or running is not "waiting for the user": the user has decided.
    expect(stepOutcomeText(record('approved', { approval }))).toMatch(
      /^PENDING: approved, waiting its turn; call step_status with step-1\nApproved by the user\./,
    );
    expect(stepOutcomeText(record('running', { approval }))).toMatch(
      /^PENDING: running now; call step_status with step-1\nApproved by the user\./,
    );
  });

  it('says EXPIRED with the reason, and tells a PENDING step what holds it back on a line of its own', () => {
    expect(
      stepOutcomeText(
        record('expired', { error: { code: 'CONSENT_EXPIRED', message: 'waited 24 hours for a decision that did not come; it expired.' } }),
      ),
    ).toBe(
      'EXPIRED: step step-1 waited 24 hours for a decision that did not come; it expired. It did not run; propose it again if you still need it.',
    );
    const held = stepOutcomeText(
      record('awaiting_consent', {
        blockedBy: { stepId: 'step-0', status: 'failed', reason: 'Step step-0 earlier in this plan failed: disk full.' },
        consentExpiresAt: '2026-01-02T00:00:00.000Z',
      }),
    );
    expect(held).toBe('PENDING: waiting for the user; call step_status with step-1\nStep step-0 earlier in this plan failed: disk full.');
  });

  it('tells a waiting step with no dry run why, on a line of its own, without the build log', () => {
    const previewError =
      "The project's sandbox image did not build from .devcontainer/Dockerfile (.devcontainer/devcontainer.json): COPY failed: stat no-such-file.txt\nStep 1/6 : ARG BASE\nsecret-ish log line";
    const waiting = stepOutcomeText(record('awaiting_consent', { previewError }));
    const [first, second, ...rest] = waiting.split('\n');
    expect(first).toBe('PENDING: waiting for the user; call step_status with step-1');
    expect(second).toBe(
      "No dry run could be made, so the user decides without a preview: The project's sandbox image did not build from .devcontainer/Dockerfile (.devcontainer/devcontainer.json): COPY failed: stat no-such-file.txt",
    );
    expect(rest).toEqual([]);
    // Once a preview is made, or the step has moved on, the reason is not said.
    const preview = { kind: 'text' as const, text: 'x' };
    expect(stepOutcomeText(record('awaiting_consent', { previewError, preview }))).toBe(
      'PENDING: waiting for the user; call step_status with step-1',
    );
    expect(stepOutcomeText(record('rejected', { previewError, rejectedReason: 'no' }))).toBe('REJECTED by the user: no');
  });

  it("tells the agent's own cancellation apart from the person's rejection", () => {
    expect(stepOutcomeText(record('rejected', { rejectedReason: AGENT_CANCEL_REASON }))).toMatch(/^CANCELLED: you withdrew step step-1/);
  });

  it('reports an interrupted step as FAILED with its error, and a reverted one as REVERTED', () => {
    expect(stepOutcomeText(record('interrupted', { error: { code: 'EXECUTION_FAILED', message: 'Executor stopped' } }))).toMatch(
      /^FAILED: EXECUTION_FAILED: Executor stopped\nApproved\. Executor stopped \(shut down or crashed\) while step step-1 ran/,
    );
    expect(stepOutcomeText(record('reverted', { revertedAt: '2026-01-02T00:00:00.000Z' }))).toMatch(
      /^REVERTED: step step-1 ran, then the user reverted it/,
    );
  });
});

describe('outputText', () => {
  it('prints multi-line output as text, not escaped JSON', () => {
    expect(outputText({ exitCode: 0, stdout: 'line 1\nline 2\n' })).toBe('{"exitCode":0}\nstdout:\nline 1\nline 2\n');
  });

  it("prints runCode's log lines and runCommand's stream excerpts as lines", () => {
    expect(outputText({ ok: true, value: 4, logs: ['a', 'b'] })).toBe('{"ok":true,"value":4}\nlogs:\na\nb');
    expect(outputText({ exitCode: 1, stderr: { text: 'boom\n', bytes: 5, truncated: false } })).toBe('{"exitCode":1}\nstderr:\nboom\n');
  });

  it('caps long output and says how much was cut', () => {
    const text = outputText({ stdout: 'x'.repeat(50_000) }, 1_000);
    expect(text.length).toBeLessThan(1_200);
    expect(text).toMatch(/output cut at 1000 of 50008 characters/);
  });
});

describe('planOutcomeText', () => {
  it('gives one line per step, naming it, for a plan of several', () => {
    const text = planOutcomeText([record('executed', { result: { ok: 1 } }, 'a'), record('awaiting_consent', {}, 'b')]);
    expect(text.split('\n')).toEqual([
      'a (deleteFile): EXECUTED: step a ran.',
      'Approved.',
      '{"ok":1}',
      'b (deleteFile): PENDING: waiting for the user; call step_status with b',
    ]);
  });
});

describe('the stop switch in what an agent reads', () => {
  it('says a step still open is held, not rejected, while the user has stopped all agents; a decided one keeps its verdict', () => {
    const held = { pausedAt: '2026-01-01T10:00:00.000Z' };
    for (const status of ['evaluated', 'awaiting_consent', 'approved'] as const) {
      const text = stepOutcomeText(record(status), undefined, held);
      expect(text).toMatch(
        /^PENDING: held: the user stopped all agents at 2026-01-01T10:00:00.000Z\. Step step-1 is neither approved nor rejected/,
      );
    }
    expect(stepOutcomeText(record('rejected', { rejectedReason: 'no' }), undefined, held)).toBe('REJECTED by the user: no');
    expect(planOutcomeText([record('awaiting_consent'), record('awaiting_consent', {}, 'step-2')], undefined, held)).toContain(
      'step-2 (deleteFile): PENDING: held',
    );
  });

  it('says what stopped a cancelled run, and keeps "you withdrew" for the agent\'s own cancel', () => {
    const message =
      'Cancelled because the user stopped all agents during its run; its sandbox run was stopped before anything was applied.';
    const said = stepOutcomeText(record('cancelled', { error: { code: 'STEP_CANCELLED', message } }));
    // Who stopped it comes first (the person, by their stop switch), then Executor's own words for what stopped.
    expect(said).toMatch(/^CANCELLED by the user: they stopped the dry run of step step-1/);
    expect(said.split('\n')).toContain(message);
    expect(stepOutcomeText(record('rejected', { rejectedReason: AGENT_CANCEL_REASON }))).toMatch(/^CANCELLED: you withdrew step step-1/);
  });

  it('tells an agent a policy reason consequence first, the analysis detail after, as the person reads it', async () => {
    const { loadShellParser } = await import('../../../src/policy/shell-parser.js');
    const { checkCommandPrograms } = await import('../../../src/policy/command-policy.js');
    await loadShellParser();
    const verdict = checkCommandPrograms('for i in 1 2 3; do echo $((i * 2)); done', { allow: ['echo'], deny: [] });
    expect(verdict.allowed).toBe(false);
    const reason = (verdict as { reason: string }).reason;
    const base = record('denied');
    const said = stepOutcomeText({ ...base, evaluation: { ...base.evaluation!, allowed: false, reasons: [reason] } });
    expect(said).toMatch(
      /^DENIED by policy: This command could run any program: it can change which program a name runs[^`]*\. The policy's commands\.allow list .* In detail: arithmetic reads `i`/,
    );
  });
});
