import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { actorFor } from '../../../src/domain/actor.js';
import type { SkillProposalInput } from '../../../src/domain/skill.js';
import { openExecutor } from '../../helpers/open-executor.js';

const agent = { ...actorFor('mcp', 'test-agent'), agent: 'agent-1' };
const SECRET = 'TANGERINE-LEDGER-5150';

function reader(code: string, overrides: Partial<SkillProposalInput> = {}): SkillProposalInput {
  return {
    name: 'read_note',
    purpose: 'read a note',
    code,
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    outputSchema: { type: 'string' },
    capabilities: { readFile: true },
    budget: { timeMs: 2000, calls: 2 },
    examples: [{ path: 'note.txt' }, { path: 'note.txt' }, { path: 'note.txt' }],
    ...overrides,
  };
}

function quarantineCalls(dataDir: string): Record<string, unknown>[] {
  const db = new Database(path.join(dataDir, 'executor.db'), { readonly: true });
  try {
    return (db.prepare("SELECT body FROM audit_records WHERE action = 'capability.call' ORDER BY seq").all() as { body: string }[]).map(
      (row) => (JSON.parse(String(row.body)) as { args: Record<string, unknown> }).args,
    );
  } finally {
    db.close();
  }
}

describe('quarantine answers reads from nothing', () => {
  it('reads are recorded, not performed: the skill sees an empty text, and what it did after is not held against it', async () => {
    const { executor, dataDir, workspace } = openExecutor();
    fs.writeFileSync(path.join(workspace, 'note.txt'), SECRET);
    const skill = await executor.proposeSkill(
      reader(
        `const text = await tools.readFile(input.path); if (text.length === 0) throw new Error("empty: " + JSON.stringify(text)); return text;`,
        {
          examples: [{ path: path.join(workspace, 'note.txt') }, { path: 'note.txt' }, { path: 'missing.txt' }],
        },
      ),
      agent,
    );
    expect(skill.state).toBe('awaiting_owner');
    for (const result of skill.exampleResults) {
      expect(result).toMatchObject({ ok: true, code: 'RAN_WITHOUT_DATA' });
      expect(result.message).toContain('EXECUTION_ERROR: Error: empty: ""');
      expect(result.calls).toEqual([expect.objectContaining({ tool: 'readFile', decision: 'recorded' })]);
    }
    expect(JSON.stringify(executor.getSkill(skill.skillId))).not.toContain(SECRET);
    expect(quarantineCalls(dataDir)).toEqual(
      skill.exampleResults.map(() =>
        expect.objectContaining({ tool: 'readFile', decision: 'recorded', mode: 'quarantine', phase: 'quarantine' }),
      ),
    );
  });

  it('still judges what it called: a secret path, a call beyond its declared ones, and a call overrun with no read are rejected', async () => {
    const { executor, workspace } = openExecutor();
    fs.writeFileSync(path.join(workspace, '.env'), `TOKEN=${SECRET}`);
    const secret = await executor.proposeSkill(
      reader('return await tools.readFile(input.path);', { examples: [{ path: '.env' }, { path: '.env' }, { path: '.env' }] }),
      agent,
    );
    expect(secret.state).toBe('rejected');
    expect(secret.reason).toMatch(/^validation: example 1 called tools.readFile .* which the broker refused: .*secret/);
    const undeclared = await executor.proposeSkill(
      reader('await tools.readFile(input.path); await tools.kb.search("x"); return "";', { name: 'read_more' }),
      agent,
    );
    expect(undeclared.state).toBe('rejected');
    expect(undeclared.reason).toMatch(/UNDECLARED_CALL|did not declare the kbSearch capability/);
    // Without a read (a recorded request is not one), an overrun is the skill's own: rejected as before.
    const overrun = await executor.proposeSkill(
      reader('for (let i = 0; i < 5; i++) await tools.fetch("https://api.example.com/" + i).catch(() => null); return "";', {
        name: 'fetch_loop',
        capabilities: { fetch: { hosts: ['api.example.com'] } },
      }),
      agent,
    );
    expect(overrun.state).toBe('rejected');
    expect(overrun.reason).toMatch(/BUDGET_EXCEEDED|made 3 tool calls/);
    for (const skill of [secret, undeclared, overrun]) expect(JSON.stringify(executor.getSkill(skill.skillId))).not.toContain(SECRET);
  });

  it('what the agent hears back does not depend on the files: links, a link to a secret, one out of the workspace, missing files', async () => {
    const paths = ['pointer.txt', 'creds.txt', 'out.txt', 'absent.txt'];
    /** The same proposal over two workspaces that hold different things under the same names. */
    const heard = async (prepare: (workspace: string, base: string) => void) => {
      const { executor, workspace, base } = openExecutor();
      prepare(workspace, base);
      const skill = await executor.proposeSkill(
        reader('const texts = []; for (const p of input.paths) texts.push(await tools.readFile(p)); return texts.join("|");', {
          inputSchema: { type: 'object', properties: { paths: { type: 'array', items: { type: 'string' } } }, required: ['paths'] },
          budget: { timeMs: 2000, calls: 4 },
          examples: [{ paths }, { paths: paths.slice(1) }, { paths: paths.slice(2) }],
        }),
        agent,
      );
      const said = JSON.stringify({ state: skill.state, reason: skill.reason, results: skill.exampleResults })
        .replaceAll(workspace, '<workspace>')
        .replaceAll(base, '<base>')
        .replace(/"durationMs":\d+/g, '"durationMs":0');
      expect(said).not.toContain(SECRET);
      return { said, executor, skill };
    };
    const withLinks = await heard((workspace, base) => {
      fs.writeFileSync(path.join(workspace, 'hidden-diary-2026.txt'), SECRET);
      fs.symlinkSync('hidden-diary-2026.txt', path.join(workspace, 'pointer.txt'));
      fs.writeFileSync(path.join(workspace, '.env'), `TOKEN=${SECRET}`);
      fs.symlinkSync('.env', path.join(workspace, 'creds.txt'));
      fs.writeFileSync(path.join(base, 'outside-notes.txt'), SECRET);
      fs.symlinkSync(path.join(base, 'outside-notes.txt'), path.join(workspace, 'out.txt'));
    });
    const plain = await heard((workspace) => {
      for (const name of paths.slice(0, 3)) fs.writeFileSync(path.join(workspace, name), 'plain');
    });
    expect(withLinks.said).toBe(plain.said);
    expect(JSON.parse(plain.said)).toMatchObject({ state: 'awaiting_owner' });
    // The links are followed once the person approved: a read through one to a secret is refused, and the skill disabled.
    const { executor, skill } = withLinks;
    executor.approveSkill(skill.skillId, actorFor('cli'));
    const use = await executor.useSkill('read_note', { paths: ['creds.txt'] }, agent);
    expect(use).toMatchObject({ ok: false, code: 'UNDECLARED_CALL', state: 'disabled' });
    expect(JSON.stringify(use)).not.toContain(SECRET);
  });
});
