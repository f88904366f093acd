import { describe, expect, it } from 'vitest';
import { identifyEngine, limitsUnenforceable } from '../../../../src/sandbox/docker/engine-identity.js';

// The /version and /info answers as the engines give them (trimmed to what is read).
const podmanVersion = {
  Version: '4.3.1',
  Components: [
    { Name: 'Podman Engine', Version: '4.3.1' },
    { Name: 'Conmon', Version: 'conmon version 2.1.6, commit: unknown' },
    { Name: 'OCI Runtime (runc)', Version: 'runc version 1.1.5+ds1' },
  ],
};
const dockerVersion = {
  Version: '20.10.24+dfsg1',
  Components: [
    { Name: 'Engine', Version: '20.10.24+dfsg1' },
    { Name: 'containerd', Version: '1.6.20~ds1' },
    { Name: 'runc', Version: '1.1.5+ds1' },
    { Name: 'docker-init', Version: '0.19.0' },
  ],
};

describe('identifyEngine', () => {
  it('names Podman with its mode, from its own component and its Rootless answer', () => {
    expect(identifyEngine(podmanVersion, { Rootless: false, SecurityOptions: ['name=seccomp,profile=default'] })).toEqual({
      name: 'Podman',
      version: '4.3.1',
      rootless: false,
      label: 'Podman 4.3.1 (rootful)',
    });
    expect(identifyEngine(podmanVersion, { Rootless: true }).label).toBe('Podman 4.3.1 (rootless)');
  });

  it('names Docker, with its mode only when it runs rootless', () => {
    expect(identifyEngine(dockerVersion, { SecurityOptions: ['name=seccomp,profile=default'] })).toEqual({
      name: 'Docker',
      version: '20.10.24+dfsg1',
      rootless: false,
      label: 'Docker 20.10.24+dfsg1',
    });
    expect(
      identifyEngine(dockerVersion, { SecurityOptions: ['name=seccomp,profile=builtin', 'name=rootless', 'name=cgroupns'] }).label,
    ).toBe('Docker 20.10.24+dfsg1 (rootless)');
  });

  it('says nothing of the mode when /info did not answer, and still names the engine from /version alone', () => {
    expect(identifyEngine(podmanVersion, undefined)).toEqual({ name: 'Podman', version: '4.3.1', label: 'Podman 4.3.1' });
    expect(identifyEngine({}, undefined)).toEqual({ name: 'Docker', version: 'unknown', label: 'Docker unknown' });
  });
});

describe('limitsUnenforceable', () => {
  it('refuses a rootless engine on cgroup v1 (Podman says Rootless, Docker name=rootless), whatever its PidsLimit answer', () => {
    expect(limitsUnenforceable({ Rootless: true, CgroupVersion: '1' })).toMatch(/rootless on cgroup v1/);
    expect(limitsUnenforceable({ SecurityOptions: ['name=seccomp,profile=builtin', 'name=rootless'], CgroupVersion: '1' })).toMatch(
      /cgroup v1/,
    );
  });

  it('accepts a rootful engine on either cgroup version, a rootless one on v2, and an engine that did not answer', () => {
    expect(limitsUnenforceable({ Rootless: false, CgroupVersion: '1' })).toBeNull();
    expect(limitsUnenforceable({ Rootless: true, CgroupVersion: '2' })).toBeNull();
    expect(limitsUnenforceable({ SecurityOptions: ['name=seccomp,profile=default'], CgroupVersion: '1' })).toBeNull();
    expect(limitsUnenforceable(undefined)).toBeNull();
  });
});
