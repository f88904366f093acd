import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import { ExecutorError } from '../../domain/errors.js';
import type { RunHooks } from '../../domain/live-output.js';
import { containerSpec, CONTAINER_LABEL, WORKSPACE_MOUNT, type NetworkMode, type SandboxLimits } from './container-spec.js';
import { engineCall, type DockerClient } from './docker-client.js';
import { engineInfo, limitsUnenforceable } from './engine-identity.js';
import { EGRESS_SHIM_SOURCE, startEgressProxy, withEgressShim, type EgressRequest } from './egress-proxy.js';
import { OutputDemuxer, type CapturedStream } from './output-capture.js';
import { SANDBOX_GID, SANDBOX_UID } from './sandbox-image.js';
import { processAlive } from './temp-areas.js';

export interface ContainerRunInput {
  image: string;
  argv: string[];
  /** The prepared scratch copy on this machine. */
  scratchDir: string;
  /**
   * `bind` mounts the scratch copy (an engine on this machine); `archive` copies it into an anonymous
   * volume before the start and extracts the volume into `resultDir` after the exit (an engine elsewhere).
   */
  transport?: 'bind' | 'archive';
  resultDir?: string;
  /** Folders of the real workspace seen read-only under /workspace (bind transport only). */
  readOnlyMounts?: readonly { source: string; target: string }[];
  workdir: string;
  user: string;
  limits: SandboxLimits;
  network: NetworkMode;
  allowHosts: readonly string[];
  env?: Record<string, string>;
  /** Overrides limits.timeoutMs for this run. */
  timeoutMs?: number;
  /** The output as it comes, and the signal that stops the run at once (the person's Cancel). */
  hooks?: RunHooks;
}

export interface ContainerRunResult {
  runId: string;
  exitCode: number | null;
  timedOut: boolean;
  /** Stopped by its hooks' signal (killed with SIGKILL); exitCode is then null. */
  cancelled: boolean;
  oomKilled: boolean;
  stdout: CapturedStream;
  stderr: CapturedStream;
  durationMs: number;
  egress: EgressRequest[];
}

const HOST_LABEL = `${CONTAINER_LABEL}.host`;

/**
 * Runs one command in a fresh hardened container and removes it, whatever happens: exit, timeout
 * (kill, then remove), or an error of the engine. Output is read from the attach stream as it
 * comes, capped per stream.
 */
