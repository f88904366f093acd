import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * An outside verifier's check that docs/audit.md ("Specification") is enough: it re-derives the
 * committed vectors' MACs, signatures, certificates, checkpoint hashes, Merkle roots and the record
 * proof with node:crypto and the rules written there, importing nothing from src/. If the code
 * changes a byte the doc does not, this fails.
 */

const VECTORS = path.resolve(import.meta.dirname, '../../../docs/audit-vectors');

// S2, copied from the doc's table (hex), not from src/.
const PREFIX = {
  record: '6578656375746f722e61756469742e7265636f72642e763100',
  checkpointMac: '6578656375746f722e61756469742e636865636b706f696e742e763100',
  checkpointSig: '6578656375746f722e61756469742e636865636b706f696e742d7369672e763100',
  checkpointEpochSig: '6578656375746f722e61756469742e636865636b706f696e742d65706f63682d7369672e763200',
  epochCert: '6578656375746f722e61756469742e65706f63682d636572742e763200',
  headerMac: '6578656375746f722e61756469742e6578706f72742d6865616465722e763200',
  headerSig: '6578656375746f722e61756469742e6578706f72742d6865616465722d7369672e763200',
  cosign: '6578656375746f722e61756469742e726f746174696f6e2d636f7369676e2e763100',
  ratchet: '72617463686574',
} as const;
const prefix = (name: keyof typeof PREFIX) => Buffer.from(PREFIX[name], 'hex');

const sha256 = (...parts: Buffer[]) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();
const mac = (key: Buffer, p: Buffer, message: string | Buffer) => crypto.createHmac('sha256', key).update(p).update(message).digest();
const ed25519 = (raw: Buffer) =>
  crypto.createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
const verifies = (raw: Buffer, message: Buffer, sig: Buffer) => crypto.verify(null, message, ed25519(raw), sig);

/** S4: K(e+1) = HMAC(K(e), "ratchet" ‖ uint64_be(e)). */
function epochKey(k0: Buffer, epoch: number): Buffer {
  let key = k0;
  for (let e = 0; e < epoch; e++) {
    const counter = Buffer.alloc(8);
    counter.writeBigUInt64BE(BigInt(e));
    key = mac(key, prefix('ratchet'), counter);
  }
  return key;
}

/** S10: RFC 9162 root over leaf hashes. */
function root(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha256(Buffer.alloc(0));
  if (leaves.length === 1) return leaves[0]!;
  let split = 1;
  while (split * 2 < leaves.length) split *= 2;
  return sha256(Buffer.of(1), root(leaves.slice(0, split)), root(leaves.slice(split)));
}

/** S10: the root from an inclusion path (RFC 9162 §2.1.3.2). */
function rootFromPath(index: number, size: number, leaf: Buffer, hashes: Buffer[]): Buffer | undefined {
  if (index >= size) return undefined;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of hashes) {
    if (sn === 0) return undefined;
    if (fn % 2 === 1 || fn === sn) {
      r = sha256(Buffer.of(1), p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn >>= 1;
        sn >>= 1;
      }
    } else r = sha256(Buffer.of(1), r, p);
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 ? r : undefined;
}

