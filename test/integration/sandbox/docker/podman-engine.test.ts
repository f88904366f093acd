import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultPolicy } from '../../../../src/policy/policy-file.js';
import { connectDocker, type DockerClient } from '../../../../src/sandbox/docker/docker-client.js';
import { runSandboxed } from '../../../../src/sandbox/docker/sandbox-run.js';
import { dockerAvailable, ensureSandboxImage, labelledContainers, testEngine } from '../../../helpers/docker-engine.js';
import { suiteTeardown } from '../../../helpers/teardown.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

/**
 * A Podman API service of this test's own, on a socket of its own: the engine as a person may have
 * set it up. `conf` is its containers.conf (CONTAINERS_CONF replaces the machine's); `hideInit` runs
 * it in a mount namespace of its own where /usr/libexec/podman is empty, as on a machine without
 * catatonit. It shares the storage of the Podman the pass runs against, so the sandbox image is here too.
 */
async function podmanService(
  suite: ReturnType<typeof suiteTeardown>,
  options: { conf?: string; hideInit?: boolean },
): Promise<DockerClient> {
  const dir = tempDir('executor-podman-', suite);
  const confFile = path.join(dir, 'containers.conf');
  fs.writeFileSync(confFile, options.conf ?? '');
  const socket = path.join(dir, 'podman.sock');
  const serve = `exec podman system service --time=0 unix://${socket}`;
  const service = spawn(
    options.hideInit ? 'unshare' : 'sh',
    options.hideInit ? ['-m', 'sh', '-c', `mount -t tmpfs tmpfs /usr/libexec/podman && ${serve}`] : ['-c', serve],
    { env: { ...process.env, CONTAINERS_CONF: confFile }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  suite.killAfter(service, { signal: 'SIGTERM' });
  const client = connectDocker(`unix://${socket}`);
  await expect
    .poll(
      () =>
        client.docker.ping().then(
          () => true,
          () => false,
        ),
      { timeout: 30_000 },
    )
    .toBe(true);
  return client;
}

// Runs in the Podman pass (EXECUTOR_TEST_ENGINE=podman, see .ci/run): what is Podman's own.
describe.skipIf(!hasDocker || testEngine() !== 'podman')('Podman as the engine', () => {
  const suite = suiteTeardown();
  beforeAll(async () => {
    await ensureSandboxImage();
  }, 300_000);

  it('sees a run end when Podman keeps no event log (its wait for the next exit would never answer), and a timeout too', async () => {
    const client = await podmanService(suite, { conf: '[engine]\nevents_logger = "none"\n' });
    const started = performance.now();
    const done = await runSandboxed(client, {
      sourceDir: tempDir(),
      argv: ['/bin/sh', '-c', 'echo ran; exit 3'],
      network: 'none',
      policy: defaultPolicy(),
    });
    expect({ exitCode: done.run.exitCode, stdout: done.run.stdout.text, timedOut: done.run.timedOut }).toEqual({
      exitCode: 3,
      stdout: 'ran\n',
      timedOut: false,
    });
    // Far below the 2-minute timeout that every run on such an engine used to reach.
    expect(performance.now() - started).toBeLessThan(30_000);

    const stopped = await runSandboxed(client, {
      sourceDir: tempDir(),
      argv: ['sleep', '60'],
      network: 'none',
      policy: defaultPolicy(),
      timeoutMs: 1500,
    });
    expect({ timedOut: stopped.run.timedOut, exitCode: stopped.run.exitCode }).toEqual({ timedOut: true, exitCode: null });
    expect(labelledContainers(stopped.run.runId)).toEqual([]);
  });

  // Hiding the helper takes a mount namespace: root's (rootful Podman's) to make.
  it.skipIf(process.getuid?.() !== 0)(
    'says which package is missing when Podman cannot find its init helper, and keeps the step for a retry',
    async () => {
      const client = await podmanService(suite, { hideInit: true });
      await expect(
        runSandboxed(client, { sourceDir: tempDir(), argv: ['true'], network: 'none', policy: defaultPolicy() }),
      ).rejects.toMatchObject({ code: 'SANDBOX_UNAVAILABLE', message: expect.stringContaining('apt-get install catatonit') });
    },
  );
});
