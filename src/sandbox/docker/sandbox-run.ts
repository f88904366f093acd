import fs from 'node:fs';
import path from 'node:path';
import { ExecutorError } from '../../domain/errors.js';
import type { RunHooks } from '../../domain/live-output.js';
import type { Policy } from '../../policy/policy-file.js';
import { computeChangeset, type Changeset } from './changeset.js';
import { WORKSPACE_MOUNT, type NetworkMode } from './container-spec.js';
import { runInContainer, sweepLeftoverContainers, type ContainerRunResult } from './container-run.js';
import { confirmEngineMachine, connectDocker, engineCall, type DockerClient } from './docker-client.js';
import { ensureProjectImage, type ProjectImage } from './project-image.js';
import { requireImage, SANDBOX_GID, SANDBOX_UID, sandboxImageTag } from './sandbox-image.js';
import { makeScratchCopy, type OverlayWrite, type ReadOnlyMount, type ScratchOptions } from './scratch-copy.js';
import { manifestOfScratch, type WorkspaceManifest } from './workspace-manifest.js';
import { makeTempArea, removeTree, sweepTempAreas } from './temp-areas.js';

/** How long a silent engine (a dead remote host) may take before the step is deferred as unavailable. */
const ENGINE_PING_TIMEOUT_MS = 10_000;

let sharedClient: DockerClient | undefined;

