import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultPolicy } from '../../../../src/policy/policy-file.js';
import { connectDocker, type DockerClient } from '../../../../src/sandbox/docker/docker-client.js';
import { runCodeInContainer, runSandboxed } from '../../../../src/sandbox/docker/sandbox-run.js';
import { dockerAvailable, ensureSandboxImage, labelledContainers } from '../../../helpers/docker-engine.js';
import { suiteTeardown } from '../../../helpers/teardown.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const hasDocker = dockerAvailable();

/**
 * An engine reached over TCP, as a remote one would be. It is the local engine behind a TCP-to-socket
 * forwarder, so the test can run anywhere; what matters is that Executor cannot assume a shared
 * filesystem and must move the workspace as an archive.
 */
describe.skipIf(!hasDocker)('a Docker engine on another machine (DOCKER_HOST=tcp://…)', () => {
  let forwarder: net.Server;
  let client: DockerClient;
  const localSocket = (process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock').replace(/^unix:\/\//, '');
  const suite = suiteTeardown();

  beforeAll(async () => {
    await ensureSandboxImage();
    forwarder = net.createServer((socket) => {
      const engine = net.connect(localSocket);
      socket.pipe(engine).pipe(socket);
      socket.on('error', () => engine.destroy());
      engine.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => forwarder.listen(0, '127.0.0.1', resolve));
    suite.defer(() => new Promise((resolve) => forwarder.close(resolve)));
    // Plain TCP is refused unless the person accepts the risk; TLS against a real second engine is engine-tls.test.ts.
    client = connectDocker(`tcp://127.0.0.1:${(forwarder.address() as net.AddressInfo).port}`, {
      ...process.env,
      EXECUTOR_ALLOW_INSECURE_ENGINE: '1',
    });
  }, 300_000);

  it('is treated as remote and still yields the exact changeset, moving the workspace in and out as archives', async () => {
    expect(client.local).toBe(false);
    const source = tempDir();
    fs.writeFileSync(path.join(source, 'edit.txt'), 'one\n');
    fs.writeFileSync(path.join(source, 'gone.txt'), 'bye\n');
    fs.writeFileSync(path.join(source, 'same.txt'), 'untouched\n');
    fs.symlinkSync('same.txt', path.join(source, 'link'));
    const outcome = await runSandboxed(client, {
      sourceDir: source,
      argv: ['/bin/sh', '-c', 'id -u; echo two >> edit.txt; rm gone.txt; echo new > new.txt; chmod 600 same.txt'],
      network: 'none',
      policy: defaultPolicy(),
    });
    expect(outcome.run.exitCode).toBe(0);
    expect(outcome.run.stdout.text).toBe('10001\n');
    expect(outcome.changeset.files.map((f) => [f.relativePath, f.kind, f.after?.toString() ?? null, f.modeAfter])).toEqual([
      ['edit.txt', 'modified', 'one\ntwo\n', 0o644],
      ['gone.txt', 'deleted', null, null],
      ['new.txt', 'added', 'new\n', 0o644],
      ['same.txt', 'modified', 'untouched\n', 0o600],
    ]);
    expect(outcome.changeset.skipped).toEqual([]);
    expect(labelledContainers(outcome.run.runId)).toEqual([]);
  });

  it('runs heavy code remotely too', async () => {
    const outcome = await runCodeInContainer({ language: 'python', code: 'print(sum(range(10)))', policy: defaultPolicy() }, client);
    expect(outcome.stdout.text).toBe('45\n');
  });

  it('refuses the allowlisted network, whose proxy socket cannot reach another machine', async () => {
    await expect(
      runSandboxed(client, { sourceDir: tempDir(), argv: ['true'], network: 'allowlist', policy: defaultPolicy() }),
    ).rejects.toMatchObject({
      code: 'SANDBOX_FAILED',
      message: expect.stringContaining('needs an engine on this machine'),
    });
  });
});
