/**
 * A shell-word splitter made for one question: which programs could this command line start?
 * It follows POSIX sh quoting (single quotes, double quotes, backslash) and splits at every
 * control operator (`|`, `||`, `&&`, `;`, `&`, newline, parentheses), and it looks inside command
 * substitutions (`$(…)`, backticks) and `sh -c '…'`, so `ls | rm -rf /` or `echo $(curl …)` cannot
 * pass as `ls` or `echo`. It never runs anything and never expands variables.
 */

export type ParsedCommandLine = { ok: true; commands: string[][] } | { ok: false; reason: string };

const OPERATOR_CHARS = new Set(['|', '&', ';', '\n', '(', ')']);

/** Programs that run their arguments as another program: the real program is further along. */
const WRAPPERS = new Set(['env', 'exec', 'command', 'builtin', 'nice', 'nohup', 'time', 'timeout', 'sudo', 'doas', 'xargs', 'stdbuf', 'ionice', 'chroot', 'setsid', 'busybox', 'unbuffer', 'watch', 'strace', 'su']);
/** Wrapper options that take the next word as their value (so that word is not the program). */
const WRAPPER_VALUE_OPTIONS: Record<string, readonly string[]> = {
  sudo: ['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-T'],
  doas: ['-u', '-C'],
  su: ['-s', '-g', '-G'],
  env: ['-u', '-C', '--unset', '--chdir'],
  nice: ['-n', '--adjustment'],
  timeout: ['-s', '-k', '--signal', '--kill-after'],
  ionice: ['-c', '-n', '-p', '-P', '-u'],
  stdbuf: ['-i', '-o', '-e'],
  xargs: ['-I', '-n', '-P', '-d', '-E', '-L', '-s', '-a', '-i', '-e', '-l'],
  watch: ['-n', '-d', '--interval'],
  strace: ['-e', '-o', '-p', '-s', '-u', '-E'],
  chroot: ['--userspec', '--groups'],
};
/** Wrapper options whose value is itself a command line. */
const WRAPPER_SCRIPT_OPTIONS: Record<string, readonly string[]> = { su: ['-c', '--command'], env: ['-S', '--split-string'] };
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'fish']);

const MAX_DEPTH = 8;
/** One shell word as a redirection target: unquoted, quoted or escaped runs up to the next blank or operator. */
const REDIRECT_TARGET = /^(?:[^\s|&;()<>'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*"|\$\((?:[^()]|\([^()]*\))*\))*/s;

interface SplitState {
  commands: string[][];
  words: string[];
  word: string;
  inWord: boolean;
}

function endWord(state: SplitState): void {
  if (state.inWord) state.words.push(state.word);
  state.word = '';
  state.inWord = false;
}

function endCommand(state: SplitState): void {
  endWord(state);
  if (state.words.length > 0) state.commands.push(state.words);
  state.words = [];
}

/** Index just past the `)` that closes a `$(` opened before `start`, honouring quotes and nesting. */
function closingParen(text: string, start: number): number {
  let depth = 1;
  let i = start;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\\') i += 2;
    else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) return -1;
      i = end + 1;
    } else if (c === '"') {
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      if (i >= text.length) return -1;
      i++;
    } else {
      if (c === '(') depth++;
      if (c === ')' && --depth === 0) return i + 1;
      i++;
    }
  }
  return -1;
}

function splitLevel(text: string, depth: number, nested: string[][]): ParsedCommandLine {
  if (depth > MAX_DEPTH) return { ok: false, reason: 'command substitutions are nested too deeply to check' };
  const state: SplitState = { commands: [], words: [], word: '', inWord: false };
  const substitution = (start: number, end: number): string | null => {
    const inner = splitLevel(text.slice(start, end), depth + 1, nested);
    if (!inner.ok) return inner.reason;
    nested.push(...inner.commands);
    return null;
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\\') {
      // A backslash-newline joins lines; any other escaped character is literal.
      if (text[i + 1] !== '\n') {
        state.word += text[i + 1] ?? '';
        state.inWord = true;
      }
      i += 2;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) return { ok: false, reason: 'a single quote is never closed' };
      state.word += text.slice(i + 1, end);
      state.inWord = true;
      i = end + 1;
    } else if (c === '"') {
      state.inWord = true;
      i++;
      for (;;) {
        if (i >= text.length) return { ok: false, reason: 'a double quote is never closed' };
        const d = text[i]!;
        if (d === '"') break;
        if (d === '\\' && ['"', '\\', '$', '`', '\n'].includes(text[i + 1] ?? '')) {
          if (text[i + 1] !== '\n') state.word += text[i + 1];
          i += 2;
        } else if (d === '$' && text[i + 1] === '(') {
          const end = closingParen(text, i + 2);
          if (end < 0) return { ok: false, reason: 'a "$(" is never closed' };
          const failure = substitution(i + 2, end - 1);
          if (failure) return { ok: false, reason: failure };
          state.word += text.slice(i, end);
          i = end;
        } else if (d === '`') {
          const end = text.indexOf('`', i + 1);
          if (end < 0) return { ok: false, reason: 'a backtick is never closed' };
          const failure = substitution(i + 1, end);
          if (failure) return { ok: false, reason: failure };
          state.word += text.slice(i, end + 1);
          i = end + 1;
        } else {
          state.word += d;
          i++;
        }
      }
      i++;
    } else if (c === '$' && text[i + 1] === '(') {
      const end = closingParen(text, i + 2);
      if (end < 0) return { ok: false, reason: 'a "$(" is never closed' };
      const failure = substitution(i + 2, end - 1);
      if (failure) return { ok: false, reason: failure };
      state.word += text.slice(i, end);
      state.inWord = true;
      i = end;
    } else if (c === '`') {
      const end = text.indexOf('`', i + 1);
      if (end < 0) return { ok: false, reason: 'a backtick is never closed' };
      const failure = substitution(i + 1, end);
      if (failure) return { ok: false, reason: failure };
      state.word += text.slice(i, end + 1);
      state.inWord = true;
      i = end + 1;
    } else if (c === '#' && !state.inWord) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end;
    } else if (OPERATOR_CHARS.has(c)) {
      endCommand(state);
      i++;
    } else if (c === ' ' || c === '\t') {
      endWord(state);
      i++;
    } else if (c === '<' || c === '>') {
      // A redirection's target is a file, not a program: drop the operator, its fd number and the word after it.
      if (state.inWord && /^\d+$/.test(state.word)) {
        state.word = '';
        state.inWord = false;
      } else endWord(state);
      i++;
      while (text[i] === '>' || text[i] === '<' || text[i] === '&' || text[i] === '|') i++;
      while (text[i] === ' ' || text[i] === '\t') i++;
      const targetText = REDIRECT_TARGET.exec(text.slice(i))?.[0] ?? '';
      const target = splitLevel(targetText, depth + 1, nested);
      if (!target.ok) return target;
      i += targetText.length;
    } else {
      state.word += c;
      state.inWord = true;
      i++;
    }
  }
  endCommand(state);
  return { ok: true, commands: state.commands };
}

