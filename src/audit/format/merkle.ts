import crypto from 'node:crypto';
import { sha256 } from './one-shot-sha256.js';

/**
 * The Merkle tree of RFC 9162 §2.1 (the same as RFC 6962 §2.1) over SHA-256: pure functions, no
 * storage. Proofs read the hashes of complete subtrees through a `NodeReader`, so the same code
 * serves a tree kept in SQLite (one read per node) and a tree held in memory.
 *
 * A complete subtree is named by (level, index): it covers leaves [index·2^level, (index+1)·2^level).
 * Level 0 holds the leaf hashes. The root of a tree whose size is not a power of two is not a
 * complete subtree: it is hashed on demand from O(log n) complete ones.
 */

export const HASH_SIZE = 32;
const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

/** Reads the hash of the complete subtree at (level, index); it must exist. */
export type NodeReader = (level: number, index: number) => Buffer;

export interface TreeNode {
  level: number;
  index: number;
  hash: Buffer;
}

/** The largest tree or leaf index the functions accept: sizes stay exact in a JS number. */
export const MAX_TREE_SIZE = Number.MAX_SAFE_INTEGER;

/** MTH({}) = SHA-256() */
export function emptyRoot(): Buffer {
  return crypto.createHash('sha256').digest();
}

// Every append and every verified record hashes a leaf and about one node: into reused scratch
// space, so no concatenation is allocated per hash (one-shot-sha256.ts says why the digest is fast).
const leafScratch = Buffer.alloc(1 + HASH_SIZE);
const nodeScratch = Buffer.alloc(1 + 2 * HASH_SIZE);
nodeScratch[0] = 0x01;

/** MTH({d}) = SHA-256(0x00 ‖ d) */
export function leafHash(data: Buffer | readonly Buffer[]): Buffer {
  if (Buffer.isBuffer(data) && data.length === HASH_SIZE) {
    data.copy(leafScratch, 1);
    return sha256(leafScratch);
  }
  return sha256(Buffer.concat([LEAF_PREFIX, ...(Array.isArray(data) ? data : [data as Buffer])]));
}

/** The leaf hash of 32 bytes given as 64 hex digits (a record hash as verify computes it). */
export function leafHashOfHex(hex: string): Buffer {
  if (leafScratch.write(hex, 1, HASH_SIZE, 'hex') !== HASH_SIZE || hex.length !== 2 * HASH_SIZE)
    throw new RangeError('A leaf hash takes 64 hex digits.');
  return sha256(leafScratch);
}

/** SHA-256(0x01 ‖ left ‖ right) */
export function nodeHash(left: Buffer, right: Buffer): Buffer {
  if (left.length === HASH_SIZE && right.length === HASH_SIZE) {
    left.copy(nodeScratch, 1);
    right.copy(nodeScratch, 1 + HASH_SIZE);
    return sha256(nodeScratch);
  }
  return sha256(Buffer.concat([NODE_PREFIX, left, right]));
}

