import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../../domain/errors.js';
import { PolicySchema } from '../../policy/policy-file.js';
import { WORKSPACE_MOUNT } from './container-spec.js';
import { runInContainer } from './container-run.js';
import type { DockerClient } from './docker-client.js';
import { SANDBOX_GID, SANDBOX_UID } from './sandbox-image.js';
import { makeTempArea, removeTree } from './temp-areas.js';

/** What a command run in a real sandbox container said: Ready means it ran and answered as expected. */
export interface SandboxProbe {
  ran: boolean;
  exitCode: number | null;
  durationMs: number;
  /** Why it is not ready, in words a person can act on (absent when it ran). */
  problem?: string;
}

/** `sh` and `node` must both answer, as the sandbox user, on the read-only image: every step needs one of them. */
const PROBE_COMMAND = 'echo sandbox-ok && node -e "process.stdout.write(String(6 * 7))"';
const PROBE_ANSWER = 'sandbox-ok\n42';

/**
 * Starts a container from the image exactly as a step would (hardened, no network, the sandbox's
 * non-root user, a scratch directory at /workspace) and runs a command in it. An image whose
 * folders the sandbox user cannot enter (built under a private umask) starts, then fails with 126:
 * only a real run shows that, so `sandbox status` says Ready after this and never before.
 */
export async function probeSandbox(client: DockerClient, image: string): Promise<SandboxProbe> {
  const base = makeTempArea('code');
  try {
    const scratchDir = path.join(base, 'workspace');
    fs.mkdirSync(scratchDir, { mode: 0o777 });
    // Open to the sandbox user whatever this process's umask: mkdir's mode is cut by it.
    fs.chmodSync(scratchDir, 0o777);
    const resultDir = client.local ? undefined : path.join(base, 'after');
    if (resultDir) fs.mkdirSync(resultDir);
    const run = await runInContainer(client, {
      image,
      argv: ['/bin/sh', '-c', PROBE_COMMAND],
      scratchDir,
      transport: resultDir ? 'archive' : 'bind',
      resultDir,
      workdir: WORKSPACE_MOUNT,
      user: `${SANDBOX_UID}:${SANDBOX_GID}`,
      limits: PolicySchema.parse({}).sandbox,
      network: 'none',
      allowHosts: [],
      timeoutMs: 60_000,
    });
    const output = run.stdout.text.trim();
    if (run.exitCode === 0 && output === PROBE_ANSWER) return { ran: true, exitCode: 0, durationMs: run.durationMs };
    const said = `${run.stdout.text}${run.stderr.text}`.trim().slice(0, 500);
    const hint =
      run.exitCode === 126 || run.exitCode === 127
        ? ' The image cannot start its own programs (folders closed to the sandbox user, or missing): rebuild it with `executor sandbox image build --force`.'
        : run.timedOut
          ? ' It did not answer within 60 s: the engine may be overloaded.'
          : '';
    return {
      ran: false,
      exitCode: run.exitCode,
      durationMs: run.durationMs,
      problem: `A test command in the sandbox ${run.timedOut ? 'timed out' : `exited ${run.exitCode}`}${said ? `: ${said}` : ''}.${hint}`,
    };
  } catch (error) {
    // An engine that cannot start any container (its init missing) is not the image's fault.
    const engineSide = error instanceof ExecutorError && error.code === 'SANDBOX_UNAVAILABLE';
    return {
      ran: false,
      exitCode: null,
      durationMs: 0,
      problem: engineSide
        ? (error as Error).message
        : `No container could be started from the image: ${(error as Error).message}. Rebuild it with \`executor sandbox image build --force\`.`,
    };
  } finally {
    removeTree(base);
  }
}
