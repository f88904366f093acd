import { useEffect, useState } from 'react';
import { summarizeStep } from '../src/domain/step-title.js';
import { useApi, useRoots } from './api.js';
import { shortId } from './components/copy-id.js';
import { MarkedText } from './components/marked-text.js';

/*
 * An audit record as a reviewer reads it: one sentence in the words History uses ("root forced the
 * revert of “Write src/api.js” over a file changed since; the newer content is kept as step …"),
 * with a link to the step's History row. The signed body stays below it, as signed.
 */

interface SignedBody {
  action?: string;
  stepId?: string | null;
  planId?: string | null;
  userId?: { user?: string; channel?: string } | null;
  /** The event's detail, as signed. */
  args?: Record<string, unknown> | null;
}

/** What each kind of record says its actor did to the step, as History's words put it. */
const VERBS: Record<string, string> = {
  'step.proposed': 'proposed',
  'step.evaluated': 'rated the risk of',
  'step.consent_requested': 'asked the person about',
  'step.approved': 'approved',
  'step.approved_with_edits': 'approved, with edits,',
  'step.simulated': 'dry-ran',
  'step.execution_started': 'started running',
  'step.rejected': 'rejected',
  'step.denied': 'denied',
  'step.expired': 'let expire',
  'step.executed': 'ran',
  'step.failed': 'saw fail',
  'step.cancelled': 'cancelled',
  'step.interrupted': 'was interrupted running',
  'step.reverted': 'reverted',
  'step.revert_forced': 'forced the revert of',
  'step.edited': 'edited',
};

function parse(body: string): SignedBody {
  try {
    return JSON.parse(body) as SignedBody;
  } catch {
    return {};
  }
}

/** The sentence without the step's title (filled in once the step is read): who, did what, to which step, and what followed. */
export function recordSentence(body: SignedBody, title: string | null): string {
  const who = body.userId?.user ?? body.userId?.channel ?? 'someone';
  const action = body.action ?? 'an unknown action';
  const step = body.stepId ? (title ? `“${title}”` : `step ${shortId(body.stepId)}`) : null;
  const verb = VERBS[action];
  if (!verb || !step) return `${who}: ${action.replace(/[._]/g, ' ')}${step ? ` (${step})` : ''}.`;
  if (action === 'step.revert_forced') {
    const kept = Array.isArray(body.args?.restoreStepIds) ? (body.args.restoreStepIds as string[]) : [];
    return `${who} forced the revert of ${step} over a file changed since; the newer content is kept as the backup of ${
      kept.length ? kept.map((id) => `step ${shortId(id)}`).join(', ') : 'its forced-revert steps'
    }.`;
  }
  return `${who} ${verb} ${step}.`;
}

export function RecordSentence({ body }: { body: string }) {
  const api = useApi();
  const roots = useRoots();
  const parsed = parse(body);
  const stepId = parsed.stepId ?? null;
  const [title, setTitle] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setTitle(null);
    if (stepId)
      api
        .getStep({ stepId })
        .then((record) => live && setTitle(summarizeStep(record.step, roots)))
        // A step the log names but the store no longer holds keeps its id in the sentence.
        .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [api, stepId, roots]);
  return (
    <p className="record-sentence" data-testid="record-sentence">
      <MarkedText text={recordSentence(parsed, title)} />{' '}
      {stepId ? <a href={`#history?${new URLSearchParams({ q: stepId }).toString()}`}>Show in History</a> : null}
    </p>
  );
}
