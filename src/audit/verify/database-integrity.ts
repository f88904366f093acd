import type { Db } from '../../store/database.js';
import { isDatabaseCorrupt } from '../../domain/errors.js';

/** What SQLite's integrity check found in a database file: nothing (ok), or lines naming the damaged tables. */
export interface IntegrityFinding {
  ok: boolean;
  /** The tables and indexes the damage touches, where SQLite's words name them. */
  objects: string[];
  /** SQLite's own lines (at most MAX_LINES). */
  lines: string[];
}

const MAX_LINES = 20;

/** The table or index each b-tree root page belongs to, for SQLite's "Tree N page …" lines; empty when the schema itself is unreadable. */
function objectsByRootPage(db: Db): Map<number, string> {
  try {
    const rows = db.prepare('SELECT name, type, tbl_name, rootpage FROM sqlite_master WHERE rootpage > 0').all() as {
      name: string;
      type: string;
      tbl_name: string;
      rootpage: number;
    }[];
    return new Map(rows.map((row) => [row.rootpage, row.type === 'index' ? `${row.tbl_name} (index ${row.name})` : row.name]));
  } catch {
    return new Map();
  }
}

/**
 * Runs SQLite's integrity check over the whole file: verify's chain and signatures cover the audit
 * tables, and a damaged page anywhere else (the steps, their backups) would otherwise pass as "intact"
 * while `steps list` fails. A file too damaged for the check to run at all is a finding too.
 */
export function checkDatabaseIntegrity(db: Db): IntegrityFinding {
  let lines: string[];
  try {
    lines = (db.prepare(`PRAGMA integrity_check(${MAX_LINES})`).pluck().all() as string[]).flatMap((line) => line.split('\n'));
  } catch (error) {
    if (!isDatabaseCorrupt(error)) throw error;
    return { ok: false, objects: [], lines: [(error as Error).message] };
  }
  if (lines.length === 1 && lines[0] === 'ok') return { ok: true, objects: [], lines: [] };
  const byRoot = objectsByRootPage(db);
  const objects = new Set<string>();
  for (const line of lines) {
    const tree = /Tree (\d+) page/.exec(line);
    if (tree) objects.add(byRoot.get(Number(tree[1])) ?? `the b-tree at page ${tree[1]}`);
    const index = /(?:from|in) index (\S+)/.exec(line);
    if (index) objects.add(`index ${index[1]}`);
  }
  return { ok: false, objects: [...objects], lines: lines.filter((line) => line !== 'ok') };
}

/** The words of a DATABASE_CORRUPT finding: which file, where the damage is, and what to do. */
export function integrityWords(file: string, finding: IntegrityFinding): string {
  const where = finding.objects.length ? ` in ${finding.objects.join(', ')}` : '';
  return (
    `SQLite's integrity check finds ${file} damaged${where} (${finding.lines.slice(0, 3).join('; ')}). ` +
    'Keep a copy of the file as it is, then restore executor.db from a backup of the data directory; ' +
    'what is still readable can be kept first with `executor audit export --out FILE` and `executor steps list --json`'
  );
}
