import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempDir } from '../../helpers/temp-dirs.js';
import { canMountTmpfs } from '../../helpers/small-disk.js';

/** A real full data directory (a small tmpfs; root only, as test/integration/executor/full-disk.test.ts). */
const canMount = () => canMountTmpfs('skill full-disk tests');

const mounts: string[] = [];
const open: Executor[] = [];
const fillers: string[] = [];
afterEach(() => {
  while (fillers.length) fs.rmSync(fillers.pop()!, { force: true });
  while (open.length) open.pop()!.close();
  while (mounts.length) spawnSync('umount', ['-l', mounts.pop()!]);
});

const person = actorFor('cli');
const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };

describe.runIf(canMount())('a skill use on a full data directory (real tmpfs)', () => {
  it('holds execution with STORAGE_FULL, as any step does, and runs nothing while held', async () => {
    const mount = tempDir('tmpfs-');
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=40m,mode=0700', 'tmpfs', mount], { encoding: 'utf8' });
    if (mounted.status !== 0) throw new Error(`mount failed: ${mounted.stderr}`);
    mounts.push(mount);
    const dataDir = path.join(mount, 'data');
    fs.mkdirSync(dataDir);
    const executor = Executor.open(dataDir);
    open.push(executor);
    const skill = await executor.proposeSkill(
      {
        name: 'shout',
        purpose: 'upper-case a text',
        code: 'return { text: input.text.toUpperCase() };',
        inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        outputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
        budget: { timeMs: 2000, calls: 0 },
        examples: [{ text: 'a' }, { text: 'b' }, { text: 'c' }],
      },
      agent,
    );
    executor.approveSkill(skill.skillId, person, { codeHash: skill.codeHash });
    expect((await executor.useSkill('shout', { text: 'ok' }, agent)).ok).toBe(true);

    const filler = path.join(mount, 'filler.bin');
    fillers.push(filler);
    const stats = fs.statfsSync(mount);
    fs.writeFileSync(filler, Buffer.alloc(Number(stats.bavail) * Number(stats.bsize)));
    const bigInput = { text: 'x'.repeat(60_000) };
    // The first use cannot be recorded: the host holds execution, the caller hears STORAGE_FULL.
    let first: unknown;
    for (let i = 0; i < 50 && first === undefined; i += 1)
      first = await executor.useSkill('shout', bigInput, agent).then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(first).toMatchObject({ code: 'STORAGE_FULL' });
    expect(executor.storageHold()).toMatchObject({ held: true });
    // While held, nothing runs: even a use small enough to be written is refused before it is recorded.
    fs.rmSync(filler);
    fillers.pop();
    const before = executor.listSteps({}).filter((record) => record.step.action === 'runSkill').length;
    await expect(executor.useSkill('shout', { text: 'held' }, agent)).rejects.toMatchObject({ code: 'STORAGE_FULL' });
    expect(executor.listSteps({}).filter((record) => record.step.action === 'runSkill')).toHaveLength(before);
  });
});
