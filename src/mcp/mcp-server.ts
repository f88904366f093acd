import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { toErrorShape } from '../domain/errors.js';
import { STEP_STATUSES } from '../domain/state-machine.js';
import type { StepRecord } from '../domain/step-record.js';
import type { ExecutorClient } from '../ipc/client/client.js';
import { proposeAndAwaitDecision } from '../ipc/client/decision-wait.js';
import { DEFAULT_PREPARATION_WAIT_MS } from '../ipc/client/preparation-wait.js';
import { DEFAULT_WAIT_SECONDS, HostLink, NoHostError, type OpenAgentSession } from './host-link.js';
import { isRefusal, MAX_OUTPUT_CHARS, planOutcomeText, stepOutcomeText, verdictOf, type HeldByPause } from './outcome-text.js';
import { registerSkillTools } from './skill-tools.js';
import { answerOutcomeText, awaitAnswer, structuredQuestion } from './ask-user.js';
import {
  ASK_USER_INPUT,
  GET_ANSWER_INPUT,
  planFromSteps,
  PROPOSE_PLAN_INPUT,
  PROPOSING_TOOL_NAMES,
  PROPOSING_TOOLS,
  stepFromTool,
  toolArgs,
  type PlanStepInput,
} from './tools.js';

export { DEFAULT_WAIT_SECONDS };
/** The newest of its own steps list_my_steps shows. */
const LIST_LIMIT = 50;

export interface ExecutorMcpOptions {
  openAgentSession: OpenAgentSession;
  /** How long a proposing tool waits for the person's decision before it answers PENDING. */
  waitSeconds?: number;
  /** What to tell the model when no host runs: how the person starts one. */
  howToStart: string;
  version: string;
  maxOutputChars?: number;
  /** How often a waiting tool reports progress (when the client asked for it). */
  progressEveryMs?: number;
}

/** What the server needs from one tool call's context (a subset of the SDK's RequestHandlerExtra). */
interface CallExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number };
  sendNotification: (notification: {
    method: 'notifications/progress';
    params: { progressToken: string | number; progress: number; message?: string };
  }) => Promise<void>;
}

const text = (body: string, isError = false, structured?: Record<string, unknown>): CallToolResult => ({
  content: [{ type: 'text', text: body }],
  ...(isError ? { isError: true } : {}),
  ...(structured ? { structuredContent: structured } : {}),
});

/**
 * Steps as structured content, for clients that read it; the text says the same for the model in fewer
 * words. A step that ran keeps its whole result here (a command's exit code, image digest, sandbox run id).
 */
const structuredSteps = (records: StepRecord[]) => ({
  steps: records.map((record) => ({
    stepId: record.step.id,
    planId: record.step.planId,
    status: record.status,
    verdict: verdictOf(record),
    ...(record.blockedBy ? { blockedBy: record.blockedBy } : {}),
    ...(record.consentExpiresAt ? { consentExpiresAt: record.consentExpiresAt } : {}),
    ...(record.result ? { result: record.result } : {}),
  })),
});

/** When some of these steps are still open and the person has stopped all agents: since when (they are held, not refused). */
async function heldByPause(api: ExecutorClient, records: StepRecord[]): Promise<HeldByPause | undefined> {
  if (records.every((record) => verdictOf(record) !== 'PENDING')) return undefined;
  const pause = await api.getPause();
  return pause.paused && pause.pausedAt ? { pausedAt: pause.pausedAt } : undefined;
}

/**
 * `executor mcp`: an MCP server whose tools propose steps to the running host as the agent and wait
 * for the person's decision. Every outcome, including "no host" and "the host refused the plan", is
 * a tool result the model can read; only a bug in this server would surface as a protocol error.
 */
