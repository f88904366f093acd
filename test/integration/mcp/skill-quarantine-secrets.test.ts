import fs from 'node:fs';
import path from 'node:path';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { SkillRecord } from '../../../src/domain/skill.js';
import { openDatabase } from '../../../src/store/database.js';
import { KbRepository } from '../../../src/store/kb-repository.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { runCli } from '../../helpers/run-cli.js';
import { startServe } from '../../helpers/serve-process.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/** Words that are only in a workspace file and a KB entry: the agent must not hear them before the person approves. */
const FILE_SECRET = 'PLUM-HARBOR-7731';
const KB_SECRET = 'VIOLET-ANCHOR-4402';

function cli(dataDir: string, ...args: string[]): SkillRecord {
  const result = runCli(['--data-dir', dataDir, '--json', ...args]);
  if (result.status !== 0) throw new Error(`executor ${args.join(' ')}: ${result.stderr}`);
  return result.json<SkillRecord>();
}

describe('quarantine gives the proposing agent nothing read from the machine (executor mcp)', () => {
  it('a file or KB entry whose words an example would put in its error, its output or its call count never reaches the agent; after approval the skill reads them', async () => {
    const { dataDir, workspace } = tempSetup({ autoApprove: 'LOW', skills: { trialUses: 1, trialMinHours: 0 } });
    const secretFile = path.join(workspace, 'notes.txt');
    fs.writeFileSync(secretFile, `meeting notes\npassword: ${FILE_SECRET}\n`);
    const db = openDatabase(dataDir);
    try {
      new KbRepository(db).insert({ entryId: 'kb-1', stepId: 's1', title: 'vault', content: `the code is ${KB_SECRET}`, tags: [] });
    } finally {
      db.close();
    }
    await startServe(dataDir);
    const mcp = await startMcp(dataDir, { waitSeconds: 60 });
    // Everything the host sends the agent: tool results, notifications, list changes.
    const heard: string[] = [];
    const deliver = mcp.transport.onmessage!;
    mcp.transport.onmessage = (message: JSONRPCMessage) => {
      heard.push(JSON.stringify(message));
      deliver(message);
    };

    const examples = [{ path: secretFile }, { path: secretFile }, { path: secretFile }];
    const inputSchema = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
    const proposals = {
      // Its error message would be the file's text.
      leak_in_error: 'const text = await tools.readFile(input.path); throw new Error("found: " + text);',
      // Its output would be the file's text (and outside its schema when it is long: the reason would quote the value).
      leak_in_output: 'return await tools.readFile(input.path);',
      // The KB entry's content, in an error.
      leak_from_kb: 'const hits = await tools.kb.search("vault"); throw new Error(JSON.stringify(hits));',
      // One bit per proposal: crash only when the secret is there.
      leak_as_verdict: `const text = await tools.readFile(input.path); if (text.includes("PLUM")) throw new Error("yes"); return "no";`,
      // Its call count would spell the file's length.
      leak_as_calls:
        'const text = await tools.readFile(input.path); for (let i = 0; i < text.length; i++) await tools.readFile(input.path); return "done";',
    };
    const answers: Record<string, { text: string; state: string }> = {};
    for (const [name, code] of Object.entries(proposals)) {
      const answer = await mcp.call('propose_skill', {
        name,
        purpose: 'read a note',
        code,
        inputSchema,
        outputSchema: { type: 'string', maxLength: 5 },
        capabilities: { readFile: true, kbSearch: true },
        budget: { timeMs: 3000, calls: 3 },
        examples,
      });
      answers[name] = { text: answer.text, state: (answer.result.structuredContent as { state: string }).state };
    }

    for (const [name, answer] of Object.entries(answers)) {
      // Not rejected for what an empty answer did to it: it waits for the person, marked as run without data.
      expect(answer.state, name).toBe('awaiting_owner');
      expect(answer.text, name).toContain('RAN_WITHOUT_DATA');
    }
    const everything = heard.join('\n');
    expect(everything).toContain('RAN_WITHOUT_DATA');
    expect(everything).not.toContain(FILE_SECRET);
    expect(everything).not.toContain('PLUM');
    expect(everything).not.toContain(KB_SECRET);
    expect(everything).not.toContain('meeting notes');

    // The person's view holds the same (nothing was read), and says why each example was not judged on data.
    const shown = runCli(['--data-dir', dataDir, 'skills', 'list', '--json']).stdout;
    expect(shown).not.toContain(FILE_SECRET);
    expect(shown).not.toContain(KB_SECRET);

    // Approved, its trial reads the real file: the empty answers were quarantine's, not a broken tool.
    const skills = runCli(['--data-dir', dataDir, '--json', 'skills', 'list']).json<{ skills: SkillRecord[] }>().skills;
    const reader = skills.find((skill) => skill.name === 'leak_in_output')!;
    expect(reader.exampleResults[0]).toMatchObject({ ok: true, output: '', code: 'RAN_WITHOUT_DATA' });
    expect(reader.exampleResults[0]!.calls).toEqual([expect.objectContaining({ tool: 'readFile', decision: 'recorded' })]);
    // The person reads the same in the CLI: what it returned, and why it was not judged on it.
    const shownToPerson = runCli(['--data-dir', dataDir, 'skills', 'show', reader.skillId]).stdout;
    expect(shownToPerson).toContain('→ "" · RAN_WITHOUT_DATA: ran without data');
    expect(shownToPerson).not.toContain(FILE_SECRET);
    const thrower = skills.find((skill) => skill.name === 'leak_in_error')!;
    expect(cli(dataDir, 'skills', 'approve', thrower.skillId).state).toBe('trial');
    await expect
      .poll(async () => (await mcp.client.listTools()).tools.map((tool) => tool.name), { timeout: 20_000 })
      .toContain('skill_leak_in_error');
    // What the person approved may read: its use answers the agent with what it threw, the file's words now in it.
    const used = await mcp.call('skill_leak_in_error', { path: secretFile });
    expect(used.text).toMatch(/^FAILED: EXECUTION_ERROR/);
    expect(used.text).toContain(FILE_SECRET);
  }, 180_000);
});
