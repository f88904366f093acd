import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, runCliAsync } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * A real `serve` running an auto-approved plan forward (each step's outcome committed before its own sync,
 * told after the next intent's) is SIGKILLed mid-plan, several times. After each restart: no step ran twice
 * (at most one step.executed per step in the audit trail, each file holds its content once), `steps list`
 * says executed only for steps whose file is there, and the audit log verifies intact at the end.
 */

const STEPS = 150;

describe('a serve SIGKILLed mid-plan while outcomes ride on the next sync (attack)', () => {
  it('runs no step twice, and steps list and the files agree after every restart', async () => {
    const { dataDir, workspace, base } = tempSetup({ autoApprove: 'MEDIUM' });
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        steps: Array.from({ length: STEPS }, (_, index) => ({
          id: `s${index}`,
          action: 'writeFile',
          args: { path: path.join(workspace, `f${index}.txt`), content: `step ${index}\n` },
        })),
      }),
    );
    let serve = await startServe(dataDir);
    const proposing = runCliAsync(['--data-dir', dataDir, '--json', 'propose', planFile], { timeoutMs: 300_000 });
    for (const atLeast of [20, 60]) {
      await expect.poll(() => fs.readdirSync(workspace).length, { timeout: 120_000, interval: 10 }).toBeGreaterThanOrEqual(atLeast);
      const exited = new Promise((resolve) => serve.child.once('exit', resolve));
      serve.child.kill('SIGKILL');
      await exited;
      if (atLeast === 20) await proposing;
      const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<{ step: { id: string }; status: string }[]>();
      for (const {
        step: { id },
        status,
      } of listed) {
        const file = path.join(workspace, `f${id.slice(1)}.txt`);
        // Executed only with its file there; a step marked running may or may not have written it (recovery says interrupted).
        if (status === 'executed') expect([id, fs.existsSync(file)]).toEqual([id, true]);
      }
      serve = await startServe(dataDir);
    }
    await expect
      .poll(
        () =>
          runCli(['--data-dir', dataDir, '--json', 'steps', 'list'])
            .json<{ status: string }[]>()
            .filter((step) => ['approved', 'running', 'proposed', 'evaluated'].includes(step.status)).length,
        { timeout: 240_000, interval: 500 },
      )
      .toBe(0);
    const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<{ step: { id: string }; status: string }[]>();
    expect(listed.length).toBe(STEPS);
    for (const {
      step: { id },
      status,
    } of listed) {
      const file = path.join(workspace, `f${id.slice(1)}.txt`);
      if (status === 'executed') expect([id, fs.readFileSync(file, 'utf8')]).toEqual([id, `step ${id.slice(1)}\n`]);
      else expect([id, status]).toEqual([id, expect.stringMatching(/interrupted|awaiting_consent|rejected|failed/)]);
    }
    const executedRecords = runCli([
      '--data-dir',
      dataDir,
      '--json',
      'audit',
      'show',
      '--action',
      'step.executed',
      '--limit',
      '10000',
    ]).json<{ action: string; stepId?: string }[]>();
    const counts = new Map<string, number>();
    for (const entry of executedRecords)
      if (entry.action === 'step.executed' && entry.stepId) counts.set(entry.stepId, (counts.get(entry.stepId) ?? 0) + 1);
    expect([...counts.values()].filter((count) => count > 1)).toEqual([]);
    expect(await serve.stop()).toBe(0);
    const verified = runCli(['--data-dir', dataDir, 'audit', 'verify', '--offline'], { timeoutMs: 120_000 });
    expect(verified.status, verified.stdout + verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/intact/);
  }, 600_000);
});
