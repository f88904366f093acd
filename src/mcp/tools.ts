import { z } from 'zod';
import { ExecutorError } from '../domain/errors.js';
import { trimPlainSpace } from '../domain/visible-text.js';

/*
 * The proposing tools: each one's input schema (what the model sees as JSON schema) and how its
 * arguments become one step of a plan. Arguments are checked here for shape only; the host is the
 * authority on what a valid step is and answers INVALID_PLAN otherwise.
 */

const purpose = z
  .string()
  .overwrite(trimPlainSpace)
  .min(1, 'purpose is empty')
  .max(2000)
  .describe('Why you want this, in one or two sentences the user reads before deciding. Be specific.');

const absolutePath = z
  .string()
  .min(1)
  .max(4096)
  .describe('Absolute path of the file. It must be inside a workspace root the user configured, or the policy denies the step.');

/** At most this many unknown argument names are quoted back, each cut to 64 characters. */
const quoteKeys = (keys: string[]) =>
  keys
    .slice(0, 5)
    .map((key) => JSON.stringify(key.slice(0, 64)))
    .join(', ') + (keys.length > 5 ? ` and ${keys.length - 5} more` : '');

/**
 * An object of tool arguments that refuses keys it does not know, naming them. Dropping one
 * silently would give the agent a different effect than it asked for (an `encoding` the tool
 * does not have would write the base64 text itself). Used for every object a tool takes, nested
 * ones too; the JSON schema the model sees says so as well (additionalProperties: false).
 */
export function toolArgs<Shape extends z.ZodRawShape>(what: string, shape: Shape) {
  const known = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `${what} does not take ${quoteKeys(issue.keys)}; it takes only ${known}. Nothing was proposed; call again without ${issue.keys.length === 1 ? 'it' : 'them'}`
        : undefined,
  });
}

