import fs from 'node:fs';
import path from 'node:path';
import { MAX_PATH_COMPONENT, MAX_PATH_LENGTH } from '../../policy/path-guard.js';

export type LexicalVerdict = { ok: true; absolutePath: string; root: string; relativePath: string } | { ok: false; reason: string };

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** A configured folder as written and as it really is: the policy's own paths, never a requested one, are resolved. */
function spellings(folder: string): string[] {
  const written = path.resolve(folder);
  try {
    const real = fs.realpathSync.native(folder);
    return real === written ? [written] : [written, real];
  } catch {
    return [written];
  }
}

/**
 * guardPath (src/policy/path-guard.ts) from the text of the path alone: the same roots, data
 * directory and limits, but no link is followed and nothing under a root is looked at. For a skill's
 * quarantine, whose answers must not depend on what the workspace holds: through the real paths, a
 * read of a link said where it points (in its target, or in a refusal naming a secret or a place
 * outside the root). The use, with the real paths, refuses what a link hides.
 */
export function guardPathLexically(requested: string, roots: readonly string[], dataDir: string): LexicalVerdict {
  if (requested.includes('\0')) return { ok: false, reason: 'The path contains a NUL byte.' };
  if (requested.length > MAX_PATH_LENGTH) return { ok: false, reason: `The path is longer than ${MAX_PATH_LENGTH} characters.` };
  if (requested.split(/[\\/]/).some((part) => Buffer.byteLength(part) > MAX_PATH_COMPONENT))
    return { ok: false, reason: `A part of the path is longer than ${MAX_PATH_COMPONENT} bytes.` };
  if (roots.length === 0)
    return { ok: false, reason: 'No workspace root is configured, so no file may be touched. Add one to "workspaceRoots" in policy.json.' };
  const absolutePath = path.isAbsolute(requested) ? path.normalize(requested) : path.resolve(roots[0]!, requested);
  if (spellings(dataDir).some((dir) => isInside(dir, absolutePath)))
    return { ok: false, reason: `${requested} is inside Executor's own data directory, which steps may never touch.` };
  for (const root of roots) {
    const spelled = spellings(root).find((candidate) => isInside(candidate, absolutePath));
    if (spelled === undefined) continue;
    if (absolutePath === spelled) return { ok: false, reason: `${requested} is the workspace root itself, not a file in it.` };
    return { ok: true, absolutePath, root: spelled, relativePath: path.relative(spelled, absolutePath) };
  }
  return { ok: false, reason: `${requested} is outside every workspace root (${roots.join(', ')}).` };
}
