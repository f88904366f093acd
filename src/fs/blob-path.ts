import path from 'node:path';

/** Whether a name is a sha256 hex digest: the only names a blob has. */
export const BLOB_NAME = /^[0-9a-f]{64}$/;

/**
 * Where a content-addressed blob lives under the backups folder: `ab/cdef…` (its sha256, split after two
 * characters so no folder holds them all). Said once here: the blob store writes by it, and the checks of
 * what the database names (audit verify, the collector of orphans) find blobs by it.
 */
export function blobPathIn(blobsDir: string, hash: string): string {
  if (!BLOB_NAME.test(hash)) throw new Error(`not a sha256 hex digest: ${hash}`);
  return path.join(blobsDir, hash.slice(0, 2), hash.slice(2));
}
