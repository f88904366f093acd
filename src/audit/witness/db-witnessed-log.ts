import type { Db } from '../../store/database.js';
import { AuditTree, recordLeafHash } from '../log/audit-tree.js';
import { latestCheckpointNote, logNoteVerifier, logOrigin } from '../format/checkpoint-note.js';
import { CompactRange, emptyRoot, nodeHash } from '../format/merkle.js';
import { parseNote, type NoteVerifier } from '../format/signed-note.js';
import { parseCheckpointText } from '../format/tlog-checkpoint.js';
import type { LocalCheckpoint, WitnessedLog } from './witnessed-log.js';

export interface DbWitnessedLogOptions {
  /**
   * Compute the root at a witness's size from the records themselves, not from the stored tree: at
   * verify the tree table is as open to a rewrite as the records, and only the records are what is
   * vouched for. Publishing reads the stored tree (O(log n)); a witness refuses what it does not fit.
   */
  rootsFromRecords?: boolean;
}

/** The log of a database as the witness code sees it; undefined while it holds no record. */
export function dbWitnessedLog(db: Db, options: DbWitnessedLogOptions = {}): WitnessedLog | undefined {
  const first = db.prepare('SELECT body FROM audit_records ORDER BY seq LIMIT 1').pluck().get() as string | undefined;
  if (first === undefined) return undefined;
  const logId = String((JSON.parse(first) as { logId?: unknown }).logId);
  const tree = new AuditTree(db);
  const headSeq = () => (db.prepare('SELECT max(seq) FROM audit_records').pluck().get() as number | null) ?? 0;
  /** RFC 9162 root of the first `size` records, streamed: a stack of complete subtrees, never the whole leaf list. */
  const rootFromRecords = (size: number): Buffer => {
    const stack: { height: number; hash: Buffer }[] = [];
    let count = 0;
    for (const hash of db.prepare('SELECT hash FROM audit_records WHERE seq <= ? ORDER BY seq').pluck().iterate(size) as Iterable<Buffer>) {
      let node = { height: 0, hash: recordLeafHash(hash) };
      while (stack.length > 0 && stack[stack.length - 1]!.height === node.height)
        node = { height: node.height + 1, hash: nodeHash(stack.pop()!.hash, node.hash) };
      stack.push(node);
      count += 1;
    }
    // Fewer records than asked for: the caller compared sizes first; a gap in seq is verify's to report.
    if (count !== size) throw new Error(`the log holds ${count} records up to seq ${size}`);
    if (stack.length === 0) return emptyRoot();
    let root = stack.pop()!.hash;
    while (stack.length > 0) root = nodeHash(stack.pop()!.hash, root);
    return root;
  };
  /** The roots at several sizes from one read of the records: a git witness's history may state thousands. */
  const rootsFromRecordsAt = (sizes: readonly number[]): Map<number, Buffer> => {
    const wanted = [...new Set(sizes)].sort((a, b) => a - b);
    const roots = new Map<number, Buffer>();
    const range = CompactRange.empty(0);
    let next = 0;
    while (next < wanted.length && wanted[next] === 0) roots.set(wanted[next++]!, emptyRoot());
    if (next === wanted.length) return roots;
    const last = wanted[wanted.length - 1]!;
    for (const hash of db.prepare('SELECT hash FROM audit_records WHERE seq <= ? ORDER BY seq').pluck().iterate(last) as Iterable<Buffer>) {
      range.append(recordLeafHash(hash));
      while (next < wanted.length && wanted[next] === range.end) roots.set(wanted[next++]!, range.root());
    }
    if (next < wanted.length) throw new Error(`the log holds ${range.end} records up to seq ${last}`);
    return roots;
  };
  // Every key chain's log key: a note on a remote may be older than the last rotation.
  const publicKeys = db
    .prepare("SELECT json_extract(body, '$.args.publicKey') FROM audit_records WHERE action IN ('key.created', 'key.rotated') ORDER BY seq")
    .pluck()
    .all() as (string | null)[];
  const verifiers: NoteVerifier[] = [];
  for (const key of publicKeys) {
    if (typeof key !== 'string') continue;
    try {
      const verifier = logNoteVerifier(logId, Buffer.from(key, 'base64'));
      if (!verifiers.some((known) => known.keyHash === verifier.keyHash)) verifiers.push(verifier);
    } catch {
      /* a record whose key does not parse: verify reports it; it checks no note here */
    }
  }
  return {
    origin: logOrigin(logId),
    verifiers,
    size: options.rootsFromRecords ? headSeq : () => tree.size(),
    rootAt: (size) => (options.rootsFromRecords ? rootFromRecords(size) : tree.root(size)),
    rootsAt: (sizes) =>
      options.rootsFromRecords ? rootsFromRecordsAt(sizes) : new Map([...new Set(sizes)].map((size) => [size, tree.root(size)])),
    consistencyProof: (from, to) => (from === 0 || from === to ? [] : tree.consistencyProof(from, to)),
    logKeyHandovers: () =>
      (
        db
          .prepare("SELECT json_extract(body, '$.args.logKeyHandover') FROM audit_records WHERE action = 'key.rotated' ORDER BY seq")
          .pluck()
          .all() as unknown[]
      ).filter((note): note is string => typeof note === 'string'),
    newestCheckpoint: (): LocalCheckpoint | undefined => {
      const stored = latestCheckpointNote(db);
      if (!stored) return undefined;
      const checkpoint = parseCheckpointText(parseNote(stored.note).text);
      return { size: checkpoint.size, rootHash: checkpoint.rootHash, note: stored.note };
    },
  };
}
