/**
 * Writes docs/audit-vectors/: a small exported audit log with its verification keys, and tampered
 * copies of it, each with the finding a verifier must give. An outside verifier built from
 * docs/audit.md checks itself against these. Keys are random, so the bytes differ per run; the
 * verdicts (expected.json) do not, and a test holds the committed ones to a fresh run's.
 *
 *   npm run make:audit-vectors [-- --out DIR]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportAudit } from '../src/audit/audit-export.js';
import { AuditKeyring, parsePublicKeys, parseVerificationKeys } from '../src/audit/audit-keys.js';
import { SignedAuditLog } from '../src/audit/audit-log.js';
import { verifyExportFile } from '../src/audit/audit-verifier.js';
import { FileKeyStore } from '../src/audit/key-store.js';
import { RECORD_MAC_PREFIX, hmac } from '../src/audit/record-format.js';
import type { VerifyReport } from '../src/audit/verify-codes.js';
import { openDatabase } from '../src/store/database.js';

const CHECKPOINT_EVERY = 5;
const EPOCH_RECORDS = 3;
const ACTOR = { user: 'vector', channel: 'cli' as const };

interface Line {
  type: string;
  seq?: number;
  body?: string;
  mac?: string;
  cosign?: string | null;
  sig?: string;
  logId?: string;
  [key: string]: unknown;
}

export interface Verdict {
  ok: boolean;
  code: string | null;
  seq: number | null;
}

export interface VectorEntry {
  file: string;
  says: string;
  /** With the K0s of keys.txt (`--verification-key`). */
  withVerificationKeys: Verdict;
  /** With the public keys of keys.txt only (`--public-key`): record MACs unchecked. */
  withPublicKeysOnly: Verdict;
}

function outDir(): string {
  const at = process.argv.indexOf('--out');
  return path.resolve(at >= 0 && process.argv[at + 1] ? process.argv[at + 1]! : path.join(import.meta.dirname, '..', 'docs', 'audit-vectors'));
}

/** A fixed clock, a second per record: the same times in every run. */
function clock(): () => Date {
  let tick = Date.parse('2026-01-01T00:00:00.000Z');
  return () => new Date((tick += 1000));
}

/** A log of 20-odd records over several epochs and two key chains, exported whole. */
function makeLog(work: string): { exportText: string; keysText: string; epochKey: (keyId: string, epoch: number) => Buffer } {
  const dataDir = path.join(work, 'data');
  fs.mkdirSync(dataDir, { recursive: true });
  const db = openDatabase(dataDir);
  const keyStore = new FileKeyStore(dataDir);
  try {
    const log = SignedAuditLog.open(db, keyStore, dataDir, { checkpointEvery: CHECKPOINT_EVERY, epochMaxRecords: EPOCH_RECORDS, now: clock() });
    const note = (index: number, detail: Record<string, unknown> = {}) =>
      db.transaction(() => log.append({ kind: 'step.simulated', actor: ACTOR, planId: 'plan-v', stepId: `step-${index}`, detail: { index, ...detail } }))();
    db.transaction(() => log.append({ kind: 'app.started', actor: ACTOR, detail: { pid: 1 } }))();
    for (let index = 1; index <= 8; index++) note(index, index === 3 ? { token: 'a secret the log keeps as a salted digest' } : {});
    log.rotate(ACTOR, 'test vectors: a rotation with its co-signature');
    for (let index = 9; index <= 14; index++) note(index);
    db.transaction(() => {
      log.append({ kind: 'app.stopped', actor: ACTOR, detail: { pid: 1 } });
      log.checkpoint('shutdown');
    })();
    const chunks: string[] = [];
    exportAudit(db, log.logId, { write: (line) => chunks.push(line) }, { checkpointEvery: CHECKPOINT_EVERY, now: new Date('2026-01-02T00:00:00.000Z') });
    const keyring = AuditKeyring.load(keyStore)!;
    const keysText = keyring
      .exportVerification(new Date(), { keep: true })
      .map((line) => `${line.keyId} ${line.verificationKey} ${line.publicKey}`)
      .join('\n');
    const chains = new Map(parseVerificationKeys(keysText.split('\n').map((line) => line.split(' ')[1]).join(',')).map((keys) => [keys.keyId, keys]));
    return { exportText: chunks.join(''), keysText: `${keysText}\n`, epochKey: (keyId, epoch) => chains.get(keyId)!.key(epoch) };
  } finally {
    db.close();
  }
}

const parse = (text: string): Line[] => text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Line);
const write = (lines: Line[]): string => lines.map((line) => `${JSON.stringify(line)}\n`).join('');
const recordAt = (lines: Line[], seq: number): number => lines.findIndex((line) => line.type === 'record' && line.seq === seq);

