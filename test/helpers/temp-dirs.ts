import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

const created: string[] = [];

/** A fresh temporary directory, removed after the test. Tests never touch a real data directory. */
export function tempDir(prefix = 'executor-test-'): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  created.push(dir);
  return dir;
}

/** A data directory plus a workspace root, with a policy naming that root. */
export function tempSetup(policy: Record<string, unknown> = {}): { dataDir: string; workspace: string; base: string } {
  const base = tempDir();
  const dataDir = path.join(base, 'data');
  const workspace = path.join(base, 'workspace');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], ...policy }));
  return { dataDir, workspace, base };
}

afterEach(() => {
  while (created.length) fs.rmSync(created.pop()!, { recursive: true, force: true });
});
