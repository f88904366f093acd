#!/usr/bin/env node
// `npm run rebuild:electron-deps`: rebuilds native modules (better-sqlite3) for Electron's ABI with
// `electron-builder install-app-deps`. That downloads Electron's headers, so it needs the internet
// and an installed Electron; where either is missing it says so and changes nothing. Note: after a
// rebuild, better-sqlite3 loads in Electron only; `npm rebuild better-sqlite3` restores it for Node.
import { spawnSync } from 'node:child_process';
import dns from 'node:dns/promises';
import fs from 'node:fs';
import { createRequire } from 'node:module';

let electronBinary = null;
try {
  const binary = createRequire(import.meta.url)('electron');
  if (typeof binary === 'string' && fs.existsSync(binary)) electronBinary = binary;
} catch {
  /* not installed */
}
if (!electronBinary) {
  console.log('rebuild:electron-deps: skipped — the Electron binary is not installed, so there is nothing to rebuild for.');
  process.exit(0);
}
try {
  await dns.lookup('electronjs.org');
} catch {
  console.log('rebuild:electron-deps: skipped — no internet: electron-builder install-app-deps downloads Electron headers.');
  process.exit(0);
}
const result = spawnSync(process.platform === 'win32' ? 'npx.cmd' : 'npx', ['electron-builder', 'install-app-deps'], { stdio: 'inherit' });
process.exit(result.status ?? 1);
