import picomatch from 'picomatch';
import { analyseArgv, analyseCommandLine, analyseEnvironment, type ShellAnalysis } from './shell-analysis.js';
import { reasonWithDetail } from '../domain/reason-detail.js';
import { UNKNOWABLE_CONSEQUENCES, type Unknowable } from './shell-findings.js';
import type { Policy } from './policy-file.js';

export type CommandVerdict =
  | { allowed: true; programs: string[]; unknowable: Unknowable[] }
  | { allowed: false; programs: string[]; unknowable: Unknowable[]; reason: string };

/** A shell line (run by `sh -c`) or an argv (run directly), with the variables the step sets for it. */
export function analyseCommand(command: string | readonly string[], env?: Readonly<Record<string, string>>): ShellAnalysis {
  const names = Object.keys(env ?? {});
  const analysis = typeof command === 'string' ? analyseCommandLine(command, names) : analyseArgv(command, names);
  if (env)
    analysis.unknowable.push(
      ...analyseEnvironment(Object.keys(env)).map((entry) => ({ ...entry, reason: `${entry.reason} (in the step's env)` })),
    );
  return analysis;
}

/**
 * "This command could run any program: it runs code that is not shown here. In detail: it feeds
 * code to `sh -c`; …": what could happen first, each kind's consequence once, then how the analysis
 * knows. `then` is a sentence of the policy's own that belongs with the consequence ("The policy
 * denies "rm" …, so you decide.").
 */
export function describeUnknowable(unknowable: readonly Unknowable[], then = ''): string {
  const consequences = [...new Set(unknowable.map((entry) => UNKNOWABLE_CONSEQUENCES[entry.kind]))];
  const headline = `This command could run any program: ${consequences.join('; ')}.${then ? ` ${then}` : ''}`;
  return reasonWithDetail(headline, `${unknowable.map((entry) => entry.reason).join('; ')}.`);
}

/** A pattern matches a program by its base name (`rm`) or by the path it was written with (`/bin/rm`). */
function matches(program: string, patterns: readonly string[]): string | undefined {
  const base = program.slice(program.lastIndexOf('/') + 1);
  return patterns.find((pattern) => picomatch.isMatch(base, pattern, { dot: true }) || picomatch.isMatch(program, pattern, { dot: true }));
}

/** Programs that only print or look up the words they are given: a denied name among them runs nothing. */
const INERT_PROGRAMS = new Set(['echo', 'printf', 'type', 'which', 'whereis', 'man', 'help', 'whatis', 'apropos', ':', 'true', 'false']);

/** Characters that end a program's name inside one argument: `EXEC:rm`, `--exec=rm`, `'rm x'`, `a;rm`. */
const NAME_BOUNDARY = /[\s;|&()<>'"`=:,{}]+/;

/**
 * A denied program's name given as an argument to a program the tables do not know (`gosu root rm x`,
 * `tini -- rm x`, `socat - EXEC:rm`, `pee 'rm x'`): no table of wrappers is complete, so the analysis
 * cannot tell that the program does not run it. Under a deny list such a line is asked about.
 */
function deniedNamesAsArguments(commands: readonly (readonly string[])[], deny: readonly string[]): Unknowable[] {
  if (deny.length === 0) return [];
  const found: Unknowable[] = [];
  for (const [program, ...args] of commands) {
    if (program === undefined || INERT_PROGRAMS.has(program.slice(program.lastIndexOf('/') + 1))) continue;
    for (const arg of args) {
      const name = arg.split(NAME_BOUNDARY).find((token) => token !== '' && matches(token, deny) !== undefined) ?? deniedInCode(arg, deny);
      if (name === undefined) continue;
      found.push({
        kind: 'wrapper',
        reason: `\`${program}\` is given the word \`${name}\`, a program the policy denies, and the analysis cannot tell that \`${program}\` does not run it`,
      });
      break;
    }
  }
  return found;
}

/** Arguments longer than this are not read as code (a commit message of megabytes stays cheap). */
const MAX_ARGUMENT_READ_AS_CODE = 4096;

/**
 * An argument that may be a command line for the program it is given to (`pee 'r""m x'`,
 * `socat - SYSTEM:'r""m x'`): each piece between `:`, `=` and `,` that holds a blank or a shell
 * operator is read as the shell would read it, and a denied program it names is returned.
 */
function deniedInCode(arg: string, deny: readonly string[]): string | undefined {
  if (arg.length > MAX_ARGUMENT_READ_AS_CODE || !/[\s;|&`$()'"\\]/.test(arg)) return undefined;
  for (const piece of [arg, ...arg.split(/[:=,]/)]) {
    if (!/[\s;|&`$()'"\\]/.test(piece)) continue;
    const named = analyseCommandLine(piece).programs.find((program) => matches(program, deny) !== undefined);
    if (named !== undefined) return named;
  }
  return undefined;
}

/**
 * The policy's command lists, applied to every program the command line could start (each part of
 * a pipeline or list, inside substitutions, `sh -c` code and wrappers). `deny` always wins; a
 * non-empty `allow` admits only the programs it names, and never a line that could run a program
 * it cannot name. With only a deny list, such a line is allowed here but must go to the person
 * (run-command's assess says so); see docs/command-policy.md.
 */
export function checkCommandPrograms(
  command: string | readonly string[],
  lists: Pick<Policy['commands'], 'allow' | 'deny'>,
  env?: Readonly<Record<string, string>>,
): CommandVerdict {
  const analysis = analyseCommand(command, env);
  const { programs } = analysis;
  const unknowable = [...analysis.unknowable, ...deniedNamesAsArguments(analysis.commands, lists.deny)];
  for (const program of programs) {
    const denied = matches(program, lists.deny);
    if (denied !== undefined)
      return {
        allowed: false,
        programs,
        unknowable,
        reason: `The command runs "${program}", which the policy denies (commands.deny: "${denied}").`,
      };
  }
  if (programs.length === 0 && unknowable.length === 0)
    return { allowed: false, programs, unknowable, reason: 'The command starts no program.' };
  if (lists.allow.length > 0) {
    if (unknowable.length > 0) {
      return {
        allowed: false,
        programs,
        unknowable,
        reason: describeUnknowable(
          unknowable,
          "The policy's commands.allow list admits only programs it can name, so it cannot cover this command.",
        ),
      };
    }
    const outside = programs.find((program) => matches(program, lists.allow) === undefined);
    if (outside !== undefined)
      return {
        allowed: false,
        programs,
        unknowable,
        reason: `The command runs "${outside}", which is not in the policy's commands.allow list.`,
      };
  }
  return { allowed: true, programs, unknowable };
}
