import type { AgentQuestion } from '../domain/run.js';
import type { ExecutorClient } from '../ipc/client/client.js';

/*
 * An MCP agent's ask_user: the question goes to the host (askUser), the person sees it in the window
 * with an answer box, and the tool waits for the answer by long polls (getAnswer), each bounded, so a
 * host that went away is noticed at the next poll rather than never. The wait ends with the answer,
 * the question's expiry (the policy's, or the agent's shorter one), the caller's cancel, or the tool's
 * own wait, after which the agent reads the answer later with get_answer.
 */

/** The longest single long poll; the contract allows 60 s, and a shorter one keeps progress flowing. */
export const ANSWER_POLL_MS = 20_000;

export interface AnswerWaitOptions {
  /** How long the tool call waits at most before answering PENDING with the question's id. */
  waitMs: number;
  signal?: AbortSignal;
  onTick?: (elapsedMs: number) => void;
  tickMs?: number;
  /** The longest single poll (tests shorten it). */
  pollMs?: number;
}

/** Waits on getAnswer until the question is no longer waiting, the wait ends, or the caller cancels. */
export async function awaitAnswer(api: ExecutorClient, question: AgentQuestion, options: AnswerWaitOptions): Promise<AgentQuestion> {
  const startedAt = Date.now();
  const deadline = startedAt + options.waitMs;
  const tick = options.onTick ? setInterval(() => options.onTick?.(Date.now() - startedAt), options.tickMs ?? 10_000) : undefined;
  try {
    let current = question;
    while (current.status === 'waiting' && !options.signal?.aborted) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      current = await api.getAnswer({ questionId: question.id, waitMs: Math.min(left, options.pollMs ?? ANSWER_POLL_MS) });
    }
    return current;
  } finally {
    clearInterval(tick);
  }
}

function minutes(ms: number): string {
  const total = Math.max(1, Math.round(ms / 60_000));
  return `${total} minute${total === 1 ? '' : 's'}`;
}

/** The tool result the model reads: the first word is what it branches on. */
export function answerOutcomeText(question: AgentQuestion, maxChars: number): string {
  switch (question.status) {
    case 'answered': {
      const answer = question.answer ?? '';
      const cut =
        answer.length > maxChars
          ? `${answer.slice(0, maxChars)}\n(The answer is ${answer.length} characters; the first ${maxChars} are shown.)`
          : answer;
      return `ANSWERED by the user:\n${cut}`;
    }
    case 'expired':
      return `EXPIRED: the user did not answer within ${minutes(Date.parse(question.expiresAt) - Date.parse(question.askedAt))}. Go on without the answer where you safely can; ask again only if you cannot.`;
    case 'cancelled':
      return 'CANCELLED: the question was withdrawn before the user answered it.';
    default:
      return `PENDING: the user has not answered yet. The question stays open until ${question.expiresAt}; call get_answer with questionId "${question.id}" to wait for the answer.`;
  }
}

/** The question as structured content, for clients that read it. */
export function structuredQuestion(question: AgentQuestion): Record<string, unknown> {
  return {
    questionId: question.id,
    status: question.status,
    answer: question.answer,
    askedAt: question.askedAt,
    expiresAt: question.expiresAt,
    answeredAt: question.answeredAt,
  };
}
