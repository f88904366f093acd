import { spawnSync } from 'node:child_process';
import { isOwnProcess } from './own-processes.js';
import { connectDocker } from '../../src/sandbox/docker/docker-client.js';
import { buildSandboxImage } from '../../src/sandbox/docker/sandbox-image.js';

/**
 * The engine the Docker tests run against: `EXECUTOR_TEST_ENGINE=podman` with DOCKER_HOST at
 * Podman's socket runs them on Podman (the app and the `docker` CLI the tests use both follow
 * DOCKER_HOST); unset, on whatever engine answers there.
 */
function askedEngine(): 'docker' | 'podman' | undefined {
  const asked = process.env.EXECUTOR_TEST_ENGINE;
  return asked === 'podman' || asked === 'docker' ? asked : undefined;
}

let answering: 'docker' | 'podman' | undefined;

/** The engine that answered dockerAvailable(): a test states what differs on Podman with it. */
export function testEngine(): 'docker' | 'podman' {
  return answering ?? askedEngine() ?? 'docker';
}

/**
 * Whether the Docker tests can run. Without an engine they skip loudly on a developer machine;
 * under CI=true a missing engine is an error, so a test needing Docker never silently passes.
 * An engine other than the one EXECUTOR_TEST_ENGINE names is always an error: a Podman pass that
 * ran against Docker would pass without having tested Podman.
 */
export function dockerAvailable(): boolean {
  const probe = spawnSync('docker', ['version', '--format', '{{range .Server.Components}}{{.Name}};{{end}}'], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  const ok = probe.status === 0;
  if (!ok) {
    const why = `no ${askedEngine() === 'podman' ? 'Podman' : 'Docker'} engine answers at ${process.env.DOCKER_HOST || 'the default socket'} (${(probe.stderr || probe.error?.message || '').trim().split('\n')[0]})`;
    if (process.env.CI === 'true' || askedEngine()) throw new Error(`${why}: the sandbox tests were asked to run against it.`);
    console.warn(`\n!!! SKIPPING Docker sandbox tests: ${why}. Start dockerd to run them.\n`);
    return false;
  }
  const podman = /podman/i.test(probe.stdout);
  answering = podman ? 'podman' : 'docker';
  if (askedEngine() && askedEngine() !== answering) {
    throw new Error(
      `EXECUTOR_TEST_ENGINE=${process.env.EXECUTOR_TEST_ENGINE ?? '(unset)'} but the engine at ${process.env.DOCKER_HOST || 'the default socket'} is ${podman ? 'Podman' : 'Docker'} (${probe.stdout.trim()}).`,
    );
  }
  return true;
}

/** Builds the sandbox image once (cached by tag), as `executor sandbox image build` would. */
export async function ensureSandboxImage(): Promise<void> {
  await buildSandboxImage(connectDocker());
}

/**
 * Labelled containers still present: every test ends with none of its own left. With a run id, that
 * run's container (whoever started it); without, those of the processes this file started.
 */
export function labelledContainers(runFilter = ''): string[] {
  const result = spawnSync(
    'docker',
    [
      'ps',
      '-aq',
      '--filter',
      `label=dev.executor.sandbox${runFilter ? `=${runFilter}` : ''}`,
      '--format',
      '{{.ID}} {{.Label "dev.executor.sandbox.pid"}}',
    ],
    {
      encoding: 'utf8',
    },
  );
  // An engine that did not answer lists nothing: that must fail the check, not pass it.
  if (result.status !== 0) throw new Error(`docker ps failed (${result.status ?? result.error?.message}): ${result.stderr}`);
  return result.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '))
    .filter(([, pid]) => runFilter !== '' || isOwnProcess(Number(pid)))
    .map(([id]) => id!);
}
