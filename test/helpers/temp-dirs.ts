import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

const created: string[] = [];

/** A fresh temporary directory, removed after the test. Tests never touch a real data directory. */
export function tempDir(prefix = 'executor-test-', options: { removeAfterEach?: boolean } = {}): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  if (options.removeAfterEach !== false) created.push(dir);
  return dir;
}

/** A data directory plus a workspace root, with a policy naming that root. */
export function tempSetup(
  policy: Record<string, unknown> = {},
  options: { removeAfterEach?: boolean } = {},
): { dataDir: string; workspace: string; base: string } {
  const base = tempDir('executor-test-', options);
  const dataDir = path.join(base, 'data');
  const workspace = path.join(base, 'workspace');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], ...policy }));
  return { dataDir, workspace, base };
}

/**
 * For a host shared by a whole describe block (opened in beforeAll): kept until the caller
 * removes it after closing the host, which still writes its final checkpoint on close.
 */
export function suiteTempSetup(policy: Record<string, unknown> = {}): { dataDir: string; workspace: string; base: string; remove(): void } {
  const setup = tempSetup(policy, { removeAfterEach: false });
  return { ...setup, remove: () => fs.rmSync(setup.base, { recursive: true, force: true }) };
}

afterEach(() => {
  while (created.length) fs.rmSync(created.pop()!, { recursive: true, force: true });
});
