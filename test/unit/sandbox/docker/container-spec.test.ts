import { describe, expect, it } from 'vitest';
import { containerSpec, CONTAINER_LABEL } from '../../../../src/sandbox/docker/container-spec.js';
import { defaultPolicy } from '../../../../src/policy/policy-file.js';

const limits = { ...defaultPolicy().sandbox, memoryMb: 256, cpus: 0.5, pids: 64 };

describe('containerSpec', () => {
  it('locks the container down: no network, no capabilities, read-only root, limits, non-root, only the scratch mount', () => {
    const spec = containerSpec({
      image: 'sha256:abc',
      argv: ['/bin/sh', '-c', 'make'],
      scratchDir: '/tmp/executor-scratch-1/workspace',
      workdir: '/workspace',
      user: '10001:10001',
      limits,
      network: 'none',
      env: { CI: '1' },
      runId: 'run-1',
    });
    expect(spec).toEqual({
      Image: 'sha256:abc',
      Cmd: ['/bin/sh', '-c', 'make'],
      WorkingDir: '/workspace',
      User: '10001:10001',
      Env: ['PYTHONDONTWRITEBYTECODE=1', 'GIT_OPTIONAL_LOCKS=0', 'CI=1'],
      Labels: { [CONTAINER_LABEL]: 'run-1', [`${CONTAINER_LABEL}.pid`]: String(process.pid) },
      AttachStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      OpenStdin: false,
      NetworkDisabled: false,
      HostConfig: {
        NetworkMode: 'none',
        CapDrop: ['ALL'],
        CapAdd: [],
        SecurityOpt: ['no-new-privileges'],
        Privileged: false,
        ReadonlyRootfs: true,
        Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=64m' },
        Binds: ['/tmp/executor-scratch-1/workspace:/workspace:rw'],
        PidsLimit: 64,
        Memory: 256 * 1024 * 1024,
        MemorySwap: 256 * 1024 * 1024,
        NanoCpus: 500_000_000,
        Ulimits: [
          { Name: 'nofile', Soft: 1024, Hard: 1024 },
          { Name: 'nproc', Soft: 4096, Hard: 4096 },
        ],
        IpcMode: 'none',
        LogConfig: { Type: 'none', Config: {} },
        AutoRemove: false,
        Init: true,
      },
    });
    // The default seccomp profile stays: nothing may switch it off.
    expect(JSON.stringify(spec)).not.toContain('seccomp');
  });

  it('keeps network "none" in allowlist mode and adds only the read-only egress socket directory and proxy variables', () => {
    const spec = containerSpec({
      image: 'img',
      argv: ['true'],
      scratchDir: '/s',
      workdir: '/workspace',
      user: '1000:1000',
      limits,
      network: 'allowlist',
      egressDir: '/tmp/executor-egress-1',
      env: {},
      runId: 'run-2',
    });
    expect(spec.HostConfig?.NetworkMode).toBe('none');
    expect(spec.HostConfig?.Binds).toEqual(['/s:/workspace:rw', '/tmp/executor-egress-1:/run/executor-egress:ro']);
    expect(spec.Env).toEqual(
      expect.arrayContaining(['HTTP_PROXY=http://127.0.0.1:3128', 'HTTPS_PROXY=http://127.0.0.1:3128', 'NO_PROXY=']),
    );
  });

  it('for an engine on another machine mounts no host path at all, only an anonymous workspace volume', () => {
    const spec = containerSpec({
      image: 'img',
      argv: ['true'],
      scratchDir: null,
      workdir: '/workspace',
      user: '10001:10001',
      limits,
      network: 'none',
      env: {},
      runId: 'run-3',
    });
    expect(spec.HostConfig?.Binds).toEqual([]);
    expect(spec.HostConfig?.Mounts).toEqual([{ Type: 'volume', Source: '', Target: '/workspace' }]);
  });
});
