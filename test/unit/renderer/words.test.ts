import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { STEP_STATUSES } from '../../../src/domain/state-machine.js';
import type { Step } from '../../../src/domain/step.js';
import { explainError, hasWordsFor, wordsForStates } from '../../../renderer/error-text.js';
import { approvalOutcomeText, approverText, quotedStep, STATUS_LABEL, STATUS_SENTENCE } from '../../../renderer/step-text.js';
import { formatShortTime, formatTime } from '../../../renderer/time-format.js';
import type { StepRecord } from '../../../src/domain/step-record.js';

const write: Step = {
  id: 'stale-1',
  planId: 'plan-7',
  action: 'writeFile',
  args: { path: '/ws/notes.txt', content: 'x' },
  meta: { origin: 'agent', client: 'agent-a' },
} as Step;

/** The codes of the ErrorCode union, read from its source: the list a new code is added to. */
function errorCodes(): string[] {
  const source = fs.readFileSync(path.resolve(import.meta.dirname, '../../../src/domain/errors.ts'), 'utf8');
  const union = source.slice(source.indexOf('export type ErrorCode ='), source.indexOf('export interface ErrorShape'));
  return [...union.matchAll(/\|\s*'([A-Z_]+)'/g)].map((match) => match[1]!);
}

describe('words for every state', () => {
  it('every step status has a label and a sentence, so no message shows a raw state name', () => {
    for (const status of STEP_STATUSES) {
      expect(STATUS_LABEL[status], status).toMatch(/^[A-Z][a-z ]+$/);
      expect(STATUS_SENTENCE[status], status).toMatch(/^[a-z][a-z ()]+$/);
      expect(STATUS_SENTENCE[status]).not.toContain('_');
    }
    expect(Object.keys(STATUS_LABEL).sort()).toEqual([...STEP_STATUSES].sort());
    expect(Object.keys(STATUS_SENTENCE).sort()).toEqual([...STEP_STATUSES].sort());
  });

  it('says what became of an approval by the step’s title, for every status it can end in, never by id or state name', () => {
    for (const status of STEP_STATUSES) {
      const text = approvalOutcomeText(
        write,
        { status, error: status === 'failed' ? { code: 'EXECUTION_FAILED', message: 'disk said no' } : null },
        ['/ws'],
      );
      expect(text, status).toMatch(/^“Write notes\.txt” /);
      expect(text, status).not.toContain('stale-1');
      expect(text, status).not.toMatch(/_/);
      expect(text, status).not.toMatch(/is now|state/);
    }
    expect(approvalOutcomeText(write, { status: 'awaiting_consent', error: null }, ['/ws'])).toBe(
      '“Write notes.txt” needs your decision again: the file changed since you saw it. Look at the new preview.',
    );
    expect(approvalOutcomeText(write, { status: 'failed', error: { code: 'EXECUTION_FAILED', message: 'disk said no' } }, ['/ws'])).toBe(
      '“Write notes.txt” was approved but failed: disk said no',
    );
    expect(quotedStep(write)).toBe('“Write /ws/notes.txt”');
  });

  it('every error code has what-to-do words (the union in src/domain/errors.ts is walked)', () => {
    const codes = errorCodes();
    expect(codes.length).toBeGreaterThan(50);
    for (const code of codes) {
      expect(hasWordsFor(code), code).toBe(true);
      expect(explainError({ code, message: 'm' }).next, code).not.toMatch(/^Try again\. If it keeps failing/);
    }
    expect(explainError({ code: 'SOMETHING_NEW', message: 'm' }).next).toMatch(/^Try again/);
  });

  it('says raw state names in a host message in words, and leaves ordinary English alone', () => {
    expect(wordsForStates('stale-1 approved; it is now awaiting_consent')).toBe('stale-1 approved; it is now waiting for you');
    expect(wordsForStates('Step s1 is executed, not awaiting_consent or approved.')).toBe(
      'Step s1 is executed, not waiting for you or approved.',
    );
    expect(wordsForStates('Step s1 is denied; only a step that ran can be reverted.')).toBe(
      'Step s1 is denied by policy; only a step that ran can be reverted.',
    );
    expect(wordsForStates('The command failed with exit code 2.')).toBe('The command failed with exit code 2.');
    expect(wordsForStates('snake_case_words stay')).toBe('snake_case_words stay');
    expect(explainError({ code: 'ILLEGAL_TRANSITION', message: 'Step s1 is awaiting_consent, not approved.' }).message).toBe(
      'Step s1 is waiting for you, not approved.',
    );
  });

  it('a stale link names `executor web-url`, not a credential', () => {
    expect(explainError({ code: 'IPC_UNKNOWN_KEY', message: 'x' }).next).toContain('`executor web-url`');
  });

  it('names the remembered rule that approved a step, and says the policy or the person otherwise', () => {
    const base = {
      approval: { by: { user: 'policy', channel: 'policy' }, at: '2026-01-01T00:00:00Z' },
      evaluation: { approvedByRules: ['rule-3'] },
    } as unknown as StepRecord;
    expect(approverText(base)).toBe('your remembered rule rule-3 (without asking)');
    expect(approverText({ ...base, evaluation: { approvedByRules: [] } } as unknown as StepRecord)).toBe('policy (auto-approved)');
    expect(approverText({ ...base, approval: { by: { user: 'ana', channel: 'web' }, at: '' } } as unknown as StepRecord)).toBe(
      'ana via web',
    );
  });
});

describe('one time format, the locale’s', () => {
  const moment = '2026-11-24T15:10:56Z';
  it('uses 12 h where the locale does and 24 h where it does', () => {
    const us = formatTime(moment, 'en-US');
    const german = formatTime(moment, 'de-DE');
    expect(us).toMatch(/(AM|PM)/);
    expect(german).not.toMatch(/(AM|PM)/);
    expect(formatShortTime(moment, 'en-GB')).not.toMatch(/(AM|PM|am|pm)/);
    expect(formatShortTime(moment, 'en-US')).toMatch(/(AM|PM)/);
    // Both say the year in the full form, neither in the short one.
    expect(us).toContain('2026');
    expect(formatShortTime(moment, 'en-US')).not.toContain('2026');
  });

  it('says "—" for no time and keeps an unreadable one as it is', () => {
    expect(formatTime(null)).toBe('—');
    expect(formatTime('not a date')).toBe('not a date');
    expect(formatShortTime('nope')).toBe('nope');
  });
});
