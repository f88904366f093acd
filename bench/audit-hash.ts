/**
 * `audit hash VALUE` on a log whose every record holds a secret digest (the worst case: each
 * record's own salt means one HMAC per candidate form per record). Prints the search time against
 * a baseline measured in the same run: reading the same bodies that hold a digest (SQLite's instr
 * filter) and running one SHA-256 over each. Also the host's sliced search (it yields between
 * slices so the host answers meanwhile), which must cost little more than the plain one.
 *
 *   npx tsx bench/audit-hash.ts            # BENCH_HASH_RECORDS=100000 by default
 */
import Database from 'better-sqlite3';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SignedAuditLog } from '../src/audit/log/audit-log.js';
import { findSecretDigest, findSecretDigestInSlices } from '../src/audit/log/audit-reader.js';
import { FileKeyStore } from '../src/audit/keys/key-store.js';
import { DATABASE_FILE, openDatabase } from '../src/store/database.js';

const RECORDS = Number(process.env.BENCH_HASH_RECORDS ?? 100_000);
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'executor-bench-hash-'));

function seconds(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function main(): Promise<void> {
  const dataDir = path.join(root, 'data');
  fs.mkdirSync(dataDir);
  const db = openDatabase(dataDir);
  const log = SignedAuditLog.open(db, new FileKeyStore(dataDir), dataDir);
  for (let start = 0; start < RECORDS; start += 1000) {
    db.transaction(() => {
      for (let index = start; index < Math.min(RECORDS, start + 1000); index++) {
        log.append({
          kind: 'step.proposed',
          actor: { user: 'bench', channel: 'cli' },
          stepId: `step-${index}`,
          detail: { action: 'runCommand', args: { command: `mysql -uroot -psecret-${index} shop -e 'select 1'` } },
        });
      }
    })();
  }
  const salt = log.keys.salt;
  db.close();

  const file = path.join(dataDir, DATABASE_FILE);
  const reader = new Database(file, { readonly: true });
  let started = process.hrtime.bigint();
  let bodies = 0;
  for (const [body] of reader
    .prepare("SELECT body FROM audit_records WHERE instr(body, 'hmac-sha256:') > 0 ORDER BY seq")
    .raw(true)
    .iterate() as Iterable<[string]>) {
    crypto.createHash('sha256').update(body).digest();
    bodies += 1;
  }
  const baseline = seconds(started);

  started = process.hrtime.bigint();
  const found = findSecretDigest(reader, salt, `secret-${RECORDS - 1}`);
  const plain = seconds(started);
  started = process.hrtime.bigint();
  const sliced = await findSecretDigestInSlices(reader, salt, `secret-${RECORDS - 1}`);
  const host = seconds(started);
  reader.close();
  if (found.seqs.length !== 1 || sliced.seqs.length !== 1)
    throw new Error(`expected one record to hold the value, found ${found.seqs.length}/${sliced.seqs.length}`);

  console.log(`audit hash over ${RECORDS} records (${bodies} holding a digest):`);
  console.log(`  baseline read + sha256 of those bodies: ${baseline.toFixed(2)} s`);
  console.log(`  search (CLI, one pass):                 ${plain.toFixed(2)} s  ${(plain / baseline).toFixed(2)}× baseline`);
  console.log(`  search (host, in slices):               ${host.toFixed(2)} s  ${(host / plain).toFixed(2)}× the one-pass search`);
  fs.rmSync(root, { recursive: true, force: true });
}

await main();
