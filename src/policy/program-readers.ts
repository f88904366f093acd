import {
  INTERPRETER,
  MULTI_CALL,
  RUNNER_SUBCOMMANDS,
  SELF_DESCRIBING,
  SHELLS,
  SYSTEM_PROGRAM_DIRS,
  WRAPPERS,
  sedRunsCommands,
  type WrapperSpec,
} from './program-kinds.js';
import type { UnknowableKind } from './shell-findings.js';

/*
 * How the walk reads the programs it knows (shells, wrappers, find, git, sed, and options that name
 * files or code): what each does with its arguments, and what that makes the line able to run. The
 * walk is handed in as the few things these readers tell it.
 */

/** What a program reader tells the walk of the line. */
export interface CommandWalk {
  flag(kind: UnknowableKind, reason: string): void;
  code(text: string, codeDepth: number): void;
  variable(name: string): void;
  arithmetic(text: string, where: string): void;
  nameArgument(word: string | null, where: string, write?: 'numeric' | 'text'): void;
  simpleCommand(argv: readonly (string | null)[], codeDepth: number, wrapDepth: number): void;
}

/** What the program and its words could start, by what the program is. */
export function programWords(
  walk: CommandWalk,
  program: string,
  args: readonly (string | null)[],
  codeDepth: number,
  wrapDepth: number,
): Reading {
  const base = baseName(program);
  if (program.includes('/')) {
    const dir = program.slice(0, program.lastIndexOf('/')) || '/';
    const clean = !program.split('/').some((part) => part === '..' || part === '.');
    if (!clean || !SYSTEM_PROGRAM_DIRS.has(dir.replace(/\/+/g, '/'))) {
      walk.flag('file-by-path', `it runs ${quoted(program)}, a file chosen by its path, whose content the command line does not show`);
    }
  }
  if (SHELLS.has(base)) return shell(walk, base, args, codeDepth);
  if (INTERPRETER.test(base)) {
    if (selfDescribing(args)) return 'read';
    walk.flag('runs-code', `${quoted(base)} runs code that the command line does not show`);
    return;
  }
  if (MULTI_CALL.has(base)) {
    const start = skipOptions(args);
    walk.flag('multi-call', `${quoted(base)} is a multi-call program: its first argument picks the program it runs`);
    if (start < args.length) walk.simpleCommand(args.slice(start), codeDepth, wrapDepth + 1);
    return;
  }
  switch (base) {
    case 'eval':
      walk.flag('runs-code', '`eval` runs its arguments as shell code');
      if (args.every((arg) => arg !== null)) walk.code(args.join(' '), codeDepth + 1);
      return;
    case 'source':
    case '.':
      walk.flag('runs-code', `${quoted(base)} runs the shell code in ${args[0] ? quoted(args[0]) : 'a file'}`);
      return;
    case 'trap': {
      const action = args[0];
      if (args.length === 0 || action === '-l' || action === '-p' || action === '-' || action === '') return 'read';
      walk.flag('runs-code', '`trap` stores shell code to run later');
      const code = action === '--' ? args[1] : action;
      if (typeof code === 'string') walk.code(code, codeDepth + 1);
      return;
    }
    case 'fc': {
      // Only `fc -l` (with -n, -r) lists; -s, -e and a bare `fc` run commands again, whatever the order.
      const options = args.filter((arg) => arg === null || /^-[a-zA-Z]/.test(arg));
      if (
        options.some((arg) => arg === '-l' || (arg !== null && /^-[lnr]*l[lnr]*$/.test(arg))) &&
        options.every((arg) => arg !== null && /^-[lnr]+$/.test(arg))
      )
        return 'read';
      walk.flag('runs-code', '`fc` runs commands again from the history');
      return;
    }
    case 'compgen':
    case 'complete':
      if (args.some((arg) => arg === null || /^-[a-zA-Z]*[CF]/.test(arg)))
        walk.flag('runs-code', `${quoted(base)} -C/-F runs a command or function it is given`);
      return;
    case 'mapfile':
    case 'readarray':
      if (args.some((arg) => arg === null || /^-[a-zA-Z]*[CF]/.test(arg)))
        walk.flag('runs-code', `${quoted(base)} -C runs a command or function it is given`);
      namesAfterOptions(walk, base, args, { values: 'dnOsuCc', names: '', operands: 'first' });
      return;
    case 'read':
      namesAfterOptions(walk, base, args, { values: 'dinNptu', names: 'a', operands: 'all' });
      return;
    case 'getopts':
      namesAfterOptions(walk, base, args, { values: '', names: '', operands: 'second' });
      return;
    case 'printf':
      namesAfterOptions(walk, base, args, { values: '', names: 'v', operands: 'none' });
      return;
    case 'wait':
      namesAfterOptions(walk, base, args, { values: '', names: 'p', operands: 'none', numeric: true });
      return;
    case 'let':
      for (const arg of args) {
        if (arg === null)
          walk.flag('changes-lookup', '`let` is given an expression the analysis cannot read, and arithmetic can assign PATH');
        else walk.arithmetic(arg, '`let`');
      }
      return;
    case 'test':
    case '[':
      args.forEach((arg, index) => {
        if (arg === '-v' && index + 1 < args.length) walk.nameArgument(args[index + 1]!, `\`${base} -v\``);
      });
      return;
    case 'alias':
      if (args.some((arg) => arg === null || arg.includes('='))) walk.flag('changes-lookup', '`alias` makes a name run other code');
      return 'read';
    case 'hash':
      if (args.some((arg) => arg === null || /^-[a-zA-Z]*p/.test(arg)))
        walk.flag('changes-lookup', '`hash -p` makes a name run another file');
      return;
    case 'enable':
      if (args.length > 0) walk.flag('changes-lookup', '`enable` loads or switches off builtins, which changes which program a name runs');
      return;
    case 'command': {
      // `command -v NAME` / `-V` only looks names up, but only as options before the program:
      // `command rm -v x` runs rm.
      let i = 0;
      let lookupOnly = false;
      for (; i < args.length; i++) {
        const arg = args[i];
        if (typeof arg !== 'string' || !/^-[pvV]+$/.test(arg)) break;
        if (/[vV]/.test(arg)) lookupOnly = true;
      }
      if (lookupOnly) return 'read';
      break;
    }
    case 'find':
      find(walk, args, codeDepth, wrapDepth);
      return;
    case 'git':
      git(walk, args);
      return;
    case 'tar':
    case 'bsdtar':
      if (
        args.some(
          (arg) =>
            arg === null ||
            /^(--to-command|--use-compress-program|--checkpoint-action|--info-script|--new-volume-script|--rsh-command|-I|-F)/.test(arg) ||
            /^-[a-zA-Z]*[IF]/.test(arg),
        )
      )
        walk.flag('runs-code', '`tar` is given a command to run (--to-command, -I, --checkpoint-action …)');
      return;
    case 'rsync':
      if (args.some((arg) => arg === null || /^(-e|--rsh|--rsync-path)/.test(arg) || /^-[a-zA-Z]*e/.test(arg)))
        walk.flag('runs-code', '`rsync -e/--rsh` runs a command it is given');
      return;
    case 'zip':
      if (args.some((arg) => arg === null || /^(-TT|--unzip-command)/.test(arg)))
        walk.flag('runs-code', '`zip -TT` runs a command it is given');
      return;
    case 'make':
    case 'gmake':
      if (args.some((arg) => arg === null || /^[A-Za-z_][A-Za-z0-9_]*\+?:?=/.test(arg) || arg === '--eval' || arg.startsWith('--eval='))) {
        walk.flag('runs-code', '`make` is given variables or code on its command line (SHELL=, --eval), which can run any program');
      }
      return;
    case 'sed':
    case 'gsed':
      return sed(walk, args);
  }
  const runner = RUNNER_SUBCOMMANDS[base];
  if (runner) {
    // The subcommand is any word that is not an option: which words are option values is not known,
    // so `npm --prefix x exec rm` must not slip past a look at the first word only.
    const at = runner.length === 0 ? -1 : args.findIndex((arg) => arg === null || runner.includes(arg));
    if (runner.length === 0 || at >= 0) {
      walk.flag('wrapper', `${quoted(`${base}${runner.length ? ` ${args[at] ?? '…'}` : ''}`)} runs a program given in its arguments`);
      const start = runner.length ? at + 1 + skipOptions(args.slice(at + 1)) : skipOptions(args);
      if (start < args.length) walk.simpleCommand(args.slice(start), codeDepth, wrapDepth + 1);
      return;
    }
  }
  const spec = WRAPPERS[base];
  if (spec) return wrapper(walk, base, spec, args, codeDepth, wrapDepth);
  return;
}

