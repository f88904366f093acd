/*
 * Reasons people and agents type (a reject reason, an error message, the policy's reasons) are
 * joined into sentences of ours: "Step s1 earlier in this plan was rejected: <reason>." A reason
 * may end with its own stop, a question or exclamation mark, a closing quote, a colon, trailing
 * spaces or line breaks, or be empty. Joined naively that reads "no thanks..", "why?.", "….: " or
 * "rejected: ." — these say each such reason once, as the end of one sentence.
 */

/** A sentence already ends here: a stop, ?, !, … (or a full-width one), maybe inside closing quotes or brackets. */
const ENDED = /[.!?…。！？][\p{Pf}\p{Pe}"']*$/u;

/** Dangling punctuation a sentence must not end on before our own stop: "see:" → "see." */
const DANGLING = /[\s,;:\u2013\u2014-]+$/u;

/** One line: every run of white space, line breaks included, as one space; trimmed. */
export function flatText(text: string): string {
  return text.replace(/\s+/gu, ' ').trim();
}

/** `text` as one whole sentence with exactly one final stop (its own ! ? … kept); '' when there are no words in it. */
export function asSentence(text: string): string {
  const flat = flatText(text).replace(DANGLING, '');
  // Punctuation alone ("." or "?!") says nothing: "Rejected." rather than "Rejected: .".
  if (!/[^\p{P}\s]/u.test(flat)) return '';
  return ENDED.test(flat) ? flat : `${flat}.`;
}

/** "lead: reason." with the reason's own stop kept, or "lead." when there is no reason to give. */
export function withReason(lead: string, reason: string | null | undefined): string {
  const said = asSentence(reason ?? '');
  return said ? `${lead}: ${said}` : `${lead}.`;
}
