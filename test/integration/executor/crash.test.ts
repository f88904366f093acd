import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import { Executor } from '../../../src/executor/executor.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

const FIXTURE = path.resolve(import.meta.dirname, '../../fixtures/crash-during-execute.ts');

/** Runs a real step in a child process and SIGKILLs it at the chosen moment of the file write. */
async function killDuringExecute(dataDir: string, moment: 'before-rename' | 'after-rename', target?: string): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, dataDir, moment, ...(target ? [target] : [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('frozen')) {
        child.kill('SIGKILL');
        resolve();
      } else reject(new Error(`child did not freeze: ${chunk}`));
    });
    child.on('exit', (code) => reject(new Error(`child exited (${code}) before freezing: ${stderr}`)));
  });
  await new Promise((resolve) => child.once('exit', resolve));
}

describe('crash during execute', () => {
  it('killed before the rename: the file is untouched, the step is interrupted, revert is clean', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'target.txt'), 'ORIGINAL\n');
    await killDuringExecute(dataDir, 'before-rename');

    const executor = Executor.open(dataDir);
    try {
      const record = executor.getStep('crash-step');
      expect(record.status).toBe('interrupted');
      expect(record.error?.message).toContain('stopped while this step was running');
      expect(fs.readFileSync(path.join(workspace, 'target.txt'), 'utf8')).toBe('ORIGINAL\n');
      expect(fs.readdirSync(workspace)).toEqual(['target.txt']); // the half-written temp file was swept
      const reverted = await executor.revertStep('crash-step', actorFor('cli'));
      expect(reverted.status).toBe('reverted');
      expect(fs.readFileSync(path.join(workspace, 'target.txt'), 'utf8')).toBe('ORIGINAL\n');
    } finally {
      executor.close();
    }
  });

  it('killed after the rename: the file is whole and new, the step is interrupted, revert restores', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'target.txt'), 'ORIGINAL\n');
    await killDuringExecute(dataDir, 'after-rename');

    const executor = Executor.open(dataDir);
    try {
      expect(executor.getStep('crash-step').status).toBe('interrupted');
      expect(fs.readFileSync(path.join(workspace, 'target.txt'), 'utf8')).toBe('NEW CONTENT\n'.repeat(50_000));
      await executor.revertStep('crash-step', actorFor('cli'));
      expect(fs.readFileSync(path.join(workspace, 'target.txt'), 'utf8')).toBe('ORIGINAL\n');
      const kinds = executor.getAudit({ filters: { stepId: 'crash-step' }, order: 'asc' }).entries.map((e) => e.action);
      expect(kinds).toContain('step.execution_started');
      expect(kinds).toContain('step.interrupted');
      expect(kinds.at(-1)).toBe('step.reverted');
    } finally {
      executor.close();
    }
  });

  it('killed mid-write into folders the step was creating: the folders are on record, and revert removes them', async () => {
    const { dataDir, workspace } = tempSetup();
    await killDuringExecute(dataDir, 'before-rename', 'new/deep/target.txt');
    expect(fs.statSync(path.join(workspace, 'new', 'deep')).isDirectory()).toBe(true);

    const executor = Executor.open(dataDir);
    try {
      expect(executor.getStep('crash-step').status).toBe('interrupted');
      expect(executor.previewRevert('crash-step').directories.map(({ path: p, state }) => [path.relative(workspace, p), state])).toEqual([
        ['new/deep', 'remove'],
        ['new', 'remove'],
      ]);
      const reverted = await executor.revertStep('crash-step', actorFor('cli'));
      expect(reverted.revertOutcome?.directories.map(({ state }) => state)).toEqual(['removed', 'removed']);
      expect(fs.readdirSync(workspace)).toEqual([]);
    } finally {
      executor.close();
    }
  });
});
