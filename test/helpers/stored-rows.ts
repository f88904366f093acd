import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';

/** What a data directory holds that a refused input must not add to: plans, steps, audit records. Read-only, beside a running host. */
export function storedRows(dataDir: string): { plans: number; steps: number; auditRecords: number } {
  const file = path.join(dataDir, 'executor.db');
  if (!fs.existsSync(file)) return { plans: 0, steps: 0, auditRecords: 0 };
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const count = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    return { plans: count('plans'), steps: count('steps'), auditRecords: count('audit_records') };
  } finally {
    db.close();
  }
}

/** The args of every audit record of one action, oldest first, read from the database beside the host. */
export function auditArgsOf(dataDir: string, action: string): Record<string, unknown>[] {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return (db.prepare('SELECT body FROM audit_records ORDER BY seq').all() as { body: Buffer | string }[])
      .map((row) => JSON.parse(String(row.body)) as { action: string; args: Record<string, unknown> })
      .filter((record) => record.action === action)
      .map((record) => record.args);
  } finally {
    db.close();
  }
}
