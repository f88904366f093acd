/*
 * The code as repetition sees it, without zod or node:crypto, so the window can find a waiting step's
 * repeats (renderer/repetition.ts) by the same rule the host counts them (src/executor/rooms/skills.ts).
 */

/**
 * The code as repetition sees it: comments dropped and runs of white space made one, so the same
 * transform written again with other spacing or comments counts as the same. Strings are kept as
 * they are (a different literal is different code).
 */
export function normaliseCode(code: string): string {
  let out = '';
  let i = 0;
  let pendingSpace = false;
  while (i < code.length) {
    const ch = code[i]!;
    const next = code[i + 1];
    if (ch === '/' && next === '/') {
      while (i < code.length && code[i] !== '\n') i += 1;
      pendingSpace = true;
      continue;
    }
    if (ch === '/' && next === '*') {
      const end = code.indexOf('*/', i + 2);
      i = end === -1 ? code.length : end + 2;
      pendingSpace = true;
      continue;
    }
    if (ch === '"' || ch === "'" || ch === '`') {
      let j = i + 1;
      while (j < code.length && code[j] !== ch) j += code[j] === '\\' ? 2 : 1;
      if (pendingSpace && out) out += ' ';
      pendingSpace = false;
      out += code.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (/\s/.test(ch)) {
      pendingSpace = true;
      i += 1;
      continue;
    }
    // A space matters only between two word characters ("return x"); elsewhere it is layout.
    if (pendingSpace && out && /[\w$]/.test(out[out.length - 1]!) && /[\w$]/.test(ch)) out += ' ';
    pendingSpace = false;
    out += ch;
    i += 1;
  }
  return out;
}