/**
 * The variables a builtin writes (`read NAME…`, `read -a NAME`, `printf -v NAME`, `getopts s NAME`,
 * `mapfile NAME`, `wait -p NAME`): options come first, bundled or not, their values attached or
 * not; `names` are the option letters whose value is a variable name, `values` those whose value is
 * anything else, `operands` which words after the options are names.
 */
function namesAfterOptions(
  walk: CommandWalk,
  base: string,
  args: readonly (string | null)[],
  spec: { values: string; names: string; operands: 'all' | 'first' | 'second' | 'none'; numeric?: boolean },
): void {
  const where = `\`${base}\``;
  const write = spec.numeric ? 'numeric' : 'text';
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i];
    if (arg === null || arg === undefined) {
      // An unreadable word among the options could be `-v PATH` or `-aPATH`.
      walk.flag('changes-lookup', `${where} is given a word the analysis cannot read, which could make it write PATH`);
      return;
    }
    if (arg === '--') {
      i++;
      break;
    }
    if (!arg.startsWith('-') || arg === '-') break;
    for (let j = 1; j < arg.length; j++) {
      const letter = arg[j]!;
      if (!spec.names.includes(letter) && !spec.values.includes(letter)) continue;
      const attached = arg.slice(j + 1);
      const value = attached !== '' ? attached : args[++i];
      if (spec.names.includes(letter)) walk.nameArgument(value === undefined ? '' : value, `\`${base} -${letter}\``, write);
      break;
    }
  }
  const operands = args.slice(i);
  const names =
    spec.operands === 'all'
      ? operands
      : spec.operands === 'first'
        ? operands.slice(0, 1)
        : spec.operands === 'second'
          ? operands.slice(1, 2)
          : [];
  for (const name of names) walk.nameArgument(name ?? null, where, write);
}

