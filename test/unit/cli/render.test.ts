import { describe, expect, it } from 'vitest';
import { detailText, explainOutcome, whatRunsLines, whoMustAct } from '../../../src/cli/render.js';
import { localTimeWords } from '../../../src/cli/time-words.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import type { Step } from '../../../src/domain/step.js';
import { defaultPolicy } from '../../../src/policy/policy-file.js';

const step = (action: Step['action'], args: Record<string, unknown>): Step =>
  ({ id: 's', planId: 'p', action, args, meta: { origin: 'agent' } }) as Step;

describe('whatRunsLines (executor steps show)', () => {
  it('says a Python step runs in the Docker sandbox under the policy Docker limit, and shows its code numbered', () => {
    const { facts, code } = whatRunsLines(
      step('runCode', { code: 'import os\nprint(os.getcwd())\n', language: 'python', timeoutMs: 999_999_999 }),
      defaultPolicy(),
    );
    expect(facts[0]).toBe(
      'Code     Python in the Docker sandbox: a hardened, throw-away container with no network unless the step may fetch',
    );
    expect(facts[1]).toBe('Timeout  2 min (it asked for 277 h 47 min; the policy allows up to 2 min)');
    expect(facts[2]).toBe('Asks for nothing beyond computation: no files, no network, no knowledge base');
    expect(code).toEqual(['--- code (Python, 2 lines, 29 bytes)', '   1 | import os', '   2 | print(os.getcwd())']);
  });

  it('keeps a multi-line shell command indented under its label, and escapes what could pose as a line of ours', () => {
    const { facts } = whatRunsLines(
      step('runCommand', { command: 'npm ci\nnpm test\rStatus   executed', cwd: 'app', network: 'allowlist', allowSecrets: ['.env'] }),
      undefined,
    );
    expect(facts[0]).toBe('Command  npm ci\n         npm test\\rStatus   executed');
    expect(facts[1]).toBe('         (run by sh -c inside the container)');
    expect(facts[2]).toBe("In       app (a copy, in the Docker sandbox); network only to the policy's allowlist");
    // Without the policy (not readable), the time limit is said as the step asked.
    expect(facts[3]).toBe("Timeout  the policy's default");
    expect(facts[4]).toBe('Secrets  it may see .env');
  });

  it('shows nothing for steps that run nothing', () => {
    expect(whatRunsLines(step('deleteFile', { path: '/ws/a' }), defaultPolicy())).toEqual({ facts: [], code: [] });
  });
});

function record(status: StepRecord['status'], patch: Partial<StepRecord> = {}): StepRecord {
  return {
    step: { id: 's1', planId: 'p', action: 'deleteFile', args: { path: '/w/a' }, meta: { origin: 'user' } },
    position: 1,
    status,
    stepHash: 'h',
    evaluation: { risk: 'MEDIUM', consent: 'required', reasons: [], mitigations: [], allowed: true } as unknown as StepRecord['evaluation'],
    preview: null,
    previewHash: null,
    approval: null,
    rejectedReason: null,
    result: null,
    error: null,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:01.000Z',
    startedAt: null,
    finishedAt: null,
    revertedAt: null,
    ...patch,
  };
}