export async function runInContainer(client: DockerClient, input: ContainerRunInput): Promise<ContainerRunResult> {
  const runId = `run-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const signal = input.hooks?.signal;
  if (signal?.aborted) throw cancelledError(runId);
  const archive = input.transport === 'archive';
  if (archive && input.network === 'allowlist') {
    throw new ExecutorError(
      'SANDBOX_FAILED',
      `The allowlisted network needs an engine on this machine (its proxy socket is mounted into the container); ${client.endpoint} is remote. Use network "none".`,
      {
        endpoint: client.endpoint,
      },
    );
  }
  await requireEnforcedLimits(client);
  const proxy = input.network === 'allowlist' ? await startEgressProxy(input.allowHosts) : null;
  const env = { ...(input.env ?? {}) };
  if (proxy) env.EXECUTOR_EGRESS_SHIM = EGRESS_SHIM_SOURCE;
  const spec = containerSpec({
    image: input.image,
    argv: proxy ? withEgressShim(input.argv) : input.argv,
    scratchDir: archive ? null : input.scratchDir,
    ...(!archive && input.readOnlyMounts?.length ? { readOnlyMounts: input.readOnlyMounts } : {}),
    workdir: input.workdir,
    user: input.user,
    limits: input.limits,
    network: input.network,
    egressDir: proxy?.dir,
    env,
    runId,
  });
  spec.Labels = { ...spec.Labels, [HOST_LABEL]: os.hostname() };
  const timeoutMs = input.timeoutMs ?? input.limits.timeoutMs;
  const demux = new OutputDemuxer(
    input.limits.outputBytes,
    input.hooks ? (stream, chunk) => input.hooks!.onOutput(stream, chunk) : undefined,
  );
  let container: Docker.Container | undefined;
  // Ends the engine waits still open when the run is over (one that never answers would keep this process alive).
  const waits = new AbortController();
  const started = performance.now();
  try {
    container = await engineCall(client, () => client.docker.createContainer(spec));
    const created = container;
    if (archive) await putWorkspace(created, input.scratchDir);
    const stream = (await engineCall(client, () => created.attach({ stream: true, stdout: true, stderr: true }))) as NodeJS.ReadableStream;
    const streamEnded = new Promise<void>((resolve) => {
      stream.on('data', (chunk: Buffer) => demux.write(chunk));
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', () => resolve());
    });
    const exited = exitOf(created, streamEnded, waits.signal);
    // Cancelled while the container was being created: it never starts.
    if (signal?.aborted) throw cancelledError(runId);
    await engineCall(client, () => created.start());
    let timedOut = false;
    let cancelled = false;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const aborted = new Promise<'cancelled'>((resolve) => {
      onAbort = () => resolve('cancelled');
      if (signal?.aborted) resolve('cancelled');
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
    const first = await Promise.race([exited, timeout, aborted]);
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    let exitCode: number | null = null;
    if (first === 'timeout' || first === 'cancelled') {
      timedOut = first === 'timeout';
      cancelled = first === 'cancelled';
      await created.kill({ signal: 'SIGKILL' }).catch(() => undefined);
      // Bounded: the kill is what counts, and the container is removed by force below either way.
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    } else {
      exitCode = first.StatusCode;
    }
    // The attach stream closes right after the exit; the bound only guards against an engine that never closes it.
    await Promise.race([streamEnded, new Promise((resolve) => setTimeout(resolve, 2000))]);
    const state = await created
      .inspect()
      .then((info) => info.State)
      .catch(() => undefined);
    if (archive) await getWorkspace(created, input.resultDir!);
    const { stdout, stderr } = demux.result();
    return {
      runId,
      exitCode: timedOut || cancelled ? null : exitCode,
      timedOut,
      cancelled,
      oomKilled: state?.OOMKilled === true,
      stdout,
      stderr,
      durationMs: Math.round(performance.now() - started),
      egress: proxy ? [...proxy.requests] : [],
    };
  } catch (error) {
    if (error instanceof ExecutorError) throw error;
    if (INIT_MISSING.test((error as Error).message)) throw initMissing(client, error as Error);
    throw new ExecutorError('SANDBOX_FAILED', `The container could not run: ${(error as Error).message}`, { runId });
  } finally {
    waits.abort();
    if (container) await container.remove({ force: true, v: true }).catch(() => undefined);
    await proxy?.close();
  }
}

/**
 * The container's exit code, from whichever of two ways answers first. Docker answers a wait for the
 * `next-exit` registered before the start; Podman answers that one from its event log, which may be
 * off (`events_logger = "none"`) or lost (journald without a journal), and then never answers at
 * all. So once the attach stream has ended (the engine closes it when the container's process is
 * gone) the exit is also asked for as `not-running`, which both engines answer from the container's
 * state, and confirmed by an inspect: a stream that broke before the start must not read as exit 0.
 * Never rejects; an engine that answers neither way leaves the run to its timeout.
 */
function exitOf(container: Docker.Container, streamEnded: Promise<void>, abortSignal: AbortSignal): Promise<{ StatusCode: number }> {
  const nextExit = (container.wait({ condition: 'next-exit', abortSignal }) as Promise<{ StatusCode: number }>).catch(
    () => new Promise<never>(() => {}),
  );
  const fromState = streamEnded.then(async () => {
    await container.wait({ condition: 'not-running', abortSignal }).catch(() => undefined);
    const state = await container
      .inspect()
      .then((info) => info.State)
      .catch(() => undefined);
    if (state?.Status !== 'exited' && state?.Status !== 'dead') return new Promise<never>(() => {});
    return { StatusCode: state.ExitCode };
  });
  return Promise.race([nextExit, fromState]);
}

/** Per client, whether its engine was found able to apply the limits (asked once: its answer does not change while it runs). */
const limitsChecked = new WeakMap<DockerClient, Promise<string | null>>();

/**
 * Refuses to run on an engine that would drop the pids and memory limits without a word: the step
 * waits (SANDBOX_UNAVAILABLE) instead of running unlimited.
 */
async function requireEnforcedLimits(client: DockerClient): Promise<void> {
  let check = limitsChecked.get(client);
  if (!check) {
    const info = engineInfo(client.docker);
    check = info.then(limitsUnenforceable);
    // An engine that did not answer is asked again next time (its create then says it is unreachable).
    void info.then((answer) => (answer === undefined ? undefined : limitsChecked.set(client, check!)));
  }
  const why = await check;
  if (why) {
    throw new ExecutorError(
      'SANDBOX_UNAVAILABLE',
      `The engine at ${client.endpoint} cannot hold a container to the sandbox's limits: ${why}. Use a rootful engine (rootful Podman or Docker), or a rootless one on cgroup v2 with the cpu, memory and pids controllers delegated to your user; then run the step again with \`executor sandbox retry STEP_ID\`; it stays approved.`,
      { endpoint: client.endpoint },
    );
  }
}

