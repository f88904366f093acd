import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { proposeAndAwaitPreparation } from '../../../src/ipc/client/preparation-wait.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * Real `executor mcp` processes (the SDK's client over stdio) against a real `executor serve`: an
 * agent is the identity the host issued to its MCP process, never the name it gives in the MCP
 * handshake. Another agent's step, or the person's, reads exactly like an id that names no step.
 */

async function person(dataDir: string): Promise<ExecutorClient> {
  return closeAfter(await connectToHost(dataDir, 'cli'));
}

const stepIdIn = (text: string) => /call step_status with (\S+)/.exec(text)![1]!;
/** A tool's answer about `stepId` with the id written as X, to compare with the answer about an unknown id. */
const withoutId = (text: string, stepId: string) => text.split(stepId).join('X');

describe('executor mcp: agents see and touch only their own steps', () => {
  it("two agents with the same client name and version can neither read, list nor cancel each other's steps", async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    const owner = await startMcp(dataDir, { waitSeconds: 0, name: 'claude-code', version: '1.0' });
    const impostor = await startMcp(dataDir, { waitSeconds: 0, name: 'claude-code', version: '1.0' });
    const stepId = stepIdIn(
      (await owner.call('write_file', { path: path.join(workspace, 'owned.txt'), content: 'x', purpose: 'test' })).text,
    );

    for (const tool of ['step_status', 'cancel_step']) {
      const unknown = await impostor.call(tool, { stepId: 'X' });
      const foreign = await impostor.call(tool, { stepId });
      expect(unknown.isError, tool).toBe(true);
      expect({ text: withoutId(foreign.text, stepId), isError: foreign.isError }, tool).toEqual({ text: unknown.text, isError: true });
      expect(foreign.text, tool).toBe(`FAILED: NOT_FOUND: There is no step with id ${stepId}.`);
    }
    expect((await impostor.call('list_my_steps', {})).text).toBe('You have not proposed any steps yet.');
    expect((await impostor.call('list_my_steps', { status: 'awaiting_consent' })).text).toBe(
      'You have no steps with status awaiting_consent.',
    );

    // The owner's step is untouched, and still its own.
    expect((await owner.call('step_status', { stepId })).text).toBe(`PENDING: waiting for the user; call step_status with ${stepId}`);
    expect((await owner.call('list_my_steps', {})).text).toContain(`${stepId} awaiting_consent (writeFile)`);
    expect((await owner.call('cancel_step', { stepId })).text).toMatch(/^CANCELLED: you withdrew step /);

    // The person sees both agents apart: same label, different issued identities.
    const api = await person(dataDir);
    const theirs = stepIdIn(
      (await impostor.call('write_file', { path: path.join(workspace, 'theirs.txt'), content: 'y', purpose: 'test' })).text,
    );
    const [a, b] = await Promise.all([api.getStep({ stepId }), api.getStep({ stepId: theirs })]);
    expect(a.step.meta.client).toBe(b.step.meta.client);
    expect(a.step.meta.agent).toMatch(/^agent-/);
    expect(b.step.meta.agent).toMatch(/^agent-/);
    expect(a.step.meta.agent).not.toBe(b.step.meta.agent);
  });

  it("answers step_status on the person's own step like an unknown id, and never shows its output", async () => {
    const { dataDir, workspace } = tempSetup();
    await startServe(dataDir);
    fs.writeFileSync(path.join(workspace, 'private.txt'), "the person's private notes\n");
    const api = await person(dataDir);
    const [read] = (
      await proposeAndAwaitPreparation(api, {
        steps: [
          {
            id: 'person-read',
            action: 'runCode',
            args: { code: "return await tools.readFile('private.txt')", capabilities: { readFile: true } },
          },
        ],
      })
    ).records;
    if (read!.status === 'awaiting_consent') await api.approve({ stepId: 'person-read' });
    await expect.poll(async () => (await api.getStep({ stepId: 'person-read' })).status, { timeout: 20_000 }).toMatch(/executed|failed/);

    const agent = await startMcp(dataDir, { waitSeconds: 0, name: 'curious', version: '1.0' });
    const unknown = await agent.call('step_status', { stepId: 'person-reae' });
    const personal = await agent.call('step_status', { stepId: 'person-read' });
    expect(personal.text).toBe('FAILED: NOT_FOUND: There is no step with id person-read.');
    expect(withoutId(personal.text, 'person-read')).toBe(withoutId(unknown.text, 'person-reae'));
    expect(personal.isError).toBe(unknown.isError);
    expect(personal.text).not.toContain('private notes');
    expect((await agent.call('cancel_step', { stepId: 'person-read' })).text).toBe(
      'FAILED: NOT_FOUND: There is no step with id person-read.',
    );
    expect((await agent.call('list_my_steps', {})).text).toBe('You have not proposed any steps yet.');
  });

  it('is the same agent after the host restarts, so a pending step can still be checked and cancelled', async () => {
    const { dataDir, workspace } = tempSetup();
    const first = await startServe(dataDir);
    const agent = await startMcp(dataDir, { waitSeconds: 0, name: 'patient', version: '1.0' });
    const stepId = stepIdIn(
      (await agent.call('write_file', { path: path.join(workspace, 'later.txt'), content: 'x', purpose: 'test' })).text,
    );
    await first.stop();
    expect((await agent.call('step_status', { stepId })).text).toMatch(/^Executor is not running\./);
    await startServe(dataDir);
    expect((await agent.call('step_status', { stepId })).text).toBe(`PENDING: waiting for the user; call step_status with ${stepId}`);
    expect((await agent.call('list_my_steps', {})).text).toContain(stepId);
    // A new MCP process giving the same name is a new agent, restart or not.
    const newcomer = await startMcp(dataDir, { waitSeconds: 0, name: 'patient', version: '1.0' });
    expect((await newcomer.call('step_status', { stepId })).text).toBe(`FAILED: NOT_FOUND: There is no step with id ${stepId}.`);
    expect((await agent.call('cancel_step', { stepId })).text).toMatch(/^CANCELLED: /);
  });
});
