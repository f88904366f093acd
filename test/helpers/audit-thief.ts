import Database from 'better-sqlite3';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ANCHOR_FILE, anchorSignedText, type Anchor } from '../../src/audit/log/anchor.js';
import { AuditTree } from '../../src/audit/log/audit-tree.js';
import { ed25519Raw } from '../../src/audit/format/epoch-certificate.js';
import { checkpointNote, logNoteSigner } from '../../src/audit/format/checkpoint-note.js';
import { FileKeyStore } from '../../src/audit/keys/key-store.js';
import {
  ANCHOR_MAC_PREFIX,
  ANCHOR_SIG_PREFIX,
  CHECKPOINT_EPOCH_SIG_PREFIX,
  CHECKPOINT_MAC_PREFIX,
  CHECKPOINT_SIG_PREFIX,
  RECORD_MAC_PREFIX,
  canonicalText,
  GENESIS_HASH,
  checkpointHash,
  hmac,
  recordHash,
} from '../../src/audit/format/record-format.js';
import { DATABASE_FILE } from '../../src/store/database.js';

/**
 * An attacker who runs as the person's account and holds only what is on disk: the key store
 * (today's epoch key, today's epoch signing key, the stable log key) and the database. Nothing here
 * calls the product's writer: the thief edits SQLite past its triggers and signs with what it stole.
 */
export interface StolenKeys {
  logId: string;
  keyId: string;
  epoch: number;
  epochKey: Buffer;
  epochSigner: crypto.KeyObject;
  logSigner: crypto.KeyObject;
}

const privateKey = (der: string) => crypto.createPrivateKey({ key: Buffer.from(der, 'base64'), format: 'der', type: 'pkcs8' });

export function stealKeys(dataDir: string): StolenKeys {
  const state = JSON.parse(new FileKeyStore(dataDir).read('audit-keys')!.toString('utf8')) as {
    logId: string;
    current: { keyId: string; epoch: number; epochKey: string; signingKey: string; epochSigningKey: string };
  };
  return {
    logId: state.logId,
    keyId: state.current.keyId,
    epoch: state.current.epoch,
    epochKey: Buffer.from(state.current.epochKey, 'hex'),
    epochSigner: privateKey(state.current.epochSigningKey),
    logSigner: privateKey(state.current.signingKey),
  };
}

function openRaw(dataDir: string): Database.Database {
  const db = new Database(path.join(dataDir, DATABASE_FILE));
  db.exec(
    'DROP TRIGGER IF EXISTS audit_records_no_update; DROP TRIGGER IF EXISTS audit_records_no_delete; DROP TRIGGER IF EXISTS audit_checkpoints_no_update; DROP TRIGGER IF EXISTS audit_checkpoints_no_delete; DROP TRIGGER IF EXISTS audit_epoch_certs_no_delete; DROP TRIGGER IF EXISTS audit_epoch_certs_no_update;',
  );
  return db;
}

/** Re-seals every checkpoint from the first one that seals `fromSeq` on, in the current epoch, with every key the thief holds. */
function resealCheckpoints(db: Database.Database, keys: StolenKeys, fromSeq: number): void {
  const checkpoints = db.prepare('SELECT cp_seq, seq, body FROM audit_checkpoints ORDER BY cp_seq').all() as {
    cp_seq: number;
    seq: number;
    body: string;
  }[];
  let previousHash: string | undefined;
  for (const cp of checkpoints) {
    // Checkpoints sealing only records before fromSeq stay as they were (the thief keeps what it did not change).
    if (cp.seq < fromSeq) {
      previousHash = (db.prepare('SELECT hash FROM audit_checkpoints WHERE cp_seq = ?').get(cp.cp_seq) as { hash: Buffer }).hash.toString(
        'hex',
      );
      continue;
    }
    const body = JSON.parse(cp.body) as Record<string, unknown>;
    const head = db.prepare('SELECT hash FROM audit_records WHERE seq = ?').get(cp.seq) as { hash: Buffer } | undefined;
    if (head) body.headHash = head.hash.toString('hex');
    body.epoch = keys.epoch;
    body.keyId = keys.keyId;
    if (previousHash !== undefined) body.prevCheckpointHash = previousHash;
    const text = canonicalText(body);
    const bytes = Buffer.from(text);
    const mac = hmac(keys.epochKey, CHECKPOINT_MAC_PREFIX, bytes);
    const sig = crypto.sign(null, Buffer.concat([CHECKPOINT_SIG_PREFIX, bytes]), keys.logSigner);
    const epochSig = crypto.sign(null, Buffer.concat([CHECKPOINT_EPOCH_SIG_PREFIX, bytes]), keys.epochSigner);
    const hash = checkpointHash(bytes, mac, sig, epochSig);
    db.prepare('UPDATE audit_checkpoints SET body = ?, mac = ?, sig = ?, epoch_sig = ?, hash = ? WHERE cp_seq = ?').run(
      text,
      mac,
      sig,
      epochSig,
      hash,
      cp.cp_seq,
    );
    previousHash = hash.toString('hex');
  }
}

