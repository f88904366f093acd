import { spawnSync } from 'node:child_process';
import { isOwnProcess } from './own-processes.js';
import { connectDocker } from '../../src/sandbox/docker/docker-client.js';
import { buildSandboxImage } from '../../src/sandbox/docker/sandbox-image.js';

/**
 * Whether the Docker tests can run. Without an engine they skip loudly on a developer machine;
 * under CI=true a missing engine is an error, so a test needing Docker never silently passes.
 */
export function dockerAvailable(): boolean {
  const probe = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 20_000 });
  const ok = probe.status === 0;
  if (!ok) {
    const why = `no Docker engine answers (${(probe.stderr || probe.error?.message || '').trim().split('\n')[0]})`;
    if (process.env.CI === 'true') throw new Error(`CI=true but ${why}: the Docker sandbox tests must run in CI.`);
    console.warn(`\n!!! SKIPPING Docker sandbox tests: ${why}. Start dockerd to run them.\n`);
  }
  return ok;
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
