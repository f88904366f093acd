/*
 * A minimal token colouring for the code a runCode step will run (JavaScript or Python). No
 * highlighting library is installed, and the window needs little: comments, strings, numbers,
 * keywords. A wrong guess only costs a colour, never a character: the tokens joined are always
 * exactly the code (a test holds that for any input), and they are rendered as React text, never
 * as HTML.
 */

export type TokenKind = 'plain' | 'keyword' | 'literal' | 'string' | 'comment' | 'number';

export interface CodeToken {
  kind: TokenKind;
  text: string;
}

export type CodeLanguage = 'javascript' | 'python';

const JS_KEYWORDS = new Set(
  'async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch throw try typeof var void while with yield get set'.split(' '),
);
const JS_LITERALS = new Set(['true', 'false', 'null', 'undefined', 'NaN', 'Infinity', 'this']);
const PY_KEYWORDS = new Set(
  'and as assert async await break class continue def del elif else except finally for from global if import in is lambda match case nonlocal not or pass raise return try while with yield print self'.split(' '),
);
const PY_LITERALS = new Set(['True', 'False', 'None']);

interface Grammar {
  keywords: Set<string>;
  literals: Set<string>;
  /** Each pattern is sticky (`y`): it must match at the current position or not at all. */
  rules: { kind: TokenKind; pattern: RegExp }[];
}

// Strings stop at an unescaped newline: an unclosed quote colours one line, not the rest of the file.
const QUOTED = String.raw`'(?:[^'\\\n]|\\[\s\S])*'?|"(?:[^"\\\n]|\\[\s\S])*"?`;
const NUMBER = String.raw`(?:0[xX][\da-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?)[njJ]?`;

const GRAMMARS: Record<CodeLanguage, Grammar> = {
  javascript: {
    keywords: JS_KEYWORDS,
    literals: JS_LITERALS,
    rules: [
      { kind: 'comment', pattern: /\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)/y },
      // A template literal is coloured as one string, ${…} included: nesting is beyond a minimal colouring.
      { kind: 'string', pattern: new RegExp(`${QUOTED}|\`(?:[^\`\\\\]|\\\\[\\s\\S])*\`?`, 'y') },
      { kind: 'number', pattern: new RegExp(NUMBER, 'y') },
    ],
  },
  python: {
    keywords: PY_KEYWORDS,
    literals: PY_LITERALS,
    rules: [
      { kind: 'comment', pattern: /#[^\n]*/y },
      { kind: 'string', pattern: new RegExp(String.raw`(?:[rRbBuUfF]{1,2})?(?:'''[\s\S]*?(?:'''|$)|"""[\s\S]*?(?:"""|$)|${QUOTED})`, 'y') },
      { kind: 'number', pattern: new RegExp(NUMBER, 'y') },
    ],
  },
};

const IDENTIFIER = /[\p{L}\p{Nl}_$][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}$]*/uy;
/** Anything else up to the next character that may start a token. */
const OTHER = /[\s\S][^A-Za-z_$\p{L}0-9'"`#/.]*/uy;

function matchAt(pattern: RegExp, code: string, at: number): string | null {
  pattern.lastIndex = at;
  const match = pattern.exec(code);
  return match && match[0].length > 0 ? match[0] : null;
}

/** The code cut into coloured runs; joined, they are the code, character for character. */
export function tokenizeCode(code: string, language: CodeLanguage): CodeToken[] {
  const grammar = GRAMMARS[language];
  const tokens: CodeToken[] = [];
  const push = (kind: TokenKind, text: string) => {
    const last = tokens.at(-1);
    if (last && last.kind === kind && kind === 'plain') last.text += text;
    else tokens.push({ kind, text });
  };
  let at = 0;
  outer: while (at < code.length) {
    for (const rule of grammar.rules) {
      const text = matchAt(rule.pattern, code, at);
      if (text !== null) {
        push(rule.kind, text);
        at += text.length;
        continue outer;
      }
    }
    const word = matchAt(IDENTIFIER, code, at);
    if (word !== null) {
      push(grammar.keywords.has(word) ? 'keyword' : grammar.literals.has(word) ? 'literal' : 'plain', word);
      at += word.length;
      continue;
    }
    const other = matchAt(OTHER, code, at)!;
    push('plain', other);
    at += other.length;
  }
  return tokens;
}

/** The tokens cut at newlines into lines (without the newline characters), for a numbered view. */
export function tokenLines(tokens: readonly CodeToken[]): CodeToken[][] {
  const lines: CodeToken[][] = [[]];
  for (const token of tokens) {
    const pieces = token.text.split('\n');
    pieces.forEach((piece, index) => {
      if (index > 0) lines.push([]);
      if (piece !== '') lines.at(-1)!.push({ kind: token.kind, text: piece });
    });
  }
  // Code that ends with a newline has no further line to show.
  if (lines.length > 1 && lines.at(-1)!.length === 0) lines.pop();
  return lines;
}
