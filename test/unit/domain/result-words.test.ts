import { describe, expect, it } from 'vitest';
import { byteWords, oneLine, resultWords, RESULT_WORDS_MAX_CHARACTERS, type ResultSource } from '../../../src/domain/result-words.js';
import { AGENT_CANCEL_REASON } from '../../../src/domain/step-record.js';
import { commandTitle } from '../../../src/domain/step-title.js';
import { HIDDEN_GRID } from '../../helpers/hidden-characters.js';

function source(patch: Partial<ResultSource> & { action?: string }): ResultSource {
  const { action = 'writeFile', ...rest } = patch;
  return {
    status: 'executed',
    step: { action },
    result: null,
    error: null,
    rejectedReason: null,
    evaluation: null,
    startedAt: null,
    finishedAt: null,
    ...rest,
  };
}

describe('resultWords', () => {
  it('says what a step that ran did', () => {
    expect(resultWords(source({ result: { bytesWritten: 16, created: true } }))).toBe('Created 16 bytes');
    expect(resultWords(source({ result: { bytesWritten: 2048, created: false } }))).toBe('Wrote 2 KiB');
    expect(resultWords(source({ action: 'deleteFile', result: { bytesRemoved: 1 } }))).toBe('Deleted (1 byte)');
    expect(resultWords(source({ action: 'runCommand', result: { exitCode: 0, durationMs: 2100, files: [{}, {}, {}] } }))).toBe(
      'Exit 0 in 2.1 s; 3 files changed',
    );
    expect(resultWords(source({ action: 'runCommand', result: { exitCode: 1, timedOut: true, durationMs: 30_000, files: [] } }))).toBe(
      'Timed out in 30 s; no file changed',
    );
    expect(resultWords(source({ action: 'runCode', result: { ok: true, value: { a: 1 }, durationMs: 12 } }))).toBe(
      'Returned in 12 ms: {"a":1}',
    );
    expect(resultWords(source({ action: 'openURL', result: { opened: true } }))).toBe('Opened in the browser');
  });

  it('says why a step did not run or failed, on one bounded line', () => {
    const long = `disk\nfull ${'x'.repeat(1000)}`;
    const failed = resultWords(source({ status: 'failed', error: { code: 'STORAGE_FULL', message: long } }));
    expect(failed.startsWith('Failed: STORAGE_FULL disk full')).toBe(true);
    expect([...failed].length).toBeLessThanOrEqual(RESULT_WORDS_MAX_CHARACTERS);
    expect(failed).not.toContain('\n');
    expect(resultWords(source({ status: 'rejected', rejectedReason: 'not now' }))).toBe('Rejected: not now');
    expect(resultWords(source({ status: 'rejected', rejectedReason: '' }))).toBe('Rejected: no reason given');
    expect(resultWords(source({ status: 'rejected', rejectedReason: ' \n ' }))).toBe('Rejected: no reason given');
    expect(resultWords(source({ status: 'denied', evaluation: { reasons: ['  '] } }))).toBe('Denied by policy: no reason recorded');
    expect(resultWords(source({ status: 'rejected', rejectedReason: AGENT_CANCEL_REASON }))).toBe(
      'Withdrawn by the agent that proposed it',
    );
    expect(resultWords(source({ status: 'denied', evaluation: { reasons: ['Outside the roots.'] } }))).toBe(
      'Denied by policy: Outside the roots.',
    );
    expect(resultWords(source({ status: 'awaiting_consent' }))).toBe('—');
    expect(resultWords(source({ status: 'reverted', result: { bytesWritten: 3, created: true } }))).toBe(
      'Reverted; it had: Created 3 bytes',
    );
    expect(resultWords(source({ status: 'cancelled' }))).toBe('Cancelled before it ran');
    expect(
      resultWords(
        source({
          status: 'cancelled',
          action: 'runCommand',
          startedAt: '2026-01-01T00:00:00Z',
          result: { exitCode: 137, durationMs: 1500, files: [{}] },
        }),
      ),
    ).toBe('Cancelled while it ran; it had: Exit 137 in 1.5 s; 1 file changed');
  });

  it("says one duration for a run: the host's timing of the real run where there is one", () => {
    const realRun = { durationMs: 21_800 };
    expect(resultWords(source({ action: 'runCommand', result: { exitCode: 0, durationMs: 3300, files: [] }, runTimes: { realRun } }))).toBe(
      'Exit 0 in 21.8 s; no file changed',
    );
    expect(
      resultWords(source({ action: 'runCode', result: { ok: true, value: 1, durationMs: 12 }, runTimes: { realRun: { durationMs: 40 } } })),
    ).toBe('Returned in 40 ms: 1');
  });

  it('says how far into its run a cancelled real run was stopped, its partial output not read as an outcome', () => {
    const cancelled = source({
      status: 'cancelled',
      action: 'runCommand',
      startedAt: '2026-01-01T00:00:00Z',
      finishedAt: '2026-01-01T00:00:08.500Z',
      result: { partialOutput: { stdout: 'line 1\n', stderr: '', bytes: { stdout: 7, stderr: 0 }, truncated: false } },
    });
    expect(resultWords(cancelled)).toBe('Cancelled 8.5 s into its run');
    expect(resultWords({ ...cancelled, runTimes: { realRun: { durationMs: 8700 } } })).toBe('Cancelled 8.7 s into its run');
  });

  it('never prints a big JSON result whole', () => {
    const words = resultWords(source({ action: 'somethingNew', result: { blob: 'y'.repeat(100_000) } }));
    expect(words.length).toBeLessThanOrEqual(RESULT_WORDS_MAX_CHARACTERS);
    expect(words.startsWith('Done: {"blob":"yyy')).toBe(true);
  });

  it('says sizes in bytes, KiB and MiB', () => {
    expect([byteWords(0), byteWords(1), byteWords(1536), byteWords(5 * 1024 * 1024)]).toEqual(['0 bytes', '1 byte', '1.5 KiB', '5 MiB']);
  });
});

describe('words keep every hidden character, for the window and the CLI to mark', () => {
  it('one line of a result, a reason or an error never turns a BOM or a separator into a space, nor trims one away', () => {
    for (const character of HIDDEN_GRID) {
      expect(oneLine(`${character}a ${character} b${character}`)).toBe(`${character}a ${character} b${character}`);
      expect(resultWords(source({ status: 'rejected', rejectedReason: `no${character}thanks` }))).toContain(`no${character}thanks`);
    }
  });

  it("a command's title keeps a hidden character at the start of its first line", () => {
    expect(commandTitle('\ufeffrm -rf build')).toBe('\ufeffrm -rf build');
    expect(commandTitle('\n  \u200bcurl x | sh\necho done')).toMatch(/^\u200bcurl x \| sh/);
  });
});

describe('resultWords of a skill use', () => {
  it('says the value a runSkill step returned, and why one failed', () => {
    expect(
      resultWords(source({ action: 'runSkill', result: { ok: true, value: { words: 3 } }, runTimes: { realRun: { durationMs: 12 } } })),
    ).toBe('Returned in 12 ms: {"words":3}');
    expect(
      resultWords(
        source({
          action: 'runSkill',
          status: 'failed',
          error: { code: 'SCHEMA_MISMATCH', message: 'returned a value outside its output schema: words: expected number' },
        }),
      ),
    ).toBe('Failed: SCHEMA_MISMATCH returned a value outside its output schema: words: expected number');
  });
});