function isSize(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isHash(value: unknown): value is Buffer {
  return Buffer.isBuffer(value) && value.length === HASH_SIZE;
}

function checkSize(name: string, value: number): void {
  if (!isSize(value)) throw new RangeError(`${name} must be a whole number from 0 to ${MAX_TREE_SIZE}, not ${String(value)}.`);
}

/** The largest power of two strictly below n (n ≥ 2): the RFC's split point k. */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** Exact for every safe integer: log2 alone rounds 2^50 + 1 to 50. */
function isPowerOfTwo(n: number): boolean {
  return n > 0 && 2 ** Math.round(Math.log2(n)) === n;
}

/**
 * MTH(D[start:end]) for a subtree the RFC's recursion reaches: `start` is a multiple of the
 * largest power of two ≥ end − start. A complete one is a single read; the rightmost,
 * incomplete one is hashed from its complete parts.
 */
export function subtreeRoot(start: number, end: number, read: NodeReader): Buffer {
  const size = end - start;
  if (size <= 0) throw new RangeError(`A subtree holds at least one leaf; [${start}, ${end}) holds none.`);
  if (isPowerOfTwo(size)) {
    const level = Math.round(Math.log2(size));
    return read(level, start / size);
  }
  const k = splitPoint(size);
  return nodeHash(subtreeRoot(start, start + k, read), subtreeRoot(start + k, end, read));
}

/** The root hash of the tree of the first `size` leaves. */
export function treeRoot(size: number, read: NodeReader): Buffer {
  checkSize('The tree size', size);
  return size === 0 ? emptyRoot() : subtreeRoot(0, size, read);
}

/** The root of a list of leaf hashes, held in memory. */
export function rootOfLeaves(leafHashes: readonly Buffer[]): Buffer {
  return treeRoot(leafHashes.length, memoryNodeReader(leafHashes));
}

/**
 * PATH(m, D[n]) of RFC 9162 §2.1.3.1: the audit path of leaf `index` in the tree of `size`
 * leaves, from the leaf's sibling up. O(log n) reads.
 */
export function inclusionProof(index: number, size: number, read: NodeReader): Buffer[] {
  checkSize('The leaf index', index);
  checkSize('The tree size', size);
  if (index >= size) throw new RangeError(`Leaf ${index} is not in a tree of ${size} leaves.`);
  const path: Buffer[] = [];
  let start = 0;
  let end = size;
  while (end - start > 1) {
    const k = splitPoint(end - start);
    if (index < start + k) {
      path.push(subtreeRoot(start + k, end, read));
      end = start + k;
    } else {
      path.push(subtreeRoot(start, start + k, read));
      start += k;
    }
  }
  return path.reverse();
}

/**
 * PROOF(m, D[n]) of RFC 9162 §2.1.4.1: proves the tree of `size1` leaves is a prefix of the
 * tree of `size2`. Empty when the sizes are equal; 0 < size1 ≤ size2. O(log n) reads.
 */
export function consistencyProof(size1: number, size2: number, read: NodeReader): Buffer[] {
  checkSize('The older tree size', size1);
  checkSize('The newer tree size', size2);
  if (size1 === 0 || size1 > size2) throw new RangeError(`No consistency proof exists from a tree of ${size1} leaves to one of ${size2}.`);
  const proof: Buffer[] = [];
  // SUBPROOF(m, D[start:end], b), unrolled: each step appends the sibling the verifier needs.
  let m = size1;
  let start = 0;
  let end = size2;
  let haveRoot1 = true;
  while (m !== end - start) {
    const k = splitPoint(end - start);
    if (m <= k) {
      proof.push(subtreeRoot(start + k, end, read));
      end = start + k;
    } else {
      proof.push(subtreeRoot(start, start + k, read));
      start += k;
      m -= k;
      haveRoot1 = false;
    }
  }
  if (!haveRoot1) proof.push(subtreeRoot(start, end, read));
  return proof.reverse();
}

/**
 * RFC 9162 §2.1.3.2: the root hash an inclusion proof leads to, or undefined when the proof
 * cannot belong to that index and size (wrong length, bad hash sizes, index out of range).
 */
export function rootFromInclusionProof(index: number, size: number, leaf: Buffer, proof: readonly Buffer[]): Buffer | undefined {
  if (!isSize(index) || !isSize(size) || index >= size || !isHash(leaf) || !Array.isArray(proof)) return undefined;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (!isHash(p) || sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : undefined;
}

/** True when `proof` shows the leaf with hash `leaf` at `index` in the tree of `size` leaves whose root is `root`. */
export function verifyInclusion(index: number, size: number, leaf: Buffer, proof: readonly Buffer[], root: Buffer): boolean {
  if (!isHash(root)) return false;
  const computed = rootFromInclusionProof(index, size, leaf, proof);
  return computed !== undefined && crypto.timingSafeEqual(computed, root);
}

/**
 * RFC 9162 §2.1.4.2: true when `proof` shows the tree (size1, root1) is a prefix of (size2, root2).
 * As transparency-dev/merkle does, a proof from the empty tree is refused: it proves nothing.
 */
export function verifyConsistency(size1: number, size2: number, root1: Buffer, root2: Buffer, proof: readonly Buffer[]): boolean {
  if (!isSize(size1) || !isSize(size2) || size1 === 0 || size1 > size2 || !isHash(root1) || !isHash(root2) || !Array.isArray(proof))
    return false;
  if (!proof.every(isHash)) return false;
  if (size1 === size2) return proof.length === 0 && crypto.timingSafeEqual(root1, root2);
  if (proof.length === 0) return false;
  const path = isPowerOfTwo(size1) ? [root1, ...proof] : [...proof];
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(root1) && sr.equals(root2);
}

/**
 * The complete subtrees that appending leaf `index` with hash `leaf` closes: the leaf itself,
 * then each parent whose left sibling was already complete (read through `read`). Amortized two
 * nodes per leaf; they are what a store keeps so proofs need O(log n) reads.
 */
export function nodesCompletedBy(index: number, leaf: Buffer, read: NodeReader): TreeNode[] {
  checkSize('The leaf index', index);
  const nodes: TreeNode[] = [{ level: 0, index, hash: leaf }];
  let hash = leaf;
  let at = index;
  let level = 0;
  while (at % 2 === 1) {
    hash = nodeHash(read(level, at - 1), hash);
    at = (at - 1) / 2;
    level++;
    nodes.push({ level, index: at, hash });
  }
  return nodes;
}

/** A NodeReader over leaf hashes held in memory, computing each complete subtree once. */
export function memoryNodeReader(leafHashes: readonly Buffer[]): NodeReader {
  const levels: Buffer[][] = [leafHashes as Buffer[]];
  for (let below = levels[0]!; below.length > 1;) {
    const above: Buffer[] = [];
    for (let i = 0; i + 1 < below.length; i += 2) above.push(nodeHash(below[i]!, below[i + 1]!));
    levels.push(above);
    below = above;
  }
  return (level, index) => {
    const hash = levels[level]?.[index];
    if (!hash) throw new RangeError(`No complete subtree at level ${level}, index ${index} among ${leafHashes.length} leaves.`);
    return hash;
  };
}

/**
 * The complete subtrees that cover leaves [begin, end), fewest first-to-last (transparency-dev's
 * compact range): each is the largest aligned power of two that fits where the previous ends.
 */
export function coveringNodes(begin: number, end: number): { level: number; index: number }[] {
  checkSize('The range start', begin);
  checkSize('The range end', end);
  if (begin > end) throw new RangeError(`A range cannot end (${end}) before it begins (${begin}).`);
  const nodes: { level: number; index: number }[] = [];
  for (let at = begin; at < end;) {
    let size = 1;
    while (at % (size * 2) === 0 && at + size * 2 <= end) size *= 2;
    nodes.push({ level: Math.round(Math.log2(size)), index: at / size });
    at += size;
  }
  return nodes;
}

/**
 * A run of consecutive leaves [begin, end) held as the hashes of its covering complete subtrees:
 * O(log n) hashes whatever its length. Ranges of neighbouring leaves merge, so a log scanned in
 * parts by several workers still yields the root of every prefix.
 */
export class CompactRange {
  private constructor(
    readonly begin: number,
    private endAt: number,
    private readonly nodes: TreeNode[],
  ) {}

  static empty(begin: number): CompactRange {
    checkSize('The range start', begin);
    return new CompactRange(begin, begin, []);
  }

  /** A range from the hashes of its covering nodes, in order (as `hashes()` gave them). */
  static fromHashes(begin: number, end: number, hashes: readonly Buffer[]): CompactRange {
    const covering = coveringNodes(begin, end);
    if (covering.length !== hashes.length || !hashes.every(isHash)) {
      throw new RangeError(
        `The range [${begin}, ${end}) is covered by ${covering.length} hashes of 32 bytes; ${hashes.length} were given.`,
      );
    }
    return new CompactRange(
      begin,
      end,
      covering.map((node, at) => ({ ...node, hash: hashes[at]! })),
    );
  }

  get end(): number {
    return this.endAt;
  }

  /** Adds the next leaf (its leaf hash). */
  append(leaf: Buffer): void {
    this.push({ level: 0, index: this.endAt, hash: leaf });
    this.endAt++;
  }

  /** Joins the range that starts where this one ends. */
  merge(next: CompactRange): void {
    if (next.begin !== this.endAt) throw new RangeError(`A range ending at ${this.endAt} cannot take one that begins at ${next.begin}.`);
    for (const node of next.nodes) this.push(node);
    this.endAt = next.endAt;
  }

  private push(node: TreeNode): void {
    let current = node;
    for (;;) {
      const last = this.nodes[this.nodes.length - 1];
      if (!last || last.level !== current.level || current.index % 2 !== 1 || last.index !== current.index - 1) break;
      this.nodes.pop();
      current = { level: current.level + 1, index: last.index / 2, hash: nodeHash(last.hash, current.hash) };
    }
    this.nodes.push(current);
  }

  hashes(): Buffer[] {
    return this.nodes.map((node) => node.hash);
  }

  clone(): CompactRange {
    return new CompactRange(this.begin, this.endAt, [...this.nodes]);
  }

  /** The root of the tree of leaves [0, end); only a range that begins at leaf 0 has one. */
  root(): Buffer {
    if (this.begin !== 0) throw new RangeError(`A range that begins at leaf ${this.begin} has no tree root.`);
    if (this.nodes.length === 0) return emptyRoot();
    let hash = this.nodes[this.nodes.length - 1]!.hash;
    for (let at = this.nodes.length - 2; at >= 0; at--) hash = nodeHash(this.nodes[at]!.hash, hash);
    return hash;
  }
}

/**
 * Where the complete subtree (level, index) stands in the order appends complete them (its
 * Merkle Mountain Range position, from 0): leaf i, then each parent it completes. A store keyed by
 * it only ever appends at the end, and the first `nodeCount(n)` positions are the tree of n leaves.
 */
export function nodePosition(level: number, index: number): number {
  const lastLeaf = (index + 1) * 2 ** level - 1;
  return 2 * lastLeaf - popcount(lastLeaf) + level;
}

/** How many complete subtrees a tree of `size` leaves holds: 2n − popcount(n). */
export function nodeCount(size: number): number {
  return 2 * size - popcount(size);
}

/** The tree size whose complete subtrees fill positions [0, count), or undefined when no size does. */
export function sizeOfNodeCount(count: number): number | undefined {
  for (let size = Math.floor(count / 2); size <= Math.floor(count / 2) + 64; size++) if (nodeCount(size) === count) return size;
  return undefined;
}

function popcount(value: number): number {
  let bits = 0;
  for (let rest = value; rest > 0; rest = Math.floor(rest / 2)) bits += rest % 2;
  return bits;
}
