// Audit log cost, each figure a ratio to a baseline measured in the same run:
//  1. signed appends, each its own committed transaction (synchronous=FULL), vs a plain insert of the same rows;
//  2. signed appends in batches of 1,000 per transaction, vs plain inserts in the same batches;
//  3. verify throughput on 200,000 records (worker threads on every core, up to 4) vs a bare read of the same
//     rows that computes one sha256 per row: on one thread (the target's baseline), and split over the same
//     number of worker threads as verify (printed beside it); the three alternate round by round.
//  4. the Merkle tree: inclusion proof generation (from the stored tree, AuditTree) and verification p50 on a
//     1,000,000-record log, and consistency proofs between checkpoints. The tree table is filled directly (fast);
//     the proofs come from the product's code.
//  5. cold start of `audit prove` and `audit verify-proof` beside `--help` (the compiled CLI: npm run build:cli first).
// Run: npx tsx bench/audit.ts   (or npm run bench:audit); BENCH_ONLY=verify or BENCH_ONLY=start for one figure.
import Database from 'better-sqlite3';
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { SignedAuditLog } from '../src/audit/log/audit-log.js';
import { AuditTree } from '../src/audit/log/audit-tree.js';
import { leafHash, nodePosition, nodesCompletedBy, treeRoot, verifyConsistency, verifyInclusion } from '../src/audit/format/merkle.js';
import { queryAudit } from '../src/audit/log/audit-query.js';
import { verifyDataDir } from '../src/audit/verify/audit-verifier.js';
import type { AuditEvent } from '../src/domain/audit-event.js';
import { FileKeyStore } from '../src/audit/keys/key-store.js';
import { verifyWorkerCount } from '../src/audit/verify/verify-workers.js';
import { DATABASE_FILE, openDatabase, type Db } from '../src/store/database.js';

const PER_COMMIT = Number(process.env.BENCH_PER_COMMIT ?? 2500);
const COMMIT_ROUNDS = 5;
const BATCHED = Number(process.env.BENCH_BATCHED ?? 60_000);
const VERIFY = Number(process.env.BENCH_VERIFY ?? 200_000);
const BATCH = 1000;
const TREE = Number(process.env.BENCH_TREE ?? 1_000_000);
const PROOFS = 2000;

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-audit-'));
const actor = { user: 'bench', channel: 'cli' as const };

function event(index: number): AuditEvent {
  return {
    kind: 'step.executed',
    actor,
    planId: `plan-${index >> 4}`,
    stepId: `step-${index}`,
    detail: {
      from: 'running',
      to: 'executed',
      result: { path: `/home/me/project/src/file-${index}.ts`, bytesWritten: 1200 + (index % 500) },
    },
  };
}

