import type { StepStatus } from '../../src/domain/state-machine.js';
import { WAITING_STATUSES } from '../waiting-steps.js';

/*
 * Where a step of a run is shown: in the queue while it has not started (the person decides it there),
 * in History once it has. The queue reads `#queue?step=ID` and opens that step; History's words filter
 * finds it by id.
 */

export function stepHref(stepId: string, status: StepStatus | undefined): string {
  if (status && !WAITING_STATUSES.includes(status)) return `#history?${new URLSearchParams({ q: stepId }).toString()}`;
  return `#queue?${new URLSearchParams({ step: stepId }).toString()}`;
}

/** The step a `#queue?step=ID` address names, or null. */
export function queueStepFromHash(hash: string): string | null {
  const [view, query] = hash.replace(/^#\/?/, '').split('?');
  if (view !== 'queue' || !query) return null;
  const step = new URLSearchParams(query).get('step');
  return step && step.length <= 128 ? step : null;
}

/** The run a `#runs?run=ID` address names, or null. */
export function runFromHash(hash: string): string | null {
  const [view, query] = hash.replace(/^#\/?/, '').split('?');
  if (view !== 'runs' || !query) return null;
  const run = new URLSearchParams(query).get('run');
  return run && run.length <= 128 ? run : null;
}
