import { describe, expect, it } from 'vitest';
import {
  commandRuleChoices,
  describeRule,
  expiryFor,
  fileRuleChoices,
  isRuleExpired,
  placeInRoots,
  proposerOf,
  ruleChoicesForStep,
  sameProposer,
  urlRuleChoices,
} from '../../../src/domain/remembered-rule.js';
import type { StepRecord } from '../../../src/domain/step-record.js';
import { StepSchema } from '../../../src/domain/step.js';

describe('remembered rule words and choices', () => {
  it('say the reach of each rule in a sentence, with its limit', () => {
    expect(describeRule({ kind: 'command', prefix: ['npm', 'test'], root: '/home/me/proj', maxRisk: 'MEDIUM' })).toBe(
      'Future `npm test …` commands run in /home/me/proj will run without asking (up to MEDIUM risk). Only commands that start with exactly these 2 word(s) match; in a pipeline, every command must be covered by a rule. Commands that set environment variables, use the network or see secret files still ask.',
    );
    expect(
      describeRule({
        kind: 'command',
        prefix: ['npm', 'test'],
        root: '/ws',
        maxRisk: 'HIGH',
        proposer: { kind: 'agent', agentId: 'claude-code' },
        expiresAt: '2026-01-02T03:04:05.000Z',
      }),
    ).toMatch(
      /^Future `npm test …` commands for steps of agent "claude-code" run in \/ws will run without asking.* Until 2026-01-02 03:04 UTC\.$/,
    );
    expect(describeRule({ kind: 'url', host: 'example.com', maxRisk: 'LOW', proposer: { kind: 'person' } })).toMatch(
      /for steps you propose yourself .*Until you remove it\.$/,
    );
    expect(describeRule({ kind: 'file', root: '/ws', glob: 'src/**', maxRisk: 'MEDIUM' })).toMatch(
      /files matching src\/\*\* under \/ws will run without asking \(up to MEDIUM risk\)/,
    );
    expect(describeRule({ kind: 'url', host: 'example.com', maxRisk: 'HIGH' })).toMatch(/including subdomains of example\.com, still ask/);
  });

  it('place a path in the roots by its text, refusing ".." escapes', () => {
    expect(placeInRoots('/ws/src/a.ts', ['/other', '/ws/'])).toEqual({ root: '/ws', relativePath: 'src/a.ts' });
    expect(placeInRoots('src/a.ts', ['/ws'])).toEqual({ root: '/ws', relativePath: 'src/a.ts' });
    expect(placeInRoots('/wsx/a.ts', ['/ws'])).toBeNull();
    expect(placeInRoots('/ws/../etc/passwd', ['/ws'])).toBeNull();
    expect(placeInRoots('a.ts', [])).toBeNull();
  });

  it('offer file rules from narrowest to widest, never the whole root', () => {
    const choices = fileRuleChoices('/ws/src/app/main.ts', ['/ws'], 'MEDIUM');
    expect(choices.map((choice) => choice.draft)).toEqual([
      { kind: 'file', root: '/ws', glob: 'src/app/main.ts', maxRisk: 'MEDIUM' },
      { kind: 'file', root: '/ws', glob: 'src/app/*.ts', maxRisk: 'MEDIUM' },
      { kind: 'file', root: '/ws', glob: 'src/app/**', maxRisk: 'MEDIUM' },
    ]);
    expect(fileRuleChoices('/ws/top.txt', ['/ws'], 'LOW').map((choice) => choice.draft)).toEqual([
      { kind: 'file', root: '/ws', glob: 'top.txt', maxRisk: 'LOW' },
    ]);
    expect(fileRuleChoices('/ws/a[1].txt', ['/ws'], 'LOW')[0]!.draft).toMatchObject({ glob: 'a\\[1\\].txt' });
  });

  it('offer command prefixes, and none at all for a command whose program runs other programs', () => {
    expect(commandRuleChoices(['git', 'status', '--short', 'x'], '/ws', 'LOW').map((choice) => choice.label)).toEqual([
      'git status --short',
      'git status',
      'git',
    ]);
    const offered = (argv: string[]) => commandRuleChoices(argv, '/ws', 'LOW').map((choice) => choice.label);
    // The review's examples, and the class around them: not even the whole argv is offered.
    for (const argv of [
      ['timeout', '60', 'rm', '-rf', '.'],
      ['busybox', 'sh', '-c', 'rm -rf .'],
      ['nice', 'rm', 'x'],
      ['nohup', 'make'],
      ['stdbuf', '-oL', 'make'],
      ['env', 'make'],
      ['xargs', 'rm'],
      ['sudo', 'make'],
      ['bash', '-c', 'x'],
      ['sh', 'build.sh'],
      ['python3', '-c', 'print(1)'],
      ['node', '-e', '1'],
      ['awk', '{print}'],
      ['find', '.', '-exec', 'rm', '{}', '+'],
      ['git', '-c', 'core.pager=sh', 'log'],
      ['npx', 'jest'],
      ['/usr/bin/timeout', '5', 'ls'],
    ]) {
      expect(offered(argv), argv.join(' ')).toEqual([]);
    }
    expect(offered(['find', '.', '-name', 'x'])).toEqual(['find . -name', 'find .', 'find']);
    expect(offered(['npm', 'exec', 'jest'])).toEqual([]);
    expect(urlRuleChoices('https://Docs.Example.com/a', 'HIGH')[0]!.draft).toEqual({
      kind: 'url',
      host: 'docs.example.com',
      maxRisk: 'HIGH',
    });
    expect(urlRuleChoices('javascript:alert(1)', 'HIGH')).toEqual([]);
  });
});

