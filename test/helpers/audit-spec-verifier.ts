import crypto from 'node:crypto';

/**
 * An outside auditor's verifier of export files, written from docs/audit.md ("Specification", S1–S9)
 * alone: it imports nothing from src/ and follows S9's numbered groups in order, each giving at most
 * one finding, the lowest seq winning (earlier group on a tie). test/integration/scripts/
 * audit-spec-independent.test.ts holds its verdicts to the CLI's on every vector and on random
 * mutations of them. Where this file needed a rule the text did not give, the text was changed.
 */

export interface SpecKeys {
  /** K0 per keyId (`evk1-`). */
  k0: Map<string, Buffer>;
  /** Public keys per keyId (`epk2-`): the log key and the epoch 0 key. */
  pub: Map<string, { logKey: Buffer; epoch0Key: Buffer }>;
}

export interface SpecVerdict {
  ok: boolean;
  code: string | null;
  seq: number | null;
}

// S2, from the doc's table.
const P = (hex: string) => Buffer.from(hex, 'hex');
const PREFIX = {
  record: P('6578656375746f722e61756469742e7265636f72642e763100'),
  checkpointMac: P('6578656375746f722e61756469742e636865636b706f696e742e763100'),
  checkpointSig: P('6578656375746f722e61756469742e636865636b706f696e742d7369672e763100'),
  checkpointEpochSig: P('6578656375746f722e61756469742e636865636b706f696e742d65706f63682d7369672e763200'),
  epochCert: P('6578656375746f722e61756469742e65706f63682d636572742e763200'),
  headerMac: P('6578656375746f722e61756469742e6578706f72742d6865616465722e763200'),
  headerSig: P('6578656375746f722e61756469742e6578706f72742d6865616465722d7369672e763200'),
  cosign: P('6578656375746f722e61756469742e726f746174696f6e2d636f7369676e2e763100'),
  ratchet: P('72617463686574'),
};
const GENESIS = '0'.repeat(64);
const SKEW_MS = 120_000;

const sha256 = (...parts: Buffer[]) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();
const hmac = (key: Buffer, prefix: Buffer, message: Buffer | string) =>
  crypto.createHmac('sha256', key).update(prefix).update(message).digest();
function verifies(raw: Buffer, prefix: Buffer, message: string, sig: Buffer): boolean {
  try {
    const key = crypto.createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
    return crypto.verify(null, Buffer.concat([prefix, Buffer.from(message)]), key, sig);
  } catch {
    return false;
  }
}
const isInt = (value: unknown): value is number => Number.isSafeInteger(value);
const isHex64 = (value: unknown): value is string => typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** S4: K(e+1) = HMAC(K(e), "ratchet" ‖ uint64_be(e)), cached per chain. */
function epochKeys(k0s: Map<string, Buffer>) {
  const cache = new Map<string, Buffer[]>();
  return (keyId: unknown, epoch: unknown): Buffer | undefined => {
    const k0 = typeof keyId === 'string' ? k0s.get(keyId) : undefined;
    if (!k0 || !isInt(epoch) || epoch < 0) return undefined;
    const keys = cache.get(keyId as string) ?? [k0];
    cache.set(keyId as string, keys);
    while (keys.length <= epoch) {
      const counter = Buffer.alloc(8);
      counter.writeBigUInt64BE(BigInt(keys.length - 1));
      keys.push(hmac(keys[keys.length - 1]!, PREFIX.ratchet, counter));
    }
    return keys[epoch];
  };
}

