import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, runCliAsync, type CliResult } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { canMountTmpfs, dataDirOnSmallDisk, fillDisk } from '../../helpers/small-disk.js';
import { tempDir } from '../../helpers/temp-dirs.js';

/*
 * The data directory's disk fills (a real small tmpfs, root only) while a running `serve` has group
 * commits pending: a 120-step auto-approved plan executing and four proposers each sending one-step
 * plans. The workspace is on another disk, so effects land while records cannot. Every caller gets
 * an answer with a named code (never INTERNAL, never a hang), no answer says "nothing was changed"
 * for a plan one of whose files was written, and once there is room again no step whose file is on
 * disk is still waiting to run, none is stuck running, and none runs twice.
 */
const canMount = () => canMountTmpfs('full-disk-under-serve');

const STEPS = 120;

/** A CLI run that is killed at its time limit is an answer too: one that never came. */
function answered(args: string[], timeoutMs = 120_000): Promise<CliResult> {
  const started = Date.now();
  return runCliAsync(args, { timeoutMs }).catch((error: Error) => ({
    status: null,
    stdout: '',
    stderr: `NO ANSWER after ${Date.now() - started} ms (${error.message.split('\n')[0]})`,
    json: () => {
      throw error;
    },
  }));
}
const NOT_RUN = ['proposed', 'evaluated', 'awaiting_consent', 'approved'];

// Issue 24: a step whose start cannot be recorded is held (src/executor/storage-hold.ts); the waiting
// `propose` hears STORAGE_FULL with each step's state, and the plan goes on once space returns.
describe.runIf(canMount())('a data directory whose disk fills under a running serve', () => {
  it('every waiting caller gets a named answer, and each step says what happened to it', async () => {
    const { root, dataDir, workspace } = dataDirOnSmallDisk(24, { autoApprove: 'HIGH' });
    const base = tempDir('plans-');
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({
        steps: Array.from({ length: STEPS }, (_, index) => ({
          id: `p${index}`,
          action: 'writeFile',
          args: { path: path.join(workspace, `p${index}.txt`), content: `${index}\n`.repeat(300) },
        })),
      }),
    );
    const serve = await startServe(dataDir);
    let serveSaid = '';
    serve.child.stderr!.on('data', (chunk: Buffer) => (serveSaid += chunk.toString()));
    const answers: { what: string; result: CliResult; files: string[] }[] = [];
    const plan = answered(['--data-dir', dataDir, '--json', 'propose', planFile], 240_000).then((result) =>
      answers.push({ what: 'plan', result, files: Array.from({ length: STEPS }, (_, index) => `p${index}.txt`) }),
    );
    let filled = false;
    const proposers = Array.from({ length: 4 }, async (_, proposer) => {
      for (let index = 0; !filled || index < 3; index++) {
        const id = `q${proposer}x${index}`;
        const file = path.join(base, `${id}.json`);
        fs.writeFileSync(
          file,
          JSON.stringify({ steps: [{ id, action: 'writeFile', args: { path: path.join(workspace, `${id}.txt`), content: `${id}\n` } }] }),
        );
        const result = await answered(['--data-dir', dataDir, '--json', 'propose', file]);
        answers.push({ what: id, result, files: [`${id}.txt`] });
        if (index > 40) break;
      }
    });
    await expect.poll(() => fs.readdirSync(workspace).length, { timeout: 120_000, interval: 20 }).toBeGreaterThan(15);
    // Fill the disk to the last block while the plan's commits are pending.
    const filler = fillDisk(root);
    filled = true;
    await Promise.all([plan, ...proposers]);

    console.log(
      answers
        .map(({ what, result }) => `${what}: ${result.status} ${(result.stdout + result.stderr).replace(/\s+/g, ' ').slice(0, 300)}`)
        .join('\n'),
      `\nserve said: ${serveSaid.slice(0, 3000)}`,
    );
    // Every answer: success, or a named code; never INTERNAL, never the host not answering.
    const refused: string[] = [];
    for (const { what, result, files } of answers) {
      if (result.status === 0) continue;
      const text = result.stdout + result.stderr;
      // Soft: what the steps say once there is room again is checked below all the same.
      expect.soft(text, what).not.toMatch(/INTERNAL|IPC_UNAVAILABLE|did not answer|NO ANSWER/);
      expect.soft(text, what).toMatch(/STORAGE_FULL|DATA_DIR|[A-Z_]{6,}/);
      const written = files.filter((file) => fs.existsSync(path.join(workspace, file)));
      if (written.length > 0) expect.soft(text, `${what} wrote ${written.join(', ')} yet said`).not.toMatch(/[Nn]othing was changed/);
      refused.push(what);
    }
    expect(refused.length, 'the full disk refused nothing').toBeGreaterThan(0);

    // Room again: the host goes on.
    fs.rmSync(filler);
    await expect
      .poll(
        () => {
          const listed = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
          if (listed.status !== 0) return `steps list: ${listed.stderr}`;
          const steps = listed.json<{ step: { id: string }; status: string }[]>();
          // Auto-approved steps: with room again none is left waiting for a run that never comes (stuck), none stays running,
          // and none whose file is on disk is still held as not run.
          return steps
            .filter(
              ({ step, status }) =>
                ['proposed', 'evaluated', 'approved', 'running'].includes(status) ||
                (NOT_RUN.includes(status) && fs.existsSync(path.join(workspace, `${step.id}.txt`))),
            )
            .map(({ step, status }) => `${step.id} ${status}`);
        },
        { timeout: 120_000, interval: 500 },
      )
      .toEqual([]);
    const mtimes = new Map(fs.readdirSync(workspace).map((name) => [name, fs.statSync(path.join(workspace, name)).mtimeMs]));
    expect(await serve.stop()).toBe(0);
    const again = await startServe(dataDir);
    await expect
      .poll(
        () =>
          runCli(['--data-dir', dataDir, '--json', 'steps', 'list'])
            .json<{ status: string }[]>()
            .filter((s) => ['running', 'approved', 'proposed', 'evaluated'].includes(s.status)).length,
        {
          timeout: 120_000,
          interval: 500,
        },
      )
      .toBe(0);
    for (const [name, mtimeMs] of mtimes)
      expect(fs.statSync(path.join(workspace, name)).mtimeMs, `${name} was written again`).toBe(mtimeMs);
    expect(await again.stop()).toBe(0);
  }, 600_000);
});
