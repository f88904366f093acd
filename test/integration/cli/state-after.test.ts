import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { runCliAsync } from '../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

interface ProposedStep {
  stepId: string;
  status: string;
  risk: string;
  reasons: string[];
}

async function propose(dataDir: string, plan: Record<string, unknown>): Promise<Map<string, ProposedStep>> {
  const planFile = path.join(tempDir(), 'plan.json');
  fs.writeFileSync(planFile, JSON.stringify(plan));
  const proposed = await runCliAsync(['--data-dir', dataDir, 'propose', planFile, '--json'], { timeoutMs: 240_000 });
  if (!Array.isArray(proposed.json())) throw new Error(`propose answered ${proposed.stdout} ${proposed.stderr}`);
  return new Map(proposed.json<ProposedStep[]>().map((step) => [step.stepId, step]));
}

const FSMONITOR_CONFIG = '[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = "touch pwned"\n';

/** The four files that make `vendor/` a bare repository whose config Git obeys on the next `git status` there. */
const GIT_DIR_FILES: [string, string][] = [
  ['vendor/HEAD', 'ref: refs/heads/main\n'],
  ['vendor/objects/info/packs', '\n'],
  ['vendor/refs/heads/main', '\n'],
  ['vendor/config', FSMONITOR_CONFIG],
];

describe('a change is judged by the tree it leaves, through the real CLI', () => {
  it('four writeFile steps of one plan that assemble a git directory each wait with a git reason, under autoApprove HIGH and MEDIUM', async () => {
    for (const autoApprove of ['MEDIUM', 'HIGH']) {
      const { dataDir, workspace } = tempSetup({ autoApprove });
      const steps = GIT_DIR_FILES.map(([file, content], index) => ({
        id: `w${index}`,
        action: 'writeFile',
        args: { path: file, content },
      }));
      // The control: an ordinary write in the same policy runs without asking.
      const control = await propose(dataDir, {
        steps: [{ id: 'control', action: 'writeFile', args: { path: 'vendor/notes.txt', content: 'x' } }],
      });
      expect(control.get('control')?.status, autoApprove).toBe('executed');
      const proposed = await propose(dataDir, { purpose: 'vendor a library', steps });
      for (const [index, [file]] of GIT_DIR_FILES.entries()) {
        const step = proposed.get(`w${index}`)!;
        expect(step.status, `${autoApprove} ${file}`).toBe('awaiting_consent');
        expect(step.risk, file).toBe('HIGH');
        expect(step.reasons.join(' '), file).toMatch(/vendor, a git directory once this change is made/);
        expect(step.reasons.join(' '), file).toMatch(/commands\.effects\.ask/);
      }
      expect(fs.existsSync(path.join(workspace, 'vendor', 'HEAD')), autoApprove).toBe(false);
      expect(fs.existsSync(path.join(workspace, 'vendor', 'config')), autoApprove).toBe(false);
    }
  }, 240_000);

  it('a write that completes a git directory begun on disk is weighed as one, and the config it makes Git obey counts', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    fs.mkdirSync(path.join(workspace, 'lib', 'objects'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'lib', 'HEAD'), 'ref: refs/heads/main\n');
    fs.writeFileSync(path.join(workspace, 'lib', 'config'), FSMONITOR_CONFIG);
    const proposed = await propose(dataDir, {
      steps: [{ id: 'refs', action: 'writeFile', args: { path: 'lib/refs/heads/main', content: '\n' } }],
    });
    expect(proposed.get('refs')?.status).toBe('awaiting_consent');
    expect(proposed.get('refs')?.reasons.join(' ')).toMatch(/lib, a git directory once this change is made/);
    expect(fs.existsSync(path.join(workspace, 'lib', 'refs'))).toBe(false);
  }, 120_000);

  describe.skipIf(!hasDocker)('with the real Docker sandbox', () => {
    beforeAll(async () => {
      await ensureSandboxImage();
    }, 300_000);

    it('one command that creates vendor/HEAD, objects/, refs/ and a config with core.fsmonitor asks with a git reason under autoApprove HIGH, and nothing lands', async () => {
      const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
      const control = await propose(dataDir, {
        steps: [{ id: 'control', action: 'runCommand', args: { command: 'echo ran > control.txt' } }],
      });
      expect(control.get('control')?.status).toBe('executed');
      const command = [
        'mkdir -p vendor/objects/info vendor/refs/heads',
        "printf 'ref: refs/heads/main\\n' > vendor/HEAD",
        `printf '[core]\\n\\tbare = true\\n\\tfsmonitor = "touch pwned"\\n' > vendor/config`,
        'touch vendor/objects/info/packs vendor/refs/heads/main',
      ].join(' && ');
      const proposed = await propose(dataDir, { steps: [{ id: 'bare', action: 'runCommand', args: { command } }] });
      const step = proposed.get('bare')!;
      expect(step.status).toBe('awaiting_consent');
      const reasons = step.reasons.join(' ');
      expect(reasons).toMatch(/vendor\/config.*in a git directory/);
      expect(reasons).toMatch(/commands\.effects\.ask/);
      expect(reasons).toContain('needs your consent');
      expect(fs.existsSync(path.join(workspace, 'vendor'))).toBe(false);

      // The same directory, split: HEAD and config on disk already, the command adds objects/ and refs/.
      fs.mkdirSync(path.join(workspace, 'lib'));
      fs.writeFileSync(path.join(workspace, 'lib', 'HEAD'), 'ref: refs/heads/main\n');
      fs.writeFileSync(path.join(workspace, 'lib', 'config'), FSMONITOR_CONFIG);
      const split = await propose(dataDir, {
        steps: [
          {
            id: 'split',
            action: 'runCommand',
            args: { command: 'mkdir -p lib/objects/x lib/refs/heads && touch lib/objects/x/y lib/refs/heads/main' },
          },
        ],
      });
      expect(split.get('split')?.status).toBe('awaiting_consent');
      expect(split.get('split')?.reasons.join(' ')).toMatch(/lib, a git directory once this change is made/);
      expect(fs.existsSync(path.join(workspace, 'lib', 'refs'))).toBe(false);
    }, 600_000);
  });
});
