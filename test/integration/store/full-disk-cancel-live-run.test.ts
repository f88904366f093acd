import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { toErrorShape } from '../../../src/domain/errors.js';
import type { LiveRunFrame } from '../../../src/domain/live-output.js';
import { Executor } from '../../../src/executor/executor.js';
import { canMountTmpfs } from '../../helpers/small-disk.js';
import { closeAfter, defer } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The person's Cancel of a real run under way when the data directory's disk is full (real tmpfs, root
 * only): the run is stopped at once and the Cancel is in force though its record cannot be written; the
 * host then stops before any space returns (closed on the full disk: its memory is gone as after a
 * kill), and the next start records the Cancel from the reserve: the step ends cancelled, its run never
 * recorded as executed. (The SIGKILL of a real serve is in full-disk-held-records-sigkill.test.ts; here
 * the run's start is caught by its `run` event, which a separate process cannot hear in time.)
 */

const person = actorFor('cli');

function fillDisk(root: string): string {
  const filler = path.join(root, 'filler.bin');
  const fd = fs.openSync(filler, 'w');
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(64 * 1024));
  } catch {
    /* full */
  }
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(512));
  } catch {
    /* full to the last block */
  }
  fs.closeSync(fd);
  return filler;
}

describe.runIf(canMountTmpfs('full-disk-cancel-live-run'))('a Cancel of a real run on a full disk (real tmpfs)', () => {
  it('is in force at once, and a host stopped before space returns leaves it to the next start, which ends the step cancelled', async () => {
    const root = tempDir('tmpfs-');
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0700', 'tmpfs', root]).status).toBe(0);
    defer(() => spawnSync('umount', ['-l', root]));
    const dataDir = path.join(root, 'data');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'policy.json'), JSON.stringify({ workspaceRoots: [tempDir('workspace-')], autoApprove: 'HIGH' }));
    const executor = Executor.open(dataDir, { log: () => undefined });
    const realRun = new Promise<LiveRunFrame>((resolve) =>
      executor.on('run', (frame) => {
        if (frame.stepId === 'slow' && frame.phase === 'realRun') resolve(frame);
      }),
    );
    const proposing = executor
      .propose(
        {
          steps: [
            {
              id: 'slow',
              action: 'runCode',
              args: { code: 'await new Promise((done) => setTimeout(done, 4000)); return 42;', timeoutMs: 5000 },
            },
          ],
        },
        person,
      )
      .catch((error: unknown) => error);
    await realRun;
    const filler = fillDisk(root);
    const answer = toErrorShape(await executor.cancel('slow', person).catch((error: unknown) => error));
    expect(answer.code).toBe('STORAGE_FULL');
    expect(answer.message).toMatch(/is in force: its run was stopped before anything was applied/);
    expect(answer.details?.crashProof).toBe(true);
    await proposing;
    // Stopped while still full: whatever it held in memory is gone with it.
    try {
      executor.close();
    } catch {
      /* its shutdown record does not fit either */
    }
    fs.rmSync(filler);
    const reopened = closeAfter(Executor.open(dataDir, { log: () => undefined }));
    expect(reopened.getStep('slow').status).toBe('cancelled');
    const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true, fileMustExist: true });
    defer(() => db.close());
    const actions = db.prepare("SELECT action FROM audit_records WHERE step_id = 'slow' ORDER BY seq").pluck().all() as string[];
    expect(actions).not.toContain('step.executed');
    const cancelled = db
      .prepare("SELECT body FROM audit_records WHERE step_id = 'slow' AND action = 'step.cancelled'")
      .pluck()
      .get() as string;
    expect((JSON.parse(cancelled) as { args: Record<string, unknown> }).args).toMatchObject({
      heldOnFullDisk: true,
      recordedAtStart: true,
    });
    expect((await reopened.verifyAudit()).ok).toBe(true);
  }, 120_000);
});
