import { canonicalJson } from '../domain/canonical-json.js';
import type { Preview } from '../domain/step-record.js';

/*
 * Where a step's preview is stored. SQLite rewrites a whole row for any UPDATE, and a step changes status half a
 * dozen times between its proposal and its end: the 1.4 MB diff of a 10 MB write kept in its row went through the
 * WAL (and a statement journal in /var/tmp) at each change, and every read of the step parsed it again. A large
 * preview is therefore written once to step_previews, under a random id that is never used again (not AUTOINCREMENT's
 * next id: a rolled-back savepoint gives that id back while the cache below may hold the preview read under it), and
 * the row keeps that id (preview_ref): a status update rewrites a small row, and a preview already parsed is
 * known by its id, so reading the step again costs a lookup. Rows written before this migration keep their
 * preview in preview_json (preview_ref NULL) and read as before.
 */

/** A preview whose canonical JSON is longer than this is stored apart from its row. */
export const PREVIEW_APART_CHARS = 16 * 1024;

/** What the steps row gets for a preview: the JSON itself (small) or the id of its row in step_previews (large). */
export interface StoredPreview {
  json: string | null;
  apartJson: string | null;
}

export function storedPreview(preview: Preview | null): StoredPreview {
  if (preview === null) return { json: null, apartJson: null };
  const json = canonicalJson(preview);
  return json.length <= PREVIEW_APART_CHARS ? { json, apartJson: null } : { json: null, apartJson: json };
}

/** Reads a preview's JSON from step_previews by its id (for a row with preview_ref set). */
export type PreviewLoader = (previewRef: number) => string;

/** How many parsed large previews a repository keeps (one can be a few MB parsed). */
const PARSED_PREVIEW_CACHE = 8;

/**
 * A repository's parsed large previews by their step_previews id. A stored preview never changes under its id
 * (a new preview gets a new id), so a cached one is the stored one. Handed out shared, as parsed steps are:
 * records are not mutated.
 */
export class ParsedPreviews {
  private readonly previews = new Map<number, Preview>();

  constructor(private readonly load: PreviewLoader) {}

  of(row: { preview_json: string | null; preview_ref?: number | null }): Preview | null {
    const ref = row.preview_ref ?? null;
    if (ref === null) return row.preview_json === null ? null : (JSON.parse(row.preview_json) as Preview);
    const cached = this.previews.get(ref);
    if (cached) return cached;
    const parsed = JSON.parse(this.load(ref)) as Preview;
    if (this.previews.size >= PARSED_PREVIEW_CACHE) this.previews.delete(this.previews.keys().next().value!);
    this.previews.set(ref, parsed);
    return parsed;
  }
}