function freshDataDir(name: string): string {
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * The baseline: the same table, the same rows (every field a signed record carries, as plain
 * JSON.stringify output), but no canonical form, no secret scrubbing, no MAC, no hash, no chain:
 * prevHash and the MAC/hash columns hold fixed placeholders of the same size.
 */
function plainWriter(db: Db): (index: number) => void {
  const insert = db.prepare(
    'INSERT INTO audit_records (seq, ts, action, plan_id, step_id, body, mac, hash, cosign) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)',
  );
  const zero = Buffer.alloc(32);
  const placeholderHash = '0'.repeat(64);
  const logId = crypto.randomUUID();
  let seq = 0;
  const env = {
    appVersion: '0.1.0',
    platform: `${process.platform}-${process.arch}`,
    node: process.versions.node,
    electron: null,
    sandbox: null,
  };
  return (index) => {
    const e = event(index);
    const ts = new Date().toISOString();
    seq++;
    const { result, ...args } = e.detail as { result: unknown };
    const body = JSON.stringify({
      v: 1,
      logId,
      seq,
      ts,
      keyId: '0000000000000000',
      epoch: 0,
      prevHash: placeholderHash,
      action: e.kind,
      planId: e.planId,
      stepId: e.stepId,
      userId: e.actor,
      args,
      preHash: null,
      postHash: null,
      result,
      executorEnv: env,
    });
    insert.run(seq, ts, e.kind, e.planId, e.stepId, body, zero, zero);
  };
}

function signedWriter(db: Db, dataDir: string): (index: number) => void {
  const log = SignedAuditLog.open(db, new FileKeyStore(dataDir), dataDir);
  return (index) => log.append(event(index));
}

function timeWrites(
  name: string,
  count: number,
  perTransaction: number,
  make: (db: Db, dataDir: string) => (index: number) => void,
  prepare?: (db: Db) => void,
): number {
  const dataDir = freshDataDir(name);
  const db = openDatabase(dataDir);
  prepare?.(db);
  const write = make(db, dataDir);
  const started = process.hrtime.bigint();
  const cpuBefore = process.cpuUsage();
  for (let start = 0; start < count; start += perTransaction) {
    db.transaction(() => {
      for (let index = start; index < Math.min(count, start + perTransaction); index++) write(index);
    })();
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  lastCpuMicros = (cpu.user + cpu.system) / count;
  db.close();
  return count / seconds;
}

/** CPU time (µs per record) of the last timeWrites: on a machine others load, a steadier figure than wall time for batched appends. */
let lastCpuMicros = 0;

function bareReadWithSha256(file: string): number {
  const db = new Database(file, { readonly: true });
  const rows = db.prepare('SELECT body, mac FROM audit_records ORDER BY seq').raw(true);
  let count = 0;
  let xor = 0;
  const started = process.hrtime.bigint();
  for (const row of rows.iterate() as Iterable<[string, Buffer]>) {
    const digest = crypto.createHash('sha256').update(row[0]).update(row[1]).digest();
    xor ^= digest[0]!;
    count++;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  db.close();
  if (xor === 256) console.log('unreachable');
  return count / seconds;
}

/**
 * The same bare read+sha256 split as verify splits the log: `workers` threads, each on its own
 * read-only connection over its own range of seqs, started fresh for each run (verify's are warm).
 */
const BARE_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const crypto = require('node:crypto');
const Database = require(workerData.sqlite);
const db = new Database(workerData.file, { readonly: true });
db.pragma('mmap_size = 1073741824');
const rows = db.prepare('SELECT body, mac FROM audit_records WHERE seq >= ? AND seq <= ? ORDER BY seq').raw(true);
parentPort.postMessage('ready');
parentPort.once('message', () => {
  let count = 0;
  let xor = 0;
  for (const row of rows.iterate(workerData.from, workerData.to)) {
    xor ^= crypto.createHash('sha256').update(row[0]).update(row[1]).digest()[0];
    count++;
  }
  db.close();
  parentPort.postMessage({ count, xor });
});`;

async function bareReadWithSha256OnWorkers(file: string, records: number, workers: number): Promise<number> {
  const size = Math.ceil(records / workers);
  const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
  const threads = Array.from(
    { length: workers },
    (_, index) =>
      new Worker(BARE_WORKER, {
        eval: true,
        workerData: { file, sqlite, from: 1 + index * size, to: Math.min(records, (index + 1) * size) },
      }),
  );
  // Timed from when every thread has loaded SQLite and opened the file: what is left is the read and the hash.
  await Promise.all(threads.map((thread) => new Promise((resolve, reject) => thread.once('message', resolve).once('error', reject))));
  const started = process.hrtime.bigint();
  const counts = await Promise.all(
    threads.map(
      (thread) =>
        new Promise<number>((resolve, reject) => {
          thread.once('message', (reply: { count: number }) => resolve(reply.count));
          thread.once('error', reject);
          thread.postMessage('go');
        }),
    ),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await Promise.all(threads.map((thread) => thread.terminate()));
  const count = counts.reduce((sum, part) => sum + part, 0);
  if (count !== records) throw new Error(`the bare workers read ${count} records, not ${records}`);
  return count / seconds;
}

/** A 1,000,000-leaf tree in the product's table, filled directly: what a log of that many records keeps. */
function fillTree(size: number): Db {
  const db = openDatabase(freshDataDir('tree'));
  const insert = db.prepare('INSERT INTO audit_tree (pos, hash) VALUES (?, ?)');
  // The right edge of the tree so far, per level: all that completing the next nodes reads.
  const edge = new Map<string, Buffer>();
  const read = (level: number, index: number) => edge.get(`${level}/${index}`)!;
  for (let start = 0; start < size; start += 100_000) {
    db.transaction(() => {
      for (let index = start; index < Math.min(size, start + 100_000); index++) {
        const leaf = leafHash(crypto.createHash('sha256').update(`record ${index}`).digest());
        for (const node of nodesCompletedBy(index, leaf, read)) {
          insert.run(nodePosition(node.level, node.index), node.hash);
          edge.set(`${node.level}/${node.index}`, node.hash);
          edge.delete(`${node.level}/${node.index - 2}`);
        }
      }
    })();
  }
  return db;
}

function p50(samples: number[]): number {
  return [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
}

function micros(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e3;
}

/** Proof generation and verification on the stored tree; each sample one proof, p50 in µs. */
function treeFigures(): string[] {
  const filled = process.hrtime.bigint();
  const db = fillTree(TREE);
  const fillSeconds = micros(filled) / 1e6;
  try {
    const tree = new AuditTree(db);
    const root = tree.root(TREE);
    const leaf = (seq: number) =>
      leafHash(
        crypto
          .createHash('sha256')
          .update(`record ${seq - 1}`)
          .digest(),
      );
    const make: number[] = [];
    const check: number[] = [];
    let hashes = 0;
    for (let sample = 0; sample < PROOFS; sample++) {
      const seq = 1 + Math.floor(Math.random() * TREE);
      const expected = leaf(seq);
      let started = process.hrtime.bigint();
      const proof = tree.inclusionProof(seq, TREE);
      make.push(micros(started));
      started = process.hrtime.bigint();
      const holds = verifyInclusion(seq - 1, TREE, expected, proof, root);
      check.push(micros(started));
      if (!holds) throw new Error(`the inclusion proof of ${seq} did not verify`);
      hashes += proof.length;
    }
    const consistency: number[] = [];
    for (let sample = 0; sample < PROOFS / 4; sample++) {
      const size1 = 1 + Math.floor(Math.random() * (TREE - 1));
      const started = process.hrtime.bigint();
      const proof = tree.consistencyProof(size1, TREE);
      consistency.push(micros(started));
      if (!verifyConsistency(size1, TREE, treeRoot(size1, tree.read), root, proof))
        throw new Error(`the consistency proof from ${size1} did not verify`);
    }
    const rows = db.prepare('SELECT count(*) FROM audit_tree').pluck().get() as number;
    return [
      `Merkle tree of ${TREE.toLocaleString('en-US')} records: ${rows.toLocaleString('en-US')} stored subtrees (filled in ${fillSeconds.toFixed(1)} s), proofs of ${(hashes / PROOFS).toFixed(1)} hashes on average`,
      `  inclusion proof generation p50 ${p50(make).toFixed(1)} µs, verification p50 ${p50(check).toFixed(1)} µs; consistency proof generation p50 ${p50(consistency).toFixed(1)} µs  (${PROOFS} samples; no target, printed for the record)`,
    ];
  } finally {
    db.close();
  }
}

function line(label: string, signed: number, baseline: number, unit: string, ratio: number, target: string): void {
  console.log(
    `${label.padEnd(34)} signed ${signed.toFixed(0).padStart(8)} ${unit}   baseline ${baseline.toFixed(0).padStart(8)} ${unit}   ratio ${ratio.toFixed(2)}×   (target ${target})`,
  );
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Verify on VERIFY signed records (verify's own worker threads) against a bare read+sha256 of the same rows, round by round. */
async function verifyFigures(): Promise<{
  file: string;
  bare: number;
  bareOnWorkers: number;
  verifyRate: number;
  singleRate: number;
  workers: number;
}> {
  const verifyDir = freshDataDir('verify');
  const db = openDatabase(verifyDir);
  const write = signedWriter(db, verifyDir);
  for (let start = 0; start < VERIFY; start += BATCH)
    db.transaction(() => {
      for (let i = start; i < start + BATCH; i++) write(i);
    })();
  // The anchor is written once its checkpoint's transaction is over (on the next turn of the loop): without it verify finds ANCHOR_MISSING.
  await new Promise((resolve) => setImmediate(resolve));
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const file = path.join(verifyDir, DATABASE_FILE);
  const records = (() => {
    const counter = new Database(file, { readonly: true });
    try {
      return counter.prepare('SELECT count(*) FROM audit_records').pluck().get() as number;
    } finally {
      counter.close();
    }
  })();
  const workers = verifyWorkerCount();
  // Warm every path (page cache, JIT, verify's worker pool), then alternate them round by round.
  bareReadWithSha256(file);
  await bareReadWithSha256OnWorkers(file, records, workers);
  let report = await verifyDataDir(verifyDir, { keyStore: new FileKeyStore(verifyDir) });
  const bareRates: number[] = [];
  const bareWorkerRates: number[] = [];
  const verifyRates: number[] = [];
  for (let round = 0; round < 3; round++) {
    bareRates.push(bareReadWithSha256(file));
    bareWorkerRates.push(await bareReadWithSha256OnWorkers(file, records, workers));
    const started = process.hrtime.bigint();
    report = await verifyDataDir(verifyDir, { keyStore: new FileKeyStore(verifyDir) });
    verifyRates.push(report.records / (Number(process.hrtime.bigint() - started) / 1e9));
  }
  if (!report.ok || report.records !== records) throw new Error(`the bench log did not verify: ${JSON.stringify(report.problem)}`);
  const bare = median(bareRates);
  const bareOnWorkers = median(bareWorkerRates);
  const verifyRate = median(verifyRates);
  const singleStarted = process.hrtime.bigint();
  await verifyDataDir(verifyDir, { keyStore: new FileKeyStore(verifyDir), workers: 1 });
  const singleRate = records / (Number(process.hrtime.bigint() - singleStarted) / 1e9);

  return { file, bare, bareOnWorkers, verifyRate, singleRate, workers };
}

/**
 * Cold start of `audit prove` and `audit verify-proof` beside `--help` and `node -e 0`, the compiled
 * CLI (dist/, `npm run build:cli` first), median of `runs` alternating rounds: each command loads only
 * what it needs (a proof check no database, no key store, no schema library).
 */
function cliStartFigures(runs = 11): string[] {
  const cli = path.join(import.meta.dirname, '..', 'bin', 'executor.js');
  const dataDir = freshDataDir('proof');
  const db = openDatabase(dataDir);
  const write = signedWriter(db, dataDir);
  db.transaction(() => {
    for (let i = 0; i < 1200; i++) write(i);
  })();
  db.close();
  const proofFile = path.join(dataDir, 'proof.json');
  const made = spawnSync(process.execPath, [cli, '--data-dir', dataDir, 'audit', 'prove', '7', '--out', proofFile], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`audit prove failed: ${made.stderr}`);
  const keys = spawnSync(process.execPath, [cli, '--data-dir', dataDir, '--json', 'keys', 'export-verification', '--keep'], {
    encoding: 'utf8',
  });
  const epk = (JSON.parse(keys.stdout) as { publicKey: string }[]).map((line) => line.publicKey).join(',');
  const commands: [string, string[]][] = [
    ['node -e 0', ['-e', '0']],
    ['executor --help', [cli, '--help']],
    ['executor audit prove 7', [cli, '--data-dir', dataDir, 'audit', 'prove', '7']],
    ['executor audit verify-proof', [cli, 'audit', 'verify-proof', proofFile, '--key', epk]],
  ];
  const times = commands.map(() => [] as number[]);
  for (let round = 0; round < runs; round++)
    commands.forEach(([label, args], index) => {
      const started = process.hrtime.bigint();
      const result = spawnSync(process.execPath, args, { encoding: 'utf8' });
      if (result.status !== 0) throw new Error(`${label} exited ${result.status}: ${result.stderr}`);
      times[index]!.push(Number(process.hrtime.bigint() - started) / 1e6);
    });
  const [node, help, prove, check] = times.map(median) as [number, number, number, number];
  return [
    `cold start (median of ${runs}): node -e 0 ${node.toFixed(0)} ms, --help ${help.toFixed(0)} ms, audit prove ${prove.toFixed(0)} ms (${(prove / help).toFixed(2)}× --help), audit verify-proof ${check.toFixed(0)} ms (${(check / help).toFixed(2)}× --help)  (target: about --help's)`,
  ];
}

async function main(): Promise<void> {
  // BENCH_ONLY=verify or BENCH_ONLY=start: one figure alone, for a quick check on a shared machine.
  if (process.env.BENCH_ONLY === 'verify') {
    const { bare, bareOnWorkers, verifyRate, singleRate, workers } = await verifyFigures();
    line(`verify (${VERIFY}, ${workers} workers)`, verifyRate, bare, 'rec/s', verifyRate / bare, '≥ 0.8× of bare read on one thread');
    line(`  verify vs bare on ${workers} workers`, verifyRate, bareOnWorkers, 'rec/s', verifyRate / bareOnWorkers, 'none');
    line(`  verify on one thread, for scale`, singleRate, bare, 'rec/s', singleRate / bare, 'none');
    console.log(`verify ${(verifyRate / bare).toFixed(2)}× of bare read+sha256 on one thread`);
    fs.rmSync(root, { recursive: true, force: true });
    return;
  }
  if (process.env.BENCH_ONLY === 'start') {
    for (const text of cliStartFigures()) console.log(text);
    fs.rmSync(root, { recursive: true, force: true });
    return;
  }
  console.log(`audit bench on ${os.cpus().length} core(s), Node ${process.versions.node}, in ${root}`);
  // Warm both paths (JIT, page cache) before measuring.
  timeWrites('warm-plain', 2000, BATCH, plainWriter);
  timeWrites('warm-signed', 2000, BATCH, signedWriter);

  // 1. each append its own committed transaction; alternate the two to share the disk's mood.
  const plainCommit: number[] = [];
  const signedCommit: number[] = [];
  for (let round = 0; round < COMMIT_ROUNDS; round++) {
    plainCommit.push(timeWrites(`commit-plain-${round}`, PER_COMMIT / COMMIT_ROUNDS, 1, plainWriter));
    signedCommit.push(timeWrites(`commit-signed-${round}`, PER_COMMIT / COMMIT_ROUNDS, 1, (db, dir) => signedWriter(db, dir)));
  }
  const plainPerCommit = median(plainCommit);
  const signedPerCommit = median(signedCommit);

  // 2. batches of 1,000
  const plainBatched: number[] = [];
  const signedBatched: number[] = [];
  const plainBatchedCpu: number[] = [];
  const signedBatchedCpu: number[] = [];
  for (let round = 0; round < 3; round++) {
    plainBatched.push(timeWrites(`batch-plain-${round}`, BATCHED / 3, BATCH, plainWriter));
    plainBatchedCpu.push(lastCpuMicros);
    signedBatched.push(timeWrites(`batch-signed-${round}`, BATCHED / 3, BATCH, (db, dir) => signedWriter(db, dir)));
    signedBatchedCpu.push(lastCpuMicros);
  }

  // 2b. what the who-acted indexes (channel, user: expressions on the signed body) cost each batched append
  const withoutUserIndexes: number[] = [];
  const withUserIndexes: number[] = [];
  const dropUserIndexes = (db: Db) => db.exec('DROP INDEX audit_records_channel; DROP INDEX audit_records_user;');
  // The same pair on plain inserts, where an index is a bigger share of the work: the cost in µs per append.
  const plainWithout: number[] = [];
  const plainWith: number[] = [];
  for (let round = 0; round < 5; round++) {
    withoutUserIndexes.push(timeWrites(`batch-noidx-${round}`, BATCHED / 5, BATCH, (db, dir) => signedWriter(db, dir), dropUserIndexes));
    withUserIndexes.push(timeWrites(`batch-idx-${round}`, BATCHED / 5, BATCH, (db, dir) => signedWriter(db, dir)));
    plainWithout.push(timeWrites(`plain-noidx-${round}`, BATCHED / 5, BATCH, plainWriter, dropUserIndexes));
    plainWith.push(timeWrites(`plain-idx-${round}`, BATCHED / 5, BATCH, plainWriter));
  }

  // 3. verify
  const verified = await verifyFigures();
  const { file, bare, bareOnWorkers, verifyRate, singleRate, workers } = verified;

  // getAudit pages on the same log: each filter should ride its index (no ratio target; printed for the record).
  const reader = new Database(file, { readonly: true });
  const midTs = (reader.prepare('SELECT ts FROM audit_records WHERE seq = ?').get(Math.floor(VERIFY / 2)) as { ts: string }).ts;
  const pageTimes: string[] = [];
  for (const [label, query] of [
    ['newest page', {}],
    ['by step', { filters: { stepId: `step-${VERIFY - 10}` } }],
    ['by plan', { filters: { planId: 'plan-100' } }],
    ['by action', { filters: { action: 'app.started' } }],
    ['by channel', { filters: { channel: 'cli' } }],
    ['by user', { filters: { user: 'bench' } }],
    ['since mid-log', { filters: { since: midTs }, order: 'asc' }],
  ] as const) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < 20; i++) queryAudit(reader, { ...query, limit: 100 });
    pageTimes.push(`${label} ${(Number(process.hrtime.bigint() - started) / 20 / 1e6).toFixed(2)} ms`);
  }
  reader.close();

  console.log('');
  line(`per-commit appends (${PER_COMMIT})`, signedPerCommit, plainPerCommit, 'rec/s', plainPerCommit / signedPerCommit, '≤ 1.2× slower');
  line(
    `batched appends (${BATCHED}, 1,000/tx)`,
    median(signedBatched),
    median(plainBatched),
    'rec/s',
    median(plainBatched) / median(signedBatched),
    '≤ 2× slower',
  );
  console.log(
    `${'  batched, CPU time per append'.padEnd(34)} signed ${median(signedBatchedCpu).toFixed(1).padStart(8)} µs      baseline ${median(plainBatchedCpu).toFixed(1).padStart(8)} µs      ratio ${(median(signedBatchedCpu) / median(plainBatchedCpu)).toFixed(2)}×   (no target; steadier than wall time when the machine is shared)`,
  );
  line(
    `  of which userId indexes (batched)`,
    median(withUserIndexes),
    median(withoutUserIndexes),
    'rec/s',
    median(withoutUserIndexes) / median(withUserIndexes),
    'none; baseline = signed, no channel/user index',
  );
  const indexMicros = (1 / median(plainWith) - 1 / median(plainWithout)) * 1e6;
  console.log(
    `${'  userId indexes, plain inserts'.padEnd(34)} with ${median(plainWith).toFixed(0).padStart(8)} rec/s   without ${median(plainWithout).toFixed(0).padStart(8)} rec/s   ≈ ${indexMicros.toFixed(1)} µs per append for the two index entries`,
  );
  line(`verify (${VERIFY}, ${workers} workers)`, verifyRate, bare, 'rec/s', verifyRate / bare, '≥ 0.8× of bare read on one thread');
  line(
    `  verify vs bare on ${workers} workers`,
    verifyRate,
    bareOnWorkers,
    'rec/s',
    verifyRate / bareOnWorkers,
    'none; the same rows read+sha256 split as verify splits them',
  );
  line(`  verify on one thread, for scale`, singleRate, bare, 'rec/s', singleRate / bare, 'none');
  console.log(`getAudit page of 100 on ${VERIFY} records: ${pageTimes.join(', ')}`);
  for (const text of treeFigures()) console.log(text);
  for (const text of cliStartFigures()) console.log(text);
  console.log('');
  console.log(
    `per-commit slowdown ${(plainPerCommit / signedPerCommit).toFixed(2)}×, batched slowdown ${(median(plainBatched) / median(signedBatched)).toFixed(2)}×, verify ${(verifyRate / bare).toFixed(2)}× of bare read+sha256 (${(verifyRate / bareOnWorkers).toFixed(2)}× of it on ${workers} workers)`,
  );
  fs.rmSync(root, { recursive: true, force: true });
}

await main();
