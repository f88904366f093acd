import { whyNotARulePrefix } from './program-runners.js';
import type { Risk } from './risk.js';
import type { StepRecord } from './step-record.js';
import type { Step } from './step.js';

/*
 * "Approve and remember": a person's yes turned into a policy rule. Pure types, words and
 * suggestions (no I/O), so the window shows exactly the sentence the core will honour; the
 * matchers live in src/policy/remembered-rules.ts.
 */

/** The highest risk a rule may cover: at most the risk of the step it was made from, never CRITICAL. */
export type RuleRisk = Exclude<Risk, 'CRITICAL'>;

/** What a rule reaches: which commands, files or hosts, and up to which risk. */
export type RuleReach =
  | {
      kind: 'command';
      /** argv tokens a command must start with, token for token: ["npm", "test"] covers `npm test -- -u`, not `npm testing`. Never a wrapper or interpreter (src/domain/program-runners.ts). */
      prefix: string[];
      /** The command must run with its working directory inside this root. */
      root: string;
      maxRisk: RuleRisk;
    }
  | {
      kind: 'file';
      root: string;
      /** Relative to root, picomatch syntax: `src/**`, `docs/*.md`, or one exact file. */
      glob: string;
      maxRisk: RuleRisk;
    }
  | {
      kind: 'url';
      /** Exact host name, lower case; subdomains are not covered. */
      host: string;
      maxRisk: RuleRisk;
    };

/**
 * Whose steps a rule covers: the person's own (proposed from the window or the CLI), or one
 * agent's. A yes given to one agent's step is not a yes to every agent that proposes the same.
 */
export type RuleProposer = { kind: 'person' } | { kind: 'agent'; agentId: string };

/** Who a rule is for and how long it lasts; the rest of a rule beside its reach. */
export interface RuleScope {
  proposer: RuleProposer;
  /** ISO time after which the rule no longer matches; absent = until the person removes it. */
  expiresAt?: string;
}

export type RememberedRule = RuleReach &
  RuleScope & {
    id: string;
    createdAt: string;
    /**
     * Set on rules saved before rules named whom they cover: they were read as the person's own
     * (never any agent's), and Settings says so.
     */
    madeBeforeScoping?: true;
  };

/**
 * The proposer a step's rule is scoped to, or null when the step says too little to tell one
 * agent from another (no rule is offered then). The one place that reads a step's identity for
 * rules: an agent is the identity the host issued to its session (`meta.agent`).
 */
export function proposerOf(step: Pick<Step, 'meta'>): RuleProposer | null {
  if (step.meta.origin === 'user') return { kind: 'person' };
  // The identity the host issued to the agent's session (src/ipc/server/agent-identity.ts), never the name it gave itself.
  const agent = step.meta.agent;
  return agent ? { kind: 'agent', agentId: ruleAgentOf(agent) } : null;
}

/** A family's own id: what a rule made from one of its sessions' steps is bound to. */
const FAMILY_RULE_AGENT = /^agent-F[A-Za-z0-9_-]{22}$/;

/**
 * Whom a rule made from this agent's step binds to. The sessions of one client in one folder
 * (Claude Code or Gemini CLI through the hook) are a family the host issued
 * (`agent-F<family><session>`, src/ipc/server/agent-identity.ts): their rules bind to the family,
 * so a yes remembered in one session holds in that client's next sessions there, and nowhere else.
 * Every other agent (an MCP session) is its own.
 */
export function ruleAgentOf(agentId: string): string {
  const family = /^(agent-F[A-Za-z0-9_-]{22})[A-Za-z0-9_-]{22}$/.exec(agentId);
  return family ? family[1]! : agentId;
}

export function sameProposer(left: RuleProposer, right: RuleProposer): boolean {
  return (
    left.kind === right.kind && (left.kind === 'person' || left.agentId === (right as Extract<RuleProposer, { kind: 'agent' }>).agentId)
  );
}

/** Expired rules never match; an expiry that does not parse counts as expired (fail closed). */
export function isRuleExpired(rule: Pick<RuleScope, 'expiresAt'>, now: Date): boolean {
  if (rule.expiresAt === undefined) return false;
  const at = Date.parse(rule.expiresAt);
  return !Number.isFinite(at) || at <= now.getTime();
}

/** How long a remembered rule may last, as the dialog offers it. */
export const RULE_LIFETIMES = {
  hour: { label: '1 hour', ms: 3_600_000 },
  day: { label: '1 day', ms: 86_400_000 },
  week: { label: '1 week', ms: 7 * 86_400_000 },
  never: { label: 'Until I remove it', ms: null },
} as const satisfies Record<string, { label: string; ms: number | null }>;
export type RuleLifetime = keyof typeof RULE_LIFETIMES;
export const RULE_LIFETIME_NAMES = Object.keys(RULE_LIFETIMES) as RuleLifetime[];

