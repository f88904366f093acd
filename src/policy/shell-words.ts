import type { Node } from 'web-tree-sitter';

/*
 * The words of a command line as the shell will see them: quotes and escapes removed, ANSI-C
 * strings decoded, and where a word's value depends on the moment it runs, why.
 */

/** A word's value when it is a plain literal (quotes and escapes removed), else what makes it not one. */
export type WordValue = { value: string } | { value: null; why: string };

/** Per character: its value and whether it was quoted (a quoted `*` is no glob). */
export interface Piece {
  text: string;
  quoted: boolean;
}

export function decodeAnsiC(body: string): string | null {
  const simple: Record<string, string> = {
    a: '\x07',
    b: '\b',
    e: '\x1b',
    E: '\x1b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
    v: '\v',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '?': '?',
  };
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const next = body[i + 1];
    if (next === undefined) return null;
    if (simple[next] !== undefined) {
      out += simple[next];
      i++;
      continue;
    }
    let match: RegExpExecArray | null;
    if ((match = /^[0-7]{1,3}/.exec(body.slice(i + 1)))) {
      out += String.fromCharCode(parseInt(match[0], 8) & 0xff);
      i += match[0].length;
    } else if ((match = /^x([0-9a-fA-F]{1,2})/.exec(body.slice(i + 1)))) {
      out += String.fromCharCode(parseInt(match[1]!, 16));
      i += match[0].length;
    } else if ((match = /^(u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8})/.exec(body.slice(i + 1)))) {
      const code = parseInt(match[0].slice(1), 16);
      if (code > 0x10ffff) return null;
      out += String.fromCodePoint(code);
      i += match[0].length;
    } else if (next === 'c' && body[i + 2] !== undefined) {
      out += String.fromCharCode(body.charCodeAt(i + 2) & 0x1f);
      i += 2;
    } else {
      // bash keeps an unknown escape as it is written
      out += `\\${next}`;
      i++;
    }
  }
  return out;
}

/** The pieces of one word node, or why it is not a plain literal. */
export function piecesOf(node: Node, pieces: Piece[]): string | null {
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
    case 'raw_string':
      pieces.push({ text: node.text.slice(1, -1), quoted: true });
      return null;
    case 'ansi_c_string': {
      const decoded = decodeAnsiC(node.text.slice(2, -1));
      if (decoded === null) return 'an ANSI-C quoted string it cannot decode';
      pieces.push({ text: decoded, quoted: true });
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
        const why = piecesOf(child, pieces);
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

/** A word node's literal value, or what keeps it from having one (expansions, unquoted globs, braces, a tilde). */
export function wordValue(node: Node): WordValue {
  const pieces: Piece[] = [];
  const why = piecesOf(node, pieces);
  if (why) return { value: null, why };
  // Only unquoted characters are pattern syntax: mask the quoted ones before looking.
  const active = pieces.map((piece) => (piece.quoted ? '_'.repeat(piece.text.length) : piece.text)).join('');
  if (/[*?]/.test(active) || /\[.*\]/s.test(active) || /[@!+]\(/.test(active)) return { value: null, why: 'a glob pattern' };
  if (/\{[^}]*(,|\.\.)[^}]*\}/s.test(active)) return { value: null, why: 'a brace expansion' };
  if (active.startsWith('~')) return { value: null, why: 'a tilde expansion' };
  return { value: pieces.map((piece) => piece.text).join('') };
}

/** POSIX: inside backquotes a backslash quotes only `$`, `` ` `` and `\`; the rest is parsed again as code. */
export function unescapeBackquoted(text: string): string {
  return text.replace(/\\([$`\\])/g, '$1');
}
