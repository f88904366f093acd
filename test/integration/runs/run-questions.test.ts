import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { AgentQuestion } from '../../../src/domain/run.js';
import { startHost } from '../../../src/ipc/host/host.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { callTool, messageText, say } from '../../helpers/scripted-openai-server.js';
import { useScriptedRunHosts } from '../../helpers/scripted-run-host.js';
import { ended, waitForRun } from '../../helpers/run-waits.js';

// The model is the one fake: a scripted OpenAI-compatible server on loopback, speaking the real wire format.

const { live, setup } = useScriptedRunHosts();

describe('ask_user', () => {
  it('pauses the run awaiting_input and delivers the answer as the call result', async () => {
    const { api, model, server } = await setup([callTool('ask_user', { question: 'Which port?' }, 'call_q'), say('Using port 8080.')]);
    const heard: AgentQuestion[] = [];
    await api.on('question', (question) => heard.push(question));
    const { id } = await api.startRun({ task: 'Set up the server', model });
    const waiting = await waitForRun(api, id, (run) => run.status === 'awaiting_input');
    expect(waiting.question).toMatchObject({ text: 'Which port?' });
    expect(Date.parse(waiting.question!.expiresAt) - Date.parse(waiting.question!.askedAt)).toBe(1800_000);
    expect((await api.listQuestions({ waitingOnly: true })).map((question) => question.id)).toEqual([waiting.question!.id]);
    const answered = await api.answerRun({ runId: id, text: '8080' });
    expect(answered.status).not.toBe('awaiting_input');
    expect((await waitForRun(api, id, ended)).status).toBe('completed');
    const tool = server.requests[1]!.body!.messages.find((message) => message.role === 'tool')!;
    expect(tool.tool_call_id).toBe('call_q');
    expect(messageText(tool.content)).toBe('ANSWERED: 8080');
    await expect(api.answerRun({ runId: id, text: 'again' })).rejects.toMatchObject({ code: 'RUN_NOT_WAITING' });
    expect(heard.map((question) => question.status)).toEqual(['waiting', 'answered']);
    const kinds = (await api.getAudit({ order: 'asc', limit: 500 })).entries
      .map((entry) => entry.action)
      .filter((kind) => kind.startsWith('run.'));
    expect(kinds).toEqual(['run.started', 'run.turn', 'run.question', 'run.answered', 'run.turn', 'run.ended']);
  });

  it('cancels the run with QUESTION_EXPIRED when nobody answers in time', async () => {
    const { api, model } = await setup([callTool('ask_user', { question: 'Still there?' }), say('never')], {
      runs: { questionExpirySeconds: 1 },
    });
    const { id } = await api.startRun({ task: 'Ask', model });
    const done = await waitForRun(api, id, ended);
    expect(done.status).toBe('cancelled');
    expect(done.endReason).toMatchObject({ code: 'QUESTION_EXPIRED', message: expect.stringContaining('Still there?') });
    await expect(api.answerRun({ runId: id, text: 'yes' })).rejects.toMatchObject({ code: 'QUESTION_EXPIRED' });
    const [question] = await api.listQuestions({});
    expect(question).toMatchObject({ status: 'expired', runId: id });
    await expect(api.answerQuestion({ questionId: question!.id, text: 'late' })).rejects.toMatchObject({ code: 'QUESTION_EXPIRED' });
  });

  it('is offered to MCP agents: askUser, the person answers, the agent reads it; another agent cannot', async () => {
    const { dataDir, api } = await setup([]);
    const agent = await connectToHost(dataDir, 'agent', { client: 'test-agent 1.0' });
    const stranger = await connectToHost(dataDir, 'agent', { client: 'other-agent' });
    live.clients.push(agent, stranger);
    const asked = await agent.askUser({ question: 'May I delete build/?' });
    expect(asked).toMatchObject({ status: 'waiting', runId: null, askedBy: 'test-agent 1.0' });
    await expect(stranger.getAnswer({ questionId: asked.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(agent.answerQuestion({ questionId: asked.id, text: 'yes' })).rejects.toMatchObject({ code: 'IPC_FORBIDDEN' });
    const pending = agent.getAnswer({ questionId: asked.id, waitMs: 30_000 });
    await api.answerQuestion({ questionId: asked.id, text: 'Yes, go ahead.' });
    expect(await pending).toMatchObject({ status: 'answered', answer: 'Yes, go ahead.' });
    await expect(api.answerQuestion({ questionId: asked.id, text: 'twice' })).rejects.toMatchObject({ code: 'RUN_NOT_WAITING' });
  });

  it('a question that expired while no host ran cancels its run when the next host opens', async () => {
    const { dataDir, api, model } = await setup([callTool('ask_user', { question: 'Deploy now?' }), say('never')]);
    const { id } = await api.startRun({ task: 'Deploy', model });
    const waiting = await waitForRun(api, id, (run) => run.status === 'awaiting_input');
    api.close();
    live.clients.length = 0;
    await live.host!.close();
    live.host = undefined;
    // Time passes while nothing runs: the question's deadline is now behind us.
    const db = new Database(path.join(dataDir, 'executor.db'));
    db.prepare('UPDATE questions SET expires_at = ? WHERE question_id = ?').run(
      new Date(Date.now() - 1000).toISOString(),
      waiting.question!.id,
    );
    db.close();

    live.host = await startHost(dataDir);
    const again = await connectToHost(dataDir, 'cli');
    live.clients.push(again);
    const done = await waitForRun(again, id, ended);
    expect(done).toMatchObject({ status: 'cancelled', endReason: { code: 'QUESTION_EXPIRED' } });
    expect((await again.listQuestions({}))[0]).toMatchObject({ status: 'expired' });
  });
});
