/*
 * Text that came from a step or an agent is data, never instructions to a terminal or a reader's
 * eye. Control characters (C0, DEL, C1: ESC sequences that move the cursor, erase lines, retitle
 * the terminal, CR that overwrites a line), format characters (bidi embeddings, overrides and
 * isolates, zero-width spaces and joiners, the BOM, tag characters), line and paragraph separators
 * and lone surrogates are shown as escapes instead of being written. One definition serves every
 * printer of the CLI and the window's markers, so they cannot disagree about what is hidden.
 */

/**
 * What is never written raw: \p{Cc} (C0, DEL, C1), \p{Cf} (bidi controls U+200E/F, U+202A–202E,
 * U+2066–2069, U+061C; zero-width U+200B–200D, U+2060–2064, U+FEFF; soft hyphen; tags), \p{Zl}/\p{Zp}
 * (U+2028/2029, which some terminals and editors break lines on), \p{Cs} (a lone surrogate), and
 * every Default_Ignorable_Code_Point: what Unicode says a renderer may draw as nothing, so a list of
 * our own would always miss some. That adds the variation selectors (U+FE00–FE0F, U+E0100–E01EF,
 * which can hide data in "plain" text), the whole tag block U+E0000–E0FFF (unassigned ones too), the
 * combining grapheme joiner U+034F, the Mongolian selectors, the Hangul fillers, U+2065, U+FFF0–FFF8.
 */
const HIDDEN_CHARACTER = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;

const NAMED_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const hex = (code: number, width: number) => code.toString(16).toUpperCase().padStart(width, '0');

/** How one hidden character is shown: `\x1b` for C0 and DEL, `\u009b` for C1, `<U+202E>` for the rest. */
export function escapeOf(character: string): string {
  const named = NAMED_ESCAPES[character];
  if (named) return named;
  const code = character.codePointAt(0)!;
  if (code < 0x20 || code === 0x7f) return `\\x${hex(code, 2).toLowerCase()}`;
  if (code >= 0x80 && code <= 0x9f) return `\\u00${hex(code, 2).toLowerCase()}`;
  return `<U+${hex(code, 4)}>`;
}

/**
 * One line of untrusted text (a purpose, a path, a command, a client name, a reason, an error
 * message) as it may reach a terminal: every hidden character escaped, newlines and tabs included,
 * so it stays one line and cannot pose as another.
 */
export function visibleLine(text: string): string {
  return String(text).replace(HIDDEN_CHARACTER, escapeOf);
}

/**
 * A block of untrusted text (a diff, a command's output, a log, a knowledge-base entry): newlines
 * and tabs keep their meaning, every other hidden character is escaped (a CR too: it would let a
 * line overwrite the one before it).
 */
export function visibleBlock(text: string): string {
  return String(text).replace(HIDDEN_CHARACTER, (character) =>
    character === '\n' || character === '\t' ? character : escapeOf(character),
  );
}

/**
 * Everything a CLI command writes, as the last guard: the same escapes as visibleBlock. The printers
 * escape each field already (a field cannot start a new line); this catches any they missed.
 */
export const visibleOutput = visibleBlock;

/** A JSON text whose strings may hold hidden characters, with those written as \u escapes: the same JSON value, safe to print. */
export function visibleJson(json: string): string {
  return json.replace(HIDDEN_CHARACTER, (character) => {
    if (character === '\n' || character === '\t') return character;
    let out = '';
    for (let index = 0; index < character.length; index++) out += `\\u${hex(character.charCodeAt(index), 4).toLowerCase()}`;
    return out;
  });
}

/** One run of text: plain, or one invisible character the window shows as a marker. */
export type TextPart = { text: string; hidden: false } | { text: string; hidden: true; codePoint: string };

/**
 * A text cut where it holds invisible or direction-changing characters (the ones visibleBlock
 * escapes), for the window to mark each one (e.g. ⟨U+202E⟩). Newlines and tabs are plain text.
 */
export function splitInvisible(text: string): TextPart[] {
  const parts: TextPart[] = [];
  let last = 0;
  for (const match of String(text).matchAll(HIDDEN_CHARACTER)) {
    if (match[0] === '\n' || match[0] === '\t') continue;
    if (match.index > last) parts.push({ text: text.slice(last, match.index), hidden: false });
    parts.push({ text: match[0], hidden: true, codePoint: `U+${hex(match[0].codePointAt(0)!, 4)}` });
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push({ text: text.slice(last), hidden: false });
  return parts;
}

/** Whether the window must mark something in this text (and say so in a warning line). */
export function hasInvisible(text: string): boolean {
  return splitInvisible(text).some((part) => part.hidden);
}

/**
 * Plain white space: what may be collapsed or trimmed from untrusted text. Not JavaScript's `\s` nor
 * String.prototype.trim, which also take U+FEFF, U+2028 and U+2029: a BOM collapsed to a space (or
 * trimmed away) is a hidden character the reader is never shown.
 */
const PLAIN_SPACE_RUN = /[\t\n\v\f\r \u00A0\u1680\u2000-\u200A\u202F\u205F\u3000]+/g;
const PLAIN_SPACE_ENDS =
  /^[\t\n\v\f\r \u00A0\u1680\u2000-\u200A\u202F\u205F\u3000]+|[\t\n\v\f\r \u00A0\u1680\u2000-\u200A\u202F\u205F\u3000]+$/g;

/** The text with plain white space trimmed from both ends; every hidden character stays, to be marked. */
export function trimPlainSpace(text: string): string {
  return text.replace(PLAIN_SPACE_ENDS, '');
}

/** The text on one line: each run of plain white space is one space, the ends trimmed; hidden characters stay. */
export function collapsePlainSpace(text: string): string {
  return trimPlainSpace(text.replace(PLAIN_SPACE_RUN, ' '));
}
