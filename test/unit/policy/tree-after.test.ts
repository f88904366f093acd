import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StepStatus } from '../../../src/domain/state-machine.js';
import type { Step } from '../../../src/domain/step.js';
import { PENDING } from '../../../src/executor/step-desk.js';
import { hostCodeFindingAt } from '../../../src/policy/host-code-paths.js';
import { PlannedTree, plannedWritesOf, stepsStillPlanned } from '../../../src/policy/tree-after.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The tree a plan leaves once part of it ran counts only the steps that may still run (and the one
 * weighed): the steps that ran are on the disk it lies over. Against the tree of every step of the
 * plan (what it was before), the verdict on each of the plan's paths must be the same while the
 * plan runs forward, its files written as each step ran.
 */

const PARTS = ['vendor', 'HEAD', 'objects', 'refs', 'config', 'hooks', 'x', '.git', 'pre-commit'] as const;
const CONTENTS = ['x', 'ref: refs/heads/main\n', '[core]\n\thooksPath = hooks\n', '[core]\n\thooksPath = .\n'] as const;

interface PlannedWriteStep {
  parts: string[];
  content: string;
}

const plannedWrite: fc.Arbitrary<PlannedWriteStep> = fc.record({
  parts: fc.array(fc.constantFrom(...PARTS), { minLength: 1, maxLength: 3 }),
  content: fc.constantFrom(...CONTENTS),
});

function writeStep(index: number, { parts, content }: PlannedWriteStep): Step {
  return {
    id: `step-${index}`,
    planId: 'plan-1',
    action: 'writeFile',
    args: { path: parts.join('/'), content },
  } as unknown as Step;
}

/** Writes the file as the executed step did; false when the tree cannot hold it (a file where a folder must be). */
function writeAsExecuted(root: string, { parts, content }: PlannedWriteStep): boolean {
  const target = path.join(root, ...parts);
  try {
    fs.mkdirSync(path.dirname(target), { recursive: true });
    if (fs.existsSync(target) && !fs.lstatSync(target).isFile()) return false;
    fs.writeFileSync(target, content);
    return true;
  } catch {
    return false;
  }
}

describe('stepsStillPlanned (the tree a plan leaves while it runs)', () => {
  it('gives every path of a plan run forward the verdict the tree of all its steps gives it', () => {
    fc.assert(
      fc.property(fc.array(plannedWrite, { minLength: 1, maxLength: 8 }), fc.nat(), (writes, ranCount) => {
        const ran = ranCount % (writes.length + 1);
        // The ran steps' contents are what their files hold: one ran write overwritten by another ran one is gone from both the disk and the plan.
        const ranPaths = writes.slice(0, ran).map((write) => write.parts.join('/'));
        fc.pre(new Set(ranPaths).size === ranPaths.length);
        const base = tempDir();
        const root = path.join(base, 'root');
        const dataDir = path.join(base, 'data');
        fs.mkdirSync(root);
        fs.mkdirSync(dataDir);
        for (const write of writes.slice(0, ran)) fc.pre(writeAsExecuted(root, write));
        const plan = writes.map((write, index) => ({
          step: writeStep(index, write),
          preview: null,
          status: (index < ran ? 'executed' : index === ran ? 'running' : 'approved') as StepStatus,
        }));
        const everyStep = new PlannedTree(plannedWritesOf(plan, [root], dataDir));
        for (const [index, write] of writes.entries()) {
          const stillPlanned = new PlannedTree(plannedWritesOf(stepsStillPlanned(plan, plan[index]!.step.id, PENDING), [root], dataDir));
          const relativePath = write.parts.join('/');
          expect(hostCodeFindingAt(root, relativePath, {}, stillPlanned)).toEqual(hostCodeFindingAt(root, relativePath, {}, everyStep));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('leaves out a step that ended without running, and keeps the step weighed whatever its status', () => {
    const steps = ['vendor/HEAD', 'vendor/objects/a', 'vendor/refs/b', 'vendor/config'].map((at, index) =>
      writeStep(index, { parts: at.split('/'), content: 'x' }),
    );
    const statuses: StepStatus[] = ['rejected', 'approved', 'approved', 'approved'];
    const plan = steps.map((step, index) => ({ step, preview: null, status: statuses[index]! }));
    expect(stepsStillPlanned(plan, 'step-3', PENDING).map((view) => view.step.id)).toEqual(['step-1', 'step-2', 'step-3']);
    expect(stepsStillPlanned(plan, 'step-0', PENDING).map((view) => view.step.id)).toEqual(['step-0', 'step-1', 'step-2', 'step-3']);
    const root = tempDir();
    // Without its HEAD, which will not be written, vendor/ is no git directory; with it (all four steps to run) it is.
    const without = new PlannedTree(plannedWritesOf(stepsStillPlanned(plan, 'step-3', PENDING), [root], tempDir()));
    expect(hostCodeFindingAt(root, 'vendor/config', {}, without)).toBeUndefined();
    const all = plan.map((view) => ({ ...view, status: 'approved' as StepStatus }));
    const withHead = new PlannedTree(plannedWritesOf(stepsStillPlanned(all, 'step-3', PENDING), [root], tempDir()));
    expect(hostCodeFindingAt(root, 'vendor/config', {}, withHead)?.git).toBe(true);
  });
});

describe('PlannedTree', () => {
  it('holds every folder above each planned write, and nothing else that is not on disk', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.constantFrom('a', 'b', 'A', 'c'), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 10 }),
        fc.array(fc.array(fc.constantFrom('a', 'b', 'A', 'c', 'd'), { minLength: 1, maxLength: 5 }), { maxLength: 10 }),
        fc.boolean(),
        (written, asked, caseInsensitive) => {
          const root = tempDir();
          const key = (parts: string[]) => (caseInsensitive ? parts.join('/').toLowerCase() : parts.join('/'));
          const tree = new PlannedTree(
            written.map((parts) => ({ absolutePath: path.join(root, ...parts), content: null })),
            caseInsensitive,
          );
          const present = new Set(written.flatMap((parts) => parts.map((_, depth) => key(parts.slice(0, depth + 1)))));
          for (const parts of [...written, ...asked]) expect(tree.exists(path.join(root, ...parts))).toBe(present.has(key(parts)));
        },
      ),
      { numRuns: 300 },
    );
  });
});