/** S1: RFC 8785; undefined when a string holds a lone surrogate (no canonical form). */
function canonical(value: unknown): string | undefined {
  if (typeof value === 'string')
    return /\p{Surrogate}/u.test(value.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, '')) ? undefined : JSON.stringify(value);
  if (Array.isArray(value)) {
    const items = value.map(canonical);
    return items.includes(undefined) ? undefined : `[${items.join(',')}]`;
  }
  if (isObject(value)) {
    const parts: string[] = [];
    for (const key of Object.keys(value).sort()) {
      const k = canonical(key);
      const v = canonical(value[key]);
      if (k === undefined || v === undefined) return undefined;
      parts.push(`${k}:${v}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** S10: RFC 9162 root over leaf hashes. */
function merkleRoot(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha256(Buffer.alloc(0));
  if (leaves.length === 1) return leaves[0]!;
  let split = 1;
  while (split * 2 < leaves.length) split *= 2;
  return sha256(Buffer.of(1), merkleRoot(leaves.slice(0, split)), merkleRoot(leaves.slice(split)));
}

/** The root of `nodes` (perfect subtrees with their sizes, left to right), splitting as RFC 9162 does; undefined when a split falls inside a subtree. */
function rootOfNodes(nodes: { size: number; hash: Buffer }[]): Buffer | undefined {
  const total = nodes.reduce((sum, node) => sum + node.size, 0);
  if (total === 0) return sha256(Buffer.alloc(0));
  if (nodes.length === 1) return nodes[0]!.hash;
  let split = 1;
  while (split * 2 < total) split *= 2;
  let count = 0;
  let at = 0;
  while (count < split) count += nodes[at++]!.size;
  if (count !== split) return undefined;
  const left = rootOfNodes(nodes.slice(0, at));
  const right = rootOfNodes(nodes.slice(at));
  return left && right ? sha256(Buffer.of(1), left, right) : undefined;
}

type Line = Record<string, unknown>;
interface Finding {
  code: string;
  seq: number;
}
interface Window {
  epoch: number;
  publicKey: Buffer;
  startMs: number;
  endMs: number;
  firstSeq: number;
  endSeq: number;
  head?: { headSeq: number; headHash: string; rootHash: string; cpSeq: number; checkpointHash: string };
}
interface ChainStart {
  seq: number;
  keyId: string;
  ts: unknown;
  args: Record<string, unknown>;
}

const positive = (value: unknown) => (isInt(value) && value > 0 ? value : undefined);

export function specVerifyExport(text: string, keys: SpecKeys): SpecVerdict {
  const lines = text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Line);
  const header = lines[0]!;
  const from = header.from as number;
  const to = header.to as number;
  const logId = header.logId as string;
  const of = (type: string) => lines.filter((line) => line.type === type);
  const records = of('record');
  const keyRecords = of('key-record');
  const certificates = of('certificate');
  const checkpoints = of('checkpoint');
  const prefixLine = of('tree-prefix')[0];
  const K = epochKeys(keys.k0);
  const known = (keyId: unknown) => typeof keyId === 'string' && (keys.k0.has(keyId) || keys.pub.has(keyId));
  const findings: Finding[] = [];

  // Group 1: records.
  const bodySeqs = records.map((line) => {
    try {
      const seq = (JSON.parse(line.body as string) as { seq?: unknown }).seq;
      return typeof seq === 'number' ? seq : undefined;
    } catch {
      return undefined;
    }
  });
  const hashes = new Map<number, string>();
  const leaves: Buffer[] = [];
  const chainStarts: ChainStart[] = [];
  const spans: { keyId: string; fromSeq: number; lastEpoch: number }[] = [];
  const runs: { keyId: string; epoch: number; records: { seq: number; ts: unknown }[] }[] = [];
  let recordFinding: Finding | undefined;
  let lastSeq: number | undefined;
  let prevSeq = from - 1;
  let expectedPrev: string | undefined = from === 1 ? GENESIS : undefined;
  for (const [index, line] of records.entries()) {
    const at = prevSeq + 1;
    const fail = (code: string) => (recordFinding = { code, seq: at });
    const text = line.body as string;
    const mac = Buffer.from(line.mac as string, 'hex');
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      fail('EDITED');
      break;
    }
    if (!isObject(body)) {
      fail('EDITED');
      break;
    }
    const key = K(body.keyId, body.epoch);
    const macHolds = key !== undefined && mac.length === 32 && hmac(key, PREFIX.record, text).equals(mac);
    if (!macHolds) {
      const form = canonical(body);
      if (form === undefined) {
        fail('EDITED');
        break;
      }
      if (form !== text) {
        fail('NONCANONICAL');
        break;
      }
    }
    const { seq, epoch, keyId, prevHash } = body;
    if (!isInt(seq) || !isInt(epoch) || typeof keyId !== 'string' || typeof prevHash !== 'string') {
      fail('EDITED');
      break;
    }
    if (body.logId !== logId) {
      fail('FOREIGN_LOG');
      break;
    }
    if (!known(keyId)) {
      fail('UNKNOWN_KEY');
      break;
    }
    const laterClaims = (wanted: number) => bodySeqs.some((other, i) => i > index && other === wanted);
    const expectedSeq = at;
    if (key && !macHolds) {
      let other = false;
      for (let e = 0; e <= epoch + 64 && !other; e++) if (e !== epoch && hmac(K(keyId, e)!, PREFIX.record, text).equals(mac)) other = true;
      fail(other ? 'KEY_OUT_OF_RANGE' : seq !== expectedSeq || laterClaims(expectedSeq) ? 'INSERTED' : 'EDITED');
      break;
    }
    if (!key && epoch < 0) {
      fail('KEY_OUT_OF_RANGE');
      break;
    }
    if (seq !== expectedSeq) {
      fail(seq < expectedSeq ? 'INSERTED' : laterClaims(expectedSeq) ? 'REORDERED' : 'DELETED');
      break;
    }
    if (expectedPrev !== undefined && prevHash !== expectedPrev) {
      fail('EDITED');
      break;
    }
    if (line.cosign !== null && line.cosign !== undefined && body.action !== 'key.rotated') {
      fail('EDITED');
      break;
    }
    const isStart = body.action === 'key.created' || body.action === 'key.rotated';
    const span = spans[spans.length - 1];
    if (seq === 1 && body.action !== 'key.created') {
      fail('KEY_OUT_OF_RANGE');
      break;
    }
    if (isStart) {
      const args = isObject(body.args) ? body.args : {};
      if (args.keyId !== keyId || epoch !== 0) {
        fail('KEY_OUT_OF_RANGE');
        break;
      }
      if (body.action === 'key.rotated') {
        if (span && args.previousKeyId !== span.keyId) {
          fail('KEY_OUT_OF_RANGE');
          break;
        }
        const previous = K(args.previousKeyId, args.previousEpoch);
        if (previous) {
          const cosign = typeof line.cosign === 'string' ? Buffer.from(line.cosign, 'hex') : undefined;
          if (!cosign || cosign.length !== 32 || !hmac(previous, PREFIX.cosign, text).equals(cosign)) {
            fail('EDITED');
            break;
          }
        }
      }
      chainStarts.push({ seq, keyId, ts: body.ts, args });
    }
    if (span && span.keyId === keyId && !isStart) {
      if (epoch < span.lastEpoch) {
        fail('KEY_OUT_OF_RANGE');
        break;
      }
      span.lastEpoch = epoch;
    } else {
      if (span && !isStart) {
        fail('KEY_OUT_OF_RANGE');
        break;
      }
      spans.push({ keyId, fromSeq: seq, lastEpoch: epoch });
    }
    const hash = sha256(Buffer.from(text), mac);
    hashes.set(seq, hash.toString('hex'));
    leaves.push(sha256(Buffer.of(0), hash));
    const run = runs[runs.length - 1];
    if (run && run.keyId === keyId && run.epoch === epoch) run.records.push({ seq, ts: body.ts });
    else runs.push({ keyId, epoch, records: [{ seq, ts: body.ts }] });
    expectedPrev = hash.toString('hex');
    prevSeq = seq;
    lastSeq = seq;
  }
  if (recordFinding) findings.push(recordFinding);
  const headSeq = lastSeq ?? from - 1;

  // Roots of records 1..n: from the records (from = 1) or the tree-prefix and the records.
  const rootAt = (n: number): string | undefined => {
    if (n === 0) return sha256(Buffer.alloc(0)).toString('hex');
    if (n > headSeq) return undefined;
    if (from === 1) return merkleRoot(leaves.slice(0, n)).toString('hex');
    if (!prefixLine || prefixLine.size !== from - 1 || n < from - 1) return undefined;
    const sizes: number[] = [];
    for (let rest = from - 1, bit = 2 ** 40; bit >= 1; bit /= 2) if (rest >= bit) (sizes.push(bit), (rest -= bit));
    const hashesHex = prefixLine.hashes as string[];
    if (hashesHex.length !== sizes.length) return undefined;
    const nodes = [
      ...hashesHex.map((hex, i) => ({ size: sizes[i]!, hash: Buffer.from(hex, 'hex') })),
      ...leaves.slice(0, n - (from - 1)).map((hash) => ({ size: 1, hash })),
    ];
    return rootOfNodes(nodes)?.toString('hex');
  };

  // Chain starts: key-record lines that are vouched for (K0's MAC, or the epoch 0 key held), then the records'.
  const starts: ChainStart[] = [];
  for (const line of keyRecords) {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(line.body as string) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (!isObject(body) || typeof body.keyId !== 'string' || !isInt(body.seq) || typeof body.ts !== 'string') continue;
    const args = isObject(body.args) ? body.args : {};
    const key = K(body.keyId, body.epoch);
    const byMac = key !== undefined && hmac(key, PREFIX.record, line.body as string).equals(Buffer.from(line.mac as string, 'hex'));
    const given = keys.pub.get(body.keyId)?.epoch0Key;
    const byKey =
      given !== undefined && typeof args.epochPublicKey === 'string' && Buffer.from(args.epochPublicKey, 'base64').equals(given);
    if ((byMac || byKey) && !chainStarts.some((start) => start.keyId === body.keyId))
      starts.push({ seq: body.seq, keyId: body.keyId, ts: body.ts, args });
  }
  starts.push(...chainStarts);

  // Group 2: certificate chains.
  const windows = new Map<string, Window[]>();
  for (const start of starts) {
    const trusted = keys.pub.get(start.keyId)?.epoch0Key;
    const declared = typeof start.args.epochPublicKey === 'string' ? Buffer.from(start.args.epochPublicKey, 'base64') : undefined;
    const epochMs = positive(start.args.epochMs);
    const maxRecords = positive(start.args.epochMaxRecords);
    if (!declared || epochMs === undefined || maxRecords === undefined) {
      if (trusted) findings.push({ code: 'BAD_CERTIFICATE', seq: start.seq });
      continue;
    }
    if (trusted && !trusted.equals(declared)) {
      findings.push({ code: 'BAD_CERTIFICATE', seq: start.seq });
      continue;
    }
    const chain: Window[] = [];
    windows.set(start.keyId, chain);
    const failChain = () => findings.push({ code: 'BAD_CERTIFICATE', seq: chain[chain.length - 1]?.firstSeq ?? start.seq });
    const startMs = typeof start.ts === 'string' ? Date.parse(start.ts) : NaN;
    if (!Number.isFinite(startMs)) {
      failChain();
      continue;
    }
    chain.push({ epoch: 0, publicKey: declared, startMs, endMs: startMs + epochMs, firstSeq: start.seq, endSeq: start.seq + maxRecords });
    const byEpoch = new Map<unknown, Line>();
    let forked = false;
    for (const cert of certificates) {
      if (cert.keyId !== start.keyId) continue;
      const seen = byEpoch.get(cert.epoch);
      if (seen && (seen.body !== cert.body || seen.sig !== cert.sig)) forked = true;
      byEpoch.set(cert.epoch, cert);
    }
    if (forked) {
      failChain();
      continue;
    }
    for (const epoch of [...byEpoch.keys()].sort((a, b) => (a as number) - (b as number))) {
      const previous = chain[chain.length - 1]!;
      const cert = byEpoch.get(epoch)!;
      if (epoch !== previous.epoch + 1) {
        failChain();
        break;
      }
      let body: Record<string, unknown> | undefined;
      try {
        body = JSON.parse(cert.body as string) as Record<string, unknown>;
      } catch {
        body = undefined;
      }
      const hasHead = body && body.v === 3;
      const headOk =
        body &&
        (hasHead
          ? isInt(body.headSeq) &&
            body.headSeq >= 0 &&
            isHex64(body.headHash) &&
            isHex64(body.rootHash) &&
            isInt(body.cpSeq) &&
            body.cpSeq >= 0 &&
            isHex64(body.checkpointHash)
          : !['headSeq', 'headHash', 'rootHash', 'cpSeq', 'checkpointHash'].some((field) => field in body!));
      const wellFormed =
        body &&
        isObject(body) &&
        canonical(body) === cert.body &&
        (body.v === 2 || body.v === 3) &&
        headOk &&
        typeof body.logId === 'string' &&
        body.keyId === cert.keyId &&
        body.epoch === cert.epoch &&
        isInt(body.firstSeq) &&
        body.firstSeq >= 1 &&
        typeof body.start === 'string' &&
        Number.isFinite(Date.parse(body.start)) &&
        typeof body.publicKey === 'string' &&
        Buffer.from(body.publicKey, 'base64').length === 32;
      if (
        !wellFormed ||
        body!.logId !== logId ||
        !verifies(previous.publicKey, PREFIX.epochCert, cert.body as string, Buffer.from(cert.sig as string, 'hex'))
      ) {
        failChain();
        break;
      }
      const b = body!;
      const certStart = Date.parse(b.start as string);
      const firstSeq = b.firstSeq as number;
      const head = hasHead
        ? {
            headSeq: b.headSeq as number,
            headHash: b.headHash as string,
            rootHash: b.rootHash as string,
            cpSeq: b.cpSeq as number,
            checkpointHash: b.checkpointHash as string,
          }
        : undefined;
      if (
        certStart < previous.startMs ||
        firstSeq < previous.firstSeq ||
        firstSeq - previous.firstSeq > maxRecords ||
        (!head && previous.head) ||
        (head && head.headSeq !== firstSeq - 1) ||
        (head && previous.head && head.cpSeq < previous.head.cpSeq)
      ) {
        failChain();
        break;
      }
      previous.endSeq = firstSeq;
      chain.push({
        epoch: epoch as number,
        publicKey: Buffer.from(b.publicKey as string, 'base64'),
        startMs: certStart,
        endMs: certStart + epochMs,
        firstSeq,
        endSeq: firstSeq + maxRecords,
        ...(head ? { head } : {}),
      });
    }
  }
  const outside = (window: Window, seq: number, ts: unknown, sealsHead = false) => {
    const ms = typeof ts === 'string' ? Date.parse(ts) : NaN;
    return (
      seq < (sealsHead ? window.firstSeq - 1 : window.firstSeq) ||
      seq > window.endSeq - 1 ||
      !Number.isFinite(ms) ||
      ms < window.startMs - SKEW_MS ||
      ms >= window.endMs
    );
  };

  // Group 3: each run of records inside its epoch's window.
  if (!recordFinding) {
    for (const run of runs) {
      const chain = windows.get(run.keyId);
      if (!chain) continue;
      const window = chain[run.epoch];
      if (!window) {
        findings.push({ code: 'BAD_CERTIFICATE', seq: run.records[0]!.seq });
        break;
      }
      const first = run.records.find((record) => outside(window, record.seq, record.ts));
      if (first) {
        findings.push({ code: 'KEY_OUT_OF_RANGE', seq: first.seq });
        break;
      }
    }
  }

  // Group 4: a chain whose epk2- key is held, whose records appear, with no start record.
  for (const [keyId, pub] of keys.pub) {
    if (!pub.epoch0Key || starts.some((start) => start.keyId === keyId)) continue;
    const span = spans.find((s) => s.keyId === keyId);
    if (span) findings.push({ code: 'BAD_CERTIFICATE', seq: span.fromSeq });
  }

  // Group 5: the export header.
  if (!recordFinding) {
    const { mac, sig, ...fields } = header;
    const signed = canonical(fields)!;
    if (typeof sig !== 'string' || header.keyId === undefined || header.epoch === undefined) {
      if (windows.size || [...keys.pub.values()].some((pub) => pub.epoch0Key)) findings.push({ code: 'BAD_HEADER', seq: from });
    } else {
      const window = windows.get(header.keyId as string)?.[header.epoch as number];
      const key = K(header.keyId, header.epoch);
      if (
        !window ||
        !verifies(window.publicKey, PREFIX.headerSig, signed, Buffer.from(sig, 'hex')) ||
        (key && !(typeof mac === 'string' && hmac(key, PREFIX.headerMac, signed).toString('hex') === mac))
      )
        findings.push({ code: 'BAD_HEADER', seq: from });
    }
  }

  // Group 6: checkpoints.
  const logKeys = new Map<string, Buffer>();
  for (const [keyId, pub] of keys.pub) logKeys.set(keyId, pub.logKey);
  for (const start of starts)
    if (typeof start.args.publicKey === 'string' && !logKeys.has(start.keyId))
      logKeys.set(start.keyId, Buffer.from(start.args.publicKey, 'base64'));
  const verified: { cpSeq: number; hash: string }[] = [];
  let checkpointFinding: Finding | undefined;
  {
    let previousHash: string | undefined;
    let expectedCp: number | undefined;
    let lastCpSeq = 0;
    let sawRoot = false;
    for (const line of checkpoints) {
      let body: Record<string, unknown> | undefined;
      try {
        body = JSON.parse(line.body as string) as Record<string, unknown>;
      } catch {
        body = undefined;
      }
      const at = isObject(body) && isInt(body.seq) ? body.seq : headSeq;
      const fail = (code: string, seq = at) => (checkpointFinding = { code, seq });
      if (!body || !isObject(body) || canonical(body) !== line.body) {
        fail('BAD_CHECKPOINT');
        break;
      }
      const mac = Buffer.from(line.mac as string, 'hex');
      const sig = Buffer.from(line.sig as string, 'hex');
      const epochSig = typeof line.epochSig === 'string' ? Buffer.from(line.epochSig, 'hex') : undefined;
      const hash = sha256(Buffer.from(line.body as string), mac, sig, ...(epochSig ? [epochSig] : [])).toString('hex');
      if (body.logId !== logId) {
        fail('FOREIGN_LOG');
        break;
      }
      if (
        (expectedCp !== undefined && body.cpSeq !== expectedCp) ||
        (previousHash !== undefined && body.prevCheckpointHash !== previousHash) ||
        line.cpSeq !== body.cpSeq
      ) {
        fail('BAD_CHECKPOINT');
        break;
      }
      if (!known(body.keyId)) {
        fail('UNKNOWN_KEY');
        break;
      }
      const key = K(body.keyId, body.epoch);
      if (key && !(mac.length === 32 && hmac(key, PREFIX.checkpointMac, line.body as string).equals(mac))) {
        fail('BAD_CHECKPOINT');
        break;
      }
      const logKey = logKeys.get(body.keyId as string);
      if (logKey && !verifies(logKey, PREFIX.checkpointSig, line.body as string, sig)) {
        fail('BAD_CHECKPOINT');
        break;
      }
      const chain = windows.get(body.keyId as string);
      if (chain) {
        const window = chain[body.epoch as number];
        if (body.v !== 2 || !epochSig) {
          fail('BAD_CHECKPOINT');
          break;
        }
        if (!window) {
          fail('BAD_CERTIFICATE');
          break;
        }
        if (!verifies(window.publicKey, PREFIX.checkpointEpochSig, line.body as string, epochSig)) {
          const other = chain.some(
            (w) => w.epoch !== body.epoch && verifies(w.publicKey, PREFIX.checkpointEpochSig, line.body as string, epochSig),
          );
          fail(other ? 'KEY_OUT_OF_RANGE' : 'BAD_CHECKPOINT');
          break;
        }
        if (outside(window, body.seq as number, body.ts, true)) {
          fail('KEY_OUT_OF_RANGE');
          break;
        }
      }
      const seq = body.seq as number;
      if (seq < lastCpSeq) {
        fail('BAD_CHECKPOINT');
        break;
      }
      if (seq > headSeq && seq <= to) {
        fail('TRUNCATED', headSeq + 1);
        break;
      }
      const inRange = seq >= from && seq <= to;
      const expectedHead = seq === 0 ? GENESIS : hashes.get(seq);
      if (inRange && seq <= headSeq && expectedHead !== undefined && expectedHead !== body.headHash) {
        fail('BAD_CHECKPOINT', seq);
        break;
      }
      if (body.rootHash === undefined) {
        if (sawRoot) {
          fail('BAD_CHECKPOINT');
          break;
        }
      } else {
        sawRoot = true;
        if (!isHex64(body.rootHash)) {
          fail('BAD_CHECKPOINT');
          break;
        }
        const root = rootAt(seq);
        if (root !== undefined && root !== body.rootHash) {
          fail('BAD_CHECKPOINT', seq);
          break;
        }
      }
      verified.push({ cpSeq: body.cpSeq as number, hash });
      previousHash = hash;
      expectedCp = (body.cpSeq as number) + 1;
      lastCpSeq = seq;
    }
    if (!checkpointFinding) {
      const declared = starts.map((start) => positive(start.args.checkpointEvery)).find((every) => every !== undefined);
      const every = declared ?? (header.checkpointEvery as number);
      const sealed = new Set(checkpoints.map((line) => (JSON.parse(line.body as string) as { seq: number }).seq));
      for (let seq = Math.ceil(from / every) * every; seq <= headSeq; seq += every)
        if (!sealed.has(seq)) {
          checkpointFinding = { code: 'BAD_CHECKPOINT', seq };
          break;
        }
    }
  }
  if (checkpointFinding) findings.push(checkpointFinding);

  // Group 7: rotations' closing certificates and certified heads.
  if (!recordFinding) {
    const group7 = (): Finding | undefined => {
      let headsSince = Infinity;
      for (const chain of windows.values()) for (const w of chain) if (w.head && w.firstSeq < headsSince) headsSince = w.firstSeq;
      for (const start of starts) {
        const previousKeyId = start.args.previousKeyId;
        if (typeof previousKeyId !== 'string') continue;
        const chain = windows.get(previousKeyId);
        if (!chain) continue;
        const last = chain[chain.length - 1]!;
        if (last.firstSeq > start.seq || (last.firstSeq !== start.seq && headsSince < start.seq))
          return { code: 'BAD_CERTIFICATE', seq: start.seq };
      }
      const epochs = [...windows].flatMap(([, chain]) => chain.slice(1)).sort((a, b) => a.firstSeq - b.firstSeq || a.epoch - b.epoch);
      const byCp = new Map(verified.map((cp) => [cp.cpSeq, cp.hash]));
      const firstCp = verified.length ? Math.min(...verified.map((cp) => cp.cpSeq)) : undefined;
      let headSeen = false;
      for (const window of epochs) {
        const head = window.head;
        if (!head) {
          if (headSeen) return { code: 'BAD_CERTIFICATE', seq: window.firstSeq };
          continue;
        }
        headSeen = true;
        if (head.headSeq > headSeq || head.headSeq < from || head.headSeq > to) continue;
        const hash = hashes.get(head.headSeq);
        if (hash === undefined) continue;
        const root = from > 1 ? undefined : rootAt(head.headSeq);
        if (hash !== head.headHash || (root !== undefined && root !== head.rootHash)) return { code: 'EPOCH_REWRITTEN', seq: head.headSeq };
        if (head.cpSeq > 0 && !checkpointFinding) {
          const stored = byCp.get(head.cpSeq);
          const before = firstCp === undefined || head.cpSeq < firstCp;
          if ((stored === undefined && !before) || (stored !== undefined && stored !== head.checkpointHash))
            return { code: 'EPOCH_REWRITTEN', seq: head.headSeq };
        }
      }
      return undefined;
    };
    const found = group7();
    if (found) findings.push(found);
  }

  const first = findings.reduce<Finding | undefined>((best, finding) => (!best || finding.seq < best.seq ? finding : best), undefined);
  if (first) return { ok: false, code: first.code, seq: first.seq };

  // Group 9 (last): the header's counts, logHead, the records promised.
  if (
    header.v === 2 &&
    (header.records !== to - from + 1 ||
      header.keyRecords !== keyRecords.length ||
      header.certificates !== certificates.length ||
      header.checkpoints !== checkpoints.length)
  )
    return { ok: false, code: 'BAD_HEADER', seq: from };
  if (isInt(header.logHead) && header.logHead < to) return { ok: false, code: 'BAD_HEADER', seq: from };
  const held = records.length;
  if (held !== to - from + 1 || (held && lastSeq !== to)) return { ok: false, code: 'TRUNCATED', seq: from + held };
  return { ok: true, code: null, seq: null };
}
