#!/usr/bin/env node
// Runs the compiled CLI in dist/ (built by `npm run build:cli`, which `npm install` and `npm ci` run
// through `prepare`): plain JavaScript starts in a fraction of the time tsx needs to compile the
// sources. Only when dist/ is missing or no longer matches src/ (a development checkout after an
// edit, a pull or a branch switch) are the TypeScript sources run through tsx instead: a stale
// build must never run old code in place of what is in src/.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Before anything can create a file: what Executor writes (the database, its -wal and -shm, keys,
// tokens) is for this user only, whatever the shell's umask. Windows has no umask.
// The person's own umask is kept for the files Executor writes into their workspace (src/fs/file-modes.ts).
if (process.platform !== 'win32') globalThis[Symbol.for('executor.umask-before')] = process.umask(0o077);

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const srcDir = path.join(root, 'src');
const distDir = path.join(root, 'dist');

/**
 * Whether dist/ was built from src/ as it is now: every source file has the mtime and size
 * dist/build-stamp.json recorded, and no file was added or removed. A stat per file (a few
 * milliseconds for the whole tree) rather than reading contents. An install without src/ has
 * nothing to compare and runs dist/. No stamp (never built, or a build that failed half-way) is stale.
 */
function distMatchesSources() {
  let recorded;
  try {
    recorded = JSON.parse(fs.readFileSync(path.join(distDir, 'build-stamp.json'), 'utf8')).sources;
  } catch {
    return false;
  }
  if (!recorded || typeof recorded !== 'object') return false;
  if (!fs.existsSync(srcDir)) return true;
  let seen = 0;
  const sameTree = (dir, prefix) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const relative = prefix + entry.name;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!sameTree(full, `${relative}/`)) return false;
        continue;
      }
      const expected = recorded[relative];
      if (!Array.isArray(expected)) return false;
      const stat = fs.statSync(full);
      if (stat.mtimeMs !== expected[0] || stat.size !== expected[1]) return false;
      seen += 1;
    }
    return true;
  };
  try {
    return sameTree(srcDir, '') && seen === Object.keys(recorded).length;
  } catch {
    return false;
  }
}

// The hook runs before every tool call of an outside agent: it starts without the rest of the CLI.
// Only a call naming a client takes that path; `executor hook --help` is answered by the CLI itself.
const isHookCall = process.argv[2] === 'hook' && ['claude-code', 'gemini-cli'].includes(process.argv[3] ?? '');

if (distMatchesSources()) {
  await import(pathToFileURL(path.join(distDir, isHookCall ? 'cli/hook-main.js' : 'cli/main.js')).href);
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write(
      `executor: the compiled CLI (${distDir}) is ${fs.existsSync(distDir) ? 'older than the sources in src/' : 'missing'}, and tsx, which runs the sources instead, is not installed. Run \`npm run build:cli\` in ${root}.\n`,
    );
    process.exit(2);
  }
  register();
  await import(isHookCall ? '../src/cli/hook-main.ts' : '../src/cli/main.ts');
}
