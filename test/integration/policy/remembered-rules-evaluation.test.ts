import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

describe('remembered rules when a step is evaluated', () => {
  it('run a covered MEDIUM write without asking, and still ask for a secret file and for a file outside the glob', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.mkdirSync(path.join(workspace, 'src'));
    const executor = closeAfter(Executor.open(dataDir));
    const person = actorFor('window');
    executor.setPolicy(
      {
        ...executor.getPolicy(),
        remembered: [
          {
            id: 'r1',
            kind: 'file',
            root: workspace,
            glob: 'src/**',
            maxRisk: 'MEDIUM',
            createdAt: new Date().toISOString(),
            proposer: { kind: 'agent', agentId: 'agent-1' },
          },
        ],
      },
      person,
    );

    const records = await executor.propose(
      {
        planId: 'p1',
        steps: [
          { id: 'covered', action: 'writeFile', args: { path: path.join(workspace, 'src', 'a.ts'), content: 'export {};\n' } },
          { id: 'secret', action: 'writeFile', args: { path: path.join(workspace, 'src', '.env'), content: 'TOKEN=1\n' } },
        ],
      },
      { ...actorFor('mcp', 'agent 1'), agent: 'agent-1' },
    );
    // An agent's step ids are the host's; the plan's order tells the steps apart.
    const [covered, secret] = records;
    expect(covered!.status).toBe('executed');
    expect(covered!.evaluation!.mitigations.join(' ')).toMatch(/remembered rule r1: Future writes and deletes of files matching src\/\*\*/);
    expect(fs.readFileSync(path.join(workspace, 'src', 'a.ts'), 'utf8')).toBe('export {};\n');
    expect(secret!.status).toBe('awaiting_consent');
    expect(secret!.evaluation!.risk).toBe('HIGH');

    const outside = await executor.propose(
      { planId: 'p2', steps: [{ id: 'outside', action: 'writeFile', args: { path: path.join(workspace, 'b.ts'), content: 'x' } }] },
      { ...actorFor('mcp', 'agent 1'), agent: 'agent-1' },
    );
    expect(outside[0]!.status).toBe('awaiting_consent');
    expect(fs.existsSync(path.join(workspace, 'b.ts'))).toBe(false);
  });

  it('ask again once the rule is removed, and audit both changes of the policy', async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir));
    const person = actorFor('window');
    const rule = {
      id: 'r2',
      kind: 'file' as const,
      root: workspace,
      glob: '*.md',
      maxRisk: 'MEDIUM' as const,
      createdAt: new Date().toISOString(),
    };
    executor.setPolicy({ ...executor.getPolicy(), remembered: [rule] }, person);
    expect(
      (await executor.propose({ steps: [{ id: 'md1', action: 'writeFile', args: { path: 'notes.md', content: 'a' } }] }, person))[0]!
        .status,
    ).toBe('executed');
    executor.setPolicy({ ...executor.getPolicy(), remembered: [] }, person);
    expect(
      (await executor.propose({ steps: [{ id: 'md2', action: 'writeFile', args: { path: 'notes.md', content: 'b' } }] }, person))[0]!
        .status,
    ).toBe('awaiting_consent');
    const policyChanges = JSON.stringify(executor.getAudit({ limit: 1000 } as never)).match(/policy\.changed/g) ?? [];
    expect(policyChanges.length).toBe(2);
  });
});
