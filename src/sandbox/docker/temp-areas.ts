import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Kinds of temporary directories the sandbox makes; each name carries the owning process id. */
export type TempAreaKind = 'scratch' | 'egress' | 'code' | 'sandbox-rootfs';

const AREA_NAME = /^executor-(scratch|egress|code|sandbox-rootfs)-(\d+)-/;

/** A fresh private directory named for its kind and this process, so a sweep can tell whose it is. */
export function makeTempArea(kind: TempAreaKind, parentDir: string = os.tmpdir()): string {
  return fs.mkdtempSync(path.join(parentDir, `executor-${kind}-${process.pid}-`));
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes a tree even where a command took away its own permissions (chmod 000). */
export function removeTree(target: string): void {
  try {
    fs.rmSync(target, { recursive: true, force: true });
  } catch {
    const restore = (dir: string) => {
      try {
        fs.chmodSync(dir, 0o700);
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) restore(path.join(dir, entry.name));
      } catch {
        /* best effort; the rm below reports what is left */
      }
    };
    restore(target);
    fs.rmSync(target, { recursive: true, force: true });
  }
}

/**
 * Removes scratch copies, proxy sockets and code directories of processes that no longer exist: a
 * crash mid-run must not leave copies of a workspace behind (in /dev/shm they would hold memory).
 */
export function sweepTempAreas(parents: readonly string[] = [os.tmpdir(), '/dev/shm']): string[] {
  const removed: string[] = [];
  for (const parent of new Set(parents)) {
    let names: string[];
    try {
      names = fs.readdirSync(parent);
    } catch {
      continue;
    }
    for (const name of names) {
      const match = AREA_NAME.exec(name);
      if (!match || processAlive(Number(match[2]))) continue;
      try {
        removeTree(path.join(parent, name));
        removed.push(path.join(parent, name));
      } catch {
        /* someone else's or already gone */
      }
    }
  }
  return removed;
}