/** What an engine says when the init every container here asks for (HostConfig.Init) is not installed. */
const INIT_MISSING = /container-init binary not found|catatonit: no such file|"?docker-init"?: executable file not found/i;

/**
 * The engine cannot start any container until its init is installed: a setup problem of the engine,
 * so the step waits (SANDBOX_UNAVAILABLE keeps it approved for `sandbox retry`), with the package named.
 */
function initMissing(client: DockerClient, error: Error): ExecutorError {
  const podman = /container-init|catatonit/i.test(error.message);
  return new ExecutorError(
    'SANDBOX_UNAVAILABLE',
    `The engine at ${client.endpoint} cannot start a container: its init helper is missing (${error.message.trim()}). ${
      podman
        ? "Install Podman's catatonit (Debian/Ubuntu: apt-get install catatonit; Fedora: dnf install catatonit)"
        : "Install Docker's docker-init (tini; Debian: apt-get install tini, or reinstall docker.io)"
    }, then run the step again with \`executor sandbox retry STEP_ID\`; it stays approved.`,
    { endpoint: client.endpoint },
  );
}

function cancelledError(runId: string): ExecutorError {
  return new ExecutorError('STEP_CANCELLED', 'The run was cancelled before it started; nothing ran.', { runId });
}

/** Waits for a child process and fails with its stderr when it did not exit 0. */
function childDone(child: ChildProcess, what: string): Promise<void> {
  const errors: Buffer[] = [];
  child.stderr?.on('data', (chunk: Buffer) => errors.push(chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${what} failed: ${Buffer.concat(errors).toString('utf8').trim()}`)),
    );
  });
}

/** The scratch copy into the container's workspace volume, owned by the sandbox user. */
async function putWorkspace(container: Docker.Container, scratchDir: string): Promise<void> {
  const tar = spawn('tar', ['-C', scratchDir, '--numeric-owner', `--owner=${SANDBOX_UID}`, `--group=${SANDBOX_GID}`, '-cf', '-', '.'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const packed = childDone(tar, 'packing the scratch copy');
  await container.putArchive(tar.stdout, { path: WORKSPACE_MOUNT });
  await packed;
}

/** The workspace volume after the run, extracted into a fresh local directory (never over the real workspace). */
async function getWorkspace(container: Docker.Container, resultDir: string): Promise<void> {
  const stream = (await container.getArchive({ path: `${WORKSPACE_MOUNT}/.` })) as NodeJS.ReadableStream;
  // GNU tar refuses absolute and `..` member names by default; owners are not taken from the archive.
  const tar = spawn('tar', ['-C', resultDir, '--no-same-owner', '-xf', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
  const extracted = childDone(tar, 'extracting the workspace after the run');
  stream.pipe(tar.stdin!);
  await extracted;
}

/**
 * Removes containers a crashed Executor left behind: labelled ones created on this machine by a
 * process that no longer exists. Containers of live processes (another window, a parallel test)
 * are left alone.
 */
export async function sweepLeftoverContainers(client: DockerClient): Promise<string[]> {
  const containers = await engineCall(client, () => client.docker.listContainers({ all: true, filters: { label: [CONTAINER_LABEL] } }));
  const removed: string[] = [];
  for (const info of containers) {
    const labels = info.Labels ?? {};
    const pid = Number(labels[`${CONTAINER_LABEL}.pid`]);
    const sameHost = labels[HOST_LABEL] === os.hostname();
    // Another machine's containers on a shared engine are its own business.
    if (!sameHost || (Number.isInteger(pid) && pid > 0 && processAlive(pid))) continue;
    await client.docker
      .getContainer(info.Id)
      .remove({ force: true, v: true })
      .then(
        () => removed.push(info.Id),
        () => undefined,
      );
  }
  return removed;
}
