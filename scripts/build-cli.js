#!/usr/bin/env node
// `npm run build:cli` (and `prepare`, so `npm install` / `npm ci` run it): compiles src/ to dist/,
// one .js per .ts in the same relative layout, so paths a module finds from its own place
// (../../../package.json, ./worker.cjs, the verify worker beside verify-workers.js) hold in both.
// Files that are not TypeScript (the light sandbox's worker.cjs) are copied as they are.
//
// Transpiled by esbuild, file by file, without type checking (`npm run typecheck` does that, and
// `npx tsc -p tsconfig.build.json` emits the same layout with checking, in seconds rather than
// a fraction of one). esbuild comes with tsx, a runtime dependency, so the build also works
// where dev dependencies (typescript) are not installed.
//
// dist/build-stamp.json lists every source file with its mtime and size as they were when the
// build read them; bin/executor.js runs dist/ only while src/ still matches it, so a stale dist
// never runs old code. The stamp is written last, into a fresh directory that replaces dist/ whole:
// a build that fails half-way leaves no stamp, and a running process never reads half a file.
//
// --if-possible (prepare): a build that cannot run here (esbuild's binary missing, a read-only
// checkout) prints why and exits 0: the install stays good and bin/executor.js runs the sources through tsx.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const srcDir = path.join(root, 'src');
const distDir = path.join(root, 'dist');
const STAMP_FILE = 'build-stamp.json';
const ifPossible = process.argv.includes('--if-possible');

/** Every file under src/, relative with forward slashes, sorted: what the stamp and bin/executor.js compare. */
function sourceFiles(dir = srcDir, prefix = '') {
  const files = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const relative = prefix + entry.name;
    if (entry.isDirectory()) files.push(...sourceFiles(path.join(dir, entry.name), `${relative}/`));
    else files.push(relative);
  }
  return files.sort();
}

/** esbuild as tsx depends on it: found from tsx's own place, so it needs no entry in package.json of its own. */
async function loadEsbuild() {
  const fromTsx = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'));
  return import(pathToFileURL(fromTsx.resolve('esbuild')).href);
}

async function build() {
  const started = Date.now();
  // Read before compiling: a file edited while the build runs no longer matches the stamp, and the next run sees that.
  const files = sourceFiles();
  const sources = Object.fromEntries(
    files.map((relative) => {
      const stat = fs.statSync(path.join(srcDir, relative));
      return [relative, [stat.mtimeMs, stat.size]];
    }),
  );
  const esbuild = await loadEsbuild();
  removeLeftoverStaging();
  const staging = fs.mkdtempSync(path.join(root, `.dist-build-${process.pid}-`));
  try {
    const entryPoints = files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts')).map((file) => path.join(srcDir, file));
    await esbuild.build({
      entryPoints,
      outdir: staging,
      outbase: srcDir,
      bundle: false,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: true,
      tsconfig: path.join(root, 'tsconfig.build.json'),
      logLevel: 'warning',
    });
    for (const file of files.filter((name) => !name.endsWith('.ts'))) {
      fs.mkdirSync(path.dirname(path.join(staging, file)), { recursive: true });
      fs.copyFileSync(path.join(srcDir, file), path.join(staging, file));
    }
    fs.writeFileSync(path.join(staging, STAMP_FILE), `${JSON.stringify({ builtAt: new Date().toISOString(), sources })}\n`);
    replaceDist(staging);
  } catch (error) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw error;
  }
  return { files: files.length, ms: Date.now() - started };
}

/** Staging directories of builds that were killed (their process is gone); those of a build running now stay. */
function removeLeftoverStaging() {
  for (const name of fs.readdirSync(root)) {
    const pid = Number(/^\.dist-build-(\d+)-/.exec(name)?.[1]);
    if (!pid || pid === process.pid || processAlive(pid)) continue;
    fs.rmSync(path.join(root, name), { recursive: true, force: true });
  }
}

function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/**
 * Moves the staged build into place as one directory: the old dist/ is renamed away first (a
 * directory cannot be renamed over a non-empty one). Two builds at once each stage their own and
 * the later one wins; both hold the same sources' output.
 */
function replaceDist(staging) {
  for (let attempt = 0; ; attempt += 1) {
    const retired = `${staging}-old`;
    try {
      fs.renameSync(distDir, retired);
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
    }
    try {
      fs.renameSync(staging, distDir);
      fs.rmSync(retired, { recursive: true, force: true });
      return;
    } catch (error) {
      fs.rmSync(retired, { recursive: true, force: true });
      // Another build put its dist/ there between our two renames: move that one away and try again.
      if ((error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') || attempt >= 5) throw error;
    }
  }
}

try {
  const { files, ms } = await build();
  if (!process.argv.includes('--quiet')) console.log(`build:cli: compiled src/ to dist/ (${files} files, ${ms} ms)`);
} catch (error) {
  const reason = String(error?.message ?? error).split('\n')[0];
  if (!ifPossible) {
    console.error(`build:cli: ${reason}`);
    process.exit(1);
  }
  console.error(
    `build:cli: skipped (${reason}); bin/executor.js runs the TypeScript sources through tsx instead (slower to start). Run \`npm run build:cli\` when this is fixed.`,
  );
}
