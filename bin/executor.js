#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx: no build step stands between `npm install` and a working command.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
