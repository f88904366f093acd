import type { StepStatus } from '../../src/domain/state-machine.js';
import { CONTENT_LOST_LABEL, contentLostWords, type ContentLost } from '../../src/domain/content-lost.js';

/**
 * Said where a step is looked at (the queue's decision, History's detail): a large write whose content, kept as a
 * backup blob in the data directory, is missing or damaged. It can be rejected, never approved.
 */
export function ContentLostNote({ lost, status }: { lost: ContentLost; status: StepStatus }) {
  return (
    <p className="warning content-lost-note" role="note" data-testid="content-lost">
      <strong>{CONTENT_LOST_LABEL}.</strong> {contentLostWords(lost, status)}
    </p>
  );
}

/** The short mark beside a step's status in a list row. */
export function ContentLostMark() {
  return (
    <span className="content-lost-mark" data-testid="content-lost-mark">
      {CONTENT_LOST_LABEL}
    </span>
  );
}
