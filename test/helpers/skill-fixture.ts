import Database from 'better-sqlite3';
import path from 'node:path';
import type { McpUnderTest } from './mcp-client.js';

/*
 * The skill story's fixture, shared by the MCP and the window tests (docs/skills.md): the transform an
 * agent keeps writing, the skill it proposes for it, and how a test reads what was audited and offered.
 */

/** The transform the agent keeps writing: the words of a text, upper-cased. Spacing and comments differ each time, the code is the same. */
export const WRITTEN = [
  'const text = "alpha beta";\nreturn text.split(" ").map((w) => w.toUpperCase());',
  '// again\nconst text = "alpha beta";   return text.split(" ").map((w) => w.toUpperCase());',
  'const text = "alpha beta";\n\n  return text.split(" ").map((w) =>  w.toUpperCase()); /* third time */',
  '/* and a fourth */ const text = "alpha beta"; return text.split(" ").map((w) => w.toUpperCase());',
];

/** The skill the agent proposes for it. */
export const SKILL = {
  name: 'upper_words',
  purpose: 'split a text into words and upper-case them',
  code: 'return input.text.split(" ").filter(Boolean).map((w) => w.toUpperCase());',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  outputSchema: { type: 'array', items: { type: 'string' } },
  examples: [{ text: 'alpha beta' }, { text: '' }, { text: 'one' }],
};

export interface AuditedRecord {
  args: Record<string, unknown>;
  userId: { channel: string };
}

/** The audit records of one kind, oldest first, read from the data directory's database. */
export function auditRecordsOf(dataDir: string, kind: string): AuditedRecord[] {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return (db.prepare('SELECT body FROM audit_records WHERE action = ? ORDER BY seq').all(kind) as { body: string }[]).map(
      (row) => JSON.parse(row.body) as AuditedRecord,
    );
  } finally {
    db.close();
  }
}

/** The arguments of the audit records of one kind. */
export function auditOf(dataDir: string, kind: string): Record<string, unknown>[] {
  return auditRecordsOf(dataDir, kind).map((record) => record.args);
}

/** The skill tools the MCP server offers now. */
export async function skillToolNames(mcp: McpUnderTest): Promise<string[]> {
  return (await mcp.client.listTools()).tools.map((tool) => tool.name).filter((name) => name.startsWith('skill_'));
}
