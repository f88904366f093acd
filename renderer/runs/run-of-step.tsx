import { useEffect, useState } from 'react';
import { useApi } from '../api.js';
import { MarkedText } from '../components/marked-text.js';

/*
 * Which run proposed a step. A run's steps carry the label "run <id>" (src/runs/run-ids.ts), but a
 * label is what a proposer says about itself: an MCP client could call itself "run r-1". So the link
 * to the run is shown only once the host's record of that run lists this step among its own.
 */

/** The run id a proposer's label names, or null when it is not a run's label. */
export function runIdOfLabel(label: string | null | undefined): string | null {
  const match = /^run (\S{1,128})$/.exec(label ?? '');
  return match ? match[1]! : null;
}

/** "Proposed by run <link>" for a step the host confirms its run proposed; nothing otherwise. */
export function ProposedByRun({ stepId, label }: { stepId: string; label: string | null | undefined }) {
  const api = useApi();
  const runId = runIdOfLabel(label);
  const [confirmed, setConfirmed] = useState<string | null>(null);
  useEffect(() => {
    setConfirmed(null);
    if (!runId) return;
    let alive = true;
    api.getRun({ runId }).then(
      (detail) => alive && detail.stepIds.includes(stepId) && setConfirmed(runId),
      () => undefined,
    );
    return () => {
      alive = false;
    };
  }, [api, runId, stepId]);
  if (!confirmed) return null;
  return (
    <span className="proposed-by-run" data-testid="proposed-by-run">
      {' '}
      · proposed by run{' '}
      <a href={`#runs?${new URLSearchParams({ run: confirmed }).toString()}`}>
        <MarkedText text={confirmed} />
      </a>
    </span>
  );
}
