/**
 * A policy reason a person can act on says what could happen first ("This command could run any
 * program: it runs code that is not shown here.") and how the analysis knows after it ("In detail:
 * `sh` runs code from its input; …"). Agents read the whole text in that order; the window folds
 * the detail away and the CLI prints it on a line of its own.
 */

const DETAIL_MARK = ' In detail: ';

/**
 * The headlines whose detail may be folded. Only a reason that starts with one of these was built
 * by reasonWithDetail, and its headline holds no text of the step's: a path or command of the
 * agent's that happened to contain the mark must never hide the rest of its own reason.
 */
const HEADLINES_WITH_DETAIL = ['This command could run any program:'] as const;

export function reasonWithDetail(headline: string, detail: string): string {
  return `${headline}${DETAIL_MARK}${detail}`;
}

/** The consequence and, when the reason has one, the detail after it. */
export function splitReason(reason: string): { headline: string; detail: string | null } {
  const at = reason.indexOf(DETAIL_MARK);
  if (at === -1 || !HEADLINES_WITH_DETAIL.some((headline) => reason.startsWith(headline))) return { headline: reason, detail: null };
  return { headline: reason.slice(0, at), detail: reason.slice(at + DETAIL_MARK.length) };
}
