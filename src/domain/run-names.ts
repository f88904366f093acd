/*
 * The names of agent runs (statuses, tools, tool groups, providers) without zod, so the CLI's
 * command definitions can list them while `executor --help` loads nothing but commander.
 * src/domain/run.ts re-exports them beside the schemas.
 */

export const RUN_STATUSES = ['created', 'running', 'awaiting_consent', 'awaiting_input', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const ACTIVE_RUN_STATUSES = ['created', 'running', 'awaiting_consent', 'awaiting_input'] as const satisfies readonly RunStatus[];

export function isRunActive(status: RunStatus): boolean {
  return (ACTIVE_RUN_STATUSES as readonly RunStatus[]).includes(status);
}

/** The tools a run may offer its model. The read-only ones are answered by the loop; the others each become a consented step. */
export const RUN_TOOLS = [
  'read_file',
  'list_dir',
  'search_files',
  'write_file',
  'delete_file',
  'run_command',
  'run_code',
  'open_url',
  'kb_add',
  'kb_search',
  'ask_user',
] as const;
export type RunTool = (typeof RUN_TOOLS)[number];

/** Tools answered inside the workspace roots without a step (LOW risk, nothing changes). */
export const READ_ONLY_RUN_TOOLS = ['read_file', 'list_dir', 'search_files', 'kb_search'] as const satisfies readonly RunTool[];

/** The groups `executor run --tools` names, each the tools it offers. */
export const RUN_TOOL_GROUPS = {
  files: ['read_file', 'list_dir', 'search_files', 'write_file', 'delete_file'],
  command: ['run_command'],
  code: ['run_code'],
  ask: ['ask_user'],
  kb: ['kb_add', 'kb_search'],
  url: ['open_url'],
} as const satisfies Record<string, readonly RunTool[]>;
export type RunToolGroup = keyof typeof RUN_TOOL_GROUPS;
export const RUN_TOOL_GROUP_NAMES = Object.keys(RUN_TOOL_GROUPS) as RunToolGroup[];

/** Offered when a run names no tools: everything but the browser (opening a page is rarely what a task needs). */
export const DEFAULT_RUN_TOOLS: readonly RunTool[] = RUN_TOOLS.filter((tool) => tool !== 'open_url');

export const MODEL_PROVIDERS = ['openai', 'anthropic'] as const;
export type ModelProvider = (typeof MODEL_PROVIDERS)[number];