/** Writes both copies of the anchor for the newest checkpoint, MACed and signed in the current epoch. */
export function rewriteAnchors(dataDir: string, keys: StolenKeys): void {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  const last = db.prepare('SELECT cp_seq, body, hash FROM audit_checkpoints ORDER BY cp_seq DESC LIMIT 1').get() as {
    cp_seq: number;
    body: string;
    hash: Buffer;
  };
  db.close();
  const body = JSON.parse(last.body) as { seq: number; headHash: string; ts: string };
  const anchor: Anchor = {
    v: 2,
    logId: keys.logId,
    seq: body.seq,
    headHash: body.headHash,
    cpSeq: last.cp_seq,
    checkpointHash: last.hash.toString('hex'),
    ts: body.ts,
    keyId: keys.keyId,
    epoch: keys.epoch,
  };
  const text = anchorSignedText(anchor);
  const signed: Anchor = {
    ...anchor,
    mac: hmac(keys.epochKey, ANCHOR_MAC_PREFIX, text).toString('hex'),
    sig: crypto.sign(null, Buffer.concat([ANCHOR_SIG_PREFIX, Buffer.from(text)]), keys.epochSigner).toString('hex'),
  };
  fs.writeFileSync(path.join(dataDir, ANCHOR_FILE), JSON.stringify(signed));
  new FileKeyStore(dataDir).write('audit-anchor', Buffer.from(JSON.stringify(signed)));
}

/**
 * The stolen-key-store rewrite (a thief who holds the key store rewrites the tail): records from `fromSeq` on are relabelled into the
 * current epoch (whose keys the thief holds), `edit` forges the first of them, every later record
 * is re-MACed and re-chained, every checkpoint from there re-sealed, both anchors rewritten.
 */
export function relabelIntoCurrentEpoch(
  dataDir: string,
  fromSeq: number,
  edit: (body: Record<string, unknown>) => void,
  options: { dropCertificates?: boolean } = {},
): StolenKeys {
  const keys = stealKeys(dataDir);
  const db = openRaw(dataDir);
  try {
    db.transaction(() => {
      let previous = (db.prepare('SELECT hash FROM audit_records WHERE seq = ?').get(fromSeq - 1) as { hash: Buffer }).hash.toString('hex');
      const rows = db.prepare('SELECT seq, body FROM audit_records WHERE seq >= ? ORDER BY seq').all(fromSeq) as {
        seq: number;
        body: string;
      }[];
      for (const row of rows) {
        const body = JSON.parse(row.body) as Record<string, unknown>;
        if (row.seq === fromSeq) edit(body);
        body.epoch = keys.epoch;
        body.keyId = keys.keyId;
        body.prevHash = previous;
        const text = canonicalText(body);
        const mac = hmac(keys.epochKey, RECORD_MAC_PREFIX, text);
        const hash = recordHash(text, mac);
        db.prepare('UPDATE audit_records SET body = ?, mac = ?, hash = ? WHERE seq = ?').run(text, mac, hash, row.seq);
        previous = hash.toString('hex');
      }
      resealCheckpoints(db, keys, fromSeq);
      if (options.dropCertificates) db.prepare('DELETE FROM audit_epoch_certs').run();
    })();
  } finally {
    db.close();
  }
  rewriteAnchors(dataDir, keys);
  return keys;
}

/** Cuts every record after `lastKept` and every checkpoint sealing past it; optionally the certificates of later epochs too. */
export function cutTail(dataDir: string, lastKept: number, options: { dropCertificatesAfterEpoch?: number } = {}): void {
  const db = openRaw(dataDir);
  try {
    db.prepare('DELETE FROM audit_records WHERE seq > ?').run(lastKept);
    db.prepare('DELETE FROM audit_checkpoints WHERE seq > ?').run(lastKept);
    if (options.dropCertificatesAfterEpoch !== undefined)
      db.prepare('DELETE FROM audit_epoch_certs WHERE epoch > ?').run(options.dropCertificatesAfterEpoch);
  } finally {
    db.close();
  }
}

export function deleteAnchors(dataDir: string): void {
  fs.rmSync(path.join(dataDir, ANCHOR_FILE), { force: true });
  new FileKeyStore(dataDir).erase('audit-anchor');
}

/** The epoch a record was written in, as its body says. */
export function epochOf(dataDir: string, seq: number): number {
  const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
  try {
    return (JSON.parse((db.prepare('SELECT body FROM audit_records WHERE seq = ?').get(seq) as { body: string }).body) as { epoch: number })
      .epoch;
  } finally {
    db.close();
  }
}

