import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { SignedAuditLog, type AuditLogOptions } from '../../src/audit/log/audit-log.js';
import { verifyDataDir } from '../../src/audit/verify/audit-verifier.js';
import { FileKeyStore } from '../../src/audit/keys/key-store.js';
import type { VerifyReport } from '../../src/audit/verify/verify-codes.js';
import { DATABASE_FILE, openDatabase, type Db } from '../../src/store/database.js';
import { tempDir } from './temp-dirs.js';

const ACTOR = { user: 'tester', channel: 'cli' as const };

/** A real data directory whose audit log holds `records` step notes plus app start/stop, closed at rest. */
export function buildAuditLog(options: AuditLogOptions & { records: number; dataDir?: string; perTransaction?: number }): {
  dataDir: string;
} {
  const dataDir = options.dataDir ?? path.join(tempDir('executor-audit-'), 'data');
  fs.mkdirSync(dataDir, { recursive: true });
  const db = openDatabase(dataDir);
  try {
    const log = SignedAuditLog.open(db, new FileKeyStore(dataDir), dataDir, options);
    db.transaction(() => log.append({ kind: 'app.started', actor: ACTOR, detail: { pid: 1 } }))();
    appendNotes(db, log, options.records, 'note', options.perTransaction);
    db.transaction(() => {
      log.append({ kind: 'app.stopped', actor: ACTOR, detail: { pid: 1 } });
      log.checkpoint('shutdown');
    })();
    log.flushAnchor();
  } finally {
    db.close();
  }
  return { dataDir };
}

/** Appends step notes, one transaction each, or `perTransaction` at a time for big fixtures. */
export function appendNotes(db: Db, log: SignedAuditLog, count: number, label = 'note', perTransaction = 1): void {
  for (let start = 0; start < count; start += perTransaction) {
    db.transaction(() => {
      for (let index = start; index < Math.min(count, start + perTransaction); index++) {
        log.append({
          kind: 'step.simulated',
          actor: ACTOR,
          planId: 'plan-1',
          stepId: `step-${index % 7}`,
          detail: { label, index, previewHash: `p${index}` },
        });
      }
    })();
  }
}

/** Opens the log with its keys, as an attacker who stole the key store (or the app itself) would. */
export function withAuditLog<T>(dataDir: string, work: (db: Db, log: SignedAuditLog) => T, options: AuditLogOptions = {}): T {
  const db = openDatabase(dataDir);
  try {
    const log = SignedAuditLog.open(db, new FileKeyStore(dataDir), dataDir, options);
    const result = work(db, log);
    log.flushAnchor();
    return result;
  } finally {
    db.close();
  }
}

/** Edits the database file directly, past its append-only triggers, as someone with the file would. */
export function tamper(dataDir: string, edit: (db: Database.Database) => void): void {
  const db = new Database(path.join(dataDir, DATABASE_FILE));
  try {
    db.exec(
      'DROP TRIGGER IF EXISTS audit_records_no_update; DROP TRIGGER IF EXISTS audit_records_no_delete; DROP TRIGGER IF EXISTS audit_checkpoints_no_update; DROP TRIGGER IF EXISTS audit_checkpoints_no_delete;',
    );
    edit(db);
  } finally {
    db.close();
  }
}

export function verifyLogAt(dataDir: string, options: { workers?: number; parallelFrom?: number } = {}): Promise<VerifyReport> {
  return verifyDataDir(dataDir, { keyStore: new FileKeyStore(dataDir), workers: options.workers ?? 1, parallelFrom: options.parallelFrom });
}

export interface RawRecord {
  seq: number;
  ts: string;
  action: string;
  plan_id: string | null;
  step_id: string | null;
  body: string;
  mac: Buffer;
  hash: Buffer;
  cosign: Buffer | null;
}

export function rawRecord(db: Database.Database, seq: number): RawRecord {
  return db.prepare('SELECT * FROM audit_records WHERE seq = ?').get(seq) as RawRecord;
}

/** Moves records from `seq` on one place up, leaving a hole at `seq` for an inserted row. */
export function openHoleAt(db: Database.Database, seq: number): void {
  db.prepare('UPDATE audit_records SET seq = -seq WHERE seq >= ?').run(seq);
  db.prepare('UPDATE audit_records SET seq = -seq + 1 WHERE seq < 0').run();
}

export function insertRaw(db: Database.Database, row: RawRecord): void {
  db.prepare(
    'INSERT INTO audit_records (seq, ts, action, plan_id, step_id, body, mac, hash, cosign) VALUES (@seq, @ts, @action, @plan_id, @step_id, @body, @mac, @hash, @cosign)',
  ).run(row);
}

/** Who the mixed fixtures' records say acted: the person on each of their channels, an agent, the policy. */
export const MIXED_ACTORS = [
  { user: 'ada', channel: 'web' as const },
  { user: 'ada', channel: 'cli' as const },
  { user: 'agent', channel: 'mcp' as const, client: 'claude-code 1.0' },
  { user: 'policy', channel: 'policy' as const },
  { user: 'bob', channel: 'window' as const },
];

/** Appends step notes whose actor cycles through MIXED_ACTORS: record i (from 0) is MIXED_ACTORS[i % 5]. */
export function appendMixedActors(db: Db, log: SignedAuditLog, count: number, perTransaction = 1000): void {
  for (let start = 0; start < count; start += perTransaction) {
    db.transaction(() => {
      for (let index = start; index < Math.min(count, start + perTransaction); index++) {
        log.append({
          kind: 'step.simulated',
          actor: MIXED_ACTORS[index % MIXED_ACTORS.length]!,
          planId: `plan-${index >> 6}`,
          stepId: `step-${index >> 2}`,
          detail: { index, previewHash: `p${index}` },
        });
      }
    })();
  }
}

/** A data directory (with a policy, ready for `executor serve`) whose log holds `records` mixed-actor notes, closed at rest. */
export function buildMixedLog(dataDir: string, records: number): void {
  fs.mkdirSync(dataDir, { recursive: true });
  const db = openDatabase(dataDir);
  try {
    const log = SignedAuditLog.open(db, new FileKeyStore(dataDir), dataDir);
    appendMixedActors(db, log, records);
    db.transaction(() => log.checkpoint('shutdown'))();
    log.flushAnchor();
  } finally {
    db.close();
  }
}
