import { useEffect, useState } from 'react';
import type { AgentQuestion } from '../../src/domain/run.js';
import type { ExecutorClient } from '../../src/ipc/client/client.js';
import { useApi } from '../api.js';
import { markedPlainText } from '../components/marked-text.js';
import { QuestionBox } from './question-box.js';

/*
 * The questions agents wait on: a run's ask_user and an MCP agent's ask_user alike. Listed once
 * (listQuestions, waiting only) and followed by `question` events: one asked appears, one answered,
 * expired or withdrawn goes.
 */

/** Applies one `question` event to the waiting ones, newest first. */
export function applyQuestion(waiting: readonly AgentQuestion[], question: AgentQuestion): AgentQuestion[] {
  const others = waiting.filter((known) => known.id !== question.id);
  if (question.status !== 'waiting') return others;
  return [question, ...others].sort((left, right) => (left.askedAt < right.askedAt ? 1 : left.askedAt > right.askedAt ? -1 : 0));
}

/** The waiting questions, and whether the host's list is in yet (before it is, none are known). */
export function useWaitingQuestions(api: ExecutorClient): { waiting: AgentQuestion[]; listed: boolean } {
  const [waiting, setWaiting] = useState<AgentQuestion[]>([]);
  const [listedState, setListed] = useState(false);
  useEffect(() => {
    let alive = true;
    let off: (() => void) | undefined;
    const early: AgentQuestion[] = [];
    let listed = false;
    void api
      .on('question', (question) => {
        if (!alive) return;
        if (!listed) early.push(question);
        else setWaiting((previous) => applyQuestion(previous, question));
      })
      .then((unsubscribe) => {
        off = unsubscribe;
        if (!alive) unsubscribe();
        return api.listQuestions({ waitingOnly: true });
      })
      .then((questions) => {
        if (!alive || !questions) return;
        listed = true;
        let current: AgentQuestion[] = [];
        for (const question of questions) current = applyQuestion(current, question);
        for (const question of early) current = applyQuestion(current, question);
        setWaiting(current);
        setListed(true);
      })
      .catch(() => undefined);
    return () => {
      alive = false;
      off?.();
    };
  }, [api]);
  return { waiting, listed: listedState };
}

/** Who asks, in words: an MCP agent by its label, a run by a link to it. */
function askerText(question: AgentQuestion): string {
  return question.runId ? 'A run' : `Agent ${markedPlainText(question.askedBy)}`;
}

/** Every waiting question with its answer box; `onOpenRun` leads from a run's question to its page. */
export function QuestionsPanel({ questions, onOpenRun }: { questions: readonly AgentQuestion[]; onOpenRun?(runId: string): void }) {
  const api = useApi();
  if (questions.length === 0) return null;
  return (
    <section className="questions-panel" aria-label="Questions waiting for your answer" data-testid="questions-panel">
      {questions.map((question) => (
        <div key={question.id} className="question-entry" data-testid={`question-${question.id}`}>
          <QuestionBox
            question={question}
            askedBy={askerText(question)}
            whenExpired={question.runId ? 'the run is cancelled' : 'the agent is told nobody answered'}
            onAnswer={(text) => api.answerQuestion({ questionId: question.id, text })}
          />
          {question.runId && onOpenRun ? (
            <button type="button" className="small link-button" onClick={() => onOpenRun(question.runId!)}>
              Open the run that asks
            </button>
          ) : null}
        </div>
      ))}
    </section>
  );
}
