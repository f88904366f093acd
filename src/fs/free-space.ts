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
