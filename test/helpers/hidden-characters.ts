/**
 * The characters a reader could be fooled by that the window and the CLI must show as markers: zero-width
 * and format characters, bidi controls, the soft hyphen, tag characters (assigned and not), variation
 * selectors (both blocks), the combining grapheme joiner, Mongolian selectors, Hangul fillers, line and
 * paragraph separators. Tests put each in every field an agent or a result can fill.
 */
export const HIDDEN_GRID = [
  '\u200b',
  '\u200c',
  '\u200d',
  '\u200e',
  '\u200f',
  '\u2060',
  '\u2061',
  '\u2062',
  '\u2063',
  '\u2064',
  '\u2065',
  '\ufeff',
  '\u00ad',
  '\u034f',
  '\u061c',
  '\u180b',
  '\u180e',
  '\u115f',
  '\u3164',
  '\u202a',
  '\u202b',
  '\u202c',
  '\u202d',
  '\u202e',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u{e0000}',
  '\u{e0001}',
  '\u{e0020}',
  '\u{e0041}',
  '\u{e007f}',
  '\ufe00',
  '\ufe0f',
  '\u{e0100}',
  '\u{e01ef}',
  '\u2028',
  '\u2029',
  '\ufff0',
];

/** "U+FEFF", "U+E0041": the name a marker shows. */
export const codePointOf = (character: string): string => `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
