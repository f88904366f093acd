import type { CommandEffectKind, Policy } from './policy-file.js';

/**
 * An effect a step names before anything runs: a write's path is a secret file, a command's
 * `allowSecrets` lets it see (and change) secret files. The policy's `commands.effects.ask` names
 * kinds of effect, not where they were found: a kind it names sends the step to the person whether
 * the changeset of a run shows it or the step's own properties declare it, whatever autoApprove or a
 * remembered rule would allow.
 */
export interface DeclaredEffect {
  kind: CommandEffectKind;
  /** What the step does, as the sentence's subject: "it writes .env, a secret-looking file". */
  says: string;
}

/** The `mustAsk` reasons for the declared effects the policy's ask list names (none: an empty list). */
export function askedDeclaredEffects(effects: readonly DeclaredEffect[], policy: Policy): string[] {
  const ask = policy.commands.effects.ask;
  return effects
    .filter((effect) => ask.includes(effect.kind))
    .map(
      (effect) =>
        `${effect.says}, and the policy always asks you about "${effect.kind}" (commands.effects.ask), whatever autoApprove says.`,
    );
}

/** `.git` as a path segment at any depth, without case: a write there changes what git reads and runs. */
export function insideGitDirectory(relativePath: string): boolean {
  return relativePath.split(/[\\/]/).some((segment) => segment.toLowerCase() === '.git');
}