export function expiryFor(lifetime: RuleLifetime, now: Date): string | undefined {
  const ms = RULE_LIFETIMES[lifetime].ms;
  return ms === null ? undefined : new Date(now.getTime() + ms).toISOString();
}

function quoteArgv(tokens: readonly string[]): string {
  return tokens.map((token) => (/^[A-Za-z0-9_./:=@%+-]+$/.test(token) ? token : JSON.stringify(token))).join(' ');
}

/** Whose steps, in words: "steps of agent claude-code" or "steps you propose yourself". */
export function describeProposer(proposer: RuleProposer): string {
  if (proposer.kind === 'person') return 'steps you propose yourself (from this window or the CLI)';
  if (FAMILY_RULE_AGENT.test(proposer.agentId))
    return `steps of this client in this folder, in this and its later sessions (${JSON.stringify(proposer.agentId)})`;
  return `steps of agent ${JSON.stringify(proposer.agentId)}`;
}

/** The rule's reach in one sentence, shown before it is saved and in Settings. */
export function describeRule(rule: RuleReach & Partial<RuleScope>): string {
  const upTo = `(up to ${rule.maxRisk} risk)`;
  const whose = rule.proposer ? ` for ${describeProposer(rule.proposer)}` : '';
  const until = rule.proposer
    ? rule.expiresAt
      ? ` Until ${rule.expiresAt.replace('T', ' ').slice(0, 16)} UTC.`
      : ' Until you remove it.'
    : '';
  switch (rule.kind) {
    case 'command':
      return `Future \`${quoteArgv(rule.prefix)} …\` commands${whose} run in ${rule.root} will run without asking ${upTo}. Only commands that start with exactly these ${rule.prefix.length} word(s) match; in a pipeline, every command must be covered by a rule. Commands that set environment variables, use the network or see secret files still ask.${until}`;
    case 'file':
      return `Future writes and deletes of files matching ${rule.glob} under ${rule.root}${whose} will run without asking ${upTo}. Riskier steps (such as secret-looking files) and other paths still ask.${until}`;
    case 'url':
      return `Future URLs on ${rule.host}${whose} will open without asking ${upTo}. Other hosts, including subdomains of ${rule.host}, still ask.${until}`;
  }
}

/** Posix-style join and relative path in plain string operations (this module also runs in the browser). */
function trimSlashes(text: string): string {
  return text.replace(/\/+$/, '');
}

/** Where a file step's path lands among the workspace roots, as far as the text of the path tells. */
export function placeInRoots(requested: string, roots: readonly string[]): { root: string; relativePath: string } | null {
  if (roots.length === 0) return null;
  if (!requested.startsWith('/')) {
    const relativePath = requested.replace(/^\.\//, '');
    if (relativePath.split('/').includes('..')) return null;
    return { root: trimSlashes(roots[0]!), relativePath };
  }
  for (const root of roots) {
    const prefix = `${trimSlashes(root)}/`;
    if (requested.startsWith(prefix) && requested.length > prefix.length) {
      const relativePath = requested.slice(prefix.length);
      if (relativePath.split('/').includes('..')) return null;
      return { root: trimSlashes(root), relativePath };
    }
  }
  return null;
}

/** Escapes glob syntax so an exact file name matches only itself. */
function literalGlob(relativePath: string): string {
  return relativePath.replace(/[*?[\]{}()!+@\\]/g, (char) => `\\${char}`);
}

export interface RuleChoice {
  label: string;
  draft: RuleReach;
}

/**
 * The rules a person may choose from for a file step, narrowest first: this file only, files
 * directly in its folder, its folder at any depth. Never a rule for the whole root from one step.
 */
export function fileRuleChoices(requested: string, roots: readonly string[], maxRisk: RuleRisk): RuleChoice[] {
  const placed = placeInRoots(requested, roots);
  if (!placed) return [];
  const { root, relativePath } = placed;
  const slash = relativePath.lastIndexOf('/');
  const choices: RuleChoice[] = [{ label: 'This file only', draft: { kind: 'file', root, glob: literalGlob(relativePath), maxRisk } }];
  if (slash > 0) {
    const folder = literalGlob(relativePath.slice(0, slash));
    const extension = /\.[A-Za-z0-9]+$/.exec(relativePath.slice(slash + 1))?.[0];
    if (extension)
      choices.push({
        label: `${extension} files in ${relativePath.slice(0, slash)}/`,
        draft: { kind: 'file', root, glob: `${folder}/*${extension}`, maxRisk },
      });
    choices.push({
      label: `Anything under ${relativePath.slice(0, slash)}/`,
      draft: { kind: 'file', root, glob: `${folder}/**`, maxRisk },
    });
  }
  return choices;
}

/**
 * For a command: its program plus one word per choice (`git`, `git status`, …), up to three words.
 * None at all when its program runs other programs (a wrapper, shell or interpreter, or words
 * like `find -exec`): any prefix of such a command would cover every program.
 */
export function commandRuleChoices(argv: readonly string[], root: string, maxRisk: RuleRisk): RuleChoice[] {
  const choices: RuleChoice[] = [];
  if (whyNotARulePrefix(argv) !== null) return choices;
  for (let length = Math.min(argv.length, 3); length >= 1; length--) {
    const prefix = argv.slice(0, length);
    if (whyNotARulePrefix(prefix) !== null) continue;
    choices.push({ label: quoteArgv(prefix), draft: { kind: 'command', prefix, root, maxRisk } });
  }
  return choices;
}

export function urlRuleChoices(url: string, maxRisk: RuleRisk): RuleChoice[] {
  const host = hostOf(url);
  return host ? [{ label: host, draft: { kind: 'url', host, maxRisk } }] : [];
}

/** The host of a URL, lower case and without a trailing dot; null when it is not an http(s) URL. */
export function hostOf(url: string): string | null {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return null;
    return parsed.hostname.toLowerCase().replace(/\.$/, '') || null;
  } catch {
    return null;
  }
}

