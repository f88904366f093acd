import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Executor } from '../../../src/executor/executor.js';
import { dockerAvailable, ensureSandboxImage, testEngine } from '../../helpers/docker-engine.js';
import { runCli, shownPreviewHash } from '../../helpers/run-cli.js';
import { tempDir, tempSetup } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

function engineDown(): NodeJS.ProcessEnv {
  return { DOCKER_HOST: `unix://${path.join(tempDir(), 'no-engine.sock')}` };
}

describe.skipIf(!hasDocker)('executor sandbox …', () => {
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('status reports a reachable engine, which one it is, its version and the pinned image with its digest', () => {
    const result = runCli(['sandbox', 'status', '--json']);
    expect(result.status).toBe(0);
    const status = result.json<{
      engine: { reachable: boolean; version: string; engine: { name: string; label: string } };
      image: { tag: string; present: boolean; digest: string };
      ready: boolean;
    }>();
    const version = (JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../../package.json'), 'utf8')) as { version: string })
      .version;
    expect(status.engine.reachable).toBe(true);
    expect(status.engine.version).toMatch(/\d+\.\d+/);
    // Podman always with its mode (what a container's uid is on the host differs); Docker only when rootless.
    expect(status.engine.engine.label).toMatch(
      testEngine() === 'podman' ? /^Podman \d+\.\d+\.\d+ \((rootful|rootless)\)$/ : /^Docker \d+\.\d+/,
    );
    expect(runCli(['sandbox', 'status']).stdout).toContain(`: ${status.engine.engine.label} (API `);
    expect(status.image).toMatchObject({ tag: `executor-sandbox:${version}`, present: true, digest: expect.stringMatching(/^sha256:/) });
    expect(status.ready).toBe(true);
  });

  it('status says plainly when no engine answers, and exits non-zero', () => {
    const result = runCli(['sandbox', 'status'], { env: engineDown() });
    expect(result.status).toBe(1);
    expect(result.stdout).toMatch(/Engine {3}NOT reachable at unix:\/\/.*no-engine\.sock/);
    expect(result.stdout).toContain('Ready    no');
  });

  it('image build is skipped when the image for this version exists', () => {
    const result = runCli(['sandbox', 'image', 'build', '--json']);
    expect(result.status).toBe(0);
    expect(result.json()).toMatchObject({ path: 'cached', present: true });
  });

  it('with the engine down, executing a command step fails with SANDBOX_UNAVAILABLE and the step stays approved, then runs once the engine is back', async () => {
    const { dataDir, workspace } = tempSetup();
    fs.writeFileSync(path.join(workspace, 'a.txt'), 'one\n');
    const planFile = path.join(tempDir(), 'plan.json');
    fs.writeFileSync(
      planFile,
      JSON.stringify({ planId: 'p1', steps: [{ id: 'cmd', action: 'runCommand', args: { command: 'echo two >> a.txt' } }] }),
    );
    // The preview is made while the engine is up …
    const proposed = runCli(['--data-dir', dataDir, 'propose', planFile, '--json']);
    expect(proposed.json<{ status: string }[]>()[0]!.status).toBe('awaiting_consent');

    // … and the engine is gone when the person approves.
    const approved = runCli(['--data-dir', dataDir, 'approve', 'cmd', '--preview-hash', shownPreviewHash(dataDir, 'cmd')], {
      env: engineDown(),
    });
    expect(approved.status).toBe(2);
    expect(approved.stderr).toMatch(/SANDBOX_UNAVAILABLE: No Docker engine answers at unix:\/\/.*no-engine\.sock .*it stays approved/);
    const shown = runCli(['--data-dir', dataDir, 'steps', 'show', 'cmd', '--json']);
    expect(shown.json<{ status: string }>().status).toBe('approved');
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('one\n');

    const executor = Executor.open(dataDir);
    try {
      expect(executor.getAudit({ filters: { stepId: 'cmd' } }).entries.map((entry) => entry.action)).toContain('step.execution_deferred');
    } finally {
      executor.close();
    }
    // Retried without the engine it is still deferred; with the engine back it runs the approved preview.
    expect(runCli(['--data-dir', dataDir, 'sandbox', 'retry', 'cmd'], { env: engineDown() }).stderr).toContain('SANDBOX_UNAVAILABLE');
    const retried = runCli(['--data-dir', dataDir, 'sandbox', 'retry', 'cmd', '--json']);
    expect(retried.status).toBe(0);
    expect(retried.json()).toMatchObject({ stepId: 'cmd', status: 'executed', result: { exitCode: 0 } });
    expect(fs.readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('one\ntwo\n');
  });
});
