import type { Node } from 'web-tree-sitter';

/*
 * The words of a command line as the shell will see them: quotes and escapes removed, ANSI-C
 * strings decoded, and where a word's value depends on the moment it runs, why.
 *
 * Which shell reads the line is not known here: the default sandbox image's /bin/sh is busybox ash,
 * an image built from a Dockerfile may have dash (Debian, Ubuntu) or bash, and `bash -c` is bash
 * anywhere. They agree on plain words and on '…', "…" and backslashes, but not on `$'…'`: so
 * each word is read as each of them reads it, and the walk (shell-analysis.ts) weighs every reading.
 */

/** The shells a line may run under, each as found in the images (bash 5.2, busybox 1.35 ash, dash 0.5.12). */
export const DIALECTS = ['bash', 'ash', 'dash'] as const;
export type Dialect = (typeof DIALECTS)[number];

/** A word's value when it is a plain literal (quotes and escapes removed), else what makes it not one. */
export type WordValue = { value: string } | { value: null; why: string };

/** A word as each shell reads it. */
export type WordReadings = Record<Dialect, WordValue>;

/** Per character: its value and whether it was quoted (a quoted `*` is no glob). */
export interface Piece {
  text: string;
  quoted: boolean;
}

/** Escapes bash and busybox ash both decode in `$'…'`; bash alone also knows \e, \E, \?, \cX, \u and \U. */
const COMMON_ESCAPES: Record<string, string> = {
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
};
const BASH_ESCAPES: Record<string, string> = { ...COMMON_ESCAPES, e: '\x1b', E: '\x1b', '?': '?' };

/**
 * Where a `$'…'` string that starts at `from` (on its `$`) ends in bash and busybox ash: after the
 * first `'` not escaped by a backslash. The parser's grammar gets this wrong after `\\` (it reads
 * `$'a\\'b; rm x; #'` as one string), so the walk checks the parser's extent against this one.
 */
export function ansiCEnd(text: string, from: number): number {
  for (let i = from + 2; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === "'") return i + 1;
  }
  return -1;
}

/**
 * The body of `$'…'` as one shell reads it. Measured on the shells themselves (test/unit/policy/
 * shell-words.test.ts runs them): a NUL (`\0`, `\x00`, `\u0000`, `\c@`) ends the rest of the string
 * in bash and is dropped in ash; ash keeps the escapes it does not know as written; an octal escape
 * over 0o377 wraps in bash and stops after two digits in ash; dash has no `$'…'` at all and reads
 * `$` followed by a single-quoted string. A `\u` escape beyond ASCII depends on bash's locale.
 */
export function decodeAnsiC(body: string, dialect: Dialect = 'bash'): WordValue {
  if (dialect === 'dash') {
    if (body.includes("'"))
      return { value: null, why: "a $'…' string holding a quote, where dash (which has no $'…') ends the string early" };
    return { value: `$${body}` };
  }
  const simple = dialect === 'bash' ? BASH_ESCAPES : COMMON_ESCAPES;
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const next = body[i + 1];
    if (next === undefined) return { value: null, why: "a $'…' string that ends in a lone backslash" };
    let code: number | null = null;
    let match: RegExpExecArray | null;
    if (simple[next] !== undefined) {
      out += simple[next];
      i++;
      continue;
    } else if ((match = /^[0-7]{1,3}/.exec(body.slice(i + 1)))) {
      code = parseInt(match[0], 8);
      if (code > 0xff) code = dialect === 'bash' ? code & 0xff : parseInt(match[0].slice(0, 2), 8);
      i += match[0].length;
    } else if ((match = /^x([0-9a-fA-F]{1,2})/.exec(body.slice(i + 1)))) {
      code = parseInt(match[1]!, 16);
      i += match[0].length;
    } else if (dialect === 'bash' && (match = /^(u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8})/.exec(body.slice(i + 1)))) {
      code = parseInt(match[0].slice(1), 16);
      // Beyond ASCII bash writes the character in the locale's encoding, or the escape itself in the C locale.
      if (code > 0x7f) return { value: null, why: `a $'…' escape ${match[0]} whose character depends on the shell's locale` };
      i += match[0].length;
    } else if (dialect === 'bash' && next === 'c') {
      const control = body[i + 2];
      if (control === undefined) return { value: null, why: "a $'…' string that ends in \\c" };
      code = control === '?' ? 0x7f : control.toUpperCase().charCodeAt(0) & 0x1f;
      // `\c\\` is one control character: the backslash after \c takes its escaping backslash along.
      i += control === '\\' && body[i + 3] === '\\' ? 3 : 2;
    } else {
      // An escape the shell does not know is kept as written.
      out += `\\${next}`;
      i++;
      continue;
    }
    if (code === 0) {
      if (dialect === 'bash') return { value: out };
      continue;
    }
    out += String.fromCharCode(code);
  }
  return { value: out };
}

