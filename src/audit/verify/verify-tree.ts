import { CompactRange, leafHashOfHex } from '../format/merkle.js';

/**
 * Verify recomputes the Merkle tree from the records themselves, never from the stored tree: each
 * part of a (parallel) scan keeps a compact range of the leaves it read, snapshots it at every
 * checkpoint seq, and the parts are joined in order into the root at each of those seqs.
 */

/** A compact range as plain data (hex), so it crosses from a worker thread intact. */
export interface TreeSnapshot {
  begin: number;
  end: number;
  hashes: string[];
}

/** What one part of a scan kept of the tree: its whole range, and a snapshot at each checkpoint seq it passed. */
export interface ScannedTree {
  tree: TreeSnapshot | null;
  treesAt: Record<number, TreeSnapshot>;
}

export class RangeTreeAccumulator {
  private range: CompactRange | undefined;

  /** Adds the record at `seq` (leaves must come in order) by its record hash (hex). */
  add(seq: number, recordHashHex: string): void {
    this.range ??= CompactRange.empty(seq - 1);
    this.range.append(leafHashOfHex(recordHashHex));
  }

  snapshot(): TreeSnapshot | null {
    return this.range ? snapshotOf(this.range) : null;
  }
}

function snapshotOf(range: CompactRange): TreeSnapshot {
  return { begin: range.begin, end: range.end, hashes: range.hashes().map((hash) => hash.toString('hex')) };
}

function rangeOf(snapshot: TreeSnapshot): CompactRange {
  return CompactRange.fromHashes(
    snapshot.begin,
    snapshot.end,
    snapshot.hashes.map((hash) => Buffer.from(hash, 'hex')),
  );
}

/**
 * The root (hex) of records 1..seq for every seq a part snapshotted, joining the parts in order.
 * Empty when the scan does not start at record 1 and `before` (the tree of the records before it) is not given.
 */
export function treeRootsOf(parts: readonly ScannedTree[], before?: TreeSnapshot): Map<number, string> {
  const roots = new Map<number, string>();
  let prefix: CompactRange | undefined;
  if (before) {
    try {
      if (before.begin === 0) prefix = rangeOf(before);
    } catch {
      // Hashes that do not cover [0, end): no roots can be recomputed, and verify says so.
      return roots;
    }
  }
  for (const part of parts) {
    if (!part.tree) continue;
    if (!prefix) {
      if (part.tree.begin !== 0) return roots;
      prefix = CompactRange.empty(0);
    }
    // A seam that does not meet: the scan's own finding (DELETED, INSERTED…) says why; stop here.
    if (part.tree.begin !== prefix.end) return roots;
    for (const [seq, snapshot] of Object.entries(part.treesAt)) {
      const upTo = prefix.clone();
      upTo.merge(rangeOf(snapshot));
      roots.set(Number(seq), upTo.root().toString('hex'));
    }
    prefix.merge(rangeOf(part.tree));
  }
  return roots;
}
