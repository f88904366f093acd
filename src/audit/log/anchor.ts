import fs from 'node:fs';
import path from 'node:path';
import { readRegularFileSync } from '../../fs/regular-file.js';
import type { KeyStore } from '../keys/key-store.js';
import { canonicalText } from '../format/record-format.js';
import { writeFileDurably } from '../keys/key-store.js';

export const ANCHOR_FILE = 'audit-anchor.json';
const ANCHOR_ENTRY = 'audit-anchor';

/**
 * The high-water mark, kept outside the SQLite file: a hash chain alone cannot show that its newest
 * records were cut off or that the whole database was swapped for an older copy; this can.
 * v2 (forward-secure chains) names the epoch whose keys authenticate it: `mac` = HMAC(epoch key,
 * ANCHOR_MAC_PREFIX ‖ fields) and `sig` = Ed25519(epoch signing key, ANCHOR_SIG_PREFIX ‖ fields),
 * fields being the canonical JSON of everything but mac and sig. v1 anchors carry neither.
 */
export interface AnchorFields {
  v: 1 | 2;
  logId: string;
  seq: number;
  headHash: string;
  cpSeq: number;
  checkpointHash: string;
  ts: string;
  keyId?: string;
  epoch?: number;
}

export interface Anchor extends AnchorFields {
  /** hex, v2 only */
  mac?: string;
  /** hex, v2 only */
  sig?: string;
}

/** The signed text of an anchor: its canonical JSON without mac and sig. */
export function anchorSignedText(anchor: Anchor): string {
  const { mac: _mac, sig: _sig, ...fields } = anchor;
  return canonicalText(fields);
}

function parseAnchor(bytes: Buffer | undefined): Anchor | undefined {
  if (!bytes) return undefined;
  try {
    const value = JSON.parse(bytes.toString('utf8')) as Anchor;
    const v2Fields =
      value.v !== 2 ||
      (typeof value.keyId === 'string' &&
        Number.isSafeInteger(value.epoch) &&
        typeof value.mac === 'string' &&
        typeof value.sig === 'string');
    if (
      (value.v === 1 || value.v === 2) &&
      v2Fields &&
      typeof value.logId === 'string' &&
      Number.isSafeInteger(value.seq) &&
      Number.isSafeInteger(value.cpSeq) &&
      typeof value.headHash === 'string' &&
      typeof value.checkpointHash === 'string'
    )
      return value;
  } catch {
    /* unreadable: reported by copies() */
  }
  return undefined;
}

/** One copy of the anchor as found: absent, unreadable (present but not an anchor), or parsed. */
export interface AnchorCopy {
  where: 'file' | 'key store';
  anchor: Anchor | undefined;
  unreadable: boolean;
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

  /** Both copies as found, for verify: each present copy must authenticate. */
  copies(): AnchorCopy[] {
    let fromFile: Buffer | undefined;
    try {
      // Never waits on what it opens (a named pipe there hung verify).
      fromFile = readRegularFileSync(this.file, { maxBytes: 1024 * 1024 });
    } catch (error) {
      // Something other than a file where the anchor goes is a copy that cannot be read, not a missing one.
      fromFile = (error as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : Buffer.alloc(0);
    }
    const fromKeyStore = this.keyStore?.read(ANCHOR_ENTRY);
    const copy = (where: AnchorCopy['where'], bytes: Buffer | undefined): AnchorCopy => {
      const anchor = parseAnchor(bytes);
      return { where, anchor, unreadable: bytes !== undefined && anchor === undefined };
    };
    return [copy('file', fromFile), ...(this.keyStore ? [copy('key store', fromKeyStore)] : [])];
  }

  /** The highest anchor either copy holds. */
  read(): Anchor | undefined {
    const copies = this.copies()
      .map((copy) => copy.anchor)
      .filter((a): a is Anchor => a !== undefined);
    return copies.sort((a, b) => b.seq - a.seq || b.cpSeq - a.cpSeq)[0];
  }

  write(anchor: Anchor): void {
    const bytes = Buffer.from(JSON.stringify(anchor));
    writeFileDurably(this.file, bytes, 0o600);
    this.keyStore?.write(ANCHOR_ENTRY, bytes);
  }
}
