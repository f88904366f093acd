import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { explainAuditQuery, queryAudit, type AuditEntry } from '../../../../src/audit/log/audit-query.js';
import { openDatabase } from '../../../../src/store/database.js';
import { MIXED_ACTORS, buildMixedLog, tamper, verifyLogAt } from '../../../helpers/audit-log-fixture.js';
import { suiteTeardown } from '../../../helpers/teardown.js';
import { tempDir } from '../../../helpers/temp-dirs.js';

/** Reads every page of a query, following nextCursor, as the window and `audit show` do. */
function allPages(
  db: ReturnType<typeof openDatabase>,
  query: Record<string, unknown>,
): { seqs: number[]; entries: AuditEntry[]; pages: number } {
  const entries: AuditEntry[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page = queryAudit(db, { ...query, cursor });
    entries.push(...page.entries);
    cursor = page.nextCursor;
    pages++;
  } while (cursor);
  return { seqs: entries.map((entry) => entry.seq), entries, pages };
}

describe('getAudit filters by who acted, in SQL', () => {
  const base = tempDir('executor-audit-query-', suiteTeardown());
  const dataDir = path.join(base, 'data');
  // 2,000 records after key.created; note i was made by MIXED_ACTORS[i % 5].
  buildMixedLog(dataDir, 2_000);

  it('by channel and by user, cursor-paged across pages both ways, exactly the records whose signed body names them', () => {
    const db = openDatabase(dataDir, { readonly: true });
    try {
      const bodies = db.prepare('SELECT seq, body FROM audit_records ORDER BY seq').all() as { seq: number; body: string }[];
      const expected = (match: (userId: { user: string; channel: string }) => boolean) =>
        bodies.filter((row) => match((JSON.parse(row.body) as { userId: { user: string; channel: string } }).userId)).map((row) => row.seq);

      const mcp = allPages(db, { filters: { channel: 'mcp' }, limit: 70 });
      expect(mcp.seqs).toEqual(expected((who) => who.channel === 'mcp').reverse());
      expect(mcp.seqs).toHaveLength(400);
      expect(mcp.pages).toBe(Math.ceil(400 / 70));
      expect(mcp.entries.every((entry) => entry.userId.client === 'claude-code 1.0')).toBe(true);

      const ada = allPages(db, { filters: { user: 'ada' }, order: 'asc', limit: 128 });
      expect(ada.seqs).toEqual(expected((who) => who.user === 'ada'));
      expect(new Set(ada.entries.map((entry) => entry.userId.channel))).toEqual(new Set(['web', 'cli']));

      const adaOnCli = allPages(db, { filters: { user: 'ada', channel: 'cli' }, limit: 99 });
      expect(adaOnCli.seqs).toEqual(expected((who) => who.user === 'ada' && who.channel === 'cli').reverse());

      // Combined with the other filters and a seq bound from a cursor.
      const planned = allPages(db, { filters: { channel: 'window', planId: 'plan-3' }, limit: 5 });
      expect(planned.entries.every((entry) => entry.userId.channel === 'window' && entry.planId === 'plan-3')).toBe(true);
      expect(planned.seqs.length).toBeGreaterThan(5);

      expect(allPages(db, { filters: { channel: 'nobody' } }).seqs).toEqual([]);
      expect(() => queryAudit(db, { filters: { channel: '' } })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
      expect(() => queryAudit(db, { filters: { user: 'x'.repeat(201) } })).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
    } finally {
      db.close();
    }
  });

  it('rides the expression indexes on the body (EXPLAIN QUERY PLAN), never a scan of the table', () => {
    const db = openDatabase(dataDir, { readonly: true });
    try {
      expect(explainAuditQuery(db, 'channel')).toMatch(/USING INDEX audit_records_channel/);
      expect(explainAuditQuery(db, 'user')).toMatch(/USING INDEX audit_records_user/);
      expect(explainAuditQuery(db, 'channel')).not.toMatch(/SCAN audit_records(?! USING)/);
      expect(MIXED_ACTORS).toHaveLength(5);
    } finally {
      db.close();
    }
  });

  it('the index holds the signed value: a body edited past the triggers is found under its new channel, and verify names it', async () => {
    const copy = path.join(tempDir(), 'data');
    buildMixedLog(copy, 50);
    tamper(copy, (db) => {
      const row = db.prepare('SELECT seq, body FROM audit_records WHERE seq = 10').get() as { seq: number; body: string };
      db.prepare('UPDATE audit_records SET body = ? WHERE seq = 10').run(row.body.replace(/"channel":"[a-z]+"/, '"channel":"forged"'));
    });
    const db = openDatabase(copy, { readonly: true });
    try {
      expect(allPages(db, { filters: { channel: 'forged' } }).seqs).toEqual([10]);
    } finally {
      db.close();
    }
    const report = await verifyLogAt(copy);
    expect(report.problem).toMatchObject({ code: 'EDITED', seq: 10 });
  });
});
