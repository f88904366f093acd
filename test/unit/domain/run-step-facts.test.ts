import { describe, expect, it } from 'vitest';
import {
  capabilityAsks,
  clampDockerTimeout,
  codeSandboxOf,
  codeTimeoutMs,
  codeTimeoutWords,
  commandTimeoutMs,
  commandTimeoutWords,
  durationText,
  lineCountText,
} from '../../../src/domain/run-step-facts.js';
import { defaultPolicy } from '../../../src/policy/policy-file.js';

const limits = { lightSandbox: { defaultTimeoutMs: 2000 }, sandbox: { timeoutMs: 120_000 } };

describe('what a runCode step runs in', () => {
  it('goes to Docker for Python or when asked, to the light sandbox otherwise', () => {
    expect(codeSandboxOf({})).toBe('light');
    expect(codeSandboxOf({ language: 'javascript' })).toBe('light');
    expect(codeSandboxOf({ language: 'python' })).toBe('docker');
    expect(codeSandboxOf({ language: 'python', sandbox: 'light' })).toBe('docker');
    expect(codeSandboxOf({ sandbox: 'docker' })).toBe('docker');
  });

  it('says the time limit the sandbox enforces, and why when it is not what the step asked', () => {
    expect(codeTimeoutMs({}, limits)).toBe(2000);
    expect(codeTimeoutWords({}, limits)).toBe("2 s (the policy's default)");
    expect(codeTimeoutWords({ timeoutMs: 800 }, limits)).toBe('800 ms');
    expect(codeTimeoutMs({ timeoutMs: 600_000 }, limits)).toBe(5000);
    expect(codeTimeoutWords({ timeoutMs: 600_000 }, limits)).toBe('5 s (it asked for 10 min; the light sandbox allows 100 ms–5 s)');
    expect(codeTimeoutWords({ timeoutMs: -5 }, limits)).toBe('100 ms (it asked for -5 ms; the light sandbox allows 100 ms–5 s)');
    expect(codeTimeoutMs({ language: 'python' }, limits)).toBe(120_000);
    expect(codeTimeoutWords({ language: 'python', timeoutMs: 3_600_000 }, limits)).toBe(
      '2 min (it asked for 1 h; the policy allows up to 2 min)',
    );
    expect(codeTimeoutMs({ sandbox: 'docker', timeoutMs: 5 }, limits)).toBe(100);
  });

  it('reads the limits from a real policy', () => {
    const policy = defaultPolicy();
    expect(codeTimeoutMs({}, policy)).toBe(policy.lightSandbox.defaultTimeoutMs);
    expect(commandTimeoutMs({}, policy)).toBe(policy.sandbox.timeoutMs);
  });

  it('names each capability asked for, and none when it asks for none', () => {
    expect(capabilityAsks(undefined)).toEqual([]);
    expect(capabilityAsks({})).toEqual([]);
    const asks = capabilityAsks({ fetch: { hosts: ['api.example.com', '*.github.com'] }, readFile: true, kbSearch: true });
    expect(asks.map((ask) => ask.capability)).toEqual(['fetch', 'readFile', 'kbSearch']);
    expect(asks[0]!.words).toContain('api.example.com, *.github.com');
  });
});

describe('what a runCommand step may take', () => {
  it('asks for less than the policy allows, never more', () => {
    expect(commandTimeoutMs({ timeoutMs: 30_000 }, limits)).toBe(30_000);
    expect(commandTimeoutMs({ timeoutMs: 999_999 }, limits)).toBe(120_000);
    expect(commandTimeoutWords({ timeoutMs: 999_999 }, limits)).toBe('2 min (it asked for 16 min 40 s; the policy allows up to 2 min)');
    expect(clampDockerTimeout(undefined, 5000)).toBe(5000);
  });
});

describe('words', () => {
  it('durations and line counts', () => {
    expect([999, 1000, 1500, 60_000, 90_000, 3_600_000, 5_400_000].map(durationText)).toEqual([
      '999 ms',
      '1 s',
      '1.5 s',
      '1 min',
      '1 min 30 s',
      '1 h',
      '1 h 30 min',
    ]);
    expect(['', 'a', 'a\n', 'a\nb', 'a\nb\n\n'].map(lineCountText)).toEqual(['0 lines', '1 line', '1 line', '2 lines', '3 lines']);
  });
});
