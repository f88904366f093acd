import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CompactRange,
  consistencyProof,
  coveringNodes,
  emptyRoot,
  inclusionProof,
  leafHash,
  memoryNodeReader,
  nodeCount,
  nodeHash,
  nodePosition,
  nodesCompletedBy,
  rootFromInclusionProof,
  rootOfLeaves,
  sizeOfNodeCount,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
  type NodeReader,
} from '../../../../src/audit/format/merkle.js';

const hex = (value: string) => Buffer.from(value, 'hex');
const b64 = (value: string) => Buffer.from(value, 'base64');

// transparency-dev/merkle testonly/constants.go: the leaves of RFC 6962's example tree, its complete subtrees and its roots.
const LEAF_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map(hex);
const NODE_HASHES = [
  [
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
    '0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7',
    '07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7',
    'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    '4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658',
    'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
    '46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1',
  ],
  [
    'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
    '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
    'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
  ],
  ['d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'],
  ['5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328'],
];
const ROOT_HASHES = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

interface InclusionProbe {
  file: string;
  leafIdx: number;
  treeSize: number;
  root: string | null;
  leafHash: string | null;
  proof: string[] | null;
  desc: string;
  wantErr: boolean;
}
interface ConsistencyProbe {
  file: string;
  size1: number;
  size2: number;
  root1: string | null;
  root2: string | null;
  proof: string[] | null;
  desc: string;
  wantErr: boolean;
}
const probes = JSON.parse(readFileSync(new URL('../../../fixtures/merkle/transparency-dev-probes.json', import.meta.url), 'utf8')) as {
  inclusion: InclusionProbe[];
  consistency: ConsistencyProbe[];
};

/** Where this module is stricter than Go's: a root that is not 32 bytes is never a SHA-256 root. */
const STRICTER_THAN_GO = new Set(['testdata/consistency/additional/sizes-are-equal-one-and-proof-is-empty.json']);

// The RFC 9162 §2.1 definitions, recursive and literal, to hold the iterative code to.
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}
function refRoot(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return emptyRoot();
  if (leaves.length === 1) return leaves[0]!;
  const k = split(leaves.length);
  return nodeHash(refRoot(leaves.slice(0, k)), refRoot(leaves.slice(k)));
}
function refPath(m: number, leaves: Buffer[]): Buffer[] {
  if (leaves.length <= 1) return [];
  const k = split(leaves.length);
  return m < k
    ? [...refPath(m, leaves.slice(0, k)), refRoot(leaves.slice(k))]
    : [...refPath(m - k, leaves.slice(k)), refRoot(leaves.slice(0, k))];
}
function refSubproof(m: number, leaves: Buffer[], b: boolean): Buffer[] {
  const n = leaves.length;
  if (m === n) return b ? [] : [refRoot(leaves)];
  const k = split(n);
  return m <= k
    ? [...refSubproof(m, leaves.slice(0, k), b), refRoot(leaves.slice(k))]
    : [...refSubproof(m - k, leaves.slice(k), false), refRoot(leaves.slice(0, k))];
}

const generated = (count: number) => Array.from({ length: count }, (_, index) => leafHash(Buffer.from(`record ${index}`)));
const hexes = (hashes: Buffer[]) => hashes.map((hash) => hash.toString('hex'));

