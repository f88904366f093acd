import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { dockerAvailable, ensureSandboxImage } from '../../helpers/docker-engine.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { runCli, runCliAsync, shownPreviewHash } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

interface Status {
  pause: { paused: boolean; reason: string | null; pausedAt: string | null };
  waitingForYou: number;
  host: boolean;
}

const status = (dataDir: string) => runCli(['--data-dir', dataDir, '--json', 'status']).json<Status>();
const stepsOf = (dataDir: string) =>
  runCli(['--data-dir', dataDir, '--json', 'steps', 'list']).json<
    { step: { id: string }; status: string; error: { message: string } | null }[]
  >();

describe('executor pause / resume through the real CLI and an MCP agent', () => {
  it('holds an agent waiting on a decision, refuses its new proposal with HOST_PAUSED, stays paused across a host restart, and lets it work after resume', async () => {
    const { dataDir, workspace } = tempSetup();
    let serve = await startServe(dataDir);
    let mcp = await startMcp(dataDir, { waitSeconds: 120 });
    const write = (name: string) => ({ path: path.join(workspace, name), content: 'x', purpose: `write ${name}` });

    // The agent's call waits for the person's decision (a long poll).
    const waiting = mcp.call('write_file', write('held.txt'), { timeoutMs: 120_000 });
    await expect.poll(() => stepsOf(dataDir)[0]?.status, { timeout: 30_000 }).toBe('awaiting_consent');
    const heldId = stepsOf(dataDir)[0]!.step.id;

    const paused = await runCliAsync(['--data-dir', dataDir, 'pause', '--reason', 'going to lunch']);
    expect(paused.status).toBe(0);
    expect(paused.stdout).toContain('ALL AGENTS STOPPED');
    expect(paused.stdout).toContain('going to lunch');
    // The long poll ends at once: held, not rejected, and the reason stays the person's.
    const held = await waiting;
    expect(held.isError).toBe(false);
    expect(held.text).toMatch(/^PENDING: held: the user stopped all agents at /);
    expect(held.text).not.toContain('lunch');

    const refused = await mcp.call('write_file', write('new.txt'));
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/^FAILED: HOST_PAUSED: The user stopped all agents at .*nothing was proposed/);
    expect(stepsOf(dataDir)).toHaveLength(1);
    expect(status(dataDir)).toMatchObject({ pause: { paused: true, reason: 'going to lunch' }, waitingForYou: 1, host: true });
    // The person's approval waits too.
    const approve = runCli(['--data-dir', dataDir, 'approve', heldId, '--preview-hash', shownPreviewHash(dataDir, heldId)]);
    expect(approve.status).toBe(2);
    expect(approve.stderr).toContain('HOST_PAUSED');

    // A restart of the host keeps the switch on.
    await mcp.close();
    expect(await serve.stop()).toBe(0);
    expect(status(dataDir)).toMatchObject({ pause: { paused: true, reason: 'going to lunch' }, host: false });
    serve = await startServe(dataDir);
    mcp = await startMcp(dataDir, { waitSeconds: 1 });
    expect(status(dataDir)).toMatchObject({ pause: { paused: true }, host: true });
    // (A new MCP process is a new agent: the held step is the first one's, and still waits.)
    expect(stepsOf(dataDir)[0]).toMatchObject({ step: { id: heldId }, status: 'awaiting_consent' });
    expect((await mcp.call('write_file', write('again.txt'))).text).toContain('HOST_PAUSED');

    const resumed = runCli(['--data-dir', dataDir, 'resume']);
    expect(resumed.stdout).toContain('Resumed');
    expect(status(dataDir).pause.paused).toBe(false);
    const after = await mcp.call('write_file', write('after.txt'));
    expect(after.text).toMatch(/^PENDING: waiting for the user/);
    expect(stepsOf(dataDir).find((record) => record.step.id === heldId)?.status).toBe('awaiting_consent');
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show']).json<{ action: string; userId: { channel: string } }[]>();
    expect(audit.filter((entry) => entry.action.startsWith('host.')).map((entry) => [entry.action, entry.userId.channel])).toEqual(
      expect.arrayContaining([
        ['host.paused', 'cli'],
        ['host.resumed', 'cli'],
      ]),
    );
  }, 240_000);
});

/** The sandbox containers a host process started (`docker ps -a`), running or not. */
function containersOf(pid: number): string[] {
  const listed = spawnSync('docker', ['ps', '-aq', '--filter', `label=dev.executor.sandbox.pid=${pid}`], { encoding: 'utf8' });
  return listed.stdout.split('\n').filter(Boolean);
}

describe.skipIf(!dockerAvailable())('executor pause and a command running in Docker', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('cancels the running command, kills its container and applies nothing; the record says the person stopped all agents', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const serve = await startServe(dataDir);
    const planFile = path.join(base, 'plan.json');
    const command = 'echo made > made.txt; i=0; while [ $i -lt 20 ]; do i=$((i+1)); echo "line $i"; sleep 0.3; done';
    fs.writeFileSync(planFile, JSON.stringify({ steps: [{ id: 'slow', action: 'runCommand', args: { command } }] }));
    runCli(['--data-dir', dataDir, 'propose', planFile], { timeoutMs: 60_000 });
    await expect.poll(() => stepsOf(dataDir)[0]?.status, { timeout: 60_000 }).toBe('awaiting_consent');
    await expect.poll(() => containersOf(serve.info.pid), { timeout: 15_000 }).toEqual([]);
    // A workspace changed since the dry run: the approval runs the command again (the run to stop), not the dry run's changes.
    fs.writeFileSync(path.join(workspace, 'other.txt'), 'changed since the dry run\n');
    const approving = runCliAsync([
      '--data-dir',
      dataDir,
      '--json',
      'approve',
      'slow',
      '--preview-hash',
      shownPreviewHash(dataDir, 'slow'),
    ]);
    await expect.poll(() => containersOf(serve.info.pid).length, { timeout: 30_000 }).toBe(1);
    const paused = await runCliAsync(['--data-dir', dataDir, 'pause']);
    expect(paused.status).toBe(0);
    // pause answers once the container is gone.
    expect(containersOf(serve.info.pid)).toEqual([]);
    const approved = await approving;
    expect(approved.json<{ status: string }>().status).toBe('cancelled');
    const [slow] = stepsOf(dataDir);
    expect(slow!.status).toBe('cancelled');
    expect(slow!.error?.message).toMatch(/Cancelled because the user stopped all agents.*before anything was applied/);
    expect(fs.existsSync(path.join(workspace, 'made.txt'))).toBe(false);
  }, 240_000);
});
