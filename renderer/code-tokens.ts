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
  'async await break case catch class const continue debugger default delete do else export extends finally for from function if import in instanceof let new of return static super switch throw try typeof var void while with yield get set'.split(
    ' ',
  ),
);
const JS_LITERALS = new Set(['true', 'false', 'null', 'undefined', 'NaN', 'Infinity', 'this']);
const PY_KEYWORDS = new Set(
  'and as assert async await break class continue def del elif else except finally for from global if import in is lambda match case nonlocal not or pass raise return try while with yield'.split(
    ' ',
  ),
);
const PY_LITERALS = new Set(['True', 'False', 'None']);

interface Grammar {
  keywords: Set<string>;
  literals: Set<string>;
  /** Each pattern is sticky (`y`): it must match at the current position or not at all. */
  rules: { kind: TokenKind; pattern: RegExp }[];
}

/*
 * Colour must not lie about code: text coloured as a comment or a string is read past. So a comment
 * ends where the language ends it (JavaScript also at CR, U+2028 and U+2029, which the window marks
 * but which end a `//` comment all the same), a quoted string stops at a line break (an unclosed
 * quote colours one line, not the rest of the file), a JavaScript regex literal is one token (its
 * `//` or quotes start nothing), and code inside a template's ${…} is coloured as code.
 */
const quoted = (breaks: string) => String.raw`'(?:[^'\\${breaks}]|\\[\s\S])*'?|"(?:[^"\\${breaks}]|\\[\s\S])*"?`;
const NUMBER = String.raw`(?:0[xX][\da-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?)[njJ]?`;
const JS_BREAKS = String.raw`\n\r\u2028\u2029`;
const PY_TRIPLE = String.raw`'''[\s\S]*?(?:'''|$)|"""[\s\S]*?(?:"""|$)`;

const GRAMMARS: Record<CodeLanguage, Grammar> = {
  javascript: {
    keywords: JS_KEYWORDS,
    literals: JS_LITERALS,
    rules: [
      { kind: 'comment', pattern: new RegExp(String.raw`\/\/[^${JS_BREAKS}]*|\/\*[\s\S]*?(?:\*\/|$)`, 'y') },
      { kind: 'string', pattern: new RegExp(quoted(String.raw`\n\r`), 'y') },
      { kind: 'number', pattern: new RegExp(NUMBER, 'y') },
    ],
  },
  python: {
    keywords: PY_KEYWORDS,
    literals: PY_LITERALS,
    rules: [
      { kind: 'comment', pattern: /#[^\n\r]*/y },
      { kind: 'string', pattern: new RegExp(String.raw`(?:[rRbBuUfF]{1,2})?(?:${PY_TRIPLE}|${quoted(String.raw`\n\r`)})`, 'y') },
      { kind: 'number', pattern: new RegExp(NUMBER, 'y') },
    ],
  },
};

const IDENTIFIER = /[\p{L}\p{Nl}_$][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}$]*/uy;
/** Anything else up to the next character that may start a token (braces and backticks one at a time: they open and close templates). */
const OTHER = /[\s\S][^A-Za-z_$\p{L}0-9'"`#/.{}]*/uy;
/** A regex literal: a class may hold "/", an escape any character; it ends at its closing "/" and flags, or at the line's end. */
const REGEX_LITERAL = new RegExp(
  String.raw`\/(?:[^\\/\[${JS_BREAKS}]|\\[^${JS_BREAKS}]|\[(?:[^\]\\${JS_BREAKS}]|\\[^${JS_BREAKS}])*\]?)*\/?[A-Za-z]*`,
  'y',
);
/** The text of a template from after its "`" or "}" up to and including its end: "`", "${", or the end of the code. */
const TEMPLATE_PART = /(?:[^`\\$]|\\[\s\S]|\$(?!\{))*(?:`|\$\{|$)/y;
/** After these words a "/" starts a regex, not a division. */
const BEFORE_REGEX_WORDS = new Set([
  'return',
  'typeof',
  'instanceof',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'case',
  'do',
  'else',
  'yield',
  'await',
]);

function matchAt(pattern: RegExp, code: string, at: number): string | null {
  pattern.lastIndex = at;
  const match = pattern.exec(code);
  return match && match[0].length > 0 ? match[0] : null;
}

/** The code cut into coloured runs; joined, they are the code, character for character. */
export function tokenizeCode(code: string, language: CodeLanguage): CodeToken[] {
  const grammar = GRAMMARS[language];
  const javascript = language === 'javascript';
  const tokens: CodeToken[] = [];
  /** The last token that was not blank or a comment: whether a "/" divides or starts a regex depends on it. */
  let significant: CodeToken | null = null;
  const push = (kind: TokenKind, text: string) => {
    if (kind !== 'comment' && text.trim() !== '') significant = { kind, text: text.trimEnd() };
    const last = tokens.at(-1);
    if (last && last.kind === kind && kind === 'plain') last.text += text;
    else tokens.push({ kind, text });
  };
  const regexMayStart = (): boolean => {
    const previous = significant as CodeToken | null;
    if (!previous) return true;
    if (previous.kind === 'keyword') return BEFORE_REGEX_WORDS.has(previous.text);
    if (previous.kind !== 'plain') return false;
    return !/[\p{L}\p{N}_$)\]}]/u.test(previous.text.at(-1)!);
  };
  /** Open ${…} substitutions of templates, innermost last: how many "{" inside each are still open. */
  const substitutions: number[] = [];
  const templateFrom = (opener: string, from: number): string => {
    const text = opener + (matchAt(TEMPLATE_PART, code, from) ?? '');
    if (text.endsWith('${')) substitutions.push(0);
    return text;
  };
  let at = 0;
  outer: while (at < code.length) {
    const character = code[at]!;
    if (javascript) {
      let text: string | null = null;
      if (character === '`') text = templateFrom('`', at + 1);
      else if (character === '}' && substitutions.at(-1) === 0) {
        // This brace closes a ${…}: the template goes on.
        substitutions.pop();
        text = templateFrom('}', at + 1);
      } else if (character === '/' && code[at + 1] !== '/' && code[at + 1] !== '*' && regexMayStart())
        text = matchAt(REGEX_LITERAL, code, at);
      if (text !== null) {
        push('string', text);
        at += text.length;
        continue;
      }
      if (substitutions.length && (character === '{' || character === '}'))
        substitutions[substitutions.length - 1]! += character === '{' ? 1 : -1;
    }
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
