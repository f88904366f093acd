import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { dockerAvailable, ensureSandboxImage } from '../../../helpers/docker-engine.js';
import { runCliAsync, type CliResult } from '../../../helpers/run-cli.js';
import { startSshEngineServer, type SshEngine } from '../../../helpers/ssh-engine-server.js';
import {
  approveCommandOnEngine,
  proposeCommandOnEngine,
  type EngineStatusJson as StatusJson,
} from '../../../helpers/remote-engine-step.js';
import { suiteTeardown } from '../../../helpers/teardown.js';

const hasDocker = dockerAvailable();

/**
 * DOCKER_HOST=ssh://user@host: dockerode's SSH transport (ssh2) with the person's ssh-agent, the
 * engine reached through `docker system dial-stdio`. The far side is an SSH server in this test that
 * joins that command to the machine's own engine socket (no sshd here); Executor cannot see that the
 * engine is local, so the workspace travels as archives as it would to another machine.
 */
describe.skipIf(!hasDocker)('a remote engine over SSH (DOCKER_HOST=ssh://, host key checked against known_hosts)', () => {
  const suite = suiteTeardown();
  let server: SshEngine;

  beforeAll(async () => {
    await ensureSandboxImage();
    const engineSocket = (process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock').replace(/^unix:\/\//, '');
    server = await startSshEngineServer(engineSocket, suite);
  }, 300_000);

  function cli(args: string[], knownHosts: string[]): Promise<CliResult> {
    return runCliAsync(args, {
      env: { DOCKER_HOST: server.dockerHost, SSH_AUTH_SOCK: server.agentSocket, HOME: server.home(knownHosts), DOCKER_TLS_VERIFY: '1' },
      timeoutMs: 240_000,
    });
  }

  it('with the host in known_hosts, status says SSH and archives, and a command runs there: Ready', async () => {
    const result = await cli(['sandbox', 'status', '--json'], [server.knownHostsLine]);
    expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
    const status = JSON.parse(result.stdout) as StatusJson;
    expect(status.engine).toMatchObject({
      reachable: true,
      endpoint: server.dockerHost,
      access: { transport: 'ssh', security: 'ssh', workspace: 'archive' },
    });
    expect(status.ready).toBe(true);
    expect(server.execs).toContain('docker system dial-stdio');
  }, 240_000);

  it('a command step previews and runs through SSH and changes the workspace', async () => {
    const known = (args: string[]) => cli(args, [server.knownHostsLine]);
    const proposed = await proposeCommandOnEngine(known, 'echo two >> notes.txt');
    await approveCommandOnEngine(known, proposed);
    expect(fs.readFileSync(proposed.notes, 'utf8')).toBe('one\ntwo\n');
  }, 300_000);

  it('an unknown host, or another key for the host, is refused with ENGINE_INSECURE before anything is sent', async () => {
    const execsBefore = server.execs.length;
    const unknown = await cli(['sandbox', 'status', '--json'], []);
    expect(unknown.status).toBe(1);
    const unknownStatus = JSON.parse(unknown.stdout) as StatusJson;
    expect(unknownStatus.engine).toMatchObject({ reachable: false, errorCode: 'ENGINE_INSECURE' });
    expect(unknownStatus.engine.error).toContain(`[127.0.0.1]:${server.port} is not in known_hosts`);

    const mismatch = await cli(['sandbox', 'status', '--json'], [server.impostorLine]);
    const mismatchStatus = JSON.parse(mismatch.stdout) as StatusJson;
    expect(mismatchStatus.engine).toMatchObject({ reachable: false, errorCode: 'ENGINE_INSECURE' });
    expect(mismatchStatus.engine.error).toContain('is not the one known_hosts lists');
    // Refused during the handshake: the server never got to run a command.
    expect(server.execs.length).toBe(execsBefore);
  }, 240_000);
});
