import type { StepRecord } from '../src/domain/step-record.js';
import type { RecordCut } from '../src/domain/step-record-cut.js';

/*
 * How the window asks for step records so no reply is over 64 KiB: a list row's record
 * small, the step shown in detail larger, both cut by the host when they would be more (getStep's
 * maxBytes, which says `cut`), and the whole one only when the person asks, in pages (getStepPart).
 */

/** A record as the window holds it: perhaps cut, saying so. */
export type ShownRecord = StepRecord & { cut?: RecordCut };

export const DETAIL_RECORD_BYTES = 56 * 1024;

export function cutOf(record: StepRecord): RecordCut | undefined {
  return (record as ShownRecord).cut;
}

/** "40 KiB" */
export function kibText(bytes: number): string {
  return `${Math.max(1, Math.round(bytes / 1024))} KiB`;
}
