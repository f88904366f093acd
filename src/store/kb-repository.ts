import type { Db } from './database.js';
import type { KbEntry } from '../domain/kb-entry.js';

interface KbRow {
  entry_id: string;
  step_id: string;
  title: string;
  content: string;
  tags_json: string;
  created_at: string;
}

const toEntry = (row: KbRow): KbEntry => ({
  entryId: row.entry_id,
  stepId: row.step_id,
  title: row.title,
  content: row.content,
  tags: JSON.parse(row.tags_json) as string[],
  createdAt: row.created_at,
});

/** The knowledge base agents add to; it lives in the same database so its changes share the audit trail. */
export class KbRepository {
  constructor(private readonly db: Db) {}

  insert(entry: Omit<KbEntry, 'createdAt'>): KbEntry {
    const createdAt = new Date().toISOString();
    this.db
      .prepare('INSERT INTO kb_entries (entry_id, step_id, title, content, tags_json, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(entry.entryId, entry.stepId, entry.title, entry.content, JSON.stringify(entry.tags), createdAt);
    return { ...entry, createdAt };
  }

  get(entryId: string): KbEntry | undefined {
    const row = this.db.prepare('SELECT * FROM kb_entries WHERE entry_id = ?').get(entryId) as KbRow | undefined;
    return row && toEntry(row);
  }

  delete(entryId: string): boolean {
    return this.db.prepare('DELETE FROM kb_entries WHERE entry_id = ?').run(entryId).changes > 0;
  }

  search(query: string, limit = 20): KbEntry[] {
    const pattern = `%${query.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    return (
      this.db
        .prepare(`SELECT * FROM kb_entries WHERE title LIKE ? ESCAPE '\\' OR content LIKE ? ESCAPE '\\' ORDER BY created_at DESC LIMIT ?`)
        .all(pattern, pattern, limit) as KbRow[]
    ).map(toEntry);
  }
}