export const PROPOSING_TOOLS = {
  write_file: {
    description:
      'Ask the user to let you create or overwrite one text file. The user sees a diff and approves or rejects it; an exact backup is kept so it can be reverted. ' +
      'The call waits for the decision and returns EXECUTED, REJECTED by the user: <reason>, DENIED by policy: <reasons>, FAILED: <error>, or PENDING with a step id to check later with step_status.',
    input: toolArgs('write_file', {
      path: absolutePath,
      content: z
        .string()
        .max(16 * 1024 * 1024)
        .describe('The complete new content of the file, UTF-8.'),
      purpose,
    }),
    toStep: (args: { path: string; content: string; purpose: string }) => ({
      action: 'writeFile',
      args: { path: args.path, content: args.content },
      meta: { purpose: args.purpose },
    }),
  },
  delete_file: {
    description:
      'Ask the user to let you delete one file. Its content is backed up first, so the user can revert it. Waits for the decision like write_file.',
    input: toolArgs('delete_file', { path: absolutePath, purpose }),
    toStep: (args: { path: string; purpose: string }) => ({
      action: 'deleteFile',
      args: { path: args.path },
      meta: { purpose: args.purpose },
    }),
  },
  run_command: {
    description:
      'Ask the user to let you run a command in a disposable container that sees a scratch copy of the working directory; file changes it makes come back as a diff the user approves before they touch the real files. ' +
      'Give exactly one of `command` (a shell line, run with sh -c inside the container) or `argv` (a program and its arguments, no shell). Network is off unless you ask for it and the policy allows the hosts. ' +
      'Waits for the decision; EXECUTED carries the exit code and the (capped) output.',
    input: toolArgs('run_command', {
      command: z
        .string()
        .min(1)
        .max(64 * 1024)
        .optional()
        .describe('A shell command line, e.g. "npm test -- --run". Give this or argv.'),
      argv: z
        .array(z.string().max(64 * 1024))
        .min(1)
        .max(4096)
        .optional()
        .describe('Program and arguments, e.g. ["git", "status"]. Give this or command.'),
      cwd: z
        .string()
        .min(1)
        .max(4096)
        .optional()
        .describe('Absolute working directory inside a workspace root; only this folder is copied into the container.'),
      network: z.boolean().optional().describe('true to let the command reach the hosts the policy allows; off by default.'),
      timeoutMs: z
        .number()
        .int()
        .min(100)
        .max(24 * 3600 * 1000)
        .optional()
        .describe('Stop the command after this many milliseconds.'),
      purpose,
    }),
    toStep: (args: { command?: string; argv?: string[]; cwd?: string; network?: boolean; timeoutMs?: number; purpose: string }) => {
      if ((args.command === undefined) === (args.argv === undefined)) {
        throw new ExecutorError(
          'INVALID_INPUT',
          'run_command needs exactly one of `command` (a shell line) or `argv` (a program and its arguments).',
        );
      }
      return {
        action: 'runCommand',
        args: {
          ...(args.command !== undefined ? { command: args.command } : { argv: args.argv }),
          ...(args.cwd !== undefined ? { cwd: args.cwd } : {}),
          ...(args.network ? { network: 'allowlist' } : {}),
          ...(args.timeoutMs !== undefined ? { timeoutMs: args.timeoutMs } : {}),
        },
        meta: { purpose: args.purpose },
      };
    },
  },
  run_code: {
    description:
      'Ask the user to let you run a snippet of code in a sandbox with no file system, no network and no environment, under time and memory limits. ' +
      'Anything beyond pure computation must be asked for in `capabilities` (fetch from listed hosts, read files in the workspace, search the knowledge base); the policy decides. ' +
      'Print results to stdout. Waits for the decision; EXECUTED carries the (capped) output.',
    input: toolArgs('run_code', {
      code: z
        .string()
        .min(1)
        .max(1024 * 1024)
        .describe('The program source.'),
      language: z.enum(['javascript', 'python']).optional().describe('javascript (default) or python.'),
      timeoutMs: z.number().int().positive().optional().describe('Time limit in milliseconds (clamped to the sandbox range).'),
      capabilities: toolArgs('run_code capabilities', {
        fetch: toolArgs('capabilities.fetch', { hosts: z.array(z.string().min(1).max(253)).min(1).max(50) })
          .optional()
          .describe('Hosts the code may fetch from.'),
        readFile: z.boolean().optional().describe('Read files inside the workspace roots.'),
        kbSearch: z.boolean().optional().describe("Search the user's knowledge base."),
      }).optional(),
      purpose,
    }),
    toStep: (args: {
      code: string;
      language?: 'javascript' | 'python';
      timeoutMs?: number;
      capabilities?: { fetch?: { hosts: string[] }; readFile?: boolean; kbSearch?: boolean };
      purpose: string;
    }) => {
      const asked = args.capabilities;
      const capabilities = asked
        ? {
            ...(asked.fetch ? { fetch: asked.fetch } : {}),
            ...(asked.readFile ? { readFile: true } : {}),
            ...(asked.kbSearch ? { kbSearch: true } : {}),
          }
        : undefined;
      return {
        action: 'runCode',
        args: {
          code: args.code,
          purpose: args.purpose,
          ...(args.language ? { language: args.language } : {}),
          ...(args.timeoutMs !== undefined ? { timeoutMs: args.timeoutMs } : {}),
          ...(capabilities && Object.keys(capabilities).length ? { capabilities } : {}),
        },
        meta: { purpose: args.purpose },
      };
    },
  },
  open_url: {
    description:
      "Ask the user to let you open a web page (http or https) in their browser. The user sees the host and every query parameter decoded; don't put data from the machine in the URL. Waits for the decision like the other tools.",
    input: toolArgs('open_url', { url: z.string().url().max(8192).describe('An http(s) URL.'), purpose }),
    toStep: (args: { url: string; purpose: string }) => ({
      action: 'openURL',
      args: { url: args.url, purpose: args.purpose },
      meta: { purpose: args.purpose },
    }),
  },
  kb_add: {
    description:
      'Ask the user to let you add an entry to their knowledge base (a note they keep). Waits for the decision like the other tools.',
    input: toolArgs('kb_add', {
      title: z.string().overwrite(trimPlainSpace).min(1).max(500).describe('A short title.'),
      content: z
        .string()
        .max(1024 * 1024)
        .describe('The note, plain text or Markdown.'),
      tags: z.array(z.string().min(1).max(100)).max(50).optional().describe('Optional tags.'),
    }),
    toStep: (args: { title: string; content: string; tags?: string[] }) => ({
      action: 'createKBEntry',
      args: { title: args.title, content: args.content, ...(args.tags ? { tags: args.tags } : {}) },
      meta: { purpose: `Add "${args.title}" to the knowledge base` },
    }),
  },
} as const;

