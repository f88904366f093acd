#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx: no build step stands between `npm install` and a working command.
import { register } from 'tsx/esm/api';

// Before anything can create a file: what Executor writes (the database, its -wal and -shm, keys,
// tokens) is for this user only, whatever the shell's umask. Windows has no umask.
// The person's own umask is kept for the files Executor writes into their workspace (src/store/data-dir.ts).
if (process.platform !== 'win32') globalThis[Symbol.for('executor.umask-before')] = process.umask(0o077);

register();
await import('../src/cli/main.ts');
