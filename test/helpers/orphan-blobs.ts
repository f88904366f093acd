import fs from 'node:fs';
import path from 'node:path';
import { sha256Of } from '../../src/backup/blob-store.js';
import { BODY_APART_CHARS } from '../../src/store/step-bodies.js';

/*
 * What the orphan-blob collector's tests share: a content long enough to be kept apart from its row (in a
 * blob of its own), where a blob lives, and a blob left as a killed host leaves one.
 */

/** A text long enough to be stored apart from its step's row. */
export function largeText(tag: string): string {
  const lines: string[] = [];
  for (let index = 0; lines.join('\n').length < BODY_APART_CHARS * 2; index++) lines.push(`${tag} line ${index} ${'y'.repeat(index % 30)}`);
  return `${lines.join('\n')}\n`;
}

export const blobFile = (dataDir: string, hash: string) => path.join(dataDir, 'blobs', hash.slice(0, 2), hash.slice(2));

/** A blob as a killed host leaves it: on disk, written two hours ago (past the collector's grace). Answers its hash. */
export function plantOldBlob(dataDir: string, content: string): string {
  const hash = sha256Of(Buffer.from(content));
  const file = blobFile(dataDir, hash);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content, { mode: 0o600 });
  const longAgo = new Date(Date.now() - 2 * 3600 * 1000);
  fs.utimesSync(file, longAgo, longAgo);
  return hash;
}
