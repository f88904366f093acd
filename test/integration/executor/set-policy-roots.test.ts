import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

// Settings saves the whole policy through setPolicy: a root added there must pass the same check
// as `executor roots add` and the first-run prompt, or Settings is a way round it.
const person = actorFor('window');
const opened: Executor[] = [];
afterEach(() => {
  for (const executor of opened.splice(0)) executor.close();
});

function open(dataDir: string): Executor {
  const executor = Executor.open(dataDir);
  opened.push(executor);
  return executor;
}

describe('setPolicy checks the roots it adds', () => {
  it.each([
    [
      'a world-writable folder',
      (base: string) => {
        const shared = path.join(base, 'shared');
        fs.mkdirSync(shared);
        fs.chmodSync(shared, 0o777);
        return shared;
      },
    ],
    ['a system folder', () => '/etc'],
    ['the whole disk', () => '/'],
    ['a folder that does not exist', (base: string) => path.join(base, 'missing')],
  ])('refuses %s, with words, and keeps the policy as it was', (_name, rootFor) => {
    const { dataDir, workspace, base } = tempSetup();
    const executor = open(dataDir);
    const before = executor.getPolicy();
    const root = rootFor(base);
    let caught: unknown;
    try {
      executor.setPolicy({ ...before, workspaceRoots: [...before.workspaceRoots, root] }, person);
    } catch (error) {
      caught = error;
    }
    // The whole disk holds the data directory too, which the older check names first.
    expect(['ROOT_REFUSED', 'POLICY_INVALID']).toContain((caught as { code?: string }).code);
    expect((caught as Error).message.length).toBeGreaterThan(20);
    expect(executor.getPolicy().workspaceRoots).toEqual([workspace]);
    expect(executor.getAudit({ limit: 100, order: 'asc', filters: { action: 'policy.changed' } }).entries).toHaveLength(0);
  });

  it('accepts a folder of the person’s own and keeps roots it already held', () => {
    const { dataDir, workspace, base } = tempSetup();
    const executor = open(dataDir);
    const mine = path.join(base, 'project');
    fs.mkdirSync(mine);
    const saved = executor.setPolicy({ ...executor.getPolicy(), workspaceRoots: [workspace, mine] }, person);
    expect(saved.workspaceRoots).toEqual([workspace, mine]);
    // A held root that later became shared stays: refusing it would lock Settings for every other change.
    fs.chmodSync(mine, 0o777);
    const again = executor.setPolicy({ ...executor.getPolicy() }, person);
    expect(again.workspaceRoots).toEqual([workspace, mine]);
  });
});
