import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { defer } from '../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

/* The data directory turns read-only under a running host (a remount, a backup tool's snapshot): root only, a real bind mount. */
const canMount = (() => {
  const probe = tempDir('mount-probe-');
  const ok = spawnSync('mount', ['--bind', probe, probe]).status === 0;
  if (ok) spawnSync('umount', [probe]);
  else console.warn('\n!!! SKIPPING read-only-under-serve: a bind mount needs root.\n');
  return ok;
})();

describe.runIf(canMount)('a data directory that turns read-only under a running serve', () => {
  it('one stop signal ends the host (it does not stay alive holding the lock), and its words do not say nothing was changed', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'HIGH' });
    const plan = path.join(tempDir('plan-'), 'plan.json');
    fs.writeFileSync(
      plan,
      JSON.stringify({ steps: [{ action: 'writeFile', args: { path: path.join(workspace, 'a.txt'), content: 'a' } }] }),
    );
    const serve = await startServe(dataDir);
    const proposed = runCli(['--data-dir', dataDir, 'propose', plan, '--wait', '--timeout', '60']);
    expect(proposed.status, proposed.stderr).toBe(0);

    expect(spawnSync('mount', ['--bind', dataDir, dataDir]).status).toBe(0);
    defer(() => spawnSync('umount', ['-l', dataDir]));
    expect(spawnSync('mount', ['-o', 'remount,bind,ro', dataDir]).status).toBe(0);
    let said = '';
    serve.child.stdout!.on('data', (chunk: Buffer) => (said += chunk.toString()));
    serve.child.kill('SIGTERM');
    // The exit follows the one signal (the helper's stop() would send another).
    const code = await new Promise<number | null>((resolve) => serve.child.once('exit', (exitCode) => resolve(exitCode)));
    expect(code).toBe(2);
    expect(said).not.toMatch(/nothing was changed/i);
    expect(said).toContain(dataDir);

    // Writable again, the data directory opens, and the step that ran reads executed.
    spawnSync('umount', ['-l', dataDir]);
    const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.json<{ status: string }[]>().map((record) => record.status)).toEqual(['executed']);
  }, 180_000);
});
