import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ActionContext } from '../../../src/actions/action-module.js';
import { runCommand } from '../../../src/actions/run-command.js';
import { BlobStore } from '../../../src/backup/blob-store.js';
import { StepSchema } from '../../../src/domain/step.js';
import { evaluateStep } from '../../../src/policy/evaluate-step.js';
import { PolicySchema } from '../../../src/policy/policy-file.js';
import { loadShellParser } from '../../../src/policy/shell-parser.js';
import type { KbRepository } from '../../../src/store/kb-repository.js';
import { tempDir } from '../../helpers/temp-dirs.js';

const step = (args: unknown) => StepSchema.safeParse({ id: 's', planId: 'p', action: 'runCommand', args, meta: { origin: 'agent' } });

function context(policy: Record<string, unknown>): ActionContext {
  const dataDir = tempDir();
  // assess never touches the knowledge base, the light sandbox or the capability audit; the context type needs them.
  return {
    stepId: 's',
    policy: PolicySchema.parse(policy),
    dataDir,
    blobs: new BlobStore(path.join(dataDir, 'blobs')),
    kb: {} as KbRepository,
    lightSandbox: {} as ActionContext['lightSandbox'],
    auditCapabilityCall: () => {
      throw new Error('not used by assess');
    },
  };
}

beforeAll(async () => {
  await loadShellParser();
});

describe('runCommand arguments', () => {
  it('takes exactly one of argv or command', () => {
    expect(step({ argv: ['ls'] }).success).toBe(true);
    expect(step({ command: 'ls | wc -l' }).success).toBe(true);
    expect(step({}).success).toBe(false);
    expect(step({ argv: ['ls'], command: 'ls' }).success).toBe(false);
    expect(step({ argv: [] }).success).toBe(false);
  });

  it('refuses unknown fields, bad network modes and odd env names', () => {
    expect(step({ command: 'ls', privileged: true }).success).toBe(false);
    expect(step({ command: 'ls', network: 'host' }).success).toBe(false);
    expect(step({ command: 'ls', env: { 'A=B': 'x' } }).success).toBe(false);
    expect(step({ command: 'ls', env: { NODE_ENV: 'test' }, network: 'allowlist', timeoutMs: 5000, cwd: 'sub' }).success).toBe(true);
  });
});

describe('runCommand.assess', () => {
  it('rates a command HIGH and names every program it starts', () => {
    const workspace = tempDir();
    const hints = runCommand.assess({ command: 'npm test && tsc -p . | tee out' }, context({ workspaceRoots: [workspace] }));
    expect(hints.risk).toBe('HIGH');
    expect(hints.deny).toBeUndefined();
    expect(hints.reasons[0]).toContain('(programs: npm, tsc, tee)');
  });

  it('denies a command whose pipeline runs a denied program', () => {
    const workspace = tempDir();
    const hints = runCommand.assess({ command: 'ls | rm -rf /' }, context({ workspaceRoots: [workspace], commands: { deny: ['rm'] } }));
    expect(hints).toMatchObject({ risk: 'CRITICAL', deny: true });
    expect(hints.reasons[0]).toContain('"rm"');
  });

  it('sends a command that could run any program to the person when a deny list is in force, with the reason in words', () => {
    const workspace = tempDir();
    const ctx = context({ workspaceRoots: [workspace], commands: { deny: ['rm'] }, autoApprove: 'HIGH' });
    for (const args of [
      { command: 'echo rm x | sh' },
      { command: 'X=rm; $X x' },
      { command: '/bin/r[m] x' },
      { argv: ['sh', '-c', 'echo hi'] },
      { command: 'ls', env: { PATH: '/w' } },
    ]) {
      const hints = runCommand.assess(args, ctx);
      expect(hints.deny, JSON.stringify(args)).toBeUndefined();
      expect(hints.mustAsk?.[0], JSON.stringify(args)).toMatch(
        /^This command could run any program: [^`]+\. The policy denies "rm".+ In detail: /,
      );
      expect(evaluateStep(hints, ctx.policy, true).consent).toBe('confirm');
    }
    expect(runCommand.assess({ command: 'echo rm x | sh' }, ctx).mustAsk?.[0]).toContain('`sh` runs code from its input');
  });

  it('denies outright a wrapped or nested program the deny list names', () => {
    const workspace = tempDir();
    const ctx = context({ workspaceRoots: [workspace], commands: { deny: ['rm'] }, autoApprove: 'HIGH' });
    for (const command of ['timeout 60 rm -rf .', "sh -c -- 'rm x'", 'exec -a y rm x', 'nice rm x', "busybox sh -c 'rm x'"]) {
      expect(runCommand.assess({ command }, ctx), command).toMatchObject({ risk: 'CRITICAL', deny: true });
    }
    expect(runCommand.assess({ argv: ['timeout', '5', 'rm', 'x'] }, ctx)).toMatchObject({ deny: true });
  });

  it('without any command list, says a command could run any program but leaves consent to autoApprove', () => {
    const workspace = tempDir();
    const hints = runCommand.assess({ command: 'timeout 5 make' }, context({ workspaceRoots: [workspace] }));
    expect(hints.mustAsk).toBeUndefined();
    expect(hints.reasons.join(' ')).toMatch(
      /could run any program: it starts programs named in its arguments\. In detail: `timeout` starts the program `make`/,
    );
  });

  it('always asks about a line the parser cannot read', () => {
    const workspace = tempDir();
    const hints = runCommand.assess(
      { command: 'cat <<EOF; rm x\nbody\nEOF' },
      context({ workspaceRoots: [workspace], autoApprove: 'HIGH' }),
    );
    expect(hints.mustAsk?.[0]).toContain('cannot read');
  });

  it('denies a cwd outside every workspace root, and any command when no root is set', () => {
    const workspace = tempDir();
    const outside = tempDir();
    expect(runCommand.assess({ command: 'ls', cwd: outside }, context({ workspaceRoots: [workspace] }))).toMatchObject({ deny: true });
    expect(runCommand.assess({ command: 'ls' }, context({}))).toMatchObject({
      deny: true,
      reasons: [expect.stringContaining('No workspace root')],
    });
  });

  it('accepts a cwd inside the root and says which hosts an allowlisted run may reach', () => {
    const workspace = tempDir();
    fs.mkdirSync(path.join(workspace, 'web'));
    const hints = runCommand.assess(
      { command: 'npm ci', cwd: 'web', network: 'allowlist' },
      context({ workspaceRoots: [workspace], network: { allowHosts: ['registry.npmjs.org'] } }),
    );
    expect(hints.deny).toBeUndefined();
    expect(hints.reasons.join(' ')).toContain('web in');
    expect(hints.reasons.join(' ')).toContain('May reach only registry.npmjs.org');
  });
});
