import picomatch from 'picomatch';
import { programsInCommand } from './command-words.js';
import type { Policy } from './policy-file.js';

export type CommandVerdict =
  | { allowed: true; programs: string[] }
  | { allowed: false; programs: string[]; reason: string };

function matches(program: string, patterns: readonly string[]): string | undefined {
  return patterns.find((pattern) => picomatch.isMatch(program, pattern, { dot: true }));
}

/**
 * The policy's command lists, applied to every program the command line could start (each part of
 * a pipeline or chain, inside substitutions and `sh -c`). `deny` always wins; a non-empty `allow`
 * admits only the programs it names. Entries are program names or globs (`python3*`).
 */
export function checkCommandPrograms(command: string | readonly string[], lists: Pick<Policy['commands'], 'allow' | 'deny'>): CommandVerdict {
  const parsed = programsInCommand(command);
  if (!parsed.ok) return { allowed: false, programs: [], reason: `The command cannot be checked safely: ${parsed.reason}.` };
  const { programs } = parsed;
  if (programs.length === 0) return { allowed: false, programs, reason: 'The command starts no program.' };
  for (const program of programs) {
    const denied = matches(program, lists.deny);
    if (denied) return { allowed: false, programs, reason: `The command runs "${program}", which the policy denies (commands.deny: "${denied}").` };
  }
  if (lists.allow.length > 0) {
    const outside = programs.find((program) => !matches(program, lists.allow));
    if (outside) return { allowed: false, programs, reason: `The command runs "${outside}", which is not in the policy's commands.allow list.` };
  }
  return { allowed: true, programs };
}
