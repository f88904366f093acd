import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { callTool, messageText, say } from '../../helpers/scripted-openai-server.js';
import { useScriptedRunHosts } from '../../helpers/scripted-run-host.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';

// The model is the one fake (a scripted OpenAI-compatible server); the host, its socket, SQLite, the
// light sandbox and the audit log are real.
const { setup } = useScriptedRunHosts();

const TRANSFORM = 'const input = { text: "alpha beta" };\nreturn input.text.split(" ").map((w) => w.toUpperCase());';
const SKILL = {
  name: 'upper_words',
  purpose: 'split a text into words and upper-case them',
  code: 'return input.text.split(" ").filter(Boolean).map((w) => w.toUpperCase());',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  outputSchema: { type: 'array', items: { type: 'string' } },
  examples: [{ text: 'alpha beta' }, { text: '' }, { text: 'one' }],
};

describe('skills in an agent run', () => {
  it('a model writes a transform three times and proposes it; once approved, the next run is offered skill_<name> and uses it without a prompt', async () => {
    const { api, model, server } = await setup(
      [
        callTool('run_code', { code: TRANSFORM, purpose: 'upper-case' }, 'c1'),
        callTool('run_code', { code: `// again\n${TRANSFORM}`, purpose: 'upper-case' }, 'c2'),
        callTool('run_code', { code: TRANSFORM.replace('\n', '   '), purpose: 'upper-case' }, 'c3'),
        callTool('propose_skill', SKILL, 'p1'),
        say('Proposed the skill.'),
        callTool('skill_upper_words', { text: 'red green' }, 'u1'),
        say('Used it.'),
      ],
      { autoApprove: 'LOW' },
    );
    const first = await api.startRun({ task: 'upper-case some words', model });
    expect((await waitForRun(api, first.id, ended, 'the first run')).status).toBe('completed');
    const proposedResult = messageText(server.requests[4]!.body!.messages.at(-1)!.content);
    expect(proposedResult).toMatch(/^EXECUTED: AWAITING_OWNER: skill upper_words v1 \(skill_\S+\) passed quarantine and validation/);
    const { skills, notices } = await api.listSkills({});
    expect(notices).toEqual([expect.objectContaining({ agent: `run ${first.id}`, times: 3, text: 'seen 3 times: save as a skill?' })]);
    expect(skills).toEqual([expect.objectContaining({ name: 'upper_words', state: 'awaiting_owner', proposedBy: `run ${first.id}` })]);
    // Not offered before the person approves it.
    expect(server.requests[4]!.body!.tools!.map((tool) => tool.function.name)).toContain('propose_skill');
    expect(server.requests[4]!.body!.tools!.map((tool) => tool.function.name)).not.toContain('skill_upper_words');

    const approved = await api.approveSkill({ skillId: skills[0]!.skillId });
    const second = await api.startRun({ task: 'upper-case red green', model });
    expect((await waitForRun(api, second.id, ended, 'the second run')).status).toBe('completed');
    const offered = server.requests[5]!.body!.tools!.find((tool) => tool.function.name === 'skill_upper_words');
    expect(offered?.function.parameters).toEqual(SKILL.inputSchema);
    expect(messageText(server.requests[6]!.body!.messages.at(-1)!.content)).toBe('EXECUTED: ["RED","GREEN"]');
    // The use ran without a prompt as a runSkill step of the run, approved by the skill's pin, under its code hash.
    const { stepIds } = await api.getRun({ runId: second.id });
    expect(stepIds).toHaveLength(1);
    const use = await api.getStep({ stepId: stepIds[0]! });
    expect(use).toMatchObject({
      status: 'executed',
      step: { action: 'runSkill', args: { skill: 'upper_words', codeHash: approved.codeHash }, meta: { client: `run ${second.id}` } },
      evaluation: { risk: 'LOW', approvedBySkill: { codeHash: approved.codeHash } },
      approval: { by: { channel: 'policy', client: 'skill upper_words v1' } },
    });
    const records = await api.getAudit({ filters: { stepId: stepIds[0]! }, order: 'asc' });
    expect(records.entries.map((entry) => entry.action)).toEqual([
      'step.proposed',
      'step.evaluated',
      'step.approved',
      'step.execution_started',
      'step.executed',
    ]);
  });

  it("a run's propose_skill never hands the model a workspace file's words: quarantine reads nothing", async () => {
    const secret = 'MARIGOLD-CIPHER-2718';
    const reading = {
      name: 'read_note',
      purpose: 'read a note',
      code: 'const text = await tools.readFile(input.path); throw new Error("found: " + text);',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      outputSchema: { type: 'string' },
      capabilities: { readFile: true },
      budget: { timeMs: 2000, calls: 1 },
      examples: [{ path: 'notes.txt' }, { path: 'notes.txt' }, { path: 'notes.txt' }],
    };
    const { api, model, server, workspace } = await setup([callTool('propose_skill', reading, 'p1'), say('Proposed.')], {
      autoApprove: 'LOW',
    });
    fs.writeFileSync(path.join(workspace, 'notes.txt'), `key: ${secret}`);
    const run = await api.startRun({ task: 'make a skill', model });
    expect((await waitForRun(api, run.id, ended, 'the run')).status).toBe('completed');
    const answered = messageText(server.requests[1]!.body!.messages.at(-1)!.content);
    expect(answered).toMatch(/^EXECUTED: AWAITING_OWNER: skill read_note v1/);
    // Everything the model was sent, from its first turn to its last.
    expect(JSON.stringify(server.requests.map((request) => request.body))).not.toContain(secret);
    const { skills } = await api.listSkills({});
    expect(skills[0]!.exampleResults.map((result) => result.code)).toEqual(['RAN_WITHOUT_DATA', 'RAN_WITHOUT_DATA', 'RAN_WITHOUT_DATA']);
  });
});
