import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDocker } from '../../../../src/sandbox/docker/docker-client.js';
import { buildSandboxImage, imageInfo, sandboxImageTag } from '../../../../src/sandbox/docker/sandbox-image.js';
import { dockerAvailable } from '../../../helpers/docker-engine.js';

const hasDocker = dockerAvailable();

describe.skipIf(!hasDocker)('the sandbox image, built offline', () => {
  const client = connectDocker();
  // Its own tag, so the shared image of the other tests is not rebuilt under them.
  const tag = `executor-sandbox-test:${process.pid}`;

  afterAll(async () => {
    await client.docker
      .getImage(tag)
      .remove({ force: true })
      .catch(() => undefined);
  });

  it('is pinned to the app version', () => {
    expect(sandboxImageTag('1.2.3')).toBe('executor-sandbox:1.2.3');
  });

  it('assembles node, busybox and python3 from this machine with `docker import`, then is cached by tag', async () => {
    const built = await buildSandboxImage(client, { tag, force: true });
    expect(built).toMatchObject({ path: 'offline-host-rootfs', present: true, builtBy: 'offline-host-rootfs' });
    expect(built.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const hasPython = spawnSync('python3', ['--version']).status === 0;
    expect(built.python).toBe(hasPython);

    const run = spawnSync(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        'none',
        // As the app's own containers pin them: an engine's defaults may be more than it can grant (Podman's, without CAP_SYS_RESOURCE).
        '--ulimit',
        'nofile=1024:1024',
        '--ulimit',
        'nproc=4096:4096',
        tag,
        'sh',
        '-c',
        `id -u; node -e 'console.log(process.version)'; ls /bin | wc -l${hasPython ? '; python3 -c "import ssl, sqlite3, json; print(42)"' : ''}`,
      ],
      { encoding: 'utf8' },
    );
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toBe('10001');
    expect(lines[1]).toBe(process.version);
    expect(Number(lines[2])).toBeGreaterThan(100);
    if (hasPython) expect(lines[3]).toBe('42');

    const again = await buildSandboxImage(client, { tag });
    expect(again).toMatchObject({ path: 'cached', digest: built.digest });
    expect((await imageInfo(client, tag)).digest).toBe(built.digest);
  });

  it('a forced rebuild removes the image it took the tag from, and keeps one still in use', async () => {
    const exists = (id: string) => spawnSync('docker', ['image', 'inspect', id], { stdio: 'ignore' }).status === 0;
    const first = await buildSandboxImage(client, { tag, force: true });
    const second = await buildSandboxImage(client, { tag, force: true });
    expect(second.digest).not.toBe(first.digest);
    expect(exists(second.digest!)).toBe(true);
    // Untagged and unused: gone, not left on the engine by every rebuild.
    expect(exists(first.digest!)).toBe(false);

    // A container of the old image (a run under way) keeps it: the engine refuses, and the rebuild still succeeds.
    const holder = spawnSync('docker', ['create', '--network', 'none', tag, 'true'], { encoding: 'utf8' }).stdout.trim();
    expect(holder).not.toBe('');
    try {
      const third = await buildSandboxImage(client, { tag, force: true });
      expect(third.digest).not.toBe(second.digest);
      expect(exists(second.digest!)).toBe(true);
    } finally {
      spawnSync('docker', ['rm', '-f', holder], { stdio: 'ignore' });
    }
    spawnSync('docker', ['image', 'rm', second.digest!], { stdio: 'ignore' });
  }, 300_000);
});
