import type { Actor } from '../domain/actor.js';
import type {
  AgentQuestion,
  RunDetail,
  RunPage,
  RunRevertResult,
  RunStatus,
  RunSummary,
  RunTracePage,
  StartRunParams,
} from '../domain/run.js';

/**
 * What the host's IPC handlers ask of agent runs (src/ipc/server/handlers.ts). The host's RunManager
 * answers it; a process without one (the CLI with no host) answers NOT_AVAILABLE, since a run
 * needs a host that stays up to wait on the person.
 */
export interface RunService {
  start(params: StartRunParams, actor: Actor): Promise<RunSummary>;
  list(filter: { status?: RunStatus[]; limit?: number; cursor?: string }): RunPage;
  get(runId: string): RunDetail;
  trace(runId: string, fromIteration?: number, limit?: number): RunTracePage;
  answer(runId: string, text: string, actor: Actor): Promise<RunSummary>;
  cancel(runId: string, actor: Actor, reason?: string): Promise<RunSummary>;
  revert(runId: string, actor: Actor, options: { force?: boolean; dryRun?: boolean; leave?: readonly string[] }): Promise<RunRevertResult>;
  /** An MCP agent's question; the asker is the session's issued identity. */
  askUser(actor: Actor, question: string, expirySeconds?: number): AgentQuestion;
  /** One of the asking agent's own questions, waiting up to waitMs for its answer. */
  getAnswer(actor: Actor, questionId: string, waitMs: number): Promise<AgentQuestion>;
  listQuestions(waitingOnly: boolean): AgentQuestion[];
  answerQuestion(questionId: string, text: string, actor: Actor): Promise<AgentQuestion>;
}
