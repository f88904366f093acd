import fs from 'node:fs';
import path from 'node:path';
import type { SandboxOfRecord } from '../domain/audit-event.js';
import { isHeavy } from '../actions/run-code.js';
import type { Step } from '../domain/step.js';
import { guardPath } from '../policy/path-guard.js';
import { absoluteForMatching } from '../policy/path-patterns.js';
import type { Policy } from '../policy/policy-file.js';
import { matchingSecretGlob } from '../policy/secret-paths.js';

/** What every audit record of a step says about it beyond its event: whether its content is a secret, and where it runs. */
export interface StepRecordTraits {
  /** The step writes or deletes a path matching the secret patterns: its content and content hashes are recorded as salted digests. */
  secretContent: boolean;
  sandboxKind: SandboxOfRecord['kind'];
  /** The workspace root (real path) a command runs on: its image is the root's own (src/sandbox/docker/project-image.ts). */
  commandRoot?: string;
}

/** The root a command's cwd lies in (the first root without one), by real path; undefined when it names none. */
function commandRootOf(cwd: string | undefined, policy: Policy, dataDir: string): string | undefined {
  const realRoots = policy.workspaceRoots.map((root) => {
    try {
      return fs.realpathSync.native(root);
    } catch {
      return root;
    }
  });
  if (realRoots.length === 0) return undefined;
  // No cwd, or a cwd that is a root itself (which guardPath, made for files in a root, refuses).
  if (cwd === undefined) return realRoots[0];
  const absolute = path.isAbsolute(cwd) ? cwd : path.resolve(realRoots[0]!, cwd);
  let real = absolute;
  try {
    real = fs.realpathSync.native(absolute);
  } catch {
    // A cwd that does not exist: the step fails when it runs; its root is still the one it names.
  }
  if (realRoots.includes(real)) return real;
  const verdict = guardPath(cwd, policy.workspaceRoots, dataDir);
  return verdict.ok ? verdict.root : undefined;
}

/**
 * Whether a path looks like a secret file, for the audit log. Case is ignored on every platform and
 * the path may be relative or absolute: the log errs toward hiding, never toward showing.
 */
export function secretPathTest(policy: Policy): (filePath: string) => boolean {
  return (filePath) => matchingSecretGlob(filePath, policy.secretGlobs, { caseInsensitive: true }) !== undefined;
}

/** The sandbox a step runs in: light code in a single-use worker, commands and heavy code in Docker, file and other steps in Executor itself. */
export function sandboxKindOf(step: Step): SandboxOfRecord['kind'] {
  if (step.action === 'runCommand') return 'docker';
  if (step.action === 'runCode') return isHeavy(step.args) ? 'docker' : 'worker';
  return 'host';
}

export function stepRecordTraits(step: Step, policy: Policy, dataDir: string): StepRecordTraits {
  const isSecret = secretPathTest(policy);
  let secretContent = false;
  if (step.action === 'writeFile' || step.action === 'deleteFile') {
    const requested = step.args.path;
    secretContent = isSecret(requested);
    if (!secretContent) {
      // A harmless name may be a link to .env: the file the step really opens decides too.
      const verdict = guardPath(requested, policy.workspaceRoots, dataDir);
      if (verdict.ok) secretContent = isSecret(verdict.relativePath) || isSecret(absoluteForMatching(verdict.realPath));
    }
  }
  const commandRoot = step.action === 'runCommand' ? commandRootOf(step.args.cwd, policy, dataDir) : undefined;
  return { secretContent, sandboxKind: sandboxKindOf(step), ...(commandRoot ? { commandRoot } : {}) };
}
