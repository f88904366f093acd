import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A run backs up every file its changeset replaces, a file after another, and names those blobs in one row commit once
 * all are on disk: the first file's backup waits unnamed while the others are written. Only this process's recent puts
 * (the grace) protected it; with no grace a sweep took it, and the step ran with a backup of record gone. The run now
 * holds its backups (a lease) until that commit has settled, as a proposal holds its contents.
 */

const PERSON = actorFor('window');
const hasDocker = dockerAvailable();
const FILES = 30;
const before = (index: number) => `file ${index} as the person left it\n`.repeat(6000);

// Skipped only where no engine answers (dockerAvailable says which, loudly); under CI=true a missing engine fails instead.
describe.skipIf(!hasDocker)('collecting orphan blobs while a command runs (real Docker)', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it("never takes the backup of a file the command's run is replacing, with no grace and sweeps all the while", async () => {
    const { dataDir, workspace } = tempSetup();
    const executor = closeAfter(Executor.open(dataDir, { resumeUnfinished: false }));
    for (let index = 0; index < FILES; index++) fs.writeFileSync(path.join(workspace, `f${index}.txt`), before(index));
    const [proposed] = await executor.propose(
      { steps: [{ id: 'rewrite', action: 'runCommand', args: { command: `for f in f*.txt; do echo changed > "$f"; done` } }] },
      PERSON,
    );
    await executor.whenPreparationsIdle();
    const ready = executor.getStep(proposed!.step.id);
    expect(ready.status).toBe('awaiting_consent');
    let running = true;
    let sweeps = 0;
    const sweeping = (async () => {
      while (running) {
        await executor.collectOrphanBlobs(0);
        sweeps += 1;
      }
    })();
    const done = await executor.approve(ready.step.id, PERSON, { previewHash: ready.previewHash });
    running = false;
    await sweeping;
    expect(sweeps).toBeGreaterThan(1);
    expect(done.status).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'f0.txt'), 'utf8')).toBe('changed\n');
    expect((await executor.revertStep(ready.step.id, PERSON)).status).toBe('reverted');
    for (let index = 0; index < FILES; index++)
      expect(fs.readFileSync(path.join(workspace, `f${index}.txt`), 'utf8'), `f${index}`).toBe(before(index));
  }, 120_000);
});
