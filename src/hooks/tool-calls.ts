import path from 'node:path';

/*
 * What an outside agent's tool call is, in Executor's terms. Each client names its built-in tools
 * its own way (Claude Code `Write`, Gemini CLI `write_file`); this table turns both into one small
 * grammar the hook decides on. A tool not named here is `unknown`, and an unknown tool is asked,
 * never passed silently.
 */

export type HookClientName = 'claude-code' | 'gemini-cli';

/** One replacement of an edit, as the client's tool states it. */
export interface TextReplacement {
  oldText: string;
  newText: string;
  /** Replace every occurrence (Claude's replace_all, Gemini's allow_multiple); otherwise exactly one must exist. */
  all: boolean;
}

export type ToolCall =
  | { kind: 'write'; path: string; content: string }
  | { kind: 'edit'; path: string; replacements: TextReplacement[] }
  | { kind: 'shell'; command: string; cwd?: string; timeoutMs?: number }
  /**
   * `folders`: the paths are folders a listing walks (names only), so a whole root may be one. A content
   * search (Grep, grep_search) is not marked: below a root it would show the lines of a `.env` the
   * client's search does not skip, and the host's path check sees folders, not the files in them.
   */
  | { kind: 'read'; paths: string[]; folders?: true }
  | { kind: 'web'; urls: string[] }
  /** Executor's own MCP tools: they propose steps themselves, so the hook lets them through. */
  | { kind: 'executor' }
  /** Tools that touch nothing outside the client (its to-do list, plan mode, a question to the person). */
  | { kind: 'inert' }
  | { kind: 'unknown'; name: string };