export type ProposingToolName = keyof typeof PROPOSING_TOOLS;
export const PROPOSING_TOOL_NAMES = Object.keys(PROPOSING_TOOLS) as ProposingToolName[];

export interface PlanStepInput {
  action: string;
  args: Record<string, unknown>;
  meta: { purpose: string };
}

/** One tool's arguments (already checked against its schema) as a plan step. */
export function stepFromTool(tool: ProposingToolName, args: unknown): PlanStepInput {
  return (PROPOSING_TOOLS[tool].toStep as (value: unknown) => PlanStepInput)(args);
}

export const PROPOSE_PLAN_INPUT = toolArgs('propose_plan', {
  purpose,
  consentExpirySeconds: z
    .number()
    .int()
    .min(1)
    .max(366 * 24 * 3600)
    .optional()
    .describe(
      "Optional: seconds after which steps the user has not decided expire (EXPIRED) instead of waiting; the user's policy may set a shorter limit, never a longer one.",
    ),
  steps: z
    .array(
      toolArgs('a propose_plan step', {
        tool: z
          .enum(PROPOSING_TOOL_NAMES as [ProposingToolName, ...ProposingToolName[]])
          .describe('Which proposing tool this step is, e.g. "write_file".'),
        args: z.record(z.string(), z.unknown()).describe("That tool's arguments, exactly as you would pass them to it."),
      }),
    )
    .min(1)
    .max(50)
    .describe('The steps, in the order they must run. A later step runs only after the earlier ones are decided.'),
});

/** A propose_plan call as a plan: every step checked against its own tool's schema, problems named by position. */
export function planFromSteps(input: z.infer<typeof PROPOSE_PLAN_INPUT>): {
  purpose: string;
  steps: PlanStepInput[];
  consentExpirySeconds?: number;
} {
  const problems: string[] = [];
  const steps: PlanStepInput[] = [];
  input.steps.forEach((entry, index) => {
    const parsed = PROPOSING_TOOLS[entry.tool].input.safeParse(entry.args);
    if (!parsed.success) {
      problems.push(
        ...parsed.error.issues.map(
          (issue) => `steps.${index}.args${issue.path.map((key) => `.${String(key)}`).join('')} (${entry.tool}): ${issue.message}`,
        ),
      );
      return;
    }
    try {
      steps.push(stepFromTool(entry.tool, parsed.data));
    } catch (error) {
      problems.push(`steps.${index} (${entry.tool}): ${(error as Error).message}`);
    }
  });
  if (problems.length) throw new ExecutorError('INVALID_INPUT', `The plan is not valid: ${problems.join('; ')}`, { issues: problems });
  return {
    purpose: input.purpose,
    steps,
    ...(input.consentExpirySeconds !== undefined ? { consentExpirySeconds: input.consentExpirySeconds } : {}),
  };
}

/** ask_user: one question for the person, answered in Executor's window (src/mcp/ask-user.ts). */
export const ASK_USER_INPUT = toolArgs('ask_user', {
  question: z
    .string()
    .overwrite(trimPlainSpace)
    .min(1, 'question is empty')
    .max(4000)
    .describe(
      'One clear question for the user, with what you need to know and why. The user reads it in the Executor window and types an answer.',
    ),
  expirySeconds: z
    .number()
    .int()
    .min(10)
    .max(7 * 24 * 3600)
    .optional()
    .describe(
      "Optional: seconds after which the question expires unanswered; the user's policy may set a shorter limit, never a longer one.",
    ),
});

/** get_answer: the state of a question ask_user left PENDING. */
export const GET_ANSWER_INPUT = toolArgs('get_answer', {
  questionId: z.string().min(1).max(128).describe('The questionId ask_user returned with PENDING.'),
});
