import fs from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import { runsOtherPrograms, whyNotARulePrefix } from '../domain/program-runners.js';
import { hostOf, isRuleExpired, sameProposer, type RememberedRule, type RuleProposer } from '../domain/remembered-rule.js';
import { riskRank, type Risk } from '../domain/risk.js';
import { guardPath } from './path-guard.js';

/**
 * Whether a remembered rule covers a step. Each matcher is strict by construction: token-wise
 * prefixes (not string prefixes), real paths under the rule's own root, exact hosts. The common
 * failure of remembered approvals is matching too much; the second is never matching again, so
 * paths are compared after resolving symlinks on both sides and hosts after case folding.
 * A rule also covers only the steps of the proposer it was made for, and only until it expires.
 */

/** What a step touches, as far as rules care. Action modules say it (ActionModule.ruleTarget). */
export type RuleTarget =
  | { kind: 'file'; path: string }
  | { kind: 'url'; url: string }
  /** One argv per command of a pipeline (`a | b && c` is three), and the working directory. */
  | { kind: 'command'; pipeline: string[][]; cwd: string };

/** `["npm", "test"]` covers `npm test` and `npm test -- --watch`; not `npm testing`, not `npm`, not `/usr/bin/npm test`. */
export function commandMatchesPrefix(argv: readonly string[], prefix: readonly string[]): boolean {
  if (prefix.length === 0 || argv.length < prefix.length) return false;
  return prefix.every((token, index) => argv[index] === token);
}

/**
 * Whether a command rule covers one command. Refused whatever the prefix says when the command's
 * words make it able to run another program (`find . -exec …`, `git -c … log`), and when the rule
 * itself names such a program (a rule that slipped past the policy schema): defence in depth.
 */
export function commandRuleCovers(prefix: readonly string[], argv: readonly string[]): boolean {
  if (whyNotARulePrefix(prefix) !== null || runsOtherPrograms(argv) !== null) return false;
  return commandMatchesPrefix(argv, prefix);
}

function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function realOrResolved(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * A pipeline is covered only when every one of its commands is covered by some command rule
 * whose root holds the working directory; returns the rules used, one per command, or null.
 */
export function pipelineCoveredBy(
  pipeline: readonly (readonly string[])[],
  cwd: string,
  rules: readonly RememberedRule[],
): RememberedRule[] | null {
  if (pipeline.length === 0) return null;
  const realCwd = realOrResolved(cwd);
  const used: RememberedRule[] = [];
  for (const argv of pipeline) {
    const rule = rules.find(
      (candidate) =>
        candidate.kind === 'command' && isInside(realOrResolved(candidate.root), realCwd) && commandRuleCovers(candidate.prefix, argv),
    );
    if (!rule) return null;
    used.push(rule);
  }
  return used;
}

export function fileRuleMatches(
  rule: Extract<RememberedRule, { kind: 'file' }>,
  requested: string,
  workspaceRoots: readonly string[],
  dataDir: string,
): boolean {
  // The workspace guard decides where the path really goes; the rule only narrows inside a root.
  const verdict = guardPath(requested, workspaceRoots, dataDir);
  if (!verdict.ok) return false;
  const ruleRoot = realOrResolved(rule.root);
  if (!isInside(ruleRoot, verdict.realPath) || ruleRoot === verdict.realPath) return false;
  const relative = path.relative(ruleRoot, verdict.realPath).split(path.sep).join('/');
  return picomatch.isMatch(relative, rule.glob, { dot: true });
}

export function urlRuleMatches(rule: Extract<RememberedRule, { kind: 'url' }>, url: string): boolean {
  const host = hostOf(url);
  return host !== null && host === rule.host;
}

/** Who proposed the step being weighed, and when: rules for other proposers, or expired, do not count. */
export interface RuleContext {
  /** From proposerOf(step); null when the step's proposer cannot be told apart, so no rule covers it. */
  proposer: RuleProposer | null;
  now: Date;
}

/** The rules that may cover a step of this proposer now: its own, not expired, within their risk. */
export function rulesInScope(rules: readonly RememberedRule[], risk: Risk, context: RuleContext): RememberedRule[] {
  const proposer = context.proposer;
  if (!proposer) return [];
  return rules.filter(
    (rule) =>
      riskRank(risk) <= riskRank(rule.maxRisk) &&
      !isRuleExpired(rule, context.now) &&
      rule.proposer !== undefined &&
      sameProposer(rule.proposer, proposer),
  );
}

/**
 * The rules that let a step of this risk run without asking, or null. Each rule covers no more
 * than its own maxRisk, its own proposer and its lifetime; for a pipeline every command needs such a rule.
 */
export function rulesAllowing(
  target: RuleTarget,
  risk: Risk,
  rules: readonly RememberedRule[],
  workspaceRoots: readonly string[],
  dataDir: string,
  context: RuleContext,
): RememberedRule[] | null {
  if (risk === 'CRITICAL') return null;
  const inScope = rulesInScope(rules, risk, context);
  if (inScope.length === 0) return null;
  switch (target.kind) {
    case 'file': {
      const rule = inScope.find(
        (candidate) => candidate.kind === 'file' && fileRuleMatches(candidate, target.path, workspaceRoots, dataDir),
      );
      return rule ? [rule] : null;
    }
    case 'url': {
      const rule = inScope.find((candidate) => candidate.kind === 'url' && urlRuleMatches(candidate, target.url));
      return rule ? [rule] : null;
    }
    case 'command':
      return pipelineCoveredBy(target.pipeline, target.cwd, inScope);
  }
}