/**
 * The outside review's first HIGH finding: the thief keeps every record's epoch label and rewrites
 * records of EARLIER epochs (`edits`, by seq). He cannot make their MACs (those keys are erased), so
 * they keep their old MACs, which only K0 checks; records of the current epoch are re-MACed. He
 * re-chains every record from the first edit on and rebuilds the stored Merkle tree; checkpoints
 * from there that a closed epoch signed (he cannot re-sign them) are deleted, the current epoch's
 * are renumbered, re-linked and re-signed with every key he holds, with their notes; the anchors
 * are rewritten. Editing key.created's checkpointEvery (seq 1) hides the deleted record checkpoints
 * from the spacing rule. `fromSeq` without edits only drops and re-signs the checkpoints from there.
 * The certificates are left alone: he cannot sign one for a past epoch.
 */
export function rewriteClosedEpochs(
  dataDir: string,
  edits: Record<number, (body: Record<string, unknown>) => void>,
  options: { fromSeq?: number } = {},
): StolenKeys {
  const keys = stealKeys(dataDir);
  const fromSeq = options.fromSeq ?? Math.min(...Object.keys(edits).map(Number));
  const db = openRaw(dataDir);
  try {
    db.transaction(() => {
      let previous =
        fromSeq === 1
          ? GENESIS_HASH
          : (db.prepare('SELECT hash FROM audit_records WHERE seq = ?').get(fromSeq - 1) as { hash: Buffer }).hash.toString('hex');
      const rows = db.prepare('SELECT seq, body, mac FROM audit_records WHERE seq >= ? ORDER BY seq').all(fromSeq) as {
        seq: number;
        body: string;
        mac: Buffer;
      }[];
      for (const row of rows) {
        const body = JSON.parse(row.body) as Record<string, unknown>;
        edits[row.seq]?.(body);
        body.prevHash = previous;
        const text = canonicalText(body);
        const current = body.keyId === keys.keyId && body.epoch === keys.epoch;
        const mac = current ? hmac(keys.epochKey, RECORD_MAC_PREFIX, text) : row.mac;
        const hash = recordHash(text, mac);
        db.prepare('UPDATE audit_records SET body = ?, mac = ?, hash = ? WHERE seq = ?').run(text, mac, hash, row.seq);
        previous = hash.toString('hex');
      }
      db.prepare('DELETE FROM audit_tree').run();
      const tree = new AuditTree(db as never);
      tree.catchUp();

      const checkpoints = db.prepare('SELECT cp_seq, seq, body, hash FROM audit_checkpoints ORDER BY cp_seq').all() as {
        cp_seq: number;
        seq: number;
        body: string;
        hash: Buffer;
      }[];
      const kept = checkpoints.filter((cp) => cp.seq < fromSeq);
      const resigned = checkpoints.filter((cp) => {
        const body = JSON.parse(cp.body) as { keyId: string; epoch: number };
        return cp.seq >= fromSeq && body.keyId === keys.keyId && body.epoch === keys.epoch;
      });
      db.prepare('DELETE FROM audit_checkpoints WHERE seq >= ?').run(fromSeq);
      db.prepare('DELETE FROM audit_checkpoint_notes WHERE cp_seq > ?').run(kept.length);
      let previousCp = kept.length ? kept[kept.length - 1]!.hash.toString('hex') : GENESIS_HASH;
      const signer = logNoteSigner(keys.logId, ed25519Raw(crypto.createPublicKey(keys.logSigner)), (message) =>
        crypto.sign(null, message, keys.logSigner),
      );
      resigned.forEach((cp, index) => {
        const cpSeq = kept.length + index + 1;
        const body = JSON.parse(cp.body) as Record<string, unknown>;
        const root = tree.root(cp.seq);
        body.cpSeq = cpSeq;
        body.prevCheckpointHash = previousCp;
        body.headHash = (db.prepare('SELECT hash FROM audit_records WHERE seq = ?').get(cp.seq) as { hash: Buffer }).hash.toString('hex');
        body.rootHash = root.toString('hex');
        const text = canonicalText(body);
        const bytes = Buffer.from(text);
        const mac = hmac(keys.epochKey, CHECKPOINT_MAC_PREFIX, bytes);
        const sig = crypto.sign(null, Buffer.concat([CHECKPOINT_SIG_PREFIX, bytes]), keys.logSigner);
        const epochSig = crypto.sign(null, Buffer.concat([CHECKPOINT_EPOCH_SIG_PREFIX, bytes]), keys.epochSigner);
        const hash = checkpointHash(bytes, mac, sig, epochSig);
        db.prepare('INSERT INTO audit_checkpoints (cp_seq, seq, body, mac, sig, hash, epoch_sig) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
          cpSeq,
          cp.seq,
          text,
          mac,
          sig,
          hash,
          epochSig,
        );
        db.prepare('INSERT INTO audit_checkpoint_notes (cp_seq, size, note) VALUES (?, ?, ?)').run(
          cpSeq,
          cp.seq,
          checkpointNote(keys.logId, cp.seq, root, signer),
        );
        previousCp = hash.toString('hex');
      });
    })();
  } finally {
    db.close();
  }
  rewriteAnchors(dataDir, keys);
  return keys;
}
