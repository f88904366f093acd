import fs from 'node:fs';
import path from 'node:path';
import type { KeyStore } from './key-store.js';
import { writeFileDurably } from './key-store.js';

export const ANCHOR_FILE = 'audit-anchor.json';
const ANCHOR_ENTRY = 'audit-anchor';

/**
 * The high-water mark, kept outside the SQLite file: a hash chain alone cannot show that its newest
 * records were cut off or that the whole database was swapped for an older copy; this can.
 */
export interface Anchor {
  v: 1;
  logId: string;
  seq: number;
  headHash: string;
  cpSeq: number;
  checkpointHash: string;
  ts: string;
}

function parseAnchor(bytes: Buffer | undefined): Anchor | undefined {
  if (!bytes) return undefined;
  try {
    const value = JSON.parse(bytes.toString('utf8')) as Anchor;
    if (value.v === 1 && typeof value.logId === 'string' && Number.isSafeInteger(value.seq) && typeof value.headHash === 'string') return value;
  } catch {
    /* an unreadable copy counts as absent; the other copy may still hold */
  }
  return undefined;
}

/** Two copies: a file beside the database, and the key store (the OS keychain under Electron). */
export class AnchorStore {
  readonly file: string;

  constructor(
    dataDir: string,
    private readonly keyStore?: KeyStore,
  ) {
    this.file = path.join(dataDir, ANCHOR_FILE);
  }

  /** The highest anchor either copy holds. */
  read(): Anchor | undefined {
    let fromFile: Buffer | undefined;
    try {
      fromFile = fs.readFileSync(this.file);
    } catch {
      fromFile = undefined;
    }
    const copies = [parseAnchor(fromFile), parseAnchor(this.keyStore?.read(ANCHOR_ENTRY))].filter((a): a is Anchor => a !== undefined);
    return copies.sort((a, b) => b.seq - a.seq || b.cpSeq - a.cpSeq)[0];
  }

  write(anchor: Anchor): void {
    const bytes = Buffer.from(JSON.stringify(anchor));
    writeFileDurably(this.file, bytes, 0o600);
    this.keyStore?.write(ANCHOR_ENTRY, bytes);
  }
}