/** S1: RFC 8785 for the integer-only, string-keyed values these bodies hold. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

interface Chain {
  keyId: string;
  k0: Buffer;
  logKey: Buffer;
  epoch0Key: Buffer;
}

function readChains(): Map<string, Chain> {
  const chains = new Map<string, Chain>();
  for (const line of fs.readFileSync(path.join(VECTORS, 'keys.txt'), 'utf8').trim().split('\n')) {
    const [keyId, evk, epk] = line.split(' ') as [string, string, string];
    const k0 = Buffer.from(evk.slice('evk1-'.length), 'base64url');
    const match = /^epk2-([0-9a-f]{16})-([A-Za-z0-9_-]{43})-([A-Za-z0-9_-]{43})$/.exec(epk)!;
    expect(match, epk).not.toBeNull();
    // S4: keyId = hex(SHA-256(K0)[0..8]), the same in all three columns.
    expect(sha256(k0).subarray(0, 8).toString('hex')).toBe(keyId);
    expect(match[1]).toBe(keyId);
    chains.set(keyId, { keyId, k0, logKey: Buffer.from(match[2]!, 'base64url'), epoch0Key: Buffer.from(match[3]!, 'base64url') });
  }
  return chains;
}

type Line = Record<string, unknown> & { type: string };
const readLines = (file: string): Line[] =>
  fs
    .readFileSync(path.join(VECTORS, file), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);

/** S4: each chain's epoch keys from its certificates, each checked against the key of the epoch before. */
function followCertificates(lines: Line[], chains: Map<string, Chain>): Map<string, Buffer[]> {
  const keys = new Map<string, Buffer[]>();
  for (const chain of chains.values()) {
    const certs = lines
      .filter((line) => line.type === 'certificate' && line.keyId === chain.keyId)
      .sort((a, b) => (a.epoch as number) - (b.epoch as number));
    const epochKeys = [chain.epoch0Key];
    for (const cert of certs) {
      const body = cert.body as string;
      const parsed = JSON.parse(body) as {
        v: number;
        epoch: number;
        keyId: string;
        publicKey: string;
        firstSeq: number;
        start: string;
        headSeq: number;
      };
      expect(canonical(parsed)).toBe(body);
      expect(Object.keys(parsed).sort()).toEqual([
        'checkpointHash',
        'cpSeq',
        'epoch',
        'firstSeq',
        'headHash',
        'headSeq',
        'keyId',
        'logId',
        'publicKey',
        'rootHash',
        'start',
        'v',
      ]);
      expect(parsed).toMatchObject({ v: 3, epoch: epochKeys.length, keyId: chain.keyId, headSeq: parsed.firstSeq - 1 });
      expect(
        verifies(
          epochKeys[epochKeys.length - 1]!,
          Buffer.concat([prefix('epochCert'), Buffer.from(body)]),
          Buffer.from(cert.sig as string, 'hex'),
        ),
        `certificate ${chain.keyId}/${parsed.epoch}`,
      ).toBe(true);
      epochKeys.push(Buffer.from(parsed.publicKey, 'base64'));
    }
    keys.set(chain.keyId, epochKeys);
  }
  return keys;
}

