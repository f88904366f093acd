import fs from 'node:fs';
import path from 'node:path';
import { guardPath } from './path-guard.js';
import { absoluteForMatching, filesystemIgnoresCase } from './path-patterns.js';
import { matchingSecretGlob } from './secret-paths.js';

/*
 * Whether an outside agent's own read tool (Claude Code's Read, Grep, Glob, LS; Gemini CLI's
 * read_file, grep_search, …) may read a path: the same rules as a run's read tools. Real paths
 * inside the workspace roots, no way out through a link, never the data directory, never a file
 * whose name or place marks it a secret (the policy's secretGlobs, matched below the root and as an
 * absolute path, so a root inside ~/.aws still cannot read ~/.aws/credentials).
 */

export type AgentReadVerdict = { allowed: true } | { allowed: false; path: string; reason: string };

export function agentReadVerdict(
  paths: readonly string[],
  policy: { workspaceRoots: readonly string[]; secretGlobs: readonly string[] },
  dataDir: string,
  options: { folders?: boolean } = {},
): AgentReadVerdict {
  for (const requested of paths) {
    // A listing of a whole root (Glob with no path: the project's folder) is what these tools are for;
    // the path guard refuses a root itself only because a step cannot write or delete it.
    // (A root never holds the data directory: the policy refuses one that does.)
    if (options.folders && path.isAbsolute(requested) && !requested.includes('\0')) {
      const real = realOrSelf(requested);
      if (policy.workspaceRoots.some((root) => realOrSelf(root) === real)) continue;
    }
    const verdict = guardPath(requested, policy.workspaceRoots, dataDir);
    if (!verdict.ok)
      return { allowed: false, path: requested, reason: `Executor's policy does not let agents read ${requested}: ${verdict.reason}` };
    const match = { caseInsensitive: filesystemIgnoresCase(verdict.root) };
    const secret =
      matchingSecretGlob(verdict.relativePath, policy.secretGlobs, match) ??
      matchingSecretGlob(absoluteForMatching(verdict.realPath), policy.secretGlobs, match);
    if (secret) {
      return {
        allowed: false,
        path: requested,
        reason: `Executor's policy does not let agents read ${requested}: it matches the secret pattern "${secret}". Do not try to read it another way; ask the user if you need a value from it.`,
      };
    }
  }
  return { allowed: true };
}

const realOrSelf = (file: string) => {
  try {
    return fs.realpathSync(file);
  } catch {
    return path.resolve(file);
  }
};
