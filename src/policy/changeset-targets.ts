import { ExecutorError } from '../domain/errors.js';
import { guardPath, type PathVerdict } from './path-guard.js';
import type { Policy } from './policy-file.js';
import { matchingSecretGlob } from './secret-paths.js';

/** What a changeset may reach: the policy's roots and secret patterns, the data directory it must avoid. */
export interface ChangesetScope {
  policy: Policy;
  dataDir: string;
  /** Real paths of the secret-looking files the step's consent named (runCommand's allowSecrets): these may be written. */
  allowedSecretPaths: readonly string[];
}

/**
 * Where one entry of a sandbox's changeset really lands on the host, resolved now (the real path of
 * each existing parent), and whether it may: inside a workspace root, outside the data directory,
 * and not on a secret-looking path the step did not name — also when it only gets there through a
 * symbolic link whose own name looks harmless (`sshdir -> .ssh`).
 */
export function checkChangesetTarget(absolutePath: string, scope: ChangesetScope): PathVerdict {
  const verdict = guardPath(absolutePath, scope.policy.workspaceRoots, scope.dataDir);
  if (!verdict.ok) return verdict;
  const glob = matchingSecretGlob(verdict.relativePath, scope.policy.secretGlobs);
  if (glob && !scope.allowedSecretPaths.includes(verdict.realPath)) {
    const via = verdict.realPath !== verdict.absolutePath ? ' through a symbolic link' : '';
    return {
      ok: false,
      code: 'PATH_OUTSIDE_ROOT',
      reason: `${absolutePath} lands${via} on ${verdict.realPath}, which matches the secret pattern "${glob}" and was not named in the step's allowSecrets.`,
    };
  }
  return verdict;
}

/**
 * The apply-time check of a whole changeset, before its first write: every entry must still land
 * where it did when the run was prepared (its real path then), and may land there. One entry that
 * does not refuses the whole changeset, so nothing of it is written.
 */
export function assertChangesetTargets(changes: readonly { absolutePath: string; displayPath: string }[], scope: ChangesetScope): void {
  for (const change of changes) {
    const verdict = checkChangesetTarget(change.absolutePath, scope);
    if (!verdict.ok) {
      throw new ExecutorError(verdict.code, `Nothing of the command's changes was applied: ${change.displayPath}: ${verdict.reason}`, {
        path: change.displayPath,
      });
    }
    if (verdict.realPath !== change.absolutePath) {
      throw new ExecutorError(
        'PATH_OUTSIDE_ROOT',
        `Nothing of the command's changes was applied: ${change.displayPath} now resolves to ${verdict.realPath} instead of ${change.absolutePath} (a symbolic link appeared in the workspace since the run).`,
        { path: change.displayPath, resolvesTo: verdict.realPath },
      );
    }
  }
}
