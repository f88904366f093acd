import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.js';
import { canMountTmpfs, mountTmpfs } from '../../helpers/small-disk.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The data directory and the workspace on one small real tmpfs (root only, as full-data-dir.test.ts):
 * the step's own write takes the last room, so the disk fills at every point of the step's life as
 * the room left before it varies: before its backup, before it is marked running, between its effect
 * and its outcome, at the shutdown checkpoint. Whatever the point, the words must match what happened.
 */
const canMount = () => canMountTmpfs('the full-disk-after-effect test');

function tmpfs(sizeMb: number): string {
  const dir = tempDir('tmpfs-');
  mountTmpfs(dir, `${sizeMb}m`);
  return dir;
}

const freeBytes = (dir: string) => {
  const stats = fs.statfsSync(dir);
  return Number(stats.bavail) * Number(stats.bsize);
};

const CONTENT_BYTES = 2 * 1024;

describe.runIf(canMount())('"nothing was changed" only where nothing was (a full disk, real tmpfs)', () => {
  it('a step whose file was written is never reported as "nothing was changed", whatever write the full disk refused', () => {
    const root = tmpfs(8);
    const dataDir = path.join(root, 'data');
    const workspace = path.join(root, 'workspace');
    fs.mkdirSync(dataDir);
    fs.mkdirSync(workspace);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [workspace], autoApprove: 'HIGH' }));
    expect(runCli(['--data-dir', dataDir, 'steps', 'list']).status).toBe(0);
    const content = 'y'.repeat(CONTENT_BYTES);
    const outcomes: string[] = [];
    let ranAndRefused = 0;
    let attempt = 0;
    /** One proposal with `room` bytes left on the disk; what it answered, whether its file is there, and its status once there is room again. */
    const proposeWithRoom = (room: number) => {
      const id = `s${attempt++}`;
      const target = path.join(workspace, `${id}.txt`);
      const planFile = path.join(tempDir('plan-'), 'plan.json');
      fs.writeFileSync(planFile, JSON.stringify({ steps: [{ id, action: 'writeFile', args: { path: target, content } }] }));
      const filler = path.join(root, 'filler.bin');
      fs.writeFileSync(filler, Buffer.alloc(Math.max(0, freeBytes(root) - room)));
      const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', planFile]);
      const ran = fs.existsSync(target) && fs.readFileSync(target, 'utf8') === content;
      fs.rmSync(filler);
      const shown = runCli(['--data-dir', dataDir, '--json', 'steps', 'show', id]);
      const status = shown.status === 0 ? shown.json<{ status: string }>().status : 'not stored';
      outcomes.push(`${room}: exit ${proposed.status}, file ${ran ? 'written' : 'not written'}, now ${status}`);
      return { id, proposed, ran, status };
    };
    // The least room in which a proposal runs and is recorded whole (found by halving)…
    let [low, high] = [0, 1024 * 1024];
    while (high - low > 16 * 1024) {
      const middle = Math.round((low + high) / 2);
      if (proposeWithRoom(middle).proposed.status === 0) high = middle;
      else low = middle;
    }
    // …then less and less room below it, until not even the proposal is stored: every point of the step's life in between.
    for (let room = high; room > 0; room -= 4 * 1024) {
      const { id, proposed, ran, status } = proposeWithRoom(room);
      if (status === 'not stored') break;
      if (proposed.status !== 2) continue;
      const { error } = proposed.json<{ error: { code: string; message: string } }>();
      expect(error.code, error.message).not.toBe('INTERNAL');
      if (!ran) continue;
      // The effect is on disk: the answer says the step ran and its real status, and never invites a retry.
      ranAndRefused++;
      expect(error.message, outcomes.join('\n')).not.toMatch(/nothing was changed/i);
      expect(error.message).toContain(id);
      expect(error.message).toMatch(/ran|recorded so|recorded as it stands/);
      expect(['running', 'interrupted', 'executed']).toContain(status);
    }
    // The sweep did reach the point between effect and record at least once (else it proves nothing).
    expect(ranAndRefused, outcomes.join('\n')).toBeGreaterThan(0);
  }, 600_000);
});