describe('merkle hashing (RFC 9162 §2.1)', () => {
  it('hashes the empty tree, a leaf and a node as RFC 6962 does', () => {
    expect(emptyRoot().toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(leafHash(Buffer.alloc(0)).toString('hex')).toBe('6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d');
    expect(leafHash(Buffer.from('L123456')).toString('hex')).toBe('395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56');
    expect(nodeHash(Buffer.from('N123'), Buffer.from('N456')).toString('hex')).toBe(
      'aa217fe888e47007fa15edab33c2b492a722cb106c64667fc2b044444de66bbb',
    );
  });

  it('a leaf given in parts hashes as their concatenation', () => {
    expect(leafHash([Buffer.from('L123'), Buffer.from('456')]).equals(leafHash(Buffer.from('L123456')))).toBe(true);
  });

  it('builds the reference tree: every complete subtree and the root of every size', () => {
    const leaves = LEAF_INPUTS.map((input) => leafHash(input));
    const read = memoryNodeReader(leaves);
    NODE_HASHES.forEach((level, height) => level.forEach((hash, index) => expect(read(height, index).toString('hex')).toBe(hash)));
    for (let size = 0; size <= 8; size++) {
      expect(treeRoot(size, read).toString('hex')).toBe(ROOT_HASHES[size]);
      expect(rootOfLeaves(leaves.slice(0, size)).toString('hex')).toBe(ROOT_HASHES[size]);
    }
  });

  it('nodesCompletedBy, leaf by leaf, stores exactly the complete subtrees', () => {
    const leaves = LEAF_INPUTS.map((input) => leafHash(input));
    const stored = new Map<string, Buffer>();
    const read: NodeReader = (level, index) => stored.get(`${level}/${index}`)!;
    leaves.forEach((leaf, index) => {
      for (const node of nodesCompletedBy(index, leaf, read)) stored.set(`${node.level}/${node.index}`, node.hash);
      expect(treeRoot(index + 1, read).toString('hex')).toBe(ROOT_HASHES[index + 1]);
    });
    expect(stored.size).toBe(8 + 4 + 2 + 1);
    NODE_HASHES.forEach((level, height) =>
      level.forEach((hash, index) => expect(stored.get(`${height}/${index}`)?.toString('hex')).toBe(hash)),
    );
  });
});

describe('merkle proofs against the reference definitions', () => {
  const leaves = generated(70);
  const read = memoryNodeReader(leaves);

  it('inclusion proofs equal PATH(m, D[n]) and verify, for every leaf of every size up to 70', () => {
    for (let size = 1; size <= leaves.length; size++) {
      const root = refRoot(leaves.slice(0, size));
      expect(treeRoot(size, read).equals(root)).toBe(true);
      for (let index = 0; index < size; index++) {
        const proof = inclusionProof(index, size, read);
        expect(hexes(proof)).toEqual(hexes(refPath(index, leaves.slice(0, size))));
        expect(verifyInclusion(index, size, leaves[index]!, proof, root)).toBe(true);
      }
    }
  });

  it('consistency proofs equal PROOF(m, D[n]) and verify, for every pair of sizes up to 70', () => {
    for (let size2 = 1; size2 <= leaves.length; size2++) {
      const root2 = refRoot(leaves.slice(0, size2));
      for (let size1 = 1; size1 <= size2; size1++) {
        const proof = consistencyProof(size1, size2, read);
        expect(hexes(proof)).toEqual(size1 === size2 ? [] : hexes(refSubproof(size1, leaves.slice(0, size2), true)));
        expect(verifyConsistency(size1, size2, refRoot(leaves.slice(0, size1)), root2, proof)).toBe(true);
      }
    }
  });

  it('a proof is refused for another leaf, another index, another size or with any one bit flipped', () => {
    const size = 37;
    const root = treeRoot(size, read);
    for (const index of [0, 1, 17, 31, 32, 35, 36]) {
      const proof = inclusionProof(index, size, read);
      expect(verifyInclusion(index, size, leaves[index + 1]!, proof, root)).toBe(false);
      expect(verifyInclusion(index ^ 1, size, leaves[index]!, proof, root)).toBe(false);
      // The size only binds through the shape of the path: a size of another shape must fail.
      expect(verifyInclusion(index, size * 2, leaves[index]!, proof, root)).toBe(false);
      expect(verifyInclusion(index, size, leaves[index]!, proof.slice(1), root)).toBe(false);
      expect(verifyInclusion(index, size, leaves[index]!, [...proof, root], root)).toBe(false);
      proof.forEach((_, at) => {
        const flipped = proof.map((hash) => Buffer.from(hash));
        const hash = flipped[at]!;
        hash[at % 32] = hash[at % 32]! ^ 1;
        expect(verifyInclusion(index, size, leaves[index]!, flipped, root)).toBe(false);
      });
    }
    for (const [size1, size2] of [
      [1, 37],
      [16, 37],
      [17, 37],
      [36, 37],
    ] as const) {
      const proof = consistencyProof(size1, size2, read);
      const root1 = treeRoot(size1, read);
      const root2 = treeRoot(size2, read);
      expect(verifyConsistency(size1, size2, root1, root2, proof)).toBe(true);
      expect(verifyConsistency(size1 + 1, size2, root1, root2, proof)).toBe(false);
      expect(verifyConsistency(size1, size2, root2, root2, proof)).toBe(false);
      proof.forEach((_, at) => {
        const flipped = proof.map((hash) => Buffer.from(hash));
        const hash = flipped[at]!;
        hash[0] = hash[0]! ^ 0x80;
        expect(verifyConsistency(size1, size2, root1, root2, flipped)).toBe(false);
      });
    }
  });

  it('a proof reads O(log n) complete subtrees, also deep in a large tree', () => {
    const size = 1_000_003;
    let reads = 0;
    // Any hash does for counting: no proof here is verified.
    const counting: NodeReader = (level, index) => {
      reads++;
      return leafHash(Buffer.from(`${level}/${index}`));
    };
    for (const index of [0, 1, 524_287, 999_999, 1_000_002]) {
      reads = 0;
      inclusionProof(index, size, counting);
      expect(reads).toBeLessThanOrEqual(2 * 21);
    }
    reads = 0;
    consistencyProof(999_983, size, counting);
    expect(reads).toBeLessThanOrEqual(2 * 21);
  });

  it('sizes near 2^53 split where the RFC says (no rounding in log2)', () => {
    const seen: string[] = [];
    const naming: NodeReader = (level, index) => {
      seen.push(`${level}/${index}`);
      return leafHash(Buffer.from(`${level}/${index}`));
    };
    treeRoot(2 ** 50 + 1, naming);
    expect(seen).toEqual(['50/0', '0/1125899906842624']);
  });

  it('refuses to make a proof that cannot exist, with a RangeError naming the numbers', () => {
    expect(() => inclusionProof(5, 5, read)).toThrow(/Leaf 5 is not in a tree of 5/);
    expect(() => inclusionProof(-1, 5, read)).toThrow(RangeError);
    expect(() => inclusionProof(1.5, 5, read)).toThrow(RangeError);
    expect(() => consistencyProof(0, 5, read)).toThrow(/from a tree of 0 leaves/);
    expect(() => consistencyProof(6, 5, read)).toThrow(RangeError);
    expect(() => treeRoot(Number.NaN, read)).toThrow(RangeError);
  });

  it('the verifiers answer false, never throw, for input of the wrong shape', () => {
    const root = treeRoot(8, read);
    const proof = inclusionProof(3, 8, read);
    const odd = [Number.NaN, -1, 2 ** 60, '3' as unknown as number];
    for (const value of odd) {
      expect(verifyInclusion(value, 8, leaves[3]!, proof, root)).toBe(false);
      expect(verifyConsistency(value, 8, root, root, [])).toBe(false);
    }
    expect(verifyInclusion(3, 8, leaves[3]!.subarray(1), proof, root)).toBe(false);
    expect(verifyInclusion(3, 8, leaves[3]!, proof, root.subarray(0, 31))).toBe(false);
    expect(verifyInclusion(3, 8, leaves[3]!, 'proof' as unknown as Buffer[], root)).toBe(false);
    expect(verifyInclusion(3, 8, leaves[3]!, [null as unknown as Buffer], root)).toBe(false);
    expect(rootFromInclusionProof(3, 8, leaves[3]!, proof)?.equals(root)).toBe(true);
  });
});

describe('transparency-dev/merkle probes (testdata/inclusion, testdata/consistency)', () => {
  const buffer = (value: string | null) => (value === null ? Buffer.alloc(0) : b64(value));

  it.each(probes.inclusion.map((probe) => [probe.file, probe] as const))('%s', (_file, probe) => {
    const ok = verifyInclusion(probe.leafIdx, probe.treeSize, buffer(probe.leafHash), (probe.proof ?? []).map(b64), buffer(probe.root));
    expect(ok).toBe(!probe.wantErr);
  });

  it.each(probes.consistency.map((probe) => [probe.file, probe] as const))('%s', (file, probe) => {
    const ok = verifyConsistency(probe.size1, probe.size2, buffer(probe.root1), buffer(probe.root2), (probe.proof ?? []).map(b64));
    expect(ok).toBe(!probe.wantErr && !STRICTER_THAN_GO.has(file));
  });

  it('holds every happy-path probe', () => {
    expect(probes.inclusion.filter((probe) => !probe.wantErr).length).toBeGreaterThan(5);
    expect(probes.consistency.filter((probe) => !probe.wantErr).length).toBeGreaterThan(5);
  });
});

describe('compact ranges (what verify joins across its workers)', () => {
  const leaves = generated(100);

  it('covers [begin, end) with the fewest aligned complete subtrees', () => {
    expect(coveringNodes(0, 76)).toEqual([
      { level: 6, index: 0 },
      { level: 3, index: 8 },
      { level: 2, index: 18 },
    ]);
    expect(coveringNodes(3, 13)).toEqual([
      { level: 0, index: 3 },
      { level: 2, index: 1 },
      { level: 2, index: 2 },
      { level: 0, index: 12 },
    ]);
    expect(coveringNodes(5, 5)).toEqual([]);
    expect(() => coveringNodes(6, 5)).toThrow(RangeError);
  });

  it('ranges split anywhere and merged in order give the root of every prefix', () => {
    for (const cuts of [[], [1], [37], [64], [3, 50, 51, 99], [10, 20, 30, 40, 50, 60, 70, 80, 90]]) {
      const bounds = [0, ...cuts, leaves.length];
      const parts = bounds.slice(1).map((end, at) => {
        const range = CompactRange.empty(bounds[at]!);
        for (let index = bounds[at]!; index < end; index++) range.append(leaves[index]!);
        return range;
      });
      const joined = CompactRange.empty(0);
      for (const part of parts) {
        // Through plain hashes, as a worker thread hands them over.
        joined.merge(CompactRange.fromHashes(part.begin, part.end, part.hashes()));
        expect(joined.root().equals(rootOfLeaves(leaves.slice(0, joined.end))), `cuts ${cuts.join(',')} at ${joined.end}`).toBe(true);
      }
    }
  });

  it('a range that does not start at leaf 0 has no root; ranges that do not meet do not merge; hash counts are checked', () => {
    const range = CompactRange.empty(4);
    range.append(leaves[4]!);
    expect(() => range.root()).toThrow(/no tree root/);
    expect(() => CompactRange.empty(0).merge(range)).toThrow(/cannot take one that begins at 4/);
    expect(() => CompactRange.fromHashes(0, 76, [leaves[0]!, leaves[1]!])).toThrow(/covered by 3 hashes/);
    expect(CompactRange.empty(0).root().equals(emptyRoot())).toBe(true);
  });
});

describe('node positions (the order appends complete subtrees)', () => {
  it('numbers each complete subtree by when nodesCompletedBy yields it, and counts them per tree size', () => {
    const leaves = generated(300);
    const stored = new Map<string, Buffer>();
    const read: NodeReader = (level, index) => stored.get(`${level}/${index}`)!;
    let position = 0;
    leaves.forEach((leaf, index) => {
      expect(nodeCount(index)).toBe(position);
      for (const node of nodesCompletedBy(index, leaf, read)) {
        expect(nodePosition(node.level, node.index), `${node.level}/${node.index}`).toBe(position++);
        stored.set(`${node.level}/${node.index}`, node.hash);
      }
      expect(sizeOfNodeCount(position)).toBe(index + 1);
    });
    expect(nodeCount(2 ** 20)).toBe(2 ** 21 - 1);
    expect(sizeOfNodeCount(3)).toBe(2);
    expect(sizeOfNodeCount(2)).toBeUndefined();
  });
});
