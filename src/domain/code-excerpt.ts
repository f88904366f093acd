/*
 * The first lines of a step's code, as a list row shows them (the queue's runCode rows): what runs
 * is shown where a person decides, and a row has room for two short lines. Browser-safe.
 */

export interface CodeExcerpt {
  /** The first lines, each cut to its first characters (a cut line ends with "…"). */
  lines: string[];
  /** How many lines follow those. */
  moreLines: number;
}

export const EXCERPT_LINES = 2;
export const EXCERPT_LINE_CHARACTERS = 90;

export function codeExcerptOf(code: string, maxLines = EXCERPT_LINES, maxCharacters = EXCERPT_LINE_CHARACTERS): CodeExcerpt {
  const all = code.replace(/\n+$/, '').split('\n');
  // Cut by code points, so a cut never leaves half of a surrogate pair to be marked as a hidden character.
  const lines = all.slice(0, maxLines).map((line) => {
    if (line.length <= maxCharacters) return line;
    const points = [...line];
    return points.length > maxCharacters ? `${points.slice(0, maxCharacters).join('')}…` : line;
  });
  return { lines, moreLines: all.length - lines.length };
}

/** How much of the code a listing reads to make the excerpt (the rest is only counted). */
export const EXCERPT_HEAD_CHARACTERS = 4 * EXCERPT_LINES * (EXCERPT_LINE_CHARACTERS + 1);

/**
 * The excerpt from the code's first EXCERPT_HEAD_CHARACTERS and its count of lines: what
 * codeExcerptOf(code) says of the whole, except that a line the head ends inside is shown cut.
 */
export function excerptOfHead(head: string, totalLines: number): CodeExcerpt {
  const { lines } = codeExcerptOf(head);
  const cutInside = head.length >= EXCERPT_HEAD_CHARACTERS && head.replace(/\n+$/, '').split('\n').length <= lines.length;
  const last = lines.length - 1;
  if (cutInside && last >= 0 && !lines[last]!.endsWith('…')) lines[last] = `${lines[last]}…`;
  return { lines, moreLines: Math.max(0, totalLines - lines.length) };
}
