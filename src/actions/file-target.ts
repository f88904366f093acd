import { ExecutorError } from '../domain/errors.js';
import type { Risk } from '../domain/risk.js';
import { guardPath } from '../policy/path-guard.js';
import { askedDeclaredEffects, insideGitDirectory, type DeclaredEffect } from '../policy/declared-effects.js';
import type { RiskHints } from '../policy/evaluate-step.js';
import { hostCodeFindingAt, matchHostCodePath } from '../policy/host-code-paths.js';
import { absoluteForMatching, filesystemIgnoresCase } from '../policy/path-patterns.js';
import { matchingSecretGlob } from '../policy/secret-paths.js';
import type { ActionContext } from './action-module.js';

/** The effect kinds as the policy's sentences name them (as in src/policy/command-effects.ts). */
const EFFECT_WORDS = { git: 'changes inside a git directory', hostCode: 'changes to files this machine runs later' } as const;

/** Shared rules of the file actions: where the path really goes and how risky touching it is. */
export function assessFileTarget(requested: string, verb: 'write' | 'delete', ctx: ActionContext): RiskHints {
  const verdict = guardPath(requested, ctx.policy.workspaceRoots, ctx.dataDir);
  if (!verdict.ok) return { risk: 'CRITICAL', deny: true, reasons: [verdict.reason], mitigations: [] };
  let risk: Risk = 'MEDIUM';
  const reasons = [`${verb === 'write' ? 'Writes' : 'Deletes'} ${verdict.relativePath} inside the workspace root ${verdict.root}.`];
  // Where `.GIT/config` opens `.git/config`, the patterns must not care about case either.
  const matchOptions = { caseInsensitive: filesystemIgnoresCase(verdict.root) };
  const secretGlob =
    matchingSecretGlob(verdict.relativePath, ctx.policy.secretGlobs, matchOptions) ??
    matchingSecretGlob(absoluteForMatching(verdict.realPath), ctx.policy.secretGlobs, matchOptions);
  const verbed = verb === 'write' ? 'writes' : 'deletes';
  // What the step declares by its path alone, weighed by the effects ask list like a command's changeset.
  const declared: DeclaredEffect[] = verb === 'delete' ? [{ kind: 'delete', says: `It deletes ${verdict.relativePath}` }] : [];
  if (secretGlob) {
    risk = 'HIGH';
    reasons.push(`${verdict.relativePath} matches the secret pattern "${secretGlob}": it may hold credentials.`);
    declared.push({ kind: 'secret', says: `It ${verbed} ${verdict.relativePath}, a secret-looking file` });
  }
  if (insideGitDirectory(verdict.relativePath))
    declared.push({ kind: 'git', says: `It ${verbed} ${verdict.relativePath}, inside a .git directory` });
  // The part above the root counts too: a root inside .git/ or a home folder's .config/ holds what those hold.
  const aboveRoot = matchHostCodePath(absoluteForMatching(verdict.realPath), matchOptions);
  // Judged on the tree the plan leaves (ctx.plannedTree): its other writes may make this path part of a git directory.
  const runsLater =
    hostCodeFindingAt(verdict.root, verdict.relativePath, matchOptions, ctx.plannedTree) ??
    (aboveRoot && { reason: `${verdict.realPath} is ${aboveRoot.what}.`, git: aboveRoot.kind === 'git' });
  if (runsLater) {
    risk = 'HIGH';
    const why = `${runsLater.reason} ${verb === 'write' ? 'Writing' : 'Deleting'} it changes what this machine runs later, outside any sandbox.`;
    // The same gate as a command that changes such a file (commands.effects): a file step is a changeset of one.
    const kind = runsLater.git ? 'git' : 'hostCode';
    if (ctx.policy.commands.effects.deny.includes(kind))
      return {
        risk: 'CRITICAL',
        deny: true,
        reasons: [...reasons, `${why} The policy denies ${EFFECT_WORDS[kind]} (commands.effects.deny).`],
        mitigations: [],
      };
    reasons.push(why);
    if (!declared.some((effect) => effect.kind === kind))
      declared.push({
        kind,
        says: `It ${verbed} ${verdict.relativePath}, ${kind === 'git' ? 'which git reads as part of a repository' : 'which this machine runs or obeys later'}`,
      });
  }
  const mustAsk = askedDeclaredEffects(declared, ctx.policy);
  return {
    risk,
    reasons,
    ...(mustAsk.length > 0 ? { mustAsk } : {}),
    mitigations: ['The current content is backed up first; the step can be reverted exactly.'],
  };
}

/** Re-checks the path at the moment of execution: a symlink may have appeared since approval. */
export function resolveFileTarget(requested: string, ctx: ActionContext): string {
  const verdict = guardPath(requested, ctx.policy.workspaceRoots, ctx.dataDir);
  if (!verdict.ok) throw new ExecutorError(verdict.code, verdict.reason, { path: requested });
  return verdict.realPath;
}
