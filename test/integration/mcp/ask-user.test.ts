import { describe, expect, it } from 'vitest';
import type { AgentQuestion } from '../../../src/domain/run.js';
import type { ExecutorClient } from '../../../src/ipc/client/client.js';
import { connectToHost } from '../../../src/ipc/transports/node-client.js';
import { startMcp } from '../../helpers/mcp-client.js';
import { startServe } from '../../helpers/serve-process.js';
import { closeAfter } from '../../helpers/teardown.js';
import { tempSetup } from '../../helpers/temp-dirs.js';

/*
 * ask_user for MCP agents: real `executor mcp` processes (the SDK's client over stdio) against a real
 * `executor serve`. The person answers through their own session (the window does the same call:
 * test/e2e/runs-window.test.ts); the answer comes back as the tool result.
 */

async function person(dataDir: string): Promise<ExecutorClient> {
  return closeAfter(await connectToHost(dataDir, 'cli'));
}

/** The person's view of the questions, once the one asked has arrived (followed by the `question` event, not polled). */
async function questionAsked(api: ExecutorClient, text: string): Promise<AgentQuestion> {
  // Listening starts before the list is read, so a question asked in between is not missed.
  let found: (question: AgentQuestion) => void = () => undefined;
  const arrived = new Promise<AgentQuestion>((resolve) => (found = resolve));
  const off = await api.on('question', (question) => {
    if (question.text === text && question.status === 'waiting') found(question);
  });
  const listed = (await api.listQuestions({ waitingOnly: true })).find((question) => question.text === text);
  if (listed) found(listed);
  const question = await arrived;
  off();
  return question;
}

describe('executor mcp: ask_user', () => {
  it('waits for the person, answers ANSWERED with their words, and names the agent as the asker', async () => {
    const { dataDir } = tempSetup();
    await startServe(dataDir);
    const api = await person(dataDir);
    const agent = await startMcp(dataDir, { name: 'docs-bot', version: '2.0' });
    const call = agent.call('ask_user', { question: 'Dates or versions?' });
    const asked = await questionAsked(api, 'Dates or versions?');
    expect(asked).toMatchObject({ runId: null, askedBy: 'docs-bot 2.0', status: 'waiting', answer: null });
    // The policy's default expiry: 30 minutes.
    expect(Date.parse(asked.expiresAt) - Date.parse(asked.askedAt)).toBe(30 * 60_000);
    await api.answerQuestion({ questionId: asked.id, text: 'Versions.\nNewest first.' });
    const result = await call;
    expect(result).toMatchObject({ isError: false, text: 'ANSWERED by the user:\nVersions.\nNewest first.' });
    expect(result.result.structuredContent).toMatchObject({ questionId: asked.id, status: 'answered', answer: 'Versions.\nNewest first.' });
    // A second answer to the same question is refused; the first stands.
    await expect(api.answerQuestion({ questionId: asked.id, text: 'Dates.' })).rejects.toMatchObject({
      code: expect.stringMatching(/RUN_NOT_WAITING|QUESTION_EXPIRED/),
    });
  });

  it('answers PENDING with the question id when its wait runs out, and get_answer gives the answer later; another agent cannot read it', async () => {
    const { dataDir } = tempSetup();
    await startServe(dataDir);
    const api = await person(dataDir);
    const agent = await startMcp(dataDir, { waitSeconds: 0, name: 'slow-bot', version: '1.0' });
    const pending = await agent.call('ask_user', { question: 'Which branch?' });
    expect(pending.isError).toBe(false);
    expect(pending.text).toMatch(/^PENDING: the user has not answered yet\. .*call get_answer with questionId "([^"]+)"/);
    const questionId = /questionId "([^"]+)"/.exec(pending.text)![1]!;
    const other = await startMcp(dataDir, { waitSeconds: 0, name: 'slow-bot', version: '1.0' });
    const foreign = await other.call('get_answer', { questionId });
    expect(foreign.isError).toBe(true);
    expect(foreign.text).toMatch(/^FAILED: NOT_FOUND/);
    await api.answerQuestion({ questionId, text: 'main' });
    expect((await agent.call('get_answer', { questionId })).text).toBe('ANSWERED by the user:\nmain');
  });

  it('an unanswered question expires at the time the agent asked for, and the agent is told EXPIRED', async () => {
    const { dataDir } = tempSetup();
    await startServe(dataDir);
    const api = await person(dataDir);
    const agent = await startMcp(dataDir, { name: 'quick-bot', version: '1.0' });
    const result = await agent.call('ask_user', { question: 'Quick: yes or no?', expirySeconds: 10 }, { timeoutMs: 60_000 });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/^EXPIRED: the user did not answer within 1 minute\./);
    expect((await api.listQuestions({ waitingOnly: true })).map((question) => question.text)).not.toContain('Quick: yes or no?');
  });

  it('without a running host nothing is asked, and the agent is told how to start Executor', async () => {
    const { dataDir } = tempSetup();
    const agent = await startMcp(dataDir, { name: 'lonely-bot', version: '1.0' });
    const result = await agent.call('ask_user', { question: 'Anyone there?' });
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/Nothing was asked: the user did not see the question\./);
  });
});