function waitingRecord(
  args: Record<string, unknown>,
  meta: Record<string, unknown>,
  action = 'runCommand',
  risk: 'LOW' | 'HIGH' | 'CRITICAL' = 'HIGH',
): StepRecord {
  return {
    step: StepSchema.parse({ id: 's1', planId: 'p1', action, args, meta }),
    position: 0,
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
    createdAt: 't',
    updatedAt: 't',
    startedAt: null,
    finishedAt: null,
    revertedAt: null,
  };
}

describe('rule scope and lifetime', () => {
  it('scope a rule to the person, or to the one agent that proposed the step', () => {
    expect(proposerOf({ meta: { origin: 'user' } })).toEqual({ kind: 'person' });
    // The identity the host issued decides, never the name the agent gave itself.
    expect(proposerOf({ meta: { origin: 'agent', client: 'claude-code 1.2', agent: 'agent-A1' } })).toEqual({
      kind: 'agent',
      agentId: 'agent-A1',
    });
    // An agent the host issued no identity cannot be told apart from any other: no rule for it,
    // however it names itself.
    expect(proposerOf({ meta: { origin: 'agent' } })).toBeNull();
    expect(proposerOf({ meta: { origin: 'agent', client: 'claude-code 1.2' } })).toBeNull();
    expect(sameProposer({ kind: 'agent', agentId: 'a' }, { kind: 'agent', agentId: 'a' })).toBe(true);
    expect(sameProposer({ kind: 'agent', agentId: 'a' }, { kind: 'agent', agentId: 'b' })).toBe(false);
    expect(sameProposer({ kind: 'agent', agentId: 'a' }, { kind: 'person' })).toBe(false);
    expect(sameProposer({ kind: 'person' }, { kind: 'person' })).toBe(true);
  });

  it('end a rule at its expiry, and treat an expiry that does not parse as past', () => {
    const now = new Date('2026-03-01T12:00:00.000Z');
    expect(isRuleExpired({}, now)).toBe(false);
    expect(isRuleExpired({ expiresAt: '2026-03-01T12:00:01.000Z' }, now)).toBe(false);
    expect(isRuleExpired({ expiresAt: '2026-03-01T12:00:00.000Z' }, now)).toBe(true);
    expect(isRuleExpired({ expiresAt: 'soon' }, now)).toBe(true);
    expect(expiryFor('hour', now)).toBe('2026-03-01T13:00:00.000Z');
    expect(expiryFor('day', now)).toBe('2026-03-02T12:00:00.000Z');
    expect(expiryFor('week', now)).toBe('2026-03-08T12:00:00.000Z');
    expect(expiryFor('never', now)).toBeUndefined();
  });

  it('offer no rule for a step whose agent is unnamed, that sets env, asks for the network or secrets, or is CRITICAL', () => {
    const agent = { origin: 'agent', client: 'a', agent: 'agent-A1' };
    expect(ruleChoicesForStep(waitingRecord({ argv: ['make', 'test'] }, agent), ['/ws']).map((choice) => choice.label)).toEqual([
      'make test',
      'make',
    ]);
    expect(ruleChoicesForStep(waitingRecord({ argv: ['make', 'test'] }, { origin: 'agent' }), ['/ws'])).toEqual([]);
    expect(ruleChoicesForStep(waitingRecord({ argv: ['make', 'test'] }, { origin: 'agent', client: 'a' }), ['/ws'])).toEqual([]);
    expect(ruleChoicesForStep(waitingRecord({ argv: ['make', 'test'], env: { LD_PRELOAD: '/tmp/x.so' } }, agent), ['/ws'])).toEqual([]);
    expect(ruleChoicesForStep(waitingRecord({ argv: ['make', 'test'], network: 'allowlist' }, agent), ['/ws'])).toEqual([]);
    expect(ruleChoicesForStep(waitingRecord({ argv: ['make', 'test'], allowSecrets: ['.env'] }, agent), ['/ws'])).toEqual([]);
    expect(ruleChoicesForStep(waitingRecord({ argv: ['make', 'test'], cwd: '../elsewhere' }, agent), ['/ws'])).toEqual([]);
    expect(ruleChoicesForStep(waitingRecord({ command: 'make test' }, agent), ['/ws'])).toEqual([]);
    expect(ruleChoicesForStep(waitingRecord({ argv: ['make', 'test'] }, agent, 'runCommand', 'CRITICAL'), ['/ws'])).toEqual([]);
    expect(ruleChoicesForStep(waitingRecord({ argv: ['make'], cwd: 'sub/' }, agent), ['/ws/'])[0]!.draft).toEqual({
      kind: 'command',
      prefix: ['make'],
      root: '/ws/sub',
      maxRisk: 'HIGH',
    });
  });
});
