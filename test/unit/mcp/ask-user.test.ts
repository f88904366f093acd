import { describe, expect, it } from 'vitest';
import type { AgentQuestion } from '../../../src/domain/run.js';
import { answerOutcomeText, structuredQuestion } from '../../../src/mcp/ask-user.js';
import { ASK_USER_INPUT, GET_ANSWER_INPUT } from '../../../src/mcp/tools.js';

const question = (patch: Partial<AgentQuestion>): AgentQuestion => ({
  id: 'q-1',
  text: 'Which port?',
  askedAt: '2026-11-24T19:00:00.000Z',
  expiresAt: '2026-11-24T19:30:00.000Z',
  runId: null,
  askedBy: 'test-agent 1.0',
  status: 'waiting',
  answer: null,
  answeredAt: null,
  ...patch,
});

describe('ask_user as the model reads it', () => {
  it('starts with the word the model branches on, and carries the answer whole up to the cap', () => {
    expect(answerOutcomeText(question({ status: 'answered', answer: 'Use 8080.' }), 100)).toBe('ANSWERED by the user:\nUse 8080.');
    const long = answerOutcomeText(question({ status: 'answered', answer: 'x'.repeat(50) }), 10);
    expect(long).toBe(`ANSWERED by the user:\n${'x'.repeat(10)}\n(The answer is 50 characters; the first 10 are shown.)`);
    expect(answerOutcomeText(question({ status: 'expired' }), 100)).toMatch(/^EXPIRED: the user did not answer within 30 minutes\./);
    expect(answerOutcomeText(question({ status: 'cancelled' }), 100)).toMatch(/^CANCELLED: /);
    expect(answerOutcomeText(question({}), 100)).toBe(
      'PENDING: the user has not answered yet. The question stays open until 2026-11-24T19:30:00.000Z; call get_answer with questionId "q-1" to wait for it.'.replace(
        'wait for it',
        'wait for the answer',
      ),
    );
    expect(structuredQuestion(question({ status: 'answered', answer: 'a' }))).toMatchObject({
      questionId: 'q-1',
      status: 'answered',
      answer: 'a',
    });
  });

  it('refuses an empty question, one of only spaces, and arguments it does not take, naming them', () => {
    expect(ASK_USER_INPUT.safeParse({ question: '   ' }).success).toBe(false);
    expect(ASK_USER_INPUT.safeParse({ question: 'ok?', expirySeconds: 5 }).success).toBe(false);
    const extra = ASK_USER_INPUT.safeParse({ question: 'ok?', urgent: true });
    expect(extra.success).toBe(false);
    expect(extra.error!.issues[0]!.message).toContain('ask_user does not take "urgent"');
    // U+FEFF is not space: a question of only a BOM is not empty, and the window marks it.
    expect(ASK_USER_INPUT.safeParse({ question: '\uFEFF' }).success).toBe(true);
    expect(GET_ANSWER_INPUT.safeParse({ questionId: '' }).success).toBe(false);
  });
});
