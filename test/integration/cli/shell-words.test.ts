import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxImageTag } from '../../../src/sandbox/docker/sandbox-image.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

interface ProposedStep {
  stepId: string;
  status: string;
  reasons: string[];
}

async function propose(dataDir: string, planId: string, steps: { id: string; command: string }[]): Promise<Map<string, ProposedStep>> {
  const planFile = path.join(tempDir(), `${planId}.json`);
  fs.writeFileSync(
    planFile,
    JSON.stringify({ planId, steps: steps.map((step) => ({ id: step.id, action: 'runCommand', args: { command: step.command } })) }),
  );
  const proposed = await runCliAsync(['--data-dir', dataDir, 'propose', planFile, '--json'], { timeoutMs: 240_000 });
  if (!Array.isArray(proposed.json())) throw new Error(`propose answered ${proposed.stdout} ${proposed.stderr}`);
  return new Map(proposed.json<ProposedStep[]>().map((step) => [step.stepId, step]));
}

/**
 * Issue 23 §1: words the policy read one way and the sandbox's shell (busybox ash) ran another.
 * Each line below deletes victim.txt in the real sandbox if it runs; none may run unasked.
 */
const HIDDEN: { id: string; command: string; expected: 'denied' | 'awaiting_consent' }[] = [
  { id: 'nul', command: "r$'\\0'm victim.txt", expected: 'denied' },
  { id: 'hex-nul', command: "r$'\\x00'm victim.txt", expected: 'denied' },
  { id: 'sh-nul', command: "s$'\\0'h -c 'rm victim.txt'", expected: 'denied' },
  { id: 'busybox-nul', command: "busy$'\\0'box rm victim.txt", expected: 'denied' },
  { id: 'eval-nul', command: "e$'\\0'val 'rm victim.txt'", expected: 'denied' },
  { id: 'env-short', command: "env --s='rm victim.txt'", expected: 'denied' },
  { id: 'env-long', command: "env --split-string='rm victim.txt'", expected: 'denied' },
  { id: 'env-bundle', command: "env -iS'rm victim.txt'", expected: 'denied' },
  { id: 'misread-end', command: "echo $'a\\\\'b ; rm victim.txt ; #'", expected: 'awaiting_consent' },
  {
    id: 'path',
    command: "printf '#!/bin/rm\\n' > lint && chmod +x lint && export PA$'\\0'TH=. && lint victim.txt",
    expected: 'awaiting_consent',
  },
];

describe.skipIf(!hasDocker)('words the shell runs, end to end: real CLI, real Docker engine, real files', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('with commands.deny ["rm","curl"] and autoApprove HIGH, no hidden rm runs and the victim file survives', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH', commands: { allow: [], deny: ['rm', 'curl'] } });
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'still here\n');
    // The control: a plain line is auto-approved and runs, so the policy really does auto-approve HIGH.
    const control = await propose(dataDir, 'control', [{ id: 'control', command: 'echo ran > control.txt' }]);
    expect(control.get('control')?.status).toBe('executed');

    // Waiting steps first: a denied step earlier in a plan would itself hold later steps.
    const ordered = [...HIDDEN.filter((step) => step.expected !== 'denied'), ...HIDDEN.filter((step) => step.expected === 'denied')];
    const proposed = await propose(dataDir, 'hidden', ordered);
    for (const step of HIDDEN) {
      const got = proposed.get(step.id)!;
      expect(got.status, step.command).toBe(step.expected);
      if (step.expected === 'denied')
        expect(got.reasons.join(' '), step.command).toContain('which the policy denies (commands.deny: "rm")');
    }
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');
  }, 600_000);

  it('grammar the image shell reads otherwise: ((…)) as subshells, words after a redirection as arguments, &> in dash', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH', commands: { allow: [], deny: ['rm', 'curl'] } });
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'still here\n');
    fs.writeFileSync(path.join(workspace, 'payload'), 'rm victim.txt\n');
    const proposed = await propose(dataDir, 'grammar', [
      { id: 'subshell-stdin', command: 'true; ((sh<payload))' },
      { id: 'descriptor-as-program', command: '0<payload sh' },
      { id: 'subshell-rm', command: 'true; ((rm<victim))' },
      { id: 'after-redirect', command: 'env >/dev/null rm victim.txt' },
      { id: 'find-after-redirect', command: 'find . >/dev/null -name victim.txt -exec rm {} +' },
      { id: 'dash-background', command: 'echo hi &>/dev/null rm victim.txt' },
    ]);
    expect(proposed.get('subshell-stdin')?.status).toBe('awaiting_consent');
    expect(proposed.get('subshell-stdin')?.reasons.join(' ')).toContain('busybox ash and dash run what stands inside it');
    expect(proposed.get('descriptor-as-program')?.status).toBe('awaiting_consent');
    expect(proposed.get('descriptor-as-program')?.reasons.join(' ')).toContain('the file descriptor `0`');
    for (const id of ['subshell-rm', 'after-redirect', 'find-after-redirect', 'dash-background']) {
      expect(proposed.get(id)?.status, id).toBe('denied');
      expect(proposed.get(id)?.reasons.join(' '), id).toContain('which the policy denies (commands.deny: "rm")');
    }
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');
  }, 600_000);

  it("the sandbox image's own shell runs ((sh<payload)) as a subshell: the hole is real there", () => {
    const read = spawnSync(
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
        "echo 'echo ran-inside' > /tmp/p; true; ((sh</tmp/p))",
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(read.stdout).toBe('ran-inside\n');
  }, 180_000);

  it('a denied name handed to a program no table knows asks, through the real CLI, and the victim survives', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH', commands: { allow: [], deny: ['rm', 'curl'] } });
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'still here\n');
    // An image built from a Dockerfile may hold any of these; the analysis cannot know what each runs.
    const proposed = await propose(dataDir, 'unknown-wrappers', [
      { id: 'gosu', command: 'gosu root rm victim.txt' },
      { id: 'cgexec', command: 'cgexec -g cpu:x rm victim.txt' },
      { id: 'pee', command: "pee 'rm victim.txt'" },
      { id: 'novel', command: 'some-runner --exec=rm victim.txt' },
    ]);
    expect(proposed.get('gosu')?.status).toBe('denied');
    for (const id of ['cgexec', 'pee', 'novel']) {
      expect(proposed.get(id)?.status, id).toBe('awaiting_consent');
      expect(proposed.get(id)?.reasons.join(' '), id).toContain('a program the policy denies');
    }
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');
  }, 600_000);

  it("the sandbox image's own shell reads r$'\\0'm as rm: the hole is real there", () => {
    const read = spawnSync(
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
        "printf '%s|' r$'\\0'm $'r\\x00m' e$'\\0'val",
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(read.status, read.stderr).toBe(0);
    expect(read.stdout).toBe('rm|rm|eval|');
  }, 180_000);

  it('with no lists at all, a line the shells read as different programs still asks under autoApprove HIGH', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    fs.writeFileSync(path.join(workspace, 'victim.txt'), 'still here\n');
    const plain = await propose(dataDir, 'plain', [{ id: 'plain', command: 'echo ran > plain.txt' }]);
    expect(plain.get('plain')?.status).toBe('executed');
    const proposed = await propose(dataDir, 'nolists', [{ id: 'nul', command: "r$'\\0'm victim.txt" }]);
    expect(proposed.get('nul')?.status).toBe('awaiting_consent');
    expect(proposed.get('nul')?.reasons.join(' ')).toContain('the shells read');
    expect(fs.readFileSync(path.join(workspace, 'victim.txt'), 'utf8')).toBe('still here\n');
  }, 600_000);
});
