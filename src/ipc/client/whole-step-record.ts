import { ExecutorError } from '../../domain/errors.js';
import type { StepRecord } from '../../domain/step-record.js';
import type { ExecutorClient } from './client.js';

/*
 * A step's whole record through replies that are each bounded (getStep cuts a record over 60 KiB and
 * says so; getStepPart pages the rest). For a reader that must show all of it: the CLI's `steps show`,
 * `approve` on a terminal (the approval binds to what it printed), `steps watch`, and the window's
 * "Show all". Browser-safe.
 */

/** The whole record: getStep's when it is not cut, else the pages of one version joined. */
export async function getWholeStep(api: Pick<ExecutorClient, 'getStep' | 'getStepPart'>, stepId: string): Promise<StepRecord> {
  const first = await api.getStep({ stepId });
  if (!('cut' in first) || first.cut === undefined) return first;
  return loadWholeStep(api, stepId);
}

/** The whole record, page by page; pages of one version only (a change meanwhile starts again). */
export async function loadWholeStep(api: Pick<ExecutorClient, 'getStepPart'>, stepId: string): Promise<StepRecord> {
  for (let attempt = 0; attempt < 3; attempt++) {
    let text = '';
    let version: string | undefined;
    let offset: number | null = 0;
    let changed = false;
    while (offset !== null) {
      const part = await api.getStepPart({ stepId, offset });
      if (version !== undefined && part.updatedAt !== version) {
        changed = true;
        break;
      }
      version = part.updatedAt;
      text += part.text;
      offset = part.nextOffset;
    }
    if (!changed) return JSON.parse(text) as StepRecord;
  }
  throw new ExecutorError('STEP_CHANGED', `Step ${stepId} kept changing while it was read; try again.`);
}