/** Splits a command line into simple commands (each a list of words), including nested ones. */
export function splitCommandLine(text: string): ParsedCommandLine {
  const nested: string[][] = [];
  const top = splitLevel(text, 0, nested);
  if (!top.ok) return top;
  return { ok: true, commands: [...top.commands, ...nested] };
}

function baseName(word: string): string {
  const slash = word.lastIndexOf('/');
  return slash >= 0 ? word.slice(slash + 1) : word;
}

/**
 * The programs one simple command can start: its first word after variable assignments, and
 * whatever a wrapper (`env`, `xargs`, `sudo` …) or a shell's `-c` script would start in turn.
 */
export function programsOf(words: readonly string[], depth = 0): ParsedCommandLine & { programs?: string[] } {
  const programs: string[] = [];
  let index = 0;
  while (index < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[index]!)) index++;
  if (index >= words.length) return { ok: true, commands: [], programs };
  const program = baseName(words[index]!);
  programs.push(program);
  const rest = words.slice(index + 1);
  if (depth > MAX_DEPTH) return { ok: false, reason: 'wrappers are nested too deeply to check' };
  if (SHELLS.has(program)) {
    const dashC = rest.findIndex((word) => /^-[a-z]*c[a-z]*$/.test(word));
    if (dashC >= 0 && rest[dashC + 1] !== undefined) {
      const inner = splitCommandLine(rest[dashC + 1]!);
      if (!inner.ok) return inner;
      for (const command of inner.commands) {
        const more = programsOf(command, depth + 1);
        if (!more.ok) return more;
        programs.push(...more.programs!);
      }
    }
  } else if (WRAPPERS.has(program)) {
    // Skip the wrapper's own options (and their values, `timeout`'s duration, `env`'s assignments) to the program it starts.
    const valueOptions = WRAPPER_VALUE_OPTIONS[program] ?? [];
    const scriptOptions = WRAPPER_SCRIPT_OPTIONS[program] ?? [];
    let next = 0;
    while (next < rest.length) {
      const word = rest[next]!;
      if (scriptOptions.includes(word) && rest[next + 1] !== undefined) {
        const inner = programsInCommand(rest[next + 1]!);
        if (!inner.ok) return inner;
        programs.push(...inner.programs);
        next += 2;
      } else if (valueOptions.includes(word)) next += 2;
      else if (word.startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(word) || (program === 'timeout' && /^\d+(\.\d+)?[smhd]?$/.test(word))) next++;
      else break;
    }
    // su's first plain word is a user name; only its -c script runs a program.
    if (next < rest.length && program !== 'su') {
      const more = programsOf(rest.slice(next), depth + 1);
      if (!more.ok) return more;
      programs.push(...more.programs!);
    }
  }
  return { ok: true, commands: [], programs };
}

/** Every program a command line (a string for `sh -c`, or an argv) could start, in order. */
export function programsInCommand(command: string | readonly string[]): { ok: true; programs: string[] } | { ok: false; reason: string } {
  const commands = typeof command === 'string' ? splitCommandLine(command) : { ok: true as const, commands: [command as string[]] };
  if (!commands.ok) return commands;
  const programs: string[] = [];
  for (const words of commands.commands) {
    const found = programsOf(words);
    if (!found.ok) return found;
    programs.push(...found.programs!);
  }
  return { ok: true, programs };
}
