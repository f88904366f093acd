import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testTeardown, type Teardown } from './teardown.js';

/*
 * Directories go on the teardown stack like everything else (teardown.ts): a host or an executor
 * opened in a directory after it was made is closed before the directory is removed, whatever order
 * the test file's imports and hooks come in.
 */

/**
 * A fresh temporary directory, removed after the test (or, made outside a test, after the file).
 * Tests never touch a real data directory. `teardown` is a suiteTeardown() for a directory a
 * describe block's tests share.
 */
export function tempDir(prefix = 'executor-test-', teardown: Teardown = testTeardown): string {
  return teardown.removeAfter(fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix))));
}

/** A data directory plus a workspace root, with a policy naming that root. */
export function tempSetup(
  policy: Record<string, unknown> = {},
  teardown: Teardown = testTeardown,
): { dataDir: string; workspace: string; base: string } {
  const base = tempDir('executor-test-', teardown);
  const dataDir = path.join(base, 'data');
  const workspace = path.join(base, 'workspace');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], ...policy }));
  return { dataDir, workspace, base };
}
