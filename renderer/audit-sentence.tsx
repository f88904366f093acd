import { useEffect, useState } from 'react';
import { summarizeStep } from '../src/domain/step-title.js';
import { useApi, useRoots } from './api.js';
import { auditRecordSentence, type RecordBodyWords } from '../src/domain/audit-sentence.js';
import { MarkedText } from './components/marked-text.js';

/*
 * An audit record as a reviewer reads it: one sentence in the words History uses (src/domain/audit-sentence.ts,
 * which `executor audit show` prints too), with a link to the step's History row. The signed body stays
 * below it, as signed.
 */

function parse(body: string): RecordBodyWords {
  try {
    return JSON.parse(body) as RecordBodyWords;
  } catch {
    return {};
  }
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
      <MarkedText text={auditRecordSentence(parsed, title)} />{' '}
      {stepId ? <a href={`#history?${new URLSearchParams({ q: stepId }).toString()}`}>Show in History</a> : null}
    </p>
  );
}
