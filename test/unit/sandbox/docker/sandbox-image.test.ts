import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assembleHostRootfs } from '../../../../src/sandbox/docker/sandbox-image.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

const hasBusybox = ['/bin/busybox', '/usr/bin/busybox'].some((candidate) => fs.existsSync(candidate));
if (!hasBusybox && process.env.CI) throw new Error('CI needs busybox-static for the offline sandbox image');

describe.skipIf(!hasBusybox)('the offline sandbox root filesystem (skipped without busybox-static: the image cannot be built then)', () => {
  it('is open to the sandbox user although the command that builds it runs under the private umask', () => {
    const stage = tempDir('executor-rootfs-');
    const before = process.umask(0o077);
    try {
      assembleHostRootfs(stage);
    } finally {
      process.umask(before);
    }
    const mode = (relative: string) => fs.statSync(path.join(stage, relative)).mode & 0o7777;
    expect(mode('.')).toBe(0o755);
    expect(mode('bin')).toBe(0o755);
    expect(mode('usr/local/bin')).toBe(0o755);
    expect(mode('usr/local/bin/node') & 0o555).toBe(0o555);
    expect(mode('bin/busybox') & 0o555).toBe(0o555);
    expect(mode('etc/passwd') & 0o444).toBe(0o444);
    expect(mode('etc/passwd') & 0o111).toBe(0);
    expect(mode('tmp')).toBe(0o1777);
  });
});
