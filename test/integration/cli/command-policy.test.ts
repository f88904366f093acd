import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxImageTag } from '../../../src/sandbox/docker/sandbox-image.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { BUSYBOX_APPLETS, IMAGE_PROGRAMS } from '../../helpers/program-classes.js';
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
async function propose(
  dataDir: string,
  planId: string,
  steps: { id: string; args: Record<string, unknown> }[],
): Promise<Map<string, ProposedStep>> {
  const planFile = path.join(tempDir(), `${planId}.json`);
  fs.writeFileSync(
    planFile,
    JSON.stringify({ planId, steps: steps.map((step) => ({ id: step.id, action: 'runCommand', args: step.args })) }),
  );
  const proposed = await runCliAsync(['--data-dir', dataDir, 'propose', planFile, '--json'], { timeoutMs: 240_000 });
  if (!Array.isArray(proposed.json())) throw new Error(`propose answered ${proposed.stdout} ${proposed.stderr}`);
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
  // Review 2, finding 1: busybox programs that start another program.
  { args: { command: 'linux32 rm victim.txt' }, expected: 'denied' },
  { args: { command: 'linux64 rm victim.txt' }, expected: 'denied' },
  { args: { command: 'cttyhack rm victim.txt' }, expected: 'denied' },
  { args: { command: 'setarch linux32 rm victim.txt' }, expected: 'denied' },
  { args: { command: 'nc -f other.txt -e rm victim.txt' }, expected: 'awaiting_consent' },
  { args: { command: "printf 'all:\\n\\trm victim.txt\\n' > m && mim -f m all" }, expected: 'awaiting_consent' },
  { args: { command: 'mkdir -p hooks && cp evil.sh hooks/a && chmod +x hooks/a && run-parts hooks' }, expected: 'awaiting_consent' },
  { args: { argv: ['linux32', 'rm', 'victim.txt'] }, expected: 'denied' },
  // Review 2, finding 2: PATH written without a plain `PATH=`.
  {
    args: { command: "printf '#!/bin/rm\\n' > lint && chmod +x lint && for PATH in .; do lint victim.txt; done" },
    expected: 'awaiting_consent',
  },
  {
    args: { command: "mkdir 0 && printf '#!/bin/rm\\n' > 0/lint && chmod +x 0/lint && : $((PATH=0)) && lint victim.txt" },
    expected: 'awaiting_consent',
  },
  {
    args: { command: "printf '#!/bin/rm\\n' > lint && chmod +x lint && export 'PATH=.' && lint victim.txt" },
    expected: 'awaiting_consent',
  },
  {
    args: { command: "printf '#!/bin/rm\\n' > lint && chmod +x lint && x=PATH; export $x=. && lint victim.txt" },
    expected: 'awaiting_consent',
  },
  {
    args: { command: "printf '#!/bin/rm\\n' > lint && chmod +x lint && x=PATH=. && : $((x)) && lint victim.txt" },
    expected: 'awaiting_consent',
  },
  {
    args: { command: "printf '#!/bin/rm\\n' > lint && chmod +x lint && : ${PATH:=.} && read PATH <<< . && lint victim.txt" },
    expected: 'awaiting_consent',
  },
  // Review 2, finding 3: `-v` after the program is the program's own option.
  { args: { command: 'command rm -v victim.txt' }, expected: 'denied' },
  { args: { command: "echo 'rm victim.txt' | sh -v" }, expected: 'awaiting_consent' },
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
    const order = EXAMPLES.map((example, index) => ({
      id: `example-${index}`,
      args: example.args,
      waits: example.expected === 'awaiting_consent',
    }));
    const proposed = await propose(dataDir, 'attacks', [...order.filter((step) => step.waits), ...order.filter((step) => !step.waits)]);
    EXAMPLES.forEach((example, index) => {
      const step = proposed.get(`example-${index}`)!;
      const label = JSON.stringify(example.args);
      expect(step.status, label).toBe(example.expected);
      if (example.expected === 'denied') expect(step.reasons.join(' '), label).toContain('which the policy denies (commands.deny: "rm")');
      else expect(step.reasons.join(' '), label).toMatch(/could run any program: [^`]*The policy denies "rm"/);
    });
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');

    const shown = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', 'example-2']);
    expect(shown.stdout).toMatch(
      /reason: +This command could run any program: [^`\n]*it runs code that is not shown here[^`\n]*\n +in detail: [^\n]*`sh` runs code from its input/,
    );
  }, 600_000);

  it('with commands.allow naming only harmless programs and some program starters, no line runs rm', async () => {
    const { dataDir, workspace } = tempSetup({
      autoApprove: 'HIGH',
      commands: { allow: ['ls', 'cat', 'nc', 'linux64', 'command', 'printf', 'chmod'], deny: [] },
    });
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'still here\n');
    const proposed = await propose(dataDir, 'allowed', [
      { id: 'linux64', args: { command: 'linux64 rm victim.txt' } },
      { id: 'nc', args: { command: 'nc -f victim.txt -e rm victim.txt' } },
      { id: 'command', args: { command: 'command rm -v victim.txt' } },
      { id: 'path', args: { command: "printf '#!/bin/rm\\n' > ls && chmod +x ls && for PATH in .; do ls victim.txt; done" } },
    ]);
    for (const step of proposed.values()) expect([step.stepId, step.status]).toEqual([step.stepId, 'denied']);
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');
  }, 600_000);

  it('every busybox applet and program of the real sandbox image is classified', () => {
    const listed = spawnSync(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        'none',
        '--entrypoint',
        '/bin/sh',
        sandboxImageTag(),
        '-c',
        'busybox --list; for d in /bin /usr/bin /sbin /usr/sbin /usr/local/bin /usr/local/sbin; do ls "$d" 2>/dev/null; done; true',
      ],
      {
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(listed.status, listed.stderr).toBe(0);
    const names = [...new Set(listed.stdout.split('\n').filter(Boolean))];
    expect(names).toContain('linux32');
    const known = new Set([...BUSYBOX_APPLETS, ...IMAGE_PROGRAMS]);
    expect(names.filter((name) => !known.has(name))).toEqual([]);
  }, 180_000);

  it('a remembered rule for a wrapper prefix never approves a wrapped command', async () => {
    const at = new Date().toISOString();
    const { dataDir, workspace } = tempSetup();
    const policyFile = path.join(dataDir, 'policy.json');
    const base = JSON.parse(fs.readFileSync(policyFile, 'utf8'));
    // A policy file that carries a rule for a program starter is refused as a whole, with the reason.
    for (const prefix of [['timeout', '60'], ['nice'], ['linux32'], ['busybox', 'linux64']]) {
      fs.writeFileSync(
        policyFile,
        JSON.stringify({
          ...base,
          remembered: [{ id: 'starter', kind: 'command', prefix, root: workspace, maxRisk: 'HIGH', createdAt: at }],
        }),
      );
      const refused = await runCliAsync(['--data-dir', dataDir, 'steps', 'list']);
      expect(refused.stdout + refused.stderr, prefix.join(' ')).toContain(`A command rule cannot start with "${prefix[0]}"`);
    }
    const remembered = [
      { id: 'echo', kind: 'command', prefix: ['echo'], root: workspace, maxRisk: 'HIGH', createdAt: at },
      { id: 'ls', kind: 'command', prefix: ['ls'], root: workspace, maxRisk: 'HIGH', createdAt: at },
    ];
    fs.writeFileSync(policyFile, JSON.stringify({ ...base, remembered }));
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'still here\n');
    const covered = await propose(dataDir, 'covered', [{ id: 'covered', args: { command: 'echo covered; echo twice' } }]);
    expect(covered.get('covered')?.status).toBe('executed');
    // The rule covered both commands of the line; the person is told once.
    const shown = await runCliAsync(['--data-dir', dataDir, 'steps', 'show', 'covered']);
    expect(shown.stdout.split('\n').filter((text) => text.includes('Approved without asking by remembered rule echo'))).toHaveLength(1);
    const wrapped = await propose(dataDir, 'wrapped', [
      { id: 'timeout', args: { command: 'timeout 60 rm -rf victim.txt' } },
      { id: 'nice', args: { command: 'nice rm victim.txt' } },
      { id: 'piped', args: { command: 'echo rm victim.txt | sh' } },
      { id: 'argv', args: { argv: ['timeout', '60', 'rm', 'victim.txt'] } },
      { id: 'redirect', args: { command: 'ls > victim.txt' } },
      { id: 'appended', args: { command: 'echo gone >> victim.txt' } },
    ]);
    expect([...wrapped.values()].map((step) => [step.stepId, step.status])).toEqual([
      ['timeout', 'awaiting_consent'],
      ['nice', 'awaiting_consent'],
      ['piped', 'awaiting_consent'],
      ['argv', 'awaiting_consent'],
      ['redirect', 'awaiting_consent'],
      ['appended', 'awaiting_consent'],
    ]);
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');
  }, 600_000);
});