function pingWithin(client: DockerClient, timeoutMs: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${timeoutMs / 1000} s`), { code: 'ETIMEDOUT' })), timeoutMs);
  });
  return Promise.race([client.docker.ping(), timeout]).finally(() => clearTimeout(timer));
}
const swept = new WeakSet<DockerClient>();

/** The engine this process talks to (DOCKER_HOST or the local default), created on first use. */
export function defaultDockerClient(): DockerClient {
  sharedClient ??= connectDocker();
  return sharedClient;
}

/**
 * Checks the engine answers and the image exists; the first time per client it also removes
 * containers a crashed run left behind. Throws SANDBOX_UNAVAILABLE / SANDBOX_IMAGE_MISSING.
 */
export async function prepareEngine(client: DockerClient): Promise<{ tag: string; digest: string }> {
  await reachEngine(client);
  const image = await requireImage(client, sandboxImageTag());
  return { tag: image.tag, digest: image.digest };
}

async function reachEngine(client: DockerClient): Promise<void> {
  await engineCall(client, () => pingWithin(client, ENGINE_PING_TIMEOUT_MS));
  // Before any run decides between a bind mount and archives: a socket may lead to another machine.
  await confirmEngineMachine(client);
  if (!swept.has(client)) {
    swept.add(client);
    await sweepLeftoverContainers(client);
    sweepTempAreas();
  }
}

/** The workspace root a directory lies in, by real path (the deepest, where roots nest). */
function rootOf(sourceDir: string, policy: Policy): string {
  let found: string | undefined;
  for (const root of policy.workspaceRoots) {
    let real: string;
    try {
      real = fs.realpathSync.native(root);
    } catch {
      continue;
    }
    if ((sourceDir === real || sourceDir.startsWith(real + path.sep)) && (found === undefined || real.length > found.length)) found = real;
  }
  return found ?? sourceDir;
}

/**
 * The image the root's commands run in (the policy's, the project's dev container, a Dockerfile the
 * policy names, or the default), built when its content changed; the build's progress goes to the
 * run's live output, marked as the build's, so the window shows it as it comes.
 */
export async function imageForRun(
  client: DockerClient,
  request: Pick<SandboxRunRequest, 'root' | 'sourceDir' | 'policy' | 'hooks' | 'codeBuildConsented' | 'consentedBuildDigest'>,
): Promise<ProjectImage> {
  await reachEngine(client);
  const root = request.root ?? rootOf(request.sourceDir, request.policy);
  const hooks = request.hooks;
  return ensureProjectImage(client, root, request.policy, {
    codeBuildConsented: request.codeBuildConsented === true,
    ...(request.consentedBuildDigest ? { consentedBuildDigest: request.consentedBuildDigest } : {}),
    ...(hooks ? { onProgress: (line: string) => hooks.onOutput('stderr', Buffer.from(`[image build] ${line}\n`, 'utf8')) } : {}),
  });
}

export interface SandboxRunRequest {
  /** The real directory the command works on (the workspace root or the step's cwd in it). */
  sourceDir: string;
  argv: string[];
  network: NetworkMode;
  policy: Policy;
  env?: Record<string, string>;
  timeoutMs?: number;
  allowedSecrets?: readonly string[];
  /** Directories never copied into the container, compared by real path (Executor's data directory). */
  excludeDirs?: readonly string[];
  /** The workspace root `sourceDir` lies in (found from the policy's roots when absent): its image is the one used. */
  root?: string;
  /**
   * The person approved this run knowing its image must first be built by running the project's code
   * (a Dockerfile `RUN`); without it such a build is refused with what it would run (SANDBOX_IMAGE_MISSING).
   */
  codeBuildConsented?: boolean;
  /** The content digest of the one build that needs code run the person approved (see ensureProjectImage). */
  consentedBuildDigest?: string;
  /** The live output and the Cancel signal (see RunHooks). */
  hooks?: RunHooks;
  /** The plan's earlier writes, laid over the copy before the run (relative to sourceDir). */
  overlay?: readonly OverlayWrite[];
  /** A dry run: also take the manifest of what the command read, so its approval can be applied without a second run. */
  manifest?: boolean;
}

/** A run its signal stopped: no changeset is computed from a half-run, and nothing of it is applied. */
function throwIfCancelled(run: ContainerRunResult): void {
  if (!run.cancelled) return;
  throw new ExecutorError(
    'STEP_CANCELLED',
    `The run was cancelled after ${(run.durationMs / 1000).toFixed(1)} s; its container was stopped and removed, and nothing it changed was kept.`,
    {
      runId: run.runId,
      durationMs: run.durationMs,
      stdoutBytes: run.stdout.bytes,
      stderrBytes: run.stderr.bytes,
    },
  );
}

export interface SandboxRunOutcome {
  run: ContainerRunResult;
  changeset: Changeset;
  /** The image it ran in (a project image's tag is its content digest). */
  image: { tag: string; digest: string };
  copy: { seconds: number; ignoredPaths: number; secretPaths: string[]; readOnlyPaths: string[] };
  /** What the command read (asked for with `manifest`). */
  manifest?: WorkspaceManifest;
}

/**
 * The engine follows a link in a bind's source: a read-only folder swapped for a link (to `~/.ssh`)
 * after it was checked would show the container what the link leads to. Checked again right before
 * the container is made, by type and real path.
 */
function refuseMovedMounts(mounts: readonly ReadOnlyMount[]): void {
  for (const mount of mounts) {
    const stat = fs.lstatSync(mount.source, { throwIfNoEntry: false });
    if (stat?.isDirectory() && fs.realpathSync.native(mount.source) === mount.source) continue;
    throw new ExecutorError(
      'SANDBOX_FAILED',
      `${mount.source} changed while the sandbox was being prepared (it is no longer the folder it was); nothing ran. Try the step again.`,
      { source: mount.source },
    );
  }
}

export function scratchOptionsFor(
  policy: Policy,
  allowedSecrets: readonly string[] = [],
  excludeDirs: readonly string[] = [],
  root?: string,
  /** The engine sees this machine's paths: `sandbox.readOnly` folders are mounted, not copied. */
  localEngine = true,
): ScratchOptions {
  return {
    ...(root !== undefined ? { root } : {}),
    ignore: policy.sandbox.ignore,
    readOnly: policy.sandbox.readOnly,
    mountReadOnly: localEngine,
    secretGlobs: policy.secretGlobs,
    allowedSecrets,
    maxBytes: policy.sandbox.maxCopyMb * 1024 * 1024,
    excludeDirs,
  };
}

/**
 * One sandboxed run on a fresh scratch copy: copy, run, compute what changed, throw the copy away.
 * Nothing here writes to the real workspace.
 */
export async function runSandboxed(client: DockerClient, request: SandboxRunRequest): Promise<SandboxRunOutcome> {
  const image = await imageForRun(client, request);
  const options = scratchOptionsFor(request.policy, request.allowedSecrets, request.excludeDirs, request.root, client.local);
  const scratch = makeScratchCopy(request.sourceDir, {
    ...options,
    owner: { uid: image.user.uid, gid: image.user.gid },
    ...(request.overlay ? { overlay: request.overlay } : {}),
  });
  // An engine on another machine cannot see the scratch directory: the copy travels as an archive.
  const resultDir = client.local ? undefined : path.join(path.dirname(scratch.dir), 'after');
  if (resultDir) fs.mkdirSync(resultDir);
  try {
    // Taken before the run: the command may change what it read.
    const manifest = request.manifest ? await manifestOfScratch(scratch) : undefined;
    refuseMovedMounts(scratch.readOnlyMounts);
    const run = await runInContainer(client, {
      image: image.digest,
      argv: request.argv,
      scratchDir: scratch.dir,
      transport: resultDir ? 'archive' : 'bind',
      resultDir,
      readOnlyMounts: scratch.readOnlyMounts.map((mount) => ({ source: mount.source, target: `${WORKSPACE_MOUNT}/${mount.relativePath}` })),
      workdir: WORKSPACE_MOUNT,
      user: resultDir ? `${SANDBOX_UID}:${SANDBOX_GID}` : scratch.user,
      limits: request.policy.sandbox,
      network: request.network,
      allowHosts: request.policy.network.allowHosts,
      env: request.env,
      timeoutMs: request.timeoutMs,
      hooks: request.hooks,
    });
    throwIfCancelled(run);
    const changeset = await computeChangeset(scratch, options, resultDir);
    return {
      run,
      changeset,
      image: { tag: image.tag, digest: image.digest },
      copy: {
        seconds: scratch.copySeconds,
        ignoredPaths: scratch.ignoredPaths.length,
        secretPaths: scratch.secretPaths,
        readOnlyPaths: scratch.readOnlyMounts.map((mount) => mount.relativePath),
      },
      ...(manifest ? { manifest } : {}),
    };
  } finally {
    scratch.dispose();
  }
}

export interface CodeRunRequest {
  code: string;
  language: 'javascript' | 'python';
  timeoutMs?: number;
  policy: Policy;
  network?: NetworkMode;
  /** Extra files beside the script, by relative path (e.g. input data). */
  files?: Record<string, string | Buffer>;
  hooks?: RunHooks;
}

export interface CodeRunOutcome {
  exitCode: number | null;
  timedOut: boolean;
  cancelled: boolean;
  oomKilled: boolean;
  stdout: ContainerRunResult['stdout'];
  stderr: ContainerRunResult['stderr'];
  durationMs: number;
  image: { tag: string; digest: string };
  egress: ContainerRunResult['egress'];
}

const SCRIPT_NAMES = { javascript: 'main.mjs', python: 'main.py' } as const;
const INTERPRETERS = { javascript: ['node', SCRIPT_NAMES.javascript], python: ['python3', '-I', SCRIPT_NAMES.python] } as const;

/**
 * Heavy code (`runCode` with sandbox 'docker', or Python): the snippet runs in the same hardened
 * container as commands, on a scratch directory of its own that holds only the script and its files.
 * Whatever it writes there is discarded.
 */
export async function runCodeInContainer(request: CodeRunRequest, client: DockerClient = defaultDockerClient()): Promise<CodeRunOutcome> {
  const image = await prepareEngine(client);
  const base = makeTempArea('code');
  try {
    const source = path.join(base, 'source');
    fs.mkdirSync(source);
    for (const [relative, content] of Object.entries(request.files ?? {})) {
      const target = path.resolve(source, relative);
      if (!target.startsWith(source + path.sep)) continue;
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, content);
    }
    fs.writeFileSync(path.join(source, SCRIPT_NAMES[request.language]), request.code);
    const options = scratchOptionsFor(request.policy);
    const scratch = makeScratchCopy(source, { ...options, secretGlobs: [], ignore: [], readOnly: [], parentDir: base });
    const resultDir = client.local ? undefined : path.join(base, 'after');
    if (resultDir) fs.mkdirSync(resultDir);
    const run = await runInContainer(client, {
      image: image.digest,
      argv: [...INTERPRETERS[request.language]],
      scratchDir: scratch.dir,
      transport: resultDir ? 'archive' : 'bind',
      resultDir,
      workdir: WORKSPACE_MOUNT,
      user: resultDir ? `${SANDBOX_UID}:${SANDBOX_GID}` : scratch.user,
      limits: request.policy.sandbox,
      network: request.network ?? 'none',
      allowHosts: request.policy.network.allowHosts,
      timeoutMs: request.timeoutMs,
      hooks: request.hooks,
    });
    return {
      exitCode: run.exitCode,
      timedOut: run.timedOut,
      cancelled: run.cancelled,
      oomKilled: run.oomKilled,
      stdout: run.stdout,
      stderr: run.stderr,
      durationMs: run.durationMs,
      image,
      egress: run.egress,
    };
  } finally {
    removeTree(base);
  }
}
