import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileDurably } from '../keys/key-store.js';

/**
 * What a witness remembers of each log: the newest checkpoint it cosigned (size, root, and the note
 * with the log's signature and its own cosignature). One file per origin in the witness's own
 * directory, replaced atomically, so a crash leaves the old state or the new, never a mix.
 */
export interface WitnessedLog {
  origin: string;
  size: number;
  rootHash: string;
  /** The cosigned checkpoint note, served at GET /<origin hash>/checkpoint. */
  note: string;
  cosignedAt: string;
}

/** What log-key handovers taught the witness: keys it trusts besides its --log ones. */
export interface LearnedLogKeys {
  origin: string;
  learned: string[];
  /** Written before handovers stopped retiring keys; read, kept, and trusted like `learned`. Never grows. */
  retired: string[];
  /** For each learned vkey, the vkey of the trusted key that signed its handover. */
  handedOverBy?: Record<string, string>;
  /**
   * Learned keys whose handover proved no rotation: the key that signed it signed a checkpoint this
   * witness cosigned afterwards (a rotated-away key never signs again). Never trusted again.
   */
  withdrawn?: string[];
}

/** SHA-256 of the origin in lowercase hex: the tlog-witness monitoring path and our file name. */
export function originHash(origin: string): string {
  return crypto.createHash('sha256').update(origin, 'utf8').digest('hex');
}

export class WitnessStateDir {
  readonly logsDir: string;

  constructor(readonly dir: string) {
    this.logsDir = path.join(dir, 'logs');
    fs.mkdirSync(this.logsDir, { recursive: true, mode: 0o700 });
  }

  read(origin: string): WitnessedLog | undefined {
    let text: string;
    try {
      text = fs.readFileSync(this.fileOf(origin), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const state = JSON.parse(text) as WitnessedLog;
    // A state file that names another origin was copied or renamed by hand: trusting it would let one log roll back another.
    if (state.origin !== origin || !Number.isSafeInteger(state.size))
      throw new Error(`The witness state file ${this.fileOf(origin)} is not this log's; restore it or remove it by hand.`);
    return state;
  }

  /** The log keys this witness learned from handover notes (vkey strings), with an old file's `retired` list. */
  readKeys(origin: string): LearnedLogKeys {
    let text: string;
    try {
      text = fs.readFileSync(this.keysFileOf(origin), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { origin, learned: [], retired: [] };
      throw error;
    }
    const keys = JSON.parse(text) as LearnedLogKeys;
    if (keys.origin !== origin || !Array.isArray(keys.learned) || !Array.isArray(keys.retired))
      throw new Error(`The witness key file ${this.keysFileOf(origin)} is not this log's; restore it or remove it by hand.`);
    return keys;
  }

  writeKeys(keys: LearnedLogKeys): void {
    writeFileDurably(this.keysFileOf(keys.origin), `${JSON.stringify(keys, null, 2)}\n`, 0o600);
  }

  private keysFileOf(origin: string): string {
    return path.join(this.logsDir, `${originHash(origin)}.keys.json`);
  }

  write(state: WitnessedLog): void {
    writeFileDurably(this.fileOf(state.origin), `${JSON.stringify(state, null, 2)}\n`, 0o600);
  }

  private fileOf(origin: string): string {
    return path.join(this.logsDir, `${originHash(origin)}.json`);
  }
}
