import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxImageTag } from '../../../../src/sandbox/docker/sandbox-image.js';
import { dockerAvailable, ensureSandboxImage } from '../../../helpers/docker-engine.js';
import { openExecutor } from '../../../helpers/open-executor.js';
import { runCliAsync, type CliResult } from '../../../helpers/run-cli.js';
import { approveCommandOnEngine, proposeCommandOnEngine, type EngineStatusJson } from '../../../helpers/remote-engine-step.js';
import { defer, suiteTeardown } from '../../../helpers/teardown.js';
import { tempDir, tempSetup } from '../../../helpers/temp-dirs.js';
import { copyImageInto, startTlsDockerd, type TlsEngine } from '../../../helpers/tls-dockerd.js';

const hasDocker = dockerAvailable();
const ENGINE_MACHINE = 'executor-remote-engine-test';

type StatusJson = EngineStatusJson;

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return runCliAsync(args, { env, timeoutMs: 240_000 });
}

/** Containers the test engine created for sandbox runs, by its own event log. */
function sandboxContainersCreated(engine: TlsEngine): number {
  const out = execFileSync(
    'docker',
    [
      '-H',
      `unix://${engine.socket}`,
      'events',
      '--since',
      '0',
      '--until',
      String(Math.ceil(Date.now() / 1000) + 1),
      '--filter',
      'type=container',
      '--filter',
      'event=create',
      '--filter',
      'label=dev.executor.sandbox',
      '--format',
      '{{.ID}}',
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  return out.split('\n').filter(Boolean).length;
}

/**
 * Executor pointed at a remote engine the way the docker CLI is: DOCKER_HOST=tcp://…, DOCKER_TLS_VERIFY=1,
 * DOCKER_CERT_PATH. The engine is a second real dockerd with certificates this test makes; it
 * shares no socket with Executor, so the workspace travels to it and back as archives.
 */
describe.skipIf(!hasDocker)('a remote engine over TCP with TLS (a second real dockerd with its own certificates)', () => {
  const suite = suiteTeardown();
  let engine: TlsEngine;

  beforeAll(async () => {
    await ensureSandboxImage();
    // On a host name of its own, so that reached through its unix socket it reads as another machine.
    engine = await startTlsDockerd(suite, { hostname: ENGINE_MACHINE });
    copyImageInto(engine, sandboxImageTag());
  }, 300_000);

  it('sandbox status names the engine, says TLS is verified and the workspace travels as archives, and a command runs there: Ready', async () => {
    const result = await cli(['sandbox', 'status', '--json'], engine.env(engine.certs.good));
    expect(result.status, result.stderr).toBe(0);
    const status = JSON.parse(result.stdout) as StatusJson;
    expect(status.engine).toMatchObject({
      reachable: true,
      endpoint: engine.host,
      access: { transport: 'tcp', security: 'tls-verified', tlsVerified: true, certDir: engine.certs.good, workspace: 'archive' },
    });
    expect(status.ready).toBe(true);

    const text = await cli(['sandbox', 'status'], engine.env(engine.certs.good));
    expect(text.stdout).toContain(`Engine   reachable at ${engine.host}`);
    expect(text.stdout).toContain(`Access   TCP with TLS verified: the engine's certificate checked against ${engine.certs.good}/ca.pem`);
    expect(text.stdout).toContain('Ready    yes');
  }, 240_000);

  it('a command step previews and runs on the remote engine; a wrong CA, a stranger client certificate or plain TCP defer it with a named error, and it stays approved', async () => {
    const good = engine.env(engine.certs.good);
    const createdBefore = sandboxContainersCreated(engine);
    const {
      dataDir,
      workspace,
      shown: waiting,
    } = await proposeCommandOnEngine((args) => cli(args, good), 'echo two >> notes.txt; cat notes.txt');
    expect(waiting.status).toBe('awaiting_consent');
    // The dry run ran on the TLS engine: its own event log holds the container.
    expect(waiting.preview.stdout.text).toBe('one\ntwo\n');
    expect(sandboxContainersCreated(engine)).toBeGreaterThan(createdBefore);

    // Approved with an engine the client cannot trust: nothing runs, the step stays approved.
    const wrongCa = await cli(
      ['--data-dir', dataDir, 'approve', 'cmd', '--preview-hash', waiting.previewHash],
      engine.env(engine.certs.wrongCa),
    );
    expect(wrongCa.status).toBe(2);
    expect(wrongCa.stderr).toContain(
      `ENGINE_TLS_FAILED: TLS with the engine at ${engine.host} failed: the engine's certificate is not one ca.pem`,
    );
    const afterWrongCa = JSON.parse((await cli(['--data-dir', dataDir, 'steps', 'show', 'cmd', '--json'], good)).stdout) as {
      status: string;
    };
    expect(afterWrongCa.status).toBe('approved');
    expect(fs.readFileSync(path.join(workspace, 'notes.txt'), 'utf8')).toBe('one\n');

    const stranger = await cli(['--data-dir', dataDir, 'sandbox', 'retry', 'cmd'], engine.env(engine.certs.wrongClient));
    expect(stranger.status).toBe(2);
    expect(stranger.stderr).toContain('ENGINE_TLS_FAILED');
    expect(stranger.stderr).toContain('the engine refused the client certificate cert.pem');

    const plain = await cli(['--data-dir', dataDir, 'sandbox', 'retry', 'cmd'], {
      DOCKER_HOST: engine.host,
      DOCKER_TLS_VERIFY: '',
      DOCKER_CERT_PATH: '',
    });
    expect(plain.status).toBe(2);
    expect(plain.stderr).toContain(`ENGINE_INSECURE: DOCKER_HOST=${engine.host} is plain TCP`);
    expect(fs.readFileSync(path.join(workspace, 'notes.txt'), 'utf8')).toBe('one\n');

    const retried = await cli(['--data-dir', dataDir, 'sandbox', 'retry', 'cmd', '--json'], good);
    expect(retried.status, retried.stderr).toBe(0);
    expect(JSON.parse(retried.stdout)).toMatchObject({ stepId: 'cmd', status: 'executed', result: { exitCode: 0 } });
    expect(fs.readFileSync(path.join(workspace, 'notes.txt'), 'utf8')).toBe('one\ntwo\n');
  }, 600_000);

  it('status names the failure: the engine not vouched for by ca.pem, our certificate refused, plain TCP, a missing key, nobody listening', async () => {
    const statusWith = async (env: NodeJS.ProcessEnv): Promise<StatusJson> => {
      const result = await cli(['sandbox', 'status', '--json'], env);
      expect(result.status).toBe(1);
      return JSON.parse(result.stdout) as StatusJson;
    };
    const wrongCa = await statusWith(engine.env(engine.certs.wrongCa));
    expect(wrongCa.engine).toMatchObject({ reachable: false, errorCode: 'ENGINE_TLS_FAILED' });
    expect(wrongCa.engine.error).toContain(`not one ca.pem in ${engine.certs.wrongCa} vouches for`);

    const stranger = await statusWith(engine.env(engine.certs.wrongClient));
    expect(stranger.engine).toMatchObject({ reachable: false, errorCode: 'ENGINE_TLS_FAILED' });
    expect(stranger.engine.error).toContain('refused the client certificate');

    const plain = await statusWith({ DOCKER_HOST: engine.host, DOCKER_TLS_VERIFY: '', DOCKER_CERT_PATH: '' });
    expect(plain.engine).toMatchObject({ reachable: false, errorCode: 'ENGINE_INSECURE', reason: 'plain-tcp' });

    // TLS asked for but not verified (DOCKER_TLS alone) is refused the same way.
    const unverified = await statusWith({
      DOCKER_HOST: engine.host,
      DOCKER_TLS: '1',
      DOCKER_TLS_VERIFY: '',
      DOCKER_CERT_PATH: engine.certs.good,
    });
    expect(unverified.engine).toMatchObject({ errorCode: 'ENGINE_INSECURE', reason: 'tls-not-verified' });

    const noKey = tempDir();
    fs.copyFileSync(path.join(engine.certs.good, 'ca.pem'), path.join(noKey, 'ca.pem'));
    fs.copyFileSync(path.join(engine.certs.good, 'cert.pem'), path.join(noKey, 'cert.pem'));
    const missing = await statusWith(engine.env(noKey));
    expect(missing.engine).toMatchObject({
      errorCode: 'ENGINE_CONFIG_INVALID',
      reason: 'cert-file-missing',
      file: path.join(noKey, 'key.pem'),
    });

    // The same certificates at a port where nothing listens: no engine answers.
    const closed = await statusWith({ ...engine.env(engine.certs.good), DOCKER_HOST: 'tcp://127.0.0.1:1' });
    expect(closed.engine).toMatchObject({ reachable: false, errorCode: 'SANDBOX_UNAVAILABLE' });
  }, 240_000);

  it("Settings' environment (getEnvironment) says the same: TLS verified and archives; a refused address is a value, not a throw", async () => {
    const { executor } = openExecutor();
    const saved = { ...process.env };
    // The host reads the environment it was started with; this file's worker stands in for it.
    defer(() => {
      for (const name of ['DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH']) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    });
    Object.assign(process.env, engine.env(engine.certs.good));
    const good = await executor.environmentStatus();
    expect(good.engine).toMatchObject({
      reachable: true,
      endpoint: engine.host,
      access: { security: 'tls-verified', tlsVerified: true, workspace: 'archive' },
    });
    expect(good.image.present).toBe(true);

    process.env.DOCKER_TLS_VERIFY = '';
    const plain = await executor.environmentStatus();
    expect(plain.engine).toMatchObject({ reachable: false, endpoint: engine.host, errorCode: 'ENGINE_INSECURE' });
    expect(plain.image.present).toBe(false);
  }, 120_000);

  it("sandbox image build builds the image on the remote engine, from this machine's files sent through the API, and it runs there", async () => {
    const env = { ...engine.env(engine.certs.good), EXECUTOR_SANDBOX_IMAGE: 'executor-sandbox:remote-build-test' };
    const built = await cli(['sandbox', 'image', 'build', '--json'], env);
    expect(built.status, built.stderr).toBe(0);
    expect(JSON.parse(built.stdout)).toMatchObject({ tag: 'executor-sandbox:remote-build-test', path: 'offline-host-rootfs' });
    const status = JSON.parse((await cli(['sandbox', 'status', '--json'], env)).stdout) as StatusJson & {
      image: { tag: string; present: boolean };
    };
    expect(status.image).toMatchObject({ tag: 'executor-sandbox:remote-build-test', present: true });
    expect(status.ready).toBe(true);
  }, 400_000);

  it('a unix socket whose engine names another machine gets the workspace as archives, not a bind mount it could not see', async () => {
    const env = { DOCKER_HOST: `unix://${engine.socket}`, DOCKER_TLS_VERIFY: '', DOCKER_CERT_PATH: '' };
    const result = await cli(['sandbox', 'status', '--json'], env);
    expect(result.status, result.stderr).toBe(0);
    const status = JSON.parse(result.stdout) as StatusJson;
    expect(status.engine.access).toMatchObject({
      transport: 'unix',
      security: 'local-socket',
      workspace: 'archive',
      engineMachine: ENGINE_MACHINE,
    });
    expect(status.ready).toBe(true);
    const text = await cli(['sandbox', 'status'], env);
    expect(text.stdout).toContain(`the socket leads to an engine on "${ENGINE_MACHINE}", not this machine`);

    // A command step through that socket changes the workspace exactly (the copy went and came back as archives).
    const viaSocket = (args: string[]) => cli(args, env);
    const proposed = await proposeCommandOnEngine(viaSocket, 'echo two >> notes.txt');
    await approveCommandOnEngine(viaSocket, proposed);
    expect(fs.readFileSync(proposed.notes, 'utf8')).toBe('one\ntwo\n');
  }, 300_000);

  it('a command proposed while the engine address is refused is still recorded, its preview saying why, and runs on the engine once the address is fixed', async () => {
    const { dataDir, workspace } = tempSetup();
    const planFile = path.join(tempDir(), 'plan.json');
    fs.writeFileSync(planFile, JSON.stringify({ steps: [{ id: 'cmd', action: 'runCommand', args: { command: 'echo made > made.txt' } }] }));
    const plain = { DOCKER_HOST: engine.host, DOCKER_TLS_VERIFY: '', DOCKER_CERT_PATH: '' };
    const proposed = await cli(['--data-dir', dataDir, 'propose', planFile, '--json'], plain);
    expect(JSON.parse(proposed.stdout), proposed.stderr).toMatchObject([{ status: 'awaiting_consent' }]);
    const shown = await cli(['--data-dir', dataDir, 'steps', 'show', 'cmd'], plain);
    expect(shown.stdout).toContain(`no dry run could be made: DOCKER_HOST=${engine.host} is plain TCP`);
    // Nothing to bind the approval to: the person approves it as shown, without a preview.
    const approved = await cli(
      ['--data-dir', dataDir, 'approve', 'cmd', '--preview-hash', 'none', '--json'],
      engine.env(engine.certs.good),
    );
    // It ran on the TLS engine, nothing was applied: the person is shown what it did and asked again (as for any run without a preview).
    expect(JSON.parse(approved.stdout), approved.stderr).toMatchObject({ stepId: 'cmd', status: 'awaiting_consent' });
    expect(fs.existsSync(path.join(workspace, 'made.txt'))).toBe(false);
    const good = engine.env(engine.certs.good);
    const fresh = JSON.parse((await cli(['--data-dir', dataDir, 'steps', 'show', 'cmd', '--json'], good)).stdout) as {
      previewHash: string;
    };
    const executed = await cli(['--data-dir', dataDir, 'approve', 'cmd', '--preview-hash', fresh.previewHash, '--json'], good);
    expect(JSON.parse(executed.stdout), executed.stderr).toMatchObject({ stepId: 'cmd', status: 'executed' });
    expect(fs.readFileSync(path.join(workspace, 'made.txt'), 'utf8')).toBe('made\n');
  }, 300_000);
});
