import { canonicalJson } from '../domain/canonical-json.js';
import { wellFormed } from '../domain/json-limits.js';
import type { Step } from '../domain/step.js';
import type { ContentLostWhy } from '../domain/content-lost.js';
import { BlobMismatchError } from '../fs/blob-mismatch.js';

/*
 * Where a step's JSON is stored. SQLite rewrites a whole row (its overflow pages too) for any UPDATE, and a
 * step changes status half a dozen times between proposal and its end: a 10 MB writeFile kept in its row
 * went through the WAL at each one (~200 MB written for one 10 MB file). A large step's full JSON is
 * therefore written once to step_bodies, and its row keeps the step without its content, which is all that
 * the row's own readers (summaries, filters, indexes, audit traits) take from it.
 *
 * A large write's content is the very post-image its run will back up: it is kept once, as that backup blob
 * (content-addressed, written and fsynced before the step's row is committed), and step_bodies holds the step
 * without it and the blob's sha256 (content_blob). Writing it into SQLite as well cost the 10 MB again in the
 * WAL, again at the next checkpoint, and the most CPU of a proposal; and the run's backup then finds the
 * post-image already stored. Content that its bytes would not give back exactly (text with a lone surrogate)
 * keeps its whole body in step_bodies, as before.
 */

/** A step whose canonical JSON is longer than this keeps its content apart from its row. */
export const BODY_APART_CHARS = 64 * 1024;

/** What a step's row holds (`rowJson`) and, when its body lives apart, the full step (`bodyJson`). */
export interface StoredStep {
  rowJson: string;
  bodyJson: string | null;
}

export function storedStep(step: Step): StoredStep {
  const full = canonicalJson(step);
  const args = step.args as Record<string, unknown>;
  if (full.length <= BODY_APART_CHARS || typeof args.content !== 'string') return { rowJson: full, bodyJson: null };
  return { rowJson: rowJsonOf(step), bodyJson: full };
}

/** The step without its content: what its row (and, for a blob body, step_bodies) holds. */
export function rowJsonOf(step: Step): string {
  const { content: _content, ...rest } = step.args as Record<string, unknown>;
  return canonicalJson({ ...step, args: rest });
}

/**
 * Whether a large write's content is kept as a backup blob (its bytes, content-bytes.ts), or stays in the database (false): not a
 * write, small, or text whose UTF-8 bytes would not give it back exactly (a lone surrogate). Base64 content is
 * canonical (the schema's isStrictBase64), so its bytes give it back.
 */
export function contentKeptAsBlob(step: Step): boolean {
  if (step.action !== 'writeFile') return false;
  const { content, encoding } = step.args;
  if (content.length <= BODY_APART_CHARS) return false;
  return encoding === 'base64' || wellFormed(content);
}

const byCodeUnits = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The step stored without its content (rowJson), given its content back, in canonical key order (as its full
 * canonical JSON would parse): readers and signers get the same object as from a body kept whole.
 */
export function withContent(rowJson: string, content: string): Step {
  const step = JSON.parse(rowJson) as Step & { args: Record<string, unknown> };
  return { ...step, args: Object.fromEntries(Object.entries({ ...step.args, content }).sort(byCodeUnits)) } as Step;
}

/** Reads a blob of the data directory's backups by its sha256 (checked against it). */
export interface ContentBlobs {
  get(hash: string): Buffer;
  has(hash: string): boolean;
  /** What the blob's file is now (size, time, inode) without reading it, or null when it is gone: a damaged one is not hashed again until it changes. */
  stamp(hash: string): string | null;
}

/** A content blob's bytes, or why it cannot be given back: gone, no longer its hash's (damaged, cut short), or unreadable. */
export function readContentBlob(blobs: ContentBlobs, hash: string): Buffer | ContentLostWhy {
  try {
    return blobs.get(hash);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing';
    return error instanceof BlobMismatchError ? 'corrupt' : 'unreadable';
  }
}
