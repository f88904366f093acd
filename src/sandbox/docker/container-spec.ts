import type { ContainerCreateOptions } from 'dockerode';
import type { Policy } from '../../policy/policy-file.js';

/** Every container the app creates carries this label, so a sweep at start finds what a crash left behind. */
export const CONTAINER_LABEL = 'dev.executor.sandbox';
export const WORKSPACE_MOUNT = '/workspace';
/** Where the egress socket's directory appears inside the container (allowlist mode only). */
export const EGRESS_MOUNT = '/run/executor-egress';
export const EGRESS_SHIM_PORT = 3128;

/** The sandbox uid's process limit (RLIMIT_NPROC) at least: it is shared by every container of that uid at once. */
const SANDBOX_NPROC = 4096;

export type SandboxLimits = Policy['sandbox'];
export type NetworkMode = 'none' | 'allowlist';

export interface ContainerSpecInput {
  image: string;
  /** What runs: an argv, exactly as given (a command string arrives here already as ['/bin/sh', '-c', …]). */
  argv: string[];
  /**
   * Host directory holding the step's scratch copy, bind-mounted: the only host path the container
   * sees. Null for an engine on another machine: the copy then travels into an anonymous volume as
   * an archive, and back out the same way.
   */
  scratchDir: string | null;
  /** Working directory inside the container, at or below /workspace. */
  workdir: string;
  user: string;
  limits: SandboxLimits;
  network: NetworkMode;
  /**
   * Folders of the real workspace the container sees read-only at their place under /workspace
   * (`sandbox.readOnly`: a project's node_modules), instead of a copy. Bound by the Mounts API, never a
   * `src:dst` string, so a path holding `:` or `,` cannot be read as options.
   */
  readOnlyMounts?: readonly { source: string; target: string }[];
  /** Host directory holding the egress proxy's socket (allowlist mode). */
  egressDir?: string;
  env: Record<string, string>;
  /** Identifies the run in the label, for the audit and for the sweep. */
  runId: string;
}

/**
 * The hardened container as data, so one unit test can assert every flag: no network (or only the
 * egress socket), no capabilities, no privilege gain, default seccomp, read-only root, a small tmpfs,
 * pid/memory/cpu limits, a non-root user, and no host path except the scratch copy.
 */
export function containerSpec(input: ContainerSpecInput): ContainerCreateOptions {
  const memoryBytes = input.limits.memoryMb * 1024 * 1024;
  const nproc = Math.max(SANDBOX_NPROC, input.limits.pids);
  const binds = input.scratchDir === null ? [] : [`${input.scratchDir}:${WORKSPACE_MOUNT}:rw`];
  if (input.network === 'allowlist' && input.egressDir) binds.push(`${input.egressDir}:${EGRESS_MOUNT}:ro`);
  // Python would otherwise write __pycache__ into the workspace copy, and those files would show up as changes;
  // git would rewrite the index on `git status` (the copy's files have new inodes), a change to .git no one asked for.
  const env = ['PYTHONDONTWRITEBYTECODE=1', 'GIT_OPTIONAL_LOCKS=0', ...Object.entries(input.env).map(([key, value]) => `${key}=${value}`)];
  if (input.network === 'allowlist') {
    const proxy = `http://127.0.0.1:${EGRESS_SHIM_PORT}`;
    env.push(`HTTP_PROXY=${proxy}`, `HTTPS_PROXY=${proxy}`, `http_proxy=${proxy}`, `https_proxy=${proxy}`, 'NO_PROXY=', 'no_proxy=');
  }
  return {
    Image: input.image,
    Cmd: input.argv,
    WorkingDir: input.workdir,
    User: input.user,
    Env: env,
    Labels: { [CONTAINER_LABEL]: input.runId, [`${CONTAINER_LABEL}.pid`]: String(process.pid) },
    AttachStdin: false,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    OpenStdin: false,
    NetworkDisabled: false,
    HostConfig: {
      // "none" even in allowlist mode: the only way out is the proxy's unix socket, so the container cannot reach the host's other ports.
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      CapAdd: [],
      SecurityOpt: ['no-new-privileges'],
      Privileged: false,
      ReadonlyRootfs: true,
      Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=64m' },
      Binds: binds,
      ...(input.scratchDir === null || (input.readOnlyMounts?.length ?? 0) > 0
        ? {
            Mounts: [
              ...(input.scratchDir === null ? [{ Type: 'volume' as const, Source: '', Target: WORKSPACE_MOUNT }] : []),
              ...(input.readOnlyMounts ?? []).map((mount) => ({
                Type: 'bind' as const,
                Source: mount.source,
                Target: mount.target,
                ReadOnly: true,
              })),
            ],
          }
        : {}),
      PidsLimit: input.limits.pids,
      Memory: memoryBytes,
      // Equal to Memory: no swap, so a memory hog is killed instead of thrashing the host.
      MemorySwap: memoryBytes,
      NanoCpus: Math.round(input.limits.cpus * 1e9),
      // Both pinned, below any engine's own: Podman otherwise asks for its defaults (open files 1048576,
      // processes 4194304 as root), which an engine without CAP_SYS_RESOURCE (inside a VM's or another
      // container's limits) cannot grant, and the create fails. The per-container cap on processes is
      // PidsLimit; nproc counts the sandbox uid across all its containers, so it is kept wider.
      Ulimits: [
        { Name: 'nofile', Soft: 1024, Hard: 1024 },
        { Name: 'nproc', Soft: nproc, Hard: nproc },
      ],
      IpcMode: 'none',
      // Output is streamed and capped by the app; the engine keeps no log file a command could fill.
      LogConfig: { Type: 'none', Config: {} },
      AutoRemove: false,
      // The engine's own init (Docker's docker-init, Podman's catatonit) as pid 1: it reaps orphans and
      // passes signals on, for any image, the project's own too. An init in the image would not cover those.
      Init: true,
    },
  };
}
