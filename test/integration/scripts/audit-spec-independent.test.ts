import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { specVerifyExport, type SpecKeys, type SpecVerdict } from '../../helpers/audit-spec-verifier.js';
import { parseChainPublicKeys, parseVerificationKeys } from '../../../src/audit/keys/audit-keys.js';
import { verifyExportFile } from '../../../src/audit/verify/audit-verifier.js';
import { runCli } from '../../helpers/run-cli.js';
import { tempDir } from '../../helpers/temp-dirs.js';

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

/** keys.txt as the outside verifier reads it: K0s for one run, public keys for the other. */
function specKeys(): { withK0: SpecKeys; withPublic: SpecKeys; evk: string; epk: string } {
  const chains = readChains();
  const columns = fs
    .readFileSync(path.join(VECTORS, 'keys.txt'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split(' '));
  return {
    withK0: { k0: new Map([...chains].map(([keyId, chain]) => [keyId, chain.k0])), pub: new Map() },
    withPublic: {
      k0: new Map(),
      pub: new Map([...chains].map(([keyId, chain]) => [keyId, { logKey: chain.logKey, epoch0Key: chain.epoch0Key }])),
    },
    evk: columns.map((c) => c[1]).join(','),
    epk: columns.map((c) => c[2]).join(','),
  };
}

interface ExpectedVectors {
  vectors: { file: string; withVerificationKeys: SpecVerdict; withPublicKeysOnly: SpecVerdict }[];
}

/** A small seeded generator: the mutations are the same on every run (and a failure names its seed). */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(items: T[]) => items[Math.floor(next() * items.length)]! };
}

const flipDigit = (hex: string, at: number) => `${hex.slice(0, at)}${hex[at] === '0' ? '1' : '0'}${hex.slice(at + 1)}`;

/** One random change to an export's lines, of the kinds an attacker or a damaged disk makes; the lines keep their shape. */
function mutate(text: string, rng: ReturnType<typeof random>): { text: string; what: string } {
  const lines = text.split('\n').filter(Boolean);
  const at = 1 + rng.int(lines.length - 1);
  const line = JSON.parse(lines[at]!) as Record<string, unknown>;
  const kind = rng.int(7);
  if (kind === 0) {
    lines.splice(at, 1);
    return { text: `${lines.join('\n')}\n`, what: `line ${at} deleted` };
  }
  if (kind === 1) {
    const other = 1 + rng.int(lines.length - 1);
    [lines[at], lines[other]] = [lines[other]!, lines[at]!];
    return { text: `${lines.join('\n')}\n`, what: `lines ${at} and ${other} swapped` };
  }
  if (kind === 2) {
    const to = 1 + rng.int(lines.length - 1);
    lines.splice(to, 0, lines[at]!);
    return { text: `${lines.join('\n')}\n`, what: `line ${at} copied before line ${to}` };
  }
  const hexFields = ['mac', 'sig', 'epochSig', 'cosign'].filter((field) => typeof line[field] === 'string');
  if (kind === 3 && hexFields.length) {
    const field = rng.pick(hexFields);
    const value = line[field] as string;
    line[field] = flipDigit(value, rng.int(value.length));
    lines[at] = JSON.stringify(line);
    return { text: `${lines.join('\n')}\n`, what: `line ${at}: a digit of ${field} changed` };
  }
  if (kind === 4 && line.type === 'tree-prefix') {
    const hashes = [...(line.hashes as string[])];
    const i = rng.int(hashes.length);
    hashes[i] = flipDigit(hashes[i]!, rng.int(64));
    lines[at] = JSON.stringify({ ...line, hashes });
    return { text: `${lines.join('\n')}\n`, what: `line ${at}: a tree-prefix hash changed` };
  }
  if (kind === 5 && typeof line.body === 'string') {
    // A space after the opening brace: the same JSON value, other bytes.
    lines[at] = JSON.stringify({ ...line, body: `{ ${line.body.slice(1)}` });
    return { text: `${lines.join('\n')}\n`, what: `line ${at}: its body made non-canonical` };
  }
  if (typeof line.body === 'string') {
    // A leaf of the body changed, the body kept canonical.
    const body = JSON.parse(line.body) as Record<string, unknown>;
    const leaves: { holder: Record<string, unknown>; key: string }[] = [];
    const walk = (value: Record<string, unknown>) => {
      for (const [key, inner] of Object.entries(value)) {
        if (inner && typeof inner === 'object' && !Array.isArray(inner)) walk(inner as Record<string, unknown>);
        else if (typeof inner === 'number' || typeof inner === 'string') leaves.push({ holder: value, key });
      }
    };
    walk(body);
    const { holder, key } = rng.pick(leaves);
    const value = holder[key];
    holder[key] =
      typeof value === 'number'
        ? value + rng.pick([-1, 1])
        : /^[0-9a-f]+$/.test(value as string)
          ? flipDigit(value as string, rng.int((value as string).length))
          : `${value as string}x`;
    lines[at] = JSON.stringify({ ...line, body: canonical(body) });
    return { text: `${lines.join('\n')}\n`, what: `line ${at}: body field ${key} changed` };
  }
  // The header: one of its numbers moved by one.
  const header = JSON.parse(lines[0]!) as Record<string, unknown>;
  const numeric = Object.keys(header).filter((key) => typeof header[key] === 'number');
  const key = rng.pick(numeric);
  header[key] = (header[key] as number) + rng.pick([-1, 1]);
  lines[0] = JSON.stringify(header);
  return { text: `${lines.join('\n')}\n`, what: `header ${key} moved by one` };
}

