/*
 * A runCommand step given as argv runs without a shell, word by word. The person reads it as one
 * command line, so each word is quoted the way a shell would need it to arrive as exactly that
 * word: pasting the line into bash or zsh runs the same argv (and into any POSIX sh, unless a word
 * holds a control character, which only $'…' can show). No quoting library is installed, and the
 * rules are few enough to hold here with their tests.
 */

/** Characters no shell treats specially anywhere in a word. `=` and `~` are special only in places, handled below. */
const BARE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * Control characters (C0, DEL, C1) have no visible form inside single quotes: a newline would split
 * the line the person reads, an ESC could restyle it. A word holding one is written in ANSI-C
 * quoting ($'…', bash, zsh, ksh and POSIX.1-2024), where each is a visible escape that the shell
 * turns back into the same bytes.
 */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/u;

const NAMED_CONTROL: Record<string, string> = { '\n': '\\n', '\t': '\\t', '\r': '\\r' };

function ansiCQuoted(word: string): string {
  let out = '';
  for (const character of word) {
    if (character === '\\') out += '\\\\';
    else if (character === "'") out += "\\'";
    else if (NAMED_CONTROL[character]) out += NAMED_CONTROL[character];
    else if (CONTROL_CHARACTER.test(character)) {
      // The UTF-8 bytes as \xHH: exact in every locale (\u would depend on the shell's locale and version).
      for (const byte of new TextEncoder().encode(character)) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    } else out += character;
  }
  return `$'${out}'`;
}

/** Words a shell reads as its own syntax when they come first: `time ls` would time, not run a program named time. */
const RESERVED_FIRST_WORDS = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'case',
  'esac',
  'for',
  'select',
  'while',
  'until',
  'do',
  'done',
  'in',
  'function',
  'time',
  'coproc',
]);

/** Whether a bare first word would be read as something other than a program name. */
function misreadAsProgram(word: string): boolean {
  // NAME=value is an assignment. (bash reads a first word %… as a job whether quoted or not, so quoting cannot help there.)
  return word.includes('=') || RESERVED_FIRST_WORDS.has(word);
}

/**
 * One argv word as a shell would need it to pass it unchanged. `first`: the word is the program,
 * where an assignment or a reserved word would be read as shell syntax, so those are quoted.
 */
export function quoteShellWord(word: string, { first = false }: { first?: boolean } = {}): string {
  if (CONTROL_CHARACTER.test(word)) return ansiCQuoted(word);
  if (BARE_WORD.test(word) && !(first && misreadAsProgram(word))) return word;
  // Inside single quotes nothing is special but the quote itself, which is closed, escaped and reopened.
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** An argv as the one command line a shell would need to run exactly it. */
export function quoteArgv(argv: readonly string[]): string {
  return argv.map((word, index) => quoteShellWord(word, { first: index === 0 })).join(' ');
}

/** A runCommand step's command line: its `command` as the shell will get it, or its argv quoted. */
export function commandLineOf(args: { argv?: readonly string[]; command?: string }): string {
  return args.command ?? quoteArgv(args.argv ?? []);
}