function shell(walk: CommandWalk, base: string, args: readonly (string | null)[], codeDepth: number): Reading {
  let dashC = false;
  let script: string | null | undefined;
  let i = 0;
  for (; i < args.length; i++) {
    const word = args[i];
    if (word === null || word === undefined) {
      script = null;
      break;
    }
    if (word === '--' || word === '-') {
      i++;
      break;
    }
    // `-o NAME` and `-O NAME` take the next word, also bundled (`-eo pipefail`); bash's long options are exact.
    if (/^[-+][a-zA-Z]*[oO][a-zA-Z]*$/.test(word) || word === '--rcfile' || word === '--init-file') {
      if (/^-[a-zA-Z]*c/.test(word)) dashC = true;
      i++;
      continue;
    }
    if (/^-[a-zA-Z]*c/.test(word)) dashC = true;
    if (!/^[-+]/.test(word)) break;
  }
  if (script === undefined) script = args[i];
  if (selfDescribing(args)) return 'read';
  if (dashC) {
    walk.flag('runs-code', `it feeds code to ${quoted(`${base} -c`)}`);
    if (typeof script === 'string') walk.code(script, codeDepth + 1);
  } else if (typeof script === 'string') {
    walk.flag('runs-code', `${quoted(base)} runs the script ${quoted(script)}, whose content the command line does not show`);
  } else {
    walk.flag('runs-code', `${quoted(base)} runs code from its input (a pipe, a here-document, a here-string or a file)`);
  }
}