const verdict = (report: { ok: boolean; problem: { code: string; seq: number } | null }): SpecVerdict => ({
  ok: report.ok,
  code: report.problem?.code ?? null,
  seq: report.problem?.seq ?? null,
});

describe('a verifier written from docs/audit.md alone (test/helpers/audit-spec-verifier.ts) agrees with `executor audit verify`', () => {
  it('on every export vector: the code and the seq of expected.json (which the CLI gives), with the K0s and with the public keys only', () => {
    const keys = specKeys();
    const expected = JSON.parse(fs.readFileSync(path.join(VECTORS, 'expected.json'), 'utf8')) as ExpectedVectors;
    expect(expected.vectors.length).toBeGreaterThan(25);
    for (const vector of expected.vectors) {
      const text = fs.readFileSync(path.join(VECTORS, vector.file), 'utf8');
      expect(specVerifyExport(text, keys.withK0), `${vector.file} with K0`).toEqual(vector.withVerificationKeys);
      expect(specVerifyExport(text, keys.withPublic), `${vector.file} with public keys`).toEqual(vector.withPublicKeysOnly);
    }
  });

  it('on 400 random mutations of the vectors (deleted, swapped, copied lines; MAC, signature and tree-prefix digits; bodies edited canonically or not; header numbers), and through the real CLI on a sample of them', async () => {
    const keys = specKeys();
    const verificationKeys = parseVerificationKeys(keys.evk);
    const chainPublicKeys = parseChainPublicKeys(keys.epk);
    const bases = ['log.jsonl', 'excerpt.jsonl', 'tampered/rewritten-current-epoch.jsonl'].map((file) => ({
      file,
      text: fs.readFileSync(path.join(VECTORS, file), 'utf8'),
    }));
    const dir = tempDir();
    const disagreements: string[] = [];
    const codes = new Set<string>();
    let unreadable = 0;
    let throughCli = 0;
    for (let seed = 1; seed <= 400; seed++) {
      const rng = random(seed);
      const base = rng.pick(bases);
      const { text, what } = mutate(base.text, rng);
      const file = path.join(dir, `mutation-${seed}.jsonl`);
      fs.writeFileSync(file, text);
      let cli: { withK0: SpecVerdict; withPublic: SpecVerdict };
      try {
        cli = {
          withK0: verdict(await verifyExportFile(file, verificationKeys)),
          withPublic: verdict(await verifyExportFile(file, [], { chainPublicKeys })),
        };
      } catch {
        unreadable++; // not a verdict: the CLI exits 2 on a file it cannot read
        continue;
      }
      if (seed % 40 === 0) {
        // The in-process call is what the CLI runs; a sample goes through the real CLI too.
        const run = runCli(['--json', 'audit', 'verify', '--file', file, '--verification-key', keys.evk]);
        expect(verdict(run.json())).toEqual(cli.withK0);
        throughCli++;
      }
      for (const [mode, expected] of Object.entries(cli) as ['withK0' | 'withPublic', SpecVerdict][]) {
        if (expected.code) codes.add(expected.code);
        let spec: SpecVerdict | string;
        try {
          spec = specVerifyExport(text, keys[mode]);
        } catch (error) {
          spec = `threw ${(error as Error).message}`;
        }
        if (JSON.stringify(spec) !== JSON.stringify(expected))
          disagreements.push(
            `seed ${seed} (${base.file}, ${what}, ${mode}): spec ${JSON.stringify(spec)}, CLI ${JSON.stringify(expected)}`,
          );
      }
    }
    expect(disagreements, disagreements.slice(0, 15).join('\n')).toEqual([]);
    expect(unreadable).toBeLessThan(100);
    expect(throughCli).toBeGreaterThan(5);
    // The mutations reach many of the findings, not one.
    expect(codes.size).toBeGreaterThanOrEqual(8);
  }, 600_000);
});
