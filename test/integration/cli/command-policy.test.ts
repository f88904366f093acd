import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

/** One line per step, as `executor propose --json` prints it. */
interface ProposedStep {
  stepId: string;
  status: string;
  risk: string;
  reasons: string[];
}

/** Proposes one plan through the real CLI, as a person would; the JSON lists every step's status and reasons. */
async function propose(dataDir: string, planId: string, steps: { id: string; args: Record<string, unknown> }[]): Promise<Map<string, ProposedStep>> {
  const planFile = path.join(tempDir(), `${planId}.json`);
  fs.writeFileSync(planFile, JSON.stringify({ planId, steps: steps.map((step) => ({ id: step.id, action: 'runCommand', args: step.args })) }));
  const proposed = await runCliAsync(['--data-dir', dataDir, 'propose', planFile, '--json'], { timeoutMs: 240_000 });
  return new Map(proposed.json<ProposedStep[]>().map((step) => [step.stepId, step]));
}

/** The examples: each must be denied (a named `rm`) or wait for the person (a program it cannot name). */
const EXAMPLES: { args: Record<string, unknown>; expected: 'denied' | 'awaiting_consent' }[] = [
  { args: { command: 'if true; then rm victim.txt; fi' }, expected: 'denied' },
  { args: { command: '{ rm victim.txt; }' }, expected: 'denied' },
  { args: { command: 'echo rm victim.txt | sh' }, expected: 'awaiting_consent' },
  { args: { command: '$(echo rm) victim.txt' }, expected: 'awaiting_consent' },
  { args: { command: "sh -c -- 'rm victim.txt'" }, expected: 'denied' },
  { args: { command: '/bin/r[m] victim.txt' }, expected: 'awaiting_consent' },
  { args: { command: 'exec -a y rm victim.txt' }, expected: 'denied' },
  { args: { command: 'rm${IFS}victim.txt' }, expected: 'awaiting_consent' },
  { args: { command: 'eval "rm victim.txt"' }, expected: 'denied' },
  { args: { command: "trap 'rm victim.txt' EXIT" }, expected: 'denied' },
  { args: { command: '. ./evil.sh' }, expected: 'awaiting_consent' },
  { args: { command: 'source ./evil.sh' }, expected: 'awaiting_consent' },
  { args: { command: "sh <<<'rm victim.txt'" }, expected: 'awaiting_consent' },
  { args: { command: "env -S 'rm victim.txt'" }, expected: 'denied' },
  { args: { command: 'X=rm; $X victim.txt' }, expected: 'awaiting_consent' },
  { args: { command: 'timeout 60 rm -rf victim.txt' }, expected: 'denied' },
  { args: { command: "busybox sh -c 'rm victim.txt'" }, expected: 'denied' },
  { args: { command: 'nice rm victim.txt' }, expected: 'denied' },
  { args: { argv: ['timeout', '60', 'rm', 'victim.txt'] }, expected: 'denied' },
  { args: { command: 'python3 -c "import os; os.remove(\'victim.txt\')"' }, expected: 'awaiting_consent' },
  { args: { command: 'ls', env: { PATH: '/workspace' } }, expected: 'awaiting_consent' },
];

describe.skipIf(!hasDocker)('the command policy end to end: real CLI, real Docker engine, real files', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('with commands.deny ["rm"] and autoApprove HIGH, every example is denied or waits for the person, and the victim file survives', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH', commands: { allow: [], deny: ['rm'] } });
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'still here\n');
    fs.writeFileSync(path.join(workspace, 'evil.sh'), 'rm victim.txt\n');
    // The control: a plain command is auto-approved and runs, so the policy really does auto-approve HIGH.
    const control = await propose(dataDir, 'control', [{ id: 'control', args: { command: 'echo ran > control.txt' } }]);
    expect(control.get('control')?.status).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'control.txt'), 'utf8')).toBe('ran\n');

    // Each step is weighed on its own when the plan is proposed. The ones that must wait come first: a
    // denied step earlier in a plan would itself send later auto-approved steps back to the person.
    const order = EXAMPLES.map((example, index) => ({ id: `example-${index}`, args: example.args, waits: example.expected === 'awaiting_consent' }));
    const proposed = await propose(dataDir, 'attacks', [...order.filter((step) => step.waits), ...order.filter((step) => !step.waits)]);
    EXAMPLES.forEach((example, index) => {
      const step = proposed.get(`example-${index}`)!;
      const label = JSON.stringify(example.args);
      expect(step.status, label).toBe(example.expected);
      if (example.expected === 'denied') expect(step.reasons.join(' '), label).toContain('which the policy denies (commands.deny: "rm")');
      else expect(step.reasons.join(' '), label).toMatch(/could run any program: .*The policy denies "rm"/);
    });
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');

    const shown = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', 'example-2']);
    expect(shown.stdout).toContain('could run any program: `sh` runs code from its input');
  }, 600_000);

  it('a remembered rule for a wrapper prefix never approves a wrapped command', async () => {
    const at = new Date().toISOString();
    const { dataDir, workspace } = tempSetup();
    const policyFile = path.join(dataDir, 'policy.json');
    const basePolicy = JSON.parse(fs.readFileSync(policyFile, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'still here\n');
    const wrappedSteps = [
      { id: 'timeout', args: { command: 'timeout 60 rm -rf victim.txt' } },
      { id: 'nice', args: { command: 'nice rm victim.txt' } },
      { id: 'piped', args: { command: 'echo rm victim.txt | sh' } },
      { id: 'argv', args: { argv: ['timeout', '60', 'rm', 'victim.txt'] } },
    ];

    // A wrapper rule cannot even be stored: a policy.json holding one (written by hand, or by an
    // older version) is refused at load, naming the word, and nothing is proposed or run.
    for (const prefix of [['timeout', '60'], ['nice']]) {
      const remembered = [{ id: 'wrapper', kind: 'command', prefix, root: workspace, maxRisk: 'HIGH', createdAt: at }];
      fs.writeFileSync(policyFile, JSON.stringify({ ...basePolicy, remembered }));
      const planFile = path.join(tempDir(), 'wrapped.json');
      fs.writeFileSync(planFile, JSON.stringify({ planId: 'wrapped', steps: wrappedSteps.map((step) => ({ ...step, action: 'runCommand' })) }));
      const refused = await runCliAsync(['--data-dir', dataDir, 'propose', planFile, '--json'], { timeoutMs: 240_000 });
      expect(refused.status, prefix.join(' ')).not.toBe(0);
      const error = refused.json<{ error: { code: string; message: string } }>().error;
      expect(error.code).toBe('POLICY_INVALID');
      expect(error.message).toContain(`A command rule cannot start with "${prefix[0]}"`);
      expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');
    }

    // A rule that may be stored (echo) covers its own command, and none of the wrapped ones.
    fs.writeFileSync(policyFile, JSON.stringify({ ...basePolicy, remembered: [{ id: 'echo', kind: 'command', prefix: ['echo'], root: workspace, maxRisk: 'HIGH', createdAt: at }] }));
    const covered = await propose(dataDir, 'covered', [{ id: 'covered', args: { command: 'echo covered > covered.txt' } }]);
    expect(covered.get('covered')?.status).toBe('executed');
    const wrapped = await propose(dataDir, 'wrapped', wrappedSteps);
    expect([...wrapped.values()].map((step) => [step.stepId, step.status])).toEqual([
      ['timeout', 'awaiting_consent'],
      ['nice', 'awaiting_consent'],
      ['piped', 'awaiting_consent'],
      ['argv', 'awaiting_consent'],
    ]);
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');
  }, 600_000);
});