type Input = Record<string, unknown>;
const text = (input: Input, key: string): string | undefined => (typeof input[key] === 'string' ? (input[key] as string) : undefined);
const flag = (input: Input, key: string): boolean => input[key] === true;
/** A client's relative path is relative to its working directory. */
const absolute = (cwd: string, value: string) => path.resolve(cwd, value);
const CONTENT_SEARCHES = new Set(['Grep', 'grep_search']);
/** The folder a glob pattern names before its first wildcard, resolved against where it is matched. */
const patternFolder = (where: string, pattern: string) => absolute(where, pattern.split(/[*?[{]/)[0] || '.');
const URL_IN_TEXT = /https?:\/\/[^\s"'<>)\]]+/g;

const CLAUDE_INERT = new Set(['TodoWrite', 'Task', 'Agent', 'ExitPlanMode', 'EnterPlanMode', 'AskUserQuestion', 'Skill', 'ToolSearch']);
const GEMINI_INERT = new Set([
  'write_todos',
  'ask_user',
  'enter_plan_mode',
  'exit_plan_mode',
  'update_topic',
  'complete_task',
  'activate_skill',
]);

/*
 * Executor's own MCP tools (src/mcp/mcp-server.ts), by exact name: a prefix match would let through
 * any other server whose name merely starts with "executor" (Claude Code's `mcp__executor__evil__x`
 * from a server named "executor__evil", Gemini CLI's `mcp_executor_x_run` from "executor_x").
 * test/integration/hooks/hook-hostile-input.test.ts checks this list against the real server's.
 */
export const EXECUTOR_MCP_TOOLS: ReadonlySet<string> = new Set([
  'write_file',
  'delete_file',
  'run_command',
  'run_code',
  'open_url',
  'kb_add',
  'propose_plan',
  'step_status',
  'step_record_part',
  'list_my_steps',
  'cancel_step',
  'ask_user',
  'get_answer',
  'propose_skill',
]);

/** One of Executor's MCP tools: a fixed one, or an approved skill's `skill_<name>` (names as src/domain/skill.ts allows them). */
function isExecutorMcpTool(tool: string): boolean {
  return EXECUTOR_MCP_TOOLS.has(tool) || /^skill_[a-z][a-z0-9]*(_[a-z0-9]+)*$/.test(tool);
}
/** The server name `executor connect` writes into both clients' settings. */
const EXECUTOR_SERVER = 'executor';

function malformed(name: string): ToolCall {
  // A call whose arguments are not what the tool takes is not something Executor can weigh: the person is asked.
  return { kind: 'unknown', name };
}

function claudeToolCall(name: string, input: Input, cwd: string): ToolCall {
  // Claude Code names an MCP tool mcp__<server>__<tool>; "__" cannot be inside Executor's tool names.
  if (name.startsWith(`mcp__${EXECUTOR_SERVER}__`) && isExecutorMcpTool(name.slice(`mcp__${EXECUTOR_SERVER}__`.length))) {
    return { kind: 'executor' };
  }
  if (CLAUDE_INERT.has(name)) return { kind: 'inert' };
  const filePath = text(input, 'file_path');
  switch (name) {
    case 'Write': {
      const content = text(input, 'content');
      return filePath !== undefined && content !== undefined ? { kind: 'write', path: absolute(cwd, filePath), content } : malformed(name);
    }
    case 'Edit': {
      const oldText = text(input, 'old_string');
      const newText = text(input, 'new_string');
      if (filePath === undefined || oldText === undefined || newText === undefined) return malformed(name);
      return { kind: 'edit', path: absolute(cwd, filePath), replacements: [{ oldText, newText, all: flag(input, 'replace_all') }] };
    }
    case 'MultiEdit': {
      const edits = input.edits;
      if (filePath === undefined || !Array.isArray(edits) || edits.length === 0) return malformed(name);
      const replacements: TextReplacement[] = [];
      for (const edit of edits as Input[]) {
        const oldText = edit && text(edit, 'old_string');
        const newText = edit && text(edit, 'new_string');
        if (oldText === undefined || newText === undefined) return malformed(name);
        replacements.push({ oldText, newText, all: flag(edit, 'replace_all') });
      }
      return { kind: 'edit', path: absolute(cwd, filePath), replacements };
    }
    case 'Bash': {
      const command = text(input, 'command');
      if (command === undefined) return malformed(name);
      const timeout = input.timeout;
      // The client takes any positive number of milliseconds; a runCommand step a whole number within its bounds (src/domain/step.ts).
      const timeoutMs =
        typeof timeout === 'number' && timeout > 0 ? Math.min(Math.max(Math.ceil(timeout), 100), 24 * 3600 * 1000) : undefined;
      return { kind: 'shell', command, cwd, ...(timeoutMs ? { timeoutMs } : {}) };
    }
    case 'Read':
      return filePath !== undefined ? { kind: 'read', paths: [absolute(cwd, filePath)] } : malformed(name);
    case 'Grep':
    case 'Glob':
    case 'LS': {
      const where = absolute(cwd, text(input, 'path') ?? '.');
      // Glob's pattern may name its own folder ("../**", "/etc/*"): the folder before its first wildcard is read too.
      const pattern = name === 'Glob' ? text(input, 'pattern') : undefined;
      return {
        kind: 'read',
        paths: [where, ...(pattern ? [patternFolder(where, pattern)] : [])],
        ...(CONTENT_SEARCHES.has(name) ? {} : { folders: true as const }),
      };
    }
    case 'WebFetch': {
      const url = text(input, 'url');
      return url !== undefined ? { kind: 'web', urls: [url] } : malformed(name);
    }
    default:
      return { kind: 'unknown', name };
  }
}

function geminiToolCall(name: string, input: Input, cwd: string, mcpServer?: { server: string; tool: string }): ToolCall {
  // Gemini CLI's mcp_<server>_<tool> is ambiguous ("executor_write" + "file"), so the server it names in mcp_context decides.
  if (
    mcpServer &&
    mcpServer.server === EXECUTOR_SERVER &&
    isExecutorMcpTool(mcpServer.tool) &&
    name === `mcp_${EXECUTOR_SERVER}_${mcpServer.tool}`
  ) {
    return { kind: 'executor' };
  }
  if (GEMINI_INERT.has(name)) return { kind: 'inert' };
  const filePath = text(input, 'file_path');
  switch (name) {
    case 'write_file': {
      const content = text(input, 'content');
      return filePath !== undefined && content !== undefined ? { kind: 'write', path: absolute(cwd, filePath), content } : malformed(name);
    }
    case 'replace': {
      const oldText = text(input, 'old_string');
      const newText = text(input, 'new_string');
      if (filePath === undefined || oldText === undefined || newText === undefined) return malformed(name);
      return { kind: 'edit', path: absolute(cwd, filePath), replacements: [{ oldText, newText, all: flag(input, 'allow_multiple') }] };
    }
    case 'run_shell_command': {
      const command = text(input, 'command');
      const dir = text(input, 'dir_path');
      return command !== undefined ? { kind: 'shell', command, cwd: dir ? absolute(cwd, dir) : cwd } : malformed(name);
    }
    case 'read_file':
      return filePath !== undefined ? { kind: 'read', paths: [absolute(cwd, filePath)] } : malformed(name);
    case 'list_directory':
    case 'glob':
    case 'grep_search': {
      const where = absolute(cwd, text(input, 'dir_path') ?? '.');
      const pattern = name === 'glob' ? text(input, 'pattern') : undefined;
      return {
        kind: 'read',
        paths: [where, ...(pattern ? [patternFolder(where, pattern)] : [])],
        ...(CONTENT_SEARCHES.has(name) ? {} : { folders: true as const }),
      };
    }
    case 'read_many_files': {
      // Its include patterns are globs under the working directory: the folder each names before its first wildcard is what is read.
      const include = Array.isArray(input.include) ? (input.include as unknown[]).filter((item) => typeof item === 'string') : [];
      const folders = (include as string[]).map((pattern) => patternFolder(cwd, pattern));
      return { kind: 'read', paths: folders.length ? folders : [cwd] };
    }
    case 'web_fetch': {
      // Gemini's web_fetch takes a prompt with the URLs in it.
      const prompt = text(input, 'prompt') ?? '';
      const urls = prompt.match(URL_IN_TEXT) ?? [];
      return urls.length ? { kind: 'web', urls } : malformed(name);
    }
    default:
      return { kind: 'unknown', name };
  }
}

export function toolCallOf(
  client: HookClientName,
  toolName: string,
  toolInput: unknown,
  cwd: string,
  mcpServer?: { server: string; tool: string },
): ToolCall {
  const input = toolInput && typeof toolInput === 'object' && !Array.isArray(toolInput) ? (toolInput as Input) : {};
  return client === 'claude-code' ? claudeToolCall(toolName, input, cwd) : geminiToolCall(toolName, input, cwd, mcpServer);
}