describe('docs/audit.md is enough to verify the vectors (node:crypto only)', () => {
  it('records, certificates, checkpoints (MAC, both signatures, hash chain, Merkle root) and the export header of log.jsonl', () => {
    const chains = readChains();
    const lines = readLines('log.jsonl');
    const epochKeys = followCertificates(lines, chains);
    expect([...epochKeys.values()].every((keys) => keys.length > 1)).toBe(true);

    // S3: every record's MAC under K(keyId, epoch), its chain link, and the chain starts' declared epoch 0 key.
    const records = lines.filter((line) => line.type === 'record');
    const leaves: Buffer[] = [];
    let prevHash = '0'.repeat(64);
    for (const line of records) {
      const body = JSON.parse(line.body as string) as {
        seq: number;
        keyId: string;
        epoch: number;
        prevHash: string;
        action: string;
        args: Record<string, unknown>;
      };
      const chain = chains.get(body.keyId)!;
      const recordMac = Buffer.from(line.mac as string, 'hex');
      expect(mac(epochKey(chain.k0, body.epoch), prefix('record'), line.body as string).equals(recordMac), `record ${body.seq}`).toBe(true);
      expect(body.prevHash).toBe(prevHash);
      const hash = sha256(Buffer.from(line.body as string), recordMac);
      prevHash = hash.toString('hex');
      leaves.push(sha256(Buffer.of(0), hash));
      if (body.action === 'key.created' || body.action === 'key.rotated') {
        expect(Buffer.from(body.args.epochPublicKey as string, 'base64').equals(chain.epoch0Key)).toBe(true);
        expect(Buffer.from(body.args.publicKey as string, 'base64').equals(chain.logKey)).toBe(true);
      }
      if (body.action === 'key.rotated') {
        // S4: the co-signature is an HMAC under the previous chain's key at previousEpoch.
        const previous = chains.get(body.args.previousKeyId as string)!;
        expect(mac(epochKey(previous.k0, body.args.previousEpoch as number), prefix('cosign'), line.body as string).toString('hex')).toBe(
          line.cosign,
        );
      }
    }

    // S5 + S10: each checkpoint's MAC, log-key signature, epoch signature, hash chain and root.
    const checkpoints = lines.filter((line) => line.type === 'checkpoint');
    expect(checkpoints.length).toBeGreaterThan(2);
    let prevCheckpointHash = '0'.repeat(64);
    const checkpointHashes = new Map<number, string>();
    for (const line of checkpoints) {
      const text = line.body as string;
      const body = JSON.parse(text) as {
        v: number;
        seq: number;
        keyId: string;
        epoch: number;
        prevCheckpointHash: string;
        rootHash: string;
        headHash: string;
      };
      const chain = chains.get(body.keyId)!;
      const bytes = Buffer.from(text);
      const [cpMac, sig, epochSig] = [line.mac, line.sig, line.epochSig].map((hex) => Buffer.from(hex as string, 'hex')) as [
        Buffer,
        Buffer,
        Buffer,
      ];
      expect(body.v).toBe(2);
      expect(mac(epochKey(chain.k0, body.epoch), prefix('checkpointMac'), bytes).equals(cpMac)).toBe(true);
      expect(verifies(chain.logKey, Buffer.concat([prefix('checkpointSig'), bytes]), sig)).toBe(true);
      expect(verifies(epochKeys.get(body.keyId)![body.epoch]!, Buffer.concat([prefix('checkpointEpochSig'), bytes]), epochSig)).toBe(true);
      expect(body.prevCheckpointHash).toBe(prevCheckpointHash);
      prevCheckpointHash = sha256(bytes, cpMac, sig, epochSig).toString('hex');
      expect(root(leaves.slice(0, body.seq)).toString('hex'), `root of checkpoint at ${body.seq}`).toBe(body.rootHash);
      checkpointHashes.set((JSON.parse(text) as { cpSeq: number }).cpSeq, prevCheckpointHash);
    }

    // S4: each certificate fixes the head its outgoing epoch left: the record before its firstSeq, the root up to it, the newest checkpoint.
    const certificates = lines.filter((line) => line.type === 'certificate');
    expect(certificates.length).toBeGreaterThan(2);
    for (const line of certificates) {
      const head = JSON.parse(line.body as string) as {
        headSeq: number;
        headHash: string;
        rootHash: string;
        cpSeq: number;
        checkpointHash: string;
      };
      const at = `certificate ${String(line.keyId)}/${String(line.epoch)}`;
      expect(
        sha256(
          Buffer.from(records[head.headSeq - 1]!.body as string),
          Buffer.from(records[head.headSeq - 1]!.mac as string, 'hex'),
        ).toString('hex'),
        at,
      ).toBe(head.headHash);
      expect(root(leaves.slice(0, head.headSeq)).toString('hex'), at).toBe(head.rootHash);
      expect(head.cpSeq === 0 ? '0'.repeat(64) : checkpointHashes.get(head.cpSeq), at).toBe(head.checkpointHash);
    }

    // S7: the header v2, its counts, MAC and signature by the exporter's epoch.
    const header = lines[0]!;
    const { mac: headerMac, sig: headerSig, ...fields } = header;
    const signed = Buffer.from(canonical(fields));
    const chain = chains.get(header.keyId as string)!;
    expect(header).toMatchObject({
      v: 2,
      format: 'executor-audit-export',
      records: records.length,
      checkpoints: checkpoints.length,
      certificates: lines.filter((line) => line.type === 'certificate').length,
    });
    expect(mac(epochKey(chain.k0, header.epoch as number), prefix('headerMac'), signed).toString('hex')).toBe(headerMac);
    expect(
      verifies(
        epochKeys.get(chain.keyId)![header.epoch as number]!,
        Buffer.concat([prefix('headerSig'), signed]),
        Buffer.from(headerSig as string, 'hex'),
      ),
    ).toBe(true);
  });

  it('the excerpt: its tree-prefix and its records give the roots its checkpoints signed', () => {
    const lines = readLines('excerpt.jsonl');
    const header = lines[0]!;
    const prefixLine = lines.find((line) => line.type === 'tree-prefix')!;
    expect(prefixLine.size).toBe((header.from as number) - 1);
    const subtrees = (prefixLine.hashes as string[]).map((hex) => Buffer.from(hex, 'hex'));
    const leaves = lines
      .filter((line) => line.type === 'record')
      .map((line) => sha256(Buffer.of(0), sha256(Buffer.from(line.body as string), Buffer.from(line.mac as string, 'hex'))));
    // The covering subtrees of [0, size) are the perfect trees of its binary decomposition, largest first: fold them with the leaves after them.
    const sizes: number[] = [];
    for (let rest = prefixLine.size as number, bit = 2 ** 30; bit >= 1; bit /= 2) if (rest >= bit) (sizes.push(bit), (rest -= bit));
    expect(sizes.length).toBe(subtrees.length);
    const rootAt = (size: number): Buffer => {
      // RFC 9162's split (largest power of two below the size) always falls on a boundary of the prefix's subtrees.
      const nodes: { size: number; hash: Buffer }[] = [
        ...subtrees.map((hash, index) => ({ size: sizes[index]!, hash })),
        ...leaves.slice(0, size - (prefixLine.size as number)).map((hash) => ({ size: 1, hash })),
      ];
      const build = (items: typeof nodes): Buffer => {
        const total = items.reduce((sum, item) => sum + item.size, 0);
        if (items.length === 1) return items[0]!.hash;
        let split = 1;
        while (split * 2 < total) split *= 2;
        let count = 0;
        let at = 0;
        while (count < split) count += items[at++]!.size;
        expect(count).toBe(split);
        return sha256(Buffer.of(1), build(items.slice(0, at)), build(items.slice(at)));
      };
      return build(nodes);
    };
    const checkpoints = lines
      .filter((line) => line.type === 'checkpoint')
      .map((line) => JSON.parse(line.body as string) as { seq: number; rootHash: string });
    expect(checkpoints.length).toBeGreaterThan(1);
    for (const cp of checkpoints) expect(rootAt(cp.seq).toString('hex'), `checkpoint at ${cp.seq}`).toBe(cp.rootHash);
  });

  it('proof.json: the note signed by the log key as a C2SP note, the checkpoint body signed, the path leading the record to the root', () => {
    const chains = readChains();
    const proof = JSON.parse(fs.readFileSync(path.join(VECTORS, 'proof.json'), 'utf8')) as {
      logId: string;
      record: { seq: number; body: string; mac: string };
      inclusion: { leafIndex: number; treeSize: number; hashes: string[] };
      note: string;
      checkpoint: { body: string; sig: string };
    };
    const [text, signatures] = proof.note.split('\n\n') as [string, string];
    const origin = `executor.audit/${proof.logId}`;
    const [noteOrigin, size, rootB64] = text.split('\n');
    expect(noteOrigin).toBe(origin);
    expect(Number(size)).toBe(proof.inclusion.treeSize);
    const cpBody = JSON.parse(proof.checkpoint.body) as { keyId: string; rootHash: string; seq: number };
    const chain = chains.get(cpBody.keyId)!;
    // S10: "— <name> base64(keyHash ‖ sig)", keyHash = SHA-256(name ‖ 0x0A ‖ 0x01 ‖ key)[0..4], sig over the text with its final newline.
    const line = signatures.split('\n').find((l) => l.startsWith(`\u2014 ${origin} `))!;
    const raw = Buffer.from(line.split(' ')[2]!, 'base64');
    expect(raw.subarray(0, 4).equals(sha256(Buffer.from(`${origin}\n`), Buffer.of(1), chain.logKey).subarray(0, 4))).toBe(true);
    expect(verifies(chain.logKey, Buffer.from(`${text}\n`), raw.subarray(4))).toBe(true);
    expect(
      verifies(
        chain.logKey,
        Buffer.concat([prefix('checkpointSig'), Buffer.from(proof.checkpoint.body)]),
        Buffer.from(proof.checkpoint.sig, 'hex'),
      ),
    ).toBe(true);
    expect(Buffer.from(rootB64!, 'base64').toString('hex')).toBe(cpBody.rootHash);
    const leaf = sha256(Buffer.of(0), sha256(Buffer.from(proof.record.body), Buffer.from(proof.record.mac, 'hex')));
    const got = rootFromPath(
      proof.inclusion.leafIndex,
      proof.inclusion.treeSize,
      leaf,
      proof.inclusion.hashes.map((hex) => Buffer.from(hex, 'hex')),
    );
    expect(got?.toString('hex')).toBe(cpBody.rootHash);
    expect(proof.inclusion.leafIndex).toBe(proof.record.seq - 1);

    // A tampered path must not lead there: the check above is not vacuous.
    const bent = [...proof.inclusion.hashes];
    bent[0] = sha256(Buffer.from(bent[0]!, 'hex')).toString('hex');
    expect(
      rootFromPath(
        proof.inclusion.leafIndex,
        proof.inclusion.treeSize,
        leaf,
        bent.map((hex) => Buffer.from(hex, 'hex')),
      )?.toString('hex'),
    ).not.toBe(cpBody.rootHash);
  });

  it("key.rotated's logKeyHandover: the previous chain's log key names the new chain's, as a C2SP note (S4)", () => {
    const chains = readChains();
    const records = readLines('log.jsonl')
      .filter((line) => line.type === 'record')
      .map((line) => JSON.parse(line.body as string) as { action: string; keyId: string; logId: string; args: Record<string, unknown> });
    const rotation = records.find((body) => body.action === 'key.rotated')!;
    const previous = chains.get(rotation.args.previousKeyId as string)!;
    const next = chains.get(rotation.keyId)!;
    const origin = `executor.audit/${rotation.logId}`;
    const [text, signatures] = (rotation.args.logKeyHandover as string).split('\n\n') as [string, string];
    const [noteOrigin, kind, vkey] = text.split('\n');
    expect([noteOrigin, kind]).toEqual([origin, 'log-key-handover']);
    // The vkey: name+hex(keyHash)+base64(0x01 ‖ key), the key the new chain's epk names and key.rotated's publicKey.
    // Split at the first two '+' only: base64 may hold '+' too.
    const [vkeyName, vkeyHash] = vkey!.split('+', 2) as [string, string];
    const vkeyKey = vkey!.slice(vkeyName.length + vkeyHash.length + 2);
    expect(vkeyName).toBe(origin);
    expect(Buffer.from(vkeyKey!, 'base64').equals(Buffer.concat([Buffer.of(1), next.logKey]))).toBe(true);
    expect(vkeyHash).toBe(
      sha256(Buffer.from(`${origin}\n`), Buffer.of(1), next.logKey)
        .subarray(0, 4)
        .toString('hex'),
    );
    expect(Buffer.from(rotation.args.publicKey as string, 'base64').equals(next.logKey)).toBe(true);
    const line = signatures.split('\n').find((l) => l.startsWith(`\u2014 ${origin} `))!;
    const raw = Buffer.from(line.split(' ')[2]!, 'base64');
    expect(raw.subarray(0, 4).equals(sha256(Buffer.from(`${origin}\n`), Buffer.of(1), previous.logKey).subarray(0, 4))).toBe(true);
    expect(verifies(previous.logKey, Buffer.from(`${text}\n`), raw.subarray(4))).toBe(true);
    expect(verifies(next.logKey, Buffer.from(`${text}\n`), raw.subarray(4))).toBe(false);
  });
});
