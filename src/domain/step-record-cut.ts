import type { StepRecord } from './step-record.js';

/*
 * A step record bounded for the window (no reply in normal use over 64 KiB: a large one holds up the others). A write of
 * 32 KB carries its content twice (the args and the preview's diff), so the whole record is cut to a
 * byte budget: the long strings and long lists of its args, preview, result and edit are shortened
 * until it fits, and the record says so (`cut`), with both sizes. The rest comes in pages
 * (stepRecordPart); the approval still binds to the hash of the whole preview, which is unchanged.
 */

/** The largest budget a caller may ask for, and the smallest. */
export const MAX_RECORD_BYTES = 60 * 1024;
export const MIN_RECORD_BYTES = 4 * 1024;
/** Characters of the whole record's JSON per page: at most 3 bytes each on the wire, so under 64 KiB. */
export const RECORD_PART_CHARACTERS = 16 * 1024;

export interface RecordCut {
  /** Bytes of the record's JSON as sent, and of the whole record. */
  shownBytes: number;
  totalBytes: number;
}

export type BoundedStepRecord = StepRecord & { cut?: RecordCut };

const CUT_FIELDS = ['preview', 'result', 'edit', 'runTimes'] as const;

function bytesOf(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

function cutValue(value: unknown, longest: number, most: number): unknown {
  if (typeof value === 'string') return value.length > longest ? value.slice(0, longest) : value;
  if (Array.isArray(value)) return value.slice(0, most).map((item) => cutValue(item, longest, most));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, cutValue(item, longest, most)]));
  }
  return value;
}

/** The record as is when its JSON fits `maxBytes`, else cut to fit (as nearly as its short fields allow), saying so. */
export function boundedRecord(record: StepRecord, maxBytes: number): BoundedStepRecord {
  const budget = Math.min(Math.max(maxBytes, MIN_RECORD_BYTES), MAX_RECORD_BYTES);
  const totalBytes = bytesOf(record);
  if (totalBytes <= budget) return record;
  let shown: StepRecord = record;
  // Room for the `cut` field itself.
  for (let longest = 16 * 1024, most = 200; longest >= 32; longest = Math.floor(longest / 2), most = Math.max(4, Math.floor(most / 2))) {
    // A step's args keep more (a path or a command word names the step in the list): only its bulk is cut.
    const cut = {
      ...record,
      step: { ...record.step, args: cutValue(record.step.args, Math.max(longest, 1024), Math.max(most, 64)) },
    } as StepRecord;
    for (const field of CUT_FIELDS) {
      if (record[field] !== undefined && record[field] !== null)
        (cut as unknown as Record<string, unknown>)[field] = cutValue(record[field], longest, most);
    }
    shown = cut;
    if (bytesOf(cut) + 80 <= budget) break;
  }
  return { ...shown, cut: { shownBytes: bytesOf(shown), totalBytes } };
}

export interface StepRecordPart {
  stepId: string;
  /** The record's updatedAt: pages of one version only fit together. */
  updatedAt: string;
  offset: number;
  /** A slice of the whole record's JSON, from `offset`. */
  text: string;
  nextOffset: number | null;
  totalCharacters: number;
}

/** A page of a record already serialized: a reader paging a record of many MB pays its serialization once (see the host's cache). */
export function partOfRecordText(stepId: string, updatedAt: string, json: string, offset: number): StepRecordPart {
  const start = Math.min(offset, json.length);
  let end = Math.min(start + RECORD_PART_CHARACTERS, json.length);
  // Never split a surrogate pair between pages.
  if (end < json.length && /[\uD800-\uDBFF]/.test(json.charAt(end - 1))) end -= 1;
  return {
    stepId,
    updatedAt,
    offset: start,
    text: json.slice(start, end),
    nextOffset: end < json.length ? end : null,
    totalCharacters: json.length,
  };
}

/** What a window's reply or event may hold of one step record (a few bytes under a frame's 64 KiB, with the envelope). */
export const WINDOW_RECORD_BYTES = 56 * 1024;

function isStepRecord(value: unknown): value is StepRecord {
  return value !== null && typeof value === 'object' && 'stepHash' in value && 'step' in value && 'status' in value;
}

/**
 * A reply or event for the window with every step record in it (the value itself, an array's items,
 * an object's `step`) cut to WINDOW_RECORD_BYTES, saying so; anything else as it is.
 */
export function boundedForWindow(value: unknown): unknown {
  if (isStepRecord(value)) return boundedRecord(value, WINDOW_RECORD_BYTES);
  if (Array.isArray(value))
    return value.some(isStepRecord) ? value.map((item) => (isStepRecord(item) ? boundedRecord(item, WINDOW_RECORD_BYTES) : item)) : value;
  if (value !== null && typeof value === 'object' && 'step' in value && isStepRecord((value as { step: unknown }).step)) {
    return { ...value, step: boundedRecord((value as { step: StepRecord }).step, WINDOW_RECORD_BYTES) };
  }
  return value;
}
