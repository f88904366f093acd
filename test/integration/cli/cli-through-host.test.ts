import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

describe('the CLI with a host running', () => {
  it('talks to a running `executor serve` instead of opening the database, and falls back when it stops', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const serve = await startServe(dataDir);
    expect(serve.info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#token=[A-Za-z0-9_-]{40,}$/);
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({ steps: [{ id: 'one', action: 'writeFile', args: { path: path.join(workspace, 'f.txt'), content: 'x' } }] }),
    );

    const proposed = runCli(['--data-dir', dataDir, '--json', 'propose', planFile]);
    expect(proposed.stderr).toBe('');
    expect(proposed.json<{ status: string }[]>()[0]!.status).toBe('awaiting_consent');
    const approved = runCli(['--data-dir', dataDir, '--json', 'approve', 'one', '--preview-hash', shownPreviewHash(dataDir, 'one')]);
    expect(approved.json<{ status: string }>().status).toBe('executed');
    // The host's audit trail names the CLI channel for the approval.
    const audit = runCli(['--data-dir', dataDir, '--json', 'audit', 'show', '--step', 'one']).json<
      { action: string; userId: { channel: string } }[]
    >();
    expect(audit.find((entry) => entry.action === 'step.approved')?.userId.channel).toBe('cli');

    // A fresh browser URL from the running host; it opens the page.
    const fresh = runCli(['--data-dir', dataDir, '--json', 'web-url']).json<{ url: string }>().url;
    expect(fresh).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${serve.info.port}/#token=`));
    expect(fresh).not.toBe(serve.info.url);
    expect((await fetch(fresh)).status).toBe(200);

    expect(await serve.stop()).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'executor.lock'))).toBe(false);
    const noHost = runCli(['--data-dir', dataDir, 'web-url']);
    expect(noHost.status).toBe(2);
    expect(noHost.stderr).toMatch(/NOT_AVAILABLE: No Executor host is running/);
    const direct = runCli(['--data-dir', dataDir, '--json', 'steps', 'list']);
    expect(direct.json<{ status: string }[]>()[0]!.status).toBe('executed');
  });

  it('propose --wait returns once the step waits for the person, saying so, and the plan goes on when they decide', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const serve = await startServe(dataDir);
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({ steps: [{ id: 'w1', action: 'writeFile', args: { path: path.join(workspace, 'w.txt'), content: 'y' } }] }),
    );
    const waited = runCli(['--data-dir', dataDir, 'propose', '--wait', planFile], { timeoutMs: 30_000 });
    expect(waited.status).toBe(1);
    expect(waited.stderr).toContain('1 step waits for your decision in the window');
    expect(waited.stderr).toContain('w1');
    expect(
      runCli(['--data-dir', dataDir, '--json', 'approve', 'w1', '--preview-hash', shownPreviewHash(dataDir, 'w1')]).json<{
        status: string;
      }>().status,
    ).toBe('executed');
    expect(fs.readFileSync(path.join(workspace, 'w.txt'), 'utf8')).toBe('y');
    await serve.stop();
  });

  it('propose --wait --timeout returns in time when the host stops answering', async () => {
    const { dataDir, workspace, base } = tempSetup();
    const serve = await startServe(dataDir);
    const planFile = path.join(base, 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({ steps: [{ id: 'd1', action: 'writeFile', args: { path: path.join(workspace, 'd.txt'), content: 'z' } }] }),
    );
    // A host that is there (its socket accepts) but never answers.
    serve.child.kill('SIGSTOP');
    try {
      // With --wait and without it (then --timeout bounds the wait for the previews): the same promise.
      for (const wait of [['--wait'], []]) {
        const startedAt = Date.now();
        const waiter = spawn(process.execPath, [CLI, '--data-dir', dataDir, 'propose', ...wait, '--timeout', '2', planFile], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let err = '';
        waiter.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
        const code = await new Promise<number | null>((resolve) => waiter.once('exit', resolve));
        expect(code).toBe(2);
        expect(err).toMatch(/IPC_UNAVAILABLE: The Executor host did not answer within 2 s/);
        // Two seconds, plus the start of a node process on a busy machine; never the 10 s hello timeout or more.
        expect(Date.now() - startedAt).toBeLessThan(9_000);
      }
    } finally {
      serve.child.kill('SIGCONT');
    }
    await serve.stop();
  });

  it('refuses a second host for the same data directory with a clear BUSY message', async () => {
    const { dataDir } = tempSetup();
    await startServe(dataDir);
    const second = runCli(['--data-dir', dataDir, 'serve'], { timeoutMs: 20_000 });
    expect(second.status).toBe(2);
    expect(second.stderr).toMatch(/BUSY: busy: the data directory .* is held by pid \d+/);
  });
});
