import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../helpers/temp-dirs.js';

const root = path.resolve(import.meta.dirname, '../../..');
const require = createRequire(import.meta.url);
const plan = (
  require(path.join(root, '.dependency-cruiser.cjs')) as { floorPlan: { FLOORS: string[]; SUB_ROOMS: Record<string, string[]> } }
).floorPlan;

/** The CI layer check (`npm run check:layers`) over a tree of our making: the rule names it reports. */
function violationsIn(files: Record<string, string>): string[] {
  const dir = tempDir('executor-floor-plan-');
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  fs.copyFileSync(path.join(root, '.dependency-cruiser.cjs'), path.join(dir, '.dependency-cruiser.cjs'));
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', strict: true } }));
  const cli = path.join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
  const roots = ['src', 'renderer', 'electron'].filter((top) => fs.existsSync(path.join(dir, top)));
  const run = spawnSync(process.execPath, [cli, ...roots, '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], {
    cwd: dir,
    encoding: 'utf8',
  });
  const report = JSON.parse(run.stdout) as { summary: { violations: { rule: { name: string } }[] } };
  return report.summary.violations.map((v) => v.rule.name).sort();
}

describe('the floor plan CI checks', () => {
  it('refuses an import that runs back up the floors, also a type-only one', () => {
    expect(
      violationsIn({
        'src/store/steps.ts': "import type { Desk } from '../executor/desk.js';\nexport type S = Desk;\n",
        'src/executor/desk.ts': 'export interface Desk { open: boolean }\n',
      }),
    ).toEqual(['floor-store']);
  });

  it('refuses a cycle between two files of one floor', () => {
    expect(
      violationsIn({
        'src/fs/a.ts': "import { b } from './b.js';\nexport const a = b + 1;\n",
        'src/fs/b.ts': "import type { A } from './c.js';\nexport const b = 1 as A;\n",
        'src/fs/c.ts': "import { a } from './a.js';\nexport type A = typeof a;\n",
      }),
    ).toEqual(['no-circular']);
  });

  it('keeps the order of the audit and ipc rooms', () => {
    expect(
      violationsIn({
        'src/audit/keys/audit-keys.ts': "import { head } from '../log/audit-log.js';\nexport const k = head;\n",
        'src/audit/log/audit-log.ts': 'export const head = 0;\n',
        'src/ipc/client/client.ts': "import { serve } from '../server/server.js';\nexport const c = serve;\n",
        'src/ipc/server/server.ts': 'export const serve = 1;\n',
      }),
    ).toEqual(['audit-keys', 'ipc-client']);
  });

  it('keeps the executor rooms apart: a room never imports another, a helper beside them never imports one, only the host and the CLI hold the class', () => {
    expect(
      violationsIn({
        'src/executor/step-desk.ts': 'export const desk = 1;\n',
        'src/executor/rooms/decisions.ts':
          "import { run } from './execution.js';\nimport { desk } from '../step-desk.js';\nexport const decide = run + desk;\n",
        'src/executor/rooms/execution.ts': "import { desk } from '../step-desk.js';\nexport const run = desk;\n",
        'src/executor/live-runs.ts': "import { run } from './rooms/execution.js';\nexport const live = run;\n",
        'src/executor/executor.ts': "import { decide } from './rooms/decisions.js';\nexport class Executor { d = decide; }\n",
        'src/runs/run-loop.ts': "import { Executor } from '../executor/executor.js';\nexport const loop = Executor;\n",
        'src/ipc/host/host.ts': "import { Executor } from '../../executor/executor.js';\nexport const host = Executor;\n",
      }),
    ).toEqual(['executor-facade-only-from-its-owners', 'executor-helpers-below-the-rooms', 'executor-rooms-share-only-the-desk']);
  });

  it('lets the renderer reach only the browser-safe client, protocol and domain', () => {
    expect(
      violationsIn({
        'src/ipc/client/client.ts': 'export const client = 1;\n',
        'src/ipc/server/server.ts': 'export const server = 1;\n',
        'src/domain/step.ts': 'export const step = 1;\n',
        'renderer/app.tsx':
          "import { client } from '../src/ipc/client/client.js';\nimport { step } from '../src/domain/step.js';\nimport { server } from '../src/ipc/server/server.js';\nexport const app = client + step + server;\n",
      }),
    ).toEqual(['renderer-only-through-the-client']);
  });

  it('passes a tree that keeps to the plan', () => {
    expect(
      violationsIn({
        'src/domain/step.ts': 'export const step = 1;\n',
        'src/fs/atomic-write.ts': "import { step } from '../domain/step.js';\nexport const w = step;\n",
        'src/executor/desk.ts': "import { w } from '../fs/atomic-write.js';\nexport const d = w;\n",
      }),
    ).toEqual([]);
  });

  it('every folder of src/ is a floor of the plan, and every file of a folder with rooms is in one of them', () => {
    const folders = fs
      .readdirSync(path.join(root, 'src'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(folders.filter((f) => !plan.FLOORS.includes(f))).toEqual([]);
    for (const [folder, rooms] of Object.entries(plan.SUB_ROOMS)) {
      const entries = fs.readdirSync(path.join(root, 'src', folder), { withFileTypes: true });
      expect(
        entries.filter((e) => !e.isDirectory()).map((e) => e.name),
        `loose files in src/${folder}/`,
      ).toEqual([]);
      expect(entries.map((e) => e.name).sort()).toEqual([...rooms].sort());
    }
  });
});
