import path from 'node:path';
import { z } from 'zod';
import { RUN_TOOLS, type RunTool } from '../domain/run.js';
import type { ModelTool } from './model-client.js';

/*
 * The tools a run offers its model: each one's arguments as a zod schema (what the loop accepts)
 * and the JSON Schema derived from it (what the model is shown), and, for the tools that change
 * something, the one-step plan each call becomes. The loop parses every call here: bad JSON, an
 * unknown tool or wrong arguments come back to the model as a tool error, never a crash.
 */

const filePath = z.string().min(1).max(4096).describe('A path inside the workspace folder (relative to it, or absolute).');

export const RUN_TOOL_ARGS = {
  read_file: z.strictObject({
    path: filePath,
    offset: z.number().int().min(0).optional().describe('Byte offset to start at (default 0), to read a long file in parts.'),
  }),
  list_dir: z.strictObject({ path: filePath.optional().describe('A folder inside the workspace (default: the workspace folder).') }),
  search_files: z.strictObject({
    query: z.string().min(1).max(200).describe('Text to find (plain text, case-insensitive).'),
    path: filePath.optional().describe('The folder to search under (default: the workspace folder).'),
  }),
  write_file: z.strictObject({
    path: filePath,
    content: z
      .string()
      .max(4 * 1024 * 1024)
      .describe('The whole new content of the file (UTF-8 text).'),
  }),
  delete_file: z.strictObject({ path: filePath }),
  run_command: z.strictObject({
    command: z
      .string()
      .min(1)
      .max(64 * 1024)
      .describe('A shell command line, run under sh -c in a sandbox on a copy of the workspace; its file changes come back for consent.'),
    cwd: filePath.optional().describe('The folder to run in (default: the workspace folder).'),
    timeoutMs: z.number().int().min(100).max(3_600_000).optional(),
  }),
  run_code: z.strictObject({
    code: z
      .string()
      .min(1)
      .max(1024 * 1024),
    language: z.enum(['javascript', 'python']).optional().describe('Default javascript (a sandboxed worker); python runs in a container.'),
    purpose: z.string().max(2000).optional(),
  }),
  open_url: z.strictObject({
    url: z.string().min(1).max(8192).describe('An http(s) URL for the person to open.'),
    purpose: z.string().min(1).max(2000).describe('Why the page should open.'),
  }),
  kb_add: z.strictObject({
    title: z.string().min(1).max(500),
    content: z
      .string()
      .min(1)
      .max(1024 * 1024),
    tags: z.array(z.string().min(1).max(100)).max(50).optional(),
  }),
  kb_search: z.strictObject({ query: z.string().min(1).max(1000) }),
  ask_user: z.strictObject({
    question: z.string().min(1).max(4000).describe('One clear question for the person; the run waits for the answer.'),
  }),
} as const satisfies Record<RunTool, z.ZodType>;

export type RunToolArgs<T extends RunTool> = z.infer<(typeof RUN_TOOL_ARGS)[T]>;

const DESCRIPTIONS: Record<RunTool, string> = {
  read_file: 'Read a text file in the workspace (up to 64 KiB per call; use offset for more). Secret-looking files are refused.',
  list_dir: 'List a folder in the workspace: names, with "/" after folders, and sizes.',
  search_files: 'Find files in the workspace whose text contains the query; answers paths with line numbers and the lines.',
  write_file: 'Create or replace a file with the given content. The person sees the diff and approves or rejects it; you get the outcome.',
  delete_file: 'Delete a file. The person approves or rejects it; it can be reverted.',
  run_command:
    'Run a shell command in a sandbox on a copy of the workspace (no network). The person approves it; its file changes are applied only with consent. You get the exit code and output.',
  run_code: 'Run a snippet of code in a sandbox (no file system, no network) and get its result. The person may need to approve it.',
  open_url: 'Ask the person to open a web page in their browser.',
  kb_add: 'Add an entry to the knowledge base (with the person’s consent).',
  kb_search: 'Search the knowledge base; answers matching entries.',
  ask_user: 'Ask the person a question and wait for the answer. Use it when the task is unclear or a decision is theirs.',
};