function wrapper(
  walk: CommandWalk,
  base: string,
  spec: WrapperSpec,
  args: readonly (string | null)[],
  codeDepth: number,
  wrapDepth: number,
): Reading {
  let i = 0;
  let leading = spec.leadingWords ?? 0;
  /** Code handed to the wrapper (`env -S`, `su -c`): null when the word cannot be read or is missing. */
  const codes: (string | null)[] = [];
  while (i < args.length) {
    const word = args[i];
    if (word === null || word === undefined) break;
    if (word === '--') {
      i++;
      break;
    }
    // `env -` is `env -i`.
    if (base === 'env' && word === '-') {
      i++;
      continue;
    }
    if (word.startsWith('--')) {
      // getopt_long: `--name=value` or `--name value`, and any start of a long option stands for it (`--s` is `--split-string`).
      const equals = word.indexOf('=');
      const attached = equals >= 0 ? word.slice(equals + 1) : undefined;
      const kind = longOptionKind(spec, equals >= 0 ? word.slice(0, equals) : word);
      if (kind === 'code') codes.push(attached ?? args[i + 1] ?? null);
      i += kind !== 'flag' && attached === undefined ? 2 : 1;
      continue;
    }
    if (word.startsWith('-') && word !== '-' && !(base === 'nice' && /^-\d+$/.test(word))) {
      // Short options bundle (`-iS'rm x'` is `-i -S 'rm x'`); one that takes a value takes the rest of the word, or the next word.
      i++;
      for (let j = 1; j < word.length; j++) {
        const option = `-${word[j]}`;
        const isCode = spec.codeOptions?.includes(option) ?? false;
        if (!isCode && !spec.valueOptions?.includes(option)) continue;
        const rest = word.slice(j + 1);
        if (isCode) codes.push(rest !== '' ? rest : (args[i] ?? null));
        if (rest === '') i++;
        break;
      }
      continue;
    }
    if (base === 'env' && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word)) {
      walk.variable(word.slice(0, word.indexOf('=')));
      i++;
      continue;
    }
    if (base === 'nice' && /^-?\d+$/.test(word)) {
      i++;
      continue;
    }
    if (leading > 0) {
      leading--;
      i++;
      continue;
    }
    break;
  }
  const inner = args.slice(i);
  for (const code of codes) {
    walk.flag('runs-code', `it feeds code to ${quoted(base)}`);
    if (typeof code === 'string') walk.code(code, codeDepth + 1);
  }
  if (inner.length === 0) {
    // `exec >log` only redirects; `env` alone prints; `command`/`builtin` alone do nothing.
    if (codes.length === 0 && ['exec', 'env', 'command', 'builtin', 'time'].includes(base)) return 'read';
    if (codes.length === 0) walk.flag('wrapper', `${quoted(base)} runs a program it is given`);
    return;
  }
  if (spec.joinsIntoCode) {
    walk.flag('runs-code', `${quoted(base)} runs its arguments as shell code`);
    if (inner.every((word) => word !== null)) walk.code(inner.join(' '), codeDepth + 1);
    return;
  }
  const innerName = inner[0];
  walk.flag('wrapper', `${quoted(base)} starts ${innerName ? `the program ${quoted(innerName)}` : 'a program'} given in its arguments`);
  walk.simpleCommand(inner, codeDepth, wrapDepth + 1);
  return;
}

/**
 * What a long option of a wrapper is, as getopt_long reads it: an exact name first, else any
 * option it is the start of. A start shared by several options is refused by the program (nothing
 * runs), so the worst of them is taken: code, then a value (the next word is no program).
 */
function longOptionKind(spec: WrapperSpec, name: string): 'code' | 'value' | 'flag' {
  const long = (options: readonly string[] | undefined) => (options ?? []).filter((option) => option.startsWith('--'));
  if (long(spec.codeOptions).includes(name)) return 'code';
  if (long(spec.valueOptions).includes(name)) return 'value';
  if (name.length <= 2) return 'flag';
  if (long(spec.codeOptions).some((option) => option.startsWith(name))) return 'code';
  if (long(spec.valueOptions).some((option) => option.startsWith(name))) return 'value';
  return 'flag';
}

function find(walk: CommandWalk, args: readonly (string | null)[], codeDepth: number, wrapDepth: number): void {
  for (let i = 0; i < args.length; i++) {
    const word = args[i];
    if (word === null || word === undefined) {
      walk.flag('runs-code', '`find` is given a word the analysis cannot read, which could be -exec or -delete');
      continue;
    }
    if (['-exec', '-execdir', '-ok', '-okdir'].includes(word)) {
      let end = i + 1;
      while (end < args.length && args[end] !== ';' && args[end] !== '+') end++;
      const inner = args.slice(i + 1, end);
      walk.flag('wrapper', `\`find ${word}\` runs ${inner[0] ? quoted(inner[0]) : 'a program'} on each file it finds`);
      if (inner.length > 0) walk.simpleCommand(inner, codeDepth, wrapDepth + 1);
      i = end;
    } else if (word === '-delete') {
      walk.flag('unseen-effect', '`find -delete` deletes every file it finds, which the command line does not name');
    } else if (/^-f?(print|printf|ls|fprint0)$/.test(word) && word.startsWith('-f')) {
      walk.flag('unseen-effect', `\`find ${word}\` writes to a file`);
    }
  }
}

