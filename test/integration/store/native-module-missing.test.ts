import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/*
 * An install whose better-sqlite3 was never built (its build script skipped) or was built for
 * something else: the real compiled CLI, copied with its node_modules beside it but better-sqlite3's
 * .node file missing or replaced, run as a real process. It must name the module and how to rebuild
 * it, never blame the data-directory lock.
 */

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** A copy of the installed CLI (bin/, dist/, package.json; no src/, so dist/ runs) whose better-sqlite3 has `build` as given. */
function installWithBrokenSqlite(build: 'missing' | 'garbage'): string {
  expect(fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js')), 'npm run build:cli first').toBe(true);
  const install = tempDir('broken-install-');
  fs.cpSync(path.join(ROOT, 'bin'), path.join(install, 'bin'), { recursive: true });
  fs.cpSync(path.join(ROOT, 'dist'), path.join(install, 'dist'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(install, 'package.json'));
  const modules = path.join(install, 'node_modules');
  fs.mkdirSync(modules);
  for (const entry of fs.readdirSync(path.join(ROOT, 'node_modules'))) {
    if (entry === 'better-sqlite3' || entry === '.bin') continue;
    fs.symlinkSync(path.join(ROOT, 'node_modules', entry), path.join(modules, entry));
  }
  const sqlite = path.join(modules, 'better-sqlite3');
  fs.mkdirSync(sqlite);
  fs.cpSync(path.join(ROOT, 'node_modules', 'better-sqlite3', 'lib'), path.join(sqlite, 'lib'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'node_modules', 'better-sqlite3', 'package.json'), path.join(sqlite, 'package.json'));
  if (build === 'garbage') {
    fs.mkdirSync(path.join(sqlite, 'build', 'Release'), { recursive: true });
    fs.writeFileSync(path.join(sqlite, 'build', 'Release', 'better_sqlite3.node'), 'not a shared object\n');
  }
  return install;
}

describe('a native module that does not load', () => {
  it.each(['missing', 'garbage'] as const)(
    'better-sqlite3 with its .node file %s: NATIVE_MODULE_MISSING with how to rebuild, no lock blamed, no database made',
    (build) => {
      const install = installWithBrokenSqlite(build);
      const { dataDir } = tempSetup();
      for (const args of [
        ['steps', 'list'],
        ['--json', 'steps', 'list'],
      ]) {
        const run = spawnSync(process.execPath, [path.join(install, 'bin', 'executor.js'), '--data-dir', dataDir, ...args], {
          encoding: 'utf8',
          timeout: 60_000,
        });
        const said = run.stdout + run.stderr;
        expect(run.status, said).toBe(2);
        expect(said).toContain('NATIVE_MODULE_MISSING');
        expect(said).toContain('better-sqlite3');
        expect(said).toContain('npm rebuild better-sqlite3');
        expect(said).not.toContain('DATA_DIR_LOCK_INVALID');
        expect(said).not.toMatch(/removing the file|lock .* cannot be used/i);
      }
      // No database was made: the failure came before anything was recorded.
      expect(fs.readdirSync(dataDir).filter((name) => name.startsWith('executor.db'))).toEqual([]);
    },
  );
});