interface Tamper {
  file: string;
  says: string;
  /** The finding with the K0s; the script refuses to write a vector that does not give it. */
  code: string;
  edit(lines: Line[], keys: { epochKey: (keyId: string, epoch: number) => Buffer }): Line[];
}

const bodyOf = (line: Line) => JSON.parse(line.body!) as { keyId: string; epoch: number; action: string };

const TAMPERS: Tamper[] = [
  {
    file: 'edited-args.jsonl',
    says: 'one value in the args of record 4 changed, the body still canonical',
    code: 'EDITED',
    edit: (lines) => {
      const at = recordAt(lines, 4);
      lines[at] = { ...lines[at]!, body: lines[at]!.body!.replace('"index":2', '"index":7') };
      return lines;
    },
  },
  {
    file: 'noncanonical.jsonl',
    says: 'record 4 with a space added after its opening brace (same JSON value, other bytes)',
    code: 'NONCANONICAL',
    edit: (lines) => {
      const at = recordAt(lines, 4);
      lines[at] = { ...lines[at]!, body: `{ ${lines[at]!.body!.slice(1)}` };
      return lines;
    },
  },
  {
    file: 'deleted.jsonl',
    says: 'record 6 removed',
    code: 'DELETED',
    edit: (lines) => lines.filter((_, index) => index !== recordAt(lines, 6)),
  },
  {
    file: 'reordered.jsonl',
    says: 'records 6 and 7 swapped',
    code: 'REORDERED',
    edit: (lines) => {
      const a = recordAt(lines, 6);
      const b = recordAt(lines, 7);
      [lines[a], lines[b]] = [lines[b]!, lines[a]!];
      return lines;
    },
  },
  {
    file: 'replayed.jsonl',
    says: 'a copy of record 3 inserted before record 7',
    code: 'INSERTED',
    edit: (lines) => {
      const copy = { ...lines[recordAt(lines, 3)]! };
      lines.splice(recordAt(lines, 7), 0, copy);
      return lines;
    },
  },
  {
    file: 'truncated.jsonl',
    says: 'the last two records removed; the header and the checkpoints still promise them',
    code: 'TRUNCATED',
    edit: (lines) => {
      const last = Math.max(...lines.filter((line) => line.type === 'record').map((line) => line.seq!));
      return lines.filter((line) => !(line.type === 'record' && line.seq! > last - 2));
    },
  },
  {
    file: 'foreign-log.jsonl',
    says: "the header names another log's id",
    code: 'FOREIGN_LOG',
    edit: (lines) => {
      lines[0] = { ...lines[0]!, logId: '00000000-0000-4000-8000-000000000000' };
      return lines;
    },
  },
  {
    file: 'remaced-other-epoch.jsonl',
    says: "record 4 (epoch 1) re-MACed with its chain's epoch-2 key, its epoch label unchanged",
    code: 'KEY_OUT_OF_RANGE',
    edit: (lines, keys) => {
      const at = recordAt(lines, 4);
      const body = bodyOf(lines[at]!);
      lines[at] = { ...lines[at]!, mac: hmac(keys.epochKey(body.keyId, body.epoch + 1), RECORD_MAC_PREFIX, lines[at]!.body!).toString('hex') };
      return lines;
    },
  },
  {
    file: 'unknown-key.jsonl',
    says: 'record 5 names a keyId that is no chain of this log',
    code: 'UNKNOWN_KEY',
    edit: (lines) => {
      const at = recordAt(lines, 5);
      lines[at] = { ...lines[at]!, body: lines[at]!.body!.replace(/"keyId":"[0-9a-f]{16}"/, '"keyId":"ffffffffffffffff"') };
      return lines;
    },
  },
  {
    file: 'rotation-cosign.jsonl',
    says: "the key.rotated record's co-signature (an HMAC under the previous chain's key) changed",
    code: 'EDITED',
    edit: (lines) => {
      const at = lines.findIndex((line) => line.type === 'record' && bodyOf(line).action === 'key.rotated');
      const cosign = lines[at]!.cosign!;
      lines[at] = { ...lines[at]!, cosign: `${cosign[0] === '0' ? '1' : '0'}${cosign.slice(1)}` };
      return lines;
    },
  },
  {
    file: 'checkpoint-signature.jsonl',
    says: "the first checkpoint's Ed25519 signature with one byte changed",
    code: 'BAD_CHECKPOINT',
    edit: (lines) => {
      const at = lines.findIndex((line) => line.type === 'checkpoint');
      const sig = lines[at]!.sig!;
      lines[at] = { ...lines[at]!, sig: `${sig.slice(0, 10)}${sig[10] === '0' ? '1' : '0'}${sig.slice(11)}` };
      return lines;
    },
  },
];

