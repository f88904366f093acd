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

  it('a forced rebuild removes the images earlier rebuilds replaced, keeping the one it just replaced and any still in use', async () => {
    const exists = (id: string) => spawnSync('docker', ['image', 'inspect', id], { stdio: 'ignore' }).status === 0;
    const rebuild = async () => (await buildSandboxImage(client, { tag, force: true })).digest!;
    const first = await rebuild();
    const second = await rebuild();
    expect(second).not.toBe(first);
    // Just replaced: a run that resolved the tag a moment ago may still create its container from it by id.
    expect(exists(first)).toBe(true);
    const third = await rebuild();
    // Replaced one rebuild ago and unused: gone, not left on the engine by every rebuild.
    expect(exists(first)).toBe(false);
    expect(exists(second)).toBe(true);
    expect(exists(third)).toBe(true);

    // A container of an old image (a run under way) keeps it: the engine refuses, and the rebuild still succeeds.
    const holder = spawnSync('docker', ['create', '--network', 'none', tag, 'true'], { encoding: 'utf8' }).stdout.trim();
    expect(holder).not.toBe('');
    let fourth = '';
    try {
      fourth = await rebuild();
      await rebuild();
      expect(exists(third)).toBe(true);
    } finally {
      spawnSync('docker', ['rm', '-f', holder], { stdio: 'ignore' });
    }
    // The images left untagged here (the last one goes with the tag, after the file).
    for (const id of [second, third, fourth].filter(Boolean)) spawnSync('docker', ['image', 'rm', id], { stdio: 'ignore' });
  }, 300_000);
});
