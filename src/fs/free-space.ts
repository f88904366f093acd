import fs from 'node:fs';
import path from 'node:path';

/** Free space where a write lands, and sizes in words: what a STORAGE_FULL error tells the person. */

export function freeBytesAt(dir: string): number | null {
  // statfs of the nearest existing directory: the target's own directory may not exist yet.
  for (let probe = dir; ; probe = path.dirname(probe)) {
    try {
      const stats = fs.statfsSync(probe);
      return Number(stats.bavail) * Number(stats.bsize);
    } catch {
      if (path.dirname(probe) === probe) return null;
    }
  }
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/**
 * Two sizes said side by side ("1.0 MiB free, 1.0 MiB needed" reads as a contradiction): where they round to the
 * same words and differ, both are said in bytes, so the difference the person is told about can be seen.
 */
export function formatBytesBeside(first: number, second: number): [string, string] {
  const [a, b] = [formatBytes(first), formatBytes(second)];
  if (a !== b || first === second) return [a, b];
  return [`${first.toLocaleString('en-US')} bytes`, `${second.toLocaleString('en-US')} bytes`];
}