/** The pieces of one word node as one shell reads it, or why it is not a plain literal. */
function piecesOf(node: Node, pieces: Piece[], dialect: Dialect): string | null {
  switch (node.type) {
    case 'word':
    case 'number': {
      if (node.namedChildCount > 0) return 'an expansion';
      const text = node.text;
      for (let i = 0; i < text.length; i++) {
        if (text[i] === '\\') {
          if (text[i + 1] === '\n') i++;
          else if (i + 1 < text.length) pieces.push({ text: text[++i]!, quoted: true });
        } else pieces.push({ text: text[i]!, quoted: false });
      }
      return null;
    }
    case 'variable_name':
      pieces.push({ text: node.text, quoted: false });
      return null;
    case 'variable_assignment': {
      // `export NAME=value`: the name, `=` (or `+=`) and the value's own reading.
      const name = node.childForFieldName('name');
      const value = node.childForFieldName('value');
      if (!name || name.type !== 'variable_name') return 'an assignment to an array element';
      pieces.push({ text: value ? node.text.slice(0, value.startIndex - node.startIndex) : node.text, quoted: false });
      return value ? piecesOf(value, pieces, dialect) : null;
    }
    case 'raw_string':
      pieces.push({ text: node.text.slice(1, -1), quoted: true });
      return null;
    case 'translated_string': {
      // bash reads `$"…"` as "…" translated by a message catalog; busybox ash and dash as `$` and "…".
      const string = node.namedChild(0);
      if (!string || string.type !== 'string') return describeExpansion(node);
      if (dialect !== 'bash') pieces.push({ text: '$', quoted: false });
      return piecesOf(string, pieces, dialect);
    }
    case 'ansi_c_string': {
      const decoded = decodeAnsiC(node.text.slice(2, -1), dialect);
      if (decoded.value === null) return decoded.why;
      if (dialect === 'dash') {
        // `$` then a single-quoted string: the `$` is a plain character, the rest is quoted.
        pieces.push({ text: '$', quoted: false }, { text: decoded.value.slice(1), quoted: true });
      } else pieces.push({ text: decoded.value, quoted: true });
      return null;
    }
    case 'string': {
      for (const child of node.namedChildren) if (child && child.type !== 'string_content') return describeExpansion(child);
      const body = node.text.slice(1, -1);
      pieces.push({ text: body.replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === '\n' ? '' : c)), quoted: true });
      return null;
    }
    case 'concatenation':
      for (const child of node.namedChildren) {
        if (!child) continue;
        const why = piecesOf(child, pieces, dialect);
        if (why) return why;
      }
      return null;
    default:
      return describeExpansion(node);
  }
}

export function describeExpansion(node: Node): string {
  switch (node.type) {
    case 'simple_expansion':
    case 'expansion':
      return 'a variable expansion';
    case 'command_substitution':
      return 'a command substitution';
    case 'process_substitution':
      return 'a process substitution';
    case 'arithmetic_expansion':
      return 'an arithmetic expansion';
    case 'brace_expression':
      return 'a brace expansion';
    case 'extglob_pattern':
      return 'a glob pattern';
    case 'translated_string':
      return 'a $"…" string, which the locale may translate';
    default:
      return `a ${node.type.replace(/_/g, ' ')}`;
  }
}

/** What the pieces of one word make: its literal value, or what keeps it from having one (unquoted globs, braces, a tilde). */
function valueOfPieces(pieces: readonly Piece[]): WordValue {
  // Only unquoted characters are pattern syntax: mask the quoted ones before looking.
  const active = pieces.map((piece) => (piece.quoted ? '_'.repeat(piece.text.length) : piece.text)).join('');
  if (/[*?]/.test(active) || /\[.*\]/s.test(active) || /[@!+]\(/.test(active)) return { value: null, why: 'a glob pattern' };
  if (/\{[^}]*(,|\.\.)[^}]*\}/s.test(active)) return { value: null, why: 'a brace expansion' };
  if (active.startsWith('~')) return { value: null, why: 'a tilde expansion' };
  return { value: pieces.map((piece) => piece.text).join('') };
}

/**
 * One shell word as each shell reads it. `nodes` are the parser's nodes of the word: usually one,
 * more where the grammar splits what the shell reads as one word (`export PA$'\0'TH=.`).
 */
export function wordReadings(...nodes: Node[]): WordReadings {
  const read = (dialect: Dialect): WordValue => {
    const pieces: Piece[] = [];
    for (const node of nodes) {
      const why = piecesOf(node, pieces, dialect);
      if (why) return { value: null, why };
    }
    return valueOfPieces(pieces);
  };
  const bash = read('bash');
  // Only `$'…'` is read differently; a word without one is read once.
  if (!nodes.some((node) => SHELL_DEPENDENT.has(node.type) || node.descendantsOfType([...SHELL_DEPENDENT]).length > 0))
    return { bash, ash: bash, dash: bash };
  return { bash, ash: read('ash'), dash: read('dash') };
}

/** The quoting forms the shells read differently. */
const SHELL_DEPENDENT = new Set(['ansi_c_string', 'translated_string']);

/** A word's value when every shell reads it alike, else why it has none (an expansion, or shells that disagree). */
export function agreedValue(readings: WordReadings): WordValue {
  const values = DIALECTS.map((dialect) => readings[dialect]);
  const unknown = values.find((reading) => reading.value === null);
  if (unknown) return unknown;
  if (new Set(values.map((reading) => reading.value)).size > 1)
    return { value: null, why: "a $'…' string that bash, busybox ash and dash read differently" };
  return values[0]!;
}

/** POSIX: inside backquotes a backslash quotes only `$`, `` ` `` and `\`; the rest is parsed again as code. */
export function unescapeBackquoted(text: string): string {
  return text.replace(/\\([$`\\])/g, '$1');
}