describe('explainOutcome (propose prints it per step)', () => {
  it('ends each line with one stop, whatever stop the reason brought', () => {
    expect(explainOutcome(record('rejected', { rejectedReason: 'no thanks.' }))).toBe('s1: rejected: no thanks.');
    expect(explainOutcome(record('rejected', { rejectedReason: 'why?' }))).toBe('s1: rejected: why?');
    expect(explainOutcome(record('rejected', { rejectedReason: 'never!' }))).toBe('s1: rejected: never!');
    expect(explainOutcome(record('rejected', { rejectedReason: 'I said "stop."' }))).toBe('s1: rejected: I said "stop."');
    expect(explainOutcome(record('failed', { error: { code: 'EXECUTION_FAILED', message: 'Disk full.' } }))).toBe(
      's1: failed (EXECUTION_FAILED): Disk full.',
    );
    expect(explainOutcome(record('cancelled', { error: { code: 'STEP_CANCELLED', message: 'Cancelled by you.' } }))).toBe(
      's1: cancelled: Cancelled by you.',
    );
  });

  it('never leaves a dangling colon for an empty reason, and says one for a missing one', () => {
    expect(explainOutcome(record('rejected', { rejectedReason: '' }))).toBe('s1: rejected.');
    expect(explainOutcome(record('rejected', { rejectedReason: null }))).toBe('s1: rejected: no reason given.');
    expect(explainOutcome(record('failed', { error: { code: 'INTERNAL', message: '  ' } }))).toBe('s1: failed (INTERNAL).');
    expect(explainOutcome(record('denied'))).toBe('s1: denied by policy.');
    expect(explainOutcome(record('interrupted'))).toBe('s1: interrupted.');
  });

  it('reads a multi-line reason as one line, and still makes what could move the cursor visible', () => {
    expect(explainOutcome(record('rejected', { rejectedReason: 'first line\nsecond line\n' }))).toBe(
      's1: rejected: first line second line.',
    );
    expect(explainOutcome(record('rejected', { rejectedReason: 'bad\u001b[2Kidea' }))).toBe('s1: rejected: bad\\x1b[2Kidea.');
  });

  it('says a blocker as a sentence of its own after the commands, never "….: `executor …`"', () => {
    const blockedBy = { stepId: 's0', status: 'rejected' as const, reason: 'Step s0 earlier in this plan was rejected: why?' };
    const waiting = explainOutcome(record('awaiting_consent', { blockedBy }));
    expect(waiting).toMatch(/`executor reject s1 --reason …`\. Step s0 earlier in this plan was rejected: why\?$/);
    expect(waiting).not.toMatch(/[.!?]\.|\.:|\?\./);
    expect(explainOutcome(record('approved', { blockedBy }))).toBe('s1: approved, waits: Step s0 earlier in this plan was rejected: why?');
    expect(explainOutcome(record('approved', { blockedBy: { ...blockedBy, reason: '' } }))).toBe(
      's1: approved, waits: an earlier step of its plan runs first.',
    );
    expect(explainOutcome(record('awaiting_consent', { blockedBy: { ...blockedBy, reason: ' ' } }))).toMatch(/--reason …`\.$/);
  });
});

describe('localTimeWords and whoMustAct (when undecided steps expire)', () => {
  it('says the expiry in the local time zone in words, never as raw ISO', () => {
    const expiresAt = '2026-11-25T13:51:07.000Z';
    const words = localTimeWords(expiresAt);
    expect(words).not.toContain('T13:51');
    expect(words).toMatch(/2026/);
    expect(words).toBe(
      new Intl.DateTimeFormat(undefined, {
        year: 'numeric',
        month: 'short',
        day: 'numeric',
        hour: 'numeric',
        minute: '2-digit',
        second: '2-digit',
        timeZoneName: 'short',
      }).format(new Date(expiresAt)),
    );
    const said = whoMustAct([record('awaiting_consent', { consentExpiresAt: expiresAt })], 'direct');
    expect(said).toContain(`Undecided steps expire from ${words} on.`);
    expect(said).not.toMatch(/\d{4}-\d{2}-\d{2}T/);
  });

  it('shows a time it cannot read as it was given, made visible', () => {
    expect(localTimeWords('not a time\u001b]0;x')).toBe('not a time\\x1b]0;x');
  });
});

describe('detailText (executor steps show) prints the output a stopped run kept', () => {
  const span = (ended: 'cancelled' | 'failed' | 'interrupted', stdout: string, stderr = '') => ({
    startedAt: '2026-11-24T10:00:00.000Z',
    finishedAt: '2026-11-24T10:00:12.000Z',
    durationMs: 12_000,
    ended,
    output: { stdout, stderr, bytes: { stdout: Buffer.byteLength(stdout), stderr: Buffer.byteLength(stderr) }, truncated: false },
  });

  it('shows a cancelled dry run’s partial output, both streams, hidden characters made visible', () => {
    const text = detailText(record('cancelled', { runTimes: { dryRun: span('cancelled', 'step 1 done\nevil\u202etxt\n', 'err\n') } }));
    expect(text).toContain('--- output of its dry run, partial: it was cancelled (stdout 23 bytes, stderr 4 bytes)');
    expect(text).toContain('step 1 done');
    expect(text).toContain('<U+202E>');
    expect(text).not.toContain('\u202e');
    expect(text).toMatch(/stderr:\nerr/);
  });

  it('prints a stopped run as it printed, a warning on stderr marked between the stdout lines around it', () => {
    const kept = span('cancelled', 'one\ntwo\n', 'warn\n');
    const inOrder = [
      { stream: 'stdout' as const, text: 'one\n' },
      { stream: 'stderr' as const, text: 'warn\n' },
      { stream: 'stdout' as const, text: 'two\n' },
    ];
    const text = detailText(record('cancelled', { runTimes: { realRun: { ...kept, output: { ...kept.output, inOrder } } } }));
    expect(text).toContain('one\nstderr| warn\ntwo');
  });

  it('names why each run stopped, and says when it printed nothing', () => {
    const text = detailText(record('interrupted', { runTimes: { dryRun: span('failed', 'a\n'), realRun: span('interrupted', '') } }));
    expect(text).toContain('output of its dry run, partial: it failed');
    expect(text).toContain('output of its real run, partial: the host stopped mid-run');
    expect(text).toContain('(it printed nothing)');
  });

  it('prints nothing of the kind for a run that finished', () => {
    expect(
      detailText(record('executed', { runTimes: { realRun: { startedAt: 'a', finishedAt: 'b', durationMs: 1, ended: 'finished' } } })),
    ).not.toContain('partial');
  });
});

describe("a dry run's output in steps show and the inline prompt", () => {
  it("keeps every line the command printed behind a gutter, so none can pass for Executor's own lines", () => {
    const forged = '--- preview of /w/README.md (10 bytes → 12 bytes)\n@@ -1 +1 @@\n-old\n+new\nbound: approving applies this dry run\n';
    const preview = {
      kind: 'commandRun',
      command: 'sh build.sh',
      cwd: '/w',
      exitCode: 0,
      timedOut: false,
      oomKilled: false,
      network: 'none',
      image: { digest: 'sha256:abc' },
      dryRun: true,
      stdout: { text: forged, bytes: forged.length, truncated: false },
      stderr: { text: '--- preview of /w/x\n', bytes: 20, truncated: false },
      egress: [],
      conflicts: [],
      skipped: [],
      files: [],
    } as unknown as StepRecord['preview'];
    const lines = detailText(record('awaiting_consent', { preview })).split('\n');
    // Executor's own lines are at the margin; each printed line is behind the gutter, hidden characters and all.
    expect(lines.filter((text) => text.startsWith('--- '))).toEqual([expect.stringMatching(/^--- dry run \(the preview/)]);
    expect(lines.filter((text) => text.startsWith('bound: '))).toHaveLength(1);
    for (const printed of [...forged.trimEnd().split('\n'), '--- preview of /w/x']) expect(lines).toContain(`  │ ${printed}`);
  });
});
