import type { Db } from '../store/database.js';
import { ExecutorError } from '../domain/errors.js';
import { consistencyProof, inclusionProof, leafHash, nodesCompletedBy, treeRoot, type NodeReader } from './merkle.js';

/**
 * The audit log as an RFC 9162 Merkle tree, kept in SQLite beside the records. Leaf i (from 0) is
 * record seq i + 1; its leaf data is the record's 32-byte hash, SHA-256(body ‖ mac): the exact
 * stored bytes, so a leaf stands for one record and nothing else. The table holds every complete
 * subtree (level, idx) → hash, written in the transaction that appends the record, so an append
 * costs O(1) amortized and any proof for a tree of n leaves O(log n) reads.
 */

/** The Merkle leaf hash of a record, from its stored 32-byte hash. */
export function recordLeafHash(recordHash: Buffer): Buffer {
  return leafHash(recordHash);
}

/** Records hashed into the tree per transaction while an older log's tree is built. */
const BUILD_CHUNK = 20_000;
/** A log at least this long reports the build's progress. */
const BUILD_PROGRESS_FROM = 100_000;

export type TreeBuildProgress = (built: number, total: number) => void;

export class AuditTree {
  private readonly selectNode;
  private readonly insertNode;
  private readonly selectSize;
  private readonly selectHashes;
  private readonly selectHead;
  readonly read: NodeReader;

  constructor(private readonly db: Db) {
    this.selectNode = db.prepare('SELECT hash FROM audit_tree WHERE level = ? AND idx = ?').pluck();
    this.insertNode = db.prepare('INSERT INTO audit_tree (level, idx, hash) VALUES (?, ?, ?)');
    this.selectSize = db.prepare('SELECT idx FROM audit_tree WHERE level = 0 ORDER BY idx DESC LIMIT 1').pluck();
    this.selectHashes = db.prepare('SELECT seq, hash FROM audit_records WHERE seq > ? AND seq <= ? ORDER BY seq').raw(true);
    this.selectHead = db.prepare('SELECT max(seq) FROM audit_records').pluck();
    this.read = (level, index) => {
      const hash = this.selectNode.get(level, index) as Buffer | undefined;
      if (!hash) {
        throw new ExecutorError('AUDIT_TREE_INCOMPLETE', `The audit log's Merkle tree lacks the subtree at level ${level}, index ${index}: it was damaged or never built. Run \`executor audit verify\`.`, {
          level,
          index,
        });
      }
      return hash;
    };
  }

  /** Leaves in the stored tree (records hashed into it). */
  size(): number {
    const last = this.selectSize.get() as number | undefined;
    return last === undefined ? 0 : last + 1;
  }

  /** Adds record `seq`'s leaf and every subtree it completes. Call inside the transaction that inserts the record. */
  append(seq: number, recordHash: Buffer): void {
    for (const node of nodesCompletedBy(seq - 1, recordLeafHash(recordHash), this.read)) this.insertNode.run(node.level, node.index, node.hash);
  }

  /**
   * Hashes into the tree the records it lacks: an older log's whole history on first open, or a
   * tail some crash left behind. In chunks, each its own transaction, so a crash keeps what was
   * built and the next open goes on from there. Returns the tree size.
   */
  catchUp(onProgress?: TreeBuildProgress): number {
    let size = this.size();
    const head = (this.selectHead.get() as number | null) ?? 0;
    if (size > head) {
      // Records were cut (verify names it, from the checkpoints, anchors and witnesses): the tree follows the records.
      const trim = () => this.db.prepare('DELETE FROM audit_tree WHERE (idx + 1) * (1 << level) > ?').run(head);
      if (this.db.inTransaction) trim();
      else this.db.transaction(trim)();
      size = this.size();
    }
    const total = head;
    const report = total - size >= BUILD_PROGRESS_FROM ? onProgress : undefined;
    while (size < head) {
      const to = Math.min(head, size + BUILD_CHUNK);
      const build = () => {
        // .all(), not an iterator: better-sqlite3 runs no insert on a connection while one of its reads is open.
        for (const [seq, hash] of this.selectHashes.all(size, to) as [number, Buffer][]) {
          if (seq !== size + 1) {
            throw new ExecutorError('AUDIT_TREE_INCOMPLETE', `The audit log has no record ${size + 1} (the next is ${seq}): its Merkle tree cannot be built past it. Run \`executor audit verify\`.`, { seq: size + 1 });
          }
          this.append(seq, hash);
          size = seq;
        }
      };
      if (this.db.inTransaction) build();
      else this.db.transaction(build)();
      report?.(size, total);
    }
    return size;
  }

  /** The root of the tree of the first `size` records. */
  root(size: number): Buffer {
    return treeRoot(size, this.read);
  }

  /** The inclusion proof of record `seq` in the tree of the first `size` records. */
  inclusionProof(seq: number, size: number): Buffer[] {
    return inclusionProof(seq - 1, size, this.read);
  }

  /** The consistency proof from the tree of `size1` records to that of `size2`. */
  consistencyProof(size1: number, size2: number): Buffer[] {
    return consistencyProof(size1, size2, this.read);
  }
}
