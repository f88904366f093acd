import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { closeAfter, killAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A real host process SIGKILLed the moment its write's temporary file appears beside the target (written ahead of
 * the backup and the intent record, prepareAhead): whichever side of the intent record it died on, the next open
 * leaves no temporary file, the target whole (old or new, never a part), and the step where the person can see it.
 */

const FIXTURE = path.resolve(import.meta.dirname, '../../fixtures/write-ahead-then-die.ts');
const BYTES = 9 * 1024 * 1024;

describe('a host killed while a write is prepared ahead', () => {
  it('leaves no temporary file after the next open, and the target whole', async () => {
    const { dataDir, workspace } = tempSetup();
    const target = path.join(workspace, 'big.txt');
    fs.writeFileSync(target, 'o'.repeat(1024 * 1024));
    const temporary = /^\.big\.txt\.executor-[0-9a-f]{12}\.tmp$/;
    const seen = new Promise<string>((resolve) => {
      const watcher = fs.watch(workspace, (_event, name) => {
        if (name && temporary.test(name)) {
          watcher.close();
          resolve(name);
        }
      });
    });
    const child = killAfter(
      spawn(process.execPath, ['--import', 'tsx', FIXTURE, dataDir, target, String(BYTES)], { stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const outcome = await Promise.race([seen.then(() => 'seen' as const), exited.then(() => 'exited' as const)]);
    expect(outcome, `the child ended first: ${out} ${err}`).toBe('seen');
    child.kill('SIGKILL');
    await exited;
    expect(out).not.toContain('finished before it was killed');

    const executor = closeAfter(Executor.open(dataDir, { resumeUnfinished: false }));
    const left = fs.readdirSync(workspace).filter((name) => name.endsWith('.tmp'));
    expect(left).toEqual([]);
    const size = fs.statSync(target).size;
    expect([1024 * 1024, BYTES]).toContain(size);
    const status = executor.getStep('ahead-step').status;
    expect(['approved', 'interrupted', 'executed']).toContain(status);
    if (status === 'approved') {
      expect((await executor.executeStep('ahead-step', actorFor('cli'))).status).toBe('executed');
      expect(fs.statSync(target).size).toBe(BYTES);
      expect(fs.readdirSync(workspace).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    }
  });
});