/**
 * Why no rule covers this command whatever its words, or null. Environment variables can make any
 * program run others (LD_PRELOAD, NODE_OPTIONS, GIT_PAGER, BASH_ENV, npm_config_script_shell), and
 * the network and secret files are reach a person grants one step at a time.
 */
export function commandReachesBeyondRules(args: {
  env?: Record<string, string>;
  network?: 'none' | 'allowlist';
  allowSecrets?: readonly string[];
}): string | null {
  if (args.env && Object.keys(args.env).length > 0) return 'it sets environment variables, which can make any program run others';
  if (args.network === 'allowlist') return 'it asks for the network';
  if (args.allowSecrets && args.allowSecrets.length > 0) return 'it asks to see secret-looking files';
  return null;
}

/**
 * The rules a person may remember for a step waiting for them: none for CRITICAL or denied
 * steps, none when the proposer cannot be told apart, none for actions no rule can cover. The
 * window offers these and the core accepts only these (Executor.rememberRule), so a rule never
 * reaches further than a choice the person was shown.
 */
export function ruleChoicesForStep(
  record: Pick<StepRecord, 'step' | 'status' | 'evaluation'>,
  workspaceRoots: readonly string[],
): RuleChoice[] {
  const risk = record.evaluation?.risk;
  if (record.status !== 'awaiting_consent' || !risk || risk === 'CRITICAL' || record.evaluation?.allowed === false) return [];
  if (!proposerOf(record.step)) return [];
  const maxRisk = risk as RuleRisk;
  const step = record.step;
  switch (step.action) {
    case 'writeFile':
    case 'deleteFile':
      return fileRuleChoices(step.args.path, workspaceRoots, maxRisk);
    case 'openURL':
      return urlRuleChoices(step.args.url, maxRisk);
    case 'runCommand': {
      const args = step.args;
      // A shell line is offered no rule from here: which words form each of its commands is the
      // core's parse, and a guess would reach too far.
      if (!args.argv || commandReachesBeyondRules(args) !== null) return [];
      const base = workspaceRoots[0]?.replace(/\/+$/, '');
      if (!base) return [];
      if (args.cwd !== undefined && args.cwd.split('/').includes('..')) return [];
      const cwd =
        args.cwd === undefined
          ? base
          : args.cwd.startsWith('/')
            ? args.cwd.replace(/\/+$/, '')
            : `${base}/${args.cwd.replace(/^\.\/?/, '')}`.replace(/\/+$/, '');
      return commandRuleChoices(args.argv, cwd || '/', maxRisk);
    }
    // No rule is offered: code and knowledge-base entries are weighed each time, and a skill's pin is its approval.
    case 'runCode':
    case 'createKBEntry':
    case 'runSkill':
      return [];
    default: {
      // Every action this build knows has its case: a new one does not compile until it is decided here.
      const known: never = step;
      void known;
      return [];
    }
  }
}
