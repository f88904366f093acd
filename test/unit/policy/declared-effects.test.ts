import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { loadShellParser } from '../../../src/policy/shell-parser.js';
import { openExecutor } from '../../helpers/open-executor.js';

const agent = actorFor('mcp', 'test-agent');
const limits = { agentLimits: { openSteps: 1000, stepsPerMinute: 1000 } };

// evaluateStep is synchronous: a command line is only read once the parser is loaded.
beforeAll(async () => {
  await loadShellParser();
});

function setup(policy: Record<string, unknown> = {}) {
  const opened = openExecutor({ autoApprove: 'HIGH', ...limits, ...policy });
  fs.writeFileSync(path.join(opened.workspace, '.env'), 'TOKEN=1\n');
  fs.mkdirSync(path.join(opened.workspace, '.git'));
  fs.writeFileSync(path.join(opened.workspace, '.git/config'), '[core]\n');
  fs.mkdirSync(path.join(opened.workspace, 'sub'));
  return opened;
}

describe('a step property the effects ask list names always asks, whatever autoApprove says', () => {
  it('a command naming allowSecrets asks under autoApprove HIGH (`secret` is on the default ask list), also from a cwd', () => {
    const { executor } = setup();
    for (const args of [
      { command: 'cat .env', allowSecrets: ['.env'] },
      { argv: ['cat', '../.env'], cwd: 'sub', allowSecrets: ['../.env'] },
    ]) {
      const evaluation = executor.evaluateStep({ id: 's', planId: 'p', action: 'runCommand', args, meta: { origin: 'agent' } });
      expect(evaluation.consent, JSON.stringify(args)).toBe('confirm');
      expect(evaluation.reasons.join(' ')).toMatch(/read and change secret-looking files \(\.env\).*commands\.effects\.ask/);
    }
    // The same command without allowSecrets is auto-approved at HIGH: only the property sends it to the person.
    const plain = executor.evaluateStep({
      id: 's',
      planId: 'p',
      action: 'runCommand',
      args: { command: 'cat notes.txt' },
      meta: { origin: 'agent' },
    });
    expect(plain.consent).toBe('none');
  });

  it('allowSecrets inside .git is a git effect as well', () => {
    const { executor } = setup({ commands: { effects: { ask: ['git'] } } });
    const evaluation = executor.evaluateStep({
      id: 's',
      planId: 'p',
      action: 'runCommand',
      args: { command: 'cat .git/config', allowSecrets: ['.git/config'] },
      meta: { origin: 'agent' },
    });
    expect(evaluation.consent).toBe('confirm');
    expect(evaluation.reasons.join(' ')).toMatch(/change \.git\/config, inside a \.git directory.*"git"/);
  });

  it('writes and deletes of secret, .git and host-code files ask under autoApprove HIGH; plain files do not', async () => {
    const { executor } = setup();
    const asked = [
      { action: 'writeFile', args: { path: '.env', content: 'x\n' } },
      { action: 'writeFile', args: { path: 'sub/../.kube/config', content: 'x\n' } },
      { action: 'writeFile', args: { path: '.bashrc', content: 'x\n' } },
      { action: 'deleteFile', args: { path: '.git/config' } },
    ];
    for (const step of asked) {
      const [record] = await executor.propose({ steps: [step] }, agent);
      expect(record!.status, JSON.stringify(step)).toBe('awaiting_consent');
      expect(record!.evaluation?.reasons.join(' ')).toContain('commands.effects.ask');
    }
    const [plain] = await executor.propose({ steps: [{ action: 'writeFile', args: { path: 'notes.txt', content: 'x\n' } }] }, agent);
    await expect.poll(() => executor.getStep(plain!.step.id).status).toBe('executed');
  });

  it('an ask list without the kind leaves the choice to autoApprove', () => {
    const { executor } = setup({ commands: { effects: { ask: [] } } });
    const evaluation = executor.evaluateStep({
      id: 's',
      planId: 'p',
      action: 'runCommand',
      args: { command: 'cat .env', allowSecrets: ['.env'] },
      meta: { origin: 'agent' },
    });
    expect(evaluation.consent).toBe('none');
  });

  it('a delete asks when the policy names `delete`', async () => {
    const { executor, workspace } = setup({ commands: { effects: { ask: ['delete'] } } });
    fs.writeFileSync(path.join(workspace, 'old.txt'), 'x\n');
    const [record] = await executor.propose({ steps: [{ action: 'deleteFile', args: { path: 'old.txt' } }] }, agent);
    expect(record!.status).toBe('awaiting_consent');
    expect(fs.existsSync(path.join(workspace, 'old.txt'))).toBe(true);
  });
});