function git(walk: CommandWalk, args: readonly (string | null)[]): void {
  const say = (why: string) => walk.flag('runs-code', `\`git\` ${why}`);
  let i = 0;
  while (i < args.length) {
    const word = args[i];
    if (word === null || word === undefined)
      return say('is given a word the policy cannot read, which could be an option that runs a command');
    if (word === '-c' || word.startsWith('--config-env') || word.startsWith('-c'))
      return say('is given configuration on its command line (-c), which can make it run any program');
    if (word === '--exec-path' || word.startsWith('--exec-path=')) return say('is told where its own programs are (--exec-path)');
    if (['-C', '--git-dir', '--work-tree', '--namespace'].includes(word)) i += 2;
    else if (word.startsWith('-')) i++;
    else break;
  }
  const sub = args[i];
  const rest = args.slice(i + 1);
  if (sub === 'submodule' && rest.includes('foreach')) return say('`submodule foreach` runs a command in each submodule');
  if (sub === 'bisect' && rest[0] === 'run') return say('`bisect run` runs a command');
  if (sub === 'rebase' && rest.some((arg) => arg === null || arg === '-x' || arg.startsWith('--exec') || /^-[a-zA-Z]*x/.test(arg)))
    return say('`rebase --exec` runs a command');
  if (sub === 'filter-branch' || sub === 'filter-repo') return say(`\`${sub}\` runs commands it is given`);
  if (sub === 'difftool' && rest.some((arg) => arg === null || arg === '-x' || arg.startsWith('--extcmd')))
    return say('`difftool -x` runs a command');
  if (
    sub === 'config' &&
    !rest.some((arg) => arg !== null && /^(--get|--get-all|--get-regexp|-l|--list|--get-urlmatch|get|list)$/.test(arg))
  ) {
    return say('`config` can set aliases, hooks or helpers that run commands later');
  }
}

/**
 * GNU sed runs commands with `e` and the `s///e` flag; sed scripts from files are unseen. Short
 * options bundle and take attached values (`-nes/x/rm y/e` is `-n -e 's/x/rm y/e'`), and long
 * ones may be cut short (`--e=…` is `--expression=…`).
 */
function sed(walk: CommandWalk, args: readonly (string | null)[]): Reading {
  const scripts: (string | null)[] = [];
  let explicit = false;
  let operandsOnly = false;
  const say = (why: string): Reading => {
    walk.flag('runs-code', `\`sed\` ${why}`);
    return undefined;
  };
  for (let i = 0; i < args.length; i++) {
    const word = args[i];
    if (word === null || word === undefined)
      return say('is given a word the analysis cannot read, which could be a script or an option (-e, -f)');
    if (operandsOnly || !word.startsWith('-') || word === '-') {
      if (!explicit && scripts.length === 0) scripts.push(word);
      continue;
    }
    if (word === '--') {
      operandsOnly = true;
      continue;
    }
    if (word.startsWith('--')) {
      const [option, attached] = word.includes('=')
        ? [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]
        : [word, undefined];
      if ('--expression'.startsWith(option) && option.length > 2) {
        explicit = true;
        scripts.push(attached ?? args[++i] ?? null);
      } else if ('--file'.startsWith(option) && option.length > 2) {
        return say('runs a script from a file (--file), which could use its `e` command');
      } else if ('--line-length'.startsWith(option) && option.length > 2 && attached === undefined) {
        i++;
      }
      continue;
    }
    for (let j = 1; j < word.length; j++) {
      const letter = word[j]!;
      if (letter === 'f') return say('runs a script from a file (-f), which could use its `e` command');
      if (letter === 'e' || letter === 'l') {
        const attached = word.slice(j + 1);
        const value = attached !== '' ? attached : (args[++i] ?? null);
        if (letter === 'e') {
          explicit = true;
          scripts.push(value);
        }
        break;
      }
      // `-i` takes the rest of the word as its suffix; `-s`, `-n`, `-E`, `-r`, `-u`, `-z` take nothing.
      if (letter === 'i') break;
    }
  }
  if (scripts.some((script) => script === null || sedRunsCommands(script)))
    return say('is given a script that can run commands (its `e` command or `s///e`)');
  return 'read';
}

export function baseName(program: string): string {
  const slash = program.lastIndexOf('/');
  return slash >= 0 ? program.slice(slash + 1) : program;
}

export function quoted(text: string): string {
  const short = text.length > 80 ? `${text.slice(0, 77)}…` : text;
  return `\`${short.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}\``;
}

/** How a command's words were read: `read` means the analysis read them itself and found nothing it cannot name. */
export type Reading = 'read' | undefined;

/** The first argument that is not an option, after options that take a value. */
export function skipOptions(args: readonly (string | null)[], valueOptions: readonly string[] = []): number {
  let i = 0;
  while (i < args.length) {
    const word = args[i];
    if (word === null || word === undefined) return i;
    if (word === '--') return i + 1;
    if (!word.startsWith('-') || word === '-') return i;
    if (valueOptions.includes(word)) i += 2;
    else i += 1;
  }
  return i;
}

export function selfDescribing(args: readonly (string | null)[]): boolean {
  return args.length > 0 && args.every((arg) => arg !== null && SELF_DESCRIBING.has(arg));
}