export function createExecutorMcpServer(options: ExecutorMcpOptions): { server: McpServer; close(): Promise<void> } {
  const waitMs = (options.waitSeconds ?? DEFAULT_WAIT_SECONDS) * 1000;
  const maxChars = options.maxOutputChars ?? MAX_OUTPUT_CHARS;
  const server = new McpServer(
    { name: 'executor', version: options.version },
    {
      instructions:
        "Executor stands between you and the user's machine. Every tool here proposes a step that the user (or their policy) approves or rejects; " +
        "a rejection comes with the user's reason: read it and adapt instead of retrying the same step. PENDING means the user has not decided yet: " +
        'call step_status with the step id later, or cancel_step if you no longer need it. EXPIRED means nobody decided in time; propose again only if still needed. ' +
        "When the task is unclear or a decision is the user's, ask_user asks them in the Executor window and returns their answer. " +
        'If the user stops all agents, proposals fail with HOST_PAUSED and open steps answer "PENDING: held": nothing is rejected, and nothing runs until the user resumes; do not retry in a loop.',
    },
  );
  // A label for the person's queue and the audit trail; never an identity (the host issues that, see HostLink).
  const clientName = () => {
    const info = server.server.getClientVersion();
    // Control characters would garble the person's queue and the CLI's one-line listings.
    return info ? `${info.name} ${info.version}`.replace(/[\u0000-\u001f\u007f]+/g, ' ').slice(0, 200) : 'unnamed MCP client';
  };
  const host = new HostLink(options.openAgentSession, clientName);

  /** Turns any failure into a result the model can act on; the server stays up. */
  const failure = (error: unknown, doing: 'proposed' | 'checked' | 'asked'): CallToolResult => {
    if (error instanceof NoHostError && error.duringCall) {
      // The host shut down (or crashed) with the call in its hands: what was sent may be on record, waiting or even run.
      return text(
        `FAILED: HOST_STOPPED: Executor stopped during this call (${error.message}). ${doing === 'proposed' ? 'What you proposed may have been recorded before it stopped: it may be waiting for the user, or have run' : doing === 'asked' ? 'Your question may have reached the user' : 'Nothing was changed by this check'}. ${options.howToStart} Then call list_my_steps to see what happened${doing === 'proposed' ? ' before you propose it again' : ''}.`,
        true,
      );
    }
    if (error instanceof NoHostError) {
      return text(
        `${error.message} Nothing was ${doing === 'proposed' ? 'proposed and nothing ran' : doing === 'asked' ? 'asked: the user did not see the question' : 'checked'}. ${options.howToStart} Then call this tool again.`,
        true,
      );
    }
    const shaped = toErrorShape(error);
    if (shaped.code === 'INVALID_PLAN' && /steps\.\d+\.action/.test(shaped.message)) {
      return text(
        `FAILED: INVALID_PLAN: this Executor does not support that kind of step yet (${shaped.message}). Nothing was proposed.`,
        true,
      );
    }
    return text(`FAILED: ${shaped.code}: ${shaped.message}`, true);
  };

  const progressTicker = (extra: CallExtra, what: string) => {
    const token = extra._meta?.progressToken;
    if (token === undefined) return undefined;
    // MCP clients time a request out (60 s by default in the SDK); progress resets that clock on clients that allow it.
    return (elapsedMs: number) => {
      void extra
        .sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: Math.round(elapsedMs) / 1000, message: `waiting for the user to decide ${what}` },
        })
        .catch(() => undefined);
    };
  };

  const proposeAndReport = async (
    plan: { purpose?: string; steps: PlanStepInput[]; consentExpirySeconds?: number },
    extra: CallExtra,
  ): Promise<CallToolResult> => {
    try {
      const { records, held } = await host.use(async (api) => {
        // The person's stop switch ends the wait at once: the agent hears that its steps are held, not refused.
        const stopped = new AbortController();
        const onCallAbort = () => stopped.abort();
        extra.signal.addEventListener('abort', onCallAbort);
        const off = await api.on('hostPause', (pause) => {
          if (pause.paused) stopped.abort();
        });
        try {
          let records = await proposeAndAwaitDecision(api, plan, {
            waitMs,
            hostWorkMs: DEFAULT_PREPARATION_WAIT_MS,
            signal: stopped.signal,
            tickMs: options.progressEveryMs,
            onTick: progressTicker(extra, plan.steps.length === 1 ? 'the step' : `the ${plan.steps.length} steps`),
          });
          const held = await heldByPause(api, records);
          // The wait ended on the pause with what it knew: the steps as they are now (a run it cancelled says so).
          if (held)
            records = (await api.listSteps({ planId: records[0]!.step.planId, limit: 10_000 })).sort((a, b) => a.position - b.position);
          return { records, held };
        } finally {
          off();
          extra.signal.removeEventListener('abort', onCallAbort);
        }
      });
      return text(
        planOutcomeText(records, maxChars, held),
        records.some((record) => isRefusal(verdictOf(record))),
        structuredSteps(records),
      );
    } catch (error) {
      return failure(error, 'proposed');
    }
  };

  for (const name of PROPOSING_TOOL_NAMES) {
    const tool = PROPOSING_TOOLS[name];
    server.registerTool(
      name,
      {
        description: tool.description,
        inputSchema: tool.input,
        annotations: {
          readOnlyHint: false,
          destructiveHint: name === 'delete_file' || name === 'run_command',
          openWorldHint: name !== 'kb_add',
        },
      },
      async (args: unknown, extra: CallExtra) => {
        let step: PlanStepInput;
        try {
          step = stepFromTool(name, args);
        } catch (error) {
          return failure(error, 'proposed');
        }
        return proposeAndReport({ steps: [step] }, extra);
      },
    );
  }

  server.registerTool(
    'propose_plan',
    {
      description:
        'Propose several steps at once that the user sees and decides together, in order (e.g. write two files, then run the tests). ' +
        'Each step names one of the proposing tools and its arguments. A later step runs only after the ones before it are decided. ' +
        'Waits for the decisions and returns one line per step (EXECUTED / REJECTED by the user / DENIED by policy / FAILED / EXPIRED / PENDING). ' +
        'If an earlier step does not run, the later ones go back to the user to decide again.',
      inputSchema: PROPOSE_PLAN_INPUT,
    },
    async (args: z.infer<typeof PROPOSE_PLAN_INPUT>, extra: CallExtra) => {
      let plan;
      try {
        plan = planFromSteps(args);
      } catch (error) {
        return failure(error, 'proposed');
      }
      return proposeAndReport(plan, extra);
    },
  );

  server.registerTool(
    'step_status',
    {
      // The host answers only for this agent's own steps; any other id is, to it, an unknown id.
      description:
        'The current outcome of a step you proposed: EXECUTED with its output, REJECTED by the user: <reason>, DENIED by policy, FAILED, EXPIRED (nobody decided it in time), or still PENDING.',
      inputSchema: toolArgs('step_status', { stepId: z.string().min(1).max(128).describe('The step id a proposing tool returned.') }),
      annotations: { readOnlyHint: true },
    },
    async ({ stepId }: { stepId: string }) => {
      try {
        const { record, held } = await host.use(async (api: ExecutorClient) => {
          const record = await api.getStep({ stepId });
          return { record, held: await heldByPause(api, [record]) };
        });
        // The host cuts a record over 60 KiB (a long output, a big write) and says so; the rest is a tool call away.
        const cut =
          'cut' in record && record.cut
            ? `\n(Executor's record of this step is ${Math.ceil(record.cut.totalBytes / 1024)} KiB, more than one reply carries: what is shown above is cut. For the whole record as JSON, call step_record_part with this stepId and offset 0, then each nextOffset it gives until nextOffset is null.)`
            : '';
        return text(stepOutcomeText(record, maxChars, held) + cut, isRefusal(verdictOf(record)), structuredSteps([record]));
      } catch (error) {
        return failure(error, 'checked');
      }
    },
  );

  server.registerTool(
    'step_record_part',
    {
      description:
        'A page of the whole record of a step you proposed, as JSON text: when step_status says the record is cut, read it all by calling this with offset 0, then each nextOffset, until nextOffset is null; the pages joined are the record.',
      inputSchema: toolArgs('step_record_part', {
        stepId: z.string().min(1).max(128).describe('The step id a proposing tool returned.'),
        offset: z
          .number()
          .int()
          .min(0)
          .optional()
          .describe("Where the page starts in the record's JSON text: 0 first, then the nextOffset of the page before."),
      }),
      annotations: { readOnlyHint: true },
    },
    async ({ stepId, offset }: { stepId: string; offset?: number }) => {
      try {
        const part = await host.use((api: ExecutorClient) => api.getStepPart({ stepId, offset: offset ?? 0 }));
        const next = part.nextOffset === null ? 'This is the last page.' : `Next: offset ${part.nextOffset}.`;
        return text(
          `Characters ${part.offset}–${part.offset + part.text.length} of ${part.totalCharacters} of step ${part.stepId}'s record (version ${part.updatedAt}). ${next}\n${part.text}`,
          false,
          part,
        );
      } catch (error) {
        return failure(error, 'checked');
      }
    },
  );

  server.registerTool(
    'list_my_steps',
    {
      description:
        'The steps this client proposed recently, newest first (at most 50), each with its outcome. Optionally only those in one status.',
      inputSchema: toolArgs('list_my_steps', {
        status: z.enum(STEP_STATUSES).optional().describe('e.g. awaiting_consent, executed, rejected'),
      }),
      annotations: { readOnlyHint: true },
    },
    async ({ status }: { status?: (typeof STEP_STATUSES)[number] }) => {
      try {
        // The host lists an agent's own steps only.
        const records = await host.use((api: ExecutorClient) =>
          api.listSteps({ ...(status ? { status: [status] } : {}), limit: LIST_LIMIT }),
        );
        if (!records.length)
          return text(
            status ? `You have no steps with status ${status}.` : 'You have not proposed any steps yet.',
            false,
            structuredSteps([]),
          );
        const lines = records.map(
          (record) => `${record.step.id} ${record.status} (${record.step.action}): ${stepOutcomeText(record, 300).split('\n')[0]}`,
        );
        return text(lines.join('\n'), false, structuredSteps(records));
      } catch (error) {
        return failure(error, 'checked');
      }
    },
  );

  server.registerTool(
    'cancel_step',
    {
      description: 'Withdraw a step you proposed that the user has not decided yet. It will not run; the user sees it as cancelled by you.',
      inputSchema: toolArgs('cancel_step', { stepId: z.string().min(1).max(128).describe('The id of your pending step.') }),
    },
    async ({ stepId }: { stepId: string }) => {
      try {
        const record = await host.use((api: ExecutorClient) => api.cancel({ stepId }));
        return text(stepOutcomeText(record, maxChars), false, structuredSteps([record]));
      } catch (error) {
        return failure(error, 'checked');
      }
    },
  );

  const answerReport = async (
    work: (api: ExecutorClient) => Promise<Parameters<typeof answerOutcomeText>[0]>,
    doing: 'asked' | 'checked',
  ): Promise<CallToolResult> => {
    try {
      const question = await host.use(work);
      return text(
        answerOutcomeText(question, maxChars),
        question.status === 'expired' || question.status === 'cancelled',
        structuredQuestion(question),
      );
    } catch (error) {
      return failure(error, doing);
    }
  };

  server.registerTool(
    'ask_user',
    {
      description:
        'Ask the user a question and wait for the answer. The question appears in the Executor window with an answer box; the answer comes back as this result. ' +
        'Returns ANSWERED by the user: <answer>, EXPIRED (nobody answered in time: go on without it where you safely can), or PENDING with a questionId to read later with get_answer.',
      inputSchema: ASK_USER_INPUT,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ question, expirySeconds }: { question: string; expirySeconds?: number }, extra: CallExtra) =>
      answerReport(async (api) => {
        const asked = await api.askUser({ question, ...(expirySeconds !== undefined ? { expirySeconds } : {}) });
        return awaitAnswer(api, asked, {
          waitMs,
          signal: extra.signal,
          tickMs: options.progressEveryMs,
          onTick: progressTicker(extra, 'on an answer to your question'),
        });
      }, 'asked'),
  );

  server.registerTool(
    'get_answer',
    {
      description:
        'The answer to a question ask_user left PENDING: waits for it like ask_user, then returns ANSWERED by the user: <answer>, EXPIRED, or PENDING again.',
      inputSchema: GET_ANSWER_INPUT,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ questionId }: { questionId: string }, extra: CallExtra) =>
      answerReport(async (api) => {
        const current = await api.getAnswer({ questionId });
        return awaitAnswer(api, current, {
          waitMs,
          signal: extra.signal,
          tickMs: options.progressEveryMs,
          onTick: progressTicker(extra, 'on an answer to your question'),
        });
      }, 'checked'),
  );

  const skills = registerSkillTools(server, host, text, failure);
  // The skill tools are the host's usable skills: asked for once the client is there (no host yet: the next skill event or call brings them).
  server.server.oninitialized = () => void skills.refresh().catch(() => undefined);

  return {
    server,
    close: async () => {
      host.drop();
      await server.close();
    },
  };
}
