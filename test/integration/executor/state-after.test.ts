import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { openExecutor } from '../../helpers/open-executor.js';

const PERSON = actorFor('cli');

describe('an approval is weighed again on the tree as it is when the step runs', () => {
  it('a write the policy approved as ordinary goes back to the person when other writes made its folder a git directory meanwhile', async () => {
    const { executor, workspace } = openExecutor({ autoApprove: 'MEDIUM', lightSandbox: { warmWorkers: 0 } });
    const [submitted] = await executor.submit(
      { planId: 'late', steps: [{ id: 'refs', action: 'writeFile', args: { path: 'vendor/refs/heads/main', content: '\n' } }] },
      PERSON,
    );
    // Weighed on the disk of its time: nothing there yet, so an ordinary write the policy approves.
    expect(submitted!.evaluation?.risk).toBe('MEDIUM');
    expect(submitted!.evaluation?.consent).toBe('none');
    // Meanwhile other plans' writes land: HEAD, objects/ and a config with core.fsmonitor.
    fs.mkdirSync(path.join(workspace, 'vendor', 'objects', 'info'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'vendor', 'HEAD'), 'ref: refs/heads/main\n');
    fs.writeFileSync(path.join(workspace, 'vendor', 'objects', 'info', 'packs'), '\n');
    fs.writeFileSync(path.join(workspace, 'vendor', 'config'), '[core]\n\tfsmonitor = "touch pwned"\n');
    await executor.preparePlan('late', PERSON);
    const record = executor.getStep('refs');
    expect(record.status).toBe('awaiting_consent');
    expect(record.evaluation?.risk).toBe('HIGH');
    expect(record.evaluation?.reasons.join(' ')).toMatch(/vendor, a git directory once this change is made/);
    expect(fs.existsSync(path.join(workspace, 'vendor', 'refs'))).toBe(false);
  });

  it('the control: with nothing changed meanwhile, the same write runs on the policy approval', async () => {
    const { executor, workspace } = openExecutor({ autoApprove: 'MEDIUM', lightSandbox: { warmWorkers: 0 } });
    await executor.propose(
      { planId: 'p', steps: [{ id: 'refs', action: 'writeFile', args: { path: 'vendor/refs/heads/main', content: '\n' } }] },
      PERSON,
    );
    expect(executor.getStep('refs').status).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'vendor', 'refs', 'heads', 'main'), 'utf8')).toBe('\n');
  });
});
