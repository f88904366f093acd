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
  const run = spawnSync(process.execPath, [cli, 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], {
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
