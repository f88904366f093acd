import type { Db } from '../../store/database.js';
import { ExecutorError } from '../../domain/errors.js';
import {
  consistencyProof,
  coveringNodes,
  inclusionProof,
  leafHash,
  nodeCount,
  nodePosition,
  nodesCompletedBy,
  sizeOfNodeCount,
  treeRoot,
  type NodeReader,
  type TreeNode,
} from '../format/merkle.js';

/**
 * The audit log as an RFC 9162 Merkle tree, kept in SQLite beside the records. Leaf i (from 0) is
 * record seq i + 1; its leaf data is the record's 32-byte hash, SHA-256(body ‖ mac): the exact
 * stored bytes, so a leaf stands for one record and nothing else. The table holds every complete
 * subtree by its position (merkle.ts nodePosition: the order appends complete them), written in
 * the transaction that appends the record: an append costs O(1) amortized and only ever adds rows
 * at the end, and any proof for a tree of n leaves costs O(log n) reads.
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

/**
 * The right edge of the tree of `size` leaves (its covering complete subtrees, largest first): all
 * that completing the next nodes reads. Tagged with the hash of record `size`, the last leaf: the
 * next append may use it only if the log's head is still that record, so a rolled-back
 * transaction, a cut tail or another writer makes it read the table again.
 */
interface Frontier {
  size: number;
  lastRecordHash: string;
  nodes: TreeNode[];
}

/** Every append completes 1 + (trailing one bits of its leaf index) subtrees: one INSERT takes them all. */
const MAX_NODES_PER_APPEND = 64;

export class AuditTree {
  private readonly selectNode;
  private readonly selectSize;
  private readonly selectHashes;
  private readonly selectHead;
  private readonly insertNodes = new Map<number, ReturnType<Db['prepare']>>();
  private frontier: Frontier | undefined;
  readonly read: NodeReader;

  constructor(private readonly db: Db) {
    this.selectNode = db.prepare('SELECT hash FROM audit_tree WHERE pos = ?').pluck();
    this.selectSize = db.prepare('SELECT max(pos) FROM audit_tree').pluck();
    this.selectHashes = db.prepare('SELECT seq, hash FROM audit_records WHERE seq > ? AND seq <= ? ORDER BY seq').raw(true);
    this.selectHead = db.prepare('SELECT max(seq) FROM audit_records').pluck();
    this.read = (level, index) => {
      const hash = this.selectNode.get(nodePosition(level, index)) as Buffer | undefined;
      if (!hash) {
        throw new ExecutorError(
          'AUDIT_TREE_INCOMPLETE',
          `The audit log's Merkle tree lacks the subtree at level ${level}, index ${index}: it was damaged or never built. Run \`executor audit verify\`.`,
          {
            level,
            index,
          },
        );
      }
      return hash;
    };
  }

  /** Leaves in the stored tree (records hashed into it). */
  size(): number {
    const last = this.selectSize.get() as number | null;
    if (last === null) return 0;
    // Rows past a whole tree (never written by an append, whose nodes commit together) count for nothing.
    let size = sizeOfNodeCount(last + 1) ?? Math.floor((last + 1) / 2);
    while (nodeCount(size) > last + 1) size--;
    return size;
  }

  /**
   * Adds record `seq`'s leaf and every subtree it completes. Call inside the transaction that
   * inserts the record. `previousHash` (hex), the hash of record seq − 1 as the log's head reads it,
   * lets the append take the left siblings from the edge it kept instead of reading them back.
   */
  append(seq: number, recordHash: Buffer, previousHash?: string): void {
    const index = seq - 1;
    const kept =
      previousHash !== undefined && this.frontier?.size === index && this.frontier.lastRecordHash === previousHash
        ? this.frontier
        : undefined;
    this.frontier = undefined;
    const nodes = nodesCompletedBy(index, recordLeafHash(recordHash), kept ? keptReader(kept.nodes, this.read) : this.read);
    this.insertAll(nodeCount(index), nodes);
    if (previousHash === undefined) return;
    // Set only once the rows are in: a failed insert leaves no edge to trust.
    const edge = kept
      ? kept.nodes
      : coveringNodes(0, index).map(({ level, index: at }) => ({ level, index: at, hash: this.read(level, at) }));
    this.frontier = {
      size: seq,
      lastRecordHash: recordHash.toString('hex'),
      nodes: [...edge.slice(0, edge.length - (nodes.length - 1)), nodes[nodes.length - 1]!],
    };
  }

  private insertAll(firstPos: number, nodes: TreeNode[]): void {
    if (nodes.length > MAX_NODES_PER_APPEND)
      throw new RangeError(`An append completes at most ${MAX_NODES_PER_APPEND} subtrees, not ${nodes.length}.`);
    let insert = this.insertNodes.get(nodes.length);
    if (!insert) {
      insert = this.db.prepare(
        `INSERT INTO audit_tree (pos, hash) VALUES ${Array.from({ length: nodes.length }, () => '(?, ?)').join(', ')}`,
      );
      this.insertNodes.set(nodes.length, insert);
    }
    const values: (number | Buffer)[] = [];
    nodes.forEach((node, at) => values.push(firstPos + at, node.hash));
    insert.run(values);
  }

  /**
   * Hashes into the tree the records it lacks: an older log's whole history on first open, or a
   * tail some crash left behind. In chunks, each its own transaction, so a crash keeps what was
   * built and the next open goes on from there. Returns the tree size.
   */
  catchUp(onProgress?: TreeBuildProgress, tuning: { chunk?: number; progressFrom?: number } = {}): number {
    const chunk = tuning.chunk ?? BUILD_CHUNK;
    let size = this.size();
    const head = (this.selectHead.get() as number | null) ?? 0;
    if (size > head || ((this.selectSize.get() as number | null) ?? -1) + 1 > nodeCount(size)) {
      // Records were cut (verify names it, from the checkpoints, anchors and witnesses): the tree follows the records.
      const keep = nodeCount(Math.min(size, head));
      const trim = () => this.db.prepare('DELETE FROM audit_tree WHERE pos >= ?').run(keep);
      if (this.db.inTransaction) trim();
      else this.db.transaction(trim)();
      size = this.size();
    }
    const total = head;
    const report = total - size >= (tuning.progressFrom ?? BUILD_PROGRESS_FROM) ? onProgress : undefined;
    while (size < head) {
      const to = Math.min(head, size + chunk);
      const build = () => {
        // .all(), not an iterator: better-sqlite3 runs no insert on a connection while one of its reads is open.
        for (const [seq, hash] of this.selectHashes.all(size, to) as [number, Buffer][]) {
          if (seq !== size + 1) {
            throw new ExecutorError(
              'AUDIT_TREE_INCOMPLETE',
              `The audit log has no record ${size + 1} (the next is ${seq}): its Merkle tree cannot be built past it. Run \`executor audit verify\`.`,
              { seq: size + 1 },
            );
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

/** Reads a left sibling from the kept edge, or from the table when the edge does not hold it. */
function keptReader(edge: readonly TreeNode[], table: NodeReader): NodeReader {
  return (level, index) => {
    for (let at = edge.length - 1; at >= 0; at--) {
      const node = edge[at]!;
      if (node.level === level && node.index === index) return node.hash;
      if (node.level > level) break;
    }
    return table(level, index);
  };
}