/** The tool list the model is shown for these tools, in RUN_TOOLS order. */
export function modelTools(tools: readonly RunTool[]): ModelTool[] {
  return RUN_TOOLS.filter((tool) => tools.includes(tool)).map((name) => {
    const schema = z.toJSONSchema(RUN_TOOL_ARGS[name], { target: 'draft-7' }) as Record<string, unknown>;
    delete schema.$schema;
    return { name, description: DESCRIPTIONS[name], parameters: schema };
  });
}

export type ParsedToolCall =
  | { ok: true; tool: RunTool; args: Record<string, unknown> }
  | { ok: false; code: 'TOOL_UNKNOWN' | 'TOOL_BAD_JSON' | 'TOOL_BAD_ARGUMENTS'; message: string };

/** A tool call as the model sent it, checked: the tool offered, its arguments JSON, and the tool's schema. */
export function parseToolCall(name: string, rawArguments: string, offered: readonly RunTool[]): ParsedToolCall {
  if (!(offered as readonly string[]).includes(name)) {
    return {
      ok: false,
      code: 'TOOL_UNKNOWN',
      message: `There is no tool "${name.slice(0, 100)}" in this run. The tools are: ${offered.join(', ')}.`,
    };
  }
  const tool = name as RunTool;
  let value: unknown;
  try {
    value = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch (error) {
    return {
      ok: false,
      code: 'TOOL_BAD_JSON',
      message: `The arguments of ${tool} are not valid JSON (${(error as Error).message}). Send one JSON object.`,
    };
  }
  const parsed = RUN_TOOL_ARGS[tool].safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(arguments)'}: ${issue.message}`).join('; ');
    return { ok: false, code: 'TOOL_BAD_ARGUMENTS', message: `The arguments of ${tool} are not right: ${issues}.` };
  }
  return { ok: true, tool, args: parsed.data as Record<string, unknown> };
}

/** A path the model gave, made absolute against the run's root (the Executor checks it is inside a root). */
export function inRoot(root: string, requested: string): string {
  return path.isAbsolute(requested) ? requested : path.resolve(root, requested);
}

/** The one step a changing tool's call becomes, as a plan file writes it. */
export function stepForToolCall(
  tool: RunTool,
  args: Record<string, unknown>,
  root: string,
): { action: string; args: Record<string, unknown>; purpose?: string } | null {
  switch (tool) {
    case 'write_file': {
      const a = args as RunToolArgs<'write_file'>;
      return { action: 'writeFile', args: { path: inRoot(root, a.path), content: a.content } };
    }
    case 'delete_file': {
      const a = args as RunToolArgs<'delete_file'>;
      return { action: 'deleteFile', args: { path: inRoot(root, a.path) } };
    }
    case 'run_command': {
      const a = args as RunToolArgs<'run_command'>;
      return {
        action: 'runCommand',
        args: { command: a.command, cwd: inRoot(root, a.cwd ?? '.'), ...(a.timeoutMs !== undefined ? { timeoutMs: a.timeoutMs } : {}) },
      };
    }
    case 'run_code': {
      const a = args as RunToolArgs<'run_code'>;
      return {
        action: 'runCode',
        args: { code: a.code, ...(a.language ? { language: a.language } : {}), ...(a.purpose ? { purpose: a.purpose } : {}) },
      };
    }
    case 'open_url': {
      const a = args as RunToolArgs<'open_url'>;
      return { action: 'openURL', args: { url: a.url, purpose: a.purpose } };
    }
    case 'kb_add': {
      const a = args as RunToolArgs<'kb_add'>;
      return { action: 'createKBEntry', args: { title: a.title, content: a.content, ...(a.tags ? { tags: a.tags } : {}) } };
    }
    default:
      return null;
  }
}
