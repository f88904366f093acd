import type { Risk } from './risk.js';

/*
 * "Approve and remember": a person's yes turned into a policy rule. Pure types, words and
 * suggestions (no I/O), so the window shows exactly the sentence the core will honour; the
 * matchers live in src/policy/remembered-rules.ts.
 */

/** The highest risk a rule may cover: at most the risk of the step it was made from, never CRITICAL. */
export type RuleRisk = Exclude<Risk, 'CRITICAL'>;

export type RememberedRule =
  | {
      id: string;
      kind: 'command';
      /** argv tokens a command must start with, token for token: ["npm", "test"] covers `npm test -- -u`, not `npm testing`. */
      prefix: string[];
      /** The command must run with its working directory inside this root. */
      root: string;
      maxRisk: RuleRisk;
      createdAt: string;
    }
  | {
      id: string;
      kind: 'file';
      root: string;
      /** Relative to root, picomatch syntax: `src/**`, `docs/*.md`, or one exact file. */
      glob: string;
      maxRisk: RuleRisk;
      createdAt: string;
    }
  | {
      id: string;
      kind: 'url';
      /** Exact host name, lower case; subdomains are not covered. */
      host: string;
      maxRisk: RuleRisk;
      createdAt: string;
    };

export type RememberedRuleDraft = RememberedRule extends infer R ? (R extends RememberedRule ? Omit<R, 'id' | 'createdAt'> : never) : never;

function quoteArgv(tokens: readonly string[]): string {
  return tokens.map((token) => (/^[A-Za-z0-9_./:=@%+-]+$/.test(token) ? token : JSON.stringify(token))).join(' ');
}

/** The rule's reach in one sentence, shown before it is saved and in Settings. */
export function describeRule(rule: RememberedRuleDraft): string {
  const upTo = `(up to ${rule.maxRisk} risk)`;
  switch (rule.kind) {
    case 'command':
      return `Future \`${quoteArgv(rule.prefix)} …\` commands run in ${rule.root} will run without asking ${upTo}. Only commands that start with exactly these ${rule.prefix.length} word(s) match; in a pipeline, every command must be covered by a rule.`;
    case 'file':
      return `Future writes and deletes of files matching ${rule.glob} under ${rule.root} will run without asking ${upTo}. Riskier steps (such as secret-looking files) and other paths still ask.`;
    case 'url':
      return `Future URLs on ${rule.host} will open without asking ${upTo}. Other hosts, including subdomains of ${rule.host}, still ask.`;
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
  draft: RememberedRuleDraft;
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
    if (extension) choices.push({ label: `${extension} files in ${relativePath.slice(0, slash)}/`, draft: { kind: 'file', root, glob: `${folder}/*${extension}`, maxRisk } });
    choices.push({ label: `Anything under ${relativePath.slice(0, slash)}/`, draft: { kind: 'file', root, glob: `${folder}/**`, maxRisk } });
  }
  return choices;
}

/** For a command: its program plus one word per choice (`git`, `git status`, …), up to the whole argv. */
export function commandRuleChoices(argv: readonly string[], root: string, maxRisk: RuleRisk): RuleChoice[] {
  const choices: RuleChoice[] = [];
  for (let length = Math.min(argv.length, 3); length >= 1; length--) {
    const prefix = argv.slice(0, length);
    // A shell or interpreter prefix would cover any program it is handed: only its whole argv is offered.
    if (length < argv.length && /^(sh|bash|zsh|dash|node|python3?|perl|ruby|env|sudo|npx|xargs|eval|exec)$/.test(prefix[0]!)) continue;
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
