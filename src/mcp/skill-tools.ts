import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { SkillRecord, SkillUseResult } from '../domain/skill.js';
import type { ExecutorClient } from '../ipc/client/client.js';
import type { HostLink } from './host-link.js';

type Text = (body: string, isError?: boolean, structured?: Record<string, unknown>) => CallToolResult;
type Failure = (error: unknown, doing: 'proposed' | 'checked') => CallToolResult;

export const PROPOSE_SKILL_INPUT = z.strictObject({
  name: z.string().describe('lowercase letters and digits, words joined by single "_"; agents will call it as the tool skill_<name>'),
  purpose: z.string().describe('what the skill is for, in a sentence'),
  code: z
    .string()
    .describe(
      'JavaScript for the light sandbox: reads its argument as `input`, returns its output (`return ...`); may use tools.fetch / tools.readFile / tools.kb.search only as declared in capabilities',
    ),
  inputSchema: z
    .record(z.string(), z.unknown())
    .describe('JSON Schema of the input, type "object" (type, properties, required, items, enum, min/max…)'),
  outputSchema: z.record(z.string(), z.unknown()).describe('JSON Schema every output must match'),
  capabilities: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('what it needs beyond computing: {"fetch":{"hosts":["api.example.com"]},"readFile":true,"kbSearch":true}; default none'),
  budget: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('per use: {"timeMs": 100–5000, "calls": tool calls}; default {"timeMs":2000,"calls":0}'),
  examples: z.array(z.unknown()).describe('at least 3 example inputs; each is run in quarantine before the user sees the skill'),
});

/** What the model reads after proposing: where its skill stands, and what happens next. */
function proposalText(skill: SkillRecord): string {
  const examples = skill.exampleResults
    .map((result, i) => `  ${i + 1}. ${result.ok && result.code === undefined ? 'ok' : `${result.code}: ${result.message}`}`)
    .join('\n');
  if (skill.state === 'rejected')
    return `REJECTED: skill ${skill.name} v${skill.version} (${skill.skillId}): ${skill.reason}\nExamples:\n${examples}\nFix the cause and propose it again.`;
  return (
    `AWAITING_OWNER: skill ${skill.name} v${skill.version} (${skill.skillId}) passed quarantine and validation and waits for the user's approval. ` +
    `Once approved it appears as the tool skill_${skill.name}.\nExamples:\n${examples}`
  );
}

function useText(result: SkillUseResult): string {
  if (result.ok) return JSON.stringify(result.output ?? null);
  const disabled =
    result.state === 'disabled' ? ` The skill is now disabled${result.reason ? ` (${result.reason})` : ''}; the user was told.` : '';
  return `FAILED: ${result.code}: ${result.message} (step ${result.stepId})${disabled}`;
}

/**
 * propose_skill, and one tool per usable skill (`skill_<name>`, its input schema as the tool's). The
 * skill tools follow the host: refreshed when the client initializes and at every skill event, and
 * the SDK tells the client (notifications/tools/list_changed) whenever one is added or removed.
 */
export function registerSkillTools(server: McpServer, host: HostLink, text: Text, failure: Failure): { refresh(): Promise<void> } {
  server.registerTool(
    'propose_skill',
    {
      description:
        'Make code you keep writing into a skill: the same JavaScript transform, with input and output JSON Schemas, the capabilities it needs, a budget per use and at least 3 example inputs. ' +
        'Executor runs each example in quarantine (no crash, timeout, budget overrun or output outside the schema) and checks every call it made against what it declared; ' +
        'then the user approves, rejects or edits it. An approved skill becomes the tool skill_<name> and runs without asking (watched in a trial first). Returns AWAITING_OWNER or REJECTED with the reason.',
      inputSchema: PROPOSE_SKILL_INPUT,
      annotations: { readOnlyHint: false, openWorldHint: false },
    },
    async (args: z.infer<typeof PROPOSE_SKILL_INPUT>) => {
      try {
        const skill = await host.use((api: ExecutorClient) => api.proposeSkill({ skill: args }));
        return text(proposalText(skill), skill.state === 'rejected', { skillId: skill.skillId, state: skill.state, reason: skill.reason });
      } catch (error) {
        return failure(error, 'proposed');
      }
    },
  );

  const registered = new Map<string, { tool: RegisteredTool; codeHash: string }>();
  let subscribedOn: ExecutorClient | null = null;
  let running: Promise<void> | null = null;
  let again = false;

  const sync = async (): Promise<void> => {
    const usable = await host.use(async (api: ExecutorClient) => {
      if (subscribedOn !== api) {
        subscribedOn = api;
        await api.on('skill', () => void refresh().catch(() => undefined));
      }
      return api.listUsableSkills();
    });
    const wanted = new Map(usable.map((skill) => [`skill_${skill.name}`, skill]));
    for (const [name, entry] of registered) {
      const skill = wanted.get(name);
      if (!skill || skill.codeHash !== entry.codeHash) {
        entry.tool.remove();
        registered.delete(name);
      }
    }
    for (const [name, skill] of wanted) {
      if (registered.has(name)) continue;
      let inputSchema: z.ZodType;
      try {
        inputSchema = z.fromJSONSchema(skill.inputSchema as never);
      } catch {
        continue;
      }
      // The schema is the host's JSON Schema read by zod at run time: the SDK's static types cannot follow it.
      const register = server.registerTool.bind(server) as (
        name: string,
        config: unknown,
        callback: (args: unknown) => Promise<CallToolResult>,
      ) => RegisteredTool;
      const tool = register(
        name,
        {
          description: `${skill.purpose} (skill v${skill.version}, ${skill.state}; runs without asking in the light sandbox, audited). Returns its output as JSON, or FAILED: <code>: <why>.`,
          inputSchema,
          annotations: { readOnlyHint: false, openWorldHint: false },
        },
        async (args: unknown) => {
          try {
            const result = await host.use((api: ExecutorClient) => api.useSkill({ name: skill.name, input: args }));
            return text(useText(result), !result.ok, result as unknown as Record<string, unknown>);
          } catch (error) {
            return failure(error, 'checked');
          }
        },
      );
      registered.set(name, { tool, codeHash: skill.codeHash });
    }
  };

  // One sync at a time; events during one ask for one more after it.
  const refresh = async (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await sync();
        } while (again);
      } finally {
        running = null;
      }
    })();
    return running;
  };
  return { refresh };
}
