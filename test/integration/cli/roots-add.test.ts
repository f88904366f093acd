import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * `executor roots add` refuses folders other users of the computer share, as it refuses /tmp: real
 * folders made world-writable in a temp dir, the real CLI, with and without a running host (which
 * answers the window's first-run prompt with the same words).
 */

function sharedFolder(base: string, name: string, mode: number): string {
  const folder = path.join(base, name);
  fs.mkdirSync(folder);
  fs.chmodSync(folder, mode);
  return folder;
}

describe('executor roots add', () => {
  it('refuses /var/tmp and world-writable folders (sticky or not) with words that say why and what to do; the policy keeps its roots', () => {
    const { dataDir, base, workspace } = tempSetup();
    const candidates = [sharedFolder(base, 'drop-box', 0o777), sharedFolder(base, 'team-tmp', 0o1777)];
    if (fs.existsSync('/var/tmp')) candidates.push('/var/tmp');
    for (const folder of candidates) {
      const added = runCli(['--data-dir', dataDir, 'roots', 'add', folder]);
      expect([folder, added.status]).toEqual([folder, 2]);
      expect(added.stderr).toMatch(
        new RegExp(`^executor: ROOT_REFUSED: ${fs.realpathSync(folder)} can be written by every user of this computer`),
      );
      expect(added.stderr).toContain('Pick a folder of your own outside it, like ~/projects/site.');
    }
    const inside = path.join(candidates[0]!, 'project');
    fs.mkdirSync(inside);
    const nested = runCli(['--data-dir', dataDir, '--json', 'roots', 'add', inside]);
    expect(nested.status).toBe(2);
    expect(nested.json<{ error: { code: string; message: string } }>().error).toMatchObject({
      code: 'ROOT_REFUSED',
      message: expect.stringContaining(`is inside ${candidates[0]}, which every user of this computer can write to`),
    });
    expect(runCli(['--data-dir', dataDir, '--json', 'roots', 'list']).json<{ workspaceRoots: string[] }>().workspaceRoots).toEqual([
      workspace,
    ]);
  });

  it('says the same through a running host, which answers the first-run prompt', async () => {
    const { dataDir, base, workspace } = tempSetup();
    const shared = sharedFolder(base, 'shared', 0o1777);
    const own = path.join(shared, 'mine');
    fs.mkdirSync(own);
    const serve = await startServe(dataDir);
    const refused = runCli(['--data-dir', dataDir, 'roots', 'add', shared]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(`ROOT_REFUSED: ${shared} can be written by every user of this computer (a shared folder like /tmp)`);
    // A folder of your own inside a sticky shared folder (as mkdtemp makes them) is yours: accepted.
    const added = runCli(['--data-dir', dataDir, '--json', 'roots', 'add', own]);
    expect(added.status, added.stderr).toBe(0);
    expect(added.json<{ workspaceRoots: string[] }>().workspaceRoots).toEqual([workspace, own]);
    expect(await serve.stop()).toBe(0);
  });

  it('removes a root by its listed path or a path to it, and says so when the folder is no root', () => {
    const { dataDir, base, workspace } = tempSetup();
    const second = path.join(base, 'second');
    fs.mkdirSync(second);
    expect(runCli(['--data-dir', dataDir, 'roots', 'add', second]).status).toBe(0);
    const link = path.join(base, 'second-link');
    fs.symlinkSync(second, link);
    const removed = runCli(['--data-dir', dataDir, '--json', 'roots', 'remove', link]);
    expect(removed.status, removed.stderr).toBe(0);
    expect(removed.json<{ workspaceRoots: string[] }>().workspaceRoots).toEqual([workspace]);
    const missing = runCli(['--data-dir', dataDir, 'roots', 'remove', second]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain(`INVALID_INPUT: ${second} is not a workspace root. The roots are: ${workspace}.`);
    const last = runCli(['--data-dir', dataDir, 'roots', 'remove', workspace]);
    expect(last.status, last.stderr).toBe(0);
    expect(last.stdout).toContain('No workspace root left');
  });
});
