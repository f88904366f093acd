import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dockerAvailable } from '../../helpers/docker-engine.js';
import { CLI } from '../../helpers/run-cli.js';
import { defer } from '../../helpers/teardown.js';
import { tempDir } from '../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();
const hasBusybox = ['/bin/busybox', '/usr/bin/busybox'].some((candidate) => fs.existsSync(candidate));
// The offline image is assembled from this machine's busybox: without it this file is skipped, loudly,
// and under CI=true (where .ci/run installs busybox-static) its absence is a failure.
if (!hasBusybox) {
  if (process.env.CI === 'true') throw new Error('CI=true but no busybox on this machine: the sandbox image tests must run in CI.');
  console.warn('SKIPPED: the sandbox image build tests need busybox (apt-get install busybox-static).');
}

/** The CLI as a person runs it from a shell whose umask is 077 (Executor sets that one itself, too). */
function cliUnderPrivateUmask(args: string[], env: NodeJS.ProcessEnv): { status: number | null; stdout: string; stderr: string } {
  const quoted = [process.execPath, CLI, ...args].map((word) => `'${word.replace(/'/g, "'\\''")}'`).join(' ');
  const result = spawnSync('/bin/sh', ['-c', `umask 077 && exec ${quoted}`], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 280_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** An image tag of this test alone, removed after it: the shared sandbox image is never replaced. */
function privateTag(name: string): string {
  const tag = `executor-sandbox-${name}:t${process.pid}-${Date.now()}`;
  defer(() => {
    spawnSync('docker', ['rmi', '-f', tag], { stdio: 'ignore' });
  });
  return tag;
}

describe.skipIf(!hasDocker || !hasBusybox)('executor sandbox image build and status, as documented', () => {
  it('an image built by `executor sandbox image build` under umask 077 runs commands, and status proves it by running one', () => {
    const env = { EXECUTOR_SANDBOX_IMAGE: privateTag('umask') };
    const built = cliUnderPrivateUmask(['sandbox', 'image', 'build', '--force', '--json'], env);
    expect(built.status, built.stderr).toBe(0);
    expect(JSON.parse(built.stdout)).toMatchObject({ tag: env.EXECUTOR_SANDBOX_IMAGE, path: 'offline-host-rootfs', present: true });

    const status = cliUnderPrivateUmask(['sandbox', 'status', '--json'], env);
    expect(status.status, status.stderr + status.stdout).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      image: { tag: env.EXECUTOR_SANDBOX_IMAGE, present: true },
      probe: { ran: true, exitCode: 0 },
      ready: true,
    });
    const words = cliUnderPrivateUmask(['sandbox', 'status'], env);
    expect(words.stdout).toMatch(/Run {6}a test command ran in a sandbox container/);
    expect(words.stdout).toContain('Ready    yes');
  }, 300_000);

  it('status of an image whose folders the sandbox user cannot enter says Ready no, and why, instead of Ready yes', () => {
    // The image the bug made: /bin closed to everyone but root (0700), so every command exits 126.
    const stage = tempDir('executor-dead-rootfs-');
    fs.mkdirSync(path.join(stage, 'bin'), { mode: 0o700 });
    fs.chmodSync(path.join(stage, 'bin'), 0o700);
    fs.copyFileSync(
      fs.realpathSync(['/bin/busybox', '/usr/bin/busybox'].find((candidate) => fs.existsSync(candidate))!),
      path.join(stage, 'bin/busybox'),
    );
    fs.chmodSync(path.join(stage, 'bin/busybox'), 0o755);
    fs.symlinkSync('busybox', path.join(stage, 'bin/sh'));
    for (const dir of ['tmp', 'workspace', 'proc', 'sys', 'dev', 'etc']) fs.mkdirSync(path.join(stage, dir), { mode: 0o777 });
    const tag = privateTag('dead');
    const tar = spawnSync('tar', ['-C', stage, '--numeric-owner', '--owner=0', '--group=0', '-cf', '-', '.'], {
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(tar.status).toBe(0);
    const imported = spawnSync('docker', ['import', '--change', 'USER 10001:10001', '--change', 'WORKDIR /workspace', '-', tag], {
      input: tar.stdout,
      encoding: 'utf8',
    });
    expect(imported.status, imported.stderr).toBe(0);

    const status = cliUnderPrivateUmask(['sandbox', 'status', '--json'], { EXECUTOR_SANDBOX_IMAGE: tag });
    expect(status.status).toBe(1);
    const parsed = JSON.parse(status.stdout) as { ready: boolean; image: { present: boolean }; probe: { ran: boolean; problem: string } };
    expect(parsed.image.present).toBe(true);
    expect(parsed.ready).toBe(false);
    expect(parsed.probe.ran).toBe(false);
    expect(parsed.probe.problem).toMatch(/sandbox image build --force/);
    const words = cliUnderPrivateUmask(['sandbox', 'status'], { EXECUTOR_SANDBOX_IMAGE: tag });
    expect(words.stdout).toMatch(/Run {6}FAILED: /);
    expect(words.stdout).toContain('Ready    no');
  }, 300_000);
});
