import type { StepStatus } from './state-machine.js';

/*
 * Where a step stands, in words: what the CLI prints where a person reads it (`steps list`,
 * `steps show`, `revert`, `approve`, `edit`, error messages). The window's STATUS_LABEL and
 * STATUS_SENTENCE (renderer/step-text.ts) are these tables, so a step reads alike in both. `--json` keeps the raw state names.
 */

/** A status as a label: a column of `steps list`, the "Status" line of `steps show`. */
export const STATUS_WORDS: Record<StepStatus, string> = {
  proposed: 'Proposed',
  evaluated: 'Evaluated',
  awaiting_consent: 'Waiting for you',
  approved: 'Approved',
  rejected: 'Rejected',
  running: 'Running',
  executed: 'Executed',
  failed: 'Failed',
  interrupted: 'Interrupted',
  reverted: 'Reverted',
  denied: 'Denied by policy',
  expired: 'Expired',
  cancelled: 'Cancelled',
};

/** A status as the end of a sentence about the step: "Step s1 … waits for your decision". */
export const STATUS_SENTENCE_WORDS: Record<StepStatus, string> = {
  proposed: 'is being prepared',
  evaluated: 'is being prepared (its preview is under way)',
  awaiting_consent: 'waits for your decision',
  approved: 'is approved and waits its turn',
  rejected: 'was rejected',
  running: 'is running',
  executed: 'ran',
  failed: 'failed',
  interrupted: 'was interrupted before it finished',
  reverted: 'was reverted',
  denied: 'was denied by the policy',
  expired: 'expired before anyone decided',
  cancelled: 'was cancelled',
};

/** The label of a status, or the name itself for one this build does not know (a newer host). */
export function statusWords(status: string): string {
  return Object.hasOwn(STATUS_WORDS, status) ? STATUS_WORDS[status as StepStatus] : status;
}

const STATUS_NAMES = Object.keys(STATUS_WORDS)
  .sort((left, right) => right.length - left.length)
  .join('|');
/** A raw state name in a host message: one with an underscore anywhere, the plain-word ones only after a word that names a state. */
const RAW_STATUS = new RegExp(`\\b(?:(?<lead>is|now|not|or|from|to|status|was) (?<named>${STATUS_NAMES})|(?<bare>[a-z]+_[a-z_]+))\\b`, 'g');

/** A host message with raw state names said in words: "Step s1 is awaiting_consent" reads "Step s1 is waiting for you". */
export function wordsForStates(message: string): string {
  return message.replace(
    RAW_STATUS,
    (whole, _lead, _named, _bare, _offset, _text, groups: { lead?: string; named?: string; bare?: string }) => {
      const status = groups.named ?? groups.bare ?? '';
      if (!Object.hasOwn(STATUS_WORDS, status)) return whole;
      const words = STATUS_WORDS[status as StepStatus].toLowerCase();
      return groups.lead ? `${groups.lead} ${words}` : words;
    },
  );
}
