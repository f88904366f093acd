#!/usr/bin/env node
// `npm start [-- --data-dir DIR]`: builds and opens the Electron window. Where the Electron binary
// is missing (a server, CI, an install with optional dependencies skipped) it says why and serves
// the same UI in the browser with `executor serve` instead, printing the URL to open.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// npm runs this script in the package folder, whatever folder the person typed `npm start` in
// (INIT_CWD): a relative --data-dir or EXECUTOR_DATA_DIR means the folder they typed it in, as it
// does for the `executor` command there, so both use the same data directory.
const typedIn = process.env.INIT_CWD ?? process.cwd();
const args = process.argv.slice(2).map((arg, index, all) => {
  if (all[index - 1] === '--data-dir') return path.resolve(typedIn, arg);
  if (arg.startsWith('--data-dir=')) return `--data-dir=${path.resolve(typedIn, arg.slice('--data-dir='.length))}`;
  return arg;
});
if (process.env.EXECUTOR_DATA_DIR) process.env.EXECUTOR_DATA_DIR = path.resolve(typedIn, process.env.EXECUTOR_DATA_DIR);
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

/** The Electron binary's path, or the reason there is none. */
function findElectron() {
  try {
    // The electron package exports the binary's path; it throws when the download never happened.
    const binary = createRequire(import.meta.url)('electron');
    if (typeof binary !== 'string') return { reason: 'the electron package did not name a binary' };
    if (!fs.existsSync(binary)) return { reason: `the Electron binary is not installed (${binary} does not exist)` };
    return { binary };
  } catch (error) {
    return { reason: `the Electron binary is not installed (${String(error.message).split('\n')[0]})` };
  }
}

function run(command, commandArgs) {
  const result = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit' });
  return result.status === 0;
}

function buildRenderer() {
  if (!pkg.scripts?.['build:renderer']) return;
  if (!run(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', '--silent', 'build:renderer'])) {
    console.error('start: the renderer did not build; the window will show a placeholder.');
  }
}

function forward(child) {
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
}

// EXECUTOR_START_IN_BROWSER=1: the browser UI even where Electron is installed (a remote machine, a test).
const electron =
  process.env.EXECUTOR_START_IN_BROWSER === '1' ? { reason: 'EXECUTOR_START_IN_BROWSER=1 asks for the browser' } : findElectron();
if (electron.binary) {
  buildRenderer();
  if (!run(process.execPath, [path.join(root, 'scripts/build-electron.js')])) process.exit(1);
  forward(spawn(electron.binary, [root, ...args], { cwd: root, stdio: 'inherit' }));
} else {
  console.log(`start: cannot open the desktop window: ${electron.reason}.`);
  // `executor serve` builds the web UI itself when it is missing or older than its sources.
  console.log('start: serving the same UI in your browser instead (executor serve); open the URL below.\n');
  forward(spawn(process.execPath, [path.join(root, 'bin/executor.js'), ...args, 'serve'], { cwd: root, stdio: 'inherit' }));
}