function verdictOf(report: VerifyReport): Verdict {
  return { ok: report.ok, code: report.problem?.code ?? null, seq: report.problem?.seq ?? null };
}

async function judge(file: string, keysText: string): Promise<{ withVerificationKeys: Verdict; withPublicKeysOnly: Verdict }> {
  const columns = keysText.trim().split('\n').map((line) => line.split(' '));
  const verificationKeys = parseVerificationKeys(columns.map((c) => c[1]!).join(','));
  const publicKeys = parsePublicKeys(columns.map((c) => c[2]!).join(','));
  return {
    withVerificationKeys: verdictOf(await verifyExportFile(file, verificationKeys)),
    withPublicKeysOnly: verdictOf(await verifyExportFile(file, [], { publicKeys })),
  };
}

const readme = (records: number) => `# Audit test vectors

Made by \`npm run make:audit-vectors\` (scripts/make-audit-vectors.ts); the format is specified in
[../audit.md](../audit.md), part "Specification". Keys are random, so each run writes other bytes
with the same verdicts; \`expected.json\` holds them.

- \`log.jsonl\`: an export of a whole log of ${records} records: \`key.created\`, \`app.started\`, notes (one holding a
  secret as a salted digest), a \`key.rotated\` record with its co-signature, \`app.stopped\`; epochs of
  ${EPOCH_RECORDS} records (the ratchet is exercised), a checkpoint every ${CHECKPOINT_EVERY} records (declared in \`key.created\`),
  plus rotation and shutdown checkpoints. It is intact.
- \`keys.txt\`: one line per key chain: \`keyId evk1-… epk1-…\` (K0 and the checkpoint public key).
- \`tampered/*.jsonl\`: copies of \`log.jsonl\` with one change each; \`expected.json\` gives, per file, what
  it shows (\`says\`) and the verdict \`{ok, code, seq}\` with the K0s (\`withVerificationKeys\`) and with
  the public keys only (\`withPublicKeysOnly\`, where record MACs are not checked, so an edit shows as
  the broken link of the next record).

Check a verifier against them, e.g. with Executor's own:

\`\`\`sh
executor audit verify --json --file tampered/deleted.jsonl --verification-key evk1-…,evk1-…
executor audit verify --json --file tampered/deleted.jsonl --public-key epk1-…,epk1-…
\`\`\`

Still to come (the parts that change these formats add them): a one-record proof (\`audit prove\`),
and the cases an authenticated export header and forward-secure checkpoint signatures catch (a cut
export whose header \`to\` was edited, a stolen key store rewriting recent history).
`;

async function main(): Promise<void> {
  const out = outDir();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-vectors-'));
  try {
    const { exportText, keysText, epochKey } = makeLog(work);
    fs.rmSync(path.join(out, 'tampered'), { recursive: true, force: true });
    fs.mkdirSync(path.join(out, 'tampered'), { recursive: true });
    fs.writeFileSync(path.join(out, 'log.jsonl'), exportText);
    fs.writeFileSync(path.join(out, 'keys.txt'), keysText);
    fs.writeFileSync(path.join(out, 'README.md'), readme(parse(exportText).filter((line) => line.type === 'record').length));
    const entries: VectorEntry[] = [{ file: 'log.jsonl', says: 'the log as exported', ...(await judge(path.join(out, 'log.jsonl'), keysText)) }];
    if (!entries[0]!.withVerificationKeys.ok || !entries[0]!.withPublicKeysOnly.ok) throw new Error(`the untampered export does not verify: ${JSON.stringify(entries[0])}`);
    for (const tamper of TAMPERS) {
      const file = path.join('tampered', tamper.file);
      fs.writeFileSync(path.join(out, file), write(tamper.edit(parse(exportText), { epochKey })));
      const verdicts = await judge(path.join(out, file), keysText);
      if (verdicts.withVerificationKeys.code !== tamper.code) {
        throw new Error(`${file} gives ${JSON.stringify(verdicts.withVerificationKeys)}, not ${tamper.code}: the vector or the verifier is wrong`);
      }
      entries.push({ file, says: tamper.says, ...verdicts });
    }
    fs.writeFileSync(path.join(out, 'expected.json'), `${JSON.stringify({ format: 'executor-audit-vectors', v: 1, vectors: entries }, null, 2)}\n`);
    process.stdout.write(`wrote ${entries.length} vectors to ${out}\n`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

await main();
