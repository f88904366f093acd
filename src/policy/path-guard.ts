import fs from 'node:fs';
import path from 'node:path';

export const MAX_PATH_LENGTH = 4096;
export const MAX_PATH_COMPONENT = 255;

export type PathVerdict =
  | { ok: true; absolutePath: string; realPath: string; root: string; relativePath: string }
  | { ok: false; code: 'PATH_INVALID' | 'PATH_OUTSIDE_ROOT'; reason: string };

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function realpathOrSelf(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * Realpath of the nearest existing ancestor, with the missing tail appended: the target may not
 * exist yet, and its parent may be a symlink out of the root.
 */
export function resolveThroughSymlinks(absolutePath: string): string {
  let existing = absolutePath;
  const missing: string[] = [];
  for (;;) {
    try {
      const real = fs.realpathSync.native(existing);
      return path.join(real, ...missing.reverse());
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // A dangling symlink is an escape attempt we cannot see the end of: treat its text as the target.
      if (code === 'ENOENT') {
        try {
          const link = fs.readlinkSync(existing);
          existing = path.resolve(path.dirname(existing), link);
          continue;
        } catch {
          /* not a link: it really is missing */
        }
      }
      const parent = path.dirname(existing);
      if (parent === existing) return absolutePath;
      missing.push(path.basename(existing));
      existing = parent;
    }
  }
}

/**
 * Decides whether a step's path stays inside a workspace root and out of the data directory.
 * Relative paths resolve against the first root. The check is made on real paths, so a symlink
 * inside the root that points elsewhere does not count as inside.
 */
export function guardPath(requested: string, roots: readonly string[], dataDir: string): PathVerdict {
  if (requested.includes('\0')) return { ok: false, code: 'PATH_INVALID', reason: 'The path contains a NUL byte.' };
  if (requested.length > MAX_PATH_LENGTH) {
    return { ok: false, code: 'PATH_INVALID', reason: `The path is longer than ${MAX_PATH_LENGTH} characters.` };
  }
  if (requested.split(/[\\/]/).some((part) => Buffer.byteLength(part) > MAX_PATH_COMPONENT)) {
    return { ok: false, code: 'PATH_INVALID', reason: `A part of the path is longer than ${MAX_PATH_COMPONENT} bytes.` };
  }
  if (roots.length === 0) {
    return {
      ok: false,
      code: 'PATH_OUTSIDE_ROOT',
      reason: 'No workspace root is configured, so no file may be touched. Add one to "workspaceRoots" in policy.json.',
    };
  }
  const absolutePath = path.isAbsolute(requested) ? path.normalize(requested) : path.resolve(roots[0]!, requested);
  const realPath = resolveThroughSymlinks(absolutePath);
  const realDataDir = realpathOrSelf(dataDir);
  if (isInside(realDataDir, realPath) || isInside(path.resolve(dataDir), absolutePath)) {
    return {
      ok: false,
      code: 'PATH_OUTSIDE_ROOT',
      reason: `${requested} is inside Executor's own data directory, which steps may never touch.`,
    };
  }
  for (const root of roots) {
    const realRoot = realpathOrSelf(root);
    if (isInside(realRoot, realPath)) {
      if (realPath === realRoot)
        return { ok: false, code: 'PATH_INVALID', reason: `${requested} is the workspace root itself, not a file in it.` };
      return { ok: true, absolutePath, realPath, root: realRoot, relativePath: path.relative(realRoot, realPath) };
    }
  }
  const viaLink = realPath !== absolutePath && roots.some((root) => isInside(path.resolve(root), absolutePath));
  return {
    ok: false,
    code: 'PATH_OUTSIDE_ROOT',
    reason: viaLink
      ? `${requested} goes through a symbolic link to ${realPath}, which is outside every workspace root.`
      : `${requested} resolves to ${realPath}, which is outside every workspace root (${roots.join(', ')}).`,
  };
}
